// cuda_loss_update.cu — SoftmaxCrossEntropyLoss and its gradient, the optimizers' updates
// (SGDMomentum, AdamW; multi-tensor), the gradient scaler, ClipGradNorm's sums.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

// ---- SoftmaxCrossEntropyLoss (cpu_loss.c) ----
__device__ static int64_t sce_label(const void *labels, int l64, int64_t i, int has_ig, int64_t ig,
                                    int64_t C) {
    int64_t l = l64 ? ((const int64_t *)labels)[i] : ((const int32_t *)labels)[i];
    if (has_ig && l == ig) return -1;
    if (l < 0 || l >= C) return -2;
    return l;
}

// A warp per row, several rows a block (a language model's rows are vocabulary-wide): the row's
// max and sum of exponentials in one pass (the sum rescaled when the max grows), log-probabilities
// in a second, float arithmetic (as PyTorch's kernel); the per-row loss in double for the total.
__global__ void k_sce_rows(const float *__restrict__ s, const void *labels, int l64, int64_t N,
                           int64_t C, int has_ig, int64_t ig, int red, float *loss,
                           float *__restrict__ lp, double *ws) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(i, N) {
        const float *row = s + i * C;
        float m = -INFINITY, se = 0.0f;
        for (int64_t c0 = lane; c0 < C; c0 += 4 * (int64_t)L) { // 4 loads in flight a lane
            float x[4], bm = -INFINITY;
            for (int u = 0; u < 4; u++) {
                int64_t c = c0 + (int64_t)u * L;
                x[u] = c < C ? row[c] : -INFINITY;
                bm = x[u] > bm || x[u] != x[u] ? x[u] : bm; // a NaN wins (and propagates)
            }
            if (bm == -INFINITY) continue;
            float nm = bm > m || bm != bm ? bm : m;
            se = se * expf(m - nm);
            for (int u = 0; u < 4; u++) se += expf(x[u] - nm);
            m = nm;
        }
        float mx = lanes_max(m);
        se = lanes_sum(m == -INFINITY ? 0.0f : se * expf(m - mx));
        float lse = mx + logf(se);
        if (lp)
            for (int64_t c = lane; c < C; c += L) lp[i * C + c] = row[c] - lse;
        if (lane == 0) {
            int64_t l = sce_label(labels, l64, i, has_ig, ig, C);
            double li = l >= 0 ? (double)lse - (double)row[l] : l == -2 ? NAN : 0.0;
            if (red == 2) loss[i] = (float)li;
            ws[i] = li;
        }
    }
}

__global__ void k_sce_total(const void *labels, int l64, int64_t N, int64_t C, int has_ig,
                            int64_t ig, int red, float *loss, const double *ws) {
    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) {
        total += ws[i];
        count += sce_label(labels, l64, i, has_ig, ig, C) != -1;
    }
    if (red == 0) loss[0] = (float)(total / (double)count);
    else if (red == 1) loss[0] = (float)total;
}

extern "C" int cu_sce(void *stream, const float *s, const void *labels, int labels64, int64_t N,
                      int64_t C, int has_ignore, int64_t ignore, int reduction, float *loss,
                      float *log_prob, double *ws) {
    cudaStream_t st = (cudaStream_t)stream;
    if (N > 0)
        k_sce_rows<<<row_blocks_for(N), ROW_BLOCK, 0, st>>>(s, labels, labels64, N, C, has_ignore,
                                                            ignore, reduction, loss, log_prob, ws);
    if (reduction != 2)
        k_sce_total<<<1, 1, 0, st>>>(labels, labels64, N, C, has_ignore, ignore, reduction, loss,
                                     ws);
    return last_error();
}

__global__ void k_sce_count(const void *labels, int l64, int64_t N, int64_t C, int has_ig,
                            int64_t ig, double *ws) {
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) count += sce_label(labels, l64, i, has_ig, ig, C) != -1;
    ws[0] = (double)count;
}

// a warp per row: no division per element; d = scale (exp(lp) - [c == label]) / count
__global__ void k_sce_grad(const float *__restrict__ lp, const void *labels, int l64, int64_t N,
                           int64_t C, int has_ig, int64_t ig, int red, float *__restrict__ d,
                           const double *ws, const float *scale) {
    float f = (float)((scale ? (double)*scale : 1.0) / (red == 0 ? ws[0] : 1.0));
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(i, N) {
        int64_t l = sce_label(labels, l64, i, has_ig, ig, C);
        const float *r = lp + i * C;
        float *dr = d + i * C;
        for (int64_t c = lane; c < C; c += L)
            dr[c] = l == -2 ? NAN : l < 0 ? 0.0f : f * (expf(r[c]) - (c == l ? 1.0f : 0.0f));
    }
}

