/* kernel_args.c — helpers shared by every backend's kernels (kernels.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

const ir_tensor *kernel_in(const kernel_args *a, int i) {
    if (i >= a->n->n_inputs || a->n->inputs[i] < 0) return NULL;
    return &a->g->tensors[a->n->inputs[i]];
}

const ir_tensor *kernel_out(const kernel_args *a, int i) {
    if (i >= a->n->n_outputs || a->n->outputs[i] < 0) return NULL;
    return &a->g->tensors[a->n->outputs[i]];
}

int64_t kernel_numel(const ir_tensor *t) {
    int64_t n = 0;
    bool ok = ir_tensor_numel(t, &n);
    OC_ASSERT(ok);
    return n;
}

int kernel_fail(const kernel_args *a, oc_err *err, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return oc_fail(err, "node '%s' (%s): %s", a->n->name, a->n->op_type, msg);
}

int kernel_want_dtype(const kernel_args *a, const ir_tensor *t, ir_dtype dt, oc_err *err) {
    if (t->dtype == dt) return OC_OK;
    return kernel_fail(a, err, "tensor '%s' has dtype %s; this kernel supports %s", t->name,
                       ir_dtype_name(t->dtype), ir_dtype_name(dt));
}

void kernel_softmax_rows(const kernel_args *a, const ir_tensor *t, int64_t *outer, int64_t *D,
                         int64_t *inner) {
    const op_softmax_args *p = &op_args_of(a->n)->softmax;
    *D = 1;
    *inner = 1;
    for (int d = (int)p->axis; d < t->rank; d++) {
        if (p->flatten || d == p->axis) *D *= t->dims[d];
        else *inner *= t->dims[d];
    }
    int64_t row = *D * *inner;
    *outer = row ? kernel_numel(t) / row : 0;
}
