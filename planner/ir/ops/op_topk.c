/* op_topk.c — TopK, ArgMax and ArgMin: folded on plan-time values and integer glue the
 * host evaluates each step; on run-time float data lowered at load to TopKOffsets (a
 * kernel: each line's first k elements in runtime/topk_order.h's order, their indices and
 * offsets) and a Gather of the data at those offsets, whose gradient reaches the winners. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_rewrite.h"
#include "topk_order.h"

/* TopK: the k largest (largest 0: smallest) elements of each line of x along the axis, in
 * order, and their indices (int64). Equal values keep their order along the axis (the lower
 * index first, as ONNX says); a NaN counts larger than any number (torch.topk's order). k
 * is input 1 (opset 10 on) or attribute k. Plan-time values and integer glue the host
 * evaluates each step (host_inputs.h): pack_padded_sequence(enforce_sorted=False) sorts its
 * lengths so. */
typedef struct topk_order {
    const ir_tensor *x;
    bool fl, largest;
} topk_order;

/* True when element a of x goes before element b (a < b along the line): the kernels'
 * order (runtime/topk_order.h) for floats, exact for integers. */
static bool topk_before(const topk_order *o, int64_t a, int64_t b) {
    num va = op_fold_num_get(o->x, a), vb = op_fold_num_get(o->x, b);
    if (o->fl) return oc_topk_before_f64(va.f, a, vb.f, b, o->largest ? OC_TOPK_LARGEST : 0);
    return va.i != vb.i ? (o->largest ? va.i > vb.i : va.i < vb.i) : a < b;
}

/* Stable merge sort of the offsets pos[0..n) by topk_before (tmp: n more). */
static void topk_sort(const topk_order *o, int64_t *pos, int64_t *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = topk_before(o, pos[j], pos[i]) ? pos[j++] : pos[i++];
            while (i < mid) tmp[k++] = pos[i++];
            while (j < hi) tmp[k++] = pos[j++];
        }
        memcpy(pos, tmp, (size_t)n * sizeof *pos);
    }
}

/* TopKOffsets(x; k, axis, largest[, nan_first]) inserted at `node`: its indices written to
 * *it (a new "<base>/indices" when -1); returns its offsets ("<base>/offsets"). */
static int insert_top_k_offsets(ir_graph *g, int node, const char *base, int xt, int *it, int64_t k,
                                int64_t axis, bool largest, bool nan_first) {
    *it = op_rewrite_insert(g, node, base, "indices", OP_TOP_K_OFFSETS, xt, -1, *it);
    char *oname = oc_sprintf("%s/offsets", base);
    int ot = ir_tensor_add(g, oname, IR_DTYPE_UNDEFINED);
    oc_free(oname);
    ir_node_add_output(g, node, ot);
    op_rewrite_attr_int(g, node, "k", k);
    op_rewrite_attr_int(g, node, "axis", axis);
    op_rewrite_attr_int(g, node, "largest", largest);
    if (nan_first) op_rewrite_attr_int(g, node, "nan_first", 1);
    return ot;
}

/* TopK's k (input 1, or attribute k before opset 10) as a plan-time value. */
static int topk_k(ir_graph *g, ir_node *n, int64_t opset, int64_t *k, oc_err *err) {
    if (opset < 10 && n->n_inputs < 2) {
        *k = ir_attr_int(n, "k", -1);
        return OC_OK;
    }
    ir_tensor *kt;
    int64_t nk;
    if (op_fold_need_value(g, n, 1, &kt, err)) return OC_ERR;
    if ((kt->dtype != IR_DTYPE_INT64 && kt->dtype != IR_DTYPE_INT32) || !ir_tensor_numel(kt, &nk) ||
        nk != 1)
        return oc_fail(err, "k '%s' must be one int64 value", kt->name);
    *k = op_fold_num_get(kt, 0).i;
    return OC_OK;
}

