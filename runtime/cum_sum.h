/* cum_sum.h — CumSum's scan of one line, written once for every backend (cpu_cum_sum.c,
 * cuda_resize.cu): the running sums along the axis in double, each rounded once to float as it
 * is stored (the plan-time fold's arithmetic), from the line's end when reverse, each without
 * its own element when exclusive. Plain C: C and CUDA C++ include it alike. */
#ifndef OC_CUM_SUM_H
#define OC_CUM_SUM_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define OC_CS_HD __host__ __device__
#else
#define OC_CS_HD
#endif

/* The first element of line `line` of a tensor scanned along an axis of len elements, inner
 * elements after it (the line's stride). */
OC_CS_HD static inline int64_t oc_cum_sum_line_start(int64_t line, int64_t len, int64_t inner) {
    return line / inner * len * inner + line % inner;
}

/* y = the scan of the line x (both at the line's first element, stride inner). */
OC_CS_HD static inline void oc_cum_sum_line(const float *x, float *y, int64_t len, int64_t inner,
                                            bool exclusive, bool reverse) {
    double s = 0.0;
    for (int64_t k = 0; k < len; k++) {
        int64_t at = (reverse ? len - 1 - k : k) * inner;
        double v = (double)x[at];
        if (!exclusive) s += v;
        y[at] = (float)s;
        if (exclusive) s += v;
    }
}

#endif
