// cuda_binary.cu — Add / Sum / Sub / Mul / Div / Min / Max with broadcast, their
// gradients, BroadcastTo, Clip, comparisons and Where (float32, half, index types).
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

// ---- Add / Sum with broadcast (cpu_add, cpu_sum) ----
/* out (op)= in: CU_BC_ASSIGN, ADD, SUB, MUL, DIV (cuda_launch.h). */
template <typename T> __device__ static inline T bc_apply(int op, T d, T s) {
    if constexpr (std::is_integral<T>::value) /* index glue: no input traps */
        if (op == CU_BC_DIV || op == CU_BC_FMOD || op == CU_BC_IMOD)
            return (T)oc_int_div_mod(d, s, op == CU_BC_DIV ? 0 : op == CU_BC_FMOD ? 1 : 2);
    switch (op) {
    case CU_BC_ASSIGN: return s;
    case CU_BC_ADD: return (T)(d + s);
    case CU_BC_SUB: return (T)(d - s);
    case CU_BC_MUL: return (T)(d * s);
    case CU_BC_DIV: return (T)(d / s);
    case CU_BC_MAX: return s != s || s > d ? s : d;
    case CU_BC_MIN: return s != s || s < d ? s : d;
    case CU_BC_FMOD: return (T)fmod((double)d, (double)s);
    case CU_BC_POW: return (T)pow((double)d, (double)s);
    default: return (double)d < 0.0 ? (T)(d * s) : d; /* PRelu: d the input, s the slope */
    }
}

template <typename T> __global__ void k_bcast(const T *in, cu_bidx bi, T *out, int64_t n, int op) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        out[i] = bc_apply<T>(op, out[i], in[o[0]]);
    }
}

// y = a (op) b, both broadcast, one pass (float, double; int64, int32 for Sub, Mul)
template <typename T>
__global__ void k_binary(const T *a, const T *b, cu_bidx bi, T *y, int64_t n, int op) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        y[i] = bc_apply<T>(op, a[o[0]], b[o[1]]);
    }
}

// k_binary four elements a thread (bidx_v4)
__global__ void k_binary4(const float *a, const float *b, cu_bidx bi, float *y, int64_t n4,
                          int op) {
    bool ua = bi.st[0][bi.rank - 1] == 1, ub = bi.st[1][bi.rank - 1] == 1;
    GRID_LOOP(q, n4) {
        int64_t o[2];
        bidx_at<2>(bi, q * 4, o);
        f4 x = ld4(a, o[0], ua), z = ld4(b, o[1], ub), r;
        for (int e = 0; e < 4; e++) r.v[e] = bc_apply<float>(op, x.v[e], z.v[e]);
        ((f4 *)y)[q] = r;
    }
}

// MinMaxGrad / PReluGrad / PowTensorGrad: dy of y's shape, a and b broadcast to it
__global__ void k_binary_grad(const float *dy, const float *a, const float *b, cu_bidx bi,
                              float *dx, int64_t n, int kind, int max, int input) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        dx[i] = kind == CU_BG_PRELU ? oc_prelu_grad(dy[i], a[o[0]], b[o[1]], input)
                : kind == CU_BG_POW ? oc_pow_grad(dy[i], a[o[0]], b[o[1]], input)
                                    : oc_min_max_grad(dy[i], a[o[0]], b[o[1]], max, input);
    }
}

/* No broadcast: plain indices (no per-element div/mod over the dims). */
template <typename T> __global__ void k_acc_same(const T *in, T *out, int64_t n, int op) {
    GRID_LOOP(i, n) out[i] = bc_apply<T>(op, out[i], in[i]);
}

template <typename T> __global__ void k_add2(const T *a, const T *b, T *out, int64_t n) {
    GRID_LOOP(i, n) out[i] = (T)(a[i] + b[i]);
}

__global__ void k_add2_f4(const f4 *a, const f4 *b, f4 *out, int64_t n4) {
    GRID_LOOP(i, n4) {
        f4 x = a[i], y = b[i], r;
        for (int k = 0; k < 4; k++) r.v[k] = x.v[k] + y.v[k];
        out[i] = r;
    }
}

