/* fuse_norm_act.h — a normalisation or convolution and the Relu after it as
 * one node: finds
 *   BatchNormalization -> Relu
 *   BatchNormalization -> Add(., R) | Add(R, .) -> Relu   (R of the same shape)
 * (every intermediate read once, no statistics output read) and replaces the
 * chain with BatchNormRelu (ir/ops/op_bn_relu.c), keeping the chain's names
 * in its attributes. Neither BN(X) nor BN(X) + R is then written; without a
 * residual the backward can be one node too (BatchNormReluGrad: one write of
 * dZ less, one more tensor live while it runs — plan --fuse auto weighs it).
 * And
 *   Conv -> Relu   (the Conv's output read by the Relu alone)
 * as ConvRelu (ir/ops/op_conv.c: cuDNN's convolution-bias-activation; VGG's
 * and AlexNet's layers), its backward the chain's.
 * On by default; --no-fuse keeps the chains.
 *
 *   int n;
 *   if (fuse_norm_act(forward_graph, &n, &err)) ...  // shapes inferred, args decoded
 */
#ifndef OC_FUSE_NORM_ACT_H
#define OC_FUSE_NORM_ACT_H

#include "ir/ir.h"

/* Rewrites every match in g in place; *n_fused: how many. */
/* backward: the fused nodes' gradient is BatchNormReluGrad where no residual
 * needs dZ (attribute fused_backward 1), else ReluGrad + BatchNormalizationGrad. */
int fuse_norm_act(ir_graph *g, bool backward, int *n_fused, oc_err *err);

#endif
