/* op_matmul.c — MatMul: X (.., M, K) times W (K, N) -> Y (.., M, N), every
 * leading dim of X batched into the rows (a Linear layer on channels-last
 * activations: ConvNeXt's blocks, a transformer's projections), or X (b.., M,
 * K) times Y (b.., K, N) with the same batch dims b.. (attention's Q K^T and
 * P V: one GEMM per batch). Its gradient rule and the backward ops
 * MatMulGradA (dX = dY W^T) and MatMulGradB (dW = X^T dY, summed over every
 * row when W is a matrix, per batch when batched: attribute `batched`) are
 * beside it; the three share one kernel per backend. Batch dims that
 * broadcast (one side 1, or of different ranks) are refused. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* W batched: same rank as X, equal leading dims. */
static int batch_dims_agree(const ir_tensor *x, const ir_tensor *w, bool *batched, oc_err *err) {
    *batched = w->rank > 2;
    if (!*batched) return OC_OK;
    bool ok = w->rank == x->rank;
    for (int d = 0; ok && d + 2 < x->rank; d++) ok = x->dims[d] == w->dims[d];
    if (!ok)
        return oc_fail(err,
                       "'%s' and '%s': batch dims must be equal (broadcasting batch dims is "
                       "not supported)",
                       x->name, w->name);
    return OC_OK;
}

static int matmul_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *w;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    if (!ir_dtype_is_compute(x->dtype) || w->dtype != x->dtype)
        return oc_fail(err, "inputs '%s' and '%s' must be float of one type", x->name, w->name);
    if (x->rank < 2 || w->rank < 2)
        return oc_fail(err,
                       "'%s' (rank %d) times '%s' (rank %d): outcore's MatMul takes rank >= 2 "
                       "on both sides",
                       x->name, x->rank, w->name, w->rank);
    bool batched;
    if (batch_dims_agree(x, w, &batched, err)) return OC_ERR;
    int64_t K = w->dims[w->rank - 2], N = w->dims[w->rank - 1];
    if (x->dims[x->rank - 1] != K)
        return oc_fail(err, "inner dims differ: %" PRId64 " and %" PRId64, x->dims[x->rank - 1], K);
    int64_t y[IR_MAX_RANK];
    memcpy(y, x->dims, sizeof y);
    y[x->rank - 1] = N;
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

/* MatMul, MatMulGradA: batched when input 1 has rank > 2; MatMulGradB: its
 * attribute. */
static int matmul_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)err;
    op_matmul_args *p = &op_args_new(n)->matmul;
    if (n->op == OP_MATMUL_GRAD_B) p->batched = ir_attr_int(n, "batched", 0) != 0;
    else p->batched = g->tensors[n->inputs[1]].rank > 2;
    return OC_OK;
}

/* 2 M K N per output row block: Y's elements times the inner dim, twice. */
static void matmul_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    const ir_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
    int64_t out = 0;
    ir_tensor_numel(y, &out);
    int64_t inner = n->op == OP_MATMUL_GRAD_B ? x->dims[x->rank - 2] : x->dims[x->rank - 1];
    if (n->op == OP_MATMUL_GRAD_B && !op_args_of(n)->matmul.batched) {
        int64_t rows = 1;
        for (int d = 0; d + 1 < x->rank; d++) rows *= x->dims[d];
        inner = rows;
    }
    c->flops = 2.0 * (double)out * (double)inner;
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
        if (op_args_of(grad_fwd(c))->matmul.batched) grad_attr_int(c, b, "batched", 1);
        if (grad_finish(c, b)) return OC_ERR;
    }
    return OC_OK;
}

/* MatMulGradA(dY (.., M, N), W (K, N) or (b.., K, N)) -> dX (.., M, K). */
static int grad_a_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *w;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    bool batched;
    if (dy->rank < 2 || w->rank < 2 || batch_dims_agree(dy, w, &batched, err) ||
        dy->dims[dy->rank - 1] != w->dims[w->rank - 1])
        return oc_fail(err, "'%s' and '%s' do not agree", dy->name, w->name);
    int64_t y[IR_MAX_RANK];
    memcpy(y, dy->dims, sizeof y);
    y[dy->rank - 1] = w->dims[w->rank - 2];
    op_set_out(g, n, 0, dy->dtype, dy->rank, y);
    return OC_OK;
}

/* MatMulGradB(X (.., M, K), dY (.., M, N)) -> dW (K, N), or (b.., K, N) batched. */
static int grad_b_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *dy;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &dy, err)) return OC_ERR;
    bool ok = x->rank >= 2 && dy->rank == x->rank;
    for (int d = 0; ok && d + 1 < x->rank; d++) ok = x->dims[d] == dy->dims[d];
    if (!ok) return oc_fail(err, "'%s' and '%s' do not agree", x->name, dy->name);
    if (ir_attr_int(n, "batched", 0)) {
        int64_t y[IR_MAX_RANK];
        memcpy(y, x->dims, sizeof y);
        y[x->rank - 2] = x->dims[x->rank - 1];
        y[x->rank - 1] = dy->dims[dy->rank - 1];
        op_set_out(g, n, 0, x->dtype, x->rank, y);
        return OC_OK;
    }
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
    .decode = matmul_decode,
    .cost = matmul_cost,
    .grad = matmul_grad,
    .saved_inputs = 0x3,
    .autocast = OP_AUTOCAST_LOWER,
};
const op_def op_def_matmul_grad_a = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = grad_a_infer,
    .decode = matmul_decode,
    .cost = matmul_cost,
};
const op_def op_def_matmul_grad_b = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = grad_b_infer,
    .decode = matmul_decode,
    .cost = matmul_cost,
};