static int topk_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    int64_t axis, k;
    if (op_fold_need_value(g, n, 0, &x, err)) return OC_ERR;
    if (x->rank < 1) return oc_fail(err, "input '%s' is a scalar", x->name);
    if (op_axis(ir_attr_int(n, "axis", -1), x->rank, "axis", &axis, err)) return OC_ERR;
    if (topk_k(g, n, opset, &k, err)) return OC_ERR;
    int64_t len = x->dims[axis];
    if (k < 0 || k > len)
        return oc_fail(err,
                       "k (%" PRId64 ") is outside [0, %" PRId64 "], dim %" PRId64 " of input '%s'",
                       k, len, axis, x->name);
    int64_t y[IR_MAX_RANK], inner = 1, numel;
    memcpy(y, x->dims, sizeof y);
    y[axis] = k;
    for (int d = (int)axis + 1; d < x->rank; d++) inner *= x->dims[d];
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    op_set_out(g, n, 1, IR_DTYPE_INT64, x->rank, y);
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    int64_t *ind = oc_malloc((size_t)(numel ? numel : 1) * sizeof *ind),
            *pos = oc_malloc((size_t)(len ? 2 * len : 1) * sizeof *pos);
    size_t es = (size_t)ir_dtype_size(x->dtype);
    topk_order ord = {x, op_fold_is_float(x->dtype), ir_attr_int(n, "largest", 1) != 0};
    for (int64_t line = 0; k > 0 && line < numel / k; line++) {
        int64_t base = (line / inner) * len * inner + line % inner;
        int64_t obase = (line / inner) * k * inner + line % inner;
        for (int64_t j = 0; j < len; j++) pos[j] = base + j * inner;
        topk_sort(&ord, pos, pos + len, len);
        for (int64_t j = 0; j < k; j++) {
            int64_t at = obase + j * inner;
            memcpy(buf + (size_t)at * es, (const uint8_t *)x->data + (size_t)pos[j] * es, es);
            ind[at] = (pos[j] - base) / inner;
        }
    }
    oc_free(pos);
    ir_tensor *yi = ir_node_out(g, n, 1);
    if (yi) ir_tensor_set_data(yi, ind, (size_t)numel * sizeof *ind);
    oc_free(ind);
    return op_fold_set(g, n, buf, numel);
}

/* op_def.lower: TopK of run-time float data (an activation: a mixture of experts' routing,
 * k-max pooling) at a plan-time k: TopKOffsets(x) ("<node>/indices": the indices, and each
 * element's offset in x, a kernel of its own, topk_order.h) then the values a Gather of x
 * flattened at the offsets (the node itself), whose gradient scatter-adds dValues back to
 * the chosen elements -- torch.topk's gradient. */
static int topk_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    int64_t axis, k;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x) || !ir_dtype_is_compute(x->dtype)) return OC_OK; /* folds (the host) */
    if (x->rank < 1) return oc_fail(err, "input '%s' is a scalar", x->name);
    if (op_axis(ir_attr_int(n, "axis", -1), x->rank, "axis", &axis, err) ||
        topk_k(g, n, g->opset, &k, err))
        return OC_ERR;
    if (k < 0 || k > x->dims[axis])
        return oc_fail(err,
                       "k (%" PRId64 ") is outside [0, %" PRId64 "], dim %" PRId64 " of input '%s'",
                       k, x->dims[axis], axis, x->name);
    bool largest = ir_attr_int(n, "largest", 1) != 0;
    int xt = n->inputs[0], it = n->n_outputs > 1 ? n->outputs[1] : -1;
    char *base = oc_strdup(n->name);
    if (it >= 0) { /* the indices: TopKOffsets' output 0 */
        n->n_outputs = 1;
        g->tensors[it].producer = -1;
    }
    int ot = insert_top_k_offsets(g, node, base, xt, &it, k, axis, largest, false);
    int flat = op_rewrite_flatten(g, node + 1, base, "flat", xt);
    op_rewrite_become(g, node + 2, OP_GATHER);
    ir_node_add_input(g, node + 2, flat);
    ir_node_add_input(g, node + 2, ot);
    op_rewrite_attr_int(g, node + 2, "axis", 0);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* ArgMax / ArgMin: the index along the axis of each line's largest (smallest) element, int64,
 * the axis kept as 1 (keepdims) or dropped; equal values by the first index, or the last
 * (select_last_index); a NaN wins (numpy's and torch's). Folded on plan-time values and the
 * host's integer glue. */
static bool arg_better(num v, num w, bool fl, bool max) {
    if (fl) {
        bool vn = v.f != v.f, wn = w.f != w.f;
        if (vn || wn) return vn && !wn;
        return max ? v.f > w.f : v.f < w.f;
    }
    return max ? v.i > w.i : v.i < w.i;
}

static int arg_shape(const ir_node *n, const ir_tensor *x, int64_t *axis, int *rank, int64_t *y,
                     oc_err *err) {
    if (x->rank < 1) return oc_fail(err, "input '%s' is a scalar", x->name);
    if (op_axis(ir_attr_int(n, "axis", 0), x->rank, "axis", axis, err)) return OC_ERR;
    if (x->dims[*axis] == 0)
        return oc_fail(err, "input '%s' has no elements along axis %" PRId64, x->name, *axis);
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    *rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != *axis) y[(*rank)++] = x->dims[d];
        else if (keep) y[(*rank)++] = 1;
    return OC_OK;
}

