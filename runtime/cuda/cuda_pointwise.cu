// cuda_pointwise.cu — the pointwise ops and their gradients (runtime/pointwise.h), Dropout,
// Transpose, Slice, RandomUniform, casts of masks, indices and floats.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

extern "C" uint64_t cu_rng_u64_host(uint64_t key, uint64_t index) { return rng_u64(key, index); }

// ---- pointwise ops (runtime/pointwise.h; cpu_pointwise) ----
// One kernel instance per op: the switch on the template argument folds away.
template <int OP> __device__ static inline float pw_forward(float x, float p0, float p1) {
    switch (OP) {
#define PW_EXPR(kind, expr)                                                                        \
    case OP_##kind: return (expr);
        OC_POINTWISE_FORWARD(PW_EXPR)
#undef PW_EXPR
    }
    return NAN;
}
template <int OP> __device__ static inline float pw_grad(float dy, float s, float p0, float p1) {
    switch (OP) {
#define PW_EXPR(kind, expr)                                                                        \
    case OP_##kind: return (expr);
        OC_POINTWISE_GRAD(PW_EXPR)
#undef PW_EXPR
    }
    return NAN;
}

template <int OP>
__global__ void k_pointwise(const float *x, float *y, int64_t n, float p0, float p1) {
    GRID_LOOP(i, n) y[i] = pw_forward<OP>(x[i], p0, p1);
}
template <int OP>
__global__ void k_pointwise_f4(const f4 *x, f4 *y, int64_t n4, float p0, float p1) {
    GRID_LOOP(i, n4) {
        f4 a = x[i], r;
        for (int k = 0; k < 4; k++) r.v[k] = pw_forward<OP>(a.v[k], p0, p1);
        y[i] = r;
    }
}
// dy2 (NULL: none): a second partial of the gradient, dy + dy2 for dy (fuse_grad_sum.h)
template <int OP>
__global__ void k_pointwise_grad(const float *dy, const float *dy2, const float *s, float *dx,
                                 int64_t n, float p0, float p1) {
    GRID_LOOP(i, n) dx[i] = pw_grad<OP>(dy2 ? dy[i] + dy2[i] : dy[i], s[i], p0, p1);
}
template <int OP>
__global__ void k_pointwise_grad_f4(const f4 *dy, const f4 *dy2, const f4 *s, f4 *dx, int64_t n4,
                                    float p0, float p1) {
    GRID_LOOP(i, n4) {
        f4 g = dy[i], a = s[i], r;
        if (dy2) {
            f4 e = dy2[i];
            for (int k = 0; k < 4; k++) g.v[k] += e.v[k];
        }
        for (int k = 0; k < 4; k++) r.v[k] = pw_grad<OP>(g.v[k], a.v[k], p0, p1);
        dx[i] = r;
    }
}

