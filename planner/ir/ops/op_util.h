/* op_util.h — helpers shared by shape functions (planner/ops/op_*.c). */
#ifndef OC_OP_UTIL_H
#define OC_OP_UTIL_H

/* Constant folding (shape subgraphs) makes results of at most this many bytes. */
#define OP_FOLD_MAX_BYTES ((int64_t)1 << 28)
/* A Gather's nn.Embedding padding_idx, read at import from torch.export's node metadata
 * (onnx_import.c): GatherGrad leaves that row's gradient zero. Not written back to ONNX. */
#define OC_ATTR_PADDING_IDX "outcore_padding_idx"

#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"

/* A plan-time value: inline data of a constant (a folded shape computation,
 * a Constant). A parameter's weights are data too, but they change every step:
 * folding them would cut the parameter off from its gradient. */
bool op_is_value(const ir_tensor *t);
/* True when t holds data in memory and every byte of it is 0 (a zero bias, a zero fill). */
bool op_data_zero(const ir_tensor *t);
/* The one element of t's inline data as an integer: int64, int32, or (with_bool) bool as
 * 0 / 1; false for any other type, count or storage. Whether t is a plan-time value is the
 * caller's test (a loop's trip count, an importer's scalar: Constant attributes too). */
bool op_int_scalar(const ir_tensor *t, bool with_bool, int64_t *v);
/* The element type two operands compute in (Add, Mul, Where's X and Y): their
 * common type, or where one is a float plan-time value (an exporter's scalar)
 * and the other a half activation (autocast), the activation's: the value is
 * read in float32, as PyTorch reads a Python scalar. OC_ERR naming both otherwise. */
int op_operand_dtype(const ir_tensor *a, const ir_tensor *b, ir_dtype *dt, oc_err *err);
/* Input i with a known shape, or OC_ERR naming it. */
int op_in_shaped(ir_graph *g, ir_node *n, int i, ir_tensor **t, oc_err *err);
/* Input i with plan-time int64 values, or OC_ERR naming it. */
int op_in_int64s(ir_graph *g, ir_node *n, int i, const int64_t **v, int64_t *count, oc_err *err);
/* Reads a scalar numeric plan-time value of input i (any float or integer type) as a double;
 * false if not known. */
bool op_in_scalar_f(ir_graph *g, ir_node *n, int i, double *v);
/* Sets output i (if present) to dtype and shape. */
void op_set_out(ir_graph *g, ir_node *n, int i, ir_dtype dt, int rank, const int64_t *dims);
/* Sets output i (if present) to the sequence of the n_items tensors items, of element type dt
 * (op_sequence.c: no storage, no shape). */
void op_set_out_sequence(ir_graph *g, ir_node *n, int i, ir_dtype dt, const int *items,
                         int n_items);
/* Sets output i like tensor src (dtype + shape). */
void op_set_out_like(ir_graph *g, ir_node *n, int i, const ir_tensor *src);
/* Normalises axis into [0, rank) or fails. */
int op_axis(int64_t axis, int rank, const char *what, int64_t *out, oc_err *err);
/* An ints attribute of exactly count values, or the default (filled with dflt). */
int op_attr_ints_n(const ir_node *n, const char *name, int count, int64_t dflt, int64_t *out,
                   oc_err *err);

/* op_window (op_args.h) from a node's attributes. */
/* kernel: taken from kernel_shape or from the given kernel dims (NULL = required attr). */
int op_window_read(const ir_node *n, int nsp, const int64_t *in, const int64_t *kernel_dims,
                   op_window *w, oc_err *err);
/* Output extent of spatial dim i for an input extent in (floor or ceil mode). */
int op_window_out(const op_window *w, int i, int64_t in, int64_t *out, oc_err *err);

/* Decoders shared by an op and its backward ops (op_args.h): the conv family
 * (Conv, ConvTranspose and their BackwardData / BackwardFilter) and pooling
 * (MaxPool, AveragePool and their grads). Shapes inferred. */
int op_decode_conv(const ir_graph *g, ir_node *n, oc_err *err);
int op_decode_pool(const ir_graph *g, ir_node *n, oc_err *err);
int op_decode_batch_norm(const ir_graph *g, ir_node *n, oc_err *err);
int op_decode_clip(const ir_graph *g, ir_node *n, oc_err *err);
int op_decode_dropout(const ir_graph *g, ir_node *n, oc_err *err);
int op_decode_pad(const ir_graph *g, ir_node *n, oc_err *err);
int op_decode_sce(const ir_graph *g, ir_node *n, oc_err *err);

/* Folds an Add, Sub, Mul or Div whose inputs are both plan-time values
 * (output shape inferred); does nothing otherwise. */
int op_fold_arith(ir_graph *g, ir_node *n, oc_err *err);

/* Expand's output shape; its value folded when X is a plan-time value. */
int op_expand_fold(ir_graph *g, ir_node *n, oc_err *err);
/* Max / Min of plan-time values (any number); Neg of a plan-time number, Sin, Cos, Sqrt,
 * Exp, Log, Abs, Reciprocal of a plan-time float value: output set and folded; refused when
 * an input is not a plan-time value. */
int op_fold_min_max(ir_graph *g, ir_node *n, oc_err *err);
int op_fold_unary(ir_graph *g, ir_node *n, oc_err *err);
/* The range [*lo, *hi] of integer tensor t's values when its producers say it: a
 * plan-time value's; a TopKOffsets' indices along its axis (an ArgMax or TopK of an
 * activation); what Expand, Reshape, (Un)Squeeze, Transpose, Identity, Flatten and integer
 * Casts move, and Concat joins, of those (op_fold_index.c). */
bool op_index_range(const ir_graph *g, int t, int64_t *lo, int64_t *hi);
/* Whether tensor t is read for its shape alone: every reader a Shape node (or CastLike's
 * type input), and not a graph output. torch.export broadcasts indices by the shape of a
 * Max of them, which then never runs. */
bool op_read_for_shape_only(const ir_graph *g, int t);
/* Mod of plan-time values, broadcast (integers: fmod 0, Python's %, or 1; floats: fmod 1). */
int op_fold_mod(ir_graph *g, ir_node *n, oc_err *err);
/* CumSum of plan-time values: running sums of x along the axis (input 1, one value), from
 * the end when reverse, each without its own element when exclusive (Hugging Face's position
 * ids from an attention mask, its mask utilities; op_fold_math.c). */
int op_fold_cum_sum(ir_graph *g, ir_node *n, oc_err *err);
/* Pow of a plan-time base and exponent, broadcast (op_fold_math.c). */
int op_fold_pow(ir_graph *g, ir_node *n, oc_err *err);
/* Where of three plan-time values (output shape set): folded; else nothing. */
int op_fold_where(ir_graph *g, ir_node *n, oc_err *err);

/* Numpy broadcasting of a and b into out (rank *rank). */
int op_broadcast(const ir_tensor *a, const ir_tensor *b, int *rank, int64_t *out, oc_err *err);

#endif
