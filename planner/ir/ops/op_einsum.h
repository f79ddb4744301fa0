/* op_einsum.h — Einsum, lowered at import into ops outcore runs and
 * differentiates: Transpose, ReduceSum, Unsqueeze, MatMul, Squeeze. */
#ifndef OC_OP_EINSUM_H
#define OC_OP_EINSUM_H

#include "ir/ir.h"

/* Appends to g the nodes computing tensor `out` from the n_in (1 or 2) tensors
 * `in` as `equation` says; node and tensor names start with `name` + "/".
 * Taken: explicit or implicit output; each operand's indices distinct (no
 * diagonals), no ellipsis; one operand: sums and a transpose; two: indices of
 * one operand alone are summed first, then one MatMul over the contracted
 * indices with the kept shared ones as its batch. With at most one contracted
 * index, and at most one free index a side beside batch indices (or, with
 * none, one side's free indices as MatMul's rows), Transposes and Unsqueezes
 * shape the operands; otherwise Reshapes merge the free and the contracted
 * indices, their shapes computed from the operands' (Shape, Gather, Mul,
 * Concat, folded at plan time). An ellipsis or a diagonal: OC_ERR naming the
 * equation (path: the model, for messages). */
int op_einsum_lower(ir_graph *g, const char *path, const char *name, const char *equation,
                    const int *in, int n_in, int out, oc_err *err);

#endif
