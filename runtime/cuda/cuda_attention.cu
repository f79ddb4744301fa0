// cuda_attention.cu — FusedAttention and its gradient by rows (cuda_launch.h: cu_att_rows):
// a thread per query row (forward, dQ) or key column (dK, dV) holds its [d] vectors in
// registers and streams the other side's rows, the scores recomputed and never stored
// (the memory-efficient algorithm, an online softmax in the forward). The lanes of a warp
// hold neighbouring rows of one batch, so the rows they stream are one address a load (a
// broadcast from L1). cpu_attention.c computes the same values in another order.
#include <math.h>

#include "cu_device.h"

#define ATT_ROWS_BLOCK 128
#define ATT_KEYS 8 // the forward's keys a rescale of the running sum and output

static unsigned att_rows_blocks(int64_t n) {
    int64_t b = (n + ATT_ROWS_BLOCK - 1) / ATT_ROWS_BLOCK;
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 16 ? 65535LL * 16 : b);
}

// Row t of batch b of a [b.., rows, d] tensor (H 0) or of a seq_first [N, rows, H, d] one whose
// rows are `width` elements apart.
__device__ static inline int64_t att_row_at(int64_t b, int64_t t, int64_t rows, int64_t d,
                                            int64_t width, int64_t H) {
    return H ? ((b / H) * rows + t) * width + (b % H) * d : (b * rows + t) * d;
}
// Where key j of batch b starts: its row of K, or its column of Kᵀ [b, dh, S] (elements S apart).
__device__ static inline int64_t att_key_at(const cu_att_rows &a, int64_t b, int64_t j) {
    return a.kt ? b * a.dh * a.S + j : att_row_at(b, j, a.S, a.dh, a.wq, a.H);
}

// FAST: d == DM, unit stride and 16-byte aligned rows (cu_att_rows_fast): one load for 4
// elements. Else d <= DM, element by element at stride `stride`.
template <int DM, bool FAST>
__device__ static inline void att_load(float *r, const float *p, int64_t d, int64_t stride) {
    if constexpr (FAST) {
        UNROLL
        for (int c = 0; c < DM; c += 4) {
            f4 v = *(const f4 *)(p + c);
            r[c] = v.v[0], r[c + 1] = v.v[1], r[c + 2] = v.v[2], r[c + 3] = v.v[3];
        }
    } else {
        UNROLL
        for (int c = 0; c < DM; c++) r[c] = c < d ? p[c * stride] : 0.0f;
    }
}
template <int DM, bool FAST>
__device__ static inline void att_store(float *p, const float *r, float scale, int64_t d,
                                        int64_t stride) {
    if constexpr (FAST) {
        UNROLL
        for (int c = 0; c < DM; c += 4) {
            f4 v = {{r[c] * scale, r[c + 1] * scale, r[c + 2] * scale, r[c + 3] * scale}};
            *(f4 *)(p + c) = v;
        }
    } else {
        UNROLL
        for (int c = 0; c < DM; c++)
            if (c < d) p[c * stride] = r[c] * scale;
    }
}
// x · p (p's elements at stride `stride`)
template <int DM, bool FAST>
__device__ static inline float att_dot(const float *x, const float *p, int64_t d, int64_t stride) {
    float acc = 0.0f;
    if constexpr (FAST) {
        UNROLL
        for (int c = 0; c < DM; c += 4) {
            f4 v = *(const f4 *)(p + c);
            acc += x[c] * v.v[0] + x[c + 1] * v.v[1] + x[c + 2] * v.v[2] + x[c + 3] * v.v[3];
        }
    } else {
        UNROLL
        for (int c = 0; c < DM; c++)
            if (c < d) acc += x[c] * p[c * stride];
    }
    return acc;
}
// acc += w p
template <int DM, bool FAST>
__device__ static inline void att_axpy(float *acc, float w, const float *p, int64_t d,
                                       int64_t stride) {
    if constexpr (FAST) {
        UNROLL
        for (int c = 0; c < DM; c += 4) {
            f4 v = *(const f4 *)(p + c);
            acc[c] += w * v.v[0], acc[c + 1] += w * v.v[1];
            acc[c + 2] += w * v.v[2], acc[c + 3] += w * v.v[3];
        }
    } else {
        UNROLL
        for (int c = 0; c < DM; c++)
            if (c < d) acc[c] += w * p[c * stride];
    }
}

