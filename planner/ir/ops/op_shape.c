/* op_shape.c — Constant, Shape, Gather, Unsqueeze, Concat, Reshape, Flatten, Pad:
 * shapes, and plan-time folding of the int64 shape subgraphs exporters emit
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape). */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

static bool in_has_value(ir_graph *g, ir_node *n, int i) {
    return op_is_value(ir_node_in(g, n, i));
}

static int constant_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *y = ir_node_out(g, n, 0);
    const ir_attr *a;
    if ((a = ir_attr_find(n, "value")) && a->type == IR_ATTR_TENSOR) {
        y->dtype = a->t->dtype;
        ir_tensor_set_shape(y, a->t->rank, a->t->dims);
        int64_t bytes;
        ir_tensor_bytes(y, &bytes);
        bool empty = bytes == 0; /* e.g. the shape [] of a scalar: no bytes to hold */
        if (!empty && (a->t->data_src != IR_DATA_INLINE || (int64_t)a->t->data_bytes != bytes))
            return oc_fail(err, "attribute 'value' has no data or the wrong amount");
        ir_tensor_set_data(y, a->t->data, empty ? 0 : a->t->data_bytes);
    } else if ((a = ir_attr_find(n, "value_float")) && a->type == IR_ATTR_FLOAT) {
        y->dtype = IR_DTYPE_FLOAT;
        ir_tensor_set_shape(y, 0, NULL);
        ir_tensor_set_data(y, &a->f, sizeof a->f);
    } else if ((a = ir_attr_find(n, "value_int")) && a->type == IR_ATTR_INT) {
        y->dtype = IR_DTYPE_INT64;
        ir_tensor_set_shape(y, 0, NULL);
        ir_tensor_set_data(y, &a->i, sizeof a->i);
    } else if ((a = ir_attr_find(n, "value_floats")) && a->type == IR_ATTR_FLOATS) {
        int64_t len = a->n;
        y->dtype = IR_DTYPE_FLOAT;
        ir_tensor_set_shape(y, 1, &len);
        ir_tensor_set_data(y, a->floats, (size_t)a->n * sizeof(float));
    } else if ((a = ir_attr_find(n, "value_ints")) && a->type == IR_ATTR_INTS) {
        int64_t len = a->n;
        y->dtype = IR_DTYPE_INT64;
        ir_tensor_set_shape(y, 1, &len);
        ir_tensor_set_data(y, a->ints, (size_t)a->n * sizeof(int64_t));
    } else {
        return oc_fail(err,
                       "needs one of the attributes value, value_float, value_int, "
                       "value_floats, value_ints (sparse and string constants are not supported)");
    }
    return OC_OK;
}

/* data -> int64 vector of its dims[start:end] (opset 15 start/end). */
static int shape_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    int64_t start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", x->rank);
    if (start < 0) start += x->rank;
    if (end < 0) end += x->rank;
    if (start < 0) start = 0;
    if (start > x->rank) start = x->rank;
    if (end > x->rank) end = x->rank;
    int64_t len = end > start ? end - start : 0;
    op_set_out(g, n, 0, IR_DTYPE_INT64, 1, &len);
    ir_tensor_set_data(ir_node_out(g, n, 0), x->dims + start, (size_t)len * sizeof(int64_t));
    return OC_OK;
}

