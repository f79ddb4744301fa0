/* op_util.h — helpers shared by shape functions (planner/ops/op_*.c). */
#ifndef OC_OP_UTIL_H
#define OC_OP_UTIL_H

#include "ir/ops/op_table.h"

/* Input i with a known shape, or OC_ERR naming it. */
int op_in_shaped(ir_graph *g, ir_node *n, int i, ir_tensor **t, oc_err *err);
/* Input i with plan-time int64 values, or OC_ERR naming it. */
int op_in_int64s(ir_graph *g, ir_node *n, int i, const int64_t **v, int64_t *count, oc_err *err);
/* Reads a scalar float plan-time value of input i (float or double); false if not known. */
bool op_in_scalar_f(ir_graph *g, ir_node *n, int i, double *v);
/* Sets output i (if present) to dtype and shape. */
void op_set_out(ir_graph *g, ir_node *n, int i, ir_dtype dt, int rank, const int64_t *dims);
/* Sets output i like tensor src (dtype + shape). */
void op_set_out_like(ir_graph *g, ir_node *n, int i, const ir_tensor *src);
/* Normalises axis into [0, rank) or fails. */
int op_axis(int64_t axis, int rank, const char *what, int64_t *out, oc_err *err);
/* An ints attribute of exactly count values, or the default (filled with dflt). */
int op_attr_ints_n(const ir_node *n, const char *name, int count, int64_t dflt, int64_t *out,
                   oc_err *err);

/* Spatial window geometry shared by Conv, ConvTranspose and pooling. For each
 * of the nsp spatial dims: kernel, stride, dilation, pads (begin then end, as
 * ONNX orders them) after resolving auto_pad against the input extents in. */
typedef struct op_window {
    int nsp;
    int64_t kernel[IR_MAX_RANK], stride[IR_MAX_RANK], dilation[IR_MAX_RANK];
    int64_t pad_begin[IR_MAX_RANK], pad_end[IR_MAX_RANK];
    bool ceil_mode;
} op_window;
/* kernel: taken from kernel_shape or from the given kernel dims (NULL = required attr). */
int op_window_read(const ir_node *n, int nsp, const int64_t *in, const int64_t *kernel_dims,
                   op_window *w, oc_err *err);
/* Output extent of spatial dim i for an input extent in (floor or ceil mode). */
int op_window_out(const op_window *w, int i, int64_t in, int64_t *out, oc_err *err);

/* Numpy broadcasting of a and b into out (rank *rank). */
int op_broadcast(const ir_tensor *a, const ir_tensor *b, int *rank, int64_t *out, oc_err *err);

#endif