extern "C" int cu_sce_grad(void *stream, const float *lp, const void *labels, int labels64,
                           int64_t N, int64_t C, int has_ignore, int64_t ignore, int reduction,
                           float *d, double *ws, const float *scale) {
    cudaStream_t st = (cudaStream_t)stream;
    k_sce_count<<<1, 1, 0, st>>>(labels, labels64, N, C, has_ignore, ignore, ws);
    if (N * C > 0)
        k_sce_grad<<<row_blocks_for(N), ROW_BLOCK, 0, st>>>(lp, labels, labels64, N, C, has_ignore,
                                                            ignore, reduction, d, ws, scale);
    return last_error();
}

// ---- SGDMomentum, AdamW, ClipGradNorm (cpu_update.c) ----
// Multi-tensor apply: one launch updates up to CU_UPDATE_LAUNCH parameters. The table goes
// by value (kernel parameters); parameter j owns the virtual blocks [first[j], first[j + 1])
// of UPDATE_CHUNK elements each, which the grid walks (grid-stride over virtual blocks).
#define UPDATE_CHUNK (4 * THREADS)
struct update_table {
    int k;
    cu_update_member m[CU_UPDATE_LAUNCH];
    int64_t first[CU_UPDATE_LAUNCH + 1];
};

// The member and element range of virtual block vb (a linear scan: a block's, not an
// element's).
__device__ static inline int update_block(const update_table &t, int64_t vb, int64_t &lo,
                                          int64_t &hi) {
    int j = 0;
    while (vb >= t.first[j + 1]) j++;
    lo = (vb - t.first[j]) * UPDATE_CHUNK;
    hi = lo + UPDATE_CHUNK < t.m[j].n ? lo + UPDATE_CHUNK : t.m[j].n;
    return j;
}

// The grid's walk over the virtual blocks, p the block's member.
#define UPDATE_BLOCKS(t, p, lo, hi)                                                                \
    for (int64_t vb = blockIdx.x, lo, hi; vb < (t).first[(t).k]; vb += gridDim.x)                  \
        for (const cu_update_member *p = &(t).m[update_block((t), vb, lo, hi)]; p; p = NULL)

// A skipped step (GradScaler found inf/NaN): outputs = inputs (copied unless in place).
__device__ static inline void update_keep(const cu_update_member &p, int64_t lo, int64_t hi) {
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        if (p.wo != p.w) p.wo[i] = p.w[i];
        if (p.mo != p.m) p.mo[i] = p.m[i];
        if (p.v && p.vo != p.v) p.vo[i] = p.v[i];
    }
}

__global__ void k_sgd(update_table t, const float *scale, float lr, float mom, float wd) {
    float s = scale ? *scale : 1.0f;
    UPDATE_BLOCKS(t, p, lo, hi) {
        if (s == 0.0f) {
            update_keep(*p, lo, hi);
            continue;
        }
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            float g = p->dw[i] * s + wd * p->w[i];
            float mi = mom * p->m[i] + g;
            p->mo[i] = mi;
            p->wo[i] = p->w[i] - lr * mi;
        }
    }
}

// cpu_adamw's bias corrections, in double; t from the member's own count when it has one.
__global__ void k_adamw(update_table t, const float *scale, float b1, float b2, float eps,
                        float decay, float lr, const int64_t *step) {
    float s = scale ? *scale : 1.0f;
    UPDATE_BLOCKS(t, p, lo, hi) {
        if (s == 0.0f) {
            update_keep(*p, lo, hi);
            continue;
        }
        double tt = (p->count ? (double)*p->count : (double)*step) + 1.0;
        float step_size = (float)((double)lr / (1.0 - pow((double)b1, tt)));
        float bc2_sqrt = (float)sqrt(1.0 - pow((double)b2, tt));
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            float g = p->dw[i] * s;
            float mi = p->m[i] + (1.0f - b1) * (g - p->m[i]);
            float vi = b2 * p->v[i] + (1.0f - b2) * g * g;
            p->mo[i] = mi;
            p->vo[i] = vi;
            p->wo[i] = p->w[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
        }
    }
}

// The counts after the update (a kernel of its own: the update kernel's threads all read them).
__global__ void k_adamw_counts(update_table t, const float *scale) {
    GRID_LOOP(j, t.k) {
        float c = *t.m[j].count;
        *t.m[j].count_out = scale && *scale == 0.0f ? c : c + 1.0f;
    }
}

// Members [from, from + k) as one table.
static update_table update_table_of(const cu_update_member *mem, int k) {
    update_table t = {};
    t.k = k;
    for (int j = 0; j < k; j++) {
        t.m[j] = mem[j];
        t.first[j + 1] = t.first[j] + (mem[j].n + UPDATE_CHUNK - 1) / UPDATE_CHUNK;
    }
    return t;
}

