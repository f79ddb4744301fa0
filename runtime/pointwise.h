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
 * op; cu_pointwise* (runtime/cuda/cuda_pointwise.cu) instantiate a grid-stride
 * kernel per op (16-byte accesses where aligned). A new pointwise op is its
 * op-list rows, its op definition (ir/ops/op_elementwise.c) and a row here:
 * docs/adding-an-op.md. Float tensors; expressions use <math.h>. Pure
 * preprocessor: C and CUDA C++ include it alike. */
#ifndef OC_POINTWISE_H
#define OC_POINTWISE_H

#include <math.h>

#include "ir/ops/op_list.h"

/* Relu and its gradient from y, shared with the fused BatchNormRelu kernels
 * (which must equal the unfused chain bitwise). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_relu(float x) {
    return x > 0.0f || isnan(x) ? x : 0.0f; /* NaN propagates */
}
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_relu_grad(float dy, float y) {
    return y > 0.0f ? dy : 0.0f;
}

/* d/dx Gelu(x): the erf form Phi(x) + x phi(x); the tanh form (tanh_form 1). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_gelu_grad(float x, float tanh_form) {
    if (tanh_form == 0.0f)
        return 0.5f * (1.0f + erff(x * 0.70710678f)) + x * 0.39894228f * expf(-0.5f * x * x);
    float u = 0.79788456f * (x + 0.044715f * x * x * x), t = tanhf(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.79788456f * (1.0f + 0.134145f * x * x);
}

/* Softplus as PyTorch computes it (beta 1, threshold 20): x above 20, else log(1 + e^x). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_softplus(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

/* d/dx Mish(x) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = log(1 + e^x): PyTorch's
 * mish_backward. */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_mish_grad(float x) {
    float t = tanhf(log1pf(expf(x))), sig = 1.0f / (1.0f + expf(-x));
    return t + x * sig * (1.0f - t * t);
}

/* MinMaxGrad: the gradient of Max's / Min's input `input` (0: a, 1: b) at one element:
 * dY where it won, half where they tie, both where a NaN is involved (torch.maximum's
 * rule: where(a == b, dY / 2, dY) with 0 where it lost). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_min_max_grad(float dy, float a, float b, int max, int input) {
    float mine = input ? b : a, other = input ? a : b;
    if (mine == other) return 0.5f * dy;
    return (max ? mine < other : mine > other) ? 0.0f : dy;
}

/* PReluGrad at one element: dX (input 0) = x > 0 ? dY : slope dY; the slope's term
 * (input 1) = x > 0 ? 0 : x dY (PyTorch's prelu backward). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_prelu_grad(float dy, float x, float slope, int input) {
    if (input) return x > 0.0f ? 0.0f : x * dy;
    return x > 0.0f ? dy : slope * dy;
}

/* PowTensorGrad at one element (PyTorch's pow backward, in double, rounded once): dA (input 0)
 * = dY b a^(b-1), 0 where b == 0; dB (input 1) = dY a^b ln a, 0 where a == 0 and b >= 0. */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline float
    oc_pow_grad(float dy, float a, float b, int input) {
    if (input == 0) return b == 0.0f ? 0.0f : (float)((double)dy * b * pow(a, (double)b - 1.0));
    if (a == 0.0f && b >= 0.0f) return 0.0f;
    return (float)((double)dy * pow(a, (double)b) * log((double)a));
}

