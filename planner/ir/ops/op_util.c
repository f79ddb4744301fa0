/* op_util.c — see op_util.h. */
#include "ir/ops/op_util.h"

#include <inttypes.h>
#include <string.h>

#include "ir/ops/op_fold_num.h"

bool op_data_zero(const ir_tensor *t) {
    if (!t || !t->data || t->data_src != IR_DATA_INLINE) return false;
    for (size_t i = 0; i < t->data_bytes; i++)
        if (((const uint8_t *)t->data)[i]) return false;
    return true;
}

bool op_is_value(const ir_tensor *t) {
    return t && t->data_src == IR_DATA_INLINE && t->kind == IR_KIND_CONSTANT;
}

bool op_int_scalar(const ir_tensor *t, bool with_bool, int64_t *v) {
    int64_t n;
    if (!t || t->data_src != IR_DATA_INLINE || !ir_tensor_numel(t, &n) || n != 1) return false;
    if (t->dtype == IR_DTYPE_INT64 && t->data_bytes == 8) {
        memcpy(v, t->data, 8);
    } else if (t->dtype == IR_DTYPE_INT32 && t->data_bytes == 4) {
        int32_t w;
        memcpy(&w, t->data, 4);
        *v = w;
    } else if (with_bool && t->dtype == IR_DTYPE_BOOL && t->data_bytes == 1) {
        *v = ((const uint8_t *)t->data)[0] != 0;
    } else {
        return false;
    }
    return true;
}

int op_operand_dtype(const ir_tensor *a, const ir_tensor *b, ir_dtype *dt, oc_err *err) {
    *dt = a->dtype;
    if (a->dtype == b->dtype) return OC_OK;
    bool floats = ir_dtype_is_compute(a->dtype) && ir_dtype_is_compute(b->dtype);
    if (floats && op_is_value(b) && ir_dtype_is_half(a->dtype)) return OC_OK;
    if (floats && op_is_value(a) && ir_dtype_is_half(b->dtype)) {
        *dt = b->dtype;
        return OC_OK;
    }
    return oc_fail(err, "inputs '%s' (%s) and '%s' (%s) differ in type", a->name,
                   ir_dtype_name(a->dtype), b->name, ir_dtype_name(b->dtype));
}

void op_set_out_sequence(ir_graph *g, ir_node *n, int i, ir_dtype dt, const int *items,
                         int n_items) {
    ir_tensor *y = ir_node_out(g, n, i);
    if (!y) return;
    y->dtype = dt;
    ir_tensor_set_shape(y, 0, NULL);
    y->is_sequence = true;
    oc_free(y->items);
    y->items = oc_malloc(((size_t)n_items + 1) * sizeof *y->items);
    if (n_items) memcpy(y->items, items, (size_t)n_items * sizeof *items);
    y->n_items = n_items;
}

int op_in_shaped(ir_graph *g, ir_node *n, int i, ir_tensor **t, oc_err *err) {
    ir_tensor *x = ir_node_in(g, n, i);
    if (!x) return oc_fail(err, "input %d is missing", i);
    if (x->is_sequence)
        return oc_fail(err,
                       "input '%s' is a sequence of tensors; outcore reads sequences with "
                       "SequenceAt, SequenceInsert and ConcatFromSequence only",
                       x->name);
    if (!ir_tensor_shape_known(x))
        return oc_fail(err, "input '%s' has an unknown or unbound shape", x->name);
    *t = x;
    return OC_OK;
}

int op_in_int64s(ir_graph *g, ir_node *n, int i, const int64_t **v, int64_t *count, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, i, &x, err)) return OC_ERR;
    if (!ir_tensor_int64_values(x, v, count))
        return oc_fail(err,
                       "input '%s' must be an int64 value known at plan time "
                       "(a constant or a folded shape computation)",
                       x->name);
    return OC_OK;
}

bool op_in_scalar_f(ir_graph *g, ir_node *n, int i, double *v) {
    ir_tensor *x = ir_node_in(g, n, i);
    int64_t numel;
    if (!x || x->data_src != IR_DATA_INLINE || !ir_tensor_numel(x, &numel) || numel != 1 ||
        !op_fold_dtype(x->dtype) || x->dtype == IR_DTYPE_BOOL)
        return false;
    *v = op_fold_num_get(x, 0).f; /* integers too (.f holds them): torch.export's x ** 3 */
    return true;
}

void op_set_out(ir_graph *g, ir_node *n, int i, ir_dtype dt, int rank, const int64_t *dims) {
    ir_tensor *y = ir_node_out(g, n, i);
    if (!y) return;
    y->dtype = dt;
    ir_tensor_set_shape(y, rank, dims);
}

void op_set_out_like(ir_graph *g, ir_node *n, int i, const ir_tensor *src) {
    op_set_out(g, n, i, src->dtype, src->rank, src->dims);
}

int op_axis(int64_t axis, int rank, const char *what, int64_t *out, oc_err *err) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return oc_fail(err, "%s %" PRId64 " is out of range for rank %d", what, axis, rank);
    *out = a;
    return OC_OK;
}

