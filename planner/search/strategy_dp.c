/* strategy_dp.c — `dp`, `dp-min` and `dp-swap`: the Kusumoto recomputation DP
 * (dp_solve.h) turned into per-tensor decisions the simulator scores.
 *
 * A chain of lower sets becomes: every saved output of a node in a block's
 * dropped part F → RECOMPUTE (the simulator re-runs it right before its first
 * backward reader, after its inputs: kept, swapped in or recomputed first);
 * every other saved tensor → KEEP. The DP's costs are an estimate (it ignores
 * persistent memory, gradients' real lifetimes and the simulator's per-tensor
 * frees), so `dp` sweeps the DP's budget from its least peak to in-core, runs
 * the time-centric DP at each, and keeps the plan the simulator finds fastest
 * under the real budget. `dp-min` is the memory-centric DP alone (least peak).
 * `dp-swap` additionally swaps the kept checkpoints of each swept plan (issue
 * points scheduled early, strategy_sched.h) and takes back swaps greedily
 * from the output layer while the plan stays feasible and gets no slower. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search/dp_solve.h"
#include "search/strategy.h"
#include "search/strategy_sched.h"

#define DP_DEFAULT_MAX_EXACT 2000
#define DP_SWEEP 12
#define DP_MAX_FRONT 512
#define DP_MIN_SWEEP 3 /* dp-min: swept budgets tried besides the least-peak chain */
/* Step-peak models tried, in order (dp_lowersets.h); the simulator picks. */
static const dp_peak_model DP_MODELS[] = {DP_PEAK_LAZY, DP_PEAK_BLOCK, DP_PEAK_PAPER};
#define DP_N_MODELS ((int)(sizeof DP_MODELS / sizeof DP_MODELS[0]))

typedef struct dp_setup {
    dp_graph *g;
    dp_lowersets *ls;
    dp_table *tab[DP_N_MODELS]; /* per step-peak model: built once, solved many times */
    bool *saved;                /* per tensor */
} dp_setup;

static void setup_free(dp_setup *s) {
    for (int mo = 0; mo < DP_N_MODELS; mo++) dp_table_free(s->tab[mo]);
    dp_lowersets_free(s->ls);
    dp_graph_free(s->g);
    oc_free(s->saved);
}

static int setup_new(const strategy_input *in, dp_setup *s, strategy_stats *st, oc_err *err) {
    memset(s, 0, sizeof *s);
    if (dp_graph_from_train(in->tg, sim_context_node_times(in->ctx), &s->g, err)) return OC_ERR;
    int max_exact = in->opts.max_leaves > 0 && in->opts.max_leaves < 1000000
                        ? (int)in->opts.max_leaves
                        : DP_DEFAULT_MAX_EXACT;
    s->ls = dp_lowersets_build(s->g, max_exact);
    for (int mo = 0; mo < DP_N_MODELS; mo++) {
        s->g->peak_model = DP_MODELS[mo];
        s->tab[mo] = dp_table_new(s->g, s->ls);
    }
    s->saved = oc_calloc((size_t)in->tg->g->n_tensors, sizeof *s->saved);
    for (int i = 0; i < in->tg->n_saved; i++) s->saved[in->tg->saved[i]] = true;
    strategy_note(st, "%s family, %d lower sets over %d nodes", dp_family_name(s->ls->family),
                  s->ls->count, s->g->n);
    if (s->ls->family == DP_FAMILY_APPROX)
        strategy_note(st, "exact family exceeds %d lower sets", max_exact);
    return OC_OK;
}

/* Decisions of a DP chain: dropped nodes' saved outputs recompute, others keep. */
static void plan_from_chain(const strategy_input *in, const dp_setup *s, const dp_solution *sol,
                            sim_plan *out) {
    sim_plan_keep_all(out);
    uint8_t *drop = oc_malloc((size_t)s->g->n + 1);
    dp_solution_dropped(s->g, s->ls, sol, drop);
    const ir_graph *ig = in->tg->g;
    for (int v = 0; v < s->g->n; v++) {
        if (!drop[v]) continue;
        const ir_node *nd = &ig->nodes[s->g->node_of[v]];
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t >= 0 && s->saved[t]) sim_plan_set(out, t, SIM_DECISION_RECOMPUTE, -1);
        }
    }
    oc_free(drop);
}