// Whether score (b, t, j) is masked; mo = att_mask_row(m, b, t).
__device__ static inline bool att_rows_masked(const cu_att_mask &m, int64_t mo, int64_t t,
                                              int64_t j) {
    return (m.causal || m.cond) && att_masked(m, mo, t, j);
}
// p with the forward's dropout of score element e: kept / (1 - ratio), else 0.
__device__ static inline float att_drop(const cu_att_rows &a, uint64_t key, int64_t e, float p) {
    if (a.ratio <= 0.0f) return p;
    return rng_uniform(key, (uint64_t)e) >= a.ratio ? p * (1.0f / (1.0f - a.ratio)) : 0.0f;
}

// Y and LSE, a thread per query row: the scores ATT_KEYS keys at a time, the running maximum,
// sum and output rescaled once for them; masked scores are the fill (causal: the keys right of
// the diagonal not visited, their probabilities exactly 0).
template <int DM, bool FAST>
__global__ void __launch_bounds__(ATT_ROWS_BLOCK)
    k_att_rows_fwd(cu_att_rows a, float *y, float *lse) {
    uint64_t key = a.ratio > 0.0f ? rng_key(a.key) : 0;
    int64_t ks = a.kt ? a.S : 1;
    GRID_LOOP(r, a.nb * a.T) {
        int64_t b = r / a.T, t = r % a.T, n = a.m.causal ? t + 1 : a.S;
        int64_t mo = att_mask_row(a.m, b, t);
        float q[DM], o[DM], mx = -INFINITY, l = 0.0f;
        att_load<DM, FAST>(q, a.q + att_row_at(b, t, a.T, a.dh, a.wq, a.H), a.dh, 1);
        UNROLL
        for (int c = 0; c < DM; c++) o[c] = 0.0f;
        for (int64_t j0 = 0; j0 < n; j0 += ATT_KEYS) {
            float s[ATT_KEYS], cm = mx;
            UNROLL
            for (int g = 0; g < ATT_KEYS; g++) {
                int64_t j = j0 + g;
                s[g] = j >= n ? -INFINITY
                       : att_rows_masked(a.m, mo, t, j)
                           ? a.m.fill
                           : a.scale * att_dot<DM, FAST>(q, a.k + att_key_at(a, b, j), a.dh, ks);
                cm = fmaxf(cm, s[g]);
            }
            if (cm == -INFINITY) continue; // every score so far -inf: nothing to add
            float f = expf(mx - cm);       // 0 while mx is -inf
            l *= f;
            UNROLL
            for (int c = 0; c < DM; c++) o[c] *= f;
            mx = cm;
            UNROLL
            for (int g = 0; g < ATT_KEYS; g++) {
                int64_t j = j0 + g;
                if (j >= n) break;
                float e = expf(s[g] - mx);
                l += e;
                att_axpy<DM, FAST>(o, att_drop(a, key, (b * a.T + t) * a.S + j, e),
                                   a.v + att_row_at(b, j, a.S, a.dv, a.wv, a.H), a.dv, 1);
            }
        }
        lse[r] = mx == -INFINITY ? -INFINITY : mx + logf(l);
        att_store<DM, FAST>(y + att_row_at(b, t, a.T, a.dv, a.wy, a.H), o, 1.0f / l, a.dv, 1);
    }
}

// D = rowsum(dY Y), a thread per row.
__global__ void k_att_rows_d(cu_att_rows a, const float *dy, const float *y, float *dsum) {
    GRID_LOOP(r, a.nb * a.T) {
        int64_t at = att_row_at(r / a.T, r % a.T, a.T, a.dv, a.wy, a.H);
        float acc = 0.0f;
        for (int64_t c = 0; c < a.dv; c++) acc += dy[at + c] * y[at + c];
        dsum[r] = acc;
    }
}