// Half data, V elements a thread (vec_of).
template <int V, typename T> __global__ void k_add2_h(const T *a, const T *b, T *out, int64_t n) {
    GRID_LOOP(i, n / V) {
        float x[V], y[V];
        ldv<T, V>(a, i * V, x);
        ldv<T, V>(b, i * V, y);
        for (int k = 0; k < V; k++) x[k] = x[k] + y[k];
        stv<T, V>(out, i * V, x);
    }
}

template <typename T>
static void add2_h(cudaStream_t s, const void *a, const void *b, void *out, int64_t n) {
    if (vec_of(n, sizeof(T), a, b, out, NULL) == 4)
        k_add2_h<4, T>
            <<<blocks_for(n / 4), THREADS, 0, s>>>((const T *)a, (const T *)b, (T *)out, n);
    else k_add2_h<1, T><<<blocks_for(n), THREADS, 0, s>>>((const T *)a, (const T *)b, (T *)out, n);
}

extern "C" int cu_add2_half(void *stream, int kind, const void *a, const void *b, void *out,
                            int64_t n) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (kind == 2) add2_h<oc_bf16>(s, a, b, out, n);
    else add2_h<oc_f16>(s, a, b, out, n);
    return last_error();
}

extern "C" int cu_add2(void *stream, cu_dtype dt, const void *a, const void *b, void *out,
                       int64_t n) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (dt == CU_DT_F32 && vec4_ok(n, a, b, out)) {
        k_add2_f4<<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)a, (const f4 *)b, (f4 *)out,
                                                        n / 4);
        return last_error();
    }
    unsigned bl = blocks_for(n);
#define ADD2(T) k_add2<T><<<bl, THREADS, 0, s>>>((const T *)a, (const T *)b, (T *)out, n);
    DT_SWITCH(dt, ADD2)
#undef ADD2
    return last_error();
}

extern "C" int cu_bcast_apply(void *stream, cu_dtype dt, const void *in, cu_shape is, void *out,
                              cu_shape os, int op) {
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = numel(os);
    if (n == 0) return 0;
    unsigned b = blocks_for(n);
    if (same_shape(is, os)) {
#define ACC(T) k_acc_same<T><<<b, THREADS, 0, s>>>((const T *)in, (T *)out, n, op);
        DT_SWITCH(dt, ACC)
#undef ACC
        return last_error();
    }
    cu_bidx bi = bidx_of(os, &is, 1);
    switch (dt) {
    case CU_DT_F32:
        k_bcast<<<b, THREADS, 0, s>>>((const float *)in, bi, (float *)out, n, op);
        break;
    case CU_DT_F64:
        k_bcast<<<b, THREADS, 0, s>>>((const double *)in, bi, (double *)out, n, op);
        break;
    case CU_DT_I64:
        k_bcast<<<b, THREADS, 0, s>>>((const int64_t *)in, bi, (int64_t *)out, n, op);
        break;
    case CU_DT_I32:
        k_bcast<<<b, THREADS, 0, s>>>((const int32_t *)in, bi, (int32_t *)out, n, op);
        break;
    case CU_DT_I8:
        k_bcast<<<b, THREADS, 0, s>>>((const int8_t *)in, bi, (int8_t *)out, n, op);
        break;
    case CU_DT_U8:
        k_bcast<<<b, THREADS, 0, s>>>((const uint8_t *)in, bi, (uint8_t *)out, n, op);
        break;
    }
    return last_error();
}

extern "C" int cu_bcast_accumulate(void *stream, cu_dtype dt, const void *in, cu_shape is,
                                   void *out, cu_shape os, int first) {
    return cu_bcast_apply(stream, dt, in, is, out, os, first ? CU_BC_ASSIGN : CU_BC_ADD);
}

extern "C" int cu_binary_grad(void *stream, const float *dy, cu_shape ys, const float *a,
                              cu_shape as, const float *b, cu_shape bs, float *dx, int kind,
                              int max, int input) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    k_binary_grad<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(dy, a, b, bi, dx, n, kind,
                                                                       max, input);
    return last_error();
}

