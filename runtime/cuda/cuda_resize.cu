// cuda_resize.cu — CumSum, Resize and their gradients.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

// ---- CumSum (cpu_cum_sum.c; the scan: runtime/cum_sum.h) ----
// one thread a line: neighbouring threads read neighbouring elements when the axis is not last
__global__ void k_cum_sum(const float *x, float *y, int64_t lines, int64_t len, int64_t inner,
                          bool exclusive, bool reverse) {
    GRID_LOOP(line, lines) {
        int64_t at = oc_cum_sum_line_start(line, len, inner);
        oc_cum_sum_line(x + at, y + at, len, inner, exclusive, reverse);
    }
}

extern "C" int cu_cum_sum(void *stream, const float *x, float *y, int64_t lines, int64_t len,
                          int64_t inner, bool exclusive, bool reverse) {
    if (lines == 0 || len == 0) return 0;
    k_cum_sum<<<blocks_for(lines), THREADS, 0, (cudaStream_t)stream>>>(x, y, lines, len, inner,
                                                                       exclusive, reverse);
    return last_error();
}

// ---- Resize / ResizeGrad (cpu_resize.c; taps: runtime/resize_coord.h) ----
struct resize_geo {
    int nsp;
    oc_resize_kind k;
    int64_t n[3], m[3]; // input and output extents of the spatial dims
    double scale[3];
};

// Antialiased: each dim's span of taps (oc_resize_aa_span), weights computed per tap.
__global__ void k_resize_aa(const float *x, float *y, resize_geo g, int64_t planes, int64_t sin,
                            int64_t sout) {
    GRID_LOOP(t, planes * sout) {
        int64_t pl = t / sout, o = t % sout, oi[3], rem = o, first[3], count[3] = {1, 1, 1};
        double center[3], inv[3], total[3];
        for (int d = g.nsp - 1; d >= 0; d--) oi[d] = rem % g.m[d], rem /= g.m[d];
        int64_t combos = 1;
        for (int d = 0; d < g.nsp; d++) {
            total[d] = oc_resize_aa_span(oi[d], g.n[d], g.scale[d], &g.k, &first[d], &count[d],
                                         &center[d], &inv[d]);
            combos *= total[d] != 0.0 ? count[d] : 0;
        }
        double acc = 0;
        for (int64_t c = 0; c < combos; c++) {
            double wt = 1;
            int64_t off = 0, cr = c;
            for (int d = 0; d < g.nsp; d++) {
                int64_t i = first[d] + cr % count[d];
                cr /= count[d];
                wt *= oc_resize_aa_filter(((double)i + 0.5 - center[d]) * inv[d], &g.k) / total[d];
                off = off * g.n[d] + i;
            }
            if (wt != 0.0) acc += wt * x[pl * sin + off];
        }
        y[t] = (float)acc;
    }
}

__global__ void k_resize(const float *x, float *y, resize_geo g, int64_t planes, int64_t sin,
                         int64_t sout) {
    GRID_LOOP(t, planes * sout) {
        int64_t pl = t / sout, o = t % sout, oi[3], rem = o;
        for (int d = g.nsp - 1; d >= 0; d--) oi[d] = rem % g.m[d], rem /= g.m[d];
        int64_t idx[3][OC_RESIZE_MAX_TAPS];
        double w[3][OC_RESIZE_MAX_TAPS];
        int taps[3], combos = 1;
        for (int d = 0; d < g.nsp; d++) {
            taps[d] = oc_resize_taps(oi[d], g.n[d], g.m[d], g.scale[d], &g.k, idx[d], w[d]);
            combos *= taps[d];
        }
        double acc = 0;
        for (int c = 0; c < combos; c++) {
            double wt = 1;
            int64_t off = 0;
            for (int d = 0, cr = c; d < g.nsp; d++) {
                int j = cr % taps[d];
                cr /= taps[d];
                wt *= w[d][j];
                off = off * g.n[d] + idx[d][j];
            }
            if (wt != 0.0) acc += wt * x[pl * sin + off];
        }
        y[t] = (float)acc;
    }
}

/* The weight output index o of dim d gives input index i. */
__device__ static double resize_coef(const resize_geo &g, int d, int64_t o, int64_t i) {
    if (g.k.antialias) {
        int64_t first, count;
        double center, inv;
        double total =
            oc_resize_aa_span(o, g.n[d], g.scale[d], &g.k, &first, &count, &center, &inv);
        if (total == 0.0 || i < first || i >= first + count) return 0.0;
        return oc_resize_aa_filter(((double)i + 0.5 - center) * inv, &g.k) / total;
    }
    int64_t idx[OC_RESIZE_MAX_TAPS];
    double w[OC_RESIZE_MAX_TAPS], sum = 0.0;
    int taps = oc_resize_taps(o, g.n[d], g.m[d], g.scale[d], &g.k, idx, w);
    for (int j = 0; j < taps; j++) sum += idx[j] == i ? w[j] : 0.0;
    return sum;
}

// One thread per input element: the outputs that read it (a contiguous range
// per dim, found by a scan), their weights multiplied over the dims.
__global__ void k_resize_grad(const float *dy, float *dx, resize_geo g, int64_t planes, int64_t sin,
                              int64_t sout) {
    GRID_LOOP(t, planes * sin) {
        int64_t pl = t / sin, rem = t % sin, ii[3], lo[3], hi[3];
        for (int d = g.nsp - 1; d >= 0; d--) ii[d] = rem % g.n[d], rem /= g.n[d];
        bool any = true;
        for (int d = 0; d < g.nsp && any; d++) {
            lo[d] = -1, hi[d] = -2;
            for (int64_t o = 0; o < g.m[d]; o++)
                if (resize_coef(g, d, o, ii[d]) != 0.0) {
                    if (lo[d] < 0) lo[d] = o;
                    hi[d] = o;
                }
            any = lo[d] >= 0;
        }
        double acc = 0;
        if (any) {
            int64_t o[3] = {lo[0], lo[1], lo[2]};
            for (;;) {
                double wt = 1;
                int64_t off = 0;
                for (int d = 0; d < g.nsp; d++) {
                    wt *= resize_coef(g, d, o[d], ii[d]);
                    off = off * g.m[d] + o[d];
                }
                if (wt != 0.0) acc += wt * dy[pl * sout + off];
                int d = g.nsp - 1;
                while (d >= 0 && ++o[d] > hi[d]) o[d] = lo[d], d--;
                if (d < 0) break;
            }
        }
        dx[t] = (float)acc;
    }
}

extern "C" int cu_resize(void *stream, const float *in, float *out, int grad, int nsp,
                         const oc_resize_kind *k, const int64_t *n, const int64_t *m,
                         const double *scale, int64_t planes) {
    resize_geo g;
    g.nsp = nsp, g.k = *k;
    int64_t sin = 1, sout = 1;
    for (int d = 0; d < 3; d++) {
        g.n[d] = d < nsp ? n[d] : 1, g.m[d] = d < nsp ? m[d] : 1;
        g.scale[d] = d < nsp ? scale[d] : 1.0;
        sin *= g.n[d], sout *= g.m[d];
    }
    int64_t total = planes * (grad ? sin : sout);
    if (total == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (grad) k_resize_grad<<<blocks_for(total), THREADS, 0, s>>>(in, out, g, planes, sin, sout);
    else if (k->antialias)
        k_resize_aa<<<blocks_for(total), THREADS, 0, s>>>(in, out, g, planes, sin, sout);
    else k_resize<<<blocks_for(total), THREADS, 0, s>>>(in, out, g, planes, sin, sout);
    return last_error();
}
