/* op_elementwise.c — Relu, Sigmoid, Tanh, HardSigmoid, HardSwish, Erf, Gelu, Sqrt, Pow,
 * Neg, Exp, Log, Abs, Reciprocal, LeakyRelu, Elu, Selu, Softplus, Mish, Clip, Dropout:
 * shapes; the pointwise ops' gradient rules and backward ops beside them. */
#include <math.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_pointwise.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* X -> Y of the same shape (Relu, Clip); Dropout adds a bool mask of that shape. */
int op_pointwise_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    op_set_out_like(g, n, 0, x);
    op_set_out(g, n, 1, IR_DTYPE_BOOL, x->rank, x->dims);
    return OC_OK;
}

/* A pointwise op folded when X is a plan-time value (op_fold_unary), else run (float). */
int op_pointwise_fold_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x)) return op_fold_unary(g, n, err);
    if (!ir_dtype_is_compute(x->dtype))
        return oc_fail(err, "%s of a %s tensor computed at run time is not supported", n->op_type,
                       ir_dtype_name(x->dtype));
    return op_pointwise_infer(g, n, opset, err);
}

/* Dropout of a plan-time value that leaves it as it is (ratio 0, or not training: the
 * exporters' dropout of a position table, Funnel's sin/cos) folds: the value, and a mask of
 * ones. Ratio and mode are read as op_decode_dropout reads them. */
static int dropout_fold(ir_graph *g, ir_node *n, oc_err *err) {
    ir_node probe = *n;
    probe.args = NULL;
    int rc = op_decode_dropout(g, &probe, err);
    bool identity = rc == OC_OK && (op_args_of(&probe)->dropout.ratio == 0 ||
                                    !op_args_of(&probe)->dropout.training);
    oc_free(probe.args); /* the probe's own, on failure too */
    if (rc) return OC_ERR;
    const ir_tensor *x = ir_node_in(g, n, 0);
    if (!identity || !op_is_value(x)) return OC_OK;
    ir_tensor_set_data(ir_node_out(g, n, 0), x->data, x->data_bytes);
    ir_tensor *mask = ir_node_out(g, n, 1);
    if (mask) {
        int64_t numel = 0;
        ir_tensor_numel(mask, &numel);
        uint8_t *ones = oc_malloc((size_t)numel + 1);
        memset(ones, 1, (size_t)numel);
        ir_tensor_set_data(mask, ones, (size_t)numel);
        oc_free(ones);
    }
    return OC_OK;
}

static int dropout_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    double ratio;
    if (ir_node_in(g, n, 1) && !op_in_scalar_f(g, n, 1, &ratio))
        return oc_fail(err, "ratio must be a float scalar known at plan time");
    if (op_pointwise_infer(g, n, opset, err)) return OC_ERR;
    return dropout_fold(g, n, err);
}

/* Bounds given as attributes (opset < 11 Clip; ClipGrad copies them). */
int op_decode_clip(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_clip_args *p = &op_args_new(n)->clip;
    p->has_min = ir_attr_find(n, "min") != NULL;
    p->has_max = ir_attr_find(n, "max") != NULL;
    p->min = ir_attr_float(n, "min", 0.0f);
    p->max = ir_attr_float(n, "max", 0.0f);
    return OC_OK;
}

/* Clip of a plan-time value with plan-time bounds (inputs from opset 11, attributes before)
 * folds, in X's type: the exporters' shape glue (timm's TF "SAME" padding clips the pad it
 * computes from the input's size at 0). Otherwise it runs (float). */
