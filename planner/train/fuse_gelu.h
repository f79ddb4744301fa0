/* fuse_gelu.h — the GELU that exporters below opset 20 write decomposed, as
 * one Gelu node (ir/ops/op_elementwise.c; backward one GeluGrad instead of
 * ~10 pointwise gradient nodes and a Sum). Anchored on each Tanh / Erf: x is
 * found walking back from its input through Mul/Add/Sub/Div/Pow whose other
 * inputs are plan-time float scalars or x, y walking forward through the
 * Mul/Add/Sub/Div that alone read the chain; the region is taken when every
 * intermediate is read inside it alone, x and y share shape and compute type,
 * and, evaluated in double at a dozen points with its own constants, it is
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate "tanh") or
 * 0.5 x (1 + erf(x / sqrt(2))) (approximate "none") to 1e-5 — so any order
 * of the ops (x*x*x or Pow(x, 3), 0.5 x first, Div or Mul by 1/sqrt(2)) is
 * taken and nothing else is.
 * The Gelu keeps y's name and lists the removed nodes in "members". Below
 * opset 20 ONNX has no Gelu: the node is then in the ai.outcore domain
 * (op_lookup takes a standard op there, ir/ops/op_table.h) and a saved model
 * writes it back decomposed (ir/onnx_export.c). On by default; --no-fuse
 * keeps the decomposition.
 *
 *   int n;
 *   if (fuse_gelu(forward_graph, &n, &err)) ...  // shapes inferred, args decoded
 */
#ifndef OC_FUSE_GELU_H
#define OC_FUSE_GELU_H

#include "ir/ir.h"

/* Rewrites every match in g in place; *n_fused: how many. */
int fuse_gelu(ir_graph *g, int *n_fused, oc_err *err);

#endif