static unsigned update_blocks(const update_table &t) {
    int64_t b = t.first[t.k];
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 16 ? 65535LL * 16 : b);
}

extern "C" int cu_sgd_momentum(void *stream, const cu_update_member *mem, int k, const float *scale,
                               float lr, float mom, float wd) {
    for (int from = 0; from < k; from += CU_UPDATE_LAUNCH) {
        update_table t =
            update_table_of(mem + from, k - from < CU_UPDATE_LAUNCH ? k - from : CU_UPDATE_LAUNCH);
        if (t.first[t.k] > 0)
            k_sgd<<<update_blocks(t), THREADS, 0, (cudaStream_t)stream>>>(t, scale, lr, mom, wd);
    }
    return last_error();
}

extern "C" int cu_adamw(void *stream, const cu_update_member *mem, int k, const float *scale,
                        float b1, float b2, float eps, float decay, float lr, const int64_t *step) {
    cudaStream_t st = (cudaStream_t)stream;
    for (int from = 0; from < k; from += CU_UPDATE_LAUNCH) {
        update_table t =
            update_table_of(mem + from, k - from < CU_UPDATE_LAUNCH ? k - from : CU_UPDATE_LAUNCH);
        if (t.first[t.k] > 0)
            k_adamw<<<update_blocks(t), THREADS, 0, st>>>(t, scale, b1, b2, eps, decay, lr, step);
        if (t.m[0].count) k_adamw_counts<<<1, WARP, 0, st>>>(t, scale);
    }
    return last_error();
}

/* part[j] = sum of g[i]^2 over i = j mod P (P slots, each in index order),
 * then acc = (first ? 0 : acc) + part summed in slot order: the same bits
 * on every run and launch shape. */
__global__ void k_sumsq_part(const float *g, int64_t n, double *part, int64_t P) {
    GRID_LOOP(j, P) {
        double s = 0;
        for (int64_t i = j; i < n; i += P) s += (double)g[i] * g[i];
        part[j] = s;
    }
}

__global__ void k_sumsq_total(const double *part, int64_t P, double *acc, int first) {
    double s = first ? 0.0 : *acc;
    for (int64_t j = 0; j < P; j++) s += part[j];
    *acc = s;
}

__global__ void k_clip_scale(const double *acc, float *scale, float max_norm, const float *pre) {
    double p = pre ? (double)*pre : 1.0;
    if (p == 0.0) { // a skipped step (GradScaler)
        *scale = 0.0f;
        return;
    }
    double coef = (double)max_norm / (sqrt(*acc) * p + 1e-6);
    *scale = (float)(p * (coef < 1.0 ? coef : 1.0));
}

// cpu_grad_scaler: coef = 1/S when the sum of squares is finite, else 0; S, T updated.
__global__ void k_grad_scaler(const double *acc, const float *s_in, const float *t_in, float *coef,
                              float *s_out, float *t_out, float growth, float backoff,
                              float interval) {
    float s = *s_in, t = *t_in;
    bool finite = isfinite(*acc);
    *coef = finite ? 1.0f / s : 0.0f;
    if (!finite) {
        s *= backoff;
        t = 0.0f;
    } else if ((t += 1.0f) >= interval) {
        if (isfinite(s * growth)) s *= growth;
        t = 0.0f;
    }
    *s_out = s;
    *t_out = t;
}

extern "C" int cu_grad_scaler(void *stream, const double *acc, const float *s_in, const float *t_in,
                              float *coef, float *s_out, float *t_out, float growth, float backoff,
                              float interval) {
    k_grad_scaler<<<1, 1, 0, (cudaStream_t)stream>>>(acc, s_in, t_in, coef, s_out, t_out, growth,
                                                     backoff, interval);
    return last_error();
}

extern "C" int cu_sumsq(void *stream, const float *g, int64_t n, double *ws, int first) {
    cudaStream_t st = (cudaStream_t)stream;
    k_sumsq_part<<<blocks_for(CU_SUMSQ_SLOTS), THREADS, 0, st>>>(g, n, ws + 1, CU_SUMSQ_SLOTS);
    k_sumsq_total<<<1, 1, 0, st>>>(ws + 1, CU_SUMSQ_SLOTS, ws, first);
    return last_error();
}

extern "C" int cu_clip_scale(void *stream, const double *acc, float *scale, float max_norm,
                             const float *pre) {
    k_clip_scale<<<1, 1, 0, (cudaStream_t)stream>>>(acc, scale, max_norm, pre);
    return last_error();
}
