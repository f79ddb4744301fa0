// cuda_softmax.cu — Softmax, LogSoftmax and their gradients; FusedAttention's score rows
// (softmax, dropout, dS) where its scores are stored.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

// ---- Softmax, LogSoftmax and their gradients (cpu_softmax): one thread per row ----
__global__ void k_softmax(const float *x, float *y, int64_t outer, int64_t D, int64_t inner,
                          int log) {
    GRID_LOOP(r, outer * inner) {
        int64_t base = (r / inner) * D * inner + r % inner;
        const float *xr = x + base;
        float *yr = y + base;
        float m = -INFINITY;
        for (int64_t i = 0; i < D; i++) m = fmaxf(m, xr[i * inner]);
        if (m == -INFINITY) m = 0.0f;
        double s = 0;
        for (int64_t i = 0; i < D; i++) s += exp((double)xr[i * inner] - m);
        double ls = log ? m + ::log(s) : 0;
        for (int64_t i = 0; i < D; i++)
            yr[i * inner] = log ? (float)((double)xr[i * inner] - ls)
                                : (float)(exp((double)xr[i * inner] - m) / s);
    }
}

__global__ void k_softmax_grad(const float *dy, const float *y, float *dx, int64_t outer, int64_t D,
                               int64_t inner, int log) {
    GRID_LOOP(r, outer * inner) {
        int64_t base = (r / inner) * D * inner + r % inner;
        double s = 0;
        for (int64_t i = 0; i < D; i++) {
            int64_t k = base + i * inner;
            s += log ? (double)dy[k] : (double)dy[k] * y[k];
        }
        for (int64_t i = 0; i < D; i++) {
            int64_t k = base + i * inner;
            dx[k] = log ? (float)((double)dy[k] - exp((double)y[k]) * s)
                        : (float)((double)y[k] * ((double)dy[k] - s));
        }
    }
}

// inner == 1, any D (ViT's 197 tokens): a warp per row, 4 rows a block, SM_R values a lane in
// registers (D <= 256 on a GPU; the rest read again), float arithmetic
#define SM_R 8
__global__ void k_softmax_rows(const float *x, float *y, int64_t rows, int64_t D, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        float c[SM_R], m = -INFINITY;
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) c[k] = xr[i], m = fmaxf(m, c[k]);
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L) m = fmaxf(m, xr[i]);
        m = lanes_max(m);
        if (m == -INFINITY) m = 0.0f;
        float sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_R; k++)
            if (lane + (int64_t)k * L < D) sum += expf(c[k] - m);
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L) sum += expf(xr[i] - m);
        sum = lanes_sum(sum);
        float ls = log ? m + logf(sum) : 0.0f, inv = 1.0f / sum;
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) yr[i] = log ? c[k] - ls : expf(c[k] - m) * inv;
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L)
            yr[i] = log ? xr[i] - ls : expf(xr[i] - m) * inv;
    }
}

__global__ void k_softmax_grad_rows(const float *dy, const float *y, float *dx, int64_t rows,
                                    int64_t D, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const float *dr = dy + r * D, *yr = y + r * D;
        float cg[SM_R], cy[SM_R], sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) cg[k] = dr[i], cy[k] = yr[i], sum += log ? cg[k] : cg[k] * cy[k];
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L)
            sum += log ? dr[i] : dr[i] * yr[i];
        sum = lanes_sum(sum);
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) dx[r * D + i] = log ? cg[k] - expf(cy[k]) * sum : cy[k] * (cg[k] - sum);
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L)
            dx[r * D + i] = log ? dr[i] - expf(yr[i]) * sum : yr[i] * (dr[i] - sum);
    }
}

