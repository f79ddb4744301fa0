/* op_fold_num.h — the toolkit of plan-time folding (op_fold.c, op_fold_index.c):
 * elements of a value read and written as numbers, broadcasting, the folded
 * output's buffer. */
#ifndef OC_OP_FOLD_NUM_H
#define OC_OP_FOLD_NUM_H

#include "ir/ops/op_util.h"

/* Inputs of a variadic folded op (Max, Min). */
#define OP_FOLD_MAX_VARIADIC 16

/* An element as a double (float types) or an int64 (the rest; .f holds it too). */
typedef struct num {
    double f;
    int64_t i;
} num;

/* Types folding reads and writes; the float ones among them. */
bool op_fold_dtype(ir_dtype dt);
bool op_fold_is_float(ir_dtype dt);
/* Element k of value t. */
num op_fold_num_get(const ir_tensor *t, int64_t k);
/* Stores v (read from a tensor of type from) as element k of a dt buffer. */
void op_fold_num_put(uint8_t *buf, ir_dtype dt, int64_t k, num v, ir_dtype from);
/* The output element a reduction of x over the dims red[d] (keepdims either way) adds
 * element i of x into: i's kept coordinates, row-major. */
int64_t op_fold_reduced_at(const ir_tensor *x, const bool *red, int64_t i);
/* Offset into x of element o of a broadcast result of rank r and dims od. */
int64_t op_fold_bcast_at(const ir_tensor *x, int r, const int64_t *od, int64_t o);
/* Output 0 of n as a fresh buffer for a folded value (bytes checked); NULL and
 * err when too large. op_fold_set stores it as the output's value and frees it. */
uint8_t *op_fold_out(ir_graph *g, ir_node *n, int64_t *numel, oc_err *err);
int op_fold_set(ir_graph *g, ir_node *n, uint8_t *buf, int64_t numel);
/* Inputs 0 and 1 as plan-time values *a and *b (op_fold_need_value), output 0 of type dt
 * (IR_DTYPE_UNDEFINED: a's) and their broadcast shape, rank *r and dims od (OC_ERR naming
 * what fails). */
int op_fold_binary(ir_graph *g, ir_node *n, ir_dtype dt, ir_tensor **a, ir_tensor **b, int *r,
                   int64_t *od, oc_err *err);
/* Input i must be a plan-time value of a type folding handles (OC_ERR naming it). */
int op_fold_need_value(ir_graph *g, ir_node *n, int i, ir_tensor **t, oc_err *err);

/* The definition of an op of OC_OPS_FOLD: lo..hi plan-time inputs (hi -1: any
 * number), one output, its shape function folds. */
extern const op_role op_fold_const_role[1];
#define FOLD_OP_N(ident, lo, hi, fn)                                                               \
    const op_def ident = {.min_inputs = lo,                                                        \
                          .max_inputs = hi,                                                        \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = op_fold_const_role,                                             \
                          .n_roles = 1,                                                            \
                          .infer = fn}
#define FOLD_OP(ident, n, fn) FOLD_OP_N(ident, n, n, fn)

#endif
