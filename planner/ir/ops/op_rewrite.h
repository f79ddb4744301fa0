/* op_rewrite.h — building blocks of the load-time rewrites (op_def.lower: MatMul's
 * numpy forms, InstanceNormalization): nodes inserted at an index of the graph, named
 * "<base>/<what>", so that messages and plans name the node they came from. */
#ifndef OC_OP_REWRITE_H
#define OC_OP_REWRITE_H

#include "ir/ops/op_table.h"

/* A node of kind k inserted at index `at` (ir_node_insert: later nodes move up one; at the
 * graph's node count, added last: rewrites of many nodes add theirs last, then move them
 * with one ir_nodes_move_tail),
 * reading in0 and, when >= 0, in1, writing y, or a new tensor "<base>/<what>" when y < 0.
 * Returns the tensor written. */
int op_rewrite_insert(ir_graph *g, int at, const char *base, const char *what, op_kind k, int in0,
                      int in1, int y);
/* The same for a node of kind k with the n axes as its second input when the graph's opset
 * is at least axes_input_from (Unsqueeze, Squeeze, ReduceSum: 13; ReduceMean: 18), as an
 * attribute below it. */
int op_rewrite_axes(ir_graph *g, int at, const char *base, const char *what, op_kind k, int x,
                    int n, const int64_t *axes, int axes_input_from, int y);
/* Attribute `name` of node `node`: the n ints v, or the int v. */
void op_rewrite_attr_ints(ir_graph *g, int node, const char *name, int n, const int64_t *v);
void op_rewrite_attr_int(ir_graph *g, int node, const char *name, int64_t v);
/* Node `node` without its attributes named `name`. */
void op_rewrite_attr_drop(ir_graph *g, int node, const char *name);
/* An int64 constant "<base>/<what>" of the n values v (1-D: a shape, axes, indices). */
int op_rewrite_ints(ir_graph *g, const char *base, const char *what, int n, const int64_t *v);
/* Reshape(t, [-1]) inserted at `at`, writing "<base>/<what>" (returned). */
int op_rewrite_flatten(ir_graph *g, int at, const char *base, const char *what, int t);
/* Reshape(t, dims) inserted at `at`, writing "<base>/<what>" (returned); the shape constant
 * "<base>/<what>_shape". */
int op_rewrite_reshape(ir_graph *g, int at, const char *base, const char *what, int t, int rank,
                       const int64_t *dims);
/* A constant "<base>/<what>" of type dtype and the given shape, its elements copied from data
 * (ir_const_tensor). */
int op_rewrite_constant(ir_graph *g, const char *base, const char *what, ir_dtype dtype, int rank,
                        const int64_t *dims, const void *data);
/* A float32 constant "<base>/<what>" of the given shape, every element v. */
int op_rewrite_fill(ir_graph *g, const char *base, const char *what, int rank, const int64_t *dims,
                    float v);
/* Node `node` made a node of kind k afresh: no inputs (its uses of them dropped), no
 * attributes, k's domain; its name and outputs kept. */
void op_rewrite_become(ir_graph *g, int node, op_kind k);
/* More than OP_MAX_SPLIT tensors to concatenate along axis (ConcatGrad splits into at most
 * that many): Concats of OP_MAX_SPLIT of them each ("<base>/<what>_group<k>") inserted at
 * *at (advanced past them), ins[0..] then the groups. Returns how many ins remain (n when
 * n <= OP_MAX_SPLIT); n at most OP_MAX_SPLIT squared. */
int op_rewrite_concat_groups(ir_graph *g, int *at, const char *base, const char *what, int *ins,
                             int n, int64_t axis);
/* Node `node`'s output 0 moved to a new tensor "<base>/<what>", returned: its old output is
 * then free for a node inserted after it to write. */
int op_rewrite_redirect(ir_graph *g, int node, const char *base, const char *what);
/* A (C) tensor p as (C, 1, ..) of rank r - 1 (the per-channel operand of an X of rank r),
 * a Reshape "<base>/<what>" inserted at *at, which moves up one. */
int op_rewrite_per_channel(ir_graph *g, int *at, const char *base, const char *what, int p, int r,
                           int64_t c);
/* A normalization's affine tail: node `node`'s output becomes "<base>/normalised", then
 * Mul by scale and Add of shift, each a (C) tensor or -1 for none, as (C, 1, ..) tensors
 * write the node's old output ("<base>/scaled", "<base>/shifted"). */
void op_rewrite_affine(ir_graph *g, int node, const char *base, int scale, int shift, int r,
                       int64_t c);
/* Whether t is a plan-time float32 value whose every element is v. */
bool op_rewrite_all(const ir_tensor *t, float v);

#endif
