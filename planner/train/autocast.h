/* autocast.h — mixed precision as a property of the training graph
 * (--precision bf16|fp16): every forward node computes in the precision
 * PyTorch's autocast gives its op on CUDA (the op table's rule, op_autocast in
 * ir/ops/op_table.h), with an explicit Cast node wherever a tensor changes
 * type. Parameters stay float32 (the master weights the optimizer updates);
 * a node that computes in half reads a half copy made by a Cast, whose
 * gradient casts back, so every parameter's gradient is float32.
 *
 *   int n;
 *   if (autocast_graph(g, IR_DTYPE_BFLOAT16, &n, &err)) ...  // forward + loss, inferred
 *
 * A tensor cast to one type once is shared by its later readers (a weight
 * read twice, a residual). Run after fusion (fused nodes carry their rule),
 * before autodiff. */
#ifndef OC_AUTOCAST_H
#define OC_AUTOCAST_H

#include "ir/ir.h"

/* Inserted Cast nodes are named AUTOCAST_PREFIX + "<tensor>/<bf16|fp16|fp32>". */
#define AUTOCAST_PREFIX "autocast/"

/* half: IR_DTYPE_BFLOAT16 or IR_DTYPE_FLOAT16. *n_casts: Cast nodes inserted. */
int autocast_graph(ir_graph *g, ir_dtype half, int *n_casts, oc_err *err);
/* A Cast autocast_graph inserted (a model's own Casts are not). */
bool autocast_is_cast(const ir_node *n);

/* A model stored in half precision (model.half(), bfloat16 weights): its half
 * parameters and state become float32 (exact: the master weights the
 * optimizer updates) and so do its half data inputs (fed float32); every node
 * is inferred again. *stored: the half type found (IR_DTYPE_UNDEFINED: none,
 * nothing changed). Before autocast_graph, which then applies --precision. */
int autocast_float_masters(ir_graph *g, ir_dtype *stored, oc_err *err);

#endif
