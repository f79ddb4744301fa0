/* ir.h — the planner's intermediate representation: plain C structs, no protobuf.
 *
 * A graph owns every tensor, node and attribute in it; ir_graph_free releases all.
 * Tensors and nodes are referred to by index (stable for the life of the graph).
 * Names are the ONNX names, so users can grep for them.
 *
 *   ir_graph *g = ir_graph_new();
 *   int x = ir_tensor_add(g, "x", IR_DTYPE_FLOAT);        // or ir_tensor_find
 *   int n = ir_node_add(g, "conv1", "Conv", "");   // name, op_type, domain (import; op_node_add elsewhere)
 *   ir_node_add_input(g, n, x); ir_node_add_output(g, n, y);
 *   ...
 *   ir_graph_free(g);
 */
#ifndef OC_IR_H
#define OC_IR_H

#include "ir/common.h"

#define IR_MAX_RANK 8
/* ONNX IR versions read: 3 (opset imports) to 12 (the newest the schema defines as of 2026);
 * others are refused (README "Limits"). */
#define OC_MIN_IR_VERSION 3
#define OC_MAX_IR_VERSION 12
/* What a model file may ask for (README "Limits"); past these, import fails
 * with the node, tensor or attribute named instead of allocating it. */
#define IR_MAX_NODES (1 << 22)                 /* nodes in the graph */
#define IR_MAX_TENSORS (1 << 22)               /* initializers + graph inputs */
#define IR_MAX_DIM ((int64_t)1 << 40)          /* one dim */
#define IR_MAX_TENSOR_BYTES ((int64_t)1 << 48) /* one tensor (256 TiB) */
#define IR_MAX_TOTAL_BYTES ((int64_t)1 << 60)  /* all tensors of a model together (1 EiB) */
#define IR_MAX_ATTR_VALUES (1 << 20)           /* values of one attribute */

/* Element types: values are ONNX TensorProto.DataType's. */
typedef enum ir_dtype {
    IR_DTYPE_UNDEFINED = 0,
    IR_DTYPE_FLOAT = 1,
    IR_DTYPE_UINT8 = 2,
    IR_DTYPE_INT8 = 3,
    IR_DTYPE_UINT16 = 4,
    IR_DTYPE_INT16 = 5,
    IR_DTYPE_INT32 = 6,
    IR_DTYPE_INT64 = 7,
    IR_DTYPE_STRING = 8,
    IR_DTYPE_BOOL = 9,
    IR_DTYPE_FLOAT16 = 10,
    IR_DTYPE_DOUBLE = 11,
    IR_DTYPE_UINT32 = 12,
    IR_DTYPE_UINT64 = 13,
    IR_DTYPE_BFLOAT16 = 16,
} ir_dtype;

/* Bytes per element; 0 for types the planner cannot size (STRING, UNDEFINED). */
int ir_dtype_size(ir_dtype t);
const char *ir_dtype_name(ir_dtype t);
/* Floating point (float, double, float16, bfloat16): what gradients flow through. */
bool ir_dtype_is_float(ir_dtype t);
/* float16 or bfloat16: stored in 2 bytes, computed in float32 (ir/half.h). */
bool ir_dtype_is_half(ir_dtype t);
/* The float types a training step computes in: float32, float16, bfloat16. */
bool ir_dtype_is_compute(ir_dtype t);

/* What a tensor is, for memory accounting. Import assigns INPUT, PARAMETER,
 * STATE, CONSTANT and ACTIVATION; the training graph adds the other classes. */
typedef enum ir_kind {
    IR_KIND_ACTIVATION = 0, /* produced by a forward node; in a training graph: transient */
    IR_KIND_INPUT,          /* graph input fed with data (images) */
    IR_KIND_LABEL,          /* graph input fed with labels */
    IR_KIND_PARAMETER,      /* trainable initializer */
    IR_KIND_STATE,          /* non-trainable persistent (BN running stats, momentum) */
    IR_KIND_CONSTANT,       /* small value known at plan time (shapes, scalars) */
    IR_KIND_GRADIENT,       /* gradient of a parameter */
    IR_KIND_ACT_GRADIENT,   /* gradient of an activation */
    IR_KIND_WORKSPACE,      /* scratch of one node */
    IR_KIND_SAVED,          /* forward activation that a backward node reads */
    IR_KIND_OPT_STATE,      /* optimizer state (momentum buffers) */
    IR_KIND__COUNT
} ir_kind;
const char *ir_kind_name(ir_kind k);

/* Where an initializer's bytes are. */
typedef enum ir_data_src {
    IR_DATA_NONE = 0, /* structure-only (dims, no data) or not an initializer */
    IR_DATA_INLINE,   /* t->data holds the bytes (little-endian, packed) */
    IR_DATA_EXTERNAL, /* t->ext_* locate them in a file next to the model */
} ir_data_src;

