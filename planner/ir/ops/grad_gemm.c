/* grad_gemm.c — gradient of Gemm, Y = alpha * op(A) op(B) + beta * C, as
 * standard Gemm nodes (the runtime's forward kernel serves):
 *   dA = alpha * dY op(B)^T      (transA: alpha * op(B) dY^T)
 *   dB = alpha * op(A)^T dY      (transB: alpha * dY^T op(A))
 *   dC = beta * dY summed to C's shape */
#include <string.h>

#include "ir/ops/grad_rules.h"

static int gemm_node(grad_ctx *c, const char *suffix, int a, int b, bool ta, bool tb, float alpha,
                     int dx_of) {
    int n = grad_node(c, suffix, OP_GEMM);
    grad_in(c, n, a);
    grad_in(c, n, b);
    grad_out_dx(c, n, dx_of);
    grad_attr_float(c, n, "alpha", alpha);
    grad_attr_int(c, n, "transA", ta);
    grad_attr_int(c, n, "transB", tb);
    return grad_finish(c, n);
}

int op_grad_gemm(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    const ir_node *f = grad_fwd(c);
    bool ta = ir_attr_int(f, "transA", 0) != 0, tb = ir_attr_int(f, "transB", 0) != 0;
    float alpha = ir_attr_float(f, "alpha", 1.0f), beta = ir_attr_float(f, "beta", 1.0f);
    int a = grad_fwd_in(c, 0), b = grad_fwd_in(c, 1);
    if (grad_wants(c, 0)) {
        int rc = ta ? gemm_node(c, "grad_a", b, dy, tb, true, alpha, 0)
                    : gemm_node(c, "grad_a", dy, b, false, !tb, alpha, 0);
        if (rc) return OC_ERR;
    }
    if (grad_wants(c, 1)) {
        int rc = tb ? gemm_node(c, "grad_b", dy, a, true, ta, alpha, 1)
                    : gemm_node(c, "grad_b", a, dy, !ta, false, alpha, 1);
        if (rc) return OC_ERR;
    }
    if (grad_fwd_in(c, 2) >= 0 && grad_wants(c, 2)) {
        const ir_tensor *bias = &grad_graph(c)->tensors[grad_fwd_in(c, 2)];
        int rank = bias->rank;
        int64_t dims[IR_MAX_RANK];
        memcpy(dims, bias->dims, sizeof dims);
        int n = grad_node(c, "grad_c", OP_REDUCE_SUM_TO);
        grad_in(c, n, dy);
        grad_out_dx(c, n, 2);
        grad_attr_ints(c, n, "input_shape", rank, dims);
        grad_attr_float(c, n, "scale", beta);
        if (grad_finish(c, n)) return OC_ERR;
    }
    return OC_OK;
}
