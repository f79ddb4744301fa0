/* op_binary.c — Add, Sub, Mul, Div, Max, Min, PRelu, Mod with numpy broadcasting
 * (residuals, squeeze-excitation gates, SiLU as x * Sigmoid(x), scaling, torch.maximum, a
 * learnt leak, torch.fmod): shapes, folding of plan-time values, and the gradient rules of
 * Sub, Mul, Div, Max, Min, PRelu and Mod (Add's is in grad_elementwise.c). A gradient whose input was
 * broadcast is summed back to that input's shape by ReduceSumTo. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* A, B -> C with numpy broadcasting; Add .. Div folded when both are plan-time values. */
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
    bool arith = n->op == OP_ADD || n->op == OP_SUB || n->op == OP_MUL || n->op == OP_DIV;
    if (arith && op_fold_arith(g, n, err)) return OC_ERR;
    const ir_tensor *y = ir_node_out(g, n, 0);
    /* integers at run time: Add, Sub, Mul, Div (truncated) and Mod of int64 / int32 (index
     * arithmetic on device indices: a MaxPool's indices made per plane, offset into an
     * unpooled tensor; bucketize's search; oc_int_div_mod: a zero divisor gives 0) */
    bool int_ok = n->op == OP_ADD ||
                  ((n->op == OP_SUB || n->op == OP_MUL || n->op == OP_DIV || n->op == OP_MOD) &&
                   (dt == IR_DTYPE_INT64 || dt == IR_DTYPE_INT32));
    if (!int_ok && y->data_src != IR_DATA_INLINE && !ir_dtype_is_compute(dt) &&
        dt != IR_DTYPE_DOUBLE && !op_read_for_shape_only(g, n->outputs[0]))
        return oc_fail(err, "%s of %s tensors computed at run time is not supported", n->op_type,
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

/* Max, Min: plan-time values of any number fold (op_fold_min_max); at run time one or two
 * float inputs, broadcast (a NaN wins, as numpy's maximum and torch.maximum). The importer
 * writes one of more inputs as a chain of two-input ones (onnx_import.c). */
static int min_max_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    bool values = true;
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *t;
        if (op_in_shaped(g, n, i, &t, err)) return OC_ERR;
        values = values && op_is_value(t);
    }
    if (values) return op_fold_min_max(g, n, err);
    if (n->n_inputs > 2)
        return oc_fail(err, "%s of %d inputs computed at run time is not supported (at most 2)",
                       n->op_type, n->n_inputs);
    if (n->n_inputs == 2) return binary_infer(g, n, opset, err);
    const ir_tensor *x = ir_node_in(g, n, 0);
    if (!ir_dtype_is_compute(x->dtype) && !op_read_for_shape_only(g, n->outputs[0]))
        return oc_fail(err, "%s of a %s tensor computed at run time is not supported", n->op_type,
                       ir_dtype_name(x->dtype));
    op_set_out_like(g, n, 0, x);
    return OC_OK;
}

/* PRelu: Y = X < 0 ? slope X : X, the slope broadcast to X (unidirectionally). */
static int prelu_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x, *s;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &s, err)) return OC_ERR;
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (op_broadcast(x, s, &rank, dims, err)) return OC_ERR;
    bool same = rank == x->rank && memcmp(dims, x->dims, (size_t)rank * sizeof dims[0]) == 0;
    if (!same) return oc_fail(err, "slope '%s' does not broadcast to X '%s'", s->name, x->name);
    return binary_infer(g, n, opset, err);
}

/* The gradient of input i of Max / Min / PRelu in Y's shape: grad_op(dY, A, B), attribute
 * input i; then summed to the input's shape. */
static int select_grad(grad_ctx *c, op_kind grad_op, int i) {
    int dy = grad_dy(c, 0);
    const char *sfx = i ? "grad_b_sel" : "grad_a_sel";
    int b = grad_node(c, sfx, grad_op);
    grad_in(c, b, dy);
    grad_in(c, b, grad_fwd_in(c, 0));
    grad_in(c, b, grad_fwd_in(c, 1));
    int t = grad_out_tmp(c, b, sfx);
    grad_attr_int(c, b, "input", i);
    if (grad_op == OP_MIN_MAX_GRAD) grad_attr_int(c, b, "max", grad_fwd(c)->op == OP_MAX);
    if (grad_finish(c, b)) return OC_ERR;
    return op_grad_sum_to_input(c, i, t, i ? "grad_b" : "grad_a", 1.0f);
}