static int clip_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    if (op_pointwise_infer(g, n, opset, err) || op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    const ir_tensor *lo = ir_node_in(g, n, 1), *hi = ir_node_in(g, n, 2);
    if (!op_is_value(x) || (lo && !op_is_value(lo)) || (hi && !op_is_value(hi))) return OC_OK;
    int64_t k;
    for (int i = 1; i < 3; i++) {
        const ir_tensor *b = ir_node_in(g, n, i);
        if (b && (!ir_tensor_numel(b, &k) || k != 1))
            return oc_fail(err, "bound '%s' is not a scalar", b->name);
    }
    bool fl = op_fold_is_float(x->dtype);
    num vlo = {-INFINITY, INT64_MIN}, vhi = {INFINITY, INT64_MAX};
    if (lo) vlo = op_fold_num_get(lo, 0);
    if (hi) vhi = op_fold_num_get(hi, 0);
    if (g->opset < 11) {
        if (ir_attr_find(n, "min")) vlo.f = ir_attr_float(n, "min", 0.0f);
        if (ir_attr_find(n, "max")) vhi.f = ir_attr_float(n, "max", 0.0f);
    }
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t i = 0; i < numel; i++) {
        num v = op_fold_num_get(x, i);
        if (fl) {
            v.f = v.f < vlo.f ? vlo.f : v.f;
            v.f = v.f > vhi.f ? vhi.f : v.f;
        } else {
            v.i = v.i < vlo.i ? vlo.i : v.i;
            v.i = v.i > vhi.i ? vhi.i : v.i;
        }
        op_fold_num_put(buf, x->dtype, i, v, x->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Ratio and training flag (opset >= 12: plan-time inputs 1 and 2; before:
 * attribute ratio, training when the mask is an output; DropoutGrad: its
 * ratio attribute), and the hash of the name the mask is keyed by. */
int op_decode_dropout(const ir_graph *g, ir_node *n, oc_err *err) {
    op_dropout_args *p = &op_args_new(n)->dropout;
    p->ratio = 0.5f;
    if (n->op == OP_DROPOUT_GRAD) {
        p->ratio = ir_attr_float(n, "ratio", 0.5f);
        p->training = true;
    } else if (g->opset >= 12) {
        double r;
        if (ir_node_in((ir_graph *)g, n, 1)) {
            if (!op_in_scalar_f((ir_graph *)g, n, 1, &r))
                return oc_fail(err, "ratio must be a float scalar known at plan time");
            p->ratio = (float)r;
        }
        const ir_tensor *t = ir_node_in((ir_graph *)g, n, 2);
        if (t && (t->dtype != IR_DTYPE_BOOL || t->data_src != IR_DATA_INLINE || t->data_bytes < 1))
            return oc_fail(err, "training_mode '%s' must be a bool known at plan time", t->name);
        p->training = t && ((const uint8_t *)t->data)[0] != 0;
    } else {
        p->ratio = ir_attr_float(n, "ratio", 0.5f);
        p->training = n->n_outputs > 1 && n->outputs[1] >= 0;
    }
    if (p->training && !(p->ratio >= 0.0f && p->ratio < 1.0f))
        return oc_fail(err, "ratio %g is outside [0, 1)", (double)p->ratio);
    p->key_hash = op_name_hash(ir_attr_string(n, "outcore_recompute_of", n->name));
    return OC_OK;
}

const op_role op_pointwise_roles[] = {OP_IN_DATA};
static const op_role clip_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_relu = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = op_pointwise_roles,
    .n_roles = 1,
    .infer = op_pointwise_infer,
    .grad = op_grad_relu,
    .saved_outputs = 0x1,
};

/* Sigmoid: Y = 1 / (1 + exp(-X)); dX = dY * Y * (1 - Y) from the saved Y. */
static int sigmoid_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_y(c, OP_SIGMOID_GRAD); }

POINTWISE_OP(op_def_sigmoid, sigmoid_grad_rule, NULL, 0x0, 0x1);

/* SigmoidGrad(dY, Y) -> dX, shaped like dY. */
POINTWISE_GRAD_OP(op_def_sigmoid_grad, NULL);

/* Tanh: dX = dY * (1 - Y^2) from the saved Y. */
static int tanh_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_y(c, OP_TANH_GRAD); }

POINTWISE_OP(op_def_tanh, tanh_grad_rule, NULL, 0x0, 0x1);

/* HardSigmoid: Y = max(0, min(1, alpha X + beta)) (ONNX defaults 0.2, 0.5;
 * PyTorch exports 1/6, 1/2); the gradient reads X and the same attributes. */
static int hard_sigmoid_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_pointwise_args *p = &op_args_new(n)->pointwise;
    p->p0 = ir_attr_float(n, "alpha", 0.2f);
    p->p1 = ir_attr_float(n, "beta", 0.5f);
    if (!isfinite(p->p0) || !isfinite(p->p1)) return oc_fail(err, "alpha and beta must be finite");
    return OC_OK;
}
static int hard_sigmoid_grad_rule(grad_ctx *c) {
    return op_grad_pointwise_of_x(c, OP_HARD_SIGMOID_GRAD);
}