/* The DP's budgets to sweep: from its least peak to the in-core chain's peak. */
static int sweep_budgets(const dp_setup *s, int mo, int64_t *b, dp_solution *memsol) {
    dp_options om = {.mode = DP_MODE_MEMORY};
    dp_solve_table(s->tab[mo], &om, memsol);
    int64_t lo = memsol->peak, hi = 0;
    for (int v = 0; v < s->g->n; v++) hi += 2 * s->g->mem[v];
    if (hi <= lo) hi = lo + 1;
    int n = 0;
    for (int k = 0; k < DP_SWEEP; k++) /* geometric: dense near the least peak */
        b[n++] = (int64_t)((double)lo * pow((double)hi / (double)lo, (double)k / (DP_SWEEP - 1)));
    return n;
}

/* Swaps every kept saved activation (forward-produced) of plan, schedules the
 * swap-ins early, then takes swaps back from the output layer down while the
 * plan stays feasible and no slower. *r: verdict on the final plan. */
static int swap_checkpoints(const strategy_input *in, const strategy_tinfo *ti, sim_plan *p,
                            strategy_stats *st, sim_result *r, double t0, oc_err *err) {
    int n_sw = 0;
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (p->decision[t] == SIM_DECISION_KEEP && ti->swappable[t] && ti->can_rc[t]) {
            sim_plan_set(p, t, SIM_DECISION_SWAP, -1);
            n_sw++;
        }
    }
    if (strategy_sched_early(in, ti, p, st, r, err)) return OC_ERR;
    sim_plan *trial = sim_plan_new(in->tg);
    for (int i = ti->n_saved - 1; i >= 0 && !strategy_budget_spent(in, st, t0); i--) {
        int t = ti->saved_by_prod[i];
        if (p->decision[t] != SIM_DECISION_SWAP) continue;
        sim_plan_copy(trial, p);
        sim_plan_set(trial, t, SIM_DECISION_KEEP, -1);
        sim_result rr;
        if (strategy_sim(in, trial, &rr, st, err)) {
            sim_plan_free(trial);
            return OC_ERR;
        }
        if (rr.feasible && (!r->feasible || rr.time_s <= r->time_s)) {
            sim_plan_copy(p, trial);
            *r = rr;
        }
    }
    sim_plan_free(trial);
    return OC_OK;
}

static int dp_run(const strategy_input *in, sim_plan *out, strategy_stats *st, bool with_swap,
                  oc_err *err) {
    double t0 = strategy_now();
    dp_setup s;
    if (setup_new(in, &s, st, err)) return OC_ERR;
    strategy_tinfo *ti = with_swap ? strategy_tinfo_new(in->tg) : NULL;
    int64_t budgets[DP_N_MODELS][DP_SWEEP];
    dp_solution memsol[DP_N_MODELS];
    int nb = 0;
    bool thinned = false;
    for (int mo = 0; mo < DP_N_MODELS; mo++) {
        s.g->peak_model = DP_MODELS[mo];
        nb = sweep_budgets(&s, mo, budgets[mo], &memsol[mo]);
        thinned = thinned || memsol[mo].thinned;
    }
    sim_plan *cand = sim_plan_new(in->tg);
    bool have = false;
    double best_t = 0;
    int best_k = -1, rc = OC_OK;
    s.g->peak_model = DP_MODELS[0];
    plan_from_chain(in, &s, &memsol[0], out); /* fallback: least memory */
    for (int k = 0; k < nb * DP_N_MODELS && !strategy_budget_spent(in, st, t0); k++) {
        int mo = k / nb;
        s.g->peak_model = DP_MODELS[mo];
        dp_options ot = {.mode = DP_MODE_TIME, .budget = budgets[mo][k % nb]};
        dp_solution sol;
        dp_solve_table(s.tab[mo], &ot, &sol);
        thinned = thinned || sol.thinned;
        st->leaves_explored++;
        if (!sol.feasible) {
            dp_solution_free(&sol);
            continue;
        }
        plan_from_chain(in, &s, &sol, cand);
        dp_solution_free(&sol);
        sim_result r;
        if (strategy_sim(in, cand, &r, st, err)) {
            rc = OC_ERR;
            break;
        }
        if (with_swap && swap_checkpoints(in, ti, cand, st, &r, t0, err)) {
            rc = OC_ERR;
            break;
        }
        if (r.feasible && (!have || r.time_s < best_t)) {
            have = true;
            best_t = r.time_s;
            best_k = k;
            sim_plan_copy(out, cand);
        }
    }
    if (rc == OC_OK) {
        strategy_note(st, "least DP peak %lld B (%s model)", (long long)memsol[0].peak,
                      dp_peak_model_name(DP_MODELS[0]));
        if (thinned)
            strategy_note(st, "Pareto fronts thinned at %d states (not exact)", DP_MAX_FRONT);
        if (have)
            strategy_note(st, "best: %s model, DP budget %lld B (sweep %d/%d)",
                          dp_peak_model_name(DP_MODELS[best_k / nb]),
                          (long long)budgets[best_k / nb][best_k % nb], best_k % nb + 1, nb);
        else strategy_note(st, "no swept DP budget fits; returning the least-memory chain");
    }
    for (int mo = 0; mo < DP_N_MODELS; mo++) dp_solution_free(&memsol[mo]);
    sim_plan_free(cand);
    strategy_tinfo_free(ti);
    setup_free(&s);
    return rc;
}