// Half data, V elements a thread (vec_of).
template <int OP, int V, typename T>
__global__ void k_pointwise_h(const T *x, T *y, int64_t n, float p0, float p1) {
    GRID_LOOP(i, n / V) {
        float v[V];
        ldv<T, V>(x, i * V, v);
        for (int k = 0; k < V; k++) v[k] = pw_forward<OP>(v[k], p0, p1);
        stv<T, V>(y, i * V, v);
    }
}
template <int OP, int V, typename T>
__global__ void k_pointwise_grad_h(const T *dy, const T *dy2, const T *s, T *dx, int64_t n,
                                   float p0, float p1) {
    GRID_LOOP(i, n / V) {
        float g[V], a[V];
        ldv<T, V>(dy, i * V, g);
        if (dy2) {
            float e[V];
            ldv<T, V>(dy2, i * V, e);
            for (int k = 0; k < V; k++) g[k] += e[k];
        }
        ldv<T, V>(s, i * V, a);
        for (int k = 0; k < V; k++) g[k] = pw_grad<OP>(g[k], a[k], p0, p1);
        stv<T, V>(dx, i * V, g);
    }
}
template <int OP, typename T>
static void pointwise_h(cudaStream_t s, const void *x, void *y, int64_t n, float p0, float p1) {
    if (vec_of(n, sizeof(T), x, y, NULL, NULL) == 4)
        k_pointwise_h<OP, 4, T>
            <<<blocks_for(n / 4), THREADS, 0, s>>>((const T *)x, (T *)y, n, p0, p1);
    else k_pointwise_h<OP, 1, T><<<blocks_for(n), THREADS, 0, s>>>((const T *)x, (T *)y, n, p0, p1);
}
template <int OP, typename T>
static void pointwise_grad_h(cudaStream_t s, const void *dy, const void *dy2, const void *sv,
                             void *dx, int64_t n, float p0, float p1) {
    if (vec_of(n, sizeof(T), dy, sv, dx, dy2) == 4)
        k_pointwise_grad_h<OP, 4, T><<<blocks_for(n / 4), THREADS, 0, s>>>(
            (const T *)dy, (const T *)dy2, (const T *)sv, (T *)dx, n, p0, p1);
    else
        k_pointwise_grad_h<OP, 1, T><<<blocks_for(n), THREADS, 0, s>>>(
            (const T *)dy, (const T *)dy2, (const T *)sv, (T *)dx, n, p0, p1);
}

template <int OP>
static void pointwise_launch(cudaStream_t s, int kind, const void *xv, void *yv, int64_t n,
                             float p0, float p1) {
    if (kind == 1) {
        pointwise_h<OP, oc_f16>(s, xv, yv, n, p0, p1);
        return;
    }
    if (kind == 2) {
        pointwise_h<OP, oc_bf16>(s, xv, yv, n, p0, p1);
        return;
    }
    const float *x = (const float *)xv;
    float *y = (float *)yv;
    if (vec4_ok(n, x, y, y))
        k_pointwise_f4<OP>
            <<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)x, (f4 *)y, n / 4, p0, p1);
    else k_pointwise<OP><<<blocks_for(n), THREADS, 0, s>>>(x, y, n, p0, p1);
}
template <int OP>
static void pointwise_grad_launch(cudaStream_t s, int kind, const void *dyv, const void *dy2v,
                                  const void *svv, void *dxv, int64_t n, float p0, float p1) {
    if (kind == 1) {
        pointwise_grad_h<OP, oc_f16>(s, dyv, dy2v, svv, dxv, n, p0, p1);
        return;
    }
    if (kind == 2) {
        pointwise_grad_h<OP, oc_bf16>(s, dyv, dy2v, svv, dxv, n, p0, p1);
        return;
    }
    const float *dy = (const float *)dyv, *dy2 = (const float *)dy2v, *sv = (const float *)svv;
    float *dx = (float *)dxv;
    if (vec_of(n, sizeof(float), dy, sv, dx, dy2) == 4)
        k_pointwise_grad_f4<OP><<<blocks_for(n / 4), THREADS, 0, s>>>(
            (const f4 *)dy, (const f4 *)dy2, (const f4 *)sv, (f4 *)dx, n / 4, p0, p1);
    else k_pointwise_grad<OP><<<blocks_for(n), THREADS, 0, s>>>(dy, dy2, sv, dx, n, p0, p1);
}