/* Reads index j of an int32/int64 indices tensor. */
static int64_t index_at(const ir_tensor *t, int64_t j) {
    if (t->dtype == IR_DTYPE_INT32) {
        int32_t v;
        memcpy(&v, (const uint8_t *)t->data + j * 4, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, (const uint8_t *)t->data + j * 8, 8);
    return v;
}

/* data (d0..dr-1), indices (i..) along axis -> (d0..daxis-1, i.., daxis+1..) */
static int gather_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *idx;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &idx, err)) return OC_ERR;
    if (idx->dtype != IR_DTYPE_INT64 && idx->dtype != IR_DTYPE_INT32)
        return oc_fail(err, "indices '%s' must be int32 or int64", idx->name);
    int64_t axis;
    if (x->rank < 1 || op_axis(ir_attr_int(n, "axis", 0), x->rank, "axis", &axis, err))
        return oc_fail(err, "axis out of range for data '%s'", x->name);
    int rank = x->rank - 1 + idx->rank;
    if (rank > IR_MAX_RANK) return oc_fail(err, "output rank %d is too large", rank);
    int64_t y[IR_MAX_RANK];
    int k = 0;
    for (int i = 0; i < axis; i++) y[k++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++) y[k++] = idx->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++) y[k++] = x->dims[i];
    op_set_out(g, n, 0, x->dtype, rank, y);
    int64_t nidx;
    if (idx->data_src == IR_DATA_INLINE && ir_tensor_numel(idx, &nidx)) /* known indices */
        for (int64_t j = 0; j < nidx; j++) {
            int64_t v = index_at(idx, j);
            if (v < -x->dims[axis] || v >= x->dims[axis])
                return oc_fail(err, "index %" PRId64 " out of range [-%" PRId64 ", %" PRId64 ")", v,
                               x->dims[axis], x->dims[axis]);
        }
    if (!in_has_value(g, n, 0) || !in_has_value(g, n, 1)) return OC_OK;
    /* Fold: out[o, j, i] = data[o, indices[j], i]. */
    int64_t outer = 1, inner = 1, es = ir_dtype_size(x->dtype);
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++) inner *= x->dims[i];
    ir_tensor_numel(idx, &nidx);
    int64_t out_bytes;
    if (!ir_tensor_bytes(ir_node_out(g, n, 0), &out_bytes) || out_bytes > OP_FOLD_MAX_BYTES)
        return oc_fail(err,
                       "folding this Gather of constants would take more than %" PRId64 " bytes",
                       OP_FOLD_MAX_BYTES);
    size_t chunk = (size_t)(inner * es);
    uint8_t *buf = oc_malloc((size_t)out_bytes + 1);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < nidx; j++) {
            int64_t v = index_at(idx, j);
            if (v < 0) v += x->dims[axis];
            if (v < 0 || v >= x->dims[axis]) {
                oc_free(buf);
                return oc_fail(err, "index %" PRId64 " out of range [0, %" PRId64 ")",
                               index_at(idx, j), x->dims[axis]);
            }
            memcpy(buf + (size_t)(o * nidx + j) * chunk,
                   (uint8_t *)x->data + (size_t)(o * x->dims[axis] + v) * chunk, chunk);
        }
    ir_tensor_set_data(ir_node_out(g, n, 0), buf, (size_t)(outer * nidx) * chunk);
    oc_free(buf);
    return OC_OK;
}

/* Inserts size-1 dims at axes (input from opset 13, attribute before). */
static int unsqueeze_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    const int64_t *axes;
    int64_t naxes;
    if (opset >= 13) {
        if (op_in_int64s(g, n, 1, &axes, &naxes, err)) return OC_ERR;
    } else {
        int k = ir_attr_ints(n, "axes", &axes);
        if (k < 0) return oc_fail(err, "attribute 'axes' is required");
        naxes = k;
    }
    int rank = x->rank + (int)naxes;
    if (rank > IR_MAX_RANK) return oc_fail(err, "output rank %d is too large", rank);
    bool ones[IR_MAX_RANK] = {false};
    for (int64_t i = 0; i < naxes; i++) {
        int64_t a;
        if (op_axis(axes[i], rank, "axis", &a, err)) return OC_ERR;
        if (ones[a]) return oc_fail(err, "axis %" PRId64 " repeated", axes[i]);
        ones[a] = true;
    }
    int64_t y[IR_MAX_RANK];
    for (int i = 0, k = 0; i < rank; i++) y[i] = ones[i] ? 1 : x->dims[k++];
    op_set_out(g, n, 0, x->dtype, rank, y);
    if (in_has_value(g, n, 0)) ir_tensor_set_data(ir_node_out(g, n, 0), x->data, x->data_bytes);
    return OC_OK;
}