int op_attr_ints_n(const ir_node *n, const char *name, int count, int64_t dflt, int64_t *out,
                   oc_err *err) {
    const int64_t *v;
    int k = ir_attr_ints(n, name, &v);
    if (k < 0) {
        for (int i = 0; i < count; i++) out[i] = dflt;
        return OC_OK;
    }
    if (k != count)
        return oc_fail(err, "attribute '%s' has %d values, expected %d", name, k, count);
    memcpy(out, v, (size_t)count * sizeof *out);
    return OC_OK;
}

#define OP_WINDOW_MAX ((int64_t)1 << 31)

int op_window_read(const ir_node *n, int nsp, const int64_t *in, const int64_t *kernel_dims,
                   op_window *w, oc_err *err) {
    memset(w, 0, sizeof *w);
    w->nsp = nsp;
    const int64_t *ks;
    int nk = ir_attr_ints(n, "kernel_shape", &ks);
    if (nk >= 0) {
        if (nk != nsp)
            return oc_fail(err, "kernel_shape has %d values for %d spatial dims", nk, nsp);
        memcpy(w->kernel, ks, (size_t)nsp * sizeof *ks);
    } else if (kernel_dims) {
        memcpy(w->kernel, kernel_dims, (size_t)nsp * sizeof *kernel_dims);
    } else {
        return oc_fail(err, "attribute 'kernel_shape' is required");
    }
    int64_t pads[2 * IR_MAX_RANK];
    if (op_attr_ints_n(n, "strides", nsp, 1, w->stride, err) ||
        op_attr_ints_n(n, "dilations", nsp, 1, w->dilation, err) ||
        op_attr_ints_n(n, "pads", 2 * nsp, 0, pads, err))
        return OC_ERR;
    for (int i = 0; i < nsp; i++) {
        if (w->kernel[i] <= 0 || w->stride[i] <= 0 || w->dilation[i] <= 0)
            return oc_fail(err, "kernel, strides and dilations must be positive");
        if (pads[i] < 0 || pads[i + nsp] < 0) return oc_fail(err, "pads must be non-negative");
        /* Bounded so that window arithmetic on int64 extents cannot overflow. */
        if (w->kernel[i] > OP_WINDOW_MAX || w->stride[i] > OP_WINDOW_MAX ||
            w->dilation[i] > OP_WINDOW_MAX || pads[i] > OP_WINDOW_MAX ||
            pads[i + nsp] > OP_WINDOW_MAX)
            return oc_fail(err, "kernel, strides, dilations and pads must be at most %" PRId64,
                           OP_WINDOW_MAX);
        w->pad_begin[i] = pads[i];
        w->pad_end[i] = pads[i + nsp];
    }
    w->ceil_mode = ir_attr_int(n, "ceil_mode", 0) != 0;
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0) return OC_OK;
    bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
    if (!upper && !lower && strcmp(ap, "VALID") != 0)
        return oc_fail(err, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                       ap);
    for (int i = 0; i < nsp; i++) {
        w->pad_begin[i] = w->pad_end[i] = 0;
        if (!upper && !lower) continue;
        int64_t out = (in[i] + w->stride[i] - 1) / w->stride[i];
        int64_t span = (w->kernel[i] - 1) * w->dilation[i] + 1; /* both <= 2^31 */
        int64_t total;
        if (!oc_mul_i64(out - 1, w->stride[i], &total) || !oc_add_i64(total, span - in[i], &total))
            return oc_fail(err, "auto_pad: the padding of spatial dim %d overflows", i);
        if (total < 0) total = 0;
        w->pad_begin[i] = upper ? total / 2 : total - total / 2;
        w->pad_end[i] = total - w->pad_begin[i];
    }
    return OC_OK;
}

int op_window_out(const op_window *w, int i, int64_t in, int64_t *out, oc_err *err) {
    int64_t span = (w->kernel[i] - 1) * w->dilation[i] + 1;
    int64_t room = in + w->pad_begin[i] + w->pad_end[i] - span;
    if (room < 0)
        return oc_fail(err,
                       "window of %" PRId64 " does not fit spatial extent %" PRId64 " (+ padding)",
                       span, in);
    int64_t o = (w->ceil_mode ? (room + w->stride[i] - 1) / w->stride[i] : room / w->stride[i]) + 1;
    /* The last window must start inside the input or its begin padding. */
    if (w->ceil_mode && (o - 1) * w->stride[i] >= in + w->pad_begin[i]) o--;
    *out = o;
    return OC_OK;
}

int op_broadcast(const ir_tensor *a, const ir_tensor *b, int *rank, int64_t *out, oc_err *err) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return oc_fail(err,
                           "shapes of '%s' and '%s' do not broadcast (dim %d: %" PRId64
                           " vs %" PRId64 ")",
                           a->name, b->name, i, da, db);
        out[i] = da == 1 ? db : da;
    }
    *rank = r;
    return OC_OK;
}

bool op_read_for_shape_only(const ir_graph *g, int t) {
    const ir_tensor *x = &g->tensors[t];
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o] == t) return false;
    for (int c = 0; c < x->n_consumers; c++) {
        const ir_node *r = &g->nodes[x->consumers[c]];
        bool type_only =
            r->op == OP_CAST_LIKE && r->n_inputs > 1 && r->inputs[1] == t && r->inputs[0] != t;
        if (r->op != OP_SHAPE && !type_only) return false;
    }
    return x->n_consumers > 0;
}
