/* grad_api.h — the interface gradient rules use to emit backward nodes.
 *
 * The training-graph builder (train/train_graph.h, implemented in
 * train/autodiff.c) walks the forward nodes in reverse; for each node that
 * needs gradients it opens a grad_ctx and calls the op's gradient rule
 * (op_def.grad). A rule reads the forward node's tensors and the incoming
 * output gradients, and emits nodes in the project domain (or standard ONNX
 * nodes), e.g. for Sigmoid:
 *
 *   static int sigmoid_grad_rule(grad_ctx *c) {     // dX = dY * Y * (1 - Y)
 *       int b = grad_node(c, "grad", OP_SIGMOID_GRAD);
 *       grad_in(c, b, grad_dy(c, 0));               // dY  (N, C, H, W)
 *       grad_in(c, b, grad_fwd_out(c, 0));          // Y   saved
 *       grad_out_dx(c, b, 0);                       // dX  (N, C, H, W)
 *       return grad_finish(c, b);
 *   }
 *
 * Node names derive from the forward node's: "<fwd>/<suffix>". The gradient of
 * tensor x is "<x>/grad"; when x has several consumers their partial gradients
 * "<x>/grad.<k>" are summed into it by a Sum node "<x>/grad_sum". A rule whose
 * gradient is dY itself (Add) passes dY on without a node. Every emitted node
 * is shape-inferred by grad_finish. This header is the op definitions' side
 * (ir/ops/); the builder is train/autodiff.c. */
#ifndef OC_GRAD_API_H
#define OC_GRAD_API_H

#include "ir/ir.h"
#include "ir/ops/op_list.h"

typedef struct grad_ctx grad_ctx;

/* The forward node being differentiated, and the graph being built. */
ir_graph *grad_graph(grad_ctx *c);
const ir_node *grad_fwd(grad_ctx *c);
/* Tensor index of the forward node's input/output i (-1 if omitted). */
int grad_fwd_in(grad_ctx *c, int i);
int grad_fwd_out(grad_ctx *c, int i);
/* Gradient flowing into output i, or -1 when none does. */
int grad_dy(grad_ctx *c, int i);
/* True when input i needs a gradient. */
bool grad_wants(grad_ctx *c, int i);
/* The loss scale the loss's gradient is multiplied by (--loss-scale: a
 * one-element float state the GradScaler node updates), or -1. */
int grad_loss_scale(grad_ctx *c);

/* Emits a node "<fwd>/<suffix>". */
int grad_node(grad_ctx *c, const char *suffix, op_kind op);
void grad_in(grad_ctx *c, int node, int tensor);
/* Adds an output that is a partial gradient of forward input i when
 * grad_wants(c, i), otherwise an omitted output. Returns the tensor or -1. */
int grad_out_dx(grad_ctx *c, int node, int i);
/* Adds an intermediate output "<fwd>/<suffix>" of the forward input's type
 * (for rules of several nodes: Mul's dY * B before its ReduceSumTo). */
int grad_out_tmp(grad_ctx *c, int node, const char *suffix);
/* Copies the forward node's attributes (all, or the named ones). */
void grad_copy_attrs(grad_ctx *c, int node);
void grad_attr_int(grad_ctx *c, int node, const char *name, int64_t v);
void grad_attr_ints(grad_ctx *c, int node, const char *name, int n, const int64_t *v);
void grad_attr_float(grad_ctx *c, int node, const char *name, float v);
void grad_attr_string(grad_ctx *c, int node, const char *name, const char *v);
/* A new constant initializer "<fwd>/<suffix>" of zeros of type dt (float32 or
 * half: all-zero bytes; a gradient no path delivers, where a rule needs a tensor). */
int grad_const_zeros(grad_ctx *c, const char *suffix, ir_dtype dt, int rank, const int64_t *dims);
/* A new int64 constant initializer "<fwd>/<suffix>" holding vals. */
int grad_const_i64(grad_ctx *c, const char *suffix, int n, const int64_t *vals);
/* Adds an output to the forward node itself (e.g. Dropout's mask when the
 * model did not export it): "<fwd>/<suffix>", shape-inferred. Returns it. */
int grad_fwd_add_output(grad_ctx *c, const char *suffix); /* -1 on error (grad_err) */
/* Shape-infers node; OC_ERR names it. */
int grad_finish(grad_ctx *c, int node);
/* The error sink of this build (for rules that fail on their own checks). */
oc_err *grad_err(grad_ctx *c);
/* For rules whose gradient passes dY through unchanged (dX = dY): registers
 * the tensor dy as the partial gradient of input i. */
void grad_pass(grad_ctx *c, int i, int dy);

#endif
