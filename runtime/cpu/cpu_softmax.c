/* cpu_softmax.c — Softmax, LogSoftmax and their gradients (op_softmax.c):
 * rows of D elements at stride `inner` (the dims after the axis; 1 when the
 * dims from the axis on are one row), sums in double. */
#include <math.h>

#include "cpu/cpu_internal.h"

int cpu_softmax(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t outer, D, inner;
    kernel_softmax_rows(a, x, &outer, &D, &inner);
    bool is_log = a->n->op == OP_LOG_SOFTMAX;
    const float *in = a->in[0];
    float *y = a->out[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const float *xr = in + o * D * inner + j;
            float *yr = y + o * D * inner + j;
            float m = -INFINITY;
            for (int64_t i = 0; i < D; i++) m = fmaxf(m, xr[i * inner]);
            if (m == -INFINITY) m = 0.0f; /* a fully masked row: NaN, as PyTorch */
            double s = 0;
            for (int64_t i = 0; i < D; i++) s += exp((double)xr[i * inner] - m);
            double ls = is_log ? m + log(s) : 0;
            for (int64_t i = 0; i < D; i++)
                yr[i * inner] = is_log ? (float)((double)xr[i * inner] - ls)
                                       : (float)(exp((double)xr[i * inner] - m) / s);
        }
    return OC_OK;
}

int cpu_softmax_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_in(a, 1);
    if (kernel_want_dtype(a, kernel_in(a, 0), IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, y, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    int64_t outer, D, inner;
    kernel_softmax_rows(a, y, &outer, &D, &inner);
    bool is_log = a->n->op == OP_LOG_SOFTMAX_GRAD;
    const float *dy = a->in[0], *yv = a->in[1];
    float *dx = a->out[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * D * inner + j;
            double s = 0;
            for (int64_t i = 0; i < D; i++) {
                int64_t k = base + i * inner;
                s += is_log ? (double)dy[k] : (double)dy[k] * yv[k];
            }
            for (int64_t i = 0; i < D; i++) {
                int64_t k = base + i * inner;
                dx[k] = is_log ? (float)((double)dy[k] - exp((double)yv[k]) * s)
                               : (float)((double)yv[k] * ((double)dy[k] - s));
            }
        }
    return OC_OK;
}
