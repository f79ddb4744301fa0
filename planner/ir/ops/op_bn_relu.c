/* op_bn_relu.c — BatchNormRelu (ai.outcore): BatchNormalization, an optional
 * residual Add and Relu as one node (planner/train/fuse_norm_act.c groups the
 * exporters' chains; --no-fuse keeps them apart):
 *   BatchNormRelu(X, scale, B, input_mean, input_var [, R]) -> Y [, running_mean, running_var]
 *   Y = Relu(BN(X) [+ R]), BN as BatchNormalization computes it (batch
 *   statistics when training_mode is 1, else the running ones); the running
 *   statistics update in place as BatchNormalization's do.
 * The intermediate BN(X) (and BN(X) + R) never exists: one kernel reads X (and
 * R) and writes Y. Its gradient, with fused_backward 1 (no residual),
 *   BatchNormReluGrad(dY, X, scale, B [, mean, var]) -> dX, dScale, dBias
 * takes the batch statistics from X (cpu) or the forward (cuda's stash) and
 * the Relu mask from BN(X) > 0, the forward's own arithmetic rounded as Y was
 * stored, so the mask is Y > 0 bit for bit and Y is not read (the kernels pass
 * over dY and X twice, not dY, Y and X). dZ = dY * (BN(X) > 0) is never
 * written; dY, X and dX are live at once. Otherwise (a residual needs dZ
 * itself, or fused_backward 0) the unfused chain's
 *   dZ = ReluGrad(dY, Y);  dX, dScale, dBias = BatchNormalizationGrad(dZ, X, scale)
 * with dZ passed to R as Add passes it. Saved: X, scale and B fused; X, scale
 * and Y split, as the unfused chain saves. Attributes: epsilon, momentum,
 * training_mode (as BatchNormalization at opset 14), fused_backward, members (the fused nodes'
 * names: BN, [Add], Relu), bn_outputs (the BN's output names, as it had them),
 * add_output, residual_first (1: the Add was Add(R, BN)) — the last four so a
 * saved model writes the chain back (onnx_export.c). */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

static bool same_dims(const ir_tensor *a, const ir_tensor *b) {
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int64_t)) == 0;
}

/* X (N, C, ..) float32 or half and float32 per-channel vectors at inputs [from, to). */
static int channel_inputs(ir_graph *g, ir_node *n, int xi, int from, int to, ir_tensor **x,
                          oc_err *err) {
    if (op_in_shaped(g, n, xi, x, err)) return OC_ERR;
    if ((*x)->rank < 2 || !ir_dtype_is_compute((*x)->dtype))
        return oc_fail(err, "input '%s' must be float of rank >= 2", (*x)->name);
    int64_t c = (*x)->dims[1];
    for (int i = from; i < to; i++) {
        ir_tensor *p;
        if (op_in_shaped(g, n, i, &p, err)) return OC_ERR;
        if (p->rank != 1 || p->dims[0] != c || p->dtype != IR_DTYPE_FLOAT)
            return oc_fail(err, "input '%s' must be float of shape [%" PRId64 "]", p->name, c);
    }
    return OC_OK;
}

static int bn_relu_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *r;
    if (channel_inputs(g, n, 0, 1, 5, &x, err)) return OC_ERR;
    if (n->n_inputs > 5) {
        if (op_in_shaped(g, n, 5, &r, err)) return OC_ERR;
        if (!same_dims(r, x) || r->dtype != x->dtype)
            return oc_fail(err, "residual '%s' must be of the type and shape of '%s'", r->name,
                           x->name);
    }
    if (n->n_outputs == 2) return oc_fail(err, "running_mean without running_var");
    if (n->n_outputs > 1 && ir_attr_int(n, "training_mode", 0) == 0)
        return oc_fail(err, "running statistics are outputs but training_mode is 0");
    op_set_out_like(g, n, 0, x);
    for (int i = 1; i < n->n_outputs; i++) op_set_out_like(g, n, i, ir_node_in(g, n, 3));
    return OC_OK;
}

/* BatchNormReluGrad(dY, X, scale, B [, mean, var]). */
static int bn_relu_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *dy;
    if (n->n_inputs == 5) return oc_fail(err, "frozen statistics need both mean and var");
    if (channel_inputs(g, n, 1, 2, n->n_inputs, &x, err) || op_in_shaped(g, n, 0, &dy, err))
        return OC_ERR;
    if (!same_dims(dy, x) || dy->dtype != x->dtype)
        return oc_fail(err, "gradient '%s' and input '%s' do not agree in shape or type", dy->name,
                       x->name);
    op_set_out_like(g, n, 0, x);
    op_set_out_like(g, n, 1, ir_node_in(g, n, 2));
    op_set_out_like(g, n, 2, ir_node_in(g, n, 2));
    return OC_OK;
}

