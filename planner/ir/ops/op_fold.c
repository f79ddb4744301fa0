/* op_fold.c — the glue today's exporters put around a network, evaluated at
 * plan time: Cast, CastLike, Expand and Where (of values), Range, Mod, Trilu,
 * ConstantOfShape; the plan-time forms of Max, Min and Neg (ScatterND, GatherND,
 * GatherElements: op_fold_index.c; TopK, ArgMax, ArgMin: op_topk.c; CumSum, Ceil, Floor,
 * Round, Tile, Pow: op_fold_math.c;
 * the comparisons and logic: op_predicate.c)
 * (folded when their inputs are plan-time values, refused otherwise), and
 * Identity, Squeeze, Cast to the same type, which also run on activations as
 * copies. torch 2.x's exporter builds e.g. a Conv's zero bias as
 * Expand(CastLike(0, x), Shape(weight)[0:1]); all of it folds to a constant. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"
#include "cast_rule.h"
#include "pointwise.h"

/* Whether every reader of tensor t asks only its class (IsNaN, IsInf). */
static bool read_by_class_only(const ir_graph *g, int t) {
    const ir_tensor *y = &g->tensors[t];
    for (int c = 0; c < y->n_consumers; c++) {
        op_kind k = g->nodes[y->consumers[c]].op;
        if (k != OP_IS_NAN && k != OP_IS_INF) return false;
    }
    return y->n_consumers > 0 && !y->is_graph_output;
}

/* y = x converted to dt: folded for a value; at run time the casts of
 * runtime/cast_rule.h. A run-time float widened to float64 only for IsNaN / IsInf
 * (torch.nan_to_num's legacy export) keeps its type: widening changes no value's class. */
static int cast_to(ir_graph *g, ir_node *n, ir_dtype dt, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (!op_is_value(x) && dt == IR_DTYPE_DOUBLE && ir_dtype_is_compute(x->dtype) &&
        n->outputs[0] >= 0 && read_by_class_only(g, n->outputs[0]))
        dt = x->dtype;
    op_set_out(g, n, 0, dt, x->rank, x->dims);
    if (!op_is_value(x)) {
        if (!oc_cast_runs(x->dtype, dt))
            return oc_fail(err,
                           "casting '%s' from %s to %s at run time is not supported (plan-time "
                           "values convert; at run time a same-type cast, between float32, "
                           "float16 and bfloat16, from bool, int32, int64 to those or float32, "
                           "and float32 to bool, int32 or int64)",
                           x->name, ir_dtype_name(x->dtype), ir_dtype_name(dt));
        return OC_OK;
    }
    if (!op_fold_dtype(x->dtype) || !op_fold_dtype(dt))
        return oc_fail(err, "a cast from %s to %s is not folded", ir_dtype_name(x->dtype),
                       ir_dtype_name(dt));
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t k = 0; k < numel; k++)
        op_fold_num_put(buf, dt, k, op_fold_num_get(x, k), x->dtype);
    return op_fold_set(g, n, buf, numel);
}

static int cast_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    const ir_attr *a = ir_attr_find(n, "to");
    if (!a || a->type != IR_ATTR_INT) return oc_fail(err, "attribute 'to' is required");
    if (a->i <= 0 || a->i > IR_DTYPE_BFLOAT16 || ir_dtype_size((ir_dtype)a->i) <= 0)
        return oc_fail(err, "attribute 'to' (%" PRId64 ") is not a supported type", a->i);
    return cast_to(g, n, (ir_dtype)a->i, err);
}

static int cast_like_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *like = ir_node_in(g, n, 1);
    if (!like || like->dtype == IR_DTYPE_UNDEFINED)
        return oc_fail(err, "input 1 (the target type) has no type");
    return cast_to(g, n, like->dtype, err);
}

/* Identity: y = x (a value folds; an activation is copied). */
static int identity_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x = ir_node_in(g, n, 0), *y = ir_node_out(g, n, 0);
    if (x && x->is_sequence && y) { /* a sequence known at load (op_sequence.c): the same */
        op_set_out_sequence(g, n, 0, x->dtype, x->items, x->n_items);
        return OC_OK;
    }
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    op_set_out_like(g, n, 0, x);
    if (op_is_value(x)) ir_tensor_set_data(ir_node_out(g, n, 0), x->data, x->data_bytes);
    return OC_OK;
}