// The last axis, D a multiple of 4 and the rows 16-byte aligned (attention's scores): a warp per
// row, the row held in registers (SM_V float4s a lane: D <= 1024 on a GPU; what does not fit is
// read again), float arithmetic as PyTorch's kernel (the cpu's double sums agree to ~1e-7).
#define SM_V 8
__device__ static inline float max4(float m, f4 a) {
    return fmaxf(fmaxf(m, fmaxf(a.v[0], a.v[1])), fmaxf(a.v[2], a.v[3]));
}
__device__ static inline f4 softmax4(f4 a, float m, float ls, float inv, int log) {
    f4 o;
    for (int e = 0; e < 4; e++) o.v[e] = log ? a.v[e] - ls : expf(a.v[e] - m) * inv;
    return o;
}
__device__ static inline f4 softmax_grad4(f4 g, f4 a, float sum, int log) {
    f4 o;
    for (int e = 0; e < 4; e++)
        o.v[e] = log ? g.v[e] - expf(a.v[e]) * sum : a.v[e] * (g.v[e] - sum);
    return o;
}
__global__ void k_softmax_rows4(const float *x, float *y, int64_t rows, int64_t D4, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const f4 *xr = (const f4 *)x + r * D4;
        f4 *yr = (f4 *)y + r * D4;
        f4 c[SM_V];
        float m = -INFINITY;
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) c[k] = xr[i], m = max4(m, c[k]);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L) m = max4(m, xr[i]);
        m = lanes_max(m);
        if (m == -INFINITY) m = 0.0f;
        float sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4)
                for (int e = 0; e < 4; e++) sum += expf(c[k].v[e] - m);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L) {
            f4 a = xr[i];
            for (int e = 0; e < 4; e++) sum += expf(a.v[e] - m);
        }
        sum = lanes_sum(sum);
        float ls = log ? m + logf(sum) : 0.0f, inv = 1.0f / sum;
        UNROLL
        for (int k = 0; k < SM_V; k++) { // (constant indices keep c[] in registers)
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) yr[i] = softmax4(c[k], m, ls, inv, log);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L)
            yr[i] = softmax4(xr[i], m, ls, inv, log);
    }
}

// its gradient: dx = y (dy - sum(dy y)), or for LogSoftmax dx = dy - exp(y) sum(dy)
__global__ void k_softmax_grad_rows4(const float *dy, const float *y, float *dx, int64_t rows,
                                     int64_t D4, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const f4 *gr = (const f4 *)dy + r * D4, *yr = (const f4 *)y + r * D4;
        f4 *xr = (f4 *)dx + r * D4;
        f4 cg[SM_V], cy[SM_V];
        float sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) {
                cg[k] = gr[i], cy[k] = yr[i];
                for (int e = 0; e < 4; e++) sum += log ? cg[k].v[e] : cg[k].v[e] * cy[k].v[e];
            }
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L) {
            f4 g = gr[i], a = yr[i];
            for (int e = 0; e < 4; e++) sum += log ? g.v[e] : g.v[e] * a.v[e];
        }
        sum = lanes_sum(sum);
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) xr[i] = softmax_grad4(cg[k], cy[k], sum, log);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L)
            xr[i] = softmax_grad4(gr[i], yr[i], sum, log);
    }
}

static bool softmax_rows4_ok(int64_t D, int64_t inner, const void *a, const void *b,
                             const void *c) {
    return inner == 1 && D % 4 == 0 && ((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) % 16 == 0;
}

extern "C" int cu_softmax(void *stream, const float *x, float *y, int64_t outer, int64_t D,
                          int64_t inner, int log) {
    if (outer * inner == 0) return 0;
    if (softmax_rows4_ok(D, inner, x, y, y)) {
        k_softmax_rows4<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(x, y, outer,
                                                                                       D / 4, log);
        return last_error();
    }
    if (inner == 1) {
        k_softmax_rows<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(x, y, outer,
                                                                                      D, log);
        return last_error();
    }
    k_softmax<<<blocks_for(outer * inner), THREADS, 0, (cudaStream_t)stream>>>(x, y, outer, D,
                                                                               inner, log);
    return last_error();
}

extern "C" int cu_softmax_grad(void *stream, const float *dy, const float *y, float *dx,
                               int64_t outer, int64_t D, int64_t inner, int log) {
    if (outer * inner == 0) return 0;
    if (softmax_rows4_ok(D, inner, dy, y, dx)) {
        k_softmax_grad_rows4<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
            dy, y, dx, outer, D / 4, log);
        return last_error();
    }
    if (inner == 1) {
        k_softmax_grad_rows<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
            dy, y, dx, outer, D, log);
        return last_error();
    }
    k_softmax_grad<<<blocks_for(outer * inner), THREADS, 0, (cudaStream_t)stream>>>(
        dy, y, dx, outer, D, inner, log);
    return last_error();
}

