/* strategy_baselines.c — the baselines of seed 000 §5 and seed 004 (vDNN):
 * incore, swap-all-nosched, swap-all, vdnn-conv, superneurons. */
#include <string.h>

#include "search/strategy_sched.h"

/* ---- incore: everything kept (also the ideal time) ---- */
static int incore_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    (void)in;
    (void)st;
    (void)err;
    sim_plan_keep_all(out);
    return OC_OK;
}

const strategy strategy_incore = {
    .name = "incore",
    .summary = "every tensor kept on the device (no swap, no recompute)",
    .plan = incore_plan,
};

/* ---- swap-all without scheduling: SwapIn(X) issued with the backward node
 * that runs just before X's first backward reader (seed 000 §5.1). ---- */
static void swap_all_prev_node(const strategy_tinfo *ti, sim_plan *out) {
    sim_plan_keep_all(out);
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (!ti->swappable[t]) continue;
        int at = ti->first_bwd[t] - 1;
        if (at < strategy_tinfo_issue_lo(ti, t)) at = ti->first_bwd[t];
        sim_plan_set(out, t, SIM_DECISION_SWAP, at);
    }
}

static int nosched_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    (void)st;
    (void)err;
    strategy_tinfo *ti = strategy_tinfo_new(in->tg);
    swap_all_prev_node(ti, out);
    strategy_tinfo_free(ti);
    return OC_OK;
}

const strategy strategy_swap_all_nosched = {
    .name = "swap-all-nosched",
    .summary = "every saved tensor swapped; swap-in issued with the previous backward node",
    .plan = nosched_plan,
};

/* ---- swap-all with swap-in scheduling (seed 000 §4.3) ---- */
static int swap_all_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    strategy_tinfo *ti = strategy_tinfo_new(in->tg);
    swap_all_prev_node(ti, out);
    sim_result r;
    int rc = strategy_sched_early(in, ti, out, st, &r, err);
    strategy_tinfo_free(ti);
    return rc;
}

const strategy strategy_swap_all = {
    .name = "swap-all",
    .summary = "every saved tensor swapped; swap-ins issued as early as memory allows",
    .plan = swap_all_plan,
};

/* ---- vDNN-conv (seed 004): only the inputs of Conv layers are offloaded;
 * the prefetch of a Conv's input is issued when the backward of the next Conv
 * (the one computed just before it in backward) starts. ---- */
static bool reads_into_conv(const strategy_tinfo *ti, int t) {
    const ir_tensor *x = &ti->tg->g->tensors[t];
    for (int j = 0; j < x->n_consumers; j++)
        if (strategy_tinfo_is_conv(ti, x->consumers[j])) return true;
    return false;
}

static int vdnn_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    (void)st;
    (void)err;
    strategy_tinfo *ti = strategy_tinfo_new(in->tg);
    sim_plan_keep_all(out);
    int n = 0;
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (!ti->swappable[t] || !reads_into_conv(ti, t)) continue;
        sim_plan_set(out, t, SIM_DECISION_SWAP,
                     strategy_tinfo_prev_conv_issue(ti, t, ti->first_bwd[t]));
        n++;
    }
    strategy_note(st, "%d Conv inputs offloaded", n);
    strategy_tinfo_free(ti);
    return OC_OK;
}

const strategy strategy_vdnn_conv = {
    .name = "vdnn-conv",
    .summary = "vDNN: only Conv inputs swapped, prefetch one Conv ahead",
    .plan = vdnn_plan,
};

/* ---- SuperNeurons-static as seed 000 §5.2 defines it: feature maps kept from
 * the output layer backwards while they fit; of the rest, Conv outputs swap
 * (swap-in issued with the previous Conv's backward) and cheaper layers'
 * outputs are recomputed. Recomputation in SuperNeurons runs segments that
 * start at checkpoints (the swapped / kept maps); a cheap-layer output whose
 * recomputation would start from another recomputed map (the ReLU after a
 * residual Add reads the previous block's output) would chain back to the
 * start of the stage and hold every block output of the stage at once in
 * backward — at ResNet-50 batch 640 that needs > 20 GiB. Such maps are
 * swapped instead (they are checkpoints, as in SuperNeurons). ---- */

/* True when recomputing t's producer needs no saved map decided RECOMPUTE:
 * its inputs are kept, swapped, persistent, or unsaved forward activations
 * that (recursively) satisfy the same. memo: per tensor 0 unknown, 1 ok, 2 not. */