/* Squeeze: drops the size-1 dims at axes (input from opset 13, attribute
 * before; none given: every size-1 dim). */
static int squeeze_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    const int64_t *axes = NULL;
    int64_t naxes = -1;
    if (opset >= 13) {
        if (ir_node_in(g, n, 1) && op_in_int64s(g, n, 1, &axes, &naxes, err)) return OC_ERR;
    } else {
        int k = ir_attr_ints(n, "axes", &axes);
        if (k >= 0) naxes = k;
    }
    bool drop[IR_MAX_RANK] = {false};
    if (naxes < 0) {
        for (int d = 0; d < x->rank; d++) drop[d] = x->dims[d] == 1;
    } else {
        for (int64_t i = 0; i < naxes; i++) {
            int64_t a;
            if (op_axis(axes[i], x->rank, "axis", &a, err)) return OC_ERR;
            if (x->dims[a] != 1)
                return oc_fail(err, "axis %" PRId64 " of '%s' has extent %" PRId64 ", not 1",
                               axes[i], x->name, x->dims[a]);
            drop[a] = true;
        }
    }
    int64_t y[IR_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (!drop[d]) y[r++] = x->dims[d];
    op_set_out(g, n, 0, x->dtype, r, y);
    if (op_is_value(x)) ir_tensor_set_data(ir_node_out(g, n, 0), x->data, x->data_bytes);
    return OC_OK;
}

/* Expand: x broadcast against the plan-time shape. */
/* Expand (op_expand.c): the output shape from X and the shape values
 * (numpy broadcasting), folded when X is a plan-time value. */
int op_expand_fold(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *x;
    const int64_t *s;
    int64_t ns;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_int64s(g, n, 1, &s, &ns, err)) return OC_ERR;
    if (ns > IR_MAX_RANK) return oc_fail(err, "shape has %" PRId64 " dims", ns);
    ir_tensor shape = {.name = "shape", .rank = (int)ns};
    memcpy(shape.dims, s, (size_t)ns * sizeof *s);
    for (int d = 0; d < ns; d++)
        if (s[d] < 0) return oc_fail(err, "shape has a negative dim %" PRId64, s[d]);
    int r;
    int64_t od[IR_MAX_RANK];
    if (op_broadcast(x, &shape, &r, od, err)) return OC_ERR;
    op_set_out(g, n, 0, x->dtype, r, od);
    if (!op_is_value(x) || !op_fold_dtype(x->dtype)) return OC_OK;
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t o = 0; o < numel; o++)
        op_fold_num_put(buf, x->dtype, o, op_fold_num_get(x, op_fold_bcast_at(x, r, od, o)),
                        x->dtype);
    return op_fold_set(g, n, buf, numel);
}

/* One float32 of a parameterless pointwise op: the kernels' expression (runtime/pointwise.h),
 * so a folded value is the one a run would compute. */
static double unary_f32(op_kind op, float x) {
    const float p0 = 0.0f, p1 = 0.0f; /* the expressions' parameters: none here */
    (void)p0, (void)p1;
    switch (op) {
#define PW_CASE(kind, expr)                                                                        \
    case OP_##kind: return (double)(expr);
        OC_POINTWISE_FORWARD(PW_CASE)
#undef PW_CASE
    default: OC_ASSERT(false && "unary_f32: not a pointwise op"); return 0;
    }
}

/* The same of a double, in double. */
static double unary_f64(op_kind op, double v) {
    switch (op) {
    case OP_SIN: return sin(v);
    case OP_COS: return cos(v);
    case OP_TAN: return tan(v);
    case OP_ASIN: return asin(v);
    case OP_ACOS: return acos(v);
    case OP_ATAN: return atan(v);
    case OP_SINH: return sinh(v);
    case OP_COSH: return cosh(v);
    case OP_ASINH: return asinh(v);
    case OP_ACOSH: return acosh(v);
    case OP_ATANH: return atanh(v);
    case OP_SQRT: return sqrt(v);
    case OP_EXP: return exp(v);
    case OP_LOG: return log(v);
    case OP_ABS: return fabs(v);
    case OP_SIGN: return v > 0 ? 1.0 : v < 0 ? -1.0 : v;
    case OP_CEIL: return ceil(v);
    case OP_FLOOR: return floor(v);
    case OP_ROUND: return nearbyint(v); /* half to even */
    default: return 1.0 / v;            /* Reciprocal */
    }
}

