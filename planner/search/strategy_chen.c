/* strategy_chen.c — `chen`: Chen et al. 2016 √n checkpointing on a general
 * graph. The forward graph's DP nodes (dp_lowersets.h, topological order) are
 * cut at articulation points — nodes v such that no edge jumps over v, so the
 * prefix {0..v} has v as its only boundary node. Walking them in order, a
 * checkpoint is placed at the first articulation point at least ⌈√n⌉ nodes
 * after the previous one. Checkpoints are kept; every other saved activation
 * outside the last segment is recomputed (segment by segment in backward);
 * the last segment is kept, as backward starts from it. Only nodes with a
 * saved output qualify (an Add output, read by no backward node, cannot be
 * kept: the simulator would re-run its whole segment chain to get it). */
#include <math.h>
#include <string.h>

#include "search/dp_lowersets.h"
#include "search/strategy.h"

/* cut[v] = 1 when v is an articulation point of the DP graph. */
static void articulation_points(const dp_graph *g, uint8_t *cut) {
    int reach = -1; /* furthest successor of nodes < v */
    for (int v = 0; v < g->n; v++) {
        cut[v] = reach <= v && g->keepable[v]; /* a checkpoint must be a saved tensor */
        const uint64_t *s = g->succ + (size_t)v * (size_t)g->words;
        for (int w = g->n - 1; w > v; w--)
            if (dp_set_has(s, w)) {
                if (w > reach) reach = w;
                break;
            }
    }
}

static int chen_plan(const strategy_input *in, sim_plan *out, strategy_stats *st, oc_err *err) {
    dp_graph *g;
    if (dp_graph_from_train(in->tg, sim_context_node_times(in->ctx), &g, err)) return OC_ERR;
    uint8_t *cut = oc_malloc((size_t)g->n + 1), *drop = oc_calloc((size_t)g->n + 1, 1);
    articulation_points(g, cut);
    int seg = (int)ceil(sqrt((double)(g->n > 0 ? g->n : 1)));
    int last = -1, n_ckpt = 0, n_cut = 0;
    for (int v = 0; v < g->n; v++) {
        n_cut += cut[v];
        if (!cut[v] || v - last < seg) continue;
        for (int u = last + 1; u < v; u++) drop[u] = 1; /* the segment (last, v) */
        last = v;
        n_ckpt++;
    }
    sim_plan_keep_all(out);
    bool *saved = oc_calloc((size_t)in->tg->g->n_tensors, sizeof *saved);
    for (int i = 0; i < in->tg->n_saved; i++) saved[in->tg->saved[i]] = true;
    for (int v = 0; v < g->n; v++) {
        if (!drop[v]) continue;
        const ir_node *nd = &in->tg->g->nodes[g->node_of[v]];
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t >= 0 && saved[t]) sim_plan_set(out, t, SIM_DECISION_RECOMPUTE, -1);
        }
    }
    strategy_note(st, "%d nodes, %d articulation points, %d checkpoints (segment >= %d)", g->n,
                  n_cut, n_ckpt, seg);
    oc_free(saved);
    oc_free(cut);
    oc_free(drop);
    dp_graph_free(g);
    return OC_OK;
}

const strategy strategy_chen = {
    .name = "chen",
    .summary = "Chen sqrt(n) checkpoints at articulation points, the rest recomputed",
    .plan = chen_plan,
};