// ---- FusedAttention (cpu_attention.c): a warp per row of scores ----

// A warp per row of scores, 4 rows a block, the row in registers (ATT_V a lane: S <= 1024 on a
// GPU; the rest read again): mask, then row = exp(row - lse), lse = log(sum(exp(row))) computed
// (forward, into lse_out) or given (backward's recompute: the forward's probabilities again).
#define ATT_V 32
__global__ void k_att_softmax(float *s, int64_t rows, int64_t T, int64_t S, int64_t b0,
                              cu_att_mask m, const float *lse_in, float *lse_out) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        float *row = s + r * S;
        int64_t t = r % T, mo = att_mask_row(m, b0 + r / T, t), n = att_cols(m, t, S);
        float c[ATT_V], mx = -INFINITY;
        UNROLL
        for (int k = 0; k < ATT_V; k++) {
            int64_t j = lane + (int64_t)k * L;
            if (j < n) c[k] = att_masked(m, mo, t, j) ? m.fill : row[j], mx = fmaxf(mx, c[k]);
        }
        for (int64_t j = lane + (int64_t)ATT_V * L; j < n; j += L)
            mx = fmaxf(mx, att_masked(m, mo, t, j) ? m.fill : row[j]);
        float lse;
        if (lse_in) {
            lse = lse_in[r];
        } else {
            mx = lanes_max(mx);
            float sum = 0.0f;
            UNROLL
            for (int k = 0; k < ATT_V; k++)
                if (lane + (int64_t)k * L < n) sum += expf(c[k] - mx);
            for (int64_t j = lane + (int64_t)ATT_V * L; j < n; j += L)
                sum += expf((att_masked(m, mo, t, j) ? m.fill : row[j]) - mx);
            sum = lanes_sum(sum);
            lse = mx == -INFINITY ? -INFINITY : mx + logf(sum);
            if (lane == 0) lse_out[r] = lse;
        }
        for (int64_t j = lane + (int64_t)ATT_V * L; j < n; j += L) // the tail first: row[j] read
            row[j] = expf((att_masked(m, mo, t, j) ? m.fill : row[j]) - lse);
        UNROLL
        for (int k = 0; k < ATT_V; k++) {
            int64_t j = lane + (int64_t)k * L;
            if (j < n) row[j] = expf(c[k] - lse);
        }
    }
}

extern "C" int cu_att_softmax(void *stream, float *s, int64_t rows, int64_t T, int64_t S,
                              int64_t b0, cu_att_mask m, const float *lse_in, float *lse_out) {
    if (rows == 0) return 0;
    k_att_softmax<<<row_blocks_for(rows), ROW_BLOCK, 0, (cudaStream_t)stream>>>(s, rows, T, S, b0,
                                                                                m, lse_in, lse_out);
    return last_error();
}

__global__ void k_att_dropout(const float *p, float *out, int64_t n, cu_rng r, float ratio,
                              int64_t first) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    GRID_LOOP(i, n) out[i] = rng_uniform(key, (uint64_t)(first + i)) >= ratio ? p[i] * scale : 0.0f;
}
__global__ void k_att_dropout4(const f4 *p, f4 *out, int64_t n4, cu_rng r, float ratio,
                               int64_t first) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    GRID_LOOP(q, n4) {
        f4 a = p[q], o;
        for (int e = 0; e < 4; e++)
            o.v[e] =
                rng_uniform(key, (uint64_t)(first + q * 4 + e)) >= ratio ? a.v[e] * scale : 0.0f;
        out[q] = o;
    }
}

