/* topk_order.h — TopK's order, written once for every backend (cpu_shape.c,
 * cuda_gather.cu): an element goes before another when its value is larger
 * (largest) or smaller, a NaN counting larger than any number, equal values
 * (and NaNs) by their index along the axis, the lower first — ONNX's tie rule (the
 * higher first for ArgMax / ArgMin's select_last_index).
 * One line's k first elements are a selection, each the first element after
 * the one chosen before it, so every backend chooses the same ones in the
 * same order. Plain C: C and CUDA C++ include it alike. */
#ifndef OC_TOPK_ORDER_H
#define OC_TOPK_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define OC_TOPK_HD __host__ __device__
#else
#define OC_TOPK_HD
#endif

/* how: OC_TOPK_LARGEST (else smallest first), OC_TOPK_LAST (equal values: the higher index
 * first, ArgMax's select_last_index), OC_TOPK_NAN_FIRST (a NaN before any number, smallest
 * first too: ArgMin's, as torch.argmin and numpy's propagate a NaN). */
enum { OC_TOPK_LARGEST = 1, OC_TOPK_LAST = 2, OC_TOPK_NAN_FIRST = 4 };

/* Whether (v at index i) goes before (w at index j): float32 for the kernels, double for
 * plan-time folding (ir/ops/op_topk.c: TopK of any float type, exact in double). */
#define OC_TOPK_BEFORE(name, T)                                                                    \
    OC_TOPK_HD static inline bool name(T v, int64_t i, T w, int64_t j, int how) {                  \
        bool vn = v != v, wn = w != w, largest = (how & OC_TOPK_LARGEST) != 0;                     \
        if (vn != wn)                                                                              \
            return vn ? largest || (how & OC_TOPK_NAN_FIRST)                                       \
                      : !largest && !(how & OC_TOPK_NAN_FIRST);                                    \
        if (!vn && v != w) return largest ? v > w : v < w;                                         \
        return (how & OC_TOPK_LAST) ? i > j : i < j;                                               \
    }
OC_TOPK_BEFORE(oc_topk_before, float)
OC_TOPK_BEFORE(oc_topk_before_f64, double)
#undef OC_TOPK_BEFORE

/* One line of x: its elements at base + p * stride, p < len. Its k first positions in
 * the order go to idx[obase + o * ostride] (p) and off[..] (the element's offset in x),
 * o < k <= len: O(len k), no memory of its own. */
OC_TOPK_HD static inline void oc_topk_line(const float *x, int64_t base, int64_t stride,
                                           int64_t len, int64_t k, int how, int64_t *idx,
                                           int64_t *off, int64_t obase, int64_t ostride) {
    float pv = 0.0f;
    int64_t pi = -1;
    for (int64_t o = 0; o < k; o++) {
        float bv = 0.0f;
        int64_t best = -1;
        for (int64_t p = 0; p < len; p++) {
            float v = x[base + p * stride];
            if (pi >= 0 && !oc_topk_before(pv, pi, v, p, how)) continue; /* chosen before */
            if (best < 0 || oc_topk_before(v, p, bv, best, how)) best = p, bv = v;
        }
        idx[obase + o * ostride] = best;
        off[obase + o * ostride] = base + best * stride;
        pv = bv, pi = best;
    }
}

#endif
