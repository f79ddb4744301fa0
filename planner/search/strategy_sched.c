/* strategy_sched.c — per-tensor tables and swap-in scheduling (seed 000 §4.3). */
#include "search/strategy_sched.h"

#include "ir/ops/op_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool strategy_tinfo_is_conv(const strategy_tinfo *ti, int node) {
    if (node < 0 || node >= ti->tg->n_forward) return false;
    const ir_node *n = &ti->tg->g->nodes[node];
    return node < ti->tg->n_forward && (n->op == OP_CONV || n->op == OP_CONV_RELU);
}

/* By producing node, then index (qsort_r context: the graph). */
static int cmp_production(const void *a, const void *b, void *ctx) {
    const ir_graph *g = ctx;
    int ta = *(const int *)a, tb = *(const int *)b;
    int pa = g->tensors[ta].producer, pb = g->tensors[tb].producer;
    if (pa != pb) return pa < pb ? -1 : 1;
    return ta < tb ? -1 : ta > tb;
}

strategy_tinfo *strategy_tinfo_new(const train_graph *tg) {
    const ir_graph *g = tg->g;
    int nt = g->n_tensors;
    strategy_tinfo *ti = oc_calloc(1, sizeof *ti);
    ti->tg = tg;
    ti->n_tensors = nt;
    while (ti->n_fwd < g->n_nodes && tg->phase[ti->n_fwd] == TRAIN_PHASE_FORWARD) ti->n_fwd++;
    ti->bytes = oc_calloc((size_t)nt, sizeof *ti->bytes);
    ti->copy_bytes = oc_calloc((size_t)nt, sizeof *ti->copy_bytes);
    ti->fwd_last = oc_malloc((size_t)nt * sizeof *ti->fwd_last);
    ti->first_bwd = oc_malloc((size_t)nt * sizeof *ti->first_bwd);
    ti->can_rc = oc_calloc((size_t)nt, sizeof *ti->can_rc);
    ti->swappable = oc_calloc((size_t)nt, sizeof *ti->swappable);
    for (int t = 0; t < nt; t++) {
        const ir_tensor *x = &g->tensors[t];
        int64_t b = 0;
        if (ir_tensor_bytes(x, &b)) ti->copy_bytes[t] = b;
        if (ir_tensor_device_bytes(x, &b)) ti->bytes[t] = b;
        ti->fwd_last[t] = x->producer;
        ti->first_bwd[t] = -1;
        for (int j = 0; j < x->n_consumers; j++) {
            int c = x->consumers[j];
            if (c < ti->n_fwd) {
                if (c > ti->fwd_last[t]) ti->fwd_last[t] = c;
            } else if (ti->first_bwd[t] < 0 || c < ti->first_bwd[t]) {
                ti->first_bwd[t] = c;
            }
        }
    }
    ti->saved_by_prod = oc_malloc(((size_t)tg->n_saved + 1) * sizeof(int));
    for (int i = 0; i < tg->n_saved; i++) {
        int t = tg->saved[i];
        ti->saved_by_prod[ti->n_saved++] = t;
        ti->swappable[t] = ti->first_bwd[t] >= 0;
        int p = g->tensors[t].producer;
        ti->can_rc[t] = p >= 0 && p < tg->n_forward;
    }
    qsort_r(ti->saved_by_prod, (size_t)ti->n_saved, sizeof(int), cmp_production, (void *)ti->tg->g);
    ti->conv_bwd = oc_malloc(((size_t)g->n_nodes + 1) * sizeof(int));
    for (int n = ti->n_fwd; n < g->n_nodes; n++) {
        int f = tg->fwd_of[n];
        if (f >= 0 && strategy_tinfo_is_conv(ti, f)) ti->conv_bwd[ti->n_conv_bwd++] = n;
    }
    return ti;
}

void strategy_tinfo_free(strategy_tinfo *ti) {
    if (!ti) return;
    oc_free(ti->bytes);
    oc_free(ti->copy_bytes);
    oc_free(ti->fwd_last);
    oc_free(ti->first_bwd);
    oc_free(ti->can_rc);
    oc_free(ti->swappable);
    oc_free(ti->saved_by_prod);
    oc_free(ti->conv_bwd);
    oc_free(ti);
}

int strategy_tinfo_issue_lo(const strategy_tinfo *ti, int t) {
    int lo = ti->fwd_last[t] + 1;
    if (lo < ti->n_fwd) lo = ti->n_fwd;
    if (ti->first_bwd[t] >= 0 && lo > ti->first_bwd[t]) lo = ti->first_bwd[t];
    return lo;
}