typedef struct ir_tensor {
    char *name;
    ir_dtype dtype;
    int rank;                      /* -1 while unknown */
    int64_t dims[IR_MAX_RANK];     /* valid when rank >= 0 and dim_params[i] == NULL */
    char *dim_params[IR_MAX_RANK]; /* symbolic dims (graph inputs) until bound; owned */
    ir_kind kind;
    bool is_initializer;
    /* An initializer the exporter marks as a module's buffer (torch.export's input kind
     * BUFFER): read as data it is a constant, never a parameter (shape_infer.c). */
    bool is_buffer;
    /* An initializer a torch.export file does not mark as a module's parameter or buffer:
     * the exporter's own constants (a literal's scalar, a lifted constant tensor). A
     * constant whatever reads it (shape_infer.c). */
    bool is_export_constant;
    /* A parameter --freeze holds (train_graph.c): a constant in the training graph, written
     * back by --save as the parameter it is in the model (not as a Constant node). */
    bool is_frozen;
    bool is_graph_input;
    bool is_graph_output;
    /* A model initializer only folded nodes read (a module's buffer): kept, unread, by
     * ir_graph_remove_nodes, so that --save writes it back (train_graph.c). */
    bool keep_unread;
    /* An initializer of the model file's own graph (not a Loop body's, not one a load-time
     * rewrite made, such as an unrolled loop's iteration numbers): only these are kept
     * unread for --save. */
    bool is_model_initializer;
    /* A graph input computed each step on the host from the model's integer inputs
     * (ir_graph.host; ir/host_inputs.h): RoBERTa's position ids from its token ids. */
    bool is_host_input;
    /* A sequence of tensors whose every element is known at load (SequenceEmpty,
     * SequenceInsert, a Loop's carried sequence: ops/op_sequence.c): items, its n_items
     * element tensors (owned). It has no storage: the nodes writing sequences are removed
     * once shapes are inferred, their readers having become reads of the elements. */
    bool is_sequence;
    int *items;
    int n_items;
    int producer;   /* node index, -1 for inputs/initializers */
    int *consumers; /* node indices (a node appears once per use) */
    int n_consumers;
    size_t cap_consumers;
    /* Data: initializers, Constant outputs and folded shape values. */
    ir_data_src data_src;
    void *data; /* owned; packed little-endian elements */
    size_t data_bytes;
    char *ext_location; /* IR_DATA_EXTERNAL: path relative to the model */
    int64_t ext_offset, ext_length;
} ir_tensor;

typedef enum ir_attr_type {
    IR_ATTR_FLOAT = 1,
    IR_ATTR_INT = 2,
    IR_ATTR_STRING = 3,
    IR_ATTR_TENSOR = 4,
    IR_ATTR_GRAPH = 5, /* a Loop's body: the packed ONNX GraphProto (ops/op_loop.c) */
    IR_ATTR_FLOATS = 6,
    IR_ATTR_INTS = 7,
    IR_ATTR_STRINGS = 8,
} ir_attr_type;

typedef struct ir_attr {
    char *name;
    ir_attr_type type;
    float f;
    int64_t i;
    char *s;        /* STRING */
    float *floats;  /* FLOATS, n */
    int64_t *ints;  /* INTS, n */
    char **strings; /* STRINGS, n */
    int n;
    ir_tensor *t;   /* TENSOR: a detached tensor (name, dtype, dims, data) */
    uint8_t *graph; /* GRAPH: graph_bytes of a packed GraphProto */
    size_t graph_bytes;
} ir_attr;

union op_args;

typedef struct ir_node {
    char *name;
    char *op_type;
    char *domain;        /* "" for the default ONNX domain */
    int op;              /* op_kind (ir/ops/op_list.h); OP_UNKNOWN (-1) until looked up */
    union op_args *args; /* decoded attributes (ir/ops/op_args.h) once inferred; owned */
    ir_attr *attrs;
    int n_attrs;
    int *inputs; /* tensor indices; -1 for an omitted optional input */
    int n_inputs;
    int *outputs; /* tensor indices; -1 for an omitted optional output */
    int n_outputs;
    /* Channels-last (train/channels_last.h): every rank-4 input and output holds
     * its logical (N, C, H, W) tensor as (N, H, W, C) — a filter (K, C, R, S)
     * as (K, R, S, C). Set with its attribute (IR_ATTR_CHANNELS_LAST, by
     * ir_node_add_attr); the op's rules see the logical shapes
     * (ir_node_view_logical). */
    bool channels_last;
} ir_node;