POINTWISE_OP(op_def_hard_sigmoid, hard_sigmoid_grad_rule, hard_sigmoid_decode, 0x1, 0x0);

/* HardSwish: Y = X * HardSigmoid(X) with alpha 1/6, beta 1/2; the gradient reads X. */
static int hard_swish_grad_rule(grad_ctx *c) {
    return op_grad_pointwise_of_x(c, OP_HARD_SWISH_GRAD);
}

POINTWISE_OP(op_def_hard_swish, hard_swish_grad_rule, NULL, 0x1, 0x0);

/* TanhGrad(dY, Y), HardSwishGrad(dY, X) -> dX shaped like dY; HardSigmoidGrad
 * also its alpha and beta. */
POINTWISE_GRAD_OP(op_def_tanh_grad, NULL);
POINTWISE_GRAD_OP(op_def_hard_sigmoid_grad, hard_sigmoid_decode);
POINTWISE_GRAD_OP(op_def_hard_swish_grad, NULL);

/* Erf; Gelu (opset 20: approximate "none" or "tanh"). Both gradients read X. */
static int gelu_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    const char *a = ir_attr_string(n, "approximate", "none");
    op_pointwise_args *p = &op_args_new(n)->pointwise;
    if (strcmp(a, "none") == 0) p->p0 = 0.0f;
    else if (strcmp(a, "tanh") == 0) p->p0 = 1.0f;
    else return oc_fail(err, "approximate '%s' is not one of none, tanh", a);
    return OC_OK;
}
static int erf_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ERF_GRAD); }
static int gelu_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_GELU_GRAD); }

POINTWISE_OP(op_def_erf, erf_grad_rule, NULL, 0x1, 0x0);
POINTWISE_OP(op_def_gelu, gelu_grad_rule, gelu_decode, 0x1, 0x0);
POINTWISE_GRAD_OP(op_def_erf_grad, NULL);
POINTWISE_GRAD_OP(op_def_gelu_grad, gelu_decode);

/* Sqrt (dX = dY / (2 Y), from Y); Pow with a constant scalar exponent p
 * (dX = dY p X^(p-1), from X): the decomposed LayerNorm older exporters write. */
static int pow_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    double e;
    if (n->op == OP_POW_GRAD) {
        op_args_new(n)->pointwise.p0 = ir_attr_float(n, "exponent", 1.0f);
        return OC_OK;
    }
    if (op_is_value(&g->tensors[n->inputs[0]])) return OC_OK; /* folded (pow_infer) */
    if (!op_is_value(&g->tensors[n->inputs[1]]) || !op_in_scalar_f((ir_graph *)g, n, 1, &e) ||
        !isfinite(e))
        return oc_fail(err, "the exponent must be a finite scalar known at plan time (or the "
                            "base a positive plan-time value)");
    op_args_new(n)->pointwise.p0 = (float)e;
    return OC_OK;
}
static int sqrt_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_y(c, OP_SQRT_GRAD); }
static int pow_grad_rule(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    float e = op_args_of(grad_fwd(c))->pointwise.p0;
    int b = grad_node(c, "grad", OP_POW_GRAD);
    grad_in(c, b, dy);
    grad_in(c, b, grad_fwd_in(c, 0));
    grad_out_dx(c, b, 0);
    grad_attr_float(c, b, "exponent", e);
    return grad_finish(c, b);
}

/* op_def.lower: a plan-time positive base raised to a run-time exponent (torch.exp2, 2 ** x,
 * a learnt temperature's 10 ** t) is Exp(exponent * ln(base)), ln(base) a plan-time constant
 * "<node>/log_base"; Mul and Exp carry the gradient (dX = dY y ln base). A run-time base by a
 * run-time or trainable exponent (GeM pooling's learnt p), or by a plan-time exponent that is
 * not one number, becomes PowTensor (op_binary.c: both broadcast, both gradients). */
