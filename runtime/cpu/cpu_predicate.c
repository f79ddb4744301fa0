/* cpu_predicate.c — the bool-valued elementwise ops (runtime/predicate.h): Less,
 * Greater, LessOrEqual, GreaterOrEqual, Equal, And, Or, Xor of two operands
 * broadcast to the output; Not, IsNaN, IsInf of one. */
#include "cpu_internal.h"
#include "predicate.h"

/* Operands of one type: float32, int64, int32 or bool (Not: bool; IsNaN, IsInf: float32). */
static bool predicate_type(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT || dt == IR_DTYPE_INT64 || dt == IR_DTYPE_INT32 ||
           dt == IR_DTYPE_BOOL;
}

/* Element i of a predicate_type tensor's data, compared within its type. */
static bool binary_at(int code, ir_dtype dt, const void *a, int64_t ia, const void *b, int64_t ib) {
    switch (dt) {
    case IR_DTYPE_FLOAT: return oc_pred_f32(code, ((const float *)a)[ia], ((const float *)b)[ib]);
    case IR_DTYPE_INT64:
        return oc_pred_i64(code, ((const int64_t *)a)[ia], ((const int64_t *)b)[ib]);
    case IR_DTYPE_INT32:
        return oc_pred_i32(code, ((const int32_t *)a)[ia], ((const int32_t *)b)[ib]);
    default: return oc_pred_u8(code, ((const uint8_t *)a)[ia], ((const uint8_t *)b)[ib]);
    }
}

int cpu_predicate(const kernel_args *a, oc_err *err) {
    int code = oc_pred_code(a->n->op);
    const ir_tensor *ta = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (kernel_want_dtype(a, y, IR_DTYPE_BOOL, err)) return OC_ERR;
    uint8_t *out = a->out[0];
    int64_t n = kernel_numel(y);
    if (oc_pred_unary(code)) {
        ir_dtype want = code == OC_PRED_NOT ? IR_DTYPE_BOOL : IR_DTYPE_FLOAT;
        if (kernel_want_dtype(a, ta, want, err)) return OC_ERR;
        const op_predicate_args *p = &op_args_of(a->n)->predicate;
        for (int64_t i = 0; i < n; i++) {
            float x = want == IR_DTYPE_BOOL ? (float)((const uint8_t *)a->in[0])[i]
                                            : ((const float *)a->in[0])[i];
            out[i] = oc_pred_of(code, x, p->detect_pos, p->detect_neg);
        }
        return OC_OK;
    }
    const ir_tensor *tb = kernel_in(a, 1);
    if (!predicate_type(ta->dtype) || tb->dtype != ta->dtype)
        return kernel_fail(a, err,
                           "inputs '%s' (%s) and '%s' (%s): this kernel compares two tensors "
                           "of one type, float32, int64, int32 or bool",
                           ta->name, ir_dtype_name(ta->dtype), tb->name, ir_dtype_name(tb->dtype));
    int r = y->rank;
    const int64_t *od = y->dims;
    int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], o[IR_MAX_RANK] = {0}, oa = 0, ob = 0;
    cpu_bcast_strides(ta->rank, ta->dims, r, od, sa);
    cpu_bcast_strides(tb->rank, tb->dims, r, od, sb);
    for (int64_t i = 0; i < n; i++) {
        out[i] = binary_at(code, ta->dtype, a->in[0], oa, a->in[1], ob);
        for (int d = r - 1; d >= 0; d--) {
            oa += sa[d], ob += sb[d];
            if (++o[d] < od[d]) break;
            oa -= sa[d] * od[d], ob -= sb[d] * od[d];
            o[d] = 0;
        }
    }
    return OC_OK;
}
