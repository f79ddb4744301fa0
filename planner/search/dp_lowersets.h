/* dp_lowersets.h — the graph of the recomputation DP (Kusumoto et al., NeurIPS
 * 2019; DESIGN §6) and its families of lower sets.
 *
 * Nodes are the forward graph's computations that produce intermediate tensors
 * (one DP node per forward node: its activation outputs, so a multi-output op
 * such as BatchNormalization is one node); T(v) = the node's time, M(v) = bytes
 * of its non-persistent outputs. Nodes are numbered in a topological order.
 *
 *   dp_graph *g;
 *   dp_graph_from_train(tg, node_times, &g, &err);   // or dp_graph_new(n) + edges (tests)
 *   dp_lowersets *ls = dp_lowersets_build(g, 2000);  // exact if <= 2000, else approximate
 *   ... ls->family, ls->count, dp_lowersets_set(ls, i) ...
 *   dp_step st; dp_step_cost(g, L, L2, &st);         // ΔT, ΔK, P of L -> L2
 *   dp_lowersets_free(ls); dp_graph_free(g);
 *
 * Definitions (DESIGN §6): a lower set L is closed under predecessors. For a
 * step L ⊊ L': V' = L'∖L; ∂L' = nodes of L' with a successor outside L';
 * kept K = ∂L' ∩ V'; dropped F = V'∖∂L' (recomputed once in backward);
 * ΔT = T(F); ΔK = M(K); P = 2·M(V') + M(A) + M(Bs), A = succ(L')∖L',
 * Bs = pred(A)∖L'. Emission drops F after every block but the last, so the
 * step into L' = V has ΔT = 0 (its F = V' stays resident for backward).
 *
 * Two step-peak models (g->peak_model):
 *  - DP_PEAK_PAPER: P = 2·M(V') + M(A) + M(Bs), the paper's: the whole block
 *    recomputed at once plus a gradient for every node of it.
 *  - DP_PEAK_LAZY: P = max_{v∈V'} (R(V' ∩ [0, v)) + S(v) + 2·M(v) + E(v)), what the
 *    simulator does (sim_plan.h): a dropped tensor is recomputed right before
 *    its first backward reader and freed after its last, gradients are freed
 *    as soon as they are consumed. Backward walks the block from its last
 *    node down; at node v the live set is the kept checkpoints of earlier
 *    blocks (ΣΔK), the block's recomputed or kept tensors not yet consumed
 *    (≈ those of nodes before v, R(V' ∩ [0, v)), and of v itself the saved
 *    outputs its own backward reads, S(v): a BatchNormRelu whose gradient
 *    reads X, not Y, or a Conv's, has its Y freed by Y's last reader's
 *    backward), and the gradient frontier at v (its output's and its inputs'
 *    gradients ≈ 2·M(v), plus E(v)).
 *    E(v) = parameter-gradient bytes v's backward writes (g->bwd_extra);
 *    S(v) = g->mem_self.
 *  - DP_PEAK_BLOCK: P = R(V') + R(K) + max_{v∈V'} (2·M(v) + E(v)): as LAZY,
 *    but the whole block's tensors live at once (a chain is recomputed in one
 *    go at the block's first backward reader) plus the gradients flowing in
 *    through its boundary (≈ R(K)). LAZY under-counts blocks whose early nodes
 *    are recomputed late, BLOCK over-counts blocks whose large tensors come
 *    first; strategy_dp.c solves under each and the simulator picks.
 *    R(v) = bytes of v's saved outputs (g->mem_saved): unsaved outputs (Add,
 *    BatchNormalization's Y) are transient in forward and in recompute, and
 *    the kept memory ΔK counts R too under this model.
 *    It is still an estimate (branches are recomputed lazily, so a block's F
 *    need not be live all at once); strategies score the chains it gives with
 *    the simulator. */
#ifndef OC_DP_LOWERSETS_H
#define OC_DP_LOWERSETS_H

#include "train/train_graph.h"

typedef enum dp_peak_model {
    DP_PEAK_PAPER = 0, /* P = 2·M(V') + M(A) + M(Bs) */
    DP_PEAK_LAZY,      /* P = max_{v∈V'} (R(V'∩[0,v)) + S(v) + 2·M(v) + E(v)), ΔK = R(K) */
    DP_PEAK_BLOCK,     /* P = R(V') + R(K) + max_{v∈V'} (2·M(v) + E(v)), ΔK = R(K) */
} dp_peak_model;

const char *dp_peak_model_name(dp_peak_model m); /* "paper" | "lazy" */

typedef struct dp_graph {
    int n;                    /* nodes, in topological order */
    dp_peak_model peak_model; /* DP_PEAK_PAPER from dp_graph_new; callers may change it */
    int words;                /* uint64 words per node set */
    double *time;             /* T(v), seconds */
    int64_t *mem;             /* M(v), bytes */
    int64_t *mem_saved;       /* bytes of v's saved outputs (what stays resident when v is kept or
                           recomputed; the rest is transient); NULL = mem (dp_graph_new) */
    int64_t *bwd_extra;       /* max over v's backward nodes of the parameter-gradient bytes they
                           write (live while v's backward runs); NULL = 0 (dp_graph_new) */
    int64_t *mem_self;        /* bytes of v's saved outputs that v's own backward reads (still live
                           when it runs; the rest were freed by their readers' backward);
                           NULL = mem_saved (dp_graph_new) */
    int *node_of;             /* training-graph node per DP node (-1 for test graphs) */
    uint8_t *keepable;        /* 1 when v can be kept (has a saved output); all 1 from dp_graph_new.
                          Lower sets with an unkeepable boundary node are left out of
                          both families (such a node would be recomputed anyway). */
    bool checkpoints;         /* dp_graph_allow_checkpoints was called */
    uint64_t *succ;           /* n * words: successor set of v */
    uint64_t *pred;           /* n * words: predecessor set of v */
} dp_graph;

