/* kernel_args.c — helpers shared by every backend's kernels (kernels.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"

#include "ir/ops/op_update.h"

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

int kernel_update_layout(const kernel_args *a, op_update_layout *l, oc_err *err) {
    OC_ASSERT(op_update_layout_of(a->n, l));
    for (int i = 0; i < l->width * l->members; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    return OC_OK;
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

bool kernel_touches_half(const ir_graph *g, const ir_node *n) {
    /* Casts convert themselves; a plan's copies run no kernel */
    if (n->op == OP_CAST || n->op == OP_CAST_LIKE || n->op == OP_SWAP_OUT || n->op == OP_SWAP_IN)
        return false;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (t >= 0 && ir_dtype_is_half(g->tensors[t].dtype)) return true;
    }
    return false;
}

void kernel_view_init(kernel_view *v, const ir_graph *g, const ir_node *n, bool widen,
                      bool transpose) {
    int nt = n->n_inputs + n->n_outputs;
    ir_node_view_init(&v->base, g, n);
    ir_node_view_logical(&v->base);
    v->nhwc = n->channels_last && transpose;
    if (v->nhwc) v->base.n.channels_last = false;
    v->was = oc_calloc((size_t)nt + 1, sizeof *v->was);
    for (int k = 0; k < nt; k++) {
        if (v->base.slot[k] < 0) continue;
        v->was[k] = v->base.t[k].dtype;
        if (widen && ir_dtype_is_half(v->was[k])) v->base.t[k].dtype = IR_DTYPE_FLOAT;
    }
}

void kernel_view_free(kernel_view *v) {
    ir_node_view_free(&v->base);
    oc_free(v->was);
    memset(v, 0, sizeof *v);
}

bool kernel_view_half(const kernel_view *v, int k) {
    return v->base.slot[k] >= 0 && v->base.t[k].dtype != v->was[k];
}

bool kernel_view_nhwc(const kernel_view *v, int k) {
    return v->nhwc && v->base.slot[k] >= 0 && v->base.t[k].rank == 4;
}

bool kernel_view_moved(const kernel_view *v, int k) {
    return kernel_view_half(v, k) || kernel_view_nhwc(v, k);
}

oc_resize_kind kernel_resize_kind(const kernel_args *a) {
    const op_resize_args *p = &op_args_of(a->n)->resize;
    return (oc_resize_kind){.mode = (int)p->mode,
                            .coord = (int)p->coord,
                            .nearest = (int)p->nearest,
                            .exclude_outside = p->exclude_outside,
                            .antialias = p->antialias,
                            .cubic_a = p->cubic_a};
}
