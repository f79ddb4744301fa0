/* op_gemm.c — Gemm: Y = alpha * A' B' + beta * C, shapes. */
#include <inttypes.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* A (M, K) [or (K, M) with transA], B (K, N) [or (N, K) with transB], C broadcast to (M, N). */
static int gemm_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *a, *b;
    if (op_in_shaped(g, n, 0, &a, err) || op_in_shaped(g, n, 1, &b, err)) return OC_ERR;
    if (a->rank != 2 || b->rank != 2)
        return oc_fail(err, "inputs '%s' and '%s' must be matrices", a->name, b->name);
    ir_tensor *bias = ir_node_in(g, n, 2);
    if (!ir_dtype_is_compute(a->dtype) || b->dtype != a->dtype || (bias && bias->dtype != a->dtype))
        return oc_fail(err, "inputs '%s', '%s'%s%s must be float of one type", a->name, b->name,
                       bias ? " and " : "", bias ? bias->name : "");
    bool ta = ir_attr_int(n, "transA", 0) != 0, tb = ir_attr_int(n, "transB", 0) != 0;
    int64_t m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1];
    int64_t kb = b->dims[tb ? 1 : 0], nn = b->dims[tb ? 0 : 1];
    if (k != kb)
        return oc_fail(err, "inner dims differ: '%s' gives K=%" PRId64 ", '%s' gives K=%" PRId64,
                       a->name, k, b->name, kb);
    int64_t y[2] = {m, nn};
    ir_tensor *c = ir_node_in(g, n, 2);
    if (c) {
        if (!ir_tensor_shape_known(c) || c->rank > 2)
            return oc_fail(err, "bias '%s' must have a known shape of rank <= 2", c->name);
        for (int i = 0; i < c->rank; i++) {
            int64_t want = y[2 - c->rank + i];
            if (c->dims[i] != 1 && c->dims[i] != want)
                return oc_fail(err, "bias '%s' does not broadcast to [%" PRId64 ", %" PRId64 "]",
                               c->name, m, nn);
        }
    }
    op_set_out(g, n, 0, a->dtype, 2, y);
    return OC_OK;
}

static void gemm_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    const ir_tensor *a = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
    int64_t k = a->dims[ir_attr_int(n, "transA", 0) ? 0 : 1];
    c->flops = 2.0 * (double)y->dims[0] * (double)y->dims[1] * (double)k;
}

static int gemm_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_gemm_args *p = &op_args_new(n)->gemm;
    p->trans_a = ir_attr_int(n, "transA", 0) != 0;
    p->trans_b = ir_attr_int(n, "transB", 0) != 0;
    p->alpha = ir_attr_float(n, "alpha", 1.0f);
    p->beta = ir_attr_float(n, "beta", 1.0f);
    return OC_OK;
}

static const op_role gemm_roles[] = {OP_IN_DATA, OP_IN_PARAM, OP_IN_PARAM};

const op_def op_def_gemm = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = gemm_roles,
    .n_roles = 3,
    .infer = gemm_infer,
    .cost = gemm_cost,
    .grad = op_grad_gemm,
    .saved_inputs = 0x3,
    .decode = gemm_decode,
    .autocast = OP_AUTOCAST_LOWER,
};