static int concat_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x0;
    if (op_in_shaped(g, n, 0, &x0, err)) return OC_ERR;
    int64_t axis;
    if (op_axis(ir_attr_int(n, "axis", 0), x0->rank, "axis", &axis, err)) return OC_ERR;
    int64_t y[IR_MAX_RANK];
    memcpy(y, x0->dims, sizeof y);
    y[axis] = 0;
    bool fold = true;
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *x;
        if (op_in_shaped(g, n, i, &x, err)) return OC_ERR;
        if (x->rank != x0->rank || x->dtype != x0->dtype)
            return oc_fail(err, "input '%s' differs in rank or type from '%s'", x->name, x0->name);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return oc_fail(err, "input '%s' dim %d is %" PRId64 ", '%s' has %" PRId64, x->name,
                               d, x->dims[d], x0->name, x0->dims[d]);
        if (!oc_add_i64(y[axis], x->dims[axis], &y[axis]))
            return oc_fail(err, "the concatenated axis overflows");
        fold = fold && op_is_value(x);
    }
    op_set_out(g, n, 0, x0->dtype, x0->rank, y);
    if (!fold) return OC_OK;
    /* Fold: for each outer index, append each input's slab along axis. */
    int64_t outer = 1, inner = ir_dtype_size(x0->dtype), total;
    for (int d = 0; d < axis; d++) outer *= x0->dims[d];
    for (int d = (int)axis + 1; d < x0->rank; d++) inner *= x0->dims[d];
    ir_tensor_bytes(ir_node_out(g, n, 0), &total);
    uint8_t *buf = oc_malloc((size_t)total), *p = buf;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n->n_inputs; i++) {
            ir_tensor *x = ir_node_in(g, n, i);
            size_t slab = (size_t)(x->dims[axis] * inner);
            memcpy(p, (uint8_t *)x->data + (size_t)o * slab, slab);
            p += slab;
        }
    ir_tensor_set_data(ir_node_out(g, n, 0), buf, (size_t)total);
    oc_free(buf);
    return OC_OK;
}

/* data, shape (int64, plan-time) -> data reshaped; 0 copies a dim (unless allowzero), -1 infers. */
static int reshape_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    const int64_t *s;
    int64_t ns, numel;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_int64s(g, n, 1, &s, &ns, err)) return OC_ERR;
    if (ns > IR_MAX_RANK) return oc_fail(err, "target rank %" PRId64 " is too large", ns);
    ir_tensor_numel(x, &numel);
    bool allowzero = ir_attr_int(n, "allowzero", 0) != 0;
    int64_t y[IR_MAX_RANK], known = 1;
    int infer_at = -1;
    for (int i = 0; i < ns; i++) {
        y[i] = s[i];
        if (s[i] == 0 && !allowzero) {
            if (i >= x->rank) return oc_fail(err, "shape has 0 at dim %d beyond input rank", i);
            y[i] = x->dims[i];
        }
        if (y[i] == -1) {
            if (infer_at >= 0) return oc_fail(err, "shape has more than one -1");
            infer_at = i;
        } else if (y[i] < 0) {
            return oc_fail(err, "shape has negative dim %" PRId64, y[i]);
        } else if (!oc_mul_i64(known, y[i], &known)) {
            return oc_fail(err, "shape overflows");
        }
    }
    if (infer_at >= 0) {
        if (known == 0 || numel % known != 0)
            return oc_fail(err, "cannot reshape %" PRId64 " elements of '%s' with -1", numel,
                           x->name);
        y[infer_at] = numel / known;
    } else if (known != numel) {
        char buf[128];
        return oc_fail(err,
                       "cannot reshape '%s' %s (%" PRId64 " elements) into %" PRId64 " elements",
                       x->name, ir_shape_str(x, buf, sizeof buf), numel, known);
    }
    op_set_out(g, n, 0, x->dtype, (int)ns, y);
    if (in_has_value(g, n, 0)) ir_tensor_set_data(ir_node_out(g, n, 0), x->data, x->data_bytes);
    return OC_OK;
}

/* (d0..dr-1) -> (d0*..*daxis-1, daxis*..*dr-1) */
static int flatten_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    int64_t axis = ir_attr_int(n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return oc_fail(err, "axis out of range for rank %d", x->rank);
    int64_t y[2] = {1, 1};
    for (int i = 0; i < x->rank; i++) y[i < axis ? 0 : 1] *= x->dims[i];
    op_set_out(g, n, 0, x->dtype, 2, y);
    /* a plan-time value stays one (BART's legacy export flattens its causal mask's table) */
    if (in_has_value(g, n, 0)) ir_tensor_set_data(ir_node_out(g, n, 0), x->data, x->data_bytes);
    return OC_OK;
}