// Heads of 64 hold two vectors and an accumulator of 64 floats: more than a thread's 255
// registers (nvcc spilled 83 floats). The gradients' kernels then give each row two threads,
// each accumulating one half of the row's output (the scores computed by both).
template <int DM> struct att_split {
    static constexpr int N = DM > 32 ? 2 : 1, W = DM / N;
    // the elements part `part` holds of a d-vector: [part W, part W + n)
    __device__ static int64_t n(int64_t d, int part) {
        int64_t k = d - (int64_t)part * W;
        return k < 0 ? 0 : k > W ? W : k;
    }
};

// dQ = scale dS K, a thread per query row (or half row): dS = P (dP' - D), P = exp(s - LSE)
// recomputed, dP' = dY Vᵀ with the forward's dropout; 0 where masked (skipped).
template <int DM, bool FAST>
__global__ void __launch_bounds__(ATT_ROWS_BLOCK)
    k_att_rows_dq(cu_att_rows a, const float *dy, const float *lse, const float *dsum, float *dq) {
    typedef att_split<DM> sp;
    uint64_t key = a.ratio > 0.0f ? rng_key(a.key) : 0;
    int64_t ks = a.kt ? a.S : 1;
    GRID_LOOP(x, a.nb * a.T * sp::N) {
        int64_t r = x / sp::N, b = r / a.T, t = r % a.T, n = a.m.causal ? t + 1 : a.S;
        int part = (int)(x % sp::N);
        int64_t mo = att_mask_row(a.m, b, t), off = (int64_t)part * sp::W, dn = sp::n(a.dh, part);
        float q[DM], g[DM], acc[sp::W], L = lse[r], D = dsum[r];
        att_load<DM, FAST>(q, a.q + att_row_at(b, t, a.T, a.dh, a.wq, a.H), a.dh, 1);
        att_load<DM, FAST>(g, dy + att_row_at(b, t, a.T, a.dv, a.wy, a.H), a.dv, 1);
        UNROLL
        for (int c = 0; c < sp::W; c++) acc[c] = 0.0f;
        for (int64_t j = 0; j < n; j++) {
            if (att_rows_masked(a.m, mo, t, j)) continue;
            const float *kj = a.k + att_key_at(a, b, j);
            float p = expf(a.scale * att_dot<DM, FAST>(q, kj, a.dh, ks) - L);
            float dp = att_dot<DM, FAST>(g, a.v + att_row_at(b, j, a.S, a.dv, a.wv, a.H), a.dv, 1);
            float ds = p * (att_drop(a, key, (b * a.T + t) * a.S + j, dp) - D);
            att_axpy<sp::W, FAST>(acc, ds, kj + off * ks, dn, ks);
        }
        att_store<sp::W, FAST>(dq + att_row_at(b, t, a.T, a.dh, a.wq, a.H) + off, acc, a.scale, dn,
                               1);
    }
}

// The first row a key column's thread visits: causal, its warp's first column (rows above
// the diagonal skipped, the lanes' streamed rows kept one address); else 0.
__device__ static inline int64_t att_first_row(const cu_att_rows &a, int64_t j) {
    return a.m.causal ? j - j % 32 : 0;
}