extern "C" int cu_binary(void *stream, cu_dtype dt, const void *a, cu_shape as, const void *b,
                         cu_shape bs, void *y, cu_shape ys, int op) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    cudaStream_t s = (cudaStream_t)stream;
    const void *ptrs[2] = {a, b};
    const int es[2] = {4, 4};
    if (dt == CU_DT_F32 && bidx_v4_ok(&bi, 2, ptrs, es, y, 4)) {
        k_binary4<<<blocks_for(n / 4), THREADS, 0, s>>>((const float *)a, (const float *)b, bi,
                                                        (float *)y, n / 4, op);
        return last_error();
    }
    if (dt == CU_DT_F32)
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const float *)a, (const float *)b, bi,
                                                   (float *)y, n, op);
    else if (dt == CU_DT_F64)
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const double *)a, (const double *)b, bi,
                                                   (double *)y, n, op);
    else if (dt == CU_DT_I64) /* index arithmetic: Sub, Mul (cuda_binary) */
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const int64_t *)a, (const int64_t *)b, bi,
                                                   (int64_t *)y, n, op);
    else if (dt == CU_DT_I32)
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const int32_t *)a, (const int32_t *)b, bi,
                                                   (int32_t *)y, n, op);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

// ---- BroadcastTo (cpu_broadcast_to): dx = scale * dy broadcast; ks is dy's
// shape in dx's rank. ----
__global__ void k_broadcast_to(const float *dy, cu_bidx bi, float *dx, int64_t n, float scale) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        dx[i] = dy[o[0]] * scale;
    }
}

extern "C" int cu_broadcast_to(void *stream, const float *dy, cu_shape ks, float *dx, cu_shape xs,
                               float scale) {
    int64_t n = numel(xs);
    if (n == 0) return 0;
    cu_bidx bi = bidx_of(xs, &ks, 1);
    k_broadcast_to<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(dy, bi, dx, n, scale);
    return last_error();
}

// ---- Clip / ClipGrad / ReluGrad (cpu_elementwise.c) ----
__device__ static double load_scalar(const void *p, cu_dtype dt) {
    switch (dt) {
    case CU_DT_F32: return *(const float *)p;
    case CU_DT_F64: return *(const double *)p;
    case CU_DT_I64: return (double)*(const int64_t *)p;
    case CU_DT_I32: return *(const int32_t *)p;
    case CU_DT_I8: return *(const int8_t *)p;
    case CU_DT_U8: return *(const uint8_t *)p;
    }
    return 0;
}

template <typename T>
__global__ void k_clip(const T *x, T *y, int64_t n, const void *lo_p, const void *hi_p, cu_dtype dt,
                       int has_lo_a, double lo_a, int has_hi_a, double hi_a) {
    bool has_lo = has_lo_a || lo_p, has_hi = has_hi_a || hi_p;
    double lo = has_lo_a ? lo_a : lo_p ? load_scalar(lo_p, dt) : 0.0;
    double hi = has_hi_a ? hi_a : hi_p ? load_scalar(hi_p, dt) : 0.0;
    GRID_LOOP(i, n) {
        T v = x[i];
        if (has_lo && (double)v < lo) v = (T)lo;
        if (has_hi && (double)v > hi) v = (T)hi;
        y[i] = v;
    }
}

extern "C" int cu_clip(void *stream, cu_dtype dt, const void *x, void *y, int64_t n,
                       const void *lo_p, const void *hi_p, int has_lo_a, double lo_a, int has_hi_a,
                       double hi_a) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
#define CLIP_CASE(E, T)                                                                            \
    case E:                                                                                        \
        k_clip<T><<<b, THREADS, 0, s>>>((const T *)x, (T *)y, n, lo_p, hi_p, dt, has_lo_a, lo_a,   \
                                        has_hi_a, hi_a);                                           \
        break;
    switch (dt) {
        CLIP_CASE(CU_DT_F32, float)
        CLIP_CASE(CU_DT_F64, double)
        CLIP_CASE(CU_DT_I64, int64_t)
        CLIP_CASE(CU_DT_I32, int32_t)
        CLIP_CASE(CU_DT_I8, int8_t)
        CLIP_CASE(CU_DT_U8, uint8_t)
    }
#undef CLIP_CASE
    return last_error();
}

__global__ void k_clip_grad(const float *dy, const float *x, float *dx, int64_t n, const void *lo_p,
                            cu_dtype lo_dt, const void *hi_p, cu_dtype hi_dt, int has_lo_a,
                            double lo_a, int has_hi_a, double hi_a) {
    bool has_lo = has_lo_a || lo_p, has_hi = has_hi_a || hi_p;
    double lo = has_lo_a ? lo_a : lo_p ? load_scalar(lo_p, lo_dt) : 0.0;
    double hi = has_hi_a ? hi_a : hi_p ? load_scalar(hi_p, hi_dt) : 0.0;
    GRID_LOOP(i, n) {
        bool pass = (!has_lo || (double)x[i] > lo) && (!has_hi || (double)x[i] < hi);
        dx[i] = pass ? dy[i] : 0.0f;
    }
}

