/* op_einsum.h — Einsum, lowered at import into ops outcore runs and
 * differentiates: Transpose, ReduceSum, Unsqueeze, MatMul, Squeeze. */
#ifndef OC_OP_EINSUM_H
#define OC_OP_EINSUM_H

#include "ir/ir.h"

/* Appends to g the nodes computing tensor `out` from the n_in (1 or 2) tensors
 * `in` as `equation` says; node and tensor names start with `name` + "/".
 * Taken: explicit or implicit output; each operand's indices distinct (no
 * diagonals), no ellipsis; one operand: sums and a transpose; two: indices of
 * one operand alone are summed first, then at most one contracted index, and
 * either every index kept by both sides batched with at most one free index a
 * side, or no shared batch index and one side with at most one free index (the
 * other's free indices become MatMul's rows). Anything else: OC_ERR naming
 * the equation (path: the model, for messages). */
int op_einsum_lower(ir_graph *g, const char *path, const char *name, const char *equation,
                    const int *in, int n_in, int out, oc_err *err);

#endif
