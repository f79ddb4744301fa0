/* test_strategies.c — the strategy registry, the hybrid search and the local
 * search on a hand-built graph against exhaustive enumeration, and the
 * property "every plan a
 * strategy calls feasible has simulated peak <= budget" over all bundled
 * models x 4 budgets between the least-memory plan's peak and the in-core peak. */
#include <glob.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir/shape_infer.h"
#include "search/local_search.h"
#include "search/strategy.h"
#include "unit/hand_graph.h"

/* ---- the hand graph: F1 -> a -> F2 -> b -> F3 -> L -> B3 -> B2(b) -> B1(a) ---- */

typedef struct hand {
    train_graph *tg;
    profile *prof;
    sim_context *ctx;
    int a, b;
} hand;

/* Node times t_node (F1 gets t_f1: the recompute cost of a), copy bandwidth bw. */
static hand *hand_new(double bw, double t_f1) {
    hand *h = calloc(1, sizeof *h);
    train_graph *tg = h->tg = hand_graph_new(400, &h->a, &h->b);
    h->prof = hand_profile_new(tg, bw, t_f1);
    oc_err err;
    if (sim_context_new(tg, h->prof, "hand", &h->ctx, &err)) fail_msg("%s", err.msg);
    return h;
}

static void hand_free(hand *h) {
    sim_context_free(h->ctx);
    profile_free(h->prof);
    train_graph_free(h->tg);
    free(h);
}

/* Exhaustive optimum over decisions {keep, swap, recompute}^2 and every legal
 * issue point; INFINITY when nothing fits. */
static double brute_force(hand *h, int64_t budget) {
    sim_plan *p = sim_plan_new(h->tg);
    sim_options o = {.budget_bytes = budget};
    double best = INFINITY;
    int ts[2] = {h->a, h->b}, lo[2] = {L, L}, hi[2] = {B1, B2};
    for (int da = 0; da < 3; da++)
        for (int db = 0; db < 3; db++)
            for (int ia = lo[0]; ia <= hi[0]; ia++)
                for (int ib = lo[1]; ib <= hi[1]; ib++) {
                    int d[2] = {da, db}, at[2] = {ia, ib};
                    sim_plan_keep_all(p);
                    for (int k = 0; k < 2; k++)
                        sim_plan_set(p, ts[k], (sim_decision)d[k],
                                     d[k] == SIM_DECISION_SWAP ? at[k] : -1);
                    sim_result r;
                    oc_err err;
                    if (sim_run(h->ctx, p, &o, &r, NULL, &err) != OC_OK) continue;
                    if (r.feasible && r.time_s < best) best = r.time_s;
                }
    sim_plan_free(p);
    return best;
}

static void test_registry(void **state) {
    (void)state;
    const char *mine[] = {"incore",       "swap-all-nosched", "swap-all", "vdnn-conv",
                          "superneurons", "hybrid",           "auto"};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
        const strategy *s = strategy_find(mine[i]);
        assert_non_null(s);
        assert_string_equal(s->name, mine[i]);
    }
    assert_null(strategy_find("no-such-strategy"));
    char buf[512];
    strategy_list(buf, sizeof buf);
    assert_non_null(strstr(buf, "hybrid"));
    for (int i = 0; i < strategy_count(); i++)
        for (int j = i + 1; j < strategy_count(); j++)
            assert_string_not_equal(strategy_at(i)->name, strategy_at(j)->name);
}

static strategy_stats plan_with(hand *h, const char *name, int64_t budget, sim_plan *p) {
    strategy_input in = {.tg = h->tg,
                         .prof = h->prof,
                         .ctx = h->ctx,
                         .sim = {.budget_bytes = budget},
                         .opts = strategy_options_default()};
    strategy_stats st;
    oc_err err;
    if (strategy_run(strategy_find(name), &in, p, &st, &err)) fail_msg("%s", err.msg);
    return st;
}

