// cuda_batch_norm.cu — BatchNormalization / BatchNormRelu and their gradients (frozen or
// batch statistics, NCHW and channels-last), the saved variance.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

// OC_BN_MATH=float: the channels-last BatchNorm[Relu] passes' per-element arithmetic in float
// (the _nhwc kernels' FM 1: y = (x - mean) a + b in float where the default's arithmetic is
// double, the cpu kernels'; every sum still gathered in double, four rows' terms at a time).
// An experiment until a GPU times both (tools/gpu-check-headline.sh bn_sweep).
static bool bn_float_math(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("OC_BN_MATH");
        v = e && strcmp(e, "float") == 0;
    }
    return v == 1;
}

// OC_BN_V8=1: the channels-last BN passes 8 elements a thread on half data (16-byte accesses,
// not 8) where C is a multiple of 8 and every pointer (NULL ones ignored) 16-byte aligned;
// an experiment, as OC_BN_MATH.
static bool bn_v8(int64_t C, size_t es, const void *a, const void *b, const void *c) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("OC_BN_V8");
        v = e && e[0] == '1';
    }
    uintptr_t u = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c;
    return v == 1 && es == 2 && C % 8 == 0 && u % 16 == 0;
}

// ---- BatchNormalizationGrad, frozen statistics (cpu_batch_norm_grad) ----
__global__ void k_bn_frozen_sums(const float *dy, const float *x, const float *mean,
                                 const float *var, float eps, float *ds, float *db, int64_t N,
                                 int64_t C, int64_t S) {
    GRID_LOOP(c, C) { // one thread per channel, double sums in the cpu kernel's order
        double invstd = 1.0 / sqrt((double)var[c] + (double)eps), sdy = 0, sdyx = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < S; i++) {
                int64_t off = (n * C + c) * S + i;
                sdy += dy[off];
                sdyx += dy[off] * ((double)x[off] - mean[c]) * invstd;
            }
        if (ds) ds[c] = (float)sdyx;
        if (db) db[c] = (float)sdy;
    }
}

__global__ void k_bn_frozen_dx(const float *dy, const float *scale, const float *var, float eps,
                               float *dx, int64_t C, int64_t S, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t c = (i / S) % C;
        double invstd = 1.0 / sqrt((double)var[c] + (double)eps);
        dx[i] = (float)(scale[c] * invstd * dy[i]);
    }
}

extern "C" int cu_bn_frozen_grad(void *stream, const float *dy, const float *x, const float *scale,
                                 const float *mean, const float *var, float eps, float *dx,
                                 float *ds, float *db, int64_t N, int64_t C, int64_t S) {
    cudaStream_t s = (cudaStream_t)stream;
    if (C > 0 && (ds || db))
        k_bn_frozen_sums<<<blocks_for(C), THREADS, 0, s>>>(dy, x, mean, var, eps, ds, db, N, C, S);
    if (dx && N * C * S > 0)
        k_bn_frozen_dx<<<blocks_for(N * C * S), THREADS, 0, s>>>(dy, scale, var, eps, dx, C, S,
                                                                 N * C * S);
    return last_error();
}

// ---- BatchNormRelu and its gradient (cpu_norm.c bn_forward / bn_backward) ----
// Statistics: part p of channel c covers the images [N p / P, N (p + 1) / P) (P from
// cuda_norm_act.c: about 4096 elements each); one warp per part walks its rows (n, c), each S
// contiguous elements, lanes striding by 32 with four loads in flight, sums in double, a fixed
// shuffle order; a warp per channel then adds the parts in order: deterministic, and every SM
// busy (ResNet-50's stem at batch 640: 40960 warps). The elementwise passes go row by row (one
// block per (n, c) row: no division per element). Channels-last: the _nhwc kernels below.
// BN's value of x (the forward's arithmetic: the fused gradient's Relu mask is Y > 0 exactly).
__device__ static inline float bn_value(float x, double m, double a_c, double b_c) {
    return (float)(((double)x - m) * a_c + b_c);
}

// v rounded as storing it in a T rounds it.
template <typename T> __device__ static inline float stored_as(float v) {
    T t;
    st(&t, 0, v);
    return ld(&t, 0);
}