/* Statistics, normalise, scale, [add], max: about 10 flops per element
 * forward, 14 backward (the statistics again, the two sums, dX); bytes as
 * read and written once (op_cost_default), as BatchNormalization's. */
static void bn_relu_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    bool grad = n->op == OP_BATCH_NORM_RELU_GRAD;
    int64_t numel = 0;
    ir_tensor_numel(&g->tensors[n->inputs[grad ? 1 : 0]], &numel);
    c->flops = (grad ? 14.0 : 10.0) * (double)numel;
}

/* The running statistics, for a frozen (training_mode 0) node's gradient. */
static void frozen_stats(grad_ctx *c, int b) {
    if (ir_attr_int(grad_fwd(c), "training_mode", 0) != 0) return;
    grad_in(c, b, grad_fwd_in(c, 3));
    grad_in(c, b, grad_fwd_in(c, 4));
}

static int bn_relu_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    const ir_node *f = grad_fwd(c);
    float eps = ir_attr_float(f, "epsilon", 1e-5f);
    bool residual = f->n_inputs > 5 && f->inputs[5] >= 0;
    if (!residual && ir_attr_int(f, "fused_backward", 0)) {
        int b = grad_node(c, "grad", OP_BATCH_NORM_RELU_GRAD);
        grad_in(c, b, dy);                /* dY */
        grad_in(c, b, grad_fwd_in(c, 0)); /* X saved: the statistics and the mask */
        grad_in(c, b, grad_fwd_in(c, 1)); /* scale */
        grad_in(c, b, grad_fwd_in(c, 2)); /* B: the mask */
        frozen_stats(c, b);
        for (int i = 0; i < 3; i++) grad_out_dx(c, b, i); /* dX, dScale, dBias */
        grad_attr_float(c, b, "epsilon", eps);
        return grad_finish(c, b);
    }
    int r = grad_node(c, "grad_relu", OP_RELU_GRAD);
    grad_in(c, r, dy);
    grad_in(c, r, grad_fwd_out(c, 0)); /* Y saved */
    int dz = grad_out_tmp(c, r, "grad_relu_out");
    if (grad_finish(c, r)) return OC_ERR;
    if (residual) grad_pass(c, 5, dz); /* Add's gradient: dZ itself */
    int b = grad_node(c, "grad", OP_BATCH_NORM_GRAD);
    grad_in(c, b, dz);
    grad_in(c, b, grad_fwd_in(c, 0)); /* X saved */
    grad_in(c, b, grad_fwd_in(c, 1)); /* scale */
    frozen_stats(c, b);
    for (int i = 0; i < 3; i++) grad_out_dx(c, b, i);
    grad_attr_float(c, b, "epsilon", eps);
    return grad_finish(c, b);
}

/* Running mean/var outputs update the state inputs in place. */
static const int8_t bn_relu_aliases[] = {-1, 3, 4};
static const op_role bn_relu_roles[] = {OP_IN_DATA,  OP_IN_PARAM, OP_IN_PARAM,
                                        OP_IN_STATE, OP_IN_STATE, OP_IN_DATA};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_batch_norm_relu = {
    .min_inputs = 5,
    .max_inputs = 6,
    .min_outputs = 1,
    .max_outputs = 3,
    .roles = bn_relu_roles,
    .n_roles = 6,
    .infer = bn_relu_infer,
    .decode = op_decode_batch_norm,
    .cost = bn_relu_cost,
    .grad = bn_relu_grad,
    .saved_inputs = 0x1f, /* X, scale, B (fused backward); frozen: the running mean and var */
    .saved_outputs = 0x1, /* Y (split backward) */
    .aliases = bn_relu_aliases,
    .n_aliases = 3,
    .autocast = OP_AUTOCAST_NORM,
};
const op_def op_def_batch_norm_relu_grad = {
    .min_inputs = 4,
    .max_inputs = 6,
    .min_outputs = 3,
    .max_outputs = 3,
    .roles = data_role,
    .n_roles = 1,
    .infer = bn_relu_grad_infer,
    .decode = op_decode_batch_norm,
    .cost = bn_relu_cost,
    .output0_optional = true,
};
