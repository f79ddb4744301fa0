/* fuse_linear.h — the exporters' Linear layer as one node: finds
 *   MatMul(X, Transpose(W, perm 1 0)) [-> Add(., B) | Add(B, .)]
 *   MatMul(X, W) -> Add(., B) | Add(B, .)
 * with W a 2-d initializer (a parameter or a frozen matrix), B a vector
 * initializer of the output's last dim, and every intermediate read by the
 * next member alone, and replaces the chain with Linear(X, W [, B])
 * (ir/ops/op_linear.c; trans_w 1 for the first form): no transposed copy of W
 * written each step and kept for the backward (its gradient no Transpose
 * back), no pass adding the bias. GPT-2 small, BERT-base and ViT-B/16: 48-50
 * each. On by default; --no-fuse keeps the chains.
 *
 *   int n;
 *   if (fuse_linear(forward_graph, &n, &err)) ...  // shapes inferred, args decoded
 */
#ifndef OC_FUSE_LINEAR_H
#define OC_FUSE_LINEAR_H

#include "ir/ir.h"

/* Rewrites every match in g in place; *n_fused: how many. */
int fuse_linear(ir_graph *g, int *n_fused, oc_err *err);

#endif
