/* strategy_hybrid.c — the two-stage keep/swap → swap/recompute search of
 * seed 000 §4.4 (DESIGN §6).
 *
 * Stage 1 (keep vs swap, §4.4.2): start from all-swap with swap-in scheduling
 * (§4.3) and simulate. A feature map whose swap-out and swap-in are hidden by
 * compute stays SWAP. The maps whose swap-in is not hidden (U_in) are searched
 * exhaustively, keep-branch first, by depth-first branch and bound:
 *   - infeasibility cut: setting a map to KEEP only adds memory, so when the
 *     least-memory completion (everything undecided SWAP) does not fit, the
 *     keep subtree is cut;
 *   - time bound: the most optimistic completion (everything undecided and
 *     every unhidden swap-out KEEP, memory unlimited) is simulated; when it is
 *     not faster than the best leaf so far, the subtree is cut (the simulator is
 *     monotone enough in practice for this to be a bound; it is a heuristic one);
 *   - a leaf cap (opts.max_leaves, default 1024), a cap on branch nodes
 *     (HY_NODES_PER_LEAF per leaf of the cap: the time bound can cut every
 *     subtree short of a leaf, and on DenseNet-121 b640 at 8 GiB the search
 *     then ran for minutes between leaves) and opts.max_sims/max_seconds:
 *     (default sims: HY_DEFAULT_WORK / nodes), when hit, the best plan so far
 *     is returned and bound_hit is set. Stage 1
 *     gets 60% of the sims/seconds caps, stage 2 the rest (a capped search
 *     still moves maps to recompute).
 * At each leaf the maps whose swap-out is not hidden (U_out, all contiguous at
 * the end of forward) are switched to KEEP greedily from the output layer
 * backwards while memory fits (the longest feasible prefix, by bisection).
 * Stage 2 (swap vs recompute, §4.4.3): L = maps still SWAP. Repeat: for each X
 * in L, r(X) = recompute_overhead(X) / swap_overhead(X), both measured by
 * simulation against X kept with memory unlimited, the others fixed; drop X
 * with r >= 1 (stays SWAP); move the X with the least r < 1 to RECOMPUTE when
 * the rescheduled plan fits and is not slower; until L is empty. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/strategy_sched.h"

#define HY_EPS 1e-9
#define HY_DEFAULT_LEAVES 1024
#define HY_STAGE1_SHARE 0.6
#define HY_NODES_PER_LEAF 64
/* Default sims cap: node-simulations (sims x training nodes). Large graphs
 * (ResNet-152 b640: 1,655 nodes) get about 60k simulations, ~4 s; the local
 * search (auto) refines whatever the capped search returns. */
#define HY_DEFAULT_WORK 1e8

typedef struct hybrid {
    const strategy_input *in;
    strategy_tinfo *ti;
    strategy_stats *st;
    double t0;
    long max_leaves;
    long nodes;        /* branch nodes visited */
    int *uin, n_uin;   /* unhidden swap-in, output layer first */
    int *uout, n_uout; /* unhidden swap-out only, output layer first */
    uint8_t *dec_in;   /* per uin index: 1 keep, 0 swap */
    sim_plan *work, *best;
    double best_t;
    bool have_best, stop;
} hybrid;

/* Schedules swap-ins of p and simulates it. Returns OC_ERR on a malformed plan. */
static int hy_eval(hybrid *h, sim_plan *p, bool *feasible, double *t, oc_err *err) {
    sim_result r;
    /* Every evaluation starts from just-in-time issue points, so a plan's
     * score depends on its decisions only, not on the order of the search. */
    for (int x = 0; x < p->n_tensors; x++)
        if (p->decision[x] == SIM_DECISION_SWAP) p->swap_in_at[x] = -1;
    /* Just in time is the least memory a schedule holds: when it does not fit,
     * strategy_sched_early finds nothing either (it starts from it). One run
     * without a timeline says so; most keep branches of the search end here. */
    if (strategy_sim(h->in, p, &r, h->st, err)) return OC_ERR;
    if (!r.feasible) {
        *feasible = false;
        *t = INFINITY;
        return OC_OK;
    }
    if (strategy_sched_early(h->in, h->ti, p, h->st, &r, err)) return OC_ERR;
    *feasible = r.feasible;
    *t = r.feasible ? r.time_s : INFINITY;
    return OC_OK;
}