/* Makes every node keepable: a boundary node without a saved output is kept
 * as a CHECKPOINT (sim_plan.h) and counts its whole output as resident
 * (mem_saved = mem). For graphs whose saved tensors alone leave few cut
 * points (DenseNet: Conv outputs only Concats read). */
void dp_graph_allow_checkpoints(dp_graph *g);

/* Bytes of v that the step-peak model counts as resident: mem_saved under
 * DP_PEAK_LAZY (transient outputs are freed by their readers), else M(v). */
static inline int64_t dp_mem_resident(const dp_graph *g, int v) {
    return g->peak_model != DP_PEAK_PAPER && g->mem_saved ? g->mem_saved[v] : g->mem[v];
}

/* Bytes of v still live when v's own backward runs (S(v) of DP_PEAK_LAZY):
 * g->mem_self, or all of v's resident bytes for graphs without it. */
static inline int64_t dp_mem_self(const dp_graph *g, int v) {
    return g->peak_model != DP_PEAK_PAPER && g->mem_self ? g->mem_self[v] : dp_mem_resident(g, v);
}

/* The gradient-frontier term of DP_PEAK_LAZY for node v: 2·M(v) + E(v). */
static inline int64_t dp_mem_frontier(const dp_graph *g, int v) {
    return 2 * g->mem[v] + (g->bwd_extra ? g->bwd_extra[v] : 0);
}

/* n nodes, no edges, T = M = 0 (tests fill them). */
dp_graph *dp_graph_new(int n);
/* Edge u -> v; requires u < v (topological numbering). */
void dp_graph_edge_add(dp_graph *g, int u, int v);
void dp_graph_free(dp_graph *g);
/* The DP graph of tg's forward part (nodes [0, n_forward) producing at least
 * one non-persistent output; the loss node included). node_time: per node of
 * tg->g (e.g. sim_context_node_times). Never fails on a valid training graph;
 * OC_ERR (naming the tensor) when an activation has no static size. */
int dp_graph_from_train(const train_graph *tg, const double *node_time, dp_graph **out,
                        oc_err *err);

/* Set helpers over g->words words. */
static inline bool dp_set_has(const uint64_t *s, int v) { return (s[v >> 6] >> (v & 63)) & 1u; }
static inline void dp_set_add(uint64_t *s, int v) { s[v >> 6] |= (uint64_t)1 << (v & 63); }

typedef enum dp_family {
    DP_FAMILY_EXACT = 0, /* every lower set */
    DP_FAMILY_APPROX,    /* {v ∪ ancestors(v)} ∪ {∅, V}; of a long graph, v every k-th node */
} dp_family;

/* The approximate family of a graph of more nodes than this takes the ancestor sets of
 * DP_APPROX_MAX_SETS evenly spaced nodes (in topological order), and the table's steps span
 * at most DP_APPROX_MAX_SPAN of them (but those from ∅ and into V): a step costs O(its
 * nodes), and one per nested pair of n sets left an unrolled RNN's 20000-node forward
 * unfinished after 15 minutes. Blocks of a quarter of the graph at most; nothing changes for
 * graphs of fewer nodes. */
#define DP_APPROX_MAX_SETS 1024
#define DP_APPROX_MAX_SPAN 256
const char *dp_family_name(dp_family f);

typedef struct dp_lowersets {
    dp_family family;
    int count;
    int words;
    uint64_t *sets; /* count * words, sorted by size (ties: by discovery); [0] = ∅, [count-1] = V */
    int *size;      /* |set| */
    int max_span;   /* steps i -> j: j - i <= max_span (0: any); DP_APPROX_MAX_SPAN when thinned */
} dp_lowersets;

static inline const uint64_t *dp_lowersets_set(const dp_lowersets *ls, int i) {
    return ls->sets + (size_t)i * (size_t)ls->words;
}
/* Every lower set of g, or NULL when there are more than max_count. */
dp_lowersets *dp_lowersets_exact(const dp_graph *g, int max_count);
/* The approximate family (duplicates removed). */
dp_lowersets *dp_lowersets_approx(const dp_graph *g);
/* Exact when it has at most max_exact members, otherwise approximate. */
dp_lowersets *dp_lowersets_build(const dp_graph *g, int max_exact);
void dp_lowersets_free(dp_lowersets *ls);

/* Cost of one step L -> L2 (L ⊊ L2, both lower sets). */
typedef struct dp_step {
    double dt;    /* ΔT: time of the dropped nodes F */
    int64_t dk;   /* ΔK: bytes of the kept boundary K */
    int64_t peak; /* P: the step's peak term */
} dp_step;
void dp_step_cost(const dp_graph *g, const uint64_t *L, const uint64_t *L2, dp_step *out);
/* The step peak of L -> L2 under DP_PEAK_LAZY or DP_PEAK_BLOCK (see above). bnd2: ∂L2, the
 * nodes of L2 with a successor outside it, when the caller has it (else NULL: found here). */
int64_t dp_lazy_block_peak(const dp_graph *g, const uint64_t *L, const uint64_t *L2,
                           const uint64_t *bnd2);
/* True when a ⊆ b; strict when also a != b. */
bool dp_set_subset(const uint64_t *a, const uint64_t *b, int words, bool strict);

#endif