/* Neg, Abs and Sign of a plan-time number (torch.roll's negative shifts in Swin3D's export,
 * T5's relative positions: integers too); the other parameterless pointwise ops (Sin, Cos,
 * Sqrt, Exp, Log, Reciprocal, Ceil, Floor, Round, ..) of a plan-time float value (a rotary
 * table from a frequency buffer and a Range; scaled_dot_product_attention's scale, the
 * square root of 1 / sqrt(E) with E from a Shape). */
int op_fold_unary(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *x;
    if (op_fold_need_value(g, n, 0, &x, err)) return OC_ERR;
    bool neg = n->op == OP_NEG, ints = neg || n->op == OP_ABS || n->op == OP_SIGN; /* any number */
    if (ints ? x->dtype == IR_DTYPE_BOOL || x->dtype == IR_DTYPE_UINT8
             : !op_fold_is_float(x->dtype))
        return oc_fail(err, "input '%s' has type %s, which %s does not take", x->name,
                       ir_dtype_name(x->dtype), n->op_type);
    op_set_out_like(g, n, 0, x);
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t o = 0; o < numel; o++) {
        num v = op_fold_num_get(x, o);
        if (neg || (n->op == OP_ABS && v.i < 0)) /* INT64_MIN stays, as in two's complement */
            v.i = (int64_t)(0 - (uint64_t)v.i);
        if (n->op == OP_SIGN) v.i = (v.i > 0) - (v.i < 0);
        v.f = neg                           ? -v.f
              : x->dtype == IR_DTYPE_DOUBLE ? unary_f64(n->op, v.f)
                                            : unary_f32(n->op, (float)v.f);
        op_fold_num_put(buf, x->dtype, o, v, x->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Mod: a mod b, broadcast; fmod 0 (integers): the sign of the divisor, as
 * Python's %; fmod 1: C's fmod (sign of the dividend). Called by its shape function
 * (op_binary.c) when both inputs are plan-time values. */
int op_fold_mod(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *a, *b;
    int r;
    int64_t od[IR_MAX_RANK];
    if (op_fold_binary(g, n, IR_DTYPE_UNDEFINED, &a, &b, &r, od, err)) return OC_ERR;
    if (a->dtype != b->dtype) return oc_fail(err, "inputs differ in type");
    bool fl = op_fold_is_float(a->dtype), cmod = ir_attr_int(n, "fmod", 0) != 0;
    if (fl && !cmod) return oc_fail(err, "fmod must be 1 for floating-point inputs");
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t o = 0; o < numel; o++) {
        num x = op_fold_num_get(a, op_fold_bcast_at(a, r, od, o)),
            y = op_fold_num_get(b, op_fold_bcast_at(b, r, od, o)), z = {0, 0};
        if (fl) {
            z.f = fmod(x.f, y.f);
        } else if (y.i == 0) {
            oc_free(buf);
            return oc_fail(err, "integer division by zero");
        } else {
            z.i = x.i % y.i;
            if (!cmod && z.i != 0 && ((z.i < 0) != (y.i < 0))) z.i += y.i;
        }
        z.f = fl ? z.f : (double)z.i;
        op_fold_num_put(buf, a->dtype, o, z, a->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Trilu: the upper (upper=1, j - i >= k) or lower (j - i <= k) triangle of
 * the last two dims, zeros elsewhere; k an optional scalar input (0). */
typedef struct trilu_args {
    int64_t k;
    bool upper;
} trilu_args;

static int trilu_decode_args(ir_graph *g, ir_node *n, const ir_tensor *x, trilu_args *t,
                             oc_err *err) {
    if (x->rank < 2) return oc_fail(err, "input '%s' has rank %d (at least 2)", x->name, x->rank);
    t->k = 0;
    if (ir_node_in(g, n, 1)) {
        const int64_t *v;
        int64_t nv;
        if (op_in_int64s(g, n, 1, &v, &nv, err)) return OC_ERR;
        if (nv != 1) return oc_fail(err, "k must be a scalar");
        t->k = v[0];
    }
    t->upper = ir_attr_int(n, "upper", 1) != 0;
    return OC_OK;
}

/* Whether element (i, j) of a matrix is in the triangle. */
static bool trilu_keeps(const trilu_args *t, int64_t i, int64_t j) {
    return t->upper ? j - i >= t->k : j - i <= t->k;
}

static int trilu_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    trilu_args t;
    if (op_fold_need_value(g, n, 0, &x, err) || trilu_decode_args(g, n, x, &t, err)) return OC_ERR;
    op_set_out_like(g, n, 0, x);
    int64_t numel, R = x->dims[x->rank - 2], C = x->dims[x->rank - 1];
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t o = 0; o < numel; o++) {
        bool keep = trilu_keeps(&t, (o / C) % R, o % C);
        num v = keep ? op_fold_num_get(x, o) : (num){0, 0};
        op_fold_num_put(buf, x->dtype, o, v, x->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Where of three plan-time values (output shape inferred): folded; does
 * nothing otherwise (op_where.c runs it). */
int op_fold_where(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *c = ir_node_in(g, n, 0), *x = ir_node_in(g, n, 1), *y = ir_node_in(g, n, 2);
    if (!op_is_value(c) || !op_is_value(x) || !op_is_value(y)) return OC_OK;
    const ir_tensor *out = ir_node_out(g, n, 0);
    int r = out->rank;
    const int64_t *od = out->dims;
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t o = 0; o < numel; o++) {
        bool pick = op_fold_num_get(c, op_fold_bcast_at(c, r, od, o)).i != 0;
        const ir_tensor *src = pick ? x : y;
        op_fold_num_put(buf, x->dtype, o, op_fold_num_get(src, op_fold_bcast_at(src, r, od, o)),
                        x->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Max, Min: the elementwise extreme of one or more plan-time values of one type,
 * broadcast (numpy's maximum / minimum: a NaN wins). torch 2.x's exporter takes
 * Swin's relative-position index through a one-input Max. Called by their shape
 * function (op_binary.c) when every input is a plan-time value. */
int op_fold_min_max(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *x[OP_FOLD_MAX_VARIADIC];
    if (n->n_inputs > OP_FOLD_MAX_VARIADIC)
        return oc_fail(err, "%d inputs; plan-time folding takes at most %d", n->n_inputs,
                       OP_FOLD_MAX_VARIADIC);
    ir_tensor shape = {.name = "the broadcast of the inputs"};
    for (int i = 0; i < n->n_inputs; i++) {
        if (op_fold_need_value(g, n, i, &x[i], err)) return OC_ERR;
        if (x[i]->dtype != x[0]->dtype) return oc_fail(err, "inputs differ in type");
        if (i == 0) {
            shape.rank = x[0]->rank;
            memcpy(shape.dims, x[0]->dims, sizeof shape.dims);
        } else if (op_broadcast(&shape, x[i], &shape.rank, shape.dims, err)) {
            return OC_ERR;
        }
    }
    op_set_out(g, n, 0, x[0]->dtype, shape.rank, shape.dims);
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    bool fl = op_fold_is_float(x[0]->dtype), max = n->op == OP_MAX;
    for (int64_t o = 0; o < numel; o++) {
        num v = op_fold_num_get(x[0], op_fold_bcast_at(x[0], shape.rank, shape.dims, o));
        for (int i = 1; i < n->n_inputs; i++) {
            num z = op_fold_num_get(x[i], op_fold_bcast_at(x[i], shape.rank, shape.dims, o));
            bool take = fl    ? isnan(z.f) || (!isnan(v.f) && (max ? z.f > v.f : z.f < v.f))
                        : max ? z.i > v.i
                              : z.i < v.i;
            if (take) v = z;
        }
        op_fold_num_put(buf, x[0]->dtype, o, v, x[0]->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* Range: start, start + delta, .. below limit (scalars). */
static int range_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *t[3];
    for (int i = 0; i < 3; i++) {
        int64_t numel;
        if (op_fold_need_value(g, n, i, &t[i], err)) return OC_ERR;
        if (!ir_tensor_numel(t[i], &numel) || numel != 1)
            return oc_fail(err, "input '%s' is not a scalar", t[i]->name);
        if (t[i]->dtype != t[0]->dtype) return oc_fail(err, "inputs differ in type");
    }
    num s = op_fold_num_get(t[0], 0), l = op_fold_num_get(t[1], 0), d = op_fold_num_get(t[2], 0);
    double count = op_fold_is_float(t[0]->dtype) ? ceil((l.f - s.f) / d.f)
                                                 : ceil(((double)l.i - (double)s.i) / (double)d.i);
    if (!(count == count) || isinf(count) || (op_fold_is_float(t[0]->dtype) ? d.f == 0 : d.i == 0))
        return oc_fail(err, "delta is zero or the range is not finite");
    int64_t len = count > 0 ? (int64_t)fmin(count, 1e15) : 0;
    op_set_out(g, n, 0, t[0]->dtype, 1, &len);
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t k = 0; k < numel; k++) {
        num v = {s.f + (double)k * d.f, s.i + k * d.i};
        op_fold_num_put(buf, t[0]->dtype, k, v, t[0]->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* ConstantOfShape: a tensor of the plan-time shape filled with 'value'
 * (a one-element tensor; default float 0). */
static int constant_of_shape_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    const int64_t *s;
    int64_t ns;
    if (op_in_int64s(g, n, 0, &s, &ns, err)) return OC_ERR;
    if (ns > IR_MAX_RANK) return oc_fail(err, "shape has %" PRId64 " dims", ns);
    for (int d = 0; d < ns; d++)
        if (s[d] < 0) return oc_fail(err, "shape has a negative dim %" PRId64, s[d]);
    float zero = 0.0f;
    ir_dtype dt = IR_DTYPE_FLOAT;
    const void *fill = &zero;
    const ir_attr *a = ir_attr_find(n, "value");
    if (a) {
        int64_t numel;
        if (a->type != IR_ATTR_TENSOR || a->t->data_src != IR_DATA_INLINE ||
            !ir_tensor_numel(a->t, &numel) || numel != 1 || !op_fold_dtype(a->t->dtype) ||
            a->t->data_bytes != (size_t)ir_dtype_size(a->t->dtype))
            return oc_fail(err, "attribute 'value' must be a one-element numeric tensor");
        dt = a->t->dtype;
        fill = a->t->data;
    }
    op_set_out(g, n, 0, dt, (int)ns, s);
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    size_t es = (size_t)ir_dtype_size(dt);
    for (int64_t k = 0; k < numel; k++) memcpy(buf + (size_t)k * es, fill, es);
    return op_fold_set(g, n, buf, numel);
}

/* EyeLike: a matrix shaped as input 0 -- only its shape is read, so it folds whatever the
 * input holds -- with ones where column - row == k, zeros elsewhere; of type dtype, else the
 * input's (torch.diagonal's and torch.trace's exports mask with it). */
static int eye_like_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (x->rank != 2) return oc_fail(err, "input '%s' has rank %d (2 taken)", x->name, x->rank);
    int64_t dt = ir_attr_int(n, "dtype", x->dtype), k = ir_attr_int(n, "k", 0);
    if (dt < 0 || dt > INT32_MAX || !op_fold_dtype((ir_dtype)dt))
        return oc_fail(err, "dtype %" PRId64 " is not a number type folding handles", dt);
    int64_t rows = x->dims[0], cols = x->dims[1], numel;
    op_set_out(g, n, 0, (ir_dtype)dt, 2, x->dims);
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            bool on = j - i == k; /* |i|, |j| < 2^40 and k any int64: compared, not added */
            num v = {on ? 1.0 : 0.0, on};
            op_fold_num_put(buf, (ir_dtype)dt, i * cols + j, v, IR_DTYPE_INT64);
        }
    return op_fold_set(g, n, buf, numel);
}

/* dX = dY (Identity, a same-type Cast). */
static int identity_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy >= 0) grad_pass(c, 0, dy);
    return OC_OK;
}

/* A cast between float types: dX = dY cast back to X's type (autocast's
 * half copy of a float32 weight gets a float32 gradient); else dX = dY. */
static int cast_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    const ir_graph *g = grad_graph(c);
    ir_dtype from = g->tensors[grad_fwd_in(c, 0)].dtype;
    if (dy < 0 || g->tensors[dy].dtype == from) return identity_grad(c);
    int b = grad_node(c, "grad", OP_CAST);
    grad_in(c, b, dy);
    grad_attr_int(c, b, "to", from);
    grad_out_dx(c, b, 0);
    return grad_finish(c, b);
}

static const op_role data_role[] = {OP_IN_DATA};
static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
const op_def op_def_identity = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = identity_infer,
    .grad = identity_grad,
};
const op_def op_def_squeeze = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = squeeze_infer,
    .grad = op_grad_reshape,
};
const op_def op_def_cast = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = cast_infer,
    .grad = cast_grad,
};
const op_def op_def_cast_like = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const, /* input 1: only its type is read */
    .n_roles = 2,
    .infer = cast_like_infer,
    .grad = cast_grad,
};
/* op_def.lower: Trilu of run-time float data (torch.tril / triu of an activation: a causal
 * mask applied to scores, a Cholesky-style factor) is Where(plan-time triangle, x, 0): the
 * elements outside it zero whatever they hold (NaN too, as torch's), their gradient zero. */
static int trilu_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x) || !ir_dtype_is_compute(x->dtype)) return OC_OK; /* folds */
    trilu_args t;
    if (trilu_decode_args(g, n, x, &t, err)) return OC_ERR;
    int64_t R = x->dims[x->rank - 2], C = x->dims[x->rank - 1], dims[2] = {R, C}, one = 1;
    if (R > 0 && C > OP_FOLD_MAX_BYTES / R)
        return oc_fail(err,
                       "the triangle of input '%s' is %" PRId64 " x %" PRId64 " (at most %" PRId64
                       " elements)",
                       x->name, R, C, OP_FOLD_MAX_BYTES);
    char *base = oc_strdup(n->name);
    uint8_t *keep = oc_malloc((size_t)(R * C) + 1);
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) keep[i * C + j] = trilu_keeps(&t, i, j);
    int m = op_rewrite_constant(g, base, "triangle", IR_DTYPE_BOOL, 2, dims, keep);
    oc_free(keep);
    int zero = op_rewrite_fill(g, base, "zero", 0, &one, 0.0f);
    int xt = n->inputs[0];
    op_rewrite_become(g, node, OP_WHERE);
    ir_node_add_input(g, node, m);
    ir_node_add_input(g, node, xt);
    ir_node_add_input(g, node, zero);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