extern "C" int cu_clip_grad(void *stream, const float *dy, const float *x, float *dx, int64_t n,
                            const void *lo_p, cu_dtype lo_dt, const void *hi_p, cu_dtype hi_dt,
                            int has_lo_a, double lo_a, int has_hi_a, double hi_a) {
    if (n == 0) return 0;
    k_clip_grad<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(
        dy, x, dx, n, lo_p, lo_dt, hi_p, hi_dt, has_lo_a, lo_a, has_hi_a, hi_a);
    return last_error();
}

// Add / Sub / Mul / Div of two broadcast operands into a half y, one pass: each operand of
// y's type or float32 (a plan-time scalar), the value computed in float32, rounded once.
template <typename TA, typename TB, typename TO>
__global__ void k_binary_h(const TA *a, const TB *b, cu_bidx bi, TO *y, int64_t n, int op) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        st(y, i, bc_apply<float>(op, ld(a, o[0]), ld(b, o[1])));
    }
}

template <typename TO>
static void binary_launch(cudaStream_t s, int ka, const void *a, int kb, const void *b, cu_bidx bi,
                          void *y, int64_t n, int op) {
    unsigned g = blocks_for(n);
    if (ka && kb)
        k_binary_h<<<g, THREADS, 0, s>>>((const TO *)a, (const TO *)b, bi, (TO *)y, n, op);
    else if (ka)
        k_binary_h<<<g, THREADS, 0, s>>>((const TO *)a, (const float *)b, bi, (TO *)y, n, op);
    else if (kb)
        k_binary_h<<<g, THREADS, 0, s>>>((const float *)a, (const TO *)b, bi, (TO *)y, n, op);
    else k_binary_h<<<g, THREADS, 0, s>>>((const float *)a, (const float *)b, bi, (TO *)y, n, op);
}

extern "C" int cu_binary_half(void *stream, int ka, const void *a, cu_shape as, int kb,
                              const void *b, cu_shape bs, int ky, void *y, cu_shape ys, int op) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    if ((ka && ka != ky) || (kb && kb != ky)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    if (ky == 1) binary_launch<oc_f16>(s, ka, a, kb, b, bi, y, n, op);
    else if (ky == 2) binary_launch<oc_bf16>(s, ka, a, kb, b, bi, y, n, op);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

// Sum of up to CU_SUM_MAX broadcast operands into a half y: accumulated in float32 in input
// order (cpu_sum's), rounded once; each operand of y's kind or float32.
template <typename TO>
__device__ static inline float sum_ld(const cu_sum_in &in, int j, int64_t o) {
    return in.kind[j] ? ld((const TO *)in.p[j], o) : ld((const float *)in.p[j], o);
}

template <typename TO> __global__ void k_sum_h(cu_sum_in in, cu_bidx bi, TO *y, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[CU_SUM_MAX];
        bidx_at<CU_SUM_MAX>(bi, i, o);
        float acc = sum_ld<TO>(in, 0, o[0]);
        for (int j = 1; j < in.n; j++) acc += sum_ld<TO>(in, j, o[j]);
        st(y, i, acc);
    }
}

extern "C" int cu_sum_half(void *stream, cu_sum_in in, int ky, void *y, cu_shape ys) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    if (in.n < 1 || in.n > CU_SUM_MAX) return (int)cudaErrorInvalidValue;
    for (int j = 0; j < in.n; j++)
        if (in.kind[j] && in.kind[j] != ky) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    cu_bidx bi = bidx_of(ys, in.shape, in.n);
    if (ky == 1) k_sum_h<<<blocks_for(n), THREADS, 0, s>>>(in, bi, (oc_f16 *)y, n);
    else if (ky == 2) k_sum_h<<<blocks_for(n), THREADS, 0, s>>>(in, bi, (oc_bf16 *)y, n);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