// Blocked rows: a warp per row, its first att_cols columns alone.
__global__ void k_att_dropout_rows(const float *p, float *out, int64_t rows, int64_t T, int64_t S,
                                   cu_att_mask m, cu_rng r, float ratio, int64_t first) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(q, rows) {
        int64_t n = att_cols(m, q % T, S);
        for (int64_t j = lane; j < n; j += L) {
            int64_t i = q * S + j;
            out[i] = rng_uniform(key, (uint64_t)(first + i)) >= ratio ? p[i] * scale : 0.0f;
        }
    }
}

extern "C" int cu_att_dropout(void *stream, const float *p, float *out, int64_t rows, int64_t T,
                              int64_t S, int64_t blk, cu_rng key, float ratio, int64_t first) {
    int64_t n = rows * S;
    if (n == 0) return 0;
    if (blk > 0) {
        cu_att_mask m = {};
        m.blk = blk;
        k_att_dropout_rows<<<row_blocks_for(rows), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
            p, out, rows, T, S, m, key, ratio, first);
        return last_error();
    }
    if (vec4_ok(n, p, out, out)) {
        k_att_dropout4<<<blocks_for(n / 4), THREADS, 0, (cudaStream_t)stream>>>(
            (const f4 *)p, (f4 *)out, n / 4, key, ratio, first);
        return last_error();
    }
    k_att_dropout<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(p, out, n, key, ratio,
                                                                       first);
    return last_error();
}

__global__ void k_att_ptrs(const float **out, int64_t nblk, int64_t cb, int64_t b0, cu_att_ptrs p) {
    GRID_LOOP(x, nblk * 3 * cb) {
        int64_t i = x / (3 * cb), o = x / cb % 3, bb = b0 + x % cb - p.first[o];
        out[x] = p.base[o] + bb / p.h[o] * p.s1[o] + bb % p.h[o] * p.s2[o] + i * p.step[o];
    }
}

extern "C" int cu_att_ptrs_fill(void *stream, const float **out, int64_t nblk, int64_t cb,
                                int64_t b0, cu_att_ptrs p) {
    if (nblk * cb == 0) return 0;
    k_att_ptrs<<<blocks_for(nblk * 3 * cb), THREADS, 0, (cudaStream_t)stream>>>(out, nblk, cb, b0,
                                                                                p);
    return last_error();
}

// dS = P (dP' - D) per row, D = sum(dY Y) over the row's dv outputs, dP' = dP with the forward's
// dropout; 0 where masked. A warp per row, 4 rows a block.
__global__ void k_att_ds(float *ds, const float *p, const float *dy, const float *y, int64_t rows,
                         int64_t T, int64_t S, int64_t dv, int64_t H, int64_t b0, cu_att_mask m,
                         cu_rng r, float ratio) {
    float scale = ratio > 0.0f ? 1.0f / (1.0f - ratio) : 1.0f;
    uint64_t key = ratio > 0.0f ? rng_key(r) : 0;
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        int64_t b = b0 + r / T, t = r % T, mo = att_mask_row(m, b, t);
        // row t of batch b in dY and Y: [b.., T, dv] or (H > 0) [N, T, H, dv]
        int64_t yo = H ? ((b / H * T + t) * H + b % H) * dv : (b * T + t) * dv;
        float D = 0.0f;
        for (int64_t i = lane; i < dv; i += L) D += dy[yo + i] * y[yo + i];
        D = lanes_sum(D);
        uint64_t at = (uint64_t)(b * T * S + t * S);
        for (int64_t j = lane, n = att_cols(m, t, S); j < n; j += L) {
            int64_t k = r * S + j;
            float dp = ds[k];
            if (ratio > 0.0f) dp = rng_uniform(key, at + (uint64_t)j) >= ratio ? dp * scale : 0.0f;
            ds[k] = att_masked(m, mo, t, j) ? 0.0f : p[k] * (dp - D);
        }
    }
}

extern "C" int cu_att_ds(void *stream, float *ds, const float *p, const float *dy, const float *y,
                         int64_t rows, int64_t T, int64_t S, int64_t dv, int64_t H, int64_t b0,
                         cu_att_mask m, cu_rng key, float ratio) {
    if (rows == 0) return 0;
    k_att_ds<<<row_blocks_for(rows), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
        ds, p, dy, y, rows, T, S, dv, H, b0, m, key, ratio);
    return last_error();
}
