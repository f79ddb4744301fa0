/* fuse_grad_sum.h — a gradient Sum folded into the ReluGrad reading it.
 * Where an activation Y is read twice (ResNet's residual block ends: Y =
 * Relu(BN(X) + R) feeds the next block's convolution and its residual Add),
 * its gradient is the Sum of two partials, and the backward of the node that
 * wrote Y starts with ReluGrad(Sum(a, b), Y). When that ReluGrad alone reads
 * the Sum, it becomes ReluGrad(a, Y, b): (a + b) where Y > 0, one pass over
 * the tensors instead of two (the Sum's write and ReluGrad's read of it go),
 * bitwise the same (a + b is rounded once either way). Y's gradient is then
 * never materialized: train_graph.grad_of of Y becomes -1.
 *
 *   int n;
 *   fuse_grad_sum(tg, &n);  // after the backward is built, before liveness
 */
#ifndef OC_FUSE_GRAD_SUM_H
#define OC_FUSE_GRAD_SUM_H

#include "train/train_graph.h"

/* Rewrites every match in tg's graph (node and tensor indices change: tg's
 * per-node and per-tensor arrays follow); *n_folded: how many. */
void fuse_grad_sum(train_graph *tg, int *n_folded);

#endif