/* Integer Div and Mod of run-time index glue (torch.div(rounding_mode="floor"), bucketize's
 * search), kind: 0 A / B truncated (ONNX's Div of integers), 1 A % B truncated (Mod fmod 1,
 * C's), 2 A % B floored (Mod fmod 0, Python's: the sign of B). B == 0 gives 0 and B == -1
 * wraps as two's complement: no input traps. */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline long long
    oc_int_div_mod(long long a, long long b, int kind) {
    if (b == 0) return 0;
    if (b == -1) return kind == 0 ? (long long)(0ull - (unsigned long long)a) : 0;
    if (kind == 0) return a / b;
    long long r = a % b;
    return kind == 2 && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* A float32 as an integer by a run-time Cast (x.long(), (x * n).long() binning): truncated
 * toward zero as C and PyTorch do; NaN gives 0 and values past int64's range saturate (no
 * undefined conversion). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline long long
    oc_float_to_int(float v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0f) return 9223372036854775807LL;
    if (v <= -9223372036854775808.0f) return -9223372036854775807LL - 1;
    return (long long)v;
}

#define OC_POINTWISE_FORWARD(X)                                                                    \
    X(RELU, oc_relu(x))                                                                            \
    X(SIGMOID, 1.0f / (1.0f + expf(-x)))                                                           \
    X(TANH, tanhf(x))                                                                              \
    X(HARD_SIGMOID, fmaxf(0.0f, fminf(1.0f, p0 *x + p1))) /* NaN -> 0 as fmaxf does */             \
    X(HARD_SWISH, x *fmaxf(0.0f, fminf(1.0f, x *(1.0f / 6.0f) + 0.5f)))                            \
    X(ERF, erff(x))                                                                                \
    X(SQRT, sqrtf(x))                                                                              \
    X(POW, powf(x, p0)) /* p0: the constant exponent */                                            \
    /* p0 = 0: the erf form; p0 = 1: the tanh approximation */                                     \
    X(GELU, p0 == 0.0f ? 0.5f * x * (1.0f + erff(x * 0.70710678f))                                 \
                       : 0.5f * x * (1.0f + tanhf(0.79788456f * (x + 0.044715f * x * x * x))))     \
    X(NEG, -x)                                                                                     \
    X(EXP, expf(x))                                                                                \
    X(LOG, logf(x))                                                                                \
    X(ABS, fabsf(x))                                                                               \
    X(RECIPROCAL, 1.0f / x)                                                                        \
    X(LEAKY_RELU, x < 0.0f ? p0 * x : x)             /* p0: alpha */                               \
    X(ELU, x > 0.0f ? x : p0 * expm1f(x))            /* p0: alpha */                               \
    X(SELU, x > 0.0f ? p1 * x : p1 * p0 * expm1f(x)) /* p0: alpha, p1: gamma */                    \
    X(SOFTPLUS, oc_softplus(x))                                                                    \
    X(MISH, x *tanhf(log1pf(expf(x))))                                                             \
    X(SIN, sinf(x))                                                                                \
    X(COS, cosf(x))                                                                                \
    X(TAN, tanf(x))                                                                                \
    X(ASIN, asinf(x))                                                                              \
    X(ACOS, acosf(x))                                                                              \
    X(ATAN, atanf(x))                                                                              \
    X(SINH, sinhf(x))                                                                              \
    X(COSH, coshf(x))                                                                              \
    X(ASINH, asinhf(x))                                                                            \
    X(ACOSH, acoshf(x))                                                                            \
    X(ATANH, atanhf(x))                                                                            \
    X(SIGN, x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x) /* 0 keeps its sign; NaN stays (ONNX's) */     \
    X(FLOOR, floorf(x))                                                                            \
    X(CEIL, ceilf(x))                                                                              \
    X(ROUND, rintf(x)) /* half to even (the default rounding mode) */                              \
    X(SOFTSIGN, x / (1.0f + fabsf(x)))                                                             \
    X(THRESHOLDED_RELU, x > p0 ? x : 0.0f) /* p0: alpha */                                         \
    /* p0: lambd, p1: bias (hardshrink: bias 0; softshrink: bias = lambd) */                       \
    X(SHRINK, x<-p0 ? x + p1 : x> p0 ? x - p1 : 0.0f)