// The BN output's gradient: dy where BN(x) > 0 (BatchNormRelu; a_c = invstd scale, b_c =
// bias), BN(x) rounded as Y was stored, so the mask is Y > 0 exactly.
template <typename T>
__device__ static inline float bn_masked(float dy, float x, double m, double a_c, double b_c) {
    return oc_relu_grad(dy, stored_as<T>(bn_value(x, m, a_c, b_c)));
}

// The float forms (FM 1): channel c's mean mf, a = invstd scale and bias b as floats (rounded
// once from the double statistics); the forward and the gradient's mask share this function,
// so the mask is still Y > 0 exactly.
struct bn_fc {
    float m, a, b, is;
};
__device__ static inline bn_fc bn_fcoef(const double *stats, const float *scale, const float *bias,
                                        int64_t c) {
    double is = stats[2 * c + 1];
    return bn_fc{(float)stats[2 * c], (float)(is * scale[c]), bias ? bias[c] : 0.0f, (float)is};
}
__device__ static inline float bn_value_f(float x, const bn_fc &f) {
    return fmaf(x - f.m, f.a, f.b);
}
template <typename T>
__device__ static inline float bn_masked_f(float dy, float x, const bn_fc &f) {
    return oc_relu_grad(dy, stored_as<T>(bn_value_f(x, f)));
}

// One element's terms of the sums (GRAD 0: x and x^2; else dz and dz xhat), dy read only when
// GRAD.
template <int GRAD, typename T>
__device__ static inline void bn_acc_v(float dy, float x, double m, double is, double a_c,
                                       double b_c, double &s, double &q) {
    if (GRAD) { // sum dz, sum dz xhat
        float d = GRAD == 1 ? bn_masked<T>(dy, x, m, a_c, b_c) : dy;
        s += d;
        q += d * ((double)x - m) * is;
    } else { // sum x, sum x^2
        double v = x;
        s += v;
        q += v * v;
    }
}

// Channel c's mean, 1/sqrt(var + eps) and (GRAD 1) the mask's a_c, b_c.
#define BN_CHANNEL(c)                                                                              \
    double m = GRAD ? stats[2 * (c)] : 0, is = GRAD ? stats[2 * (c) + 1] : 0;                      \
    double a_c = GRAD == 1 ? is * scale[c] : 0, b_c = GRAD == 1 ? (double)bias[c] : 0

// V elements a lane (vec_of: S a multiple of 4, the tensors aligned): the lanes' sums then
// differ in order from V 1's, deterministic either way.
template <int GRAD, int V, typename T>
__global__ void k_bn_parts(const T *dy, const T *x, const double *stats, const float *scale,
                           const float *bias, int64_t N, int64_t C, int64_t S, int64_t P,
                           double *part) {
    ROW_LOOP(u, C * P) {
        int64_t c = u / P, p = u % P;
        BN_CHANNEL(c);
        double s0 = 0, q0 = 0, s1 = 0, q1 = 0;
        int64_t B = (int64_t)blockDim.x * V;
        float d[V] = {}, xv[V];
#define BN_AT(o, S_, Q_)                                                                           \
    do {                                                                                           \
        ldv<T, V>(x, (o), xv);                                                                     \
        if (GRAD) ldv<T, V>(dy, (o), d);                                                           \
        for (int k = 0; k < V; k++) bn_acc_v<GRAD, T>(d[k], xv[k], m, is, a_c, b_c, S_, Q_);       \
    } while (0)
        for (int64_t n = N * p / P; n < N * (p + 1) / P; n++) {
            int64_t row = (n * C + c) * S, i = (int64_t)threadIdx.x * V;
            for (; i + 3 * B < S; i += 4 * B) { // four independent loads per lane
                BN_AT(row + i, s0, q0);
                BN_AT(row + i + B, s1, q1);
                BN_AT(row + i + 2 * B, s0, q0);
                BN_AT(row + i + 3 * B, s1, q1);
            }
            for (; i < S; i += B) BN_AT(row + i, s0, q0);
        }
#undef BN_AT
        double s = warp_sum(s0 + s1), q = warp_sum(q0 + q1);
        if (threadIdx.x == 0) part[2 * u] = s, part[2 * u + 1] = q;
    }
}