// dV = P'ᵀ dY, a thread per key column (masked scores' probabilities exp(fill - LSE) too, as
// the forward used them; causal ones are exactly 0 and skipped).
template <int DM, bool FAST>
__global__ void __launch_bounds__(ATT_ROWS_BLOCK)
    k_att_rows_dv(cu_att_rows a, const float *dy, const float *lse, float *dv) {
    uint64_t key = a.ratio > 0.0f ? rng_key(a.key) : 0;
    int64_t ks = a.kt ? a.S : 1;
    GRID_LOOP(x, a.nb * a.S) {
        int64_t b = x / a.S, j = x % a.S, m0 = att_mask_row(a.m, b, 0);
        int64_t mrow = a.m.cond ? a.m.cs[a.m.rank - 2] : 0;
        float kk[DM], acc[DM];
        att_load<DM, FAST>(kk, a.k + att_key_at(a, b, j), a.dh, ks);
        UNROLL
        for (int c = 0; c < DM; c++) acc[c] = 0.0f;
        for (int64_t i = att_first_row(a, j); i < a.T; i++) {
            if (i < j && a.m.causal) continue;
            float s =
                att_rows_masked(a.m, m0 + i * mrow, i, j)
                    ? a.m.fill
                    : a.scale * att_dot<DM, FAST>(kk, a.q + att_row_at(b, i, a.T, a.dh, a.wq, a.H),
                                                  a.dh, 1);
            float p = expf(s - lse[b * a.T + i]);
            att_axpy<DM, FAST>(acc, att_drop(a, key, (b * a.T + i) * a.S + j, p),
                               dy + att_row_at(b, i, a.T, a.dv, a.wy, a.H), a.dv, 1);
        }
        att_store<DM, FAST>(dv + att_row_at(b, j, a.S, a.dv, a.wv, a.H), acc, 1.0f, a.dv, 1);
    }
}

// dK = scale dSᵀ Q, a thread per key column (or half column: att_split); masked scores
// skipped (their dS is 0).
template <int DM, bool FAST>
__global__ void __launch_bounds__(ATT_ROWS_BLOCK)
    k_att_rows_dk(cu_att_rows a, const float *dy, const float *lse, const float *dsum, float *dk) {
    typedef att_split<DM> sp;
    uint64_t key = a.ratio > 0.0f ? rng_key(a.key) : 0;
    int64_t ks = a.kt ? a.S : 1;
    GRID_LOOP(x, a.nb * a.S * sp::N) {
        int64_t b = x / sp::N / a.S, j = x / sp::N % a.S, m0 = att_mask_row(a.m, b, 0);
        int64_t mrow = a.m.cond ? a.m.cs[a.m.rank - 2] : 0;
        int part = (int)(x % sp::N);
        int64_t off = (int64_t)part * sp::W, dn = sp::n(a.dh, part);
        float kk[DM], vv[DM], acc[sp::W];
        att_load<DM, FAST>(kk, a.k + att_key_at(a, b, j), a.dh, ks);
        att_load<DM, FAST>(vv, a.v + att_row_at(b, j, a.S, a.dv, a.wv, a.H), a.dv, 1);
        UNROLL
        for (int c = 0; c < sp::W; c++) acc[c] = 0.0f;
        for (int64_t i = att_first_row(a, j); i < a.T; i++) {
            if (att_rows_masked(a.m, m0 + i * mrow, i, j)) continue;
            const float *qi = a.q + att_row_at(b, i, a.T, a.dh, a.wq, a.H);
            float p = expf(a.scale * att_dot<DM, FAST>(kk, qi, a.dh, 1) - lse[b * a.T + i]);
            float dp = att_dot<DM, FAST>(vv, dy + att_row_at(b, i, a.T, a.dv, a.wy, a.H), a.dv, 1);
            float ds = p * (att_drop(a, key, (b * a.T + i) * a.S + j, dp) - dsum[b * a.T + i]);
            att_axpy<sp::W, FAST>(acc, ds, qi + off, dn, 1);
        }
        att_store<sp::W, FAST>(dk + att_key_at(a, b, j) + off * ks, acc, a.scale, dn, ks);
    }
}

// The widest head dimension the row kernels hold in registers (OP_ATTENTION_ROWS_DMAX).
#define ATT_ROWS_DMAX 64

// One aligned, unit-stride shape (dh == dv of 16, 32 or 64): the FAST instances.
static bool att_rows_fast(const cu_att_rows *a, const void *p0, const void *p1, const void *p2,
                          const void *p3) {
    uintptr_t u = (uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)p0 |
                  (uintptr_t)p1 | (uintptr_t)p2 | (uintptr_t)p3;
    int64_t w = a->H ? (a->wq | a->wv | a->wy) : 0;
    return a->dh == a->dv && (a->dh == 16 || a->dh == 32 || a->dh == 64) && !a->kt && u % 16 == 0 &&
           w % 4 == 0;
}

