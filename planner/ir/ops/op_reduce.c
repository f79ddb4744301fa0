/* op_reduce.c — ReduceMean and ReduceSum (squeeze-excitation, global pooling
 * as today's exporters write it), their gradient rule and the backward op
 * BroadcastTo beside it. Both reductions run on the ReduceSumTo kernels:
 * Y = scale * X summed to the kept shape (op_reduce_args). */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* The reduced dims of X: axes from an input (ReduceMean from opset 18,
 * ReduceSum from 13) or the attribute before; none given reduces every dim
 * unless noop_with_empty_axes. *noop: the node is an identity. */
static int reduce_axes(ir_graph *g, ir_node *n, const ir_tensor *x, bool *red, bool *noop,
                       oc_err *err) {
    int64_t axes_from_input = n->op == OP_REDUCE_MEAN ? 18 : 13;
    const int64_t *axes = NULL;
    int64_t naxes = 0;
    if (g->opset >= axes_from_input) {
        if (ir_node_in(g, n, 1) && op_in_int64s(g, n, 1, &axes, &naxes, err)) return OC_ERR;
    } else {
        if (ir_node_in(g, n, 1)) return oc_fail(err, "takes its axes as an attribute here");
        int k = ir_attr_ints(n, "axes", &axes);
        naxes = k < 0 ? 0 : k;
    }
    memset(red, 0, IR_MAX_RANK * sizeof *red);
    *noop = false;
    if (naxes == 0) {
        *noop = ir_attr_int(n, "noop_with_empty_axes", 0) != 0;
        for (int d = 0; d < x->rank; d++) red[d] = !*noop;
        return OC_OK;
    }
    for (int64_t i = 0; i < naxes; i++) {
        int64_t a;
        if (op_axis(axes[i], x->rank, "axis", &a, err)) return OC_ERR;
        if (red[a]) return oc_fail(err, "axis %" PRId64 " repeated", axes[i]);
        red[a] = true;
    }
    return OC_OK;
}

static int reduce_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    bool red[IR_MAX_RANK], noop;
    if (op_in_shaped(g, n, 0, &x, err) || reduce_axes(g, n, x, red, &noop, err)) return OC_ERR;
    if (!ir_dtype_is_compute(x->dtype)) return oc_fail(err, "input '%s' is not float", x->name);
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    int64_t y[IR_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!red[d]) y[r++] = x->dims[d];
        else if (keep) y[r++] = 1;
    }
    op_set_out(g, n, 0, x->dtype, r, y);
    return OC_OK;
}

/* The kept shape (X's rank) and scale: 1 / (elements summed) for the mean. */
static int reduce_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    bool red[IR_MAX_RANK], noop;
    if (reduce_axes((ir_graph *)g, n, x, red, &noop, err)) return OC_ERR;
    op_reduce_args *p = &op_args_new(n)->reduce;
    p->rank = x->rank;
    int64_t count = 1;
    for (int d = 0; d < x->rank; d++) {
        p->dims[d] = red[d] ? 1 : x->dims[d];
        if (red[d]) count *= x->dims[d];
    }
    p->scale = n->op == OP_REDUCE_MEAN && count > 0 ? (float)(1.0 / (double)count) : 1.0f;
    return OC_OK;
}

/* dX = scale * dY broadcast back over the reduced dims (dY first reshaped to
 * the kept shape when keepdims dropped them). Saves nothing. */
static int reduce_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_graph *g = grad_graph(c);
    const ir_node *f = grad_fwd(c);
    const op_reduce_args *p = &op_args_of(f)->reduce;
    const ir_tensor *x = &g->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    int64_t kept[IR_MAX_RANK], xd[IR_MAX_RANK];
    float scale = p->scale;
    memcpy(kept, p->dims, sizeof kept);
    memcpy(xd, x->dims, sizeof xd);
    int src = dy;
    if (g->tensors[dy].rank != rank) {
        int shape = grad_const_i64(c, "grad_kept_shape", rank, kept);
        int r = grad_node(c, "grad_kept", OP_RESHAPE);
        grad_in(c, r, dy);
        grad_in(c, r, shape);
        if ((src = grad_out_tmp(c, r, "grad_kept")) < 0 || grad_finish(c, r)) return OC_ERR;
    }
    int b = grad_node(c, "grad", OP_BROADCAST_TO);
    grad_in(c, b, src);
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "input_shape", rank, xd);
    grad_attr_float(c, b, "scale", scale);
    return grad_finish(c, b);
}

/* BroadcastTo(dY) -> dX (input_shape): dY broadcast (numpy, right-aligned). */
static int broadcast_to_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy;
    if (op_in_shaped(g, n, 0, &dy, err)) return OC_ERR;
    const int64_t *dims;
    int r = ir_attr_ints(n, "input_shape", &dims);
    if (r < 0 || r > IR_MAX_RANK) return oc_fail(err, "attribute 'input_shape' is required");
    int64_t numel = 1;
    for (int i = 0; i < r; i++)
        if (dims[i] < 0 || !oc_mul_i64(numel, dims[i], &numel))
            return oc_fail(err, "attribute 'input_shape': dim %d is negative or too large", i);
    bool ok = dy->rank <= r;
    for (int i = 0; ok && i < dy->rank; i++) {
        int64_t e = dy->dims[dy->rank - 1 - i], d = dims[r - 1 - i];
        ok = e == d || e == 1;
    }
    if (!ok) return oc_fail(err, "'%s' does not broadcast to input_shape", dy->name);
    op_set_out(g, n, 0, dy->dtype, r, dims);
    return OC_OK;
}

/* Scale, and dY's shape right-aligned in dX's rank. */
static int broadcast_to_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)err;
    const ir_tensor *dy = ir_node_in((ir_graph *)g, n, 0), *dx = ir_node_out((ir_graph *)g, n, 0);
    op_reduce_args *p = &op_args_new(n)->reduce;
    p->scale = ir_attr_float(n, "scale", 1.0f);
    p->rank = dx->rank;
    for (int d = 0; d < dx->rank; d++) {
        int j = d - (dx->rank - dy->rank);
        p->dims[d] = j >= 0 ? dy->dims[j] : 1;
    }
    return OC_OK;
}

/* Reads every input element once, writes every output element once. */
static void reduce_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    int64_t numel;
    const ir_tensor *x = &g->tensors[n->inputs[0]];
    c->flops = ir_tensor_numel(x, &numel) ? (double)numel : 0.0;
}

static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_reduce_mean = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = reduce_infer,
    .decode = reduce_decode,
    .cost = reduce_cost,
    .grad = reduce_grad,
};
const op_def op_def_reduce_sum = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = reduce_infer,
    .decode = reduce_decode,
    .cost = reduce_cost,
    .grad = reduce_grad,
    .autocast = OP_AUTOCAST_FP32,
};
const op_def op_def_broadcast_to = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = broadcast_to_infer,
    .decode = broadcast_to_decode,
};
