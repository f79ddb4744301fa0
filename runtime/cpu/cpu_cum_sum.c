/* cpu_cum_sum.c — CumSum of float32 data (ir/ops/op_cum_sum.c): one scan a line along the
 * axis (runtime/cum_sum.h). */
#include "cpu_internal.h"
#include "cum_sum.h"

int cpu_cum_sum(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_cum_sum_args *p = &op_args_of(a->n)->cum_sum;
    const float *in = a->in[0];
    float *out = a->out[0];
    for (int64_t line = 0; line < p->lines; line++) {
        int64_t at = oc_cum_sum_line_start(line, p->len, p->inner);
        oc_cum_sum_line(in + at, out + at, p->len, p->inner, p->exclusive, p->reverse);
    }
    return OC_OK;
}
