/* op_fold_num.c — the toolkit of plan-time folding (op_fold_num.h). */
#include "ir/ops/op_fold_num.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/half.h"

const op_role op_fold_const_role[1] = {OP_IN_CONST};

bool op_fold_dtype(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT || dt == IR_DTYPE_DOUBLE || dt == IR_DTYPE_INT32 ||
           dt == IR_DTYPE_INT64 || dt == IR_DTYPE_BOOL || dt == IR_DTYPE_UINT8 ||
           dt == IR_DTYPE_INT8 || ir_dtype_is_half(dt);
}
bool op_fold_is_float(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT || dt == IR_DTYPE_DOUBLE || ir_dtype_is_half(dt);
}

/* Offset into x of element o of a broadcast result of rank r and dims od. */
int64_t op_fold_bcast_at(const ir_tensor *x, int r, const int64_t *od, int64_t o) {
    int64_t off = 0, stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        int64_t idx = o % od[d];
        o /= od[d];
        int xd = d - (r - x->rank);
        if (xd < 0) continue;
        if (x->dims[xd] != 1) off += idx * stride;
        stride *= x->dims[xd];
    }
    return off;
}

/* Output 0 of n as a fresh buffer for a folded value (bytes checked). */
uint8_t *op_fold_out(ir_graph *g, ir_node *n, int64_t *numel, oc_err *err) {
    int64_t bytes;
    ir_tensor *y = ir_node_out(g, n, 0);
    if (!ir_tensor_bytes(y, &bytes) || bytes > OP_FOLD_MAX_BYTES) {
        oc_fail(err, "folding it would take more than %" PRId64 " bytes", OP_FOLD_MAX_BYTES);
        return NULL;
    }
    ir_tensor_numel(y, numel);
    return oc_malloc((size_t)bytes + 1);
}

int op_fold_set(ir_graph *g, ir_node *n, uint8_t *buf, int64_t numel) {
    ir_tensor *y = ir_node_out(g, n, 0);
    ir_tensor_set_data(y, buf, (size_t)numel * (size_t)ir_dtype_size(y->dtype));
    oc_free(buf);
    return OC_OK;
}

/* Input i must be a plan-time value of a type folding handles. */
int op_fold_binary(ir_graph *g, ir_node *n, ir_dtype dt, ir_tensor **a, ir_tensor **b, int *r,
                   int64_t *od, oc_err *err) {
    if (op_fold_need_value(g, n, 0, a, err) || op_fold_need_value(g, n, 1, b, err) ||
        op_broadcast(*a, *b, r, od, err))
        return OC_ERR;
    op_set_out(g, n, 0, dt == IR_DTYPE_UNDEFINED ? (*a)->dtype : dt, *r, od);
    return OC_OK;
}

int op_fold_need_value(ir_graph *g, ir_node *n, int i, ir_tensor **t, oc_err *err) {
    if (op_in_shaped(g, n, i, t, err)) return OC_ERR;
    if (!op_is_value(*t))
        return oc_fail(err,
                       "input '%s' is computed at run time; outcore evaluates %s only on "
                       "plan-time values (constants, folded shape computations)%s",
                       (*t)->name, n->op_type,
                       ir_dtype_is_float((*t)->dtype)
                           ? ""
                           : "; an integer computed while the model runs is supported where "
                             "it comes from the model's integer inputs and plan-time values "
                             "alone (the host computes it each step: RoBERTa's position ids)");
    if (!op_fold_dtype((*t)->dtype))
        return oc_fail(err, "input '%s' has type %s, which plan-time folding does not handle",
                       (*t)->name, ir_dtype_name((*t)->dtype));
    return OC_OK;
}

int64_t op_fold_reduced_at(const ir_tensor *x, const bool *red, int64_t i) {
    int64_t rest = i, o = 0, stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        int64_t c = rest % x->dims[d];
        rest /= x->dims[d];
        if (red[d]) continue;
        o += c * stride;
        stride *= x->dims[d];
    }
    return o;
}

/* Element i of a value, as a double (float types) or an int64 (the rest). */
num op_fold_num_get(const ir_tensor *t, int64_t k) {
    const uint8_t *p = (const uint8_t *)t->data + (size_t)k * (size_t)ir_dtype_size(t->dtype);
    num v = {0, 0};
    switch (t->dtype) {
    case IR_DTYPE_FLOAT: {
        float f;
        memcpy(&f, p, 4);
        v.f = f;
        break;
    }
    case IR_DTYPE_DOUBLE: memcpy(&v.f, p, 8); break;
    case IR_DTYPE_FLOAT16:
    case IR_DTYPE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        v.f = half_to_f32(t->dtype, h);
        break;
    }
    case IR_DTYPE_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        v.i = x;
        break;
    }
    case IR_DTYPE_INT64: memcpy(&v.i, p, 8); break;
    case IR_DTYPE_INT8: v.i = (int8_t)*p; break;
    default: v.i = *p; break; /* bool, uint8 */
    }
    if (!op_fold_is_float(t->dtype)) v.f = (double)v.i;
    return v;
}

/* Stores v (read from a tensor of type from) as element k of a dt buffer. */
void op_fold_num_put(uint8_t *buf, ir_dtype dt, int64_t k, num v, ir_dtype from) {
    uint8_t *p = buf + (size_t)k * (size_t)ir_dtype_size(dt);
    double f = v.f;
    int64_t i = v.i;
    if (op_fold_is_float(from) && !op_fold_is_float(dt)) /* float -> int truncates, NaN -> 0 */
        i = isnan(f) ? 0 : f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : (int64_t)f;
    switch (dt) {
    case IR_DTYPE_FLOAT: {
        float x = (float)f;
        memcpy(p, &x, 4);
        break;
    }
    case IR_DTYPE_DOUBLE: memcpy(p, &f, 8); break;
    case IR_DTYPE_FLOAT16:
    case IR_DTYPE_BFLOAT16: { /* via float32 (as a double source would be cast at run time) */
        uint16_t h = half_from_f32(dt, (float)f);
        memcpy(p, &h, 2);
        break;
    }
    case IR_DTYPE_INT32: {
        int32_t x = (int32_t)i;
        memcpy(p, &x, 4);
        break;
    }
    case IR_DTYPE_INT64: memcpy(p, &i, 8); break;
    case IR_DTYPE_BOOL: *p = op_fold_is_float(from) ? f != 0.0 : i != 0; break;
    default: *p = (uint8_t)i; break; /* uint8, int8 */
    }
}