// One row's V channels into the float sums of k_bn_parts_nhwc's FM 1: x and x^2 (GRAD 0),
// else dz (masked: GRAD 1) and dz xhat.
template <int GRAD, int V, typename T>
__device__ static inline void bn_row_f(const T *dy, const T *x, int64_t i, const bn_fc *f,
                                       float *fs, float *fq) {
    float d[V], xv[V];
    ldv<T, V>(x, i, xv);
    if (GRAD) ldv<T, V>(dy, i, d);
    UNROLL
    for (int k = 0; k < V; k++) {
        if (!GRAD) {
            fs[k] += xv[k];
            fq[k] = fmaf(xv[k], xv[k], fq[k]);
            continue;
        }
        float dz = GRAD == 1 ? bn_masked_f<T>(d[k], xv[k], f[k]) : d[k];
        fs[k] += dz;
        fq[k] = fmaf(dz, (xv[k] - f[k].m) * f[k].is, fq[k]);
    }
}

// The statistics' parts (x as rows of C): part p covers the rows [R p, R (p + 1)), a thread
// per (p, group of V channels) — a warp reads neighbouring channels of a row: coalesced —
// walking them four rows at a time (rows alternating between two sums per channel), sums in
// double, into the same part[2 (c P + p)] layout as k_bn_parts.
// FM 1: each element's terms in float, four rows' worth summed in float, then added to the
// double sums (the statistics too: E[x^2] - mean^2 is still taken in double, over sums whose
// terms lost at most float rounding).
template <int GRAD, int V, typename T, int FM>
__global__ void k_bn_parts_nhwc(const T *dy, const T *x, const double *stats, const float *scale,
                                const float *bias, int64_t rows, int64_t C, int64_t R, int64_t P,
                                double *part) {
    const int64_t G = C / V;
    GRID_LOOP(u, G * P) {
        int64_t c0 = u % G * V, p = u / G, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double m[V], is[V], a_c[V], b_c[V], s0[V], q0[V], s1[V], q1[V];
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = c0 + k;
            m[k] = GRAD ? stats[2 * c] : 0, is[k] = GRAD ? stats[2 * c + 1] : 0;
            a_c[k] = GRAD == 1 ? is[k] * scale[c] : 0, b_c[k] = GRAD == 1 ? (double)bias[c] : 0;
            s0[k] = q0[k] = s1[k] = q1[k] = 0;
        }
        float d[V] = {}, xv[V];
        if (FM) {
            bn_fc f[V];
            UNROLL
            for (int k = 0; k < V; k++)
                f[k] = GRAD ? bn_fcoef(stats, scale, GRAD == 1 ? bias : NULL, c0 + k) : bn_fc{};
            int64_t r = p * R;
            for (; r + 3 < end; r += 4) { // four rows' loads in flight, summed in float
                float fs[V] = {}, fq[V] = {};
                UNROLL
                for (int j = 0; j < 4; j++) bn_row_f<GRAD, V>(dy, x, (r + j) * C + c0, f, fs, fq);
                UNROLL
                for (int k = 0; k < V; k++) s0[k] += fs[k], q0[k] += fq[k];
            }
            for (; r < end; r++) {
                float fs[V] = {}, fq[V] = {};
                bn_row_f<GRAD, V>(dy, x, r * C + c0, f, fs, fq);
                UNROLL
                for (int k = 0; k < V; k++) s0[k] += fs[k], q0[k] += fq[k];
            }
        } else {
#define BN_ROW(row, S, Q)                                                                          \
    do {                                                                                           \
        ldv<T, V>(x, (row)*C + c0, xv);                                                            \
        if (GRAD) ldv<T, V>(dy, (row)*C + c0, d);                                                  \
        UNROLL for (int k = 0; k < V; k++)                                                         \
            bn_acc_v<GRAD, T>(d[k], xv[k], m[k], is[k], a_c[k], b_c[k], S[k], Q[k]);               \
    } while (0)
            int64_t r = p * R;
            for (; r + 3 < end; r += 4) { // four independent loads per thread (as k_bn_parts)
                BN_ROW(r, s0, q0);
                BN_ROW(r + 1, s1, q1);
                BN_ROW(r + 2, s0, q0);
                BN_ROW(r + 3, s1, q1);
            }
            for (; r < end; r++) BN_ROW(r, s0, q0);
#undef BN_ROW
        }
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = c0 + k;
            part[2 * (c * P + p)] = s0[k] + s1[k], part[2 * (c * P + p) + 1] = q0[k] + q1[k];
        }
    }
}

