/* resize_coord.h — the source taps of Resize, written once for every backend
 * (cpu_resize.c, cuda_resize.cu): for output index o of a spatial dim of input
 * extent n and output extent m, the input indices it reads and their weights:
 * one (nearest), two (linear) or four (cubic, Keys' kernel with coefficient a:
 * PyTorch's bicubic is a = -0.75, ONNX's default too; indices past the edge
 * read the edge, or with exclude_outside get weight 0 and the others are
 * renormalised). Plain C: C and CUDA C++ include it alike. */
#ifndef OC_RESIZE_COORD_H
#define OC_RESIZE_COORD_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define OC_HD __host__ __device__
#else
#define OC_HD
#endif

#define OC_RESIZE_MAX_TAPS 4

/* How a Resize reads its input (op_resize_args, ir/ops/op_args.h). */
typedef struct oc_resize_kind {
    int mode;            /* op_resize_mode: 0 nearest, 1 linear, 2 cubic */
    int coord;           /* op_resize_coord */
    int nearest;         /* op_resize_nearest */
    int exclude_outside; /* cubic: taps outside the input dropped, the rest renormalised */
    int antialias;       /* linear, cubic: oc_resize_aa_span's taps */
    double cubic_a;
} oc_resize_kind;

/* Keys' cubic convolution kernel at distance s (0 <= s <= 2). */
OC_HD static inline double oc_resize_cubic(double s, double a) {
    return s <= 1.0 ? ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0
                    : ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a;
}

/* The taps of output index o: idx[j] and w[j] for j < the count returned. */
OC_HD static inline int oc_resize_taps(int64_t o, int64_t n, int64_t m, double scale,
                                       const oc_resize_kind *k, int64_t *idx, double *w) {
    double x;
    if (k->coord == 2) { /* the resized length n * scale: m, or unrounded from a scales input */
        double mr = (double)n * scale;
        x = mr > 1.0 && m > 1 ? (double)o * (double)(n - 1) / (mr - 1.0) : 0.0;
    } else if (k->coord == 3) x = (double)o / scale;
    else if (k->coord == 1 && m <= 1) x = 0.0;
    else x = ((double)o + 0.5) / scale - 0.5;
    if (k->mode == 0) {
        double f = floor(x), fr = x - f;
        int64_t i = k->nearest == 2   ? (int64_t)f
                    : k->nearest == 3 ? (int64_t)ceil(x)
                    : k->nearest == 1 ? (fr >= 0.5 ? (int64_t)f + 1 : (int64_t)f)
                                      : (fr > 0.5 ? (int64_t)f + 1 : (int64_t)f);
        idx[0] = i < 0 ? 0 : i > n - 1 ? n - 1 : i;
        w[0] = 1.0;
        return 1;
    }
    if (k->mode == 1) {
        if (x < 0) x = 0;
        if (x > (double)(n - 1)) x = (double)(n - 1);
        int64_t i = (int64_t)floor(x);
        idx[0] = i;
        idx[1] = i + 1 < n ? i + 1 : n - 1;
        w[1] = x - (double)i;
        w[0] = 1.0 - w[1];
        return 2;
    }
    double f = floor(x), t = x - f, sum = 0.0;
    for (int j = 0; j < 4; j++) {
        int64_t i = (int64_t)f - 1 + j;
        w[j] = oc_resize_cubic(fabs(t + 1.0 - (double)j), k->cubic_a);
        if (k->exclude_outside && (i < 0 || i >= n)) w[j] = 0.0;
        idx[j] = i < 0 ? 0 : i > n - 1 ? n - 1 : i;
        sum += w[j];
    }
    if (k->exclude_outside && sum != 0.0)
        for (int j = 0; j < 4; j++) w[j] /= sum;
    return 4;
}

/* Antialiased taps (Resize antialias 1, half_pixel, taps outside dropped: F.interpolate(
 * antialias=True), PIL's resampling): the filter -- linear's triangle, cubic's Keys kernel --
 * stretched by 1 / scale when downscaling (scale = output / input), centred on output o's
 * source point, over the input indices [*first, *first + *count) it reaches, each tap
 * oc_resize_aa_filter((i + 0.5 - *center) * *inv) / the total returned (0: no taps).
 * PyTorch's _compute_weights_aa, in double. */
OC_HD static inline double oc_resize_aa_filter(double x, const oc_resize_kind *k) {
    x = fabs(x);
    if (k->mode == 1) return x < 1.0 ? 1.0 - x : 0.0;
    return x < 2.0 ? oc_resize_cubic(x, k->cubic_a) : 0.0;
}

OC_HD static inline double oc_resize_aa_span(int64_t o, int64_t n, double scale,
                                             const oc_resize_kind *k, int64_t *first,
                                             int64_t *count, double *center, double *inv) {
    double s = 1.0 / scale, support = (k->mode == 1 ? 1.0 : 2.0) * (s >= 1.0 ? s : 1.0);
    *inv = s >= 1.0 ? 1.0 / s : 1.0;
    *center = s * ((double)o + 0.5);
    int64_t lo = (int64_t)(*center - support + 0.5), hi = (int64_t)(*center + support + 0.5);
    lo = lo < 0 ? 0 : lo;
    hi = hi > n ? n : hi;
    *first = lo, *count = hi > lo ? hi - lo : 0;
    double total = 0.0;
    for (int64_t j = 0; j < *count; j++)
        total += oc_resize_aa_filter(((double)(lo + j) + 0.5 - *center) * *inv, k);
    return total;
}

/* The most taps oc_resize_aa_span gives an output of a dim (n in, scale out / in). */
OC_HD static inline int64_t oc_resize_aa_max_taps(int64_t n, double scale,
                                                  const oc_resize_kind *k) {
    double s = 1.0 / scale, support = (k->mode == 1 ? 1.0 : 2.0) * (s >= 1.0 ? s : 1.0);
    int64_t t = (int64_t)ceil(2.0 * support) + 2;
    return t < n ? t : n;
}

#endif
