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
/* With checkpoint cut points the family has about one lower set per node and
 * the solves dominate: DenseNet-121 b640 16 GiB, dp 20.2 s at 512 states,
 * 4.4 s at 64, the plan 615.4 vs 619.4 ms. */
#define DP_MAX_FRONT_CHECKPOINTS 64
#define DP_MIN_SWEEP 3 /* dp-min: swept budgets tried besides the least-peak chain */
/* Step-peak models tried, in order (dp_lowersets.h); the simulator picks. */
static const dp_peak_model DP_MODELS[] = {DP_PEAK_LAZY, DP_PEAK_BLOCK, DP_PEAK_PAPER};
#define DP_N_MODELS ((int)(sizeof DP_MODELS / sizeof DP_MODELS[0]))

/* Everything budget-independent: the DP's graph and lower sets, and per
 * step-peak model its least-peak chain and the chains of the swept budgets.
 * dp, dp-swap and dp-min read the same sweep (strategy_shared_get). */
typedef struct dp_sweep {
    dp_graph *g;
    dp_lowersets *ls;
    bool *saved;   /* per tensor */
    bool *fwd_act; /* per tensor: a forward activation (may be a CHECKPOINT) */
    int nb;        /* swept budgets per model */
    int64_t budgets[DP_N_MODELS][DP_SWEEP];
    dp_solution memsol[DP_N_MODELS];
    dp_solution sol[DP_N_MODELS][DP_SWEEP];
    bool thinned;
    int max_exact;
    int max_front; /* Pareto front cap of the time-centric solves */
} dp_sweep;

static void sweep_free(void *v) {
    dp_sweep *s = v;
    if (!s) return;
    for (int mo = 0; mo < DP_N_MODELS; mo++) {
        dp_solution_free(&s->memsol[mo]);
        for (int k = 0; k < s->nb; k++) dp_solution_free(&s->sol[mo][k]);
    }
    dp_lowersets_free(s->ls);
    dp_graph_free(s->g);
    oc_free(s->saved);
    oc_free(s->fwd_act);
    oc_free(s);
}

static int sweep_budgets(const dp_sweep *s, const dp_table *tab, int64_t *b, dp_solution *memsol) {
    dp_options om = {.mode = DP_MODE_MEMORY};
    dp_solve_table(tab, &om, memsol);
    int64_t lo = memsol->peak, hi = 0;
    for (int v = 0; v < s->g->n; v++) hi += 2 * s->g->mem[v];
    if (hi <= lo) hi = lo + 1;
    int n = 0;
    for (int k = 0; k < DP_SWEEP; k++) /* geometric: dense near the least peak */
        b[n++] = (int64_t)((double)lo * pow((double)hi / (double)lo, (double)k / (DP_SWEEP - 1)));
    return n;
}

/* Builds the sweep: per model the transition table once, then every solve. */
static void *sweep_make(const strategy_input *in, oc_err *err) {
    dp_sweep *s = oc_calloc(1, sizeof *s);
    if (dp_graph_from_train(in->tg, sim_context_node_times(in->ctx), &s->g, err)) {
        oc_free(s);
        return NULL;
    }
    s->max_exact = in->opts.max_leaves > 0 && in->opts.max_leaves < 1000000
                       ? (int)in->opts.max_leaves
                       : DP_DEFAULT_MAX_EXACT;
    s->ls = dp_lowersets_build(s->g, s->max_exact);
    if (s->ls->count < s->g->n / 4) { /* few cut points at saved tensors: add checkpoints */
        dp_lowersets_free(s->ls);
        dp_graph_allow_checkpoints(s->g);
        s->ls = dp_lowersets_build(s->g, s->max_exact);
    }
    s->max_front = s->g->checkpoints ? DP_MAX_FRONT_CHECKPOINTS : DP_MAX_FRONT;
    s->saved = oc_calloc((size_t)in->tg->g->n_tensors, sizeof *s->saved);
    for (int i = 0; i < in->tg->n_saved; i++) s->saved[in->tg->saved[i]] = true;
    s->fwd_act = oc_calloc((size_t)in->tg->g->n_tensors, sizeof *s->fwd_act);
    for (int t = 0; t < in->tg->g->n_tensors; t++) {
        int p = in->tg->g->tensors[t].producer;
        s->fwd_act[t] = p >= 0 && p < in->tg->n_forward && !train_tensor_persistent(in->tg, t);
    }
    for (int mo = 0; mo < DP_N_MODELS; mo++) {
        s->g->peak_model = DP_MODELS[mo];
        dp_table *tab = dp_table_new(s->g, s->ls);
        s->nb = sweep_budgets(s, tab, s->budgets[mo], &s->memsol[mo]);
        s->thinned = s->thinned || s->memsol[mo].thinned;
        for (int k = 0; k < s->nb; k++) {
            dp_options ot = {
                .mode = DP_MODE_TIME, .budget = s->budgets[mo][k], .max_front = s->max_front};
            dp_solve_table(tab, &ot, &s->sol[mo][k]);
            s->thinned = s->thinned || s->sol[mo][k].thinned;
        }
        dp_table_free(tab);
    }
    return s;
}