// stats[2c], stats[2c + 1]: the mean and 1 / sqrt(var + eps) BN normalises with.
// A channel's parts added up: a warp per channel, lane l adding parts l, l + 32, .. in order,
// then the lanes in warp_sum's fixed order (deterministic; channels-last nodes have up to
// cu_nhwc_threads() / C parts).
__device__ static inline void parts_sum(const double *part, int64_t c, int64_t P, double &s,
                                        double &q) {
    s = 0, q = 0;
    for (int64_t p = threadIdx.x; p < P; p += blockDim.x)
        s += part[2 * (c * P + p)], q += part[2 * (c * P + p) + 1];
    s = warp_sum(s), q = warp_sum(q);
}

// keep / keepf (may be NULL): the statistics stash's two forms (cuda_bn_stash.c).
__global__ void k_bn_finish_stats(const double *part, int64_t C, int64_t P, int64_t M, float eps,
                                  int train, const float *rm, const float *rv, float momentum,
                                  float *om, float *ov, double *stats, double *keep, float *keepf) {
    ROW_LOOP(c, C) {
        double s = 0, q = 0;
        if (train) parts_sum(part, c, P, s, q);
        if (threadIdx.x != 0) continue;
        double mean = rm ? rm[c] : 0, var = rv ? rv[c] : 1;
        if (train) {
            mean = M > 0 ? s / (double)M : 0;
            var = M > 0 ? q / (double)M - mean * mean : 0;
            if (var < 0) var = 0;
            double unbias = M > 1 ? (double)M / (double)(M - 1) : 1.0;
            // om / ov may be rm / rv: each thread reads its channel before writing it
            if (om) om[c] = momentum * rm[c] + (1.0f - momentum) * (float)mean;
            if (ov) ov[c] = momentum * rv[c] + (1.0f - momentum) * (float)(var * unbias);
        }
        stats[2 * c] = mean;
        stats[2 * c + 1] = 1.0 / sqrt(var + (double)eps);
        if (keep) keep[2 * c] = stats[2 * c], keep[2 * c + 1] = stats[2 * c + 1];
        if (keepf) keepf[c] = (float)stats[2 * c], keepf[C + c] = (float)stats[2 * c + 1];
    }
}

// One block per row (n, c), V elements a thread (4 where S is a multiple of 4 and the
// tensors aligned: vec_of); r: the residual or NULL; RELU 0: BatchNormalization alone.
template <int RELU, int V, typename T>
__global__ void k_bn_relu_apply(const T *x, const T *r, const double *stats, const float *scale,
                                const float *bias, T *y, int64_t C, int64_t S, int64_t rows) {
    ROW_LOOP(row, rows) {
        int64_t c = row % C, o = row * S;
        double m = stats[2 * c], a_c = stats[2 * c + 1] * scale[c], b_c = bias[c];
        for (int64_t i = threadIdx.x * V; i < S; i += blockDim.x * V) {
            float v[V], rv[V];
            ldv<T, V>(x, o + i, v);
            if (r) ldv<T, V>(r, o + i, rv);
            UNROLL
            for (int k = 0; k < V; k++) {
                float u = bn_value(v[k], m, a_c, b_c);
                if (r) u = u + rv[k];
                v[k] = RELU ? oc_relu(u) : u;
            }
            stv<T, V>(y, o + i, v);
        }
    }
}

// Channels-last passes over every element: the grid as gx threads across the G = C / V
// channel groups of a row by ry down the rows (threads past gx ry idle; on the emulator one
// thread walks everything), so a thread keeps its channels' coefficients in registers and
// divides nothing per element.
struct cg_walk {
    int64_t g0, gx, r0, ry;
    bool idle;
};
__device__ static inline cg_walk cg_walk_of(int64_t G) {
    int64_t T = (int64_t)gridDim.x * blockDim.x, t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t gx = G < T ? G : T, ry = T / gx;
    return cg_walk{t % gx, gx, t / gx, ry, t >= gx * ry};
}
// At most 4096 blocks of THREADS (a million threads, more than any GPU holds at once), so a
// thread walks several rows and its coefficient loads pay for themselves.
static unsigned cg_blocks(int64_t rows, int64_t G) {
    unsigned b = blocks_for(rows * G);
    return b < 4096 ? b : 4096;
}