extern "C" int cu_pointwise(void *stream, int op, int ek, const void *x, void *y, int64_t n,
                            float p0, float p1) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (op) {
#define PW_CASE(kind, expr)                                                                        \
    case OP_##kind: pointwise_launch<OP_##kind>(s, ek, x, y, n, p0, p1); break;
        OC_POINTWISE_FORWARD(PW_CASE)
#undef PW_CASE
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

extern "C" int cu_pointwise_grad(void *stream, int op, int ek, const void *dy, const void *dy2,
                                 const void *sv, void *dx, int64_t n, float p0, float p1) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (op) {
#define PW_CASE(kind, expr)                                                                        \
    case OP_##kind: pointwise_grad_launch<OP_##kind>(s, ek, dy, dy2, sv, dx, n, p0, p1); break;
        OC_POINTWISE_GRAD(PW_CASE)
#undef PW_CASE
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

// ---- Dropout / DropoutGrad ----
template <typename T>
__global__ void k_dropout(const T *x, T *y, uint8_t *mask, int64_t n, cu_rng r, float ratio,
                          int train) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = train && ratio != 0.0f ? rng_key(r) : 0;
    GRID_LOOP(i, n) {
        if (!train || ratio == 0.0f) {
            st(y, i, ld(x, i));
            if (mask) mask[i] = 1;
        } else {
            bool keep = rng_uniform(key, (uint64_t)i) >= ratio;
            st(y, i, keep ? ld(x, i) * scale : 0.0f);
            if (mask) mask[i] = keep;
        }
    }
}

// float, training, 4 elements a thread (the same draw per element index as k_dropout)
__global__ void k_dropout4(const f4 *x, f4 *y, u8x4 *mask, int64_t n4, cu_rng r, float ratio) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    GRID_LOOP(q, n4) {
        f4 a = x[q], o;
        u8x4 m;
        for (int e = 0; e < 4; e++) {
            bool keep = rng_uniform(key, (uint64_t)(q * 4 + e)) >= ratio;
            o.v[e] = keep ? a.v[e] * scale : 0.0f;
            m.v[e] = keep;
        }
        y[q] = o;
        if (mask) mask[q] = m;
    }
}

extern "C" int cu_dropout(void *stream, int kind, const void *x, void *y, uint8_t *mask, int64_t n,
                          cu_rng key, float ratio, int train) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    if (kind == 0 && train && ratio != 0.0f && vec4_ok(n, x, y, y) && (uintptr_t)mask % 4 == 0) {
        k_dropout4<<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)x, (f4 *)y, (u8x4 *)mask,
                                                         n / 4, key, ratio);
        return last_error();
    }
    if (kind == 1)
        k_dropout<<<b, THREADS, 0, s>>>((const oc_f16 *)x, (oc_f16 *)y, mask, n, key, ratio, train);
    else if (kind == 2)
        k_dropout<<<b, THREADS, 0, s>>>((const oc_bf16 *)x, (oc_bf16 *)y, mask, n, key, ratio,
                                        train);
    else k_dropout<<<b, THREADS, 0, s>>>((const float *)x, (float *)y, mask, n, key, ratio, train);
    return last_error();
}

template <typename T> __global__ void k_transpose(const T *x, cu_bidx bi, T *y, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        y[i] = x[o[0]];
    }
}

// 4-byte elements whose innermost dim stays innermost (attention's head split, (N, T, H, D) ->
// (N, H, T, D)) with D a multiple of 4: 16 bytes a thread
__global__ void k_transpose4(const float *x, cu_bidx bi, f4 *y, int64_t n4) {
    GRID_LOOP(q, n4) {
        int64_t o[1];
        bidx_at<1>(bi, q * 4, o);
        y[q] = *(const f4 *)(x + o[0]);
    }
}