static bool hy_spent(hybrid *h) {
    if (h->stop) return true;
    if (strategy_budget_spent(h->in, h->st, h->t0)) h->stop = true;
    return h->stop;
}

/* Fills h->work: hidden maps SWAP, uin[0..depth) by dec_in, uin[depth..) as
 * rest_in, uout[0..k_out) KEEP, the rest of uout SWAP. */
static void hy_fill(hybrid *h, const sim_plan *base, int depth, sim_decision rest_in, int k_out) {
    sim_plan_copy(h->work, base);
    for (int i = 0; i < h->n_uin; i++) {
        sim_decision d =
            i < depth ? (h->dec_in[i] ? SIM_DECISION_KEEP : SIM_DECISION_SWAP) : rest_in;
        sim_plan_set(h->work, h->uin[i], d, -1);
    }
    for (int i = 0; i < h->n_uout; i++)
        sim_plan_set(h->work, h->uout[i], i < k_out ? SIM_DECISION_KEEP : SIM_DECISION_SWAP, -1);
}

static void hy_offer(hybrid *h, double t) {
    if (!h->have_best || t < h->best_t - HY_EPS) {
        sim_plan_copy(h->best, h->work);
        h->best_t = t;
        h->have_best = true;
    }
}

/* One leaf: greedy swap-out reduction from the output layer. */
static int hy_leaf(hybrid *h, const sim_plan *base, oc_err *err) {
    h->st->leaves_explored++;
    bool f;
    double t;
    /* Longest feasible keep-prefix of uout (memory grows with the prefix). */
    int lo = 1, hi = h->n_uout, k = 0;
    double tk = INFINITY;
    hy_fill(h, base, h->n_uin, SIM_DECISION_SWAP, 0);
    if (hy_eval(h, h->work, &f, &t, err)) return OC_ERR;
    if (!f) return OC_OK; /* even with every unhidden swap-out kept as SWAP it does not fit */
    tk = t;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        hy_fill(h, base, h->n_uin, SIM_DECISION_SWAP, mid);
        if (hy_eval(h, h->work, &f, &t, err)) return OC_ERR;
        if (f) {
            k = mid;
            tk = t;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    hy_fill(h, base, h->n_uin, SIM_DECISION_SWAP, k);
    if (hy_eval(h, h->work, &f, &t, err)) return OC_ERR; /* re-schedule the chosen one */
    (void)tk;
    if (f) hy_offer(h, t);
    return OC_OK;
}

/* The time bound of a subtree: its undecided and unhidden swap-outs kept, memory
 * unlimited. known: already simulated (the keep child's bound plan is its
 * parent's: the parent's undecided maps were kept there too). */
typedef struct hy_bound {
    bool known, feasible;
    double t;
} hy_bound;

static int hy_dfs(hybrid *h, const sim_plan *base, int depth, hy_bound b, oc_err *err) {
    if (hy_spent(h)) return OC_OK;
    if (h->st->leaves_explored >= h->max_leaves || ++h->nodes > h->max_leaves * HY_NODES_PER_LEAF) {
        h->st->bound_hit = true;
        h->stop = true;
        return OC_OK;
    }
    if (depth == h->n_uin) return hy_leaf(h, base, err);
    bool f;
    double t;
    if (h->have_best && !b.known) {
        hy_fill(h, base, depth, SIM_DECISION_KEEP, h->n_uout);
        sim_result r;
        strategy_input unl = *h->in;
        unl.sim.budget_bytes = 0;
        if (strategy_sim(&unl, h->work, &r, h->st, err)) return OC_ERR;
        b = (hy_bound){.known = true, .feasible = r.feasible, .t = r.time_s};
    }
    if (h->have_best && b.feasible && b.t >= h->best_t - HY_EPS) return OC_OK;
    /* Keep branch, unless its least-memory completion does not fit. */
    h->dec_in[depth] = 1;
    hy_fill(h, base, depth + 1, SIM_DECISION_SWAP, 0);
    if (hy_eval(h, h->work, &f, &t, err)) return OC_ERR;
    if (f) {
        hy_offer(h, t);
        if (hy_dfs(h, base, depth + 1, b, err)) return OC_ERR;
    }
    h->dec_in[depth] = 0;
    return hy_dfs(h, base, depth + 1, (hy_bound){0}, err);
}

static int cmp_desc_prod(const void *a, const void *b, void *ctx) {
    const ir_graph *g = ctx;
    int pa = g->tensors[*(const int *)a].producer, pb = g->tensors[*(const int *)b].producer;
    return pa > pb ? -1 : pa < pb;
}

/* Stage 1 classification on the scheduled all-swap plan (in h->best). */
static int hy_classify(hybrid *h, oc_err *err) {
    const strategy_tinfo *ti = h->ti;
    const train_graph *tg = h->in->tg;
    sim_result r;
    if (strategy_sim(h->in, h->best, &r, h->st, err)) return OC_ERR;
    double fwd_end = ti->n_fwd > 0 ? r.node_end[ti->n_fwd - 1] : 0;
    int n_hidden = 0;
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (h->best->decision[t] != SIM_DECISION_SWAP) continue;
        int fb = ti->first_bwd[t];
        double gap = fb > 0 ? r.node_start[fb] - r.node_end[fb - 1] : 0;
        bool in_unhidden = gap > HY_EPS && r.swap_in_end[t] >= r.node_start[fb] - HY_EPS;
        bool out_unhidden = r.swap_out_end[t] > fwd_end + HY_EPS;
        if (in_unhidden) h->uin[h->n_uin++] = t;
        else if (out_unhidden) h->uout[h->n_uout++] = t;
        else n_hidden++;
    }
    qsort_r(h->uin, (size_t)h->n_uin, sizeof(int), cmp_desc_prod, tg->g);
    qsort_r(h->uout, (size_t)h->n_uout, sizeof(int), cmp_desc_prod, tg->g);
    strategy_note(h->st,
                  "stage 1: %d swaps hidden, %d unhidden swap-ins searched, %d unhidden "
                  "swap-outs greedy",
                  n_hidden, h->n_uin, h->n_uout);
    return OC_OK;
}