/* The hybrid equals the exhaustive optimum on the hand graph across budgets,
 * bandwidths (swap hidden or not) and recompute costs. */
static void test_hybrid_matches_brute_force(void **state) {
    (void)state;
    const double bws[] = {1e6, 1000, 200};
    const double tf1[] = {0.1, 5.0};
    const int64_t budgets[] = {0, 2000 * HAND_UNIT, 1700 * HAND_UNIT, 1400 * HAND_UNIT,
                               1200 * HAND_UNIT};
    int checked = 0;
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 2; j++) {
            hand *h = hand_new(bws[i], tf1[j]);
            sim_plan *p = sim_plan_new(h->tg);
            for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
                double opt = brute_force(h, budgets[k]);
                strategy_stats st = plan_with(h, "hybrid", budgets[k], p);
                if (isinf(opt)) {
                    assert_false(st.feasible);
                    continue;
                }
                assert_true(st.feasible);
                if (st.result.time_s > opt * (1 + 1e-9) + 1e-12)
                    fail_msg("bw %g, t_f1 %g, budget %lld: hybrid %.6f s, optimum %.6f s (%s)",
                             bws[i], tf1[j], (long long)budgets[k], st.result.time_s, opt,
                             st.notes);
                checked++;
            }
            sim_plan_free(p);
            hand_free(h);
        }
    assert_true(checked >= 15);
}

/* The local search, started from the slowest feasible plan of any strategy,
 * reaches the exhaustive optimum on the hand graph at every setting. */
static void test_local_search_matches_brute_force(void **state) {
    (void)state;
    const double bws[] = {1e6, 1000, 200};
    const double tf1[] = {0.1, 5.0};
    const int64_t budgets[] = {2000 * HAND_UNIT, 1700 * HAND_UNIT, 1400 * HAND_UNIT,
                               1200 * HAND_UNIT};
    int checked = 0;
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 2; j++) {
            hand *h = hand_new(bws[i], tf1[j]);
            sim_plan *p = sim_plan_new(h->tg), *seed = sim_plan_new(h->tg);
            for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
                double opt = brute_force(h, budgets[k]), worst = -1;
                for (int s = 0; s < strategy_count(); s++) {
                    strategy_stats st = plan_with(h, strategy_at(s)->name, budgets[k], p);
                    if (st.feasible && st.result.time_s > worst) {
                        worst = st.result.time_s;
                        sim_plan_copy(seed, p);
                    }
                }
                if (worst < 0) continue;
                strategy_input in = {.tg = h->tg,
                                     .prof = h->prof,
                                     .ctx = h->ctx,
                                     .sim = {.budget_bytes = budgets[k]},
                                     .opts = strategy_options_default()};
                local_stats ls;
                oc_err err;
                if (local_refine(&in, seed, 3000, &ls, &err)) fail_msg("%s", err.msg);
                if (ls.best_s > opt * (1 + 1e-9) + 1e-12)
                    fail_msg("bw %g, t_f1 %g, budget %lld: local %.6f s from %.6f s, optimum "
                             "%.6f s",
                             bws[i], tf1[j], (long long)budgets[k], ls.best_s, worst, opt);
                sim_result r;
                sim_options o = {.budget_bytes = budgets[k]};
                assert_int_equal(sim_run(h->ctx, seed, &o, &r, NULL, &err), OC_OK);
                assert_true(r.feasible);
                assert_true(fabs(r.time_s - ls.best_s) <= 1e-12);
                checked++;
            }
            sim_plan_free(p);
            sim_plan_free(seed);
            hand_free(h);
        }
    assert_true(checked >= 15);
}

