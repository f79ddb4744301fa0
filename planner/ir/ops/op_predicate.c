/* op_predicate.c — the bool-valued elementwise ops: Less, Greater, LessOrEqual,
 * GreaterOrEqual, Equal (broadcast), And, Or, Xor, Not, IsNaN, IsInf. Folded when every
 * input is a plan-time value (shape and mask glue; the host's integer glue, host_inputs.h),
 * else run by the predicate kernels (runtime/predicate.h): masks of activations
 * (hardshrink's |x| <= lambda, nan_to_num's IsNaN, one_hot's Equal of an ArgMax). Their
 * outputs are bool: no gradient. Comparisons of float inputs run in float32 under
 * autocast (half values widen exactly). */
#include <inttypes.h>
#include <math.h>

#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_util.h"
#include "predicate.h"

static const op_role data_role[] = {OP_IN_DATA};

/* A type the kernels compare (float32 and half: autocast makes both float32). */
static bool run_type(ir_dtype dt) {
    return ir_dtype_is_compute(dt) || dt == IR_DTYPE_INT64 || dt == IR_DTYPE_INT32 ||
           dt == IR_DTYPE_BOOL;
}

/* The predicate of one element's operands (num: double for float types, int64 else);
 * pos, neg: IsInf's detect flags. */
static bool fold_one(int code, bool pos, bool neg, bool fl, num a, num b) {
    if (oc_pred_unary(code)) {
        if (code == OC_PRED_NOT) return a.i == 0;
        if (code == OC_PRED_ISNAN) return a.f != a.f;
        return (pos && a.f == INFINITY) || (neg && a.f == -INFINITY);
    }
    if (code >= OC_PRED_AND) return oc_pred_i64(code, a.i != 0, b.i != 0);
    /* double compares float32's values as float32 does */
    return fl ? (code == OC_PRED_LT   ? a.f < b.f
                 : code == OC_PRED_GT ? a.f > b.f
                 : code == OC_PRED_LE ? a.f <= b.f
                 : code == OC_PRED_GE ? a.f >= b.f
                                      : a.f == b.f)
              : oc_pred_i64(code, a.i, b.i);
}

/* Y = the predicate of the inputs, folded when all are plan-time values. */
static int predicate_fold(ir_graph *g, ir_node *n, oc_err *err) {
    int code = oc_pred_code(n->op);
    ir_tensor *a = ir_node_in(g, n, 0), *b = n->n_inputs > 1 ? ir_node_in(g, n, 1) : NULL;
    const ir_tensor *y = ir_node_out(g, n, 0);
    if (!op_is_value(a) || !op_fold_dtype(a->dtype)) return OC_OK;
    if (b && (!op_is_value(b) || !op_fold_dtype(b->dtype))) return OC_OK;
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    bool fl = op_fold_is_float(a->dtype) || (b && op_fold_is_float(b->dtype));
    num zero = {0, 0};
    bool pos = ir_attr_int(n, "detect_positive", 1) != 0,
         neg = ir_attr_int(n, "detect_negative", 1) != 0;
    for (int64_t o = 0; o < numel; o++) {
        num x = op_fold_num_get(a, b ? op_fold_bcast_at(a, y->rank, y->dims, o) : o);
        num z = b ? op_fold_num_get(b, op_fold_bcast_at(b, y->rank, y->dims, o)) : zero;
        buf[o] = fold_one(code, pos, neg, fl, x, z);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Comparisons and logic: A, B broadcast -> bool; And / Or / Xor of bools. */
static int binary_predicate_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *a, *b;
    ir_dtype dt;
    if (op_in_shaped(g, n, 0, &a, err) || op_in_shaped(g, n, 1, &b, err) ||
        op_operand_dtype(a, b, &dt, err))
        return OC_ERR;
    bool logic = oc_pred_code(n->op) >= OC_PRED_AND;
    if (logic && (a->dtype != IR_DTYPE_BOOL || b->dtype != IR_DTYPE_BOOL))
        return oc_fail(err, "inputs '%s' and '%s' must be bool", a->name, b->name);
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (op_broadcast(a, b, &rank, dims, err)) return OC_ERR;
    op_set_out(g, n, 0, IR_DTYPE_BOOL, rank, dims);
    if (predicate_fold(g, n, err)) return OC_ERR;
    if (ir_node_out(g, n, 0)->data_src != IR_DATA_INLINE && !run_type(dt))
        return oc_fail(err, "%s of %s tensors computed at run time is not supported", n->op_type,
                       ir_dtype_name(dt));
    return OC_OK;
}

/* Not of a bool; IsNaN, IsInf of a float. */
static int unary_predicate_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    bool not = n->op == OP_NOT;
    if (not &&x->dtype != IR_DTYPE_BOOL)
        return oc_fail(err, "input '%s' is %s, not bool", x->name, ir_dtype_name(x->dtype));
    if (!not &&!ir_dtype_is_float(x->dtype))
        return oc_fail(err, "input '%s' is %s, not a float type", x->name, ir_dtype_name(x->dtype));
    op_set_out(g, n, 0, IR_DTYPE_BOOL, x->rank, x->dims);
    if (predicate_fold(g, n, err)) return OC_ERR;
    if (ir_node_out(g, n, 0)->data_src != IR_DATA_INLINE && !run_type(x->dtype))
        return oc_fail(err, "%s of a %s tensor computed at run time is not supported", n->op_type,
                       ir_dtype_name(x->dtype));
    return OC_OK;
}

/* IsInf's detect_positive, detect_negative (default 1 each); the rest: both false. */
static int predicate_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_predicate_args *p = &op_args_new(n)->predicate;
    p->detect_pos = n->op == OP_IS_INF && ir_attr_int(n, "detect_positive", 1) != 0;
    p->detect_neg = n->op == OP_IS_INF && ir_attr_int(n, "detect_negative", 1) != 0;
    return OC_OK;
}

/* An op of n inputs, no gradient (bool output). */
#define PREDICATE_DEF(ident, n, inferfn, ac)                                                       \
    const op_def ident = {.min_inputs = n,                                                         \
                          .max_inputs = n,                                                         \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = data_role,                                                      \
                          .n_roles = 1,                                                            \
                          .infer = inferfn,                                                        \
                          .decode = predicate_decode,                                              \
                          .autocast = ac}
PREDICATE_DEF(op_def_compare, 2, binary_predicate_infer, OP_AUTOCAST_FP32);
PREDICATE_DEF(op_def_logic, 2, binary_predicate_infer, OP_AUTOCAST_FOLLOW);
PREDICATE_DEF(op_def_not, 1, unary_predicate_infer, OP_AUTOCAST_FOLLOW);
PREDICATE_DEF(op_def_is_class, 1, unary_predicate_infer, OP_AUTOCAST_FP32);