#define OC_POINTWISE_GRAD(X)                                                                       \
    X(RELU_GRAD, oc_relu_grad(dy, s))                                                /* s = y */   \
    X(SIGMOID_GRAD, dy *s *(1.0f - s))                                               /* s = y */   \
    X(TANH_GRAD, dy *(1.0f - s * s))                                                 /* s = y */   \
    X(HARD_SIGMOID_GRAD, (p0 * s + p1 > 0.0f && p0 * s + p1 < 1.0f) ? dy *p0 : 0.0f) /* s = x */   \
    /* s = x; PyTorch's hardswish_backward: 0 below -3, dy above 3, else dy * (2x + 3) / 6 */      \
    X(HARD_SWISH_GRAD, s < -3.0f ? 0.0f : s <= 3.0f ? dy * (s * (1.0f / 3.0f) + 0.5f) : dy)        \
    X(ERF_GRAD, dy * 1.12837917f * expf(-s * s))       /* s = x */                                 \
    X(SQRT_GRAD, dy * 0.5f / s)                        /* s = y */                                 \
    X(POW_GRAD, dy *p0 *powf(s, p0 - 1.0f))            /* s = x */                                 \
    X(GELU_GRAD, dy *oc_gelu_grad(s, p0))              /* s = x */                                 \
    X(EXP_GRAD, dy *s)                                 /* s = y */                                 \
    X(LOG_GRAD, dy / s)                                /* s = x */                                 \
    X(ABS_GRAD, s > 0.0f ? dy : s < 0.0f ? -dy : 0.0f) /* s = x */                                 \
    X(RECIPROCAL_GRAD, -dy *(s * s))                   /* s = y */                                 \
    X(LEAKY_RELU_GRAD, s > 0.0f ? dy : dy * p0)        /* s = x */                                 \
    /* s = x; PyTorch's elu_backward from the input (Selu: scale gamma) */                         \
    X(ELU_GRAD, s <= 0.0f ? dy * p0 * expf(s) : dy)                                                \
    X(SELU_GRAD, s <= 0.0f ? dy * p1 * p0 * expf(s) : dy * p1)                                     \
    X(SOFTPLUS_GRAD, s > 20.0f ? dy : dy * (expf(s) / (expf(s) + 1.0f))) /* s = x */               \
    X(MISH_GRAD, dy *oc_mish_grad(s))                                    /* s = x */               \
    X(SIN_GRAD, dy *cosf(s))                                             /* s = x */               \
    X(COS_GRAD, -dy *sinf(s))                                            /* s = x */               \
    /* PyTorch's derivatives.yaml: Tan from y, the rest from x */                                  \
    X(TAN_GRAD, dy *(1.0f + s * s))                                /* s = y */                     \
    X(ASIN_GRAD, dy *(1.0f / sqrtf(1.0f - s * s)))                 /* s = x */                     \
    X(ACOS_GRAD, -dy *(1.0f / sqrtf(1.0f - s * s)))                /* s = x */                     \
    X(ATAN_GRAD, dy / (s * s + 1.0f))                              /* s = x */                     \
    X(SINH_GRAD, dy *coshf(s))                                     /* s = x */                     \
    X(COSH_GRAD, dy *sinhf(s))                                     /* s = x */                     \
    X(ASINH_GRAD, dy *(1.0f / sqrtf(s * s + 1.0f)))                /* s = x */                     \
    X(ACOSH_GRAD, dy *(1.0f / sqrtf(s * s - 1.0f)))                /* s = x */                     \
    X(ATANH_GRAD, dy *(1.0f / (1.0f - s * s)))                     /* s = x */                     \
    X(SOFTSIGN_GRAD, dy / ((1.0f + fabsf(s)) * (1.0f + fabsf(s)))) /* s = x */                     \
    X(THRESHOLDED_RELU_GRAD, s > p0 ? dy : 0.0f)                   /* s = x */                     \
    X(SHRINK_GRAD, s<-p0 || s> p0 ? dy : 0.0f) /* s = x; PyTorch's hardshrink_backward */

#endif
