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
 * Lifetimes: plan/lifetimes.h (the verifier and the runtime use the same).
 *
 * Workspaces: a node's kernel workspace (cuDNN's convolution algorithms; the
 * profile's workspace_bytes) is a region of the arena too, live at the node's
 * position only, placed with the tensors (so the arena holds everything the
 * step needs on the device). layout_apply records it as the node attribute
 * outcore_workspace = {offset, bytes}; the runtime hands that region to the
 * node's kernel, and the backend chooses an algorithm that fits in it.
 *
 * Placement: greedy in four orders (largest first; largest bytes x lifetime
 * first; longest-lived first; by breadth: the most loaded position's items
 * first), each tensor at the best-fitting gap (smallest
 * that holds it) among the tensors already placed whose lifetimes overlap,
 * else above them; and the replay best-fit of allocation order. The smallest
 * arena wins. Offsets are multiples of PLAN_ALIGN. fragmentation = arena_bytes / peak_bytes, where
 * peak_bytes is the most aligned bytes live at one position (>= 1.0). */
#ifndef OC_LAYOUT_H
#define OC_LAYOUT_H

#include "plan/lifetimes.h"

typedef struct layout_result {
    int64_t *offset;      /* per tensor (aliases carry their root's); -1: no arena storage */
    int64_t *ws_offset;   /* per node: its workspace region's offset; -1: none */
    int64_t *ws_bytes;    /* per node: workspace bytes asked (0: none) */
    int64_t arena_bytes;  /* max over tensors of offset + aligned bytes */
    int64_t peak_bytes;   /* most aligned bytes live at one position */
    double fragmentation; /* arena_bytes / peak_bytes */
    const char *method;   /* the heuristic that won (static string) */
} layout_result;

/* ws: per node of tg->g, its kernel workspace bytes (NULL: none). hold: per
 * tensor, a position until which its storage must stay (-1: none; NULL: no
 * holds): a SwapOut's copy still reading it while compute goes on
 * (layout_swap_out_holds). */
void layout_plan(const train_graph *tg, const int64_t *ws, const int *hold, layout_result *out);
/* Holds from a plan's predicted timeline (start/end per node of tg->g, -1 where
 * none): the tensor a SwapOut copies stays until the last compute node that
 * starts before the copy ends, so no kernel writes over bytes the copy still
 * reads (the runtime would wait for the copy there; the simulator frees them
 * when the copy ends). NULL when start is NULL. Caller frees (oc_free). */
int *layout_swap_out_holds(const train_graph *tg, const double *start, const double *end);
void layout_result_free(layout_result *l);

/* Adds outcore_offsets (INTS, one per output; -1 for omitted, host or aliased
 * outputs) to every node of tg->g, and outcore_workspace to each node with a
 * workspace, replacing existing ones. */
void layout_apply(train_graph *tg, const layout_result *l);

#endif
