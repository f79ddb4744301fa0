/* op_softmax.c — Softmax and LogSoftmax (attention's probabilities, a
 * language model's log-likelihood) along one axis, with their gradient rules
 * and the backward ops SoftmaxGrad / LogSoftmaxGrad beside them. Opset 13 on
 * normalises along `axis` alone; earlier opsets flatten the dims from `axis`
 * on into one row (op_softmax_args.flatten). Both gradients read only the
 * output Y:
 *   Softmax:    dX = Y * (dY - sum(dY * Y))
 *   LogSoftmax: dX = dY - exp(Y) * sum(dY)      (sums along the row) */
#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* Forward: from the attribute and the opset; backward: the normalised axis
 * and flatten flag the forward wrote onto it. */
static int softmax_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, n->n_inputs - 1);
    op_softmax_args *p = &op_args_new(n)->softmax;
    bool fwd = n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX;
    p->flatten = fwd ? g->opset < 13 : ir_attr_int(n, "flatten", 0) != 0;
    int64_t dflt = fwd && g->opset < 13 ? 1 : -1;
    return op_axis(ir_attr_int(n, "axis", dflt), x->rank, "axis", &p->axis, err);
}

static int softmax_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (x->dtype != IR_DTYPE_FLOAT) return oc_fail(err, "input '%s' is not float", x->name);
    if (x->rank == 0) return oc_fail(err, "input '%s' is a scalar", x->name);
    op_set_out_like(g, n, 0, x);
    return OC_OK;
}

/* SoftmaxGrad / LogSoftmaxGrad (dY, Y) -> dX, shaped like Y. */
static int softmax_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *y;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &y, err)) return OC_ERR;
    bool ok = dy->rank == y->rank;
    for (int d = 0; ok && d < y->rank; d++) ok = dy->dims[d] == y->dims[d];
    if (!ok) return oc_fail(err, "'%s' and '%s' differ in shape", dy->name, y->name);
    op_set_out_like(g, n, 0, y);
    return OC_OK;
}

/* exp, a max and two sums per element. */
static void softmax_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    int64_t numel = 0;
    ir_tensor_numel(&g->tensors[n->inputs[0]], &numel);
    c->flops = 5.0 * (double)numel;
}

static int softmax_grad_rule_of(grad_ctx *c, op_kind op) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const op_softmax_args *p = &op_args_of(grad_fwd(c))->softmax;
    int b = grad_node(c, "grad", op);
    grad_in(c, b, dy);
    grad_in(c, b, grad_fwd_out(c, 0));
    grad_out_dx(c, b, 0);
    grad_attr_int(c, b, "axis", p->axis);
    grad_attr_int(c, b, "flatten", p->flatten);
    return grad_finish(c, b);
}
static int softmax_grad_rule(grad_ctx *c) { return softmax_grad_rule_of(c, OP_SOFTMAX_GRAD); }
static int log_softmax_grad_rule(grad_ctx *c) {
    return softmax_grad_rule_of(c, OP_LOG_SOFTMAX_GRAD);
}

static const op_role data_role[] = {OP_IN_DATA};

#define SOFTMAX_OP(name, rule)                                                                     \
    const op_def name = {                                                                          \
        .min_inputs = 1,                                                                           \
        .max_inputs = 1,                                                                           \
        .min_outputs = 1,                                                                          \
        .max_outputs = 1,                                                                          \
        .roles = data_role,                                                                        \
        .n_roles = 1,                                                                              \
        .infer = softmax_infer,                                                                    \
        .decode = softmax_decode,                                                                  \
        .cost = softmax_cost,                                                                      \
        .grad = rule,                                                                              \
        .saved_outputs = 0x1,                                                                      \
        .autocast = OP_AUTOCAST_FP32,                                                              \
    }
#define SOFTMAX_GRAD_OP(name)                                                                      \
    const op_def name = {                                                                          \
        .min_inputs = 2,                                                                           \
        .max_inputs = 2,                                                                           \
        .min_outputs = 1,                                                                          \
        .max_outputs = 1,                                                                          \
        .roles = data_role,                                                                        \
        .n_roles = 1,                                                                              \
        .infer = softmax_grad_infer,                                                               \
        .decode = softmax_decode,                                                                  \
        .cost = softmax_cost,                                                                      \
    }

SOFTMAX_OP(op_def_softmax, softmax_grad_rule);
SOFTMAX_OP(op_def_log_softmax, log_softmax_grad_rule);
SOFTMAX_GRAD_OP(op_def_softmax_grad);
SOFTMAX_GRAD_OP(op_def_log_softmax_grad);