// k_bn_relu_apply's arithmetic, channels-last.
template <int RELU, int V, typename T, int FM>
__global__ void k_bn_relu_apply_nhwc(const T *x, const T *r, const double *stats,
                                     const float *scale, const float *bias, T *y, int64_t C,
                                     int64_t rows) {
    cg_walk w = cg_walk_of(C / V);
    if (w.idle) return;
    for (int64_t g = w.g0; g < C / V; g += w.gx) {
        double m[V], a_c[V], b_c[V];
        bn_fc f[V];
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = g * V + k;
            m[k] = stats[2 * c], a_c[k] = stats[2 * c + 1] * scale[c], b_c[k] = bias[c];
            if (FM) f[k] = bn_fcoef(stats, scale, bias, c);
        }
        for (int64_t row = w.r0; row < rows; row += w.ry) {
            int64_t i = row * C + g * V;
            float v[V], rv[V];
            ldv<T, V>(x, i, v);
            if (r) ldv<T, V>(r, i, rv);
            UNROLL
            for (int k = 0; k < V; k++) {
                float o = FM ? bn_value_f(v[k], f[k]) : bn_value(v[k], m[k], a_c[k], b_c[k]);
                if (r) o = o + rv[k];
                v[k] = RELU ? oc_relu(o) : o;
            }
            stv<T, V>(y, i, v);
        }
    }
}

// The channels-last launches, FM from OC_BN_MATH (bn_float_math).
template <int GRAD, int V, typename T>
static void bn_parts_nhwc(cudaStream_t st, bool fm, const T *dy, const T *x, const double *stats,
                          const float *scale, const float *bias, int64_t rows, int64_t C, int64_t R,
                          int64_t P, double *part) {
    if (fm)
        k_bn_parts_nhwc<GRAD, V, T, 1><<<blocks_for(C / V * P), THREADS, 0, st>>>(
            dy, x, stats, scale, bias, rows, C, R, P, part);
    else
        k_bn_parts_nhwc<GRAD, V, T, 0><<<blocks_for(C / V * P), THREADS, 0, st>>>(
            dy, x, stats, scale, bias, rows, C, R, P, part);
}
template <int RELU, int V, typename T>
static void bn_apply_nhwc(cudaStream_t st, bool fm, const T *x, const T *r, const double *stats,
                          const float *scale, const float *bias, T *y, int64_t C, int64_t rows) {
    if (fm)
        k_bn_relu_apply_nhwc<RELU, V, T, 1>
            <<<cg_blocks(rows, C / V), THREADS, 0, st>>>(x, r, stats, scale, bias, y, C, rows);
    else
        k_bn_relu_apply_nhwc<RELU, V, T, 0>
            <<<cg_blocks(rows, C / V), THREADS, 0, st>>>(x, r, stats, scale, bias, y, C, rows);
}
// The parts of the sums (statistics: GRAD 0; the gradient's: 1 or 2), either layout.
template <int GRAD, typename T>
static void bn_parts(cudaStream_t st, int nhwc, const T *dy, const T *x, const double *stats,
                     const float *scale, const float *bias, int64_t N, int64_t C, int64_t S,
                     int64_t P, double *part) {
    int64_t R = (N * S + P - 1) / P;
    bool fm = bn_float_math();
    if (nhwc && bn_v8(C, sizeof(T), x, dy, NULL)) {
        if constexpr (sizeof(T) == 2)
            bn_parts_nhwc<GRAD, 8, T>(st, fm, dy, x, stats, scale, bias, N * S, C, R, P, part);
    } else if (nhwc && vec_of(C, sizeof(T), x, dy, NULL, NULL) == 4)
        bn_parts_nhwc<GRAD, 4, T>(st, fm, dy, x, stats, scale, bias, N * S, C, R, P, part);
    else if (nhwc)
        bn_parts_nhwc<GRAD, 1, T>(st, fm, dy, x, stats, scale, bias, N * S, C, R, P, part);
    else if (vec_of(S, sizeof(T), x, dy, NULL, NULL) == 4)
        k_bn_parts<GRAD, 4, T>
            <<<warps_for(C * P), WARP, 0, st>>>(dy, x, stats, scale, bias, N, C, S, P, part);
    else
        k_bn_parts<GRAD, 1, T>
            <<<warps_for(C * P), WARP, 0, st>>>(dy, x, stats, scale, bias, N, C, S, P, part);
}

