/* test_dp.c — the recomputation DP against brute force over every chain of
 * lower sets ∅ ⊊ L1 ⊊ … ⊊ V, on seeded random DAGs of up to 8 nodes with
 * integer times and sizes (so sums compare exactly); the approximate family
 * never beats the exact one (all three step-peak models); memory-centric DP
 * <= Chen's √n chain on paths; on the bundled models the simulated peak of
 * dp-min's plan is <= chen's; a recompute whose producer reads a swapped
 * tensor waits for its swap-in (dp-swap plans rely on it). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/dp_solve.h"
#include "ir/shape_infer.h"
#include "search/strategy.h"

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Random DAG: n nodes, edge u->v (u<v) with probability p/100. */
static dp_graph *random_dag(int n, int p) {
    dp_graph *g = dp_graph_new(n);
    g->peak_model = (dp_peak_model)(rnd() % 3); /* paper, lazy, block: each brute-forced */
    if (g->peak_model != DP_PEAK_PAPER) {
        g->mem_saved = oc_calloc((size_t)n + 1, sizeof *g->mem_saved);
        g->bwd_extra = oc_calloc((size_t)n + 1, sizeof *g->bwd_extra);
    }
    for (int v = 0; v < n; v++) {
        g->time[v] = (double)(1 + rnd() % 9);
        g->mem[v] = 1 + rnd() % 20;
        if (g->mem_saved) {
            g->mem_saved[v] = (int64_t)(rnd() % (uint32_t)(g->mem[v] + 1));
            g->bwd_extra[v] = rnd() % 4;
        }
        for (int u = 0; u < v; u++)
            if ((int)(rnd() % 100) < p) dp_graph_edge_add(g, u, v);
    }
    return g;
}

/* Every chain's (overhead, peak), by plain recursion with the reference step cost. */
typedef struct chains {
    double *t;
    int64_t *peak;
    int n;
    size_t cap;
} chains;

static void enumerate(const dp_graph *g, const dp_lowersets *ls, int at, double t, int64_t kept,
                      int64_t peak, chains *out) {
    if (at == ls->count - 1) {
        size_t c1 = out->cap;
        oc_grow((void **)&out->t, &out->cap, (size_t)out->n + 1, sizeof(double));
        if (out->cap != c1) /* grow peak only with t (a realloc per chain is O(n^2) under ASan) */
            out->peak = oc_realloc(out->peak, out->cap * sizeof(int64_t));
        out->t[out->n] = t;
        out->peak[out->n++] = peak;
        return;
    }
    const uint64_t *L = dp_lowersets_set(ls, at);
    for (int j = 0; j < ls->count; j++) {
        const uint64_t *L2 = dp_lowersets_set(ls, j);
        if (!dp_set_subset(L, L2, ls->words, true)) continue;
        dp_step st;
        dp_step_cost(g, L, L2, &st);
        int64_t p = kept + st.peak;
        enumerate(g, ls, j, t + st.dt, kept + st.dk, p > peak ? p : peak, out);
    }
}

/* Overhead and peak of a given chain (indices into ls), by the reference cost. */
static void chain_cost(const dp_graph *g, const dp_lowersets *ls, const int *chain, int n,
                       double *t, int64_t *peak) {
    *t = 0;
    *peak = 0;
    int64_t kept = 0;
    for (int i = 0; i < n; i++) {
        dp_step st;
        dp_step_cost(g, dp_lowersets_set(ls, i ? chain[i - 1] : 0), dp_lowersets_set(ls, chain[i]),
                     &st);
        if (kept + st.peak > *peak) *peak = kept + st.peak;
        *t += st.dt;
        kept += st.dk;
    }
}