static int dp_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    return dp_run(in, out, st, false, err);
}

static int dp_swap_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    return dp_run(in, out, st, true, err);
}

/* Memory-centric: the DP's least-peak chain and the swept time-centric chains
 * (the DP's memory model is coarser than the simulator's per-tensor frees), of
 * which the simulator's least peak that fits is kept. */
static int dp_min_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    dp_setup s;
    if (setup_new(in, &s, st, err)) return OC_ERR;
    sim_plan *cand = sim_plan_new(in->tg);
    bool have = false;
    int64_t best_peak = 0;
    int best_mo = -1, best_k = -2, rc = OC_OK;
    for (int mo = 0; mo < DP_N_MODELS && rc == OC_OK; mo++) {
        s.g->peak_model = DP_MODELS[mo];
        int64_t budgets[DP_SWEEP];
        dp_solution memsol;
        int nb = sweep_budgets(&s, mo, budgets, &memsol);
        strategy_note(st, "%s model: least DP peak %lld B (overhead %.3g s, %d blocks)%s",
                      dp_peak_model_name(DP_MODELS[mo]), (long long)memsol.peak, memsol.overhead,
                      memsol.n_chain, memsol.thinned ? ", fronts thinned" : "");
        if (nb > DP_MIN_SWEEP) nb = DP_MIN_SWEEP;      /* the low end: memory is the goal */
        for (int k = -1; k < nb && rc == OC_OK; k++) { /* -1: the least-peak chain itself */
            dp_solution sol;
            if (k >= 0) {
                dp_options ot = {.mode = DP_MODE_TIME, .budget = budgets[k]};
                dp_solve_table(s.tab[mo], &ot, &sol);
                st->leaves_explored++;
            }
            const dp_solution *use = k >= 0 ? &sol : &memsol;
            if (use->feasible) {
                plan_from_chain(in, &s, use, cand);
                sim_result r;
                rc = strategy_sim(in, cand, &r, st, err);
                if (rc == OC_OK && r.feasible && (!have || r.peak_bytes < best_peak)) {
                    have = true;
                    best_peak = r.peak_bytes;
                    best_mo = mo;
                    best_k = k;
                    sim_plan_copy(out, cand);
                }
            }
            if (k >= 0) dp_solution_free(&sol);
        }
        dp_solution_free(&memsol);
    }
    if (rc == OC_OK && have)
        strategy_note(st, "kept: %s model, %s (least simulated peak)",
                      dp_peak_model_name(DP_MODELS[best_mo]),
                      best_k < 0 ? "least-peak chain" : "a swept time-centric chain");
    sim_plan_free(cand);
    setup_free(&s);
    return rc;
}

const strategy strategy_dp = {
    .name = "dp",
    .summary =
        "Kusumoto graph-partition recomputation DP, time-centric, budget swept by simulation",
    .plan = dp_plan,
};

const strategy strategy_dp_min = {
    .name = "dp-min",
    .summary = "Kusumoto DP, memory-centric: the least-memory recomputation chain",
    .plan = dp_min_plan,
};

const strategy strategy_dp_swap = {
    .name = "dp-swap",
    .summary = "dp, with its kept checkpoints swapped where the simulator says it pays",
    .plan = dp_swap_plan,
};