/* Everything fits: hybrid keeps everything; auto never loses to any strategy. */
static void test_hybrid_incore_and_auto(void **state) {
    (void)state;
    hand *h = hand_new(200, 1.0);
    sim_plan *p = sim_plan_new(h->tg);
    strategy_stats st = plan_with(h, "hybrid", 0, p);
    assert_true(st.feasible);
    assert_int_equal(p->decision[h->a], SIM_DECISION_KEEP);
    assert_int_equal(p->decision[h->b], SIM_DECISION_KEEP);
    const int64_t budgets[] = {1700 * HAND_UNIT, 1400 * HAND_UNIT, 1200 * HAND_UNIT};
    for (size_t k = 0; k < 3; k++) {
        strategy_stats au = plan_with(h, "auto", budgets[k], p);
        for (int i = 0; i < strategy_count(); i++) {
            if (strategy_at(i) == &strategy_auto) continue;
            strategy_stats o = plan_with(h, strategy_at(i)->name, budgets[k], p);
            if (o.feasible) {
                assert_true(au.feasible);
                assert_true(au.result.time_s <= o.result.time_s + 1e-12);
            }
        }
    }
    sim_plan_free(p);
    hand_free(h);
}

/* Swap-in scheduling never loses to the no-scheduling baseline here, and
 * moves the issue point of a earlier than its reader when memory allows. */
static void test_swap_all_schedules_early(void **state) {
    (void)state;
    hand *h = hand_new(200, 1.0);
    sim_plan *p = sim_plan_new(h->tg);
    strategy_stats ns = plan_with(h, "swap-all-nosched", 0, p);
    strategy_stats sa = plan_with(h, "swap-all", 0, p);
    assert_true(ns.feasible && sa.feasible);
    assert_true(sa.result.time_s <= ns.result.time_s + 1e-12);
    assert_int_equal(p->decision[h->a], SIM_DECISION_SWAP);
    assert_true(p->swap_in_at[h->a] >= L && p->swap_in_at[h->a] <= B1);
    sim_plan_free(p);
    hand_free(h);
}

/* ---- property over the bundled models ----
 * Every bundled model x n_budgets budgets between the least-memory (all-swap)
 * peak and the in-core peak x every registered strategy. Search effort is
 * capped (leaves / sims / seconds) so the suite stays fast; a cap only changes
 * which plan comes back, never the property checked on it. Batch 2 keeps the
 * graphs small (the strategies' cost depends on the graph, not the batch).
 * Environment (for slow builds, e.g. sanitizers; defaults = full coverage):
 *   OC_TEST_STRATEGY_BUDGETS=N   budgets per model (default 4)
 *   OC_TEST_STRATEGY_MODELS=GLOB models (default: every graphs/<model>_op13.onnx)
 *   OC_TEST_VERBOSE=1            per-plan timings on stderr */
static int env_int(const char *name, int def, int lo) {
    const char *v = getenv(name);
    if (!v || !*v) return def;
    int n = atoi(v);
    return n < lo ? lo : n;
}

/* Peak of plan p under o, from the timeline's memory samples. */
static int64_t timeline_peak(sim_context *ctx, const sim_plan *p, const sim_options *o,
                             bool *feasible) {
    sim_timeline *tl = sim_timeline_new();
    sim_result q;
    oc_err err;
    if (sim_run(ctx, p, o, &q, tl, &err)) fail_msg("%s", err.msg);
    int64_t m = 0;
    for (int i = 0; i < tl->n_samples; i++)
        if (tl->samples[i].bytes > m) m = tl->samples[i].bytes;
    for (int i = 0; i < tl->n_events; i++) /* every allocation within the peak */
        assert_true(tl->events[i].bytes <= q.peak_bytes);
    *feasible = q.feasible;
    assert_true(m <= q.peak_bytes);
    sim_timeline_free(tl);
    return q.peak_bytes;
}

/* A bundled model at batch on the v100 analytic profile: its step, profile and simulator
 * context, and the peaks of the in-core (hi) and all-swap (lo) plans. model_close frees. */
typedef struct model_run {
    train_graph *tg;
    profile *prof;
    sim_context *ctx;
    int64_t lo, hi;
} model_run;