static const op_role trilu_roles[] = {OP_IN_DATA, OP_IN_CONST};
const op_def op_def_trilu = {.min_inputs = 1,
                             .max_inputs = 2,
                             .min_outputs = 1,
                             .max_outputs = 1,
                             .roles = trilu_roles,
                             .n_roles = 2,
                             .infer = trilu_infer,
                             .lower = trilu_lower};
FOLD_OP(op_def_range, 3, range_infer);
FOLD_OP(op_def_constant_of_shape, 1, constant_of_shape_infer);
FOLD_OP(op_def_eye_like, 1, eye_like_infer);

/* Mul, Sub, Div, Add of two plan-time values (shape arithmetic), broadcast. */
int op_fold_arith(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *a = ir_node_in(g, n, 0), *b = ir_node_in(g, n, 1);
    ir_tensor *y = ir_node_out(g, n, 0);
    if (!op_is_value(a) || !op_is_value(b) || !op_fold_dtype(a->dtype) || a->dtype == IR_DTYPE_BOOL)
        return OC_OK;
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    bool fl = op_fold_is_float(a->dtype);
    for (int64_t o = 0; o < numel; o++) {
        num x = op_fold_num_get(a, op_fold_bcast_at(a, y->rank, y->dims, o));
        num z = op_fold_num_get(b, op_fold_bcast_at(b, y->rank, y->dims, o)), v = {0, 0};
        switch (n->op) {
        case OP_ADD: v.f = x.f + z.f, v.i = (int64_t)((uint64_t)x.i + (uint64_t)z.i); break;
        case OP_SUB: v.f = x.f - z.f, v.i = (int64_t)((uint64_t)x.i - (uint64_t)z.i); break;
        case OP_MUL: v.f = x.f * z.f, v.i = (int64_t)((uint64_t)x.i * (uint64_t)z.i); break;
        default: /* Div: integer division truncates */
            if (!fl && (z.i == 0 || (z.i == -1 && x.i == INT64_MIN))) {
                oc_free(buf);
                return oc_fail(err, "integer division by zero (or overflow) in a folded value");
            }
            v.f = x.f / z.f, v.i = fl ? 0 : x.i / z.i;
            break;
        }
        op_fold_num_put(buf, a->dtype, o, v, a->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}
