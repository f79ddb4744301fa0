/* eval_graph.h — a forward model turned into its inference form, as PyTorch's
 * model.eval() runs it: BatchNormalization on its running statistics (the
 * training form's statistics outputs dropped), Dropout and the exporters'
 * random dropout patterns (Mul(x, Div(Cast(Less(RandomUniformLike, p)), p)),
 * stochastic depth included) replaced by the identity, FusedAttention's dropout
 * off, and what no output needs any more removed. outcore-run evaluates
 * held-out data on it.
 *
 *   if (eval_graph_make(g, &err)) ...   // g: a shape-inferred forward model
 */
#ifndef OC_EVAL_GRAPH_H
#define OC_EVAL_GRAPH_H

#include "ir/ir.h"

int eval_graph_make(ir_graph *g, oc_err *err);

#endif