static int pow_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *e;
    double scalar;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &e, err)) return OC_ERR;
    if (op_is_value(e) && (op_is_value(x) || op_in_scalar_f(g, n, 1, &scalar)))
        return OC_OK; /* folds, or the pointwise Pow of a constant exponent */
    if (!op_is_value(x)) {
        if (!ir_dtype_is_compute(x->dtype) || !ir_dtype_is_compute(e->dtype))
            return OC_OK; /* infer names the type */
        int xt = n->inputs[0], et = n->inputs[1];
        op_rewrite_become(g, node, OP_POW_TENSOR);
        ir_node_add_input(g, node, xt);
        ir_node_add_input(g, node, et);
        *changed = true;
        return OC_OK;
    }
    if (!ir_dtype_is_compute(e->dtype) || !op_fold_is_float(x->dtype)) return OC_OK;
    int64_t numel;
    ir_tensor_numel(x, &numel);
    for (int64_t i = 0; i < numel; i++)
        if (!(op_fold_num_get(x, i).f > 0.0))
            return oc_fail(err,
                           "base '%s' has an element that is not positive (%g); a run-time "
                           "exponent is taken with a positive plan-time base",
                           x->name, op_fold_num_get(x, i).f);
    char *base = oc_strdup(n->name);
    int lb = op_rewrite_fill(g, base, "log_base", x->rank, x->dims, 0.0f);
    float *lv = g->tensors[lb].data;
    x = ir_node_in(g, &g->nodes[node], 0); /* the fill may move g->tensors */
    for (int64_t i = 0; i < numel; i++) lv[i] = (float)log(op_fold_num_get(x, i).f);
    int et = g->nodes[node].inputs[1];
    int t = op_rewrite_insert(g, node, base, "scaled", OP_MUL, et, lb, -1);
    op_rewrite_become(g, node + 1, OP_EXP);
    ir_node_add_input(g, node + 1, t);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* The exponent trains when it is a parameter (GeM's p): a data input. */
static const op_role pow_roles[] = {OP_IN_DATA, OP_IN_DATA};

/* Pow of a plan-time base folds (op_fold_pow); of an activation it runs. */
static int pow_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x)) return op_fold_pow(g, n, err);
    return op_pointwise_infer(g, n, opset, err);
}

POINTWISE_DEF(op_def_sqrt, op_pointwise_fold_infer, sqrt_grad_rule, NULL, 0x0, 0x1,
              OP_AUTOCAST_FOLLOW);
const op_def op_def_pow = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = pow_roles,
    .n_roles = 2,
    .infer = pow_infer,
    .lower = pow_lower,
    .decode = pow_decode,
    .grad = pow_grad_rule,
    .saved_inputs = 0x1,
    .autocast = OP_AUTOCAST_FP32,
};
POINTWISE_GRAD_OP(op_def_sqrt_grad, NULL);
POINTWISE_GRAD_OP(op_def_pow_grad, pow_decode);

/* Neg: -X; at plan time any number (op_fold_unary), at run time float. dX = -dY: a Neg. */
static int neg_grad_rule(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    int b = grad_node(c, "grad", OP_NEG);
    grad_in(c, b, dy);
    grad_out_dx(c, b, 0);
    return grad_finish(c, b);
}
POINTWISE_DEF(op_def_neg, op_pointwise_fold_infer, neg_grad_rule, NULL, 0x0, 0x0,
              OP_AUTOCAST_FOLLOW);

/* Sin (dX = dY cos X), Cos (dX = -dY sin X): folded when X is a plan-time value (a rotary
 * table from a frequency buffer and a Range), else run. */
static int sin_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_SIN_GRAD); }
static int cos_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_COS_GRAD); }

POINTWISE_DEF(op_def_sin, op_pointwise_fold_infer, sin_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FOLLOW);
POINTWISE_DEF(op_def_cos, op_pointwise_fold_infer, cos_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FOLLOW);
POINTWISE_GRAD_OP(op_def_sin_grad, NULL);
POINTWISE_GRAD_OP(op_def_cos_grad, NULL);

/* Exp (dX = dY Y), Log (dY / X), Abs (dY sign(X), 0 at 0), Reciprocal (-dY Y^2): Exp,
 * Log and Reciprocal in float32 under autocast, as PyTorch's list has them. */
