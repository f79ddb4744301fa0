/* cast_rule.h — the casts outcore runs on run-time tensors (Cast, CastLike), one rule for
 * the planner (ir/ops/op_fold.c refuses the rest at load, naming the tensor) and the
 * kernels (cpu_cast, cuda_cast): a same-type copy; between float32, float16 and bfloat16
 * (rounded to nearest even, ir/half.h); and the casts of masks and indices — from bool,
 * int32 or int64 to any of bool, int32, int64, float32 (a mask counted, an ArgMax's index
 * compared, one_hot's Equal widened), float32 to bool (nonzero: true, NaN too) and float32 to
 * int32 / int64 (truncated toward zero: oc_float_to_int, NaN 0, saturating; int32 from the
 * int64 saturated again). Plan-time values convert any way folding does. */
#ifndef OC_CAST_RULE_H
#define OC_CAST_RULE_H

#include <stdbool.h>

#include "ir/ir.h"

static inline bool oc_cast_int_like(ir_dtype t) {
    return t == IR_DTYPE_BOOL || t == IR_DTYPE_INT32 || t == IR_DTYPE_INT64;
}

/* Whether a run-time cast from -> to runs. */
static inline bool oc_cast_runs(ir_dtype from, ir_dtype to) {
    if (from == to) return true;
    if (ir_dtype_is_compute(from) && ir_dtype_is_compute(to)) return true;
    if (oc_cast_int_like(from)) return oc_cast_int_like(to) || to == IR_DTYPE_FLOAT;
    return from == IR_DTYPE_FLOAT &&
           (to == IR_DTYPE_BOOL || to == IR_DTYPE_INT32 || to == IR_DTYPE_INT64);
}

#endif