static model_run model_open(const char *path, int64_t batch) {
    model_run m;
    oc_err err;
    ir_graph *g;
    train_opts to = train_opts_default();
    ir_bind_opts b = {.batch = batch};
    if (ir_load_model(path, &b, &g, &err) || train_build(g, &to, &m.tg, &err))
        fail_msg("%s: %s", path, err.msg);
    profile_device dev;
    assert_int_equal(device_preset_find("v100", &dev, &err), OC_OK);
    m.prof = profile_analytic(m.tg, &dev, batch);
    if (sim_context_new(m.tg, m.prof, "v100", &m.ctx, &err)) fail_msg("%s", err.msg);
    sim_plan *p = sim_plan_new(m.tg);
    sim_options unl = {0};
    sim_result r;
    assert_int_equal(sim_run(m.ctx, p, &unl, &r, NULL, &err), OC_OK);
    m.hi = r.peak_bytes;
    sim_plan_swap_all(p);
    assert_int_equal(sim_run(m.ctx, p, &unl, &r, NULL, &err), OC_OK);
    m.lo = r.peak_bytes;
    assert_true(m.lo <= m.hi);
    sim_plan_free(p);
    return m;
}

static void model_close(model_run *m) {
    sim_context_free(m->ctx);
    profile_free(m->prof);
    train_graph_free(m->tg);
}

static void check_model(const char *path, int64_t batch, int n_budgets, bool verbose) {
    oc_err err;
    model_run m = model_open(path, batch);
    train_graph *tg = m.tg;
    profile *prof = m.prof;
    sim_context *ctx = m.ctx;
    int64_t lo = m.lo, hi = m.hi;
    sim_plan *p = sim_plan_new(tg);
    int n_feasible = 0, n_runs = 0;
    sim_plan *best = sim_plan_new(tg);
    for (int k = 0; k < n_budgets; k++) {
        int64_t budget = lo + (hi - lo) * k / n_budgets + 1;
        bool have_best = false;
        double best_t = 0;
        strategy_input in = {.tg = tg,
                             .prof = prof,
                             .ctx = ctx,
                             .sim = {.budget_bytes = budget},
                             .opts = strategy_options_default()};
        in.opts.max_leaves = 16;
        in.opts.max_sims = 2000;
        in.opts.max_seconds = 0.25;
        for (int i = 0; i < strategy_count(); i++) {
            const strategy *s = strategy_at(i);
            if (s == &strategy_auto) continue; /* the others' union; tested on the hand graph */
            strategy_stats st;
            sim_plan_keep_all(p);
            if (strategy_run(s, &in, p, &st, &err)) fail_msg("%s %s: %s", path, s->name, err.msg);
            n_runs++;
            if (verbose)
                fprintf(stderr, "%s budget %d/%d %-16s %7.3f s %5ld sims %s\n", path, k, n_budgets,
                        s->name, st.plan_seconds, st.sims, st.feasible ? "feasible" : "infeasible");
            if (!st.feasible) continue;
            n_feasible++;
            /* Independent re-simulation of the returned plan, with a timeline. */
            bool f;
            int64_t peak = timeline_peak(ctx, p, &in.sim, &f);
            if (!f || peak > budget)
                fail_msg("%s batch %lld: %s claims a feasible plan but peak %lld > budget %lld",
                         path, (long long)batch, s->name, (long long)peak, (long long)budget);
            assert_true(st.result.peak_bytes <= budget);
            assert_true(st.result.time_s >= st.result.ideal_s * (1 - 1e-9));
            if (!have_best || st.result.time_s < best_t) {
                have_best = true;
                best_t = st.result.time_s;
                sim_plan_copy(best, p);
            }
        }
        if (!have_best) continue;
        /* The local search from the best plan: no slower, within the budget, and
         * the same plan again from the same start (seeded, counted). */
        sim_plan *again = sim_plan_new(tg);
        sim_plan_copy(again, best);
        local_stats ls, ls2;
        if (local_refine(&in, best, 300, &ls, &err) || local_refine(&in, again, 300, &ls2, &err))
            fail_msg("%s local: %s", path, err.msg);
        assert_true(ls.best_s <= best_t);
        bool f;
        int64_t peak = timeline_peak(ctx, best, &in.sim, &f);
        assert_true(f && peak <= budget);
        assert_memory_equal(best->decision, again->decision, (size_t)best->n_tensors);
        assert_memory_equal(best->swap_in_at, again->swap_in_at,
                            (size_t)best->n_tensors * sizeof *best->swap_in_at);
        sim_plan_free(again);
    }
    sim_plan_free(best);
    assert_true(n_feasible > 0);
    assert_int_equal(n_runs, n_budgets * (strategy_count() - 1));
    sim_plan_free(p);
    model_close(&m);
}