typedef struct ir_graph {
    char *name;
    char *model_dir;  /* directory of the model file (external data), owned */
    char *model_path; /* for messages, owned */
    int64_t opset;    /* default-domain opset version */
    /* > 0: --batch replaced this static batch dim of input 0 (an export's fixed batch),
     * named by messages when a shape computed from the old one then disagrees */
    int64_t exported_batch;
    int64_t ir_version;
    char *producer_name;
    ir_tensor *tensors;
    int n_tensors;
    size_t cap_tensors;
    ir_node *nodes;
    int n_nodes;
    size_t cap_nodes;
    int *inputs; /* graph inputs that are not initializers */
    int n_inputs;
    int *outputs;
    int n_outputs;
    /* name -> tensor index (open addressing) */
    int *index;
    size_t index_cap;
    /* Notices for the user (what import or the training-graph builder
     * changed or found: ir_graph_note), printed by the command lines. */
    char **notes;
    int n_notes;
    /* Integer glue the model computes from its integer inputs, moved out of the graph
     * at load and run on the host each step (ir/host_inputs.h); NULL: none. Owned. */
    struct ir_graph *host;
} ir_graph;

ir_graph *ir_graph_new(void);
void ir_graph_free(ir_graph *g);
/* Records a notice (one line, no trailing newline). */
void ir_graph_note(ir_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the notices ("<prog>: notice: ...") to f (NULL: nowhere) and forgets them. */
void ir_graph_print_notes(ir_graph *g, const char *prog, FILE *f);

/* Tensor with this name, or -1. */
int ir_tensor_find(const ir_graph *g, const char *name);
/* The one node reading t, or -1 (t read by none or several, or a graph output). */
int ir_tensor_sole_consumer(const ir_graph *g, int t);
/* Adds a tensor named name, or name.<k> (the first k >= 1 free) when a tensor
 * already has that name: names the training graph derives ("<W>/momentum",
 * "<x>/bf16", "labels") never collide with a model's own. Returns its index. */
int ir_tensor_add(ir_graph *g, const char *name, ir_dtype dtype);
/* Adds a constant initializer of type dtype and the given shape, its elements copied
 * from data (numel * ir_dtype_size(dtype) bytes; NULL: zeros), named as ir_tensor_add
 * names. Returns its index. */
int ir_const_tensor(ir_graph *g, const char *name, ir_dtype dtype, int rank, const int64_t *dims,
                    const void *data);
/* ir_const_tensor of a 1-d int64 constant of the n values v (axes, indices, shapes a
 * rewrite needs). */
int ir_const_int64s(ir_graph *g, const char *name, int n, const int64_t *v);

/* Adds a node (no inputs/outputs yet). Returns its index. */
int ir_node_add(ir_graph *g, const char *name, const char *op_type, const char *domain);
/* Inserts a node (no inputs/outputs yet) at index at, before the node there:
 * later nodes move up by one, every reference to them follows. Returns at. */
int ir_node_insert(ir_graph *g, int at, const char *name, const char *op_type, const char *domain);
/* Moves the nodes from index `from` on (added last) to index at <= from, the nodes at
 * [at, from) after them; every producer and consumer index follows. One pass over the
 * nodes from `at` on and the tensors they touch, however many move (ir_node_insert is one
 * such pass per node: rewrites of many nodes add theirs last, then move them here). */
void ir_nodes_move_tail(ir_graph *g, int from, int at);
/* Appends tensor t (or -1 for an omitted input) as the next input; records the use. */
void ir_node_add_input(ir_graph *g, int node, int t);
/* Input i of node becomes tensor t (-1: omitted): one use moves from the old tensor to t. */
void ir_node_set_input(ir_graph *g, int node, int i, int t);
/* Appends tensor t as the next output; sets its producer (must have none). */
void ir_node_add_output(ir_graph *g, int node, int t);

void ir_graph_add_input(ir_graph *g, int t);
void ir_graph_add_output(ir_graph *g, int t);

/* Element count and byte size of a tensor with a fully known static shape;
 * false if the shape is unknown, symbolic, or the size overflows int64. */
bool ir_tensor_numel(const ir_tensor *t, int64_t *numel);
bool ir_tensor_bytes(const ir_tensor *t, int64_t *bytes);
/* The device arena's alignment: every tensor's storage (and every kernel workspace) starts at
 * a multiple of it and takes its size rounded up to one (plan/lifetimes.h's PLAN_ALIGN, the
 * runtime's arena). */
#define IR_DEVICE_ALIGN 256
int64_t ir_device_align_up(int64_t bytes); /* bytes <= INT64_MAX - IR_DEVICE_ALIGN + 1 */
/* Bytes t takes in the device arena: ir_tensor_bytes aligned up (false as ir_tensor_bytes, or
 * when aligning overflows). Memory is
 * counted with it (simulator, in-core peak, the planners' models); copies move ir_tensor_bytes. */
bool ir_tensor_device_bytes(const ir_tensor *t, int64_t *bytes);
bool ir_tensor_shape_known(const ir_tensor *t);
/* Sets a static shape (clears symbols). */
void ir_tensor_set_shape(ir_tensor *t, int rank, const int64_t *dims);
/* "[1, 64, 112, 112]" (symbols printed by name, unknown as "?"). */
const char *ir_shape_str(const ir_tensor *t, char *buf, size_t cap);
/* Replaces the data of t with a copy of bytes (IR_DATA_INLINE). */
void ir_tensor_set_data(ir_tensor *t, const void *bytes, size_t n);
/* True when t holds plan-time int64 values (numel of them) usable by shape folding. */
bool ir_tensor_int64_values(const ir_tensor *t, const int64_t **vals, int64_t *numel);

/* The attribute (INT 1) of a channels-last node (ir_node.channels_last). */
#define IR_ATTR_CHANNELS_LAST "outcore_channels_last"

/* The attribute (STRING: the tensor's name) of a node that reads a value computed at run
 * time where outcore needs one known at load, taken at load only for a load-time rewrite to
 * remove (bag_reduce.c, which refuses the model where one is left): the Identity an If on
 * such a condition became (ops/op_loop.c), a device Slice at such bounds (shape_infer.c). */
#define IR_ATTR_RUN_TIME "outcore_run_time"

/* Makes node channels-last: the attribute (unless there) and the flag. */
void ir_node_mark_channels_last(ir_graph *g, int node);

/* Attribute lookup: NULL when absent. */
const ir_attr *ir_attr_find(const ir_node *n, const char *name);
int64_t ir_attr_int(const ir_node *n, const char *name, int64_t dflt);
float ir_attr_float(const ir_node *n, const char *name, float dflt);
const char *ir_attr_string(const ir_node *n, const char *name, const char *dflt);
/* INTS attribute: returns count (or -1 when absent) and *vals. */
int ir_attr_ints(const ir_node *n, const char *name, const int64_t **vals);
/* Appends an attribute (copied deeply). */
void ir_node_add_attr(ir_graph *g, int node, const ir_attr *a);
void ir_attr_free(ir_attr *a);
void ir_tensor_free_fields(ir_tensor *t);

/* Input/output tensor of a node, or NULL when absent/omitted. */
ir_tensor *ir_node_in(ir_graph *g, const ir_node *n, int i);
ir_tensor *ir_node_out(ir_graph *g, const ir_node *n, int i);

/* Removes the nodes with remove[i] set and every tensor no longer referenced
 * (by a node, or as graph input/output).
 * Outputs of removed nodes that are still used must hold data: they become
 * initializers. Node and tensor indices change; the name index is rebuilt. */
void ir_graph_remove_nodes(ir_graph *g, const bool *remove);
/* Before removing nodes that computed plan-time values: the model's constant initializers
 * that only nodes with remove[i] set read (a module's buffer folded into indices) are kept,
 * unread (keep_unread), so that --save writes them back under their names. */
void ir_keep_folded_initializers(ir_graph *g, const bool *remove);
/* The same, and where each node and tensor went (-1: removed): node_map holds
 * the node count before, tensor_map the tensor count before (either NULL). */
void ir_graph_remove_nodes_map(ir_graph *g, const bool *remove, int *node_map, int *tensor_map);

/* A graph of one node's own tensors — slot k: input k, then the outputs; -1
 * where omitted — as shallow copies (names and data shared; dtype, rank and
 * dims the caller's to change, symbols dropped), so an op's rules or a kernel
 * can run on the node with its tensors retyped (mixed precision) or seen in
 * their logical layout (channels-last) without touching g. */
typedef struct ir_node_view {
    ir_graph g; /* g's fields, tensors replaced by t */
    ir_node n;  /* the node, inputs and outputs renumbered to slots */
    ir_tensor *t;
    int *slot;
} ir_node_view;
void ir_node_view_init(ir_node_view *v, const ir_graph *g, const ir_node *n);
void ir_node_view_free(ir_node_view *v);
/* Of a channels-last node's view: its rank-4 tensors' dims in the logical
 * (N, C, H, W) order (the node's channels_last flag stays: it says where the
 * bytes are). No-op for other nodes. */
void ir_node_view_logical(ir_node_view *v);
/* (N, H, W, C) dims -> (N, C, H, W) and back. */
void ir_dims_to_logical(int64_t *d);
void ir_dims_to_nhwc(int64_t *d);

/* Sum of bytes over tensors of one kind with known shapes. */
int64_t ir_graph_bytes_of_kind(const ir_graph *g, ir_kind k);

#endif
