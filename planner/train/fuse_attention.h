/* fuse_attention.h — attention as one node: finds the scaled dot-product
 * pattern the exporters write,
 *   MatMul(Q, Transpose(K) | Kᵀ) -> [Mul | Div by a scalar] ->
 *   [Where(cond, fill, .) | Where(cond, ., fill)] -> Softmax(last axis) ->
 *   [Dropout] -> MatMul(., V)
 * (with the head-split Transposes around it absorbed, seq_first, where Q, K, V
 * and Y are each one)
 * (every intermediate read once), and replaces it with FusedAttention
 * (ir/ops/op_attention.c): the [.., T, S] scores and probabilities are then
 * neither kept for backward nor written at all.
 *
 *   int n;
 *   if (fuse_attention(forward_graph, &n, &err)) ...  // shapes inferred, args decoded
 */
#ifndef OC_FUSE_ATTENTION_H
#define OC_FUSE_ATTENTION_H

#include "ir/ir.h"

/* Rewrites every match in g in place; *n_fused: how many. */
int fuse_attention(ir_graph *g, int *n_fused, oc_err *err);

#endif