static void test_dp_equals_brute_force(void **state) {
    (void)state;
    rng_state = 20190904;
    int checked = 0, time_queries = 0;
    for (int iter = 0; iter < 240; iter++) {
        int n = 1 + (int)(rnd() % 8);
        int p = 15 + (int)(rnd() % 60);
        dp_graph *g = random_dag(n, p);
        dp_lowersets *ex = dp_lowersets_exact(g, 1 << 12);
        assert_non_null(ex);
        assert_int_equal(ex->family, DP_FAMILY_EXACT);
        for (int i = 1; i < ex->count; i++) assert_true(ex->size[i - 1] <= ex->size[i]);
        chains all = {0};
        enumerate(g, ex, 0, 0, 0, 0, &all);
        assert_true(all.n > 0);
        /* memory-centric */
        int64_t best_peak = INT64_MAX;
        for (int c = 0; c < all.n; c++)
            if (all.peak[c] < best_peak) best_peak = all.peak[c];
        double best_t_at_peak = INFINITY;
        for (int c = 0; c < all.n; c++)
            if (all.peak[c] == best_peak && all.t[c] < best_t_at_peak) best_t_at_peak = all.t[c];
        dp_options om = {.mode = DP_MODE_MEMORY};
        dp_solution s;
        dp_solve(g, ex, &om, &s);
        assert_true(s.feasible);
        assert_false(s.thinned);
        assert_int_equal(s.peak, best_peak);
        assert_true(s.overhead == best_t_at_peak);
        /* the returned chain really has those costs */
        double ct;
        int64_t cp;
        chain_cost(g, ex, s.chain, s.n_chain, &ct, &cp);
        assert_int_equal(cp, s.peak);
        assert_true(ct == s.overhead);
        assert_int_equal(s.chain[s.n_chain - 1], ex->count - 1);
        /* approximate family never better */
        dp_lowersets *ap = dp_lowersets_approx(g);
        assert_int_equal(ap->family, DP_FAMILY_APPROX);
        dp_solution sa;
        dp_solve(g, ap, &om, &sa);
        assert_true(sa.feasible);
        assert_true(sa.peak >= s.peak);
        dp_solution_free(&sa);
        /* time-centric at several budgets between the least peak and in-core */
        int64_t top = 0;
        for (int c = 0; c < all.n; c++)
            if (all.peak[c] > top) top = all.peak[c];
        for (int q = 0; q < 6; q++) {
            int64_t B = best_peak - 1 + (top - best_peak + 2) * q / 5;
            double bt = INFINITY;
            for (int c = 0; c < all.n; c++)
                if (all.peak[c] <= B && all.t[c] < bt) bt = all.t[c];
            dp_options ot = {.mode = DP_MODE_TIME, .budget = B};
            dp_solution st;
            dp_solve(g, ex, &ot, &st);
            assert_int_equal(st.feasible, isfinite(bt));
            if (st.feasible) {
                assert_true(st.overhead == bt);
                assert_true(st.peak <= B);
                chain_cost(g, ex, st.chain, st.n_chain, &ct, &cp);
                assert_true(ct == st.overhead);
                assert_true(cp <= B);
            }
            dp_solution sat;
            dp_solve(g, ap, &ot, &sat);
            if (sat.feasible) {
                assert_true(st.feasible);
                assert_true(sat.overhead >= st.overhead);
            }
            dp_solution_free(&sat);
            dp_solution_free(&st);
            time_queries++;
        }
        dp_solution_free(&s);
        dp_lowersets_free(ap);
        dp_lowersets_free(ex);
        dp_graph_free(g);
        oc_free(all.t);
        oc_free(all.peak);
        checked++;
    }
    assert_true(checked >= 200);
    printf("# DP == brute force on %d random DAGs (<= 8 nodes), %d time-centric budgets\n", checked,
           time_queries);
}

/* On a path of n nodes, Chen's √n chain (prefixes ending every ⌈√n⌉ nodes)
 * is one chain of the family; the memory-centric DP is never above it. */
static void test_dp_le_chen_on_chains(void **state) {
    (void)state;
    rng_state = 7;
    for (int n = 2; n <= 40; n++) {
        dp_graph *g = dp_graph_new(n);
        for (int v = 0; v < n; v++) {
            g->time[v] = 1 + rnd() % 5;
            g->mem[v] = 1 + rnd() % 100;
            if (v) dp_graph_edge_add(g, v - 1, v);
        }
        dp_lowersets *ls = dp_lowersets_exact(g, 1000);
        assert_non_null(ls);
        assert_int_equal(ls->count, n + 1); /* prefixes of a path */
        int seg = (int)ceil(sqrt((double)n));
        int chain[64], k = 0;
        for (int end = seg; end < n; end += seg) chain[k++] = end; /* prefix of size end */
        chain[k++] = n;
        double ct;
        int64_t cp;
        chain_cost(g, ls, chain, k, &ct, &cp); /* sorted by size: index == size */
        dp_options om = {.mode = DP_MODE_MEMORY};
        dp_solution s;
        dp_solve(g, ls, &om, &s);
        assert_true(s.peak <= cp);
        dp_solution_free(&s);
        dp_lowersets_free(ls);
        dp_graph_free(g);
    }
}