template <typename T>
static void bn_stats(cudaStream_t st, int nhwc, const T *x, const float *rm, const float *rv,
                     float momentum, float eps, int train, float *om, float *ov, int64_t N,
                     int64_t C, int64_t S, int64_t P, double *stats, double *part, double *keep,
                     float *keepf) {
    if (train) bn_parts<0, T>(st, nhwc, NULL, x, NULL, NULL, NULL, N, C, S, P, part);
    k_bn_finish_stats<<<warps_for(C), WARP, 0, st>>>(part, C, P, N * S, eps, train, rm, rv,
                                                     momentum, om, ov, stats, keep, keepf);
}

template <int RELU, typename T>
static void bn_relu_launch(cudaStream_t st, int nhwc, const T *x, const T *r, const float *scale,
                           const float *bias, const float *rm, const float *rv, float momentum,
                           float eps, int train, float *om, float *ov, T *y, int64_t N, int64_t C,
                           int64_t S, int64_t P, double *ws, double *keep, float *keepf) {
    bn_stats(st, nhwc, x, rm, rv, momentum, eps, train, om, ov, N, C, S, P, ws, ws + 4 * C, keep,
             keepf);
    if (N * C * S > 0 && nhwc && bn_v8(C, sizeof(T), x, r, y)) {
        if constexpr (sizeof(T) == 2)
            bn_apply_nhwc<RELU, 8, T>(st, bn_float_math(), x, r, ws, scale, bias, y, C, N * S);
    } else if (N * C * S > 0 && nhwc && vec_of(C, sizeof(T), x, r, y, NULL) == 4)
        bn_apply_nhwc<RELU, 4, T>(st, bn_float_math(), x, r, ws, scale, bias, y, C, N * S);
    else if (N * C * S > 0 && nhwc)
        bn_apply_nhwc<RELU, 1, T>(st, bn_float_math(), x, r, ws, scale, bias, y, C, N * S);
    else if (N * C * S > 0 && vec_of(S, sizeof(T), x, r, y, NULL) == 4)
        k_bn_relu_apply<RELU, 4, T><<<warps_for(N * C), row_threads(S / 4), 0, st>>>(
            x, r, ws, scale, bias, y, C, S, N * C);
    else if (N * C * S > 0)
        k_bn_relu_apply<RELU, 1, T>
            <<<warps_for(N * C), row_threads(S), 0, st>>>(x, r, ws, scale, bias, y, C, S, N * C);
}

