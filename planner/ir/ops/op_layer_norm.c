/* op_layer_norm.c — LayerNormalization (ConvNeXt; opset 17): each row of X
 * (the dims from `axis` on) normalised by its own mean and variance, then
 * scaled and shifted (Scale and B of the row's shape). Its gradient rule and
 * the backward op LayerNormalizationGrad beside it: the statistics are
 * recomputed from X (saved: X and Scale, as BatchNormalizationGrad). The
 * optional Mean / InvStdDev outputs are refused (no exporter asks for them in
 * training). */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* The row: dims [axis, rank) of X; Scale and B must have that shape. */
static int ln_axis(const ir_node *n, const ir_tensor *x, int64_t *axis, oc_err *err) {
    return op_axis(ir_attr_int(n, "axis", -1), x->rank, "axis", axis, err);
}

static int ln_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *s;
    int64_t axis;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &s, err) ||
        ln_axis(n, x, &axis, err))
        return OC_ERR;
    if (x->dtype != IR_DTYPE_FLOAT) return oc_fail(err, "input '%s' is not float", x->name);
    for (int i = 1; i < 3; i++) {
        ir_tensor *p = ir_node_in(g, n, i);
        if (!p) continue;
        bool ok = p->rank == x->rank - axis;
        for (int d = 0; ok && d < p->rank; d++) ok = p->dims[d] == x->dims[axis + d];
        if (!ok) return oc_fail(err, "'%s' is not of the normalised dims' shape", p->name);
    }
    if (n->n_outputs > 1) return oc_fail(err, "the Mean and InvStdDev outputs are not supported");
    op_set_out_like(g, n, 0, x);
    return OC_OK;
}

static int ln_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    op_ln_args *p = &op_args_new(n)->ln;
    if (ln_axis(n, x, &p->axis, err)) return OC_ERR;
    p->epsilon = ir_attr_float(n, "epsilon", 1e-5f);
    if (!(p->epsilon > 0.0f))
        return oc_fail(err, "epsilon %g must be positive", (double)p->epsilon);
    return OC_OK;
}

static void ln_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    int64_t numel = 0;
    ir_tensor_numel(&g->tensors[n->inputs[0]], &numel);
    c->flops = 8.0 * (double)numel;
}

/* dX, dScale, dB = LayerNormalizationGrad(dY, X, Scale). */
static int ln_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    const op_ln_args *p = &op_args_of(grad_fwd(c))->ln;
    int64_t axis = p->axis;
    float eps = p->epsilon;
    int b = grad_node(c, "grad", OP_LAYER_NORM_GRAD);
    grad_in(c, b, dy);
    grad_in(c, b, grad_fwd_in(c, 0));
    grad_in(c, b, grad_fwd_in(c, 1));
    grad_out_dx(c, b, 0);
    grad_out_dx(c, b, 1);
    grad_out_dx(c, b, 2);
    grad_attr_int(c, b, "axis", axis);
    grad_attr_float(c, b, "epsilon", eps);
    return grad_finish(c, b);
}

static int ln_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *x, *s;
    int64_t axis;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &x, err) ||
        op_in_shaped(g, n, 2, &s, err) || ln_axis(n, x, &axis, err))
        return OC_ERR;
    bool ok = dy->rank == x->rank && s->rank == x->rank - axis;
    for (int d = 0; ok && d < x->rank; d++) ok = dy->dims[d] == x->dims[d];
    for (int d = 0; ok && d < s->rank; d++) ok = s->dims[d] == x->dims[axis + d];
    if (!ok) return oc_fail(err, "'%s', '%s' and '%s' do not agree", dy->name, x->name, s->name);
    op_set_out_like(g, n, 0, x);
    op_set_out_like(g, n, 1, s);
    op_set_out_like(g, n, 2, s);
    return OC_OK;
}

static const op_role ln_roles[] = {OP_IN_DATA, OP_IN_PARAM, OP_IN_PARAM};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_layer_norm = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 3,
    .roles = ln_roles,
    .n_roles = 3,
    .infer = ln_infer,
    .decode = ln_decode,
    .cost = ln_cost,
    .grad = ln_grad,
    .saved_inputs = 0x3,
    .autocast = OP_AUTOCAST_FP32,
};
const op_def op_def_layer_norm_grad = {
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 3,
    .roles = data_role,
    .n_roles = 1,
    .infer = ln_grad_infer,
    .decode = ln_decode,
    .output0_optional = true,
};