/* Both inputs' gradients by grad_op(dY, A, B; input i), each wanted one summed to its
 * input's shape. */
static int select_grads(grad_ctx *c, op_kind grad_op) {
    if (grad_dy(c, 0) < 0) return OC_OK;
    for (int i = 0; i < 2; i++)
        if (grad_wants(c, i) && select_grad(c, grad_op, i)) return OC_ERR;
    return OC_OK;
}

/* PowTensor (Pow of a run-time base by a run-time or trainable exponent: GeM pooling's
 * learnt p, op_elementwise.c lowers Pow to it): dA = dY b a^(b-1), dB = dY a^b ln a
 * (pointwise.h's oc_pow_grad, PyTorch's masks at b == 0 and a == 0). Reads A and B. */
static int pow_tensor_grad(grad_ctx *c) { return select_grads(c, OP_POW_TENSOR_GRAD); }

/* Max, Min: dY to the input that won, half to each where they tie (torch.maximum's rule;
 * both where a NaN is involved); one input: dY. Reads A and B. */
static int min_max_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    if (grad_fwd(c)->n_inputs == 1)
        return grad_wants(c, 0) ? op_grad_sum_to_input(c, 0, dy, "grad", 1.0f) : OC_OK;
    return select_grads(c, OP_MIN_MAX_GRAD);
}

/* PRelu: dX = X > 0 ? dY : slope dY; dSlope = sum of (X > 0 ? 0 : X dY) over the broadcast
 * (PyTorch's prelu backward). Reads X and the slope. */
static int prelu_grad(grad_ctx *c) { return select_grads(c, OP_PRELU_GRAD); }

/* MinMaxGrad / PReluGrad / PowTensorGrad(dY, A, B) -> dY's shape (A and B broadcast to it). */
static int binary_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *a, *b;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &a, err) ||
        op_in_shaped(g, n, 2, &b, err))
        return OC_ERR;
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (op_broadcast(a, b, &rank, dims, err)) return OC_ERR;
    ir_tensor ab = {.name = "A and B", .rank = rank};
    memcpy(ab.dims, dims, sizeof dims);
    if (!same_dims(&ab, dy))
        return oc_fail(err, "'%s' and '%s' do not broadcast to dY '%s'", a->name, b->name,
                       dy->name);
    op_set_out_like(g, n, 0, dy);
    return OC_OK;
}

static int binary_grad_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_binary_grad_args *p = &op_args_new(n)->binary_grad;
    int64_t i = ir_attr_int(n, "input", 0);
    if (i != 0 && i != 1) return oc_fail(err, "input %" PRId64 " is not 0 or 1", i);
    p->input = (int)i;
    p->max = ir_attr_int(n, "max", 1) != 0;
    return OC_OK;
}

/* Mod: plan-time values fold (op_fold_mod); at run time float data with fmod 1 (torch.fmod:
 * C's fmod, the sign of the dividend, exact) and integers with either (fmod 0: Python's %,
 * the sign of the divisor). Python's % of floats (torch.remainder) the exporters write as
 * Sub, Mul, Floor and Div; ONNX allows fmod 0 for integers only. */
static int mod_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *a, *b;
    if (op_in_shaped(g, n, 0, &a, err) || op_in_shaped(g, n, 1, &b, err)) return OC_ERR;
    if (op_is_value(a) && op_is_value(b)) return op_fold_mod(g, n, err);
    bool ints = (a->dtype == IR_DTYPE_INT64 || a->dtype == IR_DTYPE_INT32) && b->dtype == a->dtype;
    if (!ints && ir_attr_int(n, "fmod", 0) != 1)
        return oc_fail(err,
                       "Mod of run-time data with fmod %" PRId64
                       " is not supported (fmod 1, C's fmod of floats, is)",
                       ir_attr_int(n, "fmod", 0));
    return binary_infer(g, n, opset, err);
}

/* Y = fmod(A, B) = A - B * trunc(A / B): dA = dY, dB = -dY * trunc(A / B), the quotient read
 * back as (A - Y) / B (torch.fmod's derivative; A - Y is B's whole multiple), each summed to
 * its input's shape. Reads A, B and Y. */
