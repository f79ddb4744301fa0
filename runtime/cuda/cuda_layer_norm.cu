// cuda_layer_norm.cu — LayerNormalization and its gradient.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

// ---- LayerNormalization (cpu_layer_norm): a warp per row, 4 rows a block, V elements a lane
//      a load (4: a 16-byte load where D is a multiple of 4 and the tensors aligned); the scale
//      and bias gradients by parts of the rows per column (the row statistics computed once,
//      in the caller's scratch) ----
// mean and 1/sqrt(var + eps) of row x, in double (two passes, as the cpu kernel)
template <int V>
__device__ static void ln_row_stats(const float *x, int64_t D, double eps, int lane, int L,
                                    double *m, double *is) {
    double s = 0, q = 0;
    for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
        float v[V];
        ldv<float, V>(x, i, v);
        for (int e = 0; e < V; e++) s += v[e];
    }
    s = lanes_sum(s);
    double mean = D ? s / (double)D : 0;
    for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
        float v[V];
        ldv<float, V>(x, i, v);
        for (int e = 0; e < V; e++) q += ((double)v[e] - mean) * ((double)v[e] - mean);
    }
    q = lanes_sum(q);
    *m = mean;
    *is = 1.0 / sqrt((D ? q / (double)D : 0) + eps);
}

template <int V>
__global__ void k_layer_norm(const float *x, const float *s, const float *b, float *y, int64_t R,
                             int64_t D, double eps) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, R) {
        double m, is;
        ln_row_stats<V>(x + r * D, D, eps, lane, L, &m, &is);
        for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
            float v[V], o[V];
            ldv<float, V>(x, r * D + i, v);
            for (int e = 0; e < V; e++)
                o[e] = (float)(((double)v[e] - m) * is * s[i + e] + (b ? b[i + e] : 0.0f));
            stv<float, V>(y, r * D + i, o);
        }
    }
}

// dX per row; the row's mean and 1/std into stats[2r], stats[2r + 1] for the column kernel
template <int V>
__global__ void k_layer_norm_dx(const float *dy, const float *x, const float *s, float *dx,
                                double *stats, int64_t R, int64_t D, double eps) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, R) {
        const float *xr = x + r * D, *dr = dy + r * D;
        double m, is, sg = 0, sgx = 0;
        ln_row_stats<V>(xr, D, eps, lane, L, &m, &is);
        if (lane == 0) stats[2 * r] = m, stats[2 * r + 1] = is;
        if (!dx) continue;
        for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
            float xv[V], dv[V];
            ldv<float, V>(xr, i, xv);
            ldv<float, V>(dr, i, dv);
            for (int e = 0; e < V; e++) {
                double xh = ((double)xv[e] - m) * is, gi = (double)dv[e] * s[i + e];
                sg += gi;
                sgx += gi * xh;
            }
        }
        sg = lanes_sum(sg);
        sgx = lanes_sum(sgx);
        for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
            float xv[V], dv[V], o[V];
            ldv<float, V>(xr, i, xv);
            ldv<float, V>(dr, i, dv);
            for (int e = 0; e < V; e++) {
                double xh = ((double)xv[e] - m) * is, gi = (double)dv[e] * s[i + e];
                o[e] = (float)(is / (double)D * ((double)D * gi - sg - xh * sgx));
            }
            stv<float, V>(dx + r * D, i, o);
        }
    }
}

__global__ void k_col_sums(const double *t, int64_t N, int64_t C, void *out, int kout,
                           float scale); // below, with the half kinds

// dScale's and dBias's sums of the rows of part p, column i: t[p D + i], t[(P + p) D + i]
__global__ void k_layer_norm_dsb_parts(const float *dy, const float *x, const double *stats,
                                       int64_t R, int64_t D, int64_t rows_per, int64_t P,
                                       double *t) {
    GRID_LOOP(k, P * D) {
        int64_t p = k / D, i = k % D, end = (p + 1) * rows_per < R ? (p + 1) * rows_per : R;
        double a = 0, c = 0;
        for (int64_t r = p * rows_per; r < end; r++) {
            double g = dy[r * D + i];
            a += g * (((double)x[r * D + i] - stats[2 * r]) * stats[2 * r + 1]);
            c += g;
        }
        t[k] = a;
        t[P * D + k] = c;
    }
}

// The same 4 columns a thread (D a multiple of 4, dy and x aligned), one 16-byte load of each a
// row: every column's sums in the one-column kernel's order, the same bits.
__global__ void k_layer_norm_dsb_parts4(const float *dy, const float *x, const double *stats,
                                        int64_t R, int64_t D, int64_t rows_per, int64_t P,
                                        double *t) {
    int64_t G = D / 4;
    GRID_LOOP(k, P * G) {
        int64_t p = k / G, i = k % G * 4, end = (p + 1) * rows_per < R ? (p + 1) * rows_per : R;
        double a[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0};
        for (int64_t r = p * rows_per; r < end; r++) {
            float g[4], v[4];
            ldv<float, 4>(dy, r * D + i, g);
            ldv<float, 4>(x, r * D + i, v);
            for (int e = 0; e < 4; e++) {
                a[e] += (double)g[e] * (((double)v[e] - stats[2 * r]) * stats[2 * r + 1]);
                c[e] += g[e];
            }
        }
        for (int e = 0; e < 4; e++) t[p * D + i + e] = a[e], t[(P + p) * D + i + e] = c[e];
    }
}

extern "C" int cu_layer_norm(void *stream, const float *x, const float *s, const float *b, float *y,
                             int64_t R, int64_t D, float eps) {
    if (R == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    if (vec_of(D, 4, x, y, NULL, NULL) == 4)
        k_layer_norm<4><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(x, s, b, y, R, D, eps);
    else k_layer_norm<1><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(x, s, b, y, R, D, eps);
    return last_error();
}

extern "C" int cu_layer_norm_grad(void *stream, const float *dy, const float *x, const float *s,
                                  float *dx, float *ds, float *db, double *stats, int64_t R,
                                  int64_t D, float eps) {
    cudaStream_t st = (cudaStream_t)stream;
    if (R > 0 && vec_of(D, 4, dy, x, dx, NULL) == 4)
        k_layer_norm_dx<4><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(dy, x, s, dx, stats, R, D, eps);
    else if (R > 0)
        k_layer_norm_dx<1><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(dy, x, s, dx, stats, R, D, eps);
    if ((!ds && !db) || D == 0) return last_error();
    int64_t P = cu_channel_parts(R, D);
    double *t = stats + 2 * R;
    if (R > 0 && vec_of(D, 4, dy, x, NULL, NULL) == 4 && !scalar_sums())
        k_layer_norm_dsb_parts4<<<blocks_for(P * D / 4), THREADS, 0, st>>>(dy, x, stats, R, D,
                                                                           (R + P - 1) / P, P, t);
    else if (R > 0)
        k_layer_norm_dsb_parts<<<blocks_for(P * D), THREADS, 0, st>>>(dy, x, stats, R, D,
                                                                      (R + P - 1) / P, P, t);
    int64_t parts = R > 0 ? P : 0;
    if (ds) k_col_sums<<<warps_for(D), WARP, 0, st>>>(t, parts, D, ds, 0, 1.0f);
    if (db) k_col_sums<<<warps_for(D), WARP, 0, st>>>(t + P * D, parts, D, db, 0, 1.0f);
    return last_error();
}
