/* bag_loop.h — nn.EmbeddingBag's Loop recognized whole, not unrolled.
 *
 * Both of torch's exporters write nn.EmbeddingBag with offsets as a Loop over the bags.
 * Unrolled (op_loop.c) and matched bag by bag (bag_reduce.c), a loop costs a body per bag at
 * load and stops at 4096 bags; a recommender's batch is often more. bag_loop_lower reads
 * the body once, on symbolic values (the iteration number k; E[k + c], one of the bounds E
 * the body slices; the rows from E[k] to E[k + 1]; their reduction), for a bag in the middle
 * and for the last one, and when every iteration is provably the sum or the mean of rows
 * [E[k], E[k + 1]) of one run-time tensor, in the forms either exporter writes:
 *
 *   legacy:  ReduceSum|ReduceMean(Gather(table, Slice(ids, E[k], E[1:][k])), axes 0), a sum's
 *            rows times Unsqueeze(Slice(weights, E[k], E[1:][k]), 1) when weighted
 *   default: If(E[k] == E[k + 1]) zeros else the mode's branch: ReduceSum|ReduceMean(
 *            Slice(rows, E[k], E[k + 1]), axes 0), the last mean bag dividing by len - E[k]
 *            where that is above 0 (E = Concat(offsets, [len]) checked)
 *
 * the Loop becomes BagReduce(rows, E) (ir/ops/op_bags.c; legacy: rows = Gather(table, ids)),
 * its sequence or scan output that [n, D..] tensor, which ir_bag_reductions turns into one
 * scatter-add at the bags the host computes from E each step (max bags: one SegmentMax at
 * E, checked each step). Bounds known at load in equal
 * steps of L (an id input [n, L]) become the rows viewed [n, L, D..] reduced over the bag
 * axis, max bags too (torch.export slices its last max bag to the ids' count: E is checked to
 * end there). Anything else is left to the
 * unrolling, as before (and everything, with OC_UNROLL_BAG_LOOPS set: the two paths are
 * compared in make test). */
#ifndef OC_BAG_LOOP_H
#define OC_BAG_LOOP_H

#include "ir/ir.h"

/* Loop node `node` of g (its inputs inferred, none of it unrolled yet) rewritten as above,
 * true; false when it is not such a loop (g unchanged). */
bool bag_loop_lower(ir_graph *g, int node);

#endif