/* Stage 2: swap -> recompute by r(X). h->best holds the stage-1 plan. */
static int hy_stage2(hybrid *h, oc_err *err) {
    const strategy_tinfo *ti = h->ti;
    sim_plan *cur = h->best, *p = h->work;
    int *L = oc_malloc(((size_t)ti->n_saved + 1) * sizeof(int)), n = 0, moved = 0;
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (cur->decision[t] == SIM_DECISION_SWAP && ti->can_rc[t]) L[n++] = t;
    }
    strategy_input unl = *h->in;
    unl.sim.budget_bytes = 0;
    int rc = OC_OK;
    double cur_t = h->best_t;
    while (n > 0 && !hy_spent(h)) {
        int best_i = -1;
        double best_r = 1.0;
        for (int i = 0; i < n;) {
            int x = L[i];
            sim_result r;
            cur->decision[x] = SIM_DECISION_KEEP;
            rc = strategy_sim(&unl, cur, &r, h->st, err);
            double t_keep = r.feasible ? r.time_s : INFINITY;
            cur->decision[x] = SIM_DECISION_SWAP;
            if (rc) goto done;
            sim_plan_copy(p, cur);
            sim_plan_set(p, x, SIM_DECISION_RECOMPUTE, -1);
            strategy_tinfo_clamp_issue(ti, p);
            rc = strategy_sim(h->in, p, &r, h->st, err);
            double t_rc = r.feasible ? r.time_s : INFINITY;
            if (rc) goto done;
            double so = cur_t - t_keep, ro = t_rc - t_keep;
            double ratio = so > HY_EPS ? ro / so : INFINITY;
            if (ratio >= 1.0) {
                L[i] = L[--n]; /* stays SWAP */
                continue;
            }
            if (ratio < best_r) {
                best_r = ratio;
                best_i = i;
            }
            i++;
        }
        if (best_i < 0) break;
        int x = L[best_i];
        L[best_i] = L[--n];
        sim_plan_copy(p, cur);
        sim_plan_set(p, x, SIM_DECISION_RECOMPUTE, -1);
        bool f;
        double t;
        if ((rc = hy_eval(h, p, &f, &t, err))) goto done;
        if (f && t <= cur_t + HY_EPS) {
            sim_plan_copy(cur, p);
            cur_t = t;
            moved++;
        }
    }
    h->best_t = cur_t;
    strategy_note(h->st, "stage 2: %d maps moved to recompute", moved);
