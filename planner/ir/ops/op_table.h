/* op_table.h — what outcore knows about each op, reached through its op_kind
 * (the list: op_list.h). Names are looked up once — at import and at load —
 * into ir_node.op; everything after that tests and indexes the enum.
 *
 *   int k = op_lookup(node_domain, node_op_type);      // at import: OP_UNKNOWN if unsupported
 *   const op_def *d = op_def_of(node);                  // node->op set
 *   if (d->infer(g, node, opset, &err)) ...            // dtypes, shapes, folded values
 *   int n = op_node_add(g, "conv1/grad_data", OP_CONV_BACKWARD_DATA);  // a new node of a kind
 */
#ifndef OC_OP_TABLE_H
#define OC_OP_TABLE_H

#include "ir/ir.h"
#include "ir/ops/op_list.h"

#define OP_MIN_OPSET 9
#define OP_MAX_OPSET 21

/* The project's domain: backward, loss-gradient, update and swap ops. */
#define OC_DOMAIN "ai.outcore"
#define OC_DOMAIN_VERSION 1
/* ONNX has Gelu from opset 20: below it a fused Gelu (train/fuse_gelu.h) is in
 * OC_DOMAIN, where op_lookup takes a standard op as well, and a saved model
 * writes it decomposed (ir/onnx_export.c), its Tanh or Erf named as the fused
 * node is less OP_GELU_FUSED_SUFFIX. */
#define OP_GELU_OPSET 20
#define OP_GELU_FUSED_SUFFIX "/gelu"

struct grad_ctx; /* ir/ops/grad_api.h */

/* Work of one node, for the analytic profile (roofline). */
typedef struct op_cost {
    double flops;
    double bytes_read, bytes_written;
} op_cost;

/* How an input slot is used; decides the kind of an initializer there. */
typedef enum op_role {
    OP_IN_DATA = 0, /* activation (a float initializer here is a parameter) */
    OP_IN_PARAM,    /* trainable weight */
    OP_IN_STATE,    /* running statistic, updated by the op in training */
    OP_IN_CONST,    /* plan-time value: shapes, ratios, clip bounds */
} op_role;

/* Precision of a forward node under --precision bf16|fp16 (train/autocast.h),
 * PyTorch autocast's lists for CUDA: */
typedef enum op_autocast {
    OP_AUTOCAST_FOLLOW = 0, /* float activations promote to the widest among them; parameters
                               follow it (a bias after MatMul); plan-time values stay */
    OP_AUTOCAST_LOWER,      /* every float input in half (convolution, GEMM, MatMul, attention) */
    OP_AUTOCAST_FP32,       /* every float input in float32 (softmax, norms, sums, pow, losses) */
    OP_AUTOCAST_NORM,       /* data input 0 as it comes; the rest in float32 (BatchNorm:
                               statistics and affine parameters stay float32) */
} op_autocast;

typedef struct op_def {
    int min_inputs, max_inputs; /* max -1: variadic */
    int min_outputs, max_outputs;
    const op_role *roles; /* role of input i; inputs past n_roles use the last */
    int n_roles;
    /* Shape function. Inputs' shapes (and plan-time values) are known; sets
     * every present output's dtype and shape, and its data when it can be
     * folded at plan time. Returns OC_ERR with a message on bad input (the
     * caller prefixes node name and op). */
    int (*infer)(ir_graph *g, ir_node *n, int64_t opset, oc_err *err);
    /* Rewrite at load, before infer (NULL: none), for what the op's kernels do not
     * take as it is: may insert nodes before and after g->nodes[node] (inputs
     * shaped), setting *changed; ir_infer_shapes then resumes at index node (the
     * first inserted), and the rewritten node comes back to it unchanged. */
    int (*lower)(ir_graph *g, int node, bool *changed, oc_err *err);
    /* Argument decoder (op_args.h), run after infer with every shape known:
     * reads the attributes into node->args and checks them against the
     * shapes. NULL: the op has no arguments. */
    int (*decode)(const ir_graph *g, ir_node *n, oc_err *err);
    /* Cost of the node (shapes known). NULL: op_cost_default. */
    void (*cost)(const ir_graph *g, const ir_node *n, op_cost *c);
    /* Gradient rule: emits the backward nodes of one forward node through the
     * grad_ctx (grad_api.h). NULL: the op has no gradient (training a model
     * that needs one fails naming the node). */
    int (*grad)(struct grad_ctx *c);
    /* Piecewise constant (Sign, Floor, Ceil, Round): the gradient is zero wherever it is
     * defined, as PyTorch's, so none flows through the node (grad stays NULL). */
    bool grad_zero;
    /* Tensors of g the node reads besides its inputs: a Loop's or If's body reading the graph
     * around it by name (before it is unrolled). Returns *count of them (oc_malloc'd; the
     * caller frees), NULL for none. NULL: the node reads its inputs only. */
    int *(*captures)(const ir_graph *g, const ir_node *n, int *count);
    /* The forward tensors the gradient reads ("saved tensors"): bit i of
     * saved_inputs = input i, of saved_outputs = output i. Checked by tests
     * against what the rule really emits. */
    uint32_t saved_inputs, saved_outputs;
    /* In-place outputs: output o reuses the storage of input aliases[o] (-1: none);
     * or, for ops of variadic in-place outputs, alias(n, o). Read through op_output_alias. */
    const int8_t *aliases;
    int n_aliases;
    int (*alias)(const ir_node *n, int o);
    /* Output 0 may be omitted (every backend's kernel skips it); otherwise a
     * node without it is refused at load. */
    bool output0_optional;
    /* Passes its data inputs' values on without a gradient rule of its own (SequenceInsert: the
     * elements a SequenceAt reads later): the load's float flow goes through it. */
    bool passes_data;
    op_autocast autocast;
} op_def;

