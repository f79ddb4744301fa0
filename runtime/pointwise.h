/* pointwise.h — the scalar math of the pointwise ops, written once for every
 * backend and keyed by op kind (ir/ops/op_list.h):
 *
 *   X(KIND, expression)
 *     forward ops:  y  = expression of x
 *     gradient ops: dx = expression of dy and s, s being the tensor the
 *                   forward op's gradient rule saves (its output y or input x)
 *   p0, p1: the op's parameters (op_pointwise_args: HardSigmoid's alpha and
 *   beta, copied onto its gradient node); 0 for ops without.
 *
 * Ops whose op-list kern is `pointwise` / `pointwise_grad` run through it:
 * cpu_pointwise* (runtime/cpu/cpu_elementwise.c) loop over it, one loop per
 * op; cu_pointwise* (runtime/cuda/cuda_ops.cu) instantiate a grid-stride
 * kernel per op (16-byte accesses where aligned). A new pointwise op is its
 * op-list rows, its op definition (ir/ops/op_elementwise.c) and a row here:
 * docs/adding-an-op.md. Float tensors; expressions use <math.h>. Pure
 * preprocessor: C and CUDA C++ include it alike. */
#ifndef OC_POINTWISE_H
#define OC_POINTWISE_H

#include "ir/ops/op_list.h"

#define OC_POINTWISE_FORWARD(X)                                                                    \
    X(RELU, x > 0.0f || isnan(x) ? x : 0.0f) /* NaN propagates */                                  \
    X(SIGMOID, 1.0f / (1.0f + expf(-x)))                                                           \
    X(TANH, tanhf(x))                                                                              \
    X(HARD_SIGMOID, fmaxf(0.0f, fminf(1.0f, p0 *x + p1))) /* NaN -> 0 as fmaxf does */             \
    X(HARD_SWISH, x *fmaxf(0.0f, fminf(1.0f, x *(1.0f / 6.0f) + 0.5f)))

#define OC_POINTWISE_GRAD(X)                                                                       \
    X(RELU_GRAD, s > 0.0f ? dy : 0.0f)                                               /* s = y */   \
    X(SIGMOID_GRAD, dy *s *(1.0f - s))                                               /* s = y */   \
    X(TANH_GRAD, dy *(1.0f - s * s))                                                 /* s = y */   \
    X(HARD_SIGMOID_GRAD, (p0 * s + p1 > 0.0f && p0 * s + p1 < 1.0f) ? dy *p0 : 0.0f) /* s = x */   \
    /* s = x; PyTorch's hardswish_backward: 0 below -3, dy above 3, else dy * (2x + 3) / 6 */      \
    X(HARD_SWISH_GRAD, s < -3.0f ? 0.0f : s <= 3.0f ? dy * (s * (1.0f / 3.0f) + 0.5f) : dy)

#endif