// A batched 2-d transpose, X (B, P, Q) -> Y (B, Q, P) (ViT's patch tokens (N, C, HW) -> (N, HW,
// C) and back): 32 x 32 tiles through shared memory, read along Q and written along P, both
// coalesced (one element a thread would read or write one element per 32-byte sector); a block
// of 256 threads (8 rows of 32) a tile, the tiles grid-strided. The extra column keeps a
// column's reads off one bank.
#define TILE 32
template <typename T>
__global__ void __launch_bounds__(THREADS)
    k_transpose_tiled(const T *x, T *y, int64_t B, int64_t P, int64_t Q) {
    __shared__ T sh[TILE][TILE + 1];
    int tx = (int)(threadIdx.x % TILE), ty = (int)(threadIdx.x / TILE);
    int64_t tp = (P + TILE - 1) / TILE, tq = (Q + TILE - 1) / TILE;
    for (int64_t t = blockIdx.x; t < B * tp * tq; t += gridDim.x) { // the same trips for the block
        int64_t b = t / (tp * tq), p0 = t / tq % tp * TILE, q0 = t % tq * TILE;
        const T *xb = x + b * P * Q;
        T *yb = y + b * P * Q;
        for (int j = ty; j < TILE; j += THREADS / TILE)
            if (p0 + j < P && q0 + tx < Q) sh[j][tx] = xb[(p0 + j) * Q + q0 + tx];
        __syncthreads();
        for (int j = ty; j < TILE; j += THREADS / TILE)
            if (q0 + j < Q && p0 + tx < P) yb[(q0 + j) * P + p0 + tx] = sh[tx][j];
        __syncthreads(); // before the next tile overwrites sh
    }
}

// A batched 2-d transpose with a side under a tile (--layout nhwc: the model's input (N, 3, HW)
// -> (N, HW, 3); each conv filter (K, C, RS) -> (K, RS, C) and its gradient back): a thread an
// element of the long side moves the short side's few, so reads and writes run along the long
// side across the warp; one division a thread (the generic kernel: a division per dimension an
// element; the H100 trace had ResNet-50's layout Transposes at 13.8 ms a step, fp32 and bf16).
template <typename T>
__global__ void k_transpose_narrow(const T *x, T *y, int64_t B, int64_t P, int64_t Q) {
    if (P <= Q) { // thread t = (b, q) moves x[b, :, q] to y[b, q, :]
        GRID_LOOP(t, B * Q) {
            int64_t b = t / Q;
            const T *xb = x + b * P * Q + (t - b * Q);
            for (int64_t p = 0; p < P; p++) y[t * P + p] = xb[p * Q];
        }
    } else { // thread t = (b, p) moves x[b, p, :] to y[b, :, p]
        GRID_LOOP(t, B * P) {
            int64_t b = t / P;
            T *yb = y + b * P * Q + (t - b * P);
            for (int64_t j = 0; j < Q; j++) yb[j * P] = x[t * Q + j];
        }
    }
}

// bi (collapsed, one operand) walks X as a batched 2-d transpose (B, P, Q) -> (B, Q, P): *B,
// *P, *Q.
static bool transpose_2d(const cu_bidx &bi, int64_t *B, int64_t *P, int64_t *Q) {
    int r = bi.rank;
    if (r < 2 || r > 3) return false;
    int64_t q = bi.d[r - 2], p = bi.d[r - 1];
    if (bi.st[0][r - 2] != 1 || bi.st[0][r - 1] != q || (r == 3 && bi.st[0][0] != p * q))
        return false;
    *B = r == 3 ? bi.d[0] : 1, *P = p, *Q = q;
    return true;
}

// X (B, P, Q) -> Y (B, Q, P): by the narrow kernel where a side is under a tile, else by tiles
template <typename T>
static void transpose_2d_run(cudaStream_t s, const void *x, void *y, int64_t B, int64_t P,
                             int64_t Q) {
    if (P < TILE || Q < TILE) {
        k_transpose_narrow<T>
            <<<blocks_for(B * (P > Q ? P : Q)), THREADS, 0, s>>>((const T *)x, (T *)y, B, P, Q);
        return;
    }
    int64_t tiles = B * ((P + TILE - 1) / TILE) * ((Q + TILE - 1) / TILE);
    unsigned nb = (unsigned)(tiles < 65535LL * 16 ? tiles : 65535LL * 16);
    k_transpose_tiled<T><<<nb, THREADS, 0, s>>>((const T *)x, (T *)y, B, P, Q);
}