/* The exact family falls back to NULL past its bound; approximate has n+2 at most. */
static void test_family_bound(void **state) {
    (void)state;
    dp_graph *g = dp_graph_new(12); /* antichain: 2^12 lower sets */
    assert_null(dp_lowersets_exact(g, 4095));
    dp_lowersets *ls = dp_lowersets_exact(g, 4096);
    assert_non_null(ls);
    assert_int_equal(ls->count, 4096);
    dp_lowersets_free(ls);
    ls = dp_lowersets_build(g, 100);
    assert_int_equal(ls->family, DP_FAMILY_APPROX);
    assert_int_equal(ls->count, 14);
    dp_lowersets_free(ls);
    dp_graph_free(g);
}

/* A long graph (an unrolled RNN's forward: a path of 5000 nodes, every third with a skip
 * edge over two) gets a thinned approximate family: at most DP_APPROX_MAX_SETS sets, steps
 * of at most DP_APPROX_MAX_SPAN of them (but from ∅ and into V). The memory-centric DP is
 * still feasible and no worse than Chen's sqrt(n) segments, which the thinned family holds
 * (every 5th prefix), nor than the single block ∅ -> V. */
static void test_long_graph_thinned(void **state) {
    (void)state;
    rng_state = 99;
    int n = 5000;
    dp_graph *g = dp_graph_new(n);
    for (int v = 0; v < n; v++) {
        g->time[v] = 1 + rnd() % 5;
        g->mem[v] = 1 + rnd() % 100;
        if (v) dp_graph_edge_add(g, v - 1, v);
        if (v >= 2 && v % 3 == 0) dp_graph_edge_add(g, v - 2, v);
    }
    dp_lowersets *ls = dp_lowersets_build(g, 2000);
    assert_int_equal(ls->family, DP_FAMILY_APPROX);
    assert_true(ls->count <= DP_APPROX_MAX_SETS && ls->count > DP_APPROX_MAX_SETS / 2);
    assert_int_equal(ls->max_span, DP_APPROX_MAX_SPAN);
    int *at = oc_malloc((size_t)(n + 1) * sizeof *at); /* the set holding the first s nodes */
    for (int s = 0; s <= n; s++) at[s] = -1;
    for (int i = 0; i < ls->count; i++) at[ls->size[i]] = i;
    int chain[128], k = 0;
    for (int end = 70; end < n; end += 70) {
        assert_true(at[end] >= 0);
        chain[k++] = at[end];
    }
    chain[k++] = ls->count - 1;
    double ct;
    int64_t cp, whole;
    chain_cost(g, ls, chain, k, &ct, &cp);
    chain_cost(g, ls, &chain[k - 1], 1, &ct, &whole);
    dp_options om = {.mode = DP_MODE_MEMORY};
    dp_solution sol;
    dp_solve(g, ls, &om, &sol);
    assert_true(sol.feasible);
    assert_true(sol.peak <= cp);
    assert_true(cp < whole);
    dp_solution_free(&sol);
    oc_free(at);
    dp_lowersets_free(ls);
    dp_graph_free(g);
}

typedef struct model_ctx {
    train_graph *tg;
    profile *prof;
    sim_context *ctx;
} model_ctx;

static void model_open(const char *path, int64_t batch, model_ctx *m) {
    oc_err err;
    ir_graph *g;
    ir_bind_opts bo = {.batch = batch};
    if (ir_load_model(path, &bo, &g, &err)) fail_msg("%s", err.msg);
    train_opts to = train_opts_default();
    assert_int_equal(train_build(g, &to, &m->tg, &err), OC_OK);
    profile_device dev;
    assert_int_equal(device_preset_find("v100", &dev, &err), OC_OK);
    m->prof = profile_analytic(m->tg, &dev, batch);
    assert_int_equal(sim_context_new(m->tg, m->prof, "v100", &m->ctx, &err), OC_OK);
}

static void model_close(model_ctx *m) {
    sim_context_free(m->ctx);
    profile_free(m->prof);
    train_graph_free(m->tg);
}