__device__ static inline bool pred_of(int code, float a, float b) {
    return oc_pred_f32(code, a, b);
}
__device__ static inline bool pred_of(int code, int64_t a, int64_t b) {
    return oc_pred_i64(code, a, b);
}
__device__ static inline bool pred_of(int code, int32_t a, int32_t b) {
    return oc_pred_i32(code, a, b);
}
__device__ static inline bool pred_of(int code, uint8_t a, uint8_t b) {
    return oc_pred_u8(code, a, b);
}

template <typename T>
__global__ void k_predicate(int code, const T *a, const T *b, cu_bidx bi, uint8_t *y, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        y[i] = pred_of(code, a[o[0]], b[o[1]]);
    }
}

template <typename T>
__global__ void k_predicate_unary(int code, const T *x, uint8_t *y, int64_t n, bool pos, bool neg) {
    GRID_LOOP(i, n) y[i] = oc_pred_of(code, (float)x[i], pos, neg);
}

extern "C" int cu_predicate(void *stream, int code, cu_dtype dt, const void *a, cu_shape as,
                            const void *b, cu_shape bs, uint8_t *y, cu_shape ys, int detect_pos,
                            int detect_neg) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (oc_pred_unary(code)) {
        if (code == OC_PRED_NOT && dt == CU_DT_U8)
            k_predicate_unary<<<blocks_for(n), THREADS, 0, s>>>(code, (const uint8_t *)a, y, n,
                                                                false, false);
        else if (code != OC_PRED_NOT && dt == CU_DT_F32)
            k_predicate_unary<<<blocks_for(n), THREADS, 0, s>>>(code, (const float *)a, y, n,
                                                                detect_pos != 0, detect_neg != 0);
        else return (int)cudaErrorInvalidValue;
        return last_error();
    }
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    switch (dt) {
    case CU_DT_F32:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const float *)a, (const float *)b, bi,
                                                      y, n);
        break;
    case CU_DT_I64:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const int64_t *)a, (const int64_t *)b,
                                                      bi, y, n);
        break;
    case CU_DT_I32:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const int32_t *)a, (const int32_t *)b,
                                                      bi, y, n);
        break;
    case CU_DT_U8:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const uint8_t *)a, (const uint8_t *)b,
                                                      bi, y, n);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

template <typename T>
__global__ void k_where(const uint8_t *c, const T *x, const T *y, cu_bidx bi, T *out, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[3];
        bidx_at<3>(bi, i, o);
        out[i] = c[o[0]] ? x[o[1]] : y[o[2]];
    }
}

__global__ void k_where4(const uint8_t *c, const float *x, const float *y, cu_bidx bi, float *out,
                         int64_t n4) {
    int L = bi.rank - 1;
    bool uc = bi.st[0][L] == 1, ux = bi.st[1][L] == 1, uy = bi.st[2][L] == 1;
    GRID_LOOP(q, n4) {
        int64_t o[3];
        bidx_at<3>(bi, q * 4, o);
        u8x4 m = ld4(c, o[0], uc);
        f4 a = ld4(x, o[1], ux), b = ld4(y, o[2], uy), r;
        for (int e = 0; e < 4; e++) r.v[e] = m.v[e] ? a.v[e] : b.v[e];
        ((f4 *)out)[q] = r;
    }
}

extern "C" int cu_where(void *stream, const uint8_t *c, cu_shape cs, const float *x, cu_shape xs,
                        const float *y, cu_shape ys, float *out, cu_shape os) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    cu_shape in[3] = {cs, xs, ys};
    cu_bidx bi = bidx_of(os, in, 3);
    const void *ptrs[3] = {c, x, y};
    const int es[3] = {1, 4, 4};
    if (bidx_v4_ok(&bi, 3, ptrs, es, out, 4)) {
        k_where4<<<blocks_for(n / 4), THREADS, 0, (cudaStream_t)stream>>>(c, x, y, bi, out, n / 4);
        return last_error();
    }
    k_where<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(c, x, y, bi, out, n);
    return last_error();
}

