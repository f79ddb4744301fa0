/* op_binary.c — Add, Sub, Mul, Div (and Less) with numpy broadcasting (residuals,
 * squeeze-excitation gates, SiLU as x * Sigmoid(x), scaling): shapes, folding
 * of plan-time values, and the gradient rules of Sub, Mul and Div (Add's is
 * in grad_elementwise.c). A gradient whose input was broadcast is summed back
 * to that input's shape by ReduceSumTo. */
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* A, B -> C with numpy broadcasting; folded when both are plan-time values. */
static int binary_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *a, *b;
    ir_dtype dt;
    if (op_in_shaped(g, n, 0, &a, err) || op_in_shaped(g, n, 1, &b, err) ||
        op_operand_dtype(a, b, &dt, err))
        return OC_ERR;
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (op_broadcast(a, b, &rank, dims, err)) return OC_ERR;
    op_set_out(g, n, 0, dt, rank, dims);
    if (op_fold_arith(g, n, err)) return OC_ERR;
    const ir_tensor *y = ir_node_out(g, n, 0);
    if (n->op != OP_ADD && y->data_src != IR_DATA_INLINE && !ir_dtype_is_compute(dt) &&
        dt != IR_DTYPE_DOUBLE)
        return oc_fail(err, "%s of %s tensors computed at run time is not supported", n->op_type,
                       ir_dtype_name(dt));
    return OC_OK;
}

/* Less: A < B, broadcast, as bool; folded for plan-time values, float at
 * run time. Not differentiable. */
static int less_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *a, *b;
    ir_dtype dt;
    if (op_in_shaped(g, n, 0, &a, err) || op_in_shaped(g, n, 1, &b, err) ||
        op_operand_dtype(a, b, &dt, err))
        return OC_ERR;
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (op_broadcast(a, b, &rank, dims, err)) return OC_ERR;
    op_set_out(g, n, 0, IR_DTYPE_BOOL, rank, dims);
    if (op_fold_compare(g, n, err)) return OC_ERR;
    if (ir_node_out(g, n, 0)->data_src != IR_DATA_INLINE && !ir_dtype_is_compute(dt))
        return oc_fail(err, "Less of %s tensors computed at run time is not supported",
                       ir_dtype_name(dt));
    return OC_OK;
}

static bool same_dims(const ir_tensor *a, const ir_tensor *b) {
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

int op_grad_sum_to_input(grad_ctx *c, int i, int src, const char *suffix, float scale) {
    const ir_graph *g = grad_graph(c);
    const ir_tensor *x = &g->tensors[grad_fwd_in(c, i)];
    if (scale == 1.0f && same_dims(x, &g->tensors[src])) {
        grad_pass(c, i, src);
        return OC_OK;
    }
    int rank = x->rank;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    int b = grad_node(c, suffix, OP_REDUCE_SUM_TO);
    grad_in(c, b, src);
    grad_out_dx(c, b, i);
    grad_attr_ints(c, b, "input_shape", rank, dims);
    if (scale != 1.0f) grad_attr_float(c, b, "scale", scale);
    return grad_finish(c, b);
}

/* Emits op(l, r) into a temporary "<fwd>/<suffix>"; returns it or -1. */
static int tmp_node(grad_ctx *c, op_kind op, int l, int r, const char *suffix) {
    int b = grad_node(c, suffix, op);
    grad_in(c, b, l);
    grad_in(c, b, r);
    int t = grad_out_tmp(c, b, suffix);
    return grad_finish(c, b) ? -1 : t;
}

/* dA = dY, dB = -dY, each summed to its input's shape. */
static int sub_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    if (grad_wants(c, 0) && op_grad_sum_to_input(c, 0, dy, "grad_a", 1.0f)) return OC_ERR;
    if (grad_wants(c, 1) && op_grad_sum_to_input(c, 1, dy, "grad_b", -1.0f)) return OC_ERR;
    return OC_OK;
}

/* dA = dY * B, dB = dY * A, each summed to its input's shape. Reads A and B. */
static int mul_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    for (int i = 0; i < 2; i++) {
        if (!grad_wants(c, i)) continue;
        int t = tmp_node(c, OP_MUL, dy, grad_fwd_in(c, 1 - i), i ? "grad_b_mul" : "grad_a_mul");
        if (t < 0 || op_grad_sum_to_input(c, i, t, i ? "grad_b" : "grad_a", 1.0f)) return OC_ERR;
    }
    return OC_OK;
}

/* dA = dY / B; dB = -(dY / B) * Y, each summed to its input's shape. Reads B and Y. */
static int div_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || (!grad_wants(c, 0) && !grad_wants(c, 1))) return OC_OK;
    int q = tmp_node(c, OP_DIV, dy, grad_fwd_in(c, 1), "grad_div");
    if (q < 0) return OC_ERR;
    if (grad_wants(c, 0) && op_grad_sum_to_input(c, 0, q, "grad_a", 1.0f)) return OC_ERR;
    if (!grad_wants(c, 1)) return OC_OK;
    int u = tmp_node(c, OP_MUL, q, grad_fwd_out(c, 0), "grad_b_mul");
    return u < 0 ? OC_ERR : op_grad_sum_to_input(c, 1, u, "grad_b", -1.0f);
}

static const op_role data_role[] = {OP_IN_DATA};

#define BINARY_OP(ident, rule, saved_in, saved_out)                                                \
    const op_def ident = {                                                                         \
        .min_inputs = 2,                                                                           \
        .max_inputs = 2,                                                                           \
        .min_outputs = 1,                                                                          \
        .max_outputs = 1,                                                                          \
        .roles = data_role,                                                                        \
        .n_roles = 1,                                                                              \
        .infer = binary_infer,                                                                     \
        .grad = rule,                                                                              \
        .saved_inputs = saved_in,                                                                  \
        .saved_outputs = saved_out,                                                                \
    }

BINARY_OP(op_def_add, op_grad_add, 0x0, 0x0);
BINARY_OP(op_def_sub, sub_grad, 0x0, 0x0);
BINARY_OP(op_def_mul, mul_grad, 0x3, 0x0);
BINARY_OP(op_def_div, div_grad, 0x2, 0x1);

const op_def op_def_less = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = less_infer,
};
