/* rewrite.h — a strategy's decisions (sim_plan) turned into the graph that
 * runs them (DESIGN §7): the training step with explicit SwapOut / SwapIn
 * copies and recompute clones, in the simulator's execution order.
 *
 *   sim_timeline *tl = sim_timeline_new();
 *   sim_run(ctx, plan, &so, &r, tl, &err);                 // optional: predicted times
 *   rewrite_result rw;
 *   if (rewrite_plan(tg, plan, tl, &rw, &err)) ...        // rw.tg: the rewritten step
 *   ... layout_plan(rw.tg, ...), plan_verify(...), plan_file_write(...) ...
 *   rewrite_result_free(&rw);
 *
 * The rewritten graph (rw.tg->g, owned by rw.tg):
 *  - every tensor of tg->g keeps its index and name; new tensors follow;
 *  - nodes in execution order = the simulator's compute sequence (schedule
 *    order, recompute clones inserted right before the first backward reader
 *    that needs them, sim_plan.h), with SwapOut(X) right after X's producer
 *    (graph inputs: before node 0) and SwapIn(X) right before the op at which
 *    the plan issues it (default: X's first backward reader, recompute clones
 *    included), several at one point ordered by first need; with a timeline,
 *    a SwapIn the simulator started later than its issue point (it waits
 *    until its bytes fit) moves to where it started, so the layout's
 *    lifetimes follow the simulated memory;
 *  - SwapOut "X/swap_out": X -> "X/host" (host); SwapIn "X/swap_in": "X/host" ->
 *    "X/swapin" (device); both OC_DOMAIN (planner/ops/op_swap.c);
 *  - a recompute is a clone of the forward node named "<node>/recompute<k>",
 *    same op, domain and attributes, inputs rewired, every output renamed
 *    "<tensor>/rc<k>", plus attribute outcore_recompute_of = the original node's
 *    name (the cpu Dropout kernel keys its RNG by it, so the mask is the same
 *    bits). In-place outputs (BatchNormalization running statistics) are
 *    dropped, so a clone never updates state; an opset <= 13 BatchNormalization
 *    with only running-stat outputs gets saved_mean / saved_var outputs instead,
 *    which keeps it in training mode;
 *  - every node reads, in backward (the loss node on), the swapped-in or
 *    recomputed name of a swapped / recomputed tensor: every dependency is a
 *    data edge. Forward readers keep the originals;
 *  - every node carries outcore_stream = "compute" | "d2h" | "h2d".
 * rw.tg is a train_graph (phases, alias_of, loss, labels, optimizer settings)
 * with an empty saved list.
 * Errors: OC_ERR (naming the tensor) on a plan the simulator would reject. */
#ifndef OC_REWRITE_H
#define OC_REWRITE_H

#include "plan/plan_file.h"
#include "sim/simulator.h"

typedef struct rewrite_result {
    train_graph *tg;     /* the rewritten step, owned */
    int *src_node;       /* per new node: the tg node it runs or clones; -1 for copies */
    double *start, *end; /* per new node: predicted times from tl (-1 without tl) */
    int n_swap_out, n_swap_in, n_recompute;
} rewrite_result;

/* tl: NULL, or the timeline of sim_run(ctx of tg, p) (events mapped onto the new
 * nodes: start/end). */
int rewrite_plan(const train_graph *tg, const sim_plan *p, const sim_timeline *tl,
                 rewrite_result *out, oc_err *err);
void rewrite_result_free(rewrite_result *r);

/* Stream of a node of a rewritten graph (from outcore_stream; copies by op). */
typedef enum rewrite_stream {
    REWRITE_STREAM_COMPUTE = 0,
    REWRITE_STREAM_D2H,
    REWRITE_STREAM_H2D,
} rewrite_stream;
rewrite_stream rewrite_node_stream(const ir_node *n);
const char *rewrite_stream_name(rewrite_stream s);

#endif