/* Simulated peak of strategy name's plan with no budget. */
static int64_t strategy_peak(model_ctx *m, const char *name) {
    oc_err err;
    strategy_input in = {
        .tg = m->tg, .prof = m->prof, .ctx = m->ctx, .opts = strategy_options_default()};
    sim_plan *p = sim_plan_new(m->tg);
    strategy_stats st;
    assert_int_equal(strategy_run(strategy_find(name), &in, p, &st, &err), OC_OK);
    assert_true(st.feasible);
    int keep, swap, rc;
    sim_plan_counts(p, &keep, &swap, &rc);
    assert_true(rc > 0); /* it did recompute something */
    sim_plan_free(p);
    return st.result.peak_bytes;
}

/* Chen's chain is a chain of lower sets; the memory-centric DP, whose step
 * peaks follow the simulator (dp_lowersets.h) and whose candidates the
 * simulator picks from, must never need more memory than it. */
static void test_dp_min_le_chen_on_models(void **state) {
    (void)state;
    const char *models[] = {"resnet18", "resnet50", "densenet121",  "googlenet",
                            "vgg16",    "unet",     "mobilenet_v2", "alexnet"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char path[256];
        snprintf(path, sizeof path, "graphs/%s_op13.onnx", models[i]);
        model_ctx m;
        model_open(path, 32, &m);
        int64_t dp = strategy_peak(&m, "dp-min"), ch = strategy_peak(&m, "chen");
        printf("# %s batch 32: dp-min peak %.1f MiB, chen %.1f MiB, in-core %.1f MiB\n", models[i],
               (double)dp / 1048576, (double)ch / 1048576,
               (double)m.tg->incore_peak_bytes / 1048576);
        if (dp > ch)
            fail_msg("%s: dp-min peak %lld B > chen %lld B", models[i], (long long)dp,
                     (long long)ch);
        model_close(&m);
    }
}

/* A recompute may start from a swapped-in tensor (DESIGN §3): with X swapped
 * and Y = f(X) recomputed, the simulator re-runs f only after SwapIn(X) ends,
 * and the plan stays feasible. */
static void test_recompute_from_swapped_in(void **state) {
    (void)state;
    model_ctx m;
    model_open("graphs/resnet18_op13.onnx", 8, &m);
    const ir_graph *g = m.tg->g;
    bool *saved = oc_calloc((size_t)g->n_tensors, sizeof *saved);
    for (int i = 0; i < m.tg->n_saved; i++) saved[m.tg->saved[i]] = true;
    int found = 0;
    oc_err err;
    sim_plan *p = sim_plan_new(m.tg);
    sim_timeline *tl = sim_timeline_new();
    for (int y = 0; y < g->n_tensors && found < 5; y++) {
        int f = g->tensors[y].producer;
        if (!saved[y] || f < 0 || f >= m.tg->n_forward) continue;
        int x = -1;
        for (int k = 0; k < g->nodes[f].n_inputs; k++) {
            int u = g->nodes[f].inputs[k];
            if (u >= 0 && saved[u] && g->tensors[u].producer >= 0) x = u;
        }
        if (x < 0) continue;
        sim_plan_keep_all(p);
        sim_plan_set(p, x, SIM_DECISION_SWAP, -1);
        sim_plan_set(p, y, SIM_DECISION_RECOMPUTE, -1);
        sim_options o = {0};
        sim_result r;
        assert_int_equal(sim_run(m.ctx, p, &o, &r, tl, &err), OC_OK);
        assert_true(r.feasible);
        assert_true(r.n_recompute >= 1 && r.n_swap_in >= 1);
        assert_true(r.recompute_start[f] >= 0 && r.swap_in_end[x] >= 0);
        if (r.recompute_start[f] + 1e-12 < r.swap_in_end[x])
            fail_msg("recompute of '%s' starts at %g before SwapIn('%s') ends at %g",
                     g->nodes[f].name, r.recompute_start[f], g->tensors[x].name, r.swap_in_end[x]);
        /* the swapped-in copy and the recomputed tensor are both live at the recompute */
        assert_true(r.recompute_s > 0 && r.h2d_bytes > 0);
        found++;
    }
    assert_true(found > 0);
    sim_timeline_free(tl);
    sim_plan_free(p);
    oc_free(saved);
    model_close(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dp_equals_brute_force),
        cmocka_unit_test(test_dp_le_chen_on_chains),
        cmocka_unit_test(test_family_bound),
        cmocka_unit_test(test_long_graph_thinned),
        cmocka_unit_test(test_dp_min_le_chen_on_models),
        cmocka_unit_test(test_recompute_from_swapped_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
