/* pointwise.h — the scalar math of the pointwise ops, written once for every
 * backend and keyed by op kind (ir/ops/op_list.h):
 *
 *   X(KIND, expression)
 *     forward ops:  y  = expression of x
 *     gradient ops: dx = expression of dy and s, s being the tensor the
 *                   forward op's gradient rule saves (its output y or input x)
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
    X(SIGMOID, 1.0f / (1.0f + expf(-x)))

#define OC_POINTWISE_GRAD(X)                                                                       \
    X(RELU_GRAD, s > 0.0f ? dy : 0.0f) /* s = y */                                                 \
    X(SIGMOID_GRAD, dy *s *(1.0f - s)) /* s = y */

#endif