done:
    oc_free(L);
    return rc;
}

static int hybrid_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    /* Stage 1 may spend HY_STAGE1_SHARE of the sims / seconds caps, so that a
     * capped search still runs stage 2 (where recomputation pays off). */
    strategy_input in1 = *in;
    if (in1.opts.max_sims <= 0) /* default: a count of node-simulations, not wall time */
        in1.opts.max_sims =
            (long)(HY_DEFAULT_WORK / (in->tg->g->n_nodes > 0 ? in->tg->g->n_nodes : 1));
    strategy_input in2 = *in;
    in2.opts.max_sims = in1.opts.max_sims;
    in = &in2;
    if (in1.opts.max_seconds > 0) in1.opts.max_seconds *= HY_STAGE1_SHARE;
    if (in1.opts.max_sims > 0)
        in1.opts.max_sims = (long)((double)in1.opts.max_sims * HY_STAGE1_SHARE);
    hybrid h = {.in = &in1, .st = st, .t0 = strategy_now()};
    h.max_leaves = in->opts.max_leaves > 0 ? in->opts.max_leaves : HY_DEFAULT_LEAVES;
    sim_result r;
    /* Nothing to do when everything fits. */
    sim_plan_keep_all(out);
    if (strategy_sim(in, out, &r, st, err)) return OC_ERR;
    if (r.feasible) {
        strategy_note(st, "fits in core");
        return OC_OK;
    }
    h.ti = strategy_tinfo_new(in->tg);
    h.work = sim_plan_new(in->tg);
    h.best = sim_plan_new(in->tg);
    h.uin = oc_malloc(((size_t)h.ti->n_saved + 1) * sizeof(int));
    h.uout = oc_malloc(((size_t)h.ti->n_saved + 1) * sizeof(int));
    h.dec_in = oc_calloc((size_t)h.ti->n_saved + 1, 1);
    int rc = OC_OK;
    sim_plan *base = sim_plan_new(in->tg);
    for (int i = 0; i < h.ti->n_saved; i++) {
        int t = h.ti->saved_by_prod[i];
        if (h.ti->swappable[t]) sim_plan_set(h.best, t, SIM_DECISION_SWAP, -1);
    }
    bool f;
    double t;
    if ((rc = hy_eval(&h, h.best, &f, &t, err))) goto done;
    if (!f) {
        sim_plan_copy(out, h.best);
        strategy_note(st, "even all-swap does not fit");
        goto done;
    }
    h.best_t = t;
    h.have_best = true;
    if ((rc = hy_classify(&h, err))) goto done;
    sim_plan_copy(base, h.best);
    if ((rc = hy_dfs(&h, base, 0, (hy_bound){0}, err))) goto done;
    strategy_note(st, "%ld leaves, %ld branch nodes%s", st->leaves_explored, h.nodes,
                  st->bound_hit ? " (bound hit)" : "");
    if ((rc = hy_eval(&h, h.best, &f, &t, err))) goto done;
    OC_ASSERT(f);
    h.best_t = t;
    h.stop = false; /* the leaf cap bounds stage 1 only; the full sims/seconds caps apply */
    h.in = in;
    if ((rc = hy_stage2(&h, err))) goto done;
    sim_plan_copy(out, h.best);
done:
    sim_plan_free(base);
    sim_plan_free(h.work);
    sim_plan_free(h.best);
    oc_free(h.uin);
    oc_free(h.uout);
    oc_free(h.dec_in);
    strategy_tinfo_free(h.ti);
    return rc;
}

const strategy strategy_hybrid = {
    .name = "hybrid",
    .summary =
        "two-stage search: keep/swap (bounded exhaustive + greedy), then swap/recompute by r(X)",
    .plan = hybrid_plan,
    .heavy = true,
};
