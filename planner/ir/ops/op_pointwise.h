/* op_pointwise.h — how the pointwise ops (runtime/pointwise.h) are defined: one
 * input X -> Y of its shape, and the gradient op (dY, S) -> dX beside each
 * (op_elementwise.c: the activations; op_math.c: trigonometry, rounding, the
 * shrinkages). */
#ifndef OC_OP_POINTWISE_H
#define OC_OP_POINTWISE_H

#include "ir/ops/op_table.h"

/* X -> Y of X's shape (Dropout: and a bool mask of it). */
int op_pointwise_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err);
/* The same, folded when X is a plan-time value (op_fold_unary); float at run time. */
int op_pointwise_fold_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err);
extern const op_role op_pointwise_roles[]; /* {OP_IN_DATA} */

/* A pointwise op X -> Y (shape kept) and its gradient op (dY, S) -> dX; decode:
 * its parameters (op_pointwise_args) or NULL; saved: the tensor S its rule reads.
 * POINTWISE_DEF: with its shape function (op_pointwise_fold_infer: folded on plan-time
 * values) and autocast rule (op_autocast). */
#define POINTWISE_DEF(ident, inferfn, rule, decodefn, saved_in, saved_out, ac)                     \
    const op_def ident = {.min_inputs = 1,                                                         \
                          .max_inputs = 1,                                                         \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = op_pointwise_roles,                                             \
                          .n_roles = 1,                                                            \
                          .infer = inferfn,                                                        \
                          .decode = decodefn,                                                      \
                          .grad = rule,                                                            \
                          .saved_inputs = saved_in,                                                \
                          .saved_outputs = saved_out,                                              \
                          .autocast = ac}
#define POINTWISE_OP(ident, rule, decodefn, saved_in, saved_out)                                   \
    POINTWISE_DEF(ident, op_pointwise_infer, rule, decodefn, saved_in, saved_out,                  \
                  OP_AUTOCAST_FOLLOW)
#define POINTWISE_GRAD_OP(ident, decodefn)                                                         \
    const op_def ident = {.min_inputs = 2,                                                         \
                          .max_inputs = 2,                                                         \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = op_pointwise_roles,                                             \
                          .n_roles = 1,                                                            \
                          .infer = op_pointwise_infer,                                             \
                          .decode = decodefn}

#endif