void strategy_tinfo_need(const strategy_tinfo *ti, const sim_plan *plan, int *need, int *block) {
    const train_graph *tg = ti->tg;
    const ir_graph *g = tg->g;
    for (int c = 0; c < g->n_nodes; c++) block[c] = -1;
    /* block[c]: the block in which forward node c is recomputed (-1: never).
     * Consumers come after producers, so a reverse sweep sees them first. */
    for (int c = tg->n_forward - 1; c >= 0; c--) {
        const ir_node *n = &g->nodes[c];
        int b = -1;
        for (int j = 0; j < n->n_outputs; j++) {
            int y = n->outputs[j];
            if (y < 0) continue;
            bool saved_y = ti->swappable[y] || ti->can_rc[y];
            bool needs_rc = plan->decision[y] == SIM_DECISION_RECOMPUTE || !saved_y;
            if (!needs_rc) continue;
            if (plan->decision[y] == SIM_DECISION_RECOMPUTE && ti->first_bwd[y] >= 0 &&
                (b < 0 || ti->first_bwd[y] < b))
                b = ti->first_bwd[y];
            const ir_tensor *x = &g->tensors[y];
            for (int k = 0; k < x->n_consumers; k++) {
                int c2 = x->consumers[k];
                if (c2 < tg->n_forward && block[c2] >= 0 && (b < 0 || block[c2] < b)) b = block[c2];
            }
        }
        block[c] = b;
    }
    for (int t = 0; t < ti->n_tensors; t++) {
        int m = ti->first_bwd[t];
        const ir_tensor *x = &g->tensors[t];
        for (int k = 0; k < x->n_consumers; k++) {
            int c = x->consumers[k];
            if (c < tg->n_forward && block[c] >= 0 && (m < 0 || block[c] < m)) m = block[c];
        }
        need[t] = m;
    }
}

void strategy_tinfo_clamp_issue(const strategy_tinfo *ti, sim_plan *plan) {
    int *need = oc_malloc(((size_t)ti->n_tensors + 1) * sizeof(int));
    int *scratch = oc_malloc(((size_t)ti->tg->g->n_nodes + 1) * sizeof(int));
    strategy_tinfo_need(ti, plan, need, scratch);
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (plan->decision[t] != SIM_DECISION_SWAP || need[t] < 0) continue;
        if (plan->swap_in_at[t] < 0 || plan->swap_in_at[t] > need[t]) plan->swap_in_at[t] = need[t];
    }
    oc_free(need);
    oc_free(scratch);
}

int strategy_tinfo_prev_conv_issue(const strategy_tinfo *ti, int t, int need) {
    int fb = need;
    OC_ASSERT(fb >= 0);
    int k = -1;
    for (int i = 0; i < ti->n_conv_bwd && ti->conv_bwd[i] < fb; i++) k = i;
    if (k < 0) return fb;
    /* Walk back to the first backward node of that Conv's gradient group. */
    int f = ti->tg->fwd_of[ti->conv_bwd[k]];
    while (k > 0 && ti->tg->fwd_of[ti->conv_bwd[k - 1]] == f) k--;
    int at = ti->conv_bwd[k];
    int lo = strategy_tinfo_issue_lo(ti, t);
    if (lo > fb) lo = fb;
    return at < lo ? lo : at;
}

/* By first need, later-produced first (qsort_r context: need per tensor). */
static int cmp_first_need(const void *a, const void *b, void *ctx) {
    const int *need = ctx;
    int ta = *(const int *)a, tb = *(const int *)b;
    int fa = need[ta], fb = need[tb];
    if (fa != fb) return fa < fb ? -1 : 1;
    return ta > tb ? -1 : ta < tb; /* later-produced first */
}

/* Places every swapped tensor's issue point given per-node memory mem (modified). */
static void place_issue_points(const strategy_tinfo *ti, sim_plan *plan, const int *order, int n,
                               const int *need, int64_t *mem, int64_t cap) {
    for (int i = 0; i < n; i++) {
        int t = order[i];
        int fb = need[t], lo = strategy_tinfo_issue_lo(ti, t);
        if (lo > fb) lo = fb;
        int64_t b = ti->bytes[t];
        int at = fb;
        for (int k = fb - 1; k >= lo && mem[k] + b <= cap; k--) at = k;
        for (int k = at; k < fb; k++) mem[k] += b;
        plan->swap_in_at[t] = at;
    }
}