/* The sweep (shared when in->shared is set), with the notes every DP strategy gives. */
static dp_sweep *sweep_get(const strategy_input *in, strategy_stats *st, bool *owned, oc_err *err) {
    dp_sweep *s = strategy_shared_get(in, STRATEGY_SHARED_DP, sweep_make, sweep_free, owned, err);
    if (!s) return NULL;
    strategy_note(st, "%s family, %d lower sets over %d nodes%s", dp_family_name(s->ls->family),
                  s->ls->count, s->g->n,
                  s->g->checkpoints ? " (cut points at checkpoints: unsaved tensors kept)" : "");
    if (s->ls->family == DP_FAMILY_APPROX)
        strategy_note(st, "exact family exceeds %d lower sets", s->max_exact);
    return s;
}

/* Decisions of a DP chain: dropped nodes' saved outputs recompute, others keep. */
static void plan_from_chain(const strategy_input *in, const dp_sweep *s, const dp_solution *sol,
                            sim_plan *out) {
    sim_plan_keep_all(out);
    uint8_t *drop = oc_malloc((size_t)s->g->n + 1);
    dp_solution_dropped(s->g, s->ls, sol, drop);
    const ir_graph *ig = in->tg->g;
    for (int v = 0; v < s->g->n; v++) {
        const ir_node *nd = &ig->nodes[s->g->node_of[v]];
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t < 0) continue;
            if (drop[v] && s->saved[t]) sim_plan_set(out, t, SIM_DECISION_RECOMPUTE, -1);
            else if (!drop[v] && !s->saved[t] && s->g->checkpoints && s->fwd_act[t])
                sim_plan_set(out, t, SIM_DECISION_CHECKPOINT, -1); /* a kept cut point */
        }
    }
    oc_free(drop);
}

/* The take-back pass simulates the plan once per swapped tensor of each swept chain: on a
 * 46,000-node unrolled LSTM (1,847 swaps a chain, 36 chains) hours. A chain's take-back gets
 * in->opts.node_sims node-simulations (default DP_TAKEBACK_NODE_SIMS, at least
 * DP_TAKEBACK_MIN_SIMS simulations); past them swaps go back in groups of consecutive
 * tensors, one simulation a group. ResNet-152's 2,500-node step (a few hundred swaps a
 * chain) stays one tensor a simulation. */
#define DP_TAKEBACK_NODE_SIMS 10000000L
#define DP_TAKEBACK_MIN_SIMS 64

static long takeback_sims(const strategy_input *in) {
    long nodes = in->tg->g->n_nodes > 0 ? in->tg->g->n_nodes : 1;
    if (in->opts.node_sims > 0)
        return in->opts.node_sims / nodes > 1 ? in->opts.node_sims / nodes : 1;
    long sims = DP_TAKEBACK_NODE_SIMS / nodes;
    return sims < DP_TAKEBACK_MIN_SIMS ? DP_TAKEBACK_MIN_SIMS : sims;
}

/* Swaps every kept saved activation (forward-produced) of plan, schedules the
 * swap-ins early, then takes swaps back from the output layer down while the
 * plan stays feasible and no slower. *r: verdict on the final plan; *group: the
 * tensors taken back per simulation. */