extern "C" int cu_bn_relu(void *stream, int kind, int relu, const void *x, const void *r,
                          const float *scale, const float *bias, const float *rm, const float *rv,
                          float momentum, float eps, int train, float *om, float *ov, void *y,
                          int64_t N, int64_t C, int64_t S, int nhwc, int64_t P, double *ws,
                          double *keep, float *keepf) {
    if (C == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
#define BN_APPLY(R, T)                                                                             \
    bn_relu_launch<R>(st, nhwc, (const T *)x, (const T *)r, scale, bias, rm, rv, momentum, eps,    \
                      train, om, ov, (T *)y, N, C, S, P, ws, keep, keepf)
#define BN_KINDS(R)                                                                                \
    if (kind == 1) BN_APPLY(R, oc_f16);                                                            \
    else if (kind == 2) BN_APPLY(R, oc_bf16);                                                      \
    else BN_APPLY(R, float)
    if (relu) {
        BN_KINDS(1);
    } else {
        BN_KINDS(0);
    }
#undef BN_KINDS
#undef BN_APPLY
    return last_error();
}

__global__ void k_bn_saved(const double *stats, int64_t C, float eps, float *sm, float *sv) {
    GRID_LOOP(c, C) {
        double is = stats[2 * c + 1];
        sm[c] = (float)stats[2 * c];
        sv[c] = (float)(1.0 / (is * is) - (double)eps);
    }
}

extern "C" int cu_bn_saved(void *stream, const double *stats, int64_t C, float eps, float *sm,
                           float *sv) {
    if (C == 0) return 0;
    k_bn_saved<<<blocks_for(C), THREADS, 0, (cudaStream_t)stream>>>(stats, C, eps, sm, sv);
    return last_error();
}

__global__ void k_bnr_grad_finish(const double *part, int64_t C, int64_t P, double *sums, float *ds,
                                  float *db) {
    ROW_LOOP(c, C) {
        double s, q;
        parts_sum(part, c, P, s, q);
        if (threadIdx.x != 0) continue;
        sums[2 * c] = s, sums[2 * c + 1] = q;
        if (ds) ds[c] = (float)q;
        if (db) db[c] = (float)s;
    }
}

// One block per row (n, c), V elements a thread (as k_bn_relu_apply).
template <int GRAD, int V, typename T>
__global__ void k_bnr_grad_apply(const T *dy, const T *x, const double *stats, const double *sums,
                                 const float *scale, const float *bias, int train, T *dx, int64_t C,
                                 int64_t S, int64_t rows, double M) {
    ROW_LOOP(row, rows) {
        int64_t c = row % C, o = row * S;
        BN_CHANNEL(c);
        double k = train ? scale[c] * is / M : scale[c] * is;
        double sdy = sums[2 * c], sdyx = sums[2 * c + 1];
        for (int64_t i = threadIdx.x * V; i < S; i += blockDim.x * V) {
            float d[V], xv[V];
            ldv<T, V>(dy, o + i, d);
            ldv<T, V>(x, o + i, xv);
            UNROLL
            for (int j = 0; j < V; j++) {
                if (GRAD == 1) d[j] = bn_masked<T>(d[j], xv[j], m, a_c, b_c);
                if (!train) {
                    d[j] = (float)(k * d[j]);
                    continue;
                }
                double xhat = ((double)xv[j] - m) * is;
                d[j] = (float)(k * (M * d[j] - sdy - xhat * sdyx));
            }
            stv<T, V>(dx, o + i, d);
        }
    }
}

// k_bnr_grad_apply's arithmetic, channels-last (as k_bn_relu_apply_nhwc).
// FM 1: dx = a dz + (g xhat + h) in float, a = invstd scale, g = -a sum(dz xhat) / M and
// h = -a sum(dz) / M (training; else dx = a dz), xhat = (x - mean) invstd.
template <int GRAD, int V, typename T, int FM>
__global__ void k_bnr_grad_apply_nhwc(const T *dy, const T *x, const double *stats,
                                      const double *sums, const float *scale, const float *bias,
                                      int train, T *dx, int64_t C, int64_t rows, double M) {
    cg_walk w = cg_walk_of(C / V);
    if (w.idle) return;
    for (int64_t g = w.g0; g < C / V; g += w.gx) {
        double m[V], is[V], a_c[V], b_c[V], kk[V], sdy[V], sdyx[V];
        bn_fc f[V];
        float fg[V], fh[V];
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = g * V + k;
            m[k] = stats[2 * c], is[k] = stats[2 * c + 1];
            a_c[k] = GRAD == 1 ? is[k] * scale[c] : 0, b_c[k] = GRAD == 1 ? (double)bias[c] : 0;
            kk[k] = train ? scale[c] * is[k] / M : scale[c] * is[k];
            sdy[k] = sums[2 * c], sdyx[k] = sums[2 * c + 1];
            if (FM) {
                double a = is[k] * scale[c];
                f[k] = bn_fcoef(stats, scale, bias, c);
                fg[k] = train ? (float)(-a * sdyx[k] / M) : 0.0f;
                fh[k] = train ? (float)(-a * sdy[k] / M) : 0.0f;
            }
        }
        for (int64_t row = w.r0; row < rows; row += w.ry) {
            int64_t i = row * C + g * V;
            float d[V], xv[V];
            ldv<T, V>(dy, i, d);
            ldv<T, V>(x, i, xv);
            if (FM) {
                UNROLL
                for (int k = 0; k < V; k++) {
                    float dz = GRAD == 1 ? bn_masked_f<T>(d[k], xv[k], f[k]) : d[k];
                    float xh = (xv[k] - f[k].m) * f[k].is;
                    d[k] = fmaf(f[k].a, dz, fmaf(fg[k], xh, fh[k]));
                }
            } else {
                UNROLL
                for (int k = 0; k < V; k++) {
                    if (GRAD == 1) d[k] = bn_masked<T>(d[k], xv[k], m[k], a_c[k], b_c[k]);
                    if (!train) {
                        d[k] = (float)(kk[k] * d[k]);
                        continue;
                    }
                    double xhat = ((double)xv[k] - m[k]) * is[k];
                    d[k] = (float)(kk[k] * (M * d[k] - sdy[k] - xhat * sdyx[k]));
                }
            }
            stv<T, V>(dx, i, d);
        }
    }
}

#undef BN_CHANNEL