/* dp-swap's take-back under a node-simulation allowance (strategy_options.node_sims): swaps go
 * back in groups, so the pass simulates less (without groups the counts are equal), and the plan
 * still fits the budget and is the same plan from the same start. */
static void test_dp_swap_takeback_groups(void **state) {
    (void)state;
    oc_err err;
    model_run m = model_open("graphs/resnet18_op13.onnx", 2);
    train_graph *tg = m.tg;
    sim_context *ctx = m.ctx;
    sim_plan *p = sim_plan_new(tg), *q = sim_plan_new(tg);
    int64_t budget = m.lo + (m.hi - m.lo) / 3;
    strategy_input in = {.tg = tg,
                         .prof = m.prof,
                         .ctx = ctx,
                         .sim = {.budget_bytes = budget},
                         .opts = strategy_options_default()};
    strategy_stats one, grouped, again;
    sim_plan_keep_all(p);
    if (strategy_run(&strategy_dp_swap, &in, p, &one, &err)) fail_msg("%s", err.msg);
    assert_true(one.feasible);
    assert_null(strstr(one.notes, "taken back"));
    in.opts.node_sims = 4L * tg->g->n_nodes; /* 4 simulations a chain */
    sim_plan_keep_all(p);
    if (strategy_run(&strategy_dp_swap, &in, p, &grouped, &err)) fail_msg("%s", err.msg);
    assert_non_null(strstr(grouped.notes, "taken back"));
    assert_true(grouped.sims < one.sims);
    assert_true(grouped.feasible);
    bool f;
    int64_t peak = timeline_peak(ctx, p, &in.sim, &f);
    assert_true(f && peak <= budget);
    sim_plan_keep_all(q);
    if (strategy_run(&strategy_dp_swap, &in, q, &again, &err)) fail_msg("%s", err.msg);
    assert_int_equal(again.sims, grouped.sims);
    assert_memory_equal(p->decision, q->decision, (size_t)p->n_tensors);
    sim_plan_free(p);
    sim_plan_free(q);
    model_close(&m);
}

static void test_feasible_plans_fit_budget(void **state) {
    (void)state;
    const char *pat = getenv("OC_TEST_STRATEGY_MODELS");
    if (!pat || !*pat) pat = "graphs/*_op13.onnx";
    int n_budgets = env_int("OC_TEST_STRATEGY_BUDGETS", 4, 1);
    bool verbose = env_int("OC_TEST_VERBOSE", 0, 0) > 0;
    glob_t gl;
    assert_int_equal(glob(pat, 0, NULL, &gl), 0);
    assert_true(gl.gl_pathc >= 1);
    for (size_t i = 0; i < gl.gl_pathc; i++) check_model(gl.gl_pathv[i], 2, n_budgets, verbose);
    globfree(&gl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_hybrid_matches_brute_force),
        cmocka_unit_test(test_local_search_matches_brute_force),
        cmocka_unit_test(test_hybrid_incore_and_auto),
        cmocka_unit_test(test_swap_all_schedules_early),
        cmocka_unit_test(test_dp_swap_takeback_groups),
        cmocka_unit_test(test_feasible_plans_fit_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