// KERNEL's instance for the geometry: DM the smallest of 8..64 holding dh and dv; split:
// KERNEL gives a row two threads where DM is 64 (att_split).
#define ATT_ROWS_LAUNCH(KERNEL, n, split, fast, ...)                                               \
    do {                                                                                           \
        int64_t dm_ = a->dh > a->dv ? a->dh : a->dv;                                               \
        cudaStream_t s_ = (cudaStream_t)stream;                                                    \
        unsigned g_ = att_rows_blocks((n) * ((split) && dm_ > 32 ? 2 : 1));                        \
        if (fast && dm_ == 64) KERNEL<64, true><<<g_, ATT_ROWS_BLOCK, 0, s_>>>(__VA_ARGS__);       \
        else if (fast && dm_ == 32) KERNEL<32, true><<<g_, ATT_ROWS_BLOCK, 0, s_>>>(__VA_ARGS__);  \
        else if (fast) KERNEL<16, true><<<g_, ATT_ROWS_BLOCK, 0, s_>>>(__VA_ARGS__);               \
        else if (dm_ <= 8) KERNEL<8, false><<<g_, ATT_ROWS_BLOCK, 0, s_>>>(__VA_ARGS__);           \
        else if (dm_ <= 16) KERNEL<16, false><<<g_, ATT_ROWS_BLOCK, 0, s_>>>(__VA_ARGS__);         \
        else if (dm_ <= 32) KERNEL<32, false><<<g_, ATT_ROWS_BLOCK, 0, s_>>>(__VA_ARGS__);         \
        else KERNEL<64, false><<<g_, ATT_ROWS_BLOCK, 0, s_>>>(__VA_ARGS__);                        \
        int e_ = last_error();                                                                     \
        if (e_) return e_;                                                                         \
    } while (0)

extern "C" int cu_att_rows_fwd(void *stream, const cu_att_rows *a, float *y, float *lse) {
    if (a->dh > ATT_ROWS_DMAX || a->dv > ATT_ROWS_DMAX) return (int)cudaErrorInvalidValue;
    if (a->nb * a->T == 0) return 0;
    bool fast = att_rows_fast(a, y, NULL, NULL, NULL);
    cu_att_rows av = *a; // by value: the emulator's launches read their arguments later
    ATT_ROWS_LAUNCH(k_att_rows_fwd, a->nb * a->T, false, fast, av, y, lse);
    return 0;
}

extern "C" int cu_att_rows_grad(void *stream, const cu_att_rows *a, const float *dy, const float *y,
                                const float *lse, float *dsum, float *dq, float *dk, float *dv) {
    if (a->dh > ATT_ROWS_DMAX || a->dv > ATT_ROWS_DMAX) return (int)cudaErrorInvalidValue;
    if (a->nb * a->T == 0) return 0;
    bool fast = att_rows_fast(a, dy, dq, dk, dv);
    cu_att_rows av = *a; // by value: the emulator's launches read their arguments later
    if (dq || dk) {
        k_att_rows_d<<<att_rows_blocks(a->nb * a->T), ATT_ROWS_BLOCK, 0, (cudaStream_t)stream>>>(
            av, dy, y, dsum);
        int e = last_error();
        if (e) return e;
    }
    if (dq) ATT_ROWS_LAUNCH(k_att_rows_dq, a->nb * a->T, true, fast, av, dy, lse, dsum, dq);
    if (dv) ATT_ROWS_LAUNCH(k_att_rows_dv, a->nb * a->S, false, fast, av, dy, lse, dv);
    if (dk) ATT_ROWS_LAUNCH(k_att_rows_dk, a->nb * a->S, true, fast, av, dy, lse, dsum, dk);
    return 0;
}