// Where of int64 / int32 (index glue: bucketize's search)
extern "C" int cu_where_int(void *stream, int es, const uint8_t *c, cu_shape cs, const void *x,
                            cu_shape xs, const void *y, cu_shape ys, void *out, cu_shape os) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    cu_shape in[3] = {cs, xs, ys};
    cu_bidx bi = bidx_of(os, in, 3);
    cudaStream_t s = (cudaStream_t)stream;
    if (es == 8)
        k_where<<<blocks_for(n), THREADS, 0, s>>>(c, (const int64_t *)x, (const int64_t *)y, bi,
                                                  (int64_t *)out, n);
    else if (es == 4)
        k_where<<<blocks_for(n), THREADS, 0, s>>>(c, (const int32_t *)x, (const int32_t *)y, bi,
                                                  (int32_t *)out, n);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

// Where into a half out: x and y each of out's type or float32 (a fill scalar), rounded once.
template <typename TX, typename TY, typename TO>
__global__ void k_where_h(const uint8_t *c, const TX *x, const TY *y, cu_bidx bi, TO *out,
                          int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[3];
        bidx_at<3>(bi, i, o);
        st(out, i, c[o[0]] ? ld(x, o[1]) : ld(y, o[2]));
    }
}

template <typename TO>
static void where_launch(cudaStream_t s, const uint8_t *c, int kx, const void *x, int ky,
                         const void *y, cu_bidx bi, void *out, int64_t n) {
    unsigned g = blocks_for(n);
    if (kx && ky)
        k_where_h<<<g, THREADS, 0, s>>>(c, (const TO *)x, (const TO *)y, bi, (TO *)out, n);
    else if (kx)
        k_where_h<<<g, THREADS, 0, s>>>(c, (const TO *)x, (const float *)y, bi, (TO *)out, n);
    else if (ky)
        k_where_h<<<g, THREADS, 0, s>>>(c, (const float *)x, (const TO *)y, bi, (TO *)out, n);
    else k_where_h<<<g, THREADS, 0, s>>>(c, (const float *)x, (const float *)y, bi, (TO *)out, n);
}

extern "C" int cu_where_half(void *stream, const uint8_t *c, cu_shape cs, int kx, const void *x,
                             cu_shape xs, int ky, const void *y, cu_shape ys, int ko, void *out,
                             cu_shape os) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    if ((kx && kx != ko) || (ky && ky != ko)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    cu_shape in[3] = {cs, xs, ys};
    cu_bidx bi = bidx_of(os, in, 3);
    if (ko == 1) where_launch<oc_f16>(s, c, kx, x, ky, y, bi, out, n);
    else if (ko == 2) where_launch<oc_bf16>(s, c, kx, x, ky, y, bi, out, n);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

template <typename T>
__global__ void k_where_grad(const T *dy, const uint8_t *c, cu_bidx bi, T *dx, int select,
                             int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        st(dx, i, (c[o[0]] != 0) == (select != 0) ? ld(dy, i) : 0.0f);
    }
}

__global__ void k_where_grad4(const float *dy, const uint8_t *c, cu_bidx bi, float *dx, int select,
                              int64_t n4) {
    bool uc = bi.st[0][bi.rank - 1] == 1;
    GRID_LOOP(q, n4) {
        int64_t o[1];
        bidx_at<1>(bi, q * 4, o);
        u8x4 m = ld4(c, o[0], uc);
        f4 g = ((const f4 *)dy)[q], r;
        for (int e = 0; e < 4; e++) r.v[e] = (m.v[e] != 0) == (select != 0) ? g.v[e] : 0.0f;
        ((f4 *)dx)[q] = r;
    }
}

extern "C" int cu_where_grad(void *stream, int kind, const void *dy, const uint8_t *c, cu_shape cs,
                             cu_shape os, void *dx, int select) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    cu_bidx bi = bidx_of(os, &cs, 1);
    const void *ptrs[1] = {c};
    const int es[1] = {1};
    if (kind == 0 && aligned16(dy) && bidx_v4_ok(&bi, 1, ptrs, es, dx, 4)) {
        k_where_grad4<<<blocks_for(n / 4), THREADS, 0, s>>>((const float *)dy, c, bi, (float *)dx,
                                                            select, n / 4);
        return last_error();
    }
    if (kind == 1)
        k_where_grad<<<b, THREADS, 0, s>>>((const oc_f16 *)dy, c, bi, (oc_f16 *)dx, select, n);
    else if (kind == 2)
        k_where_grad<<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, c, bi, (oc_bf16 *)dx, select, n);
    else k_where_grad<<<b, THREADS, 0, s>>>((const float *)dy, c, bi, (float *)dx, select, n);
    return last_error();
}
