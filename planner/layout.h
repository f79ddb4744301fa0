/* layout.h — the static memory layout of a rewritten plan (DESIGN §7): one
 * offset for every device tensor in one arena, from the tensors' lifetimes
 * over the plan's execution order.
 *
 *   layout_result l;
 *   layout_plan(rw.tg, &l);                   // never fails
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

typedef struct layout_lifetimes {
    int n;           /* tensors */
    int *root;       /* storage owner (alias_of followed) */
    int *first, *last; /* per root: live positions, inclusive; last < first: no storage */
    uint8_t *host;   /* per root: host tensor (SwapOut output) */
    int64_t *bytes;  /* per root: aligned bytes (0: no storage) */
} layout_lifetimes;

void layout_lifetimes_compute(const train_graph *tg, layout_lifetimes *lt);
void layout_lifetimes_free(layout_lifetimes *lt);
/* True when root tensor t needs arena storage. */
bool layout_lifetimes_device(const layout_lifetimes *lt, int t);

typedef struct layout_result {
    int64_t *offset;      /* per tensor (aliases carry their root's); -1: no arena storage */
    int64_t arena_bytes;  /* max over tensors of offset + aligned bytes */
    int64_t peak_bytes;   /* most aligned bytes live at one position */
    double fragmentation; /* arena_bytes / peak_bytes */
    bool by_size;         /* which heuristic won: greedy by size, else replay best-fit */
} layout_result;

void layout_plan(const train_graph *tg, layout_result *out);
void layout_result_free(layout_result *l);

/* Adds outcore_offsets (INTS, one per output; -1 for omitted, host or aliased
 * outputs) to every node of tg->g, replacing an existing one. */
void layout_apply(train_graph *tg, const layout_result *l);

#endif