static int swap_checkpoints(const strategy_input *in, const strategy_tinfo *ti, sim_plan *p,
                            strategy_stats *st, sim_result *r, double t0, int *group, oc_err *err) {
    int n_sw = 0;
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (p->decision[t] == SIM_DECISION_KEEP && ti->swappable[t] && ti->can_rc[t]) {
            sim_plan_set(p, t, SIM_DECISION_SWAP, -1);
            n_sw++;
        }
    }
    if (strategy_sched_early(in, ti, p, st, r, err)) return OC_ERR;
    long sims = takeback_sims(in);
    *group = n_sw > sims ? (int)((n_sw + sims - 1) / sims) : 1;
    sim_plan *trial = sim_plan_new(in->tg);
    int i = ti->n_saved - 1;
    while (i >= 0 && !strategy_budget_spent(in, st, t0)) {
        sim_plan_copy(trial, p);
        int taken = 0;
        for (; i >= 0 && taken < *group; i--) {
            int t = ti->saved_by_prod[i];
            if (p->decision[t] != SIM_DECISION_SWAP) continue;
            sim_plan_set(trial, t, SIM_DECISION_KEEP, -1);
            taken++;
        }
        if (!taken) break;
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
    bool owned;
    dp_sweep *s = sweep_get(in, st, &owned, err);
    if (!s) return OC_ERR;
    strategy_tinfo *ti = with_swap ? strategy_tinfo_new(in->tg) : NULL;
    int nb = s->nb;
    sim_plan *cand = sim_plan_new(in->tg);
    bool have = false;
    double best_t = 0;
    int best_k = -1, rc = OC_OK, group = 1, max_group = 1;
    plan_from_chain(in, s, &s->memsol[0], out); /* fallback: least memory */
    for (int k = 0; k < nb * DP_N_MODELS && !strategy_budget_spent(in, st, t0); k++) {
        const dp_solution *sol = &s->sol[k / nb][k % nb];
        st->leaves_explored++;
        if (!sol->feasible) continue;
        plan_from_chain(in, s, sol, cand);
        sim_result r;
        if (strategy_sim(in, cand, &r, st, err)) {
            rc = OC_ERR;
            break;
        }
        if (with_swap && swap_checkpoints(in, ti, cand, st, &r, t0, &group, err)) {
            rc = OC_ERR;
            break;
        }
        if (group > max_group) max_group = group;
        if (r.feasible && (!have || r.time_s < best_t)) {
            have = true;
            best_t = r.time_s;
            best_k = k;
            sim_plan_copy(out, cand);
        }
    }
    if (rc == OC_OK) {
        strategy_note(st, "least DP peak %lld B (%s model)", (long long)s->memsol[0].peak,
                      dp_peak_model_name(DP_MODELS[0]));
        if (max_group > 1)
            strategy_note(st, "swaps taken back %d at a time (%ld simulations a chain)", max_group,
                          takeback_sims(in));
        if (s->thinned)
            strategy_note(st, "Pareto fronts thinned at %d states (not exact)", s->max_front);
        if (have)
            strategy_note(st, "best: %s model, DP budget %lld B (sweep %d/%d)",
                          dp_peak_model_name(DP_MODELS[best_k / nb]),
                          (long long)s->budgets[best_k / nb][best_k % nb], best_k % nb + 1, nb);
        else strategy_note(st, "no swept DP budget fits; returning the least-memory chain");
    }
    sim_plan_free(cand);
    strategy_tinfo_free(ti);
    if (owned) sweep_free(s);
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
    bool owned;
    dp_sweep *s = sweep_get(in, st, &owned, err);
    if (!s) return OC_ERR;
    sim_plan *cand = sim_plan_new(in->tg);
    bool have = false;
    int64_t best_peak = 0;
    int best_mo = -1, best_k = -2, rc = OC_OK;
    for (int mo = 0; mo < DP_N_MODELS && rc == OC_OK; mo++) {
        const dp_solution *memsol = &s->memsol[mo];
        strategy_note(st, "%s model: least DP peak %lld B (overhead %.3g s, %d blocks)%s",
                      dp_peak_model_name(DP_MODELS[mo]), (long long)memsol->peak, memsol->overhead,
                      memsol->n_chain, memsol->thinned ? ", fronts thinned" : "");
        int nb = s->nb > DP_MIN_SWEEP ? DP_MIN_SWEEP : s->nb; /* the low end: memory is the goal */
        for (int k = -1; k < nb && rc == OC_OK; k++) {        /* -1: the least-peak chain itself */
            if (k >= 0) st->leaves_explored++;
            const dp_solution *use = k >= 0 ? &s->sol[mo][k] : memsol;
            if (!use->feasible) continue;
            plan_from_chain(in, s, use, cand);
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
    }
    if (rc == OC_OK && have)
        strategy_note(st, "kept: %s model, %s (least simulated peak)",
                      dp_peak_model_name(DP_MODELS[best_mo]),
                      best_k < 0 ? "least-peak chain" : "a swept time-centric chain");
    sim_plan_free(cand);
    if (owned) sweep_free(s);
    return rc;
}

const strategy strategy_dp = {
    .name = "dp",
    .summary =
        "Kusumoto graph-partition recomputation DP, time-centric, budget swept by simulation",
    .plan = dp_plan,
    .heavy = true,
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
    .heavy = true,
};
