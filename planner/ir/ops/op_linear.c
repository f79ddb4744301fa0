/* op_linear.c — Linear(X (.., K), W [, B (N)]) -> Y (.., N), every leading
 * dim of X in the rows: Y = X W^T + B with W (N, K) as nn.Linear stores it
 * (trans_w, the default), or Y = X W + B with W (K, N). train/fuse_linear.c
 * makes it from the exporters' MatMul(X, Transpose(W)) [-> Add(., B)]: the
 * GEMM reads W in place (no transposed copy written each step and kept for
 * the backward) and the bias is added by the GEMM (no pass over Y). Its
 * members are listed (`members`; `transpose_output`, `matmul_output`,
 * `bias_first` name the chain's tensors) and a saved model writes the chain
 * back (ir/onnx_export.c). Gradient, from existing ops:
 *   dX = dY W          MatMul       (W (K, N): MatMulGradA, dY W^T)
 *   dW = dY^T X        MatMulGradB(dY, X)   (W (K, N): MatMulGradB(X, dY))
 *   dB = dY summed over the rows   ReduceSumTo
 * reading X and W, as the chain's MatMul does. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* K and N of W as the node reads it. */
static void linear_kn(const ir_tensor *w, bool trans_w, int64_t *K, int64_t *N) {
    *K = trans_w ? w->dims[1] : w->dims[0];
    *N = trans_w ? w->dims[0] : w->dims[1];
}

static int linear_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *w;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    if (!ir_dtype_is_compute(x->dtype) || w->dtype != x->dtype)
        return oc_fail(err, "inputs '%s' and '%s' must be float of one type", x->name, w->name);
    if (x->rank < 2 || w->rank != 2)
        return oc_fail(err,
                       "'%s' (rank %d) times '%s' (rank %d): Linear takes X of rank >= 2 "
                       "and a matrix W",
                       x->name, x->rank, w->name, w->rank);
    int64_t K, N;
    linear_kn(w, ir_attr_int(n, "trans_w", 1) != 0, &K, &N);
    if (x->dims[x->rank - 1] != K)
        return oc_fail(err, "inner dims differ: '%s' %" PRId64 ", '%s' %" PRId64, x->name,
                       x->dims[x->rank - 1], w->name, K);
    ir_tensor *b = ir_node_in(g, n, 2);
    if (b) {
        if (op_in_shaped(g, n, 2, &b, err)) return OC_ERR;
        if (b->dtype != x->dtype || b->rank != 1 || b->dims[0] != N)
            return oc_fail(err, "the bias '%s' must be a vector of %" PRId64 " of '%s''s type",
                           b->name, N, x->name);
    }
    int64_t y[IR_MAX_RANK];
    memcpy(y, x->dims, sizeof y);
    y[x->rank - 1] = N;
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

static int linear_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_linear_args *p = &op_args_new(n)->linear;
    p->trans_w = ir_attr_int(n, "trans_w", 1) != 0;
    p->bias = n->n_inputs > 2 && n->inputs[2] >= 0;
    return OC_OK;
}

/* 2 K per output element, and the bias's add. */
static void linear_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    const ir_tensor *w = &g->tensors[n->inputs[1]], *y = &g->tensors[n->outputs[0]];
    int64_t out = 0, K, N;
    ir_tensor_numel(y, &out);
    linear_kn(w, op_args_of(n)->linear.trans_w, &K, &N);
    c->flops = 2.0 * (double)out * (double)K + (op_args_of(n)->linear.bias ? (double)out : 0.0);
}

static int linear_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    bool tw = op_args_of(grad_fwd(c))->linear.trans_w;
    int x = grad_fwd_in(c, 0), w = grad_fwd_in(c, 1);
    if (grad_wants(c, 0)) {
        int b = grad_node(c, "grad_x", tw ? OP_MATMUL : OP_MATMUL_GRAD_A);
        grad_in(c, b, dy);
        grad_in(c, b, w);
        grad_out_dx(c, b, 0);
        if (grad_finish(c, b)) return OC_ERR;
    }
    if (grad_wants(c, 1)) {
        int b = grad_node(c, "grad_w", OP_MATMUL_GRAD_B);
        grad_in(c, b, tw ? dy : x);
        grad_in(c, b, tw ? x : dy);
        grad_out_dx(c, b, 1);
        if (grad_finish(c, b)) return OC_ERR;
    }
    if (grad_fwd_in(c, 2) >= 0 && grad_wants(c, 2)) /* dY summed to the bias's shape */
        return op_grad_sum_to_input(c, 2, dy, "grad_b", 1.0f);
    return OC_OK;
}

bool op_linear_own_attr(const char *name) {
    return strcmp(name, "members") == 0 || strcmp(name, "transpose_output") == 0 ||
           strcmp(name, "matmul_output") == 0 || strcmp(name, "bias_first") == 0;
}

static const op_role linear_roles[] = {OP_IN_DATA, OP_IN_PARAM, OP_IN_PARAM};

const op_def op_def_linear = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = linear_roles,
    .n_roles = 3,
    .infer = linear_infer,
    .decode = linear_decode,
    .cost = linear_cost,
    .grad = linear_grad,
    .saved_inputs = 0x3,
    .autocast = OP_AUTOCAST_LOWER,
};
