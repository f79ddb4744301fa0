/* op_cum_sum.c — CumSum (torch.cumsum of activations: cumulative and linear attention's
 * prefix sums, cumulative distributions in ordinal and EMD losses): running sums along an
 * axis (input 1, one plan-time value), from the end when reverse, each without its own
 * element when exclusive. Plan-time values fold (op_fold_cum_sum: Hugging Face's position
 * ids); float32 data runs, one scan a line (runtime/cum_sum.h), any axis length. Its
 * gradient is the CumSum of dY the other way (reverse flipped, exclusive kept). */
#include "ir/ops/grad_rules.h"
#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_util.h"

/* The axis, input 1: one int64 or int32 plan-time value, normalised for x's rank. */
static int cum_sum_axis(const ir_graph *g, const ir_node *n, const ir_tensor *x, int64_t *axis,
                        oc_err *err) {
    const ir_tensor *ax = n->n_inputs > 1 && n->inputs[1] >= 0 ? &g->tensors[n->inputs[1]] : NULL;
    int64_t nax;
    if (!ax || !op_is_value(ax))
        return oc_fail(err, "axis '%s' is computed at run time (a plan-time value is taken)",
                       ax ? ax->name : "");
    if ((ax->dtype != IR_DTYPE_INT64 && ax->dtype != IR_DTYPE_INT32) ||
        !ir_tensor_numel(ax, &nax) || nax != 1)
        return oc_fail(err, "axis '%s' must be one int64 or int32 value", ax->name);
    if (x->rank < 1) return oc_fail(err, "input '%s' is a scalar", x->name);
    return op_axis(op_fold_num_get(ax, 0).i, x->rank, "axis", axis, err);
}

static int cum_sum_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = n->inputs[0] >= 0 ? &g->tensors[n->inputs[0]] : NULL;
    int64_t axis;
    if (!x || cum_sum_axis(g, n, x, &axis, err)) return OC_ERR;
    op_cum_sum_args *p = &op_args_new(n)->cum_sum;
    p->axis = (int)axis;
    int64_t numel = 1;
    ir_tensor_numel(x, &numel);
    p->len = x->dims[axis];
    p->inner = 1;
    for (int d = p->axis + 1; d < x->rank; d++) p->inner *= x->dims[d];
    p->lines = p->len ? numel / p->len : 0;
    p->exclusive = ir_attr_int(n, "exclusive", 0) != 0;
    p->reverse = ir_attr_int(n, "reverse", 0) != 0;
    return OC_OK;
}

static int cum_sum_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    int64_t axis;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x)) return op_fold_cum_sum(g, n, err);
    if (cum_sum_axis(g, n, x, &axis, err)) return OC_ERR;
    if (!ir_dtype_is_compute(x->dtype)) /* half data: float32 under autocast, as PyTorch's */
        return oc_fail(err, "CumSum of %s data computed at run time is not supported (float32)",
                       ir_dtype_name(x->dtype));
    op_set_out_like(g, n, 0, x);
    return OC_OK;
}

/* dX = CumSum(dY) along the axis the other way: y_j sums x_i over i <= j (i < j exclusive),
 * so x_i reaches every y_j with j >= i (j > i). */
static int cum_sum_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_node *fwd = grad_fwd(c);
    int64_t exclusive = ir_attr_int(fwd, "exclusive", 0) != 0,
            reverse = ir_attr_int(fwd, "reverse", 0) != 0;
    int b = grad_node(c, "grad_x", OP_CUM_SUM);
    grad_in(c, b, dy);
    grad_in(c, b, grad_fwd_in(c, 1));
    grad_out_dx(c, b, 0);
    grad_attr_int(c, b, "exclusive", exclusive);
    grad_attr_int(c, b, "reverse", !reverse);
    return grad_finish(c, b);
}

static const op_role cum_sum_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_cum_sum = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = cum_sum_roles,
    .n_roles = 2,
    .infer = cum_sum_infer,
    .decode = cum_sum_decode,
    .grad = cum_sum_grad,
    .saved_inputs = 0x2,          /* the axis (a plan-time constant) */
    .autocast = OP_AUTOCAST_FP32, /* PyTorch's list: cumsum in float32 */
};