/* data, pads (int64: begins then ends) [, constant_value [, axes]] -> padded data. */
static int pad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    const int64_t *pads, *axes = NULL;
    int64_t np, naxes = x->rank;
    if (opset >= 11) {
        if (op_in_int64s(g, n, 1, &pads, &np, err)) return OC_ERR;
        if (ir_node_in(g, n, 3) && op_in_int64s(g, n, 3, &axes, &naxes, err)) return OC_ERR;
    } else {
        int k = ir_attr_ints(n, "pads", &pads);
        if (k < 0) return oc_fail(err, "attribute 'pads' is required");
        np = k;
    }
    if (np != 2 * naxes)
        return oc_fail(err, "pads has %" PRId64 " values, expected %" PRId64, np, 2 * naxes);
    const char *mode = ir_attr_string(n, "mode", "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
        strcmp(mode, "wrap"))
        return oc_fail(err, "mode '%s' is not supported (constant, reflect, edge, wrap)", mode);
    int64_t y[IR_MAX_RANK];
    memcpy(y, x->dims, sizeof y);
    for (int64_t i = 0; i < naxes; i++) {
        int64_t a = i;
        if (axes && op_axis(axes[i], x->rank, "axis", &a, err)) return OC_ERR;
        if (!oc_add_i64(y[a], pads[i], &y[a]) || !oc_add_i64(y[a], pads[i + naxes], &y[a]))
            return oc_fail(err, "padding of dim %" PRId64 " overflows", a);
        if (y[a] < 0) return oc_fail(err, "padding makes dim %" PRId64 " negative", a);
        if (strcmp(mode, "wrap") == 0 && (pads[i] < 0 || pads[i + naxes] < 0))
            return oc_fail(err,
                           "mode wrap with a negative pad (a crop) on dim %" PRId64
                           " is not supported (torch crops, then wraps the rest)",
                           a);
    }
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

/* Pad: mode and, before opset 11, the pads and fill value of the
 * attributes; PadGrad: begin offsets into dY (minus the forward's pads). */
int op_decode_pad(const ir_graph *g, ir_node *n, oc_err *err) {
    op_pad_args *p = &op_args_new(n)->pad;
    const char *mode = ir_attr_string(n, "mode", "constant");
    if (strcmp(mode, "constant") == 0) p->mode = OP_PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0) p->mode = OP_PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0) p->mode = OP_PAD_EDGE;
    else if (strcmp(mode, "wrap") == 0) p->mode = OP_PAD_WRAP;
    else return oc_fail(err, "mode '%s' is not supported (constant, reflect, edge, wrap)", mode);
    bool grad = n->op == OP_PAD_GRAD;
    if (!grad && g->opset >= 11) return OC_OK;
    const ir_tensor *x = grad ? ir_node_out((ir_graph *)g, n, 0) : ir_node_in((ir_graph *)g, n, 0);
    const int64_t *pads;
    if (!x || ir_attr_ints(n, "pads", &pads) != 2 * x->rank)
        return oc_fail(err, "attribute 'pads' needs %d values", x ? 2 * x->rank : 0);
    p->pads_from_attr = true;
    for (int i = 0; i < x->rank; i++) p->begin[i] = grad ? -pads[i] : pads[i];
    const ir_tensor *dy = grad ? ir_node_in((ir_graph *)g, n, 0) : NULL;
    for (int i = 0; dy && i < x->rank; i++) { /* dY = dX padded */
        int64_t e;
        if (dy->rank != x->rank || !oc_add_i64(x->dims[i], pads[i], &e) ||
            !oc_add_i64(e, pads[i + x->rank], &e) || e != dy->dims[i])
            return oc_fail(err, "pads and input_shape do not give the shape of '%s'", dy->name);
    }
    float v = ir_attr_float(n, "value", 0.0f);
    if (x->dtype == IR_DTYPE_FLOAT) memcpy(&p->fill, &v, 4);
    else if (v != 0.0f) return oc_fail(err, "attribute 'value' on a non-float tensor");
    return OC_OK;
}

/* One axis, normalised against the rank of input 0 (Concat, ConcatGrad, Gather). */
static int op_decode_axis(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    if (!x) return oc_fail(err, "input 0 is empty");
    return op_axis(ir_attr_int(n, "axis", 0), x->rank, "axis", &op_args_new(n)->axis.axis, err);
}

/* Shape's [start, end), negative values counting from the end, clamped. */
static int shape_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)err;
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    int64_t r = x->rank, start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    op_shape_args *p = &op_args_new(n)->shape;
    p->start = start < 0 ? 0 : start > r ? r : start;
    p->end = end < 0 ? 0 : end > r ? r : end;
    return OC_OK;
}

static const op_role data_role[] = {OP_IN_DATA};
static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
static const op_role const_role[] = {OP_IN_CONST};

const op_def op_def_constant = {
    .min_inputs = 0,
    .max_inputs = 0,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = const_role,
    .n_roles = 1,
    .infer = constant_infer,
};
const op_def op_def_shape = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = shape_infer,
    .decode = shape_decode,
};
/* dData = GatherGrad(dY, indices): zeros, dY's slabs added at their indices
 * (repeated indices accumulate, in index order). Reads the indices. */