static int exp_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_y(c, OP_EXP_GRAD); }
static int log_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_LOG_GRAD); }
static int abs_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ABS_GRAD); }
static int reciprocal_grad_rule(grad_ctx *c) {
    return op_grad_pointwise_of_y(c, OP_RECIPROCAL_GRAD);
}

POINTWISE_DEF(op_def_exp, op_pointwise_fold_infer, exp_grad_rule, NULL, 0x0, 0x1, OP_AUTOCAST_FP32);
POINTWISE_DEF(op_def_log, op_pointwise_fold_infer, log_grad_rule, NULL, 0x1, 0x0, OP_AUTOCAST_FP32);
POINTWISE_DEF(op_def_abs, op_pointwise_fold_infer, abs_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FOLLOW);
POINTWISE_DEF(op_def_reciprocal, op_pointwise_fold_infer, reciprocal_grad_rule, NULL, 0x0, 0x1,
              OP_AUTOCAST_FP32);
POINTWISE_GRAD_OP(op_def_exp_grad, NULL);
POINTWISE_GRAD_OP(op_def_log_grad, NULL);
POINTWISE_GRAD_OP(op_def_abs_grad, NULL);
POINTWISE_GRAD_OP(op_def_reciprocal_grad, NULL);

/* LeakyRelu (alpha, ONNX default 0.01), Elu (alpha, 1), Selu (alpha, gamma: ONNX's and
 * PyTorch's constants): p0 = alpha, p1 = gamma. Their gradients read X and the same
 * attributes (copied onto the gradient node), as PyTorch's leaky_relu_backward and
 * elu_backward (is_result false) do. */
static int activation_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_pointwise_args *p = &op_args_new(n)->pointwise;
    bool leaky = n->op == OP_LEAKY_RELU || n->op == OP_LEAKY_RELU_GRAD;
    bool selu = n->op == OP_SELU || n->op == OP_SELU_GRAD;
    p->p0 = ir_attr_float(n, "alpha", leaky ? 0.01f : selu ? 1.67326319217681884765625f : 1.0f);
    p->p1 = selu ? ir_attr_float(n, "gamma", 1.05070102214813232421875f) : 0.0f;
    if (!isfinite(p->p0) || !isfinite(p->p1)) return oc_fail(err, "alpha and gamma must be finite");
    return OC_OK;
}
static int leaky_relu_grad_rule(grad_ctx *c) {
    return op_grad_pointwise_of_x(c, OP_LEAKY_RELU_GRAD);
}
static int elu_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ELU_GRAD); }
static int selu_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_SELU_GRAD); }

POINTWISE_OP(op_def_leaky_relu, leaky_relu_grad_rule, activation_decode, 0x1, 0x0);
POINTWISE_OP(op_def_elu, elu_grad_rule, activation_decode, 0x1, 0x0);
POINTWISE_OP(op_def_selu, selu_grad_rule, activation_decode, 0x1, 0x0);
POINTWISE_GRAD_OP(op_def_leaky_relu_grad, activation_decode);
POINTWISE_GRAD_OP(op_def_elu_grad, activation_decode);
POINTWISE_GRAD_OP(op_def_selu_grad, activation_decode);

/* Softplus (PyTorch's threshold 20; float32 under autocast) and Mish = X tanh(Softplus(X));
 * both gradients read X. */
static int softplus_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_SOFTPLUS_GRAD); }
static int mish_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_MISH_GRAD); }

POINTWISE_DEF(op_def_softplus, op_pointwise_infer, softplus_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FP32);
POINTWISE_OP(op_def_mish, mish_grad_rule, NULL, 0x1, 0x0);
POINTWISE_GRAD_OP(op_def_softplus_grad, NULL);
POINTWISE_GRAD_OP(op_def_mish_grad, NULL);

const op_def op_def_clip = {
    .min_inputs = 1,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = clip_roles,
    .n_roles = 2,
    .infer = clip_infer,
    .grad = op_grad_clip,
    .saved_inputs = 0x7,
    .decode = op_decode_clip,
};

const op_def op_def_dropout = {
    .min_inputs = 1,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 2,
    .roles = clip_roles,
    .n_roles = 2,
    .infer = dropout_infer,
    .grad = op_grad_dropout,
    .saved_outputs = 0x2,
    .decode = op_decode_dropout,
};