/* Shape inference and argument decoding of one node: infer, then decode.
 * The only way nodes are inferred (import, training graph, loader). */
int op_infer(ir_graph *g, ir_node *n, oc_err *err);
/* The decoder alone (after attributes that feed it changed, e.g. a plan's
 * recompute annotation restored); OC_OK for ops without one. */
int op_decode(ir_graph *g, ir_node *n, oc_err *err);

/* The input whose storage output o of n reuses (in place), or -1. */
int op_output_alias(const ir_node *n, int o);

/* Default cost: flops = elements written; bytes = inputs read + outputs written. */
void op_cost_default(const ir_graph *g, const ir_node *n, op_cost *c);
/* Cost through the node's entry (or the default). */
void op_cost_of(const ir_graph *g, const ir_node *n, op_cost *c);

/* The kind of (domain, op_type) — domain "" or "ai.onnx" is the default —
 * or OP_UNKNOWN. The one name lookup; import and load call it per node.
 * In OC_DOMAIN a standard op's name is that op (a standard op newer than the
 * model's opset: Gelu below OP_GELU_OPSET). */
int op_lookup(const char *domain, const char *op_type);
/* The definition of a node's kind (a bug when node->op is unset). */
const op_def *op_def_of(const ir_node *n);
/* ONNX op_type of a kind. */
const char *op_name(op_kind k);
/* Its domain: "" (ONNX) or OC_DOMAIN. */
const char *op_domain(op_kind k);
/* Adds a node of kind k named name (op_type and domain from the list). */
int op_node_add(ir_graph *g, const char *name, op_kind k);
/* Inserts one at index at (ir_node_insert). */
int op_node_insert(ir_graph *g, int at, const char *name, op_kind k);
/* Comma-separated list of supported op types, for messages. */
void op_supported_list(char *buf, size_t cap);
/* The copies of a plan: SwapOut (device -> host) and SwapIn (host -> device). */
static inline bool op_is_swap_out(const ir_node *n) { return n->op == OP_SWAP_OUT; }
static inline bool op_is_swap_in(const ir_node *n) { return n->op == OP_SWAP_IN; }
/* An attribute ConvRelu has beyond Conv's (members, conv_output,
 * fused_backward: op_conv.c), left out where its Conv is written or differentiated. */
bool op_conv_relu_own_attr(const char *name);
/* Linear's own attributes (its chain's names), not the op's arguments. */
bool op_linear_own_attr(const char *name);
/* The op's rules and kernels depend on where the channel axis is (conv,
 * normalization, pooling and their gradients): what a channels-last node may
 * be (train/channels_last.h). Elementwise ops do not care. */
bool op_reads_channel_axis(int op);
/* A convolution (Conv, ConvRelu, ConvTranspose) or one of its gradients: the
 * cuDNN convolution family. */
bool op_is_conv(int op);
/* Role of input slot i of a node with this definition. */
op_role op_input_role(const op_def *d, int i);

#endif
