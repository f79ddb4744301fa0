/* grad_rules.h — the gradient rule of each forward op (ir/ops/grad_*.c),
 * referenced from the op's table entry. */
#ifndef OC_GRAD_RULES_H
#define OC_GRAD_RULES_H

#include "ir/ops/grad_api.h"

int op_grad_conv(grad_ctx *c);
int op_grad_conv_transpose(grad_ctx *c);
int op_grad_conv_relu(grad_ctx *c);
int op_grad_batch_norm(grad_ctx *c);
/* A pointwise op whose gradient is grad_op(dY, Y): emits it, reading the saved Y. */
int op_grad_pointwise_of_y(grad_ctx *c, op_kind grad_op);
/* The same for one whose gradient reads its input X: grad_op(dY, X), the
 * forward node's attributes copied (HardSigmoid's alpha, beta). */
int op_grad_pointwise_of_x(grad_ctx *c, op_kind grad_op);
int op_grad_relu(grad_ctx *c);
int op_grad_clip(grad_ctx *c);
int op_grad_dropout(grad_ctx *c);
int op_grad_add(grad_ctx *c);
int op_grad_max_pool(grad_ctx *c);
int op_grad_average_pool(grad_ctx *c);
int op_grad_global_average_pool(grad_ctx *c);
int op_grad_gemm(grad_ctx *c);
int op_grad_concat(grad_ctx *c);
int op_grad_reshape(grad_ctx *c); /* Flatten and Reshape */
int op_grad_pad(grad_ctx *c);
int op_grad_softmax_cross_entropy(grad_ctx *c);
/* The partial gradient of forward input i from src (dY's shape): src itself
 * (scale 1, same shape) or ReduceSumTo(src) to input i's shape, times scale
 * (broadcast ops: op_binary.c, op_where.c). */
int op_grad_sum_to_input(grad_ctx *c, int i, int src, const char *suffix, float scale);

/* Conv FLOPs from the input side x (N, C, ..) and output side y (N, M, ..). */
double op_conv_flops(const ir_tensor *x, const ir_tensor *y, const ir_node *n);

#endif
