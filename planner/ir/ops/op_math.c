/* op_math.c — the math functions of activations, each a pointwise op (runtime/pointwise.h)
 * with PyTorch's derivative: Tan, Asin, Acos, Atan (torch.atan2's export), Sinh, Cosh,
 * Asinh, Acosh, Atanh; Sign, Floor, Ceil, Round (torch.trunc, frac and remainder's
 * exports, lp_pool's sign; zero gradient); Softsign; ThresholdedRelu; Shrink
 * (hardshrink, softshrink). The parameterless ones fold on plan-time values. */
#include <math.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_pointwise.h"
#include "ir/ops/op_util.h"

static int tan_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_y(c, OP_TAN_GRAD); }
static int asin_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ASIN_GRAD); }
static int acos_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ACOS_GRAD); }
static int atan_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ATAN_GRAD); }
static int sinh_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_SINH_GRAD); }
static int cosh_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_COSH_GRAD); }
static int asinh_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ASINH_GRAD); }
static int acosh_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ACOSH_GRAD); }
static int atanh_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_ATANH_GRAD); }
static int softsign_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_SOFTSIGN_GRAD); }
static int thresholded_relu_grad_rule(grad_ctx *c) {
    return op_grad_pointwise_of_x(c, OP_THRESHOLDED_RELU_GRAD);
}
static int shrink_grad_rule(grad_ctx *c) { return op_grad_pointwise_of_x(c, OP_SHRINK_GRAD); }

/* Trigonometry in float32 under autocast for the functions PyTorch's list keeps there
 * (acos, asin, cosh, sinh, tan); the rest follow their input. */
POINTWISE_DEF(op_def_tan, op_pointwise_fold_infer, tan_grad_rule, NULL, 0x0, 0x1, OP_AUTOCAST_FP32);
POINTWISE_DEF(op_def_asin, op_pointwise_fold_infer, asin_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FP32);
POINTWISE_DEF(op_def_acos, op_pointwise_fold_infer, acos_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FP32);
POINTWISE_DEF(op_def_atan, op_pointwise_fold_infer, atan_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FOLLOW);
POINTWISE_DEF(op_def_sinh, op_pointwise_fold_infer, sinh_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FP32);
POINTWISE_DEF(op_def_cosh, op_pointwise_fold_infer, cosh_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FP32);
POINTWISE_DEF(op_def_asinh, op_pointwise_fold_infer, asinh_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FOLLOW);
POINTWISE_DEF(op_def_acosh, op_pointwise_fold_infer, acosh_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FOLLOW);
POINTWISE_DEF(op_def_atanh, op_pointwise_fold_infer, atanh_grad_rule, NULL, 0x1, 0x0,
              OP_AUTOCAST_FOLLOW);
POINTWISE_GRAD_OP(op_def_tan_grad, NULL);
POINTWISE_GRAD_OP(op_def_asin_grad, NULL);
POINTWISE_GRAD_OP(op_def_acos_grad, NULL);
POINTWISE_GRAD_OP(op_def_atan_grad, NULL);
POINTWISE_GRAD_OP(op_def_sinh_grad, NULL);
POINTWISE_GRAD_OP(op_def_cosh_grad, NULL);
POINTWISE_GRAD_OP(op_def_asinh_grad, NULL);
POINTWISE_GRAD_OP(op_def_acosh_grad, NULL);
POINTWISE_GRAD_OP(op_def_atanh_grad, NULL);

/* Sign, Floor, Ceil, Round: piecewise constant, no gradient flows (grad_zero). */
#define STEP_OP(ident)                                                                             \
    const op_def ident = {.min_inputs = 1,                                                         \
                          .max_inputs = 1,                                                         \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = op_pointwise_roles,                                             \
                          .n_roles = 1,                                                            \
                          .infer = op_pointwise_fold_infer,                                        \
                          .grad_zero = true}
STEP_OP(op_def_sign);
STEP_OP(op_def_floor);
STEP_OP(op_def_ceil);
STEP_OP(op_def_round);

/* Softsign: X / (1 + |X|), dX = dY / (1 + |X|)^2. */
POINTWISE_OP(op_def_softsign, softsign_grad_rule, NULL, 0x1, 0x0);
POINTWISE_GRAD_OP(op_def_softsign_grad, NULL);

/* ThresholdedRelu (alpha, default 1): p0 = alpha. Shrink (lambd 0.5, bias 0): p0 = lambd,
 * p1 = bias. Their gradient nodes carry the same attributes. */
static int shrink_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_pointwise_args *p = &op_args_new(n)->pointwise;
    bool shrink = n->op == OP_SHRINK || n->op == OP_SHRINK_GRAD;
    p->p0 = shrink ? ir_attr_float(n, "lambd", 0.5f) : ir_attr_float(n, "alpha", 1.0f);
    p->p1 = shrink ? ir_attr_float(n, "bias", 0.0f) : 0.0f;
    if (!isfinite(p->p0) || !isfinite(p->p1))
        return oc_fail(err, "%s must be finite", shrink ? "lambd and bias" : "alpha");
    if (shrink && p->p0 < 0) return oc_fail(err, "lambd %g is negative", (double)p->p0);
    return OC_OK;
}
POINTWISE_OP(op_def_thresholded_relu, thresholded_relu_grad_rule, shrink_decode, 0x1, 0x0);
POINTWISE_OP(op_def_shrink, shrink_grad_rule, shrink_decode, 0x1, 0x0);
POINTWISE_GRAD_OP(op_def_thresholded_relu_grad, shrink_decode);
POINTWISE_GRAD_OP(op_def_shrink_grad, shrink_decode);
