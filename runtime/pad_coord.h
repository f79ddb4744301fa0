/* pad_coord.h — Pad's index map, written once for every backend (cpu_shape.c,
 * cuda_pad_pool.cu): the input index a padded index reads (constant fill, reflect,
 * edge, wrap), and for the gradient of reflect, edge and wrap padding the sum, for
 * one input element, of the output gradient at every index that read it (reflect:
 * the element and its mirror images; edge: the border element and the pads beside
 * it; wrap: every index congruent to it modulo the extent). Every backend sums in the same order, in float32 (half gradients widened),
 * so their results agree bit for bit.
 * Plain C: C and CUDA C++ include it alike. */
#ifndef OC_PAD_COORD_H
#define OC_PAD_COORD_H

#include <stdint.h>

#include "ir/half.h" /* bf16_to_f32, f16_to_f32 (OC_HALF_NO_IR or not, as the includer has it) */

#ifdef __CUDACC__
#define OC_HD __host__ __device__
#else
#define OC_HD
#endif

#define OC_PAD_MAX_RANK 8 /* IR_MAX_RANK, CU_MAX_RANK */

/* op_pad_mode's values (ir/ops/op_args.h). */
enum { OC_PAD_CONSTANT = 0, OC_PAD_REFLECT = 1, OC_PAD_EDGE = 2, OC_PAD_WRAP = 3 };

/* The input index that padded coordinate p (the output index minus the begin
 * pad) reads in an extent n, or -1 for the constant fill (wrap: modulo n, circular). */
OC_HD static inline int64_t oc_pad_source(int64_t p, int64_t n, int mode) {
    if (p >= 0 && p < n) return p;
    if (mode == OC_PAD_CONSTANT || n == 0) return -1;
    if (mode == OC_PAD_EDGE) return p < 0 ? 0 : n - 1;
    if (mode == OC_PAD_WRAP) return (p % n + n) % n;
    if (n == 1) return 0;
    int64_t period = 2 * (n - 1);
    p %= period;
    if (p < 0) p += period;
    return p < n ? p : period - p;
}

/* The first of p = base + k * step (k any integer) at or above lo. */
OC_HD static inline int64_t oc_pad_first(int64_t base, int64_t step, int64_t lo) {
    int64_t d = lo - base, k = d / step;
    if (k * step < d) k++;
    return base + k * step;
}

/* The padded coordinates in [lo, hi) that read input index i of extent n: at
 * most two runs p = start[r] + k * step[r], k < count[r]; returns the runs. */
OC_HD static inline int oc_pad_readers(int64_t i, int64_t n, int64_t lo, int64_t hi, int mode,
                                       int64_t *start, int64_t *step, int64_t *count) {
    int runs = 0;
    if (mode == OC_PAD_WRAP) { /* p = i modulo n */
        int64_t s = oc_pad_first(i, n, lo);
        if (s >= hi) return 0;
        start[0] = s;
        step[0] = n;
        count[0] = (hi - 1 - s) / n + 1;
        return 1;
    }
    if (mode == OC_PAD_REFLECT && n > 1) { /* p = +-i modulo the period */
        int64_t period = 2 * (n - 1);
        int64_t bases[2] = {i, period - i};
        int nb = i == 0 || i == n - 1 ? 1 : 2;
        for (int b = 0; b < nb; b++) {
            int64_t s = oc_pad_first(bases[b], period, lo);
            if (s >= hi) continue;
            start[runs] = s;
            step[runs] = period;
            count[runs++] = (hi - 1 - s) / period + 1;
        }
        return runs;
    }
    int64_t a = i, b = i; /* a contiguous run: edge's borders take the pads beside them */
    if (mode != OC_PAD_CONSTANT && i == 0) a = lo < 0 ? lo : 0;
    if (mode != OC_PAD_CONSTANT && i == n - 1) b = hi - 1 > b ? hi - 1 : b;
    if (a < lo) a = lo;
    if (b > hi - 1) b = hi - 1;
    if (a > b) return 0;
    start[0] = a;
    step[0] = 1;
    count[0] = b - a + 1;
    return 1;
}

/* Element i of dy stored as kind: 0 float32, 1 float16, 2 bfloat16 (widened exactly). */
OC_HD static inline float oc_pad_load(const void *dy, int kind, int64_t i) {
    if (kind == 0) return ((const float *)dy)[i];
    uint16_t h = ((const uint16_t *)dy)[i];
    return kind == 2 ? bf16_to_f32(h) : f16_to_f32(h);
}

/* The gradient of one input element at coordinates ic (input dims id, rank
 * dims): the sum of dy (the padded tensor, dims od, its strides os, stored as
 * kind: oc_pad_load) at every index that read it, the begin pads `begin`; the
 * last dim varies fastest. Summed in float32; a half result is rounded once,
 * by the caller's store. */
OC_HD static inline float oc_pad_grad_sum(int rank, const int64_t *id, const int64_t *od,
                                          const int64_t *os, const int64_t *begin, int mode,
                                          const int64_t *ic, const void *dy, int kind) {
    int64_t start[OC_PAD_MAX_RANK][2], step[OC_PAD_MAX_RANK][2], count[OC_PAD_MAX_RANK][2];
    int runs[OC_PAD_MAX_RANK], run[OC_PAD_MAX_RANK];
    int64_t k[OC_PAD_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        runs[d] = oc_pad_readers(ic[d], id[d], -begin[d], od[d] - begin[d], mode, start[d], step[d],
                                 count[d]);
        if (runs[d] == 0) return 0.0f;
        run[d] = 0;
        k[d] = 0;
    }
    float sum = 0.0f;
    for (;;) {
        int64_t off = 0;
        for (int d = 0; d < rank; d++)
            off += (start[d][run[d]] + k[d] * step[d][run[d]] + begin[d]) * os[d];
        sum += oc_pad_load(dy, kind, off);
        int d = rank - 1; /* the next index: k within a run, then the next run */
        for (; d >= 0; d--) {
            if (++k[d] < count[d][run[d]]) break;
            k[d] = 0;
            if (++run[d] < runs[d]) break;
            run[d] = 0;
        }
        if (d < 0) return sum;
    }
}

#endif
