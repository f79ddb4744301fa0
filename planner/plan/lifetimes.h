/* lifetimes.h — when each tensor of a step in execution order needs device
 * storage: the one definition the layout (emit/layout.h), the plan verifier
 * and the runtime's arena share.
 *
 *   plan_lifetimes lt;
 *   plan_lifetimes_compute(tg, &lt);
 *   for (int t = 0; t < lt.n; t++) if (plan_lifetimes_device(&lt, t)) ... lt.first[t], lt.last[t], lt.bytes[t]
 *   plan_lifetimes_free(&lt);
 *
 * Rules:
 * positions are node indices; a graph input is live from -1 (before node 0),
 * a node's output from its node; a tensor lives to its last reader, a graph
 * output to n_nodes (the end); initializers that some node touches live
 * throughout. In-place outputs (alias_of) share their root's storage, which
 * lives over every use of any alias; so does the output of an in-place view
 * (train_view_source: a Reshape's output is its input's bytes, nothing is
 * copied). SwapOut outputs are host tensors (no
 * arena storage). Two tensors live at a common position never share a byte:
 * a node's inputs and outputs are distinct storage.
 *
 */
#ifndef OC_LIFETIMES_H
#define OC_LIFETIMES_H

#include "train/train_graph.h"

/* The one alignment of arena offsets and sizes (planner layout, verifier,
 * runtime arena, kernels' scratch regions). */
#define PLAN_ALIGN IR_DEVICE_ALIGN
int64_t plan_align_up(int64_t x);

typedef struct plan_lifetimes {
    int n;             /* tensors; items n + i (i < n_ws) are node i's workspace */
    int n_ws;          /* nodes with a workspace item (0 until plan_lifetimes_add_workspaces) */
    int *root;         /* storage owner (alias_of followed) */
    int *first, *last; /* per root: live positions, inclusive; last < first: no storage */
    uint8_t *host;     /* per root: host tensor (SwapOut output) */
    int64_t *bytes;    /* per root: aligned bytes (0: no storage) */
} plan_lifetimes;

void plan_lifetimes_compute(const train_graph *tg, plan_lifetimes *lt);
/* root[t] (n_tensors, the caller's): the tensor whose storage t uses — alias_of
 * followed, then in-place views. */
void plan_storage_roots(const train_graph *tg, int *root);
void plan_lifetimes_free(plan_lifetimes *lt);
/* True when root tensor t (or workspace item n + i) needs arena storage. */
bool plan_lifetimes_device(const plan_lifetimes *lt, int t);
/* Adds item n + i for node i (i < n_nodes) with ws[i] bytes (aligned), live at
 * position i only; ws[i] <= 0: no storage. */
void plan_lifetimes_add_workspaces(plan_lifetimes *lt, int n_nodes, const int64_t *ws);
/* Per node of g: the outcore_workspace attribute's bytes (*bytes) and offset
 * (*offset; -1 / 0 where none). Both arrays owned by the caller (oc_free). */
void plan_workspaces_of(const ir_graph *g, int64_t **offset, int64_t **bytes);

#endif