static int mod_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    if (grad_wants(c, 0) && op_grad_sum_to_input(c, 0, dy, "grad_a", 1.0f)) return OC_ERR;
    if (!grad_wants(c, 1)) return OC_OK;
    int whole = tmp_node(c, OP_SUB, grad_fwd_in(c, 0), grad_fwd_out(c, 0), "grad_whole");
    int q = whole < 0 ? -1 : tmp_node(c, OP_DIV, whole, grad_fwd_in(c, 1), "grad_quotient");
    int u = q < 0 ? -1 : tmp_node(c, OP_MUL, dy, q, "grad_b_mul");
    return u < 0 ? OC_ERR : op_grad_sum_to_input(c, 1, u, "grad_b", -1.0f);
}

/* op_def.lower: Python's % of device indices by their axis' extent (torch.take_along_dim's
 * export wraps an ArgMax's indices so): an Identity when the indices already lie in
 * [0, divisor) (op_index_range). */
static int mod_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *a, *b;
    int64_t lo, hi, d;
    if (op_in_shaped(g, n, 0, &a, err) || op_in_shaped(g, n, 1, &b, err)) return OC_ERR;
    if (op_is_value(a) || !op_is_value(b) || ir_attr_int(n, "fmod", 0) != 0 || b->rank > a->rank ||
        !op_int_scalar(b, false, &d) || d <= 0 || !op_index_range(g, n->inputs[0], &lo, &hi) ||
        lo < 0 || hi >= d)
        return OC_OK; /* folds, runs, or infer names it */
    int at = n->inputs[0];
    op_rewrite_become(g, node, OP_IDENTITY);
    ir_node_add_input(g, node, at);
    *changed = true;
    return OC_OK;
}

static const op_role data_role[] = {OP_IN_DATA};

/* A two-input op with its shape function, gradient rule, saved tensors and autocast rule. */
#define BINARY_DEF(ident, inferfn, rule, saved_in, saved_out, ac)                                  \
    const op_def ident = {                                                                         \
        .min_inputs = 2,                                                                           \
        .max_inputs = 2,                                                                           \
        .min_outputs = 1,                                                                          \
        .max_outputs = 1,                                                                          \
        .roles = data_role,                                                                        \
        .n_roles = 1,                                                                              \
        .infer = inferfn,                                                                          \
        .grad = rule,                                                                              \
        .saved_inputs = saved_in,                                                                  \
        .saved_outputs = saved_out,                                                                \
        .autocast = ac,                                                                            \
    }
#define BINARY_OP(ident, rule, saved_in, saved_out)                                                \
    BINARY_DEF(ident, binary_infer, rule, saved_in, saved_out, OP_AUTOCAST_FOLLOW)

BINARY_OP(op_def_add, op_grad_add, 0x0, 0x0);
BINARY_OP(op_def_sub, sub_grad, 0x0, 0x0);
BINARY_OP(op_def_mul, mul_grad, 0x3, 0x0);
BINARY_OP(op_def_div, div_grad, 0x2, 0x1);

const op_def op_def_min_max = {
    .min_inputs = 1,
    .max_inputs = -1, /* variadic: more than two only at plan time */
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = min_max_infer,
    .grad = min_max_grad,
    .saved_inputs = 0x3,
};
static int mod_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_args_new(n)->mod.fmod = ir_attr_int(n, "fmod", 0) != 0;
    return OC_OK;
}

const op_def op_def_mod = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = mod_infer,
    .lower = mod_lower,
    .decode = mod_decode,
    .grad = mod_grad,
    .saved_inputs = 0x3,
    .saved_outputs = 0x1,
};
/* PyTorch's autocast list: pow in float32 */
BINARY_DEF(op_def_pow_tensor, binary_infer, pow_tensor_grad, 0x3, 0x0, OP_AUTOCAST_FP32);
BINARY_DEF(op_def_prelu, prelu_infer, prelu_grad, 0x3, 0x0, OP_AUTOCAST_FOLLOW);
#define BINARY_GRAD_OP(ident)                                                                      \
    const op_def ident = {.min_inputs = 3,                                                         \
                          .max_inputs = 3,                                                         \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = data_role,                                                      \
                          .n_roles = 1,                                                            \
                          .infer = binary_grad_infer,                                              \
                          .decode = binary_grad_decode}
BINARY_GRAD_OP(op_def_min_max_grad);
BINARY_GRAD_OP(op_def_prelu_grad);
BINARY_GRAD_OP(op_def_pow_tensor_grad);