static int gather_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    int64_t dims[IR_MAX_RANK], axis = op_args_of(grad_fwd(c))->axis.axis;
    memcpy(dims, x->dims, sizeof dims);
    int b = grad_node(c, "grad", OP_GATHER_GRAD);
    grad_in(c, b, dy);
    grad_in(c, b, grad_fwd_in(c, 1));
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "input_shape", rank, dims);
    grad_attr_int(c, b, "axis", axis);
    const ir_attr *pad = ir_attr_find(grad_fwd(c), OC_ATTR_PADDING_IDX);
    if (pad && pad->type == IR_ATTR_INT) grad_attr_int(c, b, "padding_idx", pad->i);
    return grad_finish(c, b);
}

/* GatherGrad(dY, indices) -> dX (input_shape); dY is Gather's output shape. */
static int gather_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *idx;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &idx, err)) return OC_ERR;
    if (idx->dtype != IR_DTYPE_INT64 && idx->dtype != IR_DTYPE_INT32)
        return oc_fail(err, "indices '%s' must be int32 or int64", idx->name);
    const int64_t *dims;
    int r = ir_attr_ints(n, "input_shape", &dims);
    int64_t axis = ir_attr_int(n, "axis", 0);
    if (r < 1 || r > IR_MAX_RANK || axis < 0 || axis >= r || dy->rank != r - 1 + idx->rank)
        return oc_fail(err, "input_shape, axis and '%s' do not agree", dy->name);
    for (int d = 0; d < dy->rank; d++) {
        int64_t want = d < axis               ? dims[d]
                       : d < axis + idx->rank ? idx->dims[d - axis]
                                              : dims[d - idx->rank + 1];
        if (dy->dims[d] != want || want < 0)
            return oc_fail(err, "'%s' is not Gather's output shape", dy->name);
    }
    op_set_out(g, n, 0, dy->dtype, r, dims);
    return OC_OK;
}

/* GatherGrad as a forward node (a scatter-add: ScatterND / ScatterElements with reduction
 * add on run-time data, op_fold_index.c): dUpdates = Gather(dY, indices, axis). */
static int gather_grad_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    int b = grad_node(c, "grad", OP_GATHER);
    grad_in(c, b, dy);
    grad_in(c, b, grad_fwd_in(c, 1));
    grad_out_dx(c, b, 0);
    grad_attr_int(c, b, "axis", op_args_of(grad_fwd(c))->axis.axis);
    return grad_finish(c, b);
}

/* axis; padding_idx (an nn.Embedding's: its row takes no gradient), normalized to
 * [0, extent). */
static int gather_grad_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_axis_args *p = &op_args_new(n)->axis;
    p->axis = ir_attr_int(n, "axis", 0);
    p->has_skip = ir_attr_find(n, "padding_idx") != NULL;
    p->skip = ir_attr_int(n, "padding_idx", 0);
    if (p->has_skip) {
        const int64_t *dims;
        int r = ir_attr_ints(n, "input_shape", &dims);
        int64_t e = p->axis >= 0 && p->axis < r ? dims[p->axis] : 0;
        if (p->skip < -e || p->skip >= e)
            return oc_fail(err, "padding_idx %" PRId64 " is outside [-%" PRId64 ", %" PRId64 ")",
                           p->skip, e, e);
        if (p->skip < 0) p->skip += e;
    }
    return OC_OK;
}

const op_def op_def_gather = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = gather_infer,
    .decode = op_decode_axis,
    .grad = gather_grad,
    .saved_inputs = 0x2,
};
const op_def op_def_gather_grad = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = gather_grad_infer,
    .decode = gather_grad_decode,
    .grad = gather_grad_grad,
    .saved_inputs = 0x2,
};
const op_def op_def_unsqueeze = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = unsqueeze_infer,
    .grad = op_grad_reshape,
};
const op_def op_def_concat = {
    .min_inputs = 1,
    .max_inputs = -1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = concat_infer,
    .grad = op_grad_concat,
    .decode = op_decode_axis,
};
const op_def op_def_reshape = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = reshape_infer,
    .grad = op_grad_reshape,
};
const op_def op_def_flatten = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = flatten_infer,
    .grad = op_grad_reshape,
};
const op_def op_def_pad = {
    .min_inputs = 1,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = pad_infer,
    .grad = op_grad_pad,
    .decode = op_decode_pad,
};
