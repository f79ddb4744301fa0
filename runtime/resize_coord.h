/* resize_coord.h — the source coordinates of Resize, written once for every
 * backend (cpu_resize.c, cuda_ops.cu): for output index o of a spatial dim of
 * input extent n and output extent m, the two input indices it reads and the
 * weight of the second (linear), or the one it copies (nearest; w = 0).
 * Plain C: C and CUDA C++ include it alike. */
#ifndef OC_RESIZE_COORD_H
#define OC_RESIZE_COORD_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define OC_HD __host__ __device__
#else
#define OC_HD
#endif

/* coord, nearest: op_resize_coord / op_resize_nearest (ir/ops/op_args.h). */
OC_HD static inline void oc_resize_src(int64_t o, int64_t n, int64_t m, double scale, int linear,
                                       int coord, int nearest, int64_t *i0, int64_t *i1,
                                       double *w) {
    double x;
    if (coord == 2) { /* the resized length n * scale: m, or unrounded from a scales input */
        double mr = (double)n * scale;
        x = mr > 1.0 && m > 1 ? (double)o * (double)(n - 1) / (mr - 1.0) : 0.0;
    } else if (coord == 3) x = (double)o / scale;
    else if (coord == 1 && m <= 1) x = 0.0;
    else x = ((double)o + 0.5) / scale - 0.5;
    if (!linear) {
        double f = floor(x), fr = x - f;
        int64_t k = nearest == 2   ? (int64_t)f
                    : nearest == 3 ? (int64_t)ceil(x)
                    : nearest == 1 ? (fr >= 0.5 ? (int64_t)f + 1 : (int64_t)f)
                                   : (fr > 0.5 ? (int64_t)f + 1 : (int64_t)f);
        k = k < 0 ? 0 : k > n - 1 ? n - 1 : k;
        *i0 = *i1 = k;
        *w = 0.0;
        return;
    }
    if (x < 0) x = 0;
    if (x > (double)(n - 1)) x = (double)(n - 1);
    int64_t k = (int64_t)floor(x);
    *i0 = k;
    *i1 = k + 1 < n ? k + 1 : n - 1;
    *w = x - (double)k;
}

#endif