extern "C" int cu_transpose(void *stream, int es, const void *x, cu_shape xs, void *y, cu_shape ys,
                            cu_shape perm) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    cu_bidx bi = {}; // y's dims, each walking x with the stride of the dim perm names
    int64_t in_st[CU_MAX_RANK], acc = 1;
    for (int d = xs.rank - 1; d >= 0; d--) {
        in_st[d] = acc;
        acc *= xs.d[d];
    }
    bi.rank = ys.rank;
    for (int d = 0; d < ys.rank; d++) bi.d[d] = ys.d[d], bi.st[0][d] = in_st[perm.d[d]];
    bidx_collapse(&bi, 1);
    if (es == 4 && bi.st[0][bi.rank - 1] == 1 && bidx_v4(&bi, 1) && aligned16(x) && aligned16(y)) {
        k_transpose4<<<blocks_for(n / 4), THREADS, 0, s>>>((const float *)x, bi, (f4 *)y, n / 4);
        return last_error();
    }
    int64_t B, P, Q;
    if (transpose_2d(bi, &B, &P, &Q) && (es == 1 || es == 2 || es == 4 || es == 8)) {
        if (es == 1) transpose_2d_run<uint8_t>(s, x, y, B, P, Q);
        else if (es == 2) transpose_2d_run<uint16_t>(s, x, y, B, P, Q);
        else if (es == 4) transpose_2d_run<uint32_t>(s, x, y, B, P, Q);
        else transpose_2d_run<uint64_t>(s, x, y, B, P, Q);
        return last_error();
    }
    switch (es) {
    case 1: k_transpose<<<b, THREADS, 0, s>>>((const uint8_t *)x, bi, (uint8_t *)y, n); break;
    case 2: k_transpose<<<b, THREADS, 0, s>>>((const uint16_t *)x, bi, (uint16_t *)y, n); break;
    case 4: k_transpose<<<b, THREADS, 0, s>>>((const uint32_t *)x, bi, (uint32_t *)y, n); break;
    default: k_transpose<<<b, THREADS, 0, s>>>((const uint64_t *)x, bi, (uint64_t *)y, n); break;
    }
    return last_error();
}

template <typename T>
__global__ void k_slice(const T *in, T *out, cu_shape small, cu_shape big, cu_shape start,
                        cu_shape step, int scatter, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t rem = i, off = 0, mul = 1;
        for (int d = small.rank - 1; d >= 0; d--) {
            off += (start.d[d] + (rem % small.d[d]) * step.d[d]) * mul;
            rem /= small.d[d];
            mul *= big.d[d];
        }
        if (scatter) out[off] = in[i];
        else out[i] = in[off];
    }
}

extern "C" int cu_slice(void *stream, int es, const void *in, void *out, cu_shape small,
                        cu_shape big, cu_shape start, cu_shape step, int scatter) {
    int64_t n = numel(small);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    switch (es) {
    case 1:
        k_slice<<<b, THREADS, 0, s>>>((const uint8_t *)in, (uint8_t *)out, small, big, start, step,
                                      scatter, n);
        break;
    case 2:
        k_slice<<<b, THREADS, 0, s>>>((const uint16_t *)in, (uint16_t *)out, small, big, start,
                                      step, scatter, n);
        break;
    case 4:
        k_slice<<<b, THREADS, 0, s>>>((const uint32_t *)in, (uint32_t *)out, small, big, start,
                                      step, scatter, n);
        break;
    default:
        k_slice<<<b, THREADS, 0, s>>>((const uint64_t *)in, (uint64_t *)out, small, big, start,
                                      step, scatter, n);
        break;
    }
    return last_error();
}

template <typename T>
__global__ void k_dropout_grad(const T *dy, const uint8_t *mask, T *dx, int64_t n, float scale) {
    GRID_LOOP(i, n) st(dx, i, mask[i] ? ld(dy, i) * scale : 0.0f);
}