static bool sn_segment_ok(const strategy_tinfo *ti, const sim_plan *out, int t, uint8_t *memo) {
    const ir_graph *g = ti->tg->g;
    int p = g->tensors[t].producer;
    if (p < 0 || p >= ti->tg->n_forward) return true;
    const ir_node *n = &g->nodes[p];
    for (int k = 0; k < n->n_inputs; k++) {
        int u = n->inputs[k];
        if (u < 0 || u == t) continue;
        bool saved_u = ti->swappable[u] || ti->can_rc[u];
        if (saved_u) {
            if (out->decision[u] == SIM_DECISION_RECOMPUTE) return false;
            continue;
        }
        int pu = g->tensors[u].producer;
        if (pu < 0 || pu >= ti->tg->n_forward || ti->tg->alias_of[u] >= 0) continue;
        if (memo[u] == 0) memo[u] = sn_segment_ok(ti, out, u, memo) ? 1 : 2;
        if (memo[u] == 2) return false;
    }
    return true;
}

static void superneurons_fill(const strategy_tinfo *ti, sim_plan *out, int n_keep, bool prefetch) {
    sim_plan_keep_all(out);
    int kept = 0;
    for (int i = ti->n_saved - 1; i >= 0; i--) {
        int t = ti->saved_by_prod[i];
        if (!ti->swappable[t]) continue;
        if (kept++ < n_keep) continue;
        int p = ti->tg->g->tensors[t].producer;
        if (ti->can_rc[t] && !strategy_tinfo_is_conv(ti, p))
            sim_plan_set(out, t, SIM_DECISION_RECOMPUTE, -1);
        else sim_plan_set(out, t, SIM_DECISION_SWAP, -1);
    }
    /* Segments start at checkpoints: in production order, a recompute that
     * would start from another recomputed map becomes a swap. */
    uint8_t *memo = oc_calloc((size_t)ti->n_tensors + 1, 1);
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (out->decision[t] != SIM_DECISION_RECOMPUTE) continue;
        memset(memo, 0, (size_t)ti->n_tensors);
        if (!sn_segment_ok(ti, out, t, memo)) sim_plan_set(out, t, SIM_DECISION_SWAP, -1);
    }
    oc_free(memo);
    /* Issue points once the recomputes (which may need swapped maps earlier) are known. */
    int *need = oc_malloc(((size_t)ti->n_tensors + 1) * sizeof(int));
    int *scratch = oc_malloc(((size_t)ti->tg->g->n_nodes + 1) * sizeof(int));
    strategy_tinfo_need(ti, out, need, scratch);
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (out->decision[t] == SIM_DECISION_SWAP)
            out->swap_in_at[t] =
                prefetch ? strategy_tinfo_prev_conv_issue(ti, t, need[t]) : need[t];
    }
    oc_free(need);
    oc_free(scratch);
}

static int superneurons_plan(const strategy_input *in, sim_plan *out, strategy_stats *st,
                             oc_err *err) {
    strategy_tinfo *ti = strategy_tinfo_new(in->tg);
    int n = 0;
    for (int i = 0; i < ti->n_saved; i++) n += ti->swappable[ti->saved_by_prod[i]];
    /* Largest keep prefix (from the output) that fits: binary search, as
     * memory grows with the prefix. When prefetching with the previous Conv
     * deadlocks for every prefix, swap-ins are issued just in time instead. */
    int best = -1, rc = OC_OK;
    bool prefetch = true;
    sim_result r;
    for (int pass = 0; pass < 2 && best < 0 && rc == OC_OK; pass++) {
        prefetch = pass == 0;
        int lo = 0, hi = n;
        while (lo <= hi) {
            int mid = lo + (hi - lo) / 2;
            superneurons_fill(ti, out, mid, prefetch);
            if ((rc = strategy_sim(in, out, &r, st, err)) != OC_OK) break;
            if (r.feasible) {
                best = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
    }
    if (rc == OC_OK) {
        superneurons_fill(ti, out, best < 0 ? 0 : best, prefetch);
        strategy_note(st, "%d of %d feature maps kept from the output%s", best < 0 ? 0 : best, n,
                      prefetch ? ""
                               : "; prefetch with the previous Conv deadlocks, swap-ins "
                                 "issued at first need");
    }
    strategy_tinfo_free(ti);
    return rc;
}

const strategy strategy_superneurons = {
    .name = "superneurons",
    .summary = "SuperNeurons-static: keep from the output; Conv outputs swap, others recompute",
    .plan = superneurons_plan,
};