// (as bn_apply_nhwc)
template <int GRAD, int V, typename T>
static void bn_grad_nhwc(cudaStream_t st, bool fm, const T *dy, const T *x, const double *stats,
                         const double *sums, const float *scale, const float *bias, int train,
                         T *dx, int64_t C, int64_t rows) {
    if (fm)
        k_bnr_grad_apply_nhwc<GRAD, V, T, 1><<<cg_blocks(rows, C / V), THREADS, 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, rows, (double)rows);
    else
        k_bnr_grad_apply_nhwc<GRAD, V, T, 0><<<cg_blocks(rows, C / V), THREADS, 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, rows, (double)rows);
}

template <int GRAD, typename T>
static void bn_grad_launch(cudaStream_t st, int nhwc, const T *dy, const T *x, const float *scale,
                           const float *bias, const float *rm, const float *rv, float eps,
                           int train, T *dx, float *ds, float *db, int64_t N, int64_t C, int64_t S,
                           int64_t P, double *ws, const double *saved) {
    const double *stats = ws;
    double *sums = ws + 2 * C, *part = ws + 4 * C;
    if (train && saved) stats = saved; /* the forward's, from the stash: no pass over X */
    else
        bn_stats(st, nhwc, x, rm, rv, 0.0f, eps, train, NULL, NULL, N, C, S, P, ws, part, NULL,
                 NULL);
    bn_parts<GRAD, T>(st, nhwc, dy, x, stats, scale, bias, N, C, S, P, part);
    k_bnr_grad_finish<<<warps_for(C), WARP, 0, st>>>(part, C, P, sums, ds, db);
    if (dx && N * C * S > 0 && nhwc && bn_v8(C, sizeof(T), dy, x, dx)) {
        if constexpr (sizeof(T) == 2)
            bn_grad_nhwc<GRAD, 8, T>(st, bn_float_math(), dy, x, stats, sums, scale, bias, train,
                                     dx, C, N * S);
    } else if (dx && N * C * S > 0 && nhwc && vec_of(C, sizeof(T), dy, x, dx, NULL) == 4)
        bn_grad_nhwc<GRAD, 4, T>(st, bn_float_math(), dy, x, stats, sums, scale, bias, train, dx, C,
                                 N * S);
    else if (dx && N * C * S > 0 && nhwc)
        bn_grad_nhwc<GRAD, 1, T>(st, bn_float_math(), dy, x, stats, sums, scale, bias, train, dx, C,
                                 N * S);
    else if (dx && N * C * S > 0 && vec_of(S, sizeof(T), dy, x, dx, NULL) == 4)
        k_bnr_grad_apply<GRAD, 4, T><<<warps_for(N * C), row_threads(S / 4), 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, S, N * C, (double)(N * S));
    else if (dx && N * C * S > 0)
        k_bnr_grad_apply<GRAD, 1, T><<<warps_for(N * C), row_threads(S), 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, S, N * C, (double)(N * S));
}

extern "C" int cu_bn_relu_grad(void *stream, int kind, int relu, const void *dy, const void *x,
                               const float *scale, const float *bias, const float *rm,
                               const float *rv, float eps, int train, void *dx, float *ds,
                               float *db, int64_t N, int64_t C, int64_t S, int nhwc, int64_t P,
                               double *ws, const double *saved) {
    if (C == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
#define BN_GRAD(G, T)                                                                              \
    bn_grad_launch<G>(st, nhwc, (const T *)dy, (const T *)x, scale, bias, rm, rv, eps, train,      \
                      (T *)dx, ds, db, N, C, S, P, ws, saved)
#define BN_KINDS(G)                                                                                \
    if (kind == 1) BN_GRAD(G, oc_f16);                                                             \
    else if (kind == 2) BN_GRAD(G, oc_bf16);                                                       \
    else BN_GRAD(G, float)
    if (relu) {
        BN_KINDS(1);
    } else {
        BN_KINDS(2);
    }
#undef BN_KINDS
#undef BN_GRAD
    return last_error();
}

__global__ void k_invstd_to_var(float *v, int64_t n, float eps) {
    GRID_LOOP(i, n) v[i] = (float)(1.0 / ((double)v[i] * (double)v[i]) - (double)eps);
}

extern "C" int cu_invstd_to_var(void *stream, float *v, int64_t n, float eps) {
    if (n == 0) return 0;
    k_invstd_to_var<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(v, n, eps);
    return last_error();
}