__global__ void k_dropout_grad4(const f4 *dy, const u8x4 *mask, f4 *dx, int64_t n4, float scale) {
    GRID_LOOP(q, n4) {
        f4 g = dy[q], r;
        u8x4 m = mask[q];
        for (int e = 0; e < 4; e++) r.v[e] = m.v[e] ? g.v[e] * scale : 0.0f;
        dx[q] = r;
    }
}

extern "C" int cu_dropout_grad(void *stream, int kind, const void *dy, const uint8_t *mask,
                               void *dx, int64_t n, float scale) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    if (kind == 0 && vec4_ok(n, dy, dx, dx) && (uintptr_t)mask % 4 == 0) {
        k_dropout_grad4<<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)dy, (const u8x4 *)mask,
                                                              (f4 *)dx, n / 4, scale);
        return last_error();
    }
    if (kind == 1)
        k_dropout_grad<<<b, THREADS, 0, s>>>((const oc_f16 *)dy, mask, (oc_f16 *)dx, n, scale);
    else if (kind == 2)
        k_dropout_grad<<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, mask, (oc_bf16 *)dx, n, scale);
    else k_dropout_grad<<<b, THREADS, 0, s>>>((const float *)dy, mask, (float *)dx, n, scale);
    return last_error();
}

__global__ void k_random_uniform(float *y, int64_t n, cu_rng r, float low, float span) {
    uint64_t key = rng_key(r);
    GRID_LOOP(i, n) y[i] = low + span * rng_uniform(key, (uint64_t)i);
}

extern "C" int cu_random_uniform(void *stream, float *y, int64_t n, cu_rng key, float low,
                                 float high) {
    if (n == 0) return 0;
    k_random_uniform<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(y, n, key, low,
                                                                          high - low);
    return last_error();
}

// ---- casts of masks and indices (runtime/cast_rule.h) ----
__global__ void k_int_convert(int from, const void *x, int to, void *y, int64_t n) {
    GRID_LOOP(i, n) {
        float f = from == CU_DT_F32 ? ((const float *)x)[i] : 0.0f;
        int64_t v = from == CU_DT_I64   ? ((const int64_t *)x)[i]
                    : from == CU_DT_I32 ? ((const int32_t *)x)[i]
                    : from == CU_DT_F32 ? (to == CU_DT_U8 ? f != 0.0f : oc_float_to_int(f))
                                        : ((const uint8_t *)x)[i] != 0;
        if (to == CU_DT_F32) ((float *)y)[i] = (float)v;
        else if (to == CU_DT_I64) ((int64_t *)y)[i] = v;
        else if (to == CU_DT_I32)
            ((int32_t *)y)[i] = (int32_t)(v > INT32_MAX   ? INT32_MAX
                                          : v < INT32_MIN ? INT32_MIN
                                                          : v);
        else ((uint8_t *)y)[i] = v != 0;
    }
}

extern "C" int cu_int_convert(void *stream, cu_dtype from, const void *x, cu_dtype to, void *y,
                              int64_t n) {
    if (n == 0) return 0;
    bool ints_from = from == CU_DT_U8 || from == CU_DT_I32 || from == CU_DT_I64;
    bool ok = ints_from
                  ? (to == CU_DT_U8 || to == CU_DT_I32 || to == CU_DT_I64 || to == CU_DT_F32)
                  : from == CU_DT_F32 && (to == CU_DT_U8 || to == CU_DT_I32 || to == CU_DT_I64);
    if (!ok) return (int)cudaErrorInvalidValue;
    k_int_convert<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(from, x, to, y, n);
    return last_error();
}

__global__ void k_float_convert(const void *x, int kx, void *y, int ky, int64_t n) {
    GRID_LOOP(i, n) half_store(y, ky, i, half_load(x, kx, i));
}

extern "C" int cu_float_convert(void *stream, const void *x, int kx, void *y, int ky, int64_t n) {
    if (n == 0) return 0;
    k_float_convert<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(x, kx, y, ky, n);
    return last_error();
}