static int arg_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    int64_t axis, y[IR_MAX_RANK], numel;
    int rank;
    if (op_fold_need_value(g, n, 0, &x, err) || arg_shape(n, x, &axis, &rank, y, err))
        return OC_ERR;
    op_set_out(g, n, 0, IR_DTYPE_INT64, rank, y);
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    int64_t len = x->dims[axis], inner = 1, *out = (int64_t *)buf;
    for (int d = (int)axis + 1; d < x->rank; d++) inner *= x->dims[d];
    bool fl = op_fold_is_float(x->dtype), max = n->op == OP_ARG_MAX,
         last = ir_attr_int(n, "select_last_index", 0) != 0;
    for (int64_t l = 0; l < numel; l++) {
        int64_t base = (l / inner) * len * inner + l % inner, best = 0;
        num bv = op_fold_num_get(x, base);
        for (int64_t p = 1; p < len; p++) {
            num v = op_fold_num_get(x, base + p * inner);
            bool tie = !arg_better(v, bv, fl, max) && !arg_better(bv, v, fl, max);
            if (arg_better(v, bv, fl, max) || (last && tie)) best = p, bv = v;
        }
        out[l] = best;
    }
    return op_fold_set(g, n, buf, numel);
}

/* op_def.lower: ArgMax / ArgMin of run-time float data: TopKOffsets with k 1 (its indices;
 * a NaN first), then a Reshape to the output's dims (the axis dropped unless keepdims). */
static int arg_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    int64_t axis, y[IR_MAX_RANK];
    int rank;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x) || !ir_dtype_is_compute(x->dtype)) return OC_OK; /* folds (the host) */
    if (arg_shape(n, x, &axis, &rank, y, err)) return OC_ERR;
    bool max = n->op == OP_ARG_MAX, last = ir_attr_int(n, "select_last_index", 0) != 0;
    int xt = n->inputs[0];
    char *base = oc_strdup(n->name);
    int it = -1;
    insert_top_k_offsets(g, node, base, xt, &it, 1, axis, max, true);
    if (last) op_rewrite_attr_int(g, node, "last", 1);
    int ys = op_rewrite_ints(g, base, "shape", rank, y);
    op_rewrite_become(g, node + 1, OP_RESHAPE); /* [.., 1, ..] as the output's dims */
    ir_node_add_input(g, node + 1, it);
    ir_node_add_input(g, node + 1, ys);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

static const op_role arg_roles[] = {OP_IN_DATA}; /* run-time data runs (arg_lower) */

const op_def op_def_arg_max = {.min_inputs = 1,
                               .max_inputs = 1,
                               .min_outputs = 1,
                               .max_outputs = 1,
                               .roles = arg_roles,
                               .n_roles = 1,
                               .infer = arg_infer,
                               .lower = arg_lower};
const op_def op_def_arg_min = {.min_inputs = 1,
                               .max_inputs = 1,
                               .min_outputs = 1,
                               .max_outputs = 1,
                               .roles = arg_roles,
                               .n_roles = 1,
                               .infer = arg_infer,
                               .lower = arg_lower};

/* x (run-time float data) stays data: the parameters behind it keep their gradients. */
static const op_role topk_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_top_k = {.min_inputs = 1,
                             .max_inputs = 2,
                             .min_outputs = 2,
                             .max_outputs = 2,
                             .roles = topk_roles,
                             .n_roles = 2,
                             .infer = topk_infer,
                             .lower = topk_lower};

/* TopKOffsets(x; k, axis, largest) -> indices, offsets: int64, x's dims with k along the
 * axis. No gradient: the values are the Gather of topk_lower. */
static int top_k_offsets_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    int64_t axis, k = ir_attr_int(n, "k", -1), y[IR_MAX_RANK];
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (!ir_dtype_is_compute(x->dtype))
        return oc_fail(err, "input '%s' is %s; TopKOffsets takes float data", x->name,
                       ir_dtype_name(x->dtype));
    if (x->rank < 1 || op_axis(ir_attr_int(n, "axis", -1), x->rank, "axis", &axis, err))
        return x->rank < 1 ? oc_fail(err, "input '%s' is a scalar", x->name) : OC_ERR;
    if (k < 0 || k > x->dims[axis])
        return oc_fail(err, "k (%" PRId64 ") is outside [0, %" PRId64 "]", k, x->dims[axis]);
    memcpy(y, x->dims, sizeof y);
    y[axis] = k;
    op_set_out(g, n, 0, IR_DTYPE_INT64, x->rank, y);
    op_set_out(g, n, 1, IR_DTYPE_INT64, x->rank, y);
    return OC_OK;
}

static int top_k_offsets_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    op_top_k_args *p = &op_args_new(n)->top_k;
    p->k = ir_attr_int(n, "k", 0);
    p->largest = ir_attr_int(n, "largest", 1) != 0;
    p->last = ir_attr_int(n, "last", 0) != 0;
    p->nan_first = ir_attr_int(n, "nan_first", 0) != 0;
    return op_axis(ir_attr_int(n, "axis", -1), x->rank, "axis", &p->axis, err);
}

static const op_role top_k_offsets_roles[] = {OP_IN_DATA};

const op_def op_def_top_k_offsets = {.min_inputs = 1,
                                     .max_inputs = 1,
                                     .min_outputs = 2,
                                     .max_outputs = 2,
                                     .roles = top_k_offsets_roles,
                                     .n_roles = 1,
                                     .infer = top_k_offsets_infer,
                                     .decode = top_k_offsets_decode};
