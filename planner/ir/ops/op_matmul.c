/* op_matmul.c — MatMul with a matrix on the right: X (.., M, K) times a
 * weight W (K, N) -> Y (.., M, N), every leading dim of X batched into the
 * rows (a Linear layer on channels-last activations: ConvNeXt's blocks). Its
 * gradient rule and the backward ops MatMulGradA (dX = dY W^T) and
 * MatMulGradB (dW = X^T dY over every row) are beside it; the three share one
 * kernel per backend (a GEMM on the flattened rows). A batched right operand
 * (attention's Q K^T) is issue 20's. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

static int matmul_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *w;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    if (x->dtype != IR_DTYPE_FLOAT || w->dtype != IR_DTYPE_FLOAT)
        return oc_fail(err, "inputs '%s' and '%s' must be float", x->name, w->name);
    if (x->rank < 2 || w->rank != 2)
        return oc_fail(err,
                       "'%s' (rank %d) times '%s' (rank %d): outcore's MatMul takes a matrix on "
                       "the right and rank >= 2 on the left (a batched right operand: issue 20)",
                       x->name, x->rank, w->name, w->rank);
    if (x->dims[x->rank - 1] != w->dims[0])
        return oc_fail(err, "inner dims differ: %" PRId64 " and %" PRId64, x->dims[x->rank - 1],
                       w->dims[0]);
    int64_t y[IR_MAX_RANK];
    memcpy(y, x->dims, sizeof y);
    y[x->rank - 1] = w->dims[1];
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

static void matmul_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    const ir_tensor *x = &g->tensors[n->inputs[0]], *w = &g->tensors[n->inputs[1]];
    int64_t rows = 1;
    for (int d = 0; d + 1 < x->rank; d++) rows *= x->dims[d];
    c->flops = 2.0 * (double)rows * (double)w->dims[0] * (double)w->dims[1];
}

/* dX = MatMulGradA(dY, W); dW = MatMulGradB(X, dY). Reads X and W. */
static int matmul_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    if (grad_wants(c, 0)) {
        int b = grad_node(c, "grad_a", OP_MATMUL_GRAD_A);
        grad_in(c, b, dy);
        grad_in(c, b, grad_fwd_in(c, 1));
        grad_out_dx(c, b, 0);
        if (grad_finish(c, b)) return OC_ERR;
    }
    if (grad_wants(c, 1)) {
        int b = grad_node(c, "grad_b", OP_MATMUL_GRAD_B);
        grad_in(c, b, grad_fwd_in(c, 0));
        grad_in(c, b, dy);
        grad_out_dx(c, b, 1);
        if (grad_finish(c, b)) return OC_ERR;
    }
    return OC_OK;
}

/* MatMulGradA(dY (.., M, N), W (K, N)) -> dX (.., M, K). */
static int grad_a_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *w;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    if (dy->rank < 2 || w->rank != 2 || dy->dims[dy->rank - 1] != w->dims[1])
        return oc_fail(err, "'%s' and '%s' do not agree", dy->name, w->name);
    int64_t y[IR_MAX_RANK];
    memcpy(y, dy->dims, sizeof y);
    y[dy->rank - 1] = w->dims[0];
    op_set_out(g, n, 0, dy->dtype, dy->rank, y);
    return OC_OK;
}

/* MatMulGradB(X (.., M, K), dY (.., M, N)) -> dW (K, N). */
static int grad_b_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *dy;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &dy, err)) return OC_ERR;
    bool ok = x->rank >= 2 && dy->rank == x->rank;
    for (int d = 0; ok && d + 1 < x->rank; d++) ok = x->dims[d] == dy->dims[d];
    if (!ok) return oc_fail(err, "'%s' and '%s' do not agree", x->name, dy->name);
    int64_t y[2] = {x->dims[x->rank - 1], dy->dims[dy->rank - 1]};
    op_set_out(g, n, 0, x->dtype, 2, y);
    return OC_OK;
}

static const op_role matmul_roles[] = {OP_IN_DATA, OP_IN_PARAM};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_matmul = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = matmul_roles,
    .n_roles = 2,
    .infer = matmul_infer,
    .cost = matmul_cost,
    .grad = matmul_grad,
    .saved_inputs = 0x3,
};
const op_def op_def_matmul_grad_a = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = grad_a_infer,
};
const op_def op_def_matmul_grad_b = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = grad_b_infer,
};
