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

int kernel_pad_mode_of(const kernel_args *a, kernel_pad_mode *mode, oc_err *err) {
    const char *ms = ir_attr_string(a->n, "mode", "constant");
    if (strcmp(ms, "constant") == 0) *mode = KERNEL_PAD_CONSTANT;
    else if (strcmp(ms, "reflect") == 0) *mode = KERNEL_PAD_REFLECT;
    else if (strcmp(ms, "edge") == 0) *mode = KERNEL_PAD_EDGE;
    else return kernel_fail(a, err, "mode '%s' is not supported (constant, reflect, edge)", ms);
    return OC_OK;
}

int kernel_pad_attrs(const kernel_args *a, const ir_tensor *x, int64_t *begin, uint64_t *fill,
                     oc_err *err) {
    const int64_t *pads;
    int rank = x->rank;
    if (ir_attr_ints(a->n, "pads", &pads) != 2 * rank)
        return kernel_fail(a, err, "attribute 'pads' needs %d values", 2 * rank);
    for (int i = 0; i < rank; i++) begin[i] = pads[i];
    float v = ir_attr_float(a->n, "value", 0.0f);
    *fill = 0;
    if (x->dtype == IR_DTYPE_FLOAT) memcpy(fill, &v, 4);
    else if (v != 0.0f) return kernel_fail(a, err, "attribute 'value' on a non-float tensor");
    return OC_OK;
}

int kernel_pad_grad_begin(const kernel_args *a, int rank, int64_t *begin, oc_err *err) {
    const int64_t *pads;
    if (ir_attr_ints(a->n, "pads", &pads) != 2 * rank)
        return kernel_fail(a, err, "attribute 'pads' needs %d values", 2 * rank);
    for (int i = 0; i < rank; i++) begin[i] = -pads[i];
    return OC_OK;
}
