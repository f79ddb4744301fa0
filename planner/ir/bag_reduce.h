/* bag_reduce.h — nn.EmbeddingBag's loop, once unrolled, as one reduction.
 *
 * Both of torch's exporters write EmbeddingBag as a Loop over the bags (ONNX has no such
 * op); op_loop.c unrolls it at load into a chain per bag, each reducing a slice of the
 * gathered rows, stacked by a Concat (of Concats past 64 bags). That costs a node chain per
 * bag, and in backward a gradient of the whole table (or of all gathered rows) per bag: a
 * step quadratic in the batch. Where the bags are the equal consecutive slices of fixed-size
 * bags (an id input [N, L]: its offsets implied), the Concat becomes
 *
 *   Reshape(rows, [N, L, D..]) -> ReduceSum | ReduceMean | ReduceMax over axis 1
 *
 * of the rows gathered once (the legacy exporter gathers per bag: one Gather of the table
 * at all the ids is added), and the per-bag chains and the host slices of the ids go. The
 * reductions are the same; the order of a bag's sum too.
 *
 * Sum and mean bags whose bounds are run-time values (the legacy export with offsets given:
 * bag i reads ids E[i] to E[i + 1], E = Concat(offsets, [L]), on the host) become
 *
 *   Gather(table, ids) -> GatherGrad at seg into [n + 2, D..] -> rows 1..n [-> Div by sizes]
 *
 * a scatter-add of each id's row into its bag, whose gradient is a Gather: seg (each id's bag
 * + 1; 0 before E[0], n + 1 from E[n] on) and the bags' sizes (at least 1: an empty bag's mean
 * is 0, as torch's) computed from E by nodes added to the host program, each step; a whole
 * loop's max bags (BagReduce mode 2) become SegmentMax(rows, E) (ir/ops/op_bags.c). Unrolled
 * bags of unequal plan-time sizes, weighted bags, run-time max bags and anything else stay
 * as unrolled. */
#ifndef OC_BAG_REDUCE_H
#define OC_BAG_REDUCE_H

#include "ir/ir.h"

/* Every such Concat of g (inferred, its host program built) rewritten. Fails naming the
 * node only where inferring the new nodes fails. */
int ir_bag_reductions(ir_graph *g, oc_err *err);

#endif
