/* layout.h — the static memory layout of a rewritten plan (DESIGN §7): one
 * offset for every device tensor in one arena, from the tensors' lifetimes
 * over the plan's execution order.
 *
 *   layout_result l;
 *   layout_plan(rw.tg, ws, &l);               // ws: per node workspace bytes, or NULL; never fails
 *   printf("%lld bytes, fragmentation %.3f\n", (long long)l.arena_bytes, l.fragmentation);
 *   layout_apply(rw.tg, &l);                  // outcore_offsets attributes per node
 *   layout_result_free(&l);
 *
 * Lifetimes (layout_lifetimes; the verifier and the runtime use the same):
 * positions are node indices; a graph input is live from -1 (before node 0),
 * a node's output from its node; a tensor lives to its last reader, a graph
 * output to n_nodes (the end); initializers that some node touches live
 * throughout. In-place outputs (alias_of) share their root's storage, which
 * lives over every use of any alias. SwapOut outputs are host tensors (no
 * arena storage). Two tensors live at a common position never share a byte:
 * a node's inputs and outputs are distinct storage.
 *
 * Workspaces: a node's kernel workspace (cuDNN's convolution algorithms; the
 * profile's workspace_bytes) is a region of the arena too, live at the node's
 * position only, placed with the tensors (so the arena holds everything the
 * step needs on the device). layout_apply records it as the node attribute
 * outcore_workspace = {offset, bytes}; the runtime hands that region to the
 * node's kernel, and the backend chooses an algorithm that fits in it.
 *
 * Placement: greedy by size (largest first), each tensor at the best-fitting
 * gap (smallest that holds it) among the tensors already placed whose
 * lifetimes overlap, else above them; offsets are multiples of LAYOUT_ALIGN.
 * Also runs the replay best-fit of allocation order and keeps whichever gives
 * the smaller arena. fragmentation = arena_bytes / peak_bytes, where
 * peak_bytes is the most aligned bytes live at one position (>= 1.0). */
#ifndef OC_LAYOUT_H
#define OC_LAYOUT_H

#include "train_graph.h"

#define LAYOUT_ALIGN 256
#define LAYOUT_ATTR_OFFSETS "outcore_offsets"
#define LAYOUT_ATTR_WORKSPACE "outcore_workspace" /* INTS {offset, bytes} */

typedef struct layout_lifetimes {
    int n;           /* tensors; items n + i (i < n_ws) are node i's workspace */
    int n_ws;        /* nodes with a workspace item (0 until layout_lifetimes_add_workspaces) */
    int *root;       /* storage owner (alias_of followed) */
    int *first, *last; /* per root: live positions, inclusive; last < first: no storage */
    uint8_t *host;   /* per root: host tensor (SwapOut output) */
    int64_t *bytes;  /* per root: aligned bytes (0: no storage) */
} layout_lifetimes;

void layout_lifetimes_compute(const train_graph *tg, layout_lifetimes *lt);
void layout_lifetimes_free(layout_lifetimes *lt);
/* True when root tensor t (or workspace item n + i) needs arena storage. */
bool layout_lifetimes_device(const layout_lifetimes *lt, int t);
/* Adds item n + i for node i (i < n_nodes) with ws[i] bytes (aligned), live at
 * position i only; ws[i] <= 0: no storage. */
void layout_lifetimes_add_workspaces(layout_lifetimes *lt, int n_nodes, const int64_t *ws);
/* Per node of g: the outcore_workspace attribute's bytes (*bytes) and offset
 * (*offset; -1 / 0 where none). Both arrays owned by the caller (oc_free). */
void layout_workspaces_of(const ir_graph *g, int64_t **offset, int64_t **bytes);

typedef struct layout_result {
    int64_t *offset;      /* per tensor (aliases carry their root's); -1: no arena storage */
    int64_t *ws_offset;   /* per node: its workspace region's offset; -1: none */
    int64_t *ws_bytes;    /* per node: workspace bytes asked (0: none) */
    int64_t arena_bytes;  /* max over tensors of offset + aligned bytes */
    int64_t peak_bytes;   /* most aligned bytes live at one position */
    double fragmentation; /* arena_bytes / peak_bytes */
    bool by_size;         /* which heuristic won: greedy by size, else replay best-fit */
} layout_result;

/* ws: per node of tg->g, its kernel workspace bytes (NULL: none). */
void layout_plan(const train_graph *tg, const int64_t *ws, layout_result *out);
void layout_result_free(layout_result *l);

/* Adds outcore_offsets (INTS, one per output; -1 for omitted, host or aliased
 * outputs) to every node of tg->g, and outcore_workspace to each node with a
 * workspace, replacing existing ones. */
void layout_apply(train_graph *tg, const layout_result *l);

#endif