int strategy_sched_early(const strategy_input *in, const strategy_tinfo *ti, sim_plan *plan,
                         strategy_stats *stats, sim_result *r, oc_err *err) {
    const train_graph *tg = in->tg;
    int nn = tg->g->n_nodes;
    int *order = oc_malloc(((size_t)ti->n_saved + 1) * sizeof(int));
    int n = 0;
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (plan->decision[t] == SIM_DECISION_SWAP) order[n++] = t;
    }
    int rc = OC_OK;
    sim_timeline *tl = NULL;
    int64_t *mem = NULL, *base = NULL;
    int *best_at = NULL, *in_at = NULL, *need = NULL, *scratch = NULL;
    if (n == 0) {
        rc = strategy_sim(in, plan, r, stats, err);
        goto done;
    }
    /* Candidates: the incoming issue points (clamped legal), just in time
     * (-1: each swap-in issued at its first reader; its timeline gives the
     * memory left free per node), and the early placements. The fastest
     * feasible one wins. */
    strategy_tinfo_clamp_issue(ti, plan);
    in_at = oc_malloc((size_t)n * sizeof *in_at);
    best_at = oc_malloc((size_t)n * sizeof *best_at);
    for (int i = 0; i < n; i++) best_at[i] = in_at[i] = plan->swap_in_at[order[i]];
    double best_t = INFINITY;
    bool jit_in = true; /* incoming points are all just in time: no extra run */
    for (int i = 0; i < n && jit_in; i++) jit_in = in_at[i] < 0;
    if (!jit_in) {
        if ((rc = strategy_sim(in, plan, r, stats, err)) != OC_OK) goto done;
        if (r->feasible) best_t = r->time_s;
    }
    for (int i = 0; i < n; i++) plan->swap_in_at[order[i]] = -1;
    tl = sim_timeline_new();
    if (stats) stats->sims++;
    if ((rc = sim_run(in->ctx, plan, &in->sim, r, tl, err)) != OC_OK) goto done;
    if (!r->feasible) goto finish; /* no free-memory profile to place by */
    if (r->time_s < best_t) {
        best_t = r->time_s;
        for (int i = 0; i < n; i++) best_at[i] = -1;
    }
    need = oc_malloc((size_t)ti->n_tensors * sizeof *need);
    scratch = oc_malloc((size_t)nn * sizeof *scratch);
    strategy_tinfo_need(ti, plan, need, scratch);
    /* order and in_at/best_at stay paired: sort indices, not tensors. */
    int *idx = oc_malloc((size_t)n * sizeof *idx);
    for (int i = 0; i < n; i++) idx[i] = order[i];
    qsort_r(idx, (size_t)n, sizeof(int), cmp_first_need, (void *)need);
    mem = oc_malloc((size_t)nn * sizeof *mem);
    base = oc_malloc((size_t)nn * sizeof *base);
    sim_timeline_node_mem(tl, nn, base);
    int64_t cap =
        in->sim.budget_bytes > 0 ? in->sim.budget_bytes - in->sim.reserve_bytes : INT64_MAX / 4;
    static const double margins[] = {1.0, 0.95, 0.85, 0.7};
    for (size_t m = 0; m < sizeof margins / sizeof margins[0]; m++) {
        memcpy(mem, base, (size_t)nn * sizeof *mem);
        place_issue_points(ti, plan, idx, n, need, mem, (int64_t)((double)cap * margins[m]));
        sim_result cr;
        if ((rc = strategy_sim(in, plan, &cr, stats, err)) != OC_OK) break;
        if (cr.feasible && cr.time_s < best_t) {
            /* the first margin that works is as early as memory allows; its run
             * is the last on the context, so r (and its per-node arrays) is it */
            *r = cr;
            oc_free(idx);
            goto done;
        }
    }
    oc_free(idx);
    if (rc != OC_OK) goto done;
finish:
    /* Nothing feasible: the incoming points are the best attempt. */
    for (int i = 0; i < n; i++) plan->swap_in_at[order[i]] = isinf(best_t) ? in_at[i] : best_at[i];
    rc = strategy_sim(in, plan, r, stats, err);
done:
    sim_timeline_free(tl);
    oc_free(mem);
    oc_free(base);
    oc_free(best_at);
    oc_free(in_at);
    oc_free(need);
    oc_free(scratch);
    oc_free(order);
    return rc;
}
