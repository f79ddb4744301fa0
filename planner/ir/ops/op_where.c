/* op_where.c — the broadcasting selections and copies of transformers:
 * Expand(X, shape): X broadcast to shape (ViT's class token over the batch),
 * folded when X is a plan-time value, else a kernel (float); dX = dY summed
 * back to X's shape.
 * Where(cond, X, Y): X where cond, else Y, broadcast over all
 * three (masked_fill: attention's causal mask). Folded when all three are
 * plan-time values; otherwise a kernel, float (or int64 / int32: index glue, no
 * gradient) X and Y, bool cond. Its
 * gradient rule and the backward op WhereGrad beside it:
 *   dX = WhereGrad(dY, cond) with select 1 (dY where cond, else 0),
 *   dY = WhereGrad(dY, cond) with select 0 (dY where not cond, else 0),
 * each summed to its input's shape (a scalar fill value gets no gradient
 * when it is a constant). Reads cond. */
#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

static int where_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *c, *x, *y;
    if (op_in_shaped(g, n, 0, &c, err) || op_in_shaped(g, n, 1, &x, err) ||
        op_in_shaped(g, n, 2, &y, err))
        return OC_ERR;
    if (c->dtype != IR_DTYPE_BOOL) return oc_fail(err, "condition '%s' is not bool", c->name);
    ir_dtype dt;
    if (op_operand_dtype(x, y, &dt, err)) return OC_ERR;
    int r1, r;
    int64_t d1[IR_MAX_RANK], od[IR_MAX_RANK];
    if (op_broadcast(x, y, &r1, d1, err)) return OC_ERR;
    ir_tensor xy = {.name = "X and Y", .rank = r1};
    for (int d = 0; d < r1; d++) xy.dims[d] = d1[d];
    if (op_broadcast(c, &xy, &r, od, err)) return OC_ERR;
    op_set_out(g, n, 0, dt, r, od);
    if (op_fold_where(g, n, err)) return OC_ERR;
    if (ir_node_out(g, n, 0)->data_src != IR_DATA_INLINE && !ir_dtype_is_compute(dt) &&
        dt != IR_DTYPE_INT64 && dt != IR_DTYPE_INT32)
        return oc_fail(err, "Where of %s tensors computed at run time is not supported",
                       ir_dtype_name(dt));
    return OC_OK;
}

/* WhereGrad(dY, cond) -> dY's shape; attribute select (1: keep where cond). */
static int where_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *c;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &c, err)) return OC_ERR;
    if (c->dtype != IR_DTYPE_BOOL) return oc_fail(err, "condition '%s' is not bool", c->name);
    int r;
    int64_t od[IR_MAX_RANK];
    if (op_broadcast(c, dy, &r, od, err)) return OC_ERR;
    bool same = r == dy->rank;
    for (int d = 0; same && d < r; d++) same = od[d] == dy->dims[d];
    if (!same) return oc_fail(err, "'%s' does not broadcast to '%s'", c->name, dy->name);
    op_set_out_like(g, n, 0, dy);
    return OC_OK;
}

static int where_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    (void)err;
    op_args_new(n)->where.select = ir_attr_int(n, "select", 1) != 0;
    return OC_OK;
}

static int where_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    for (int i = 1; i <= 2; i++) {
        if (!grad_wants(c, i)) continue;
        int b = grad_node(c, i == 1 ? "grad_x_mask" : "grad_y_mask", OP_WHERE_GRAD);
        grad_in(c, b, dy);
        grad_in(c, b, grad_fwd_in(c, 0));
        grad_attr_int(c, b, "select", i == 1);
        int t = grad_out_tmp(c, b, i == 1 ? "grad_x_mask" : "grad_y_mask");
        if (grad_finish(c, b) || op_grad_sum_to_input(c, i, t, i == 1 ? "grad_x" : "grad_y", 1.0f))
            return OC_ERR;
    }
    return OC_OK;
}

static int expand_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    if (op_expand_fold(g, n, err)) return OC_ERR;
    const ir_tensor *x = ir_node_in(g, n, 0);
    /* run-time int64 / int32: indices a TopK gave, broadcast for a gather (topk(..)[1]
     * .expand(..)) */
    if (ir_node_out(g, n, 0)->data_src != IR_DATA_INLINE && !ir_dtype_is_compute(x->dtype) &&
        x->dtype != IR_DTYPE_INT64 && x->dtype != IR_DTYPE_INT32)
        return oc_fail(err, "Expand of a %s tensor computed at run time is not supported",
                       ir_dtype_name(x->dtype));
    return OC_OK;
}

static int expand_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    return op_grad_sum_to_input(c, 0, dy, "grad", 1.0f);
}

static const op_role data_role[] = {OP_IN_DATA};

static const op_role expand_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_expand = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = expand_roles,
    .n_roles = 2,
    .infer = expand_infer,
    .grad = expand_grad,
};
const op_def op_def_where = {
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = where_infer,
    .grad = where_grad,
    .saved_inputs = 0x1,
};
const op_def op_def_where_grad = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = where_grad_infer,
    .decode = where_decode,
};
