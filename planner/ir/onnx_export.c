/* onnx_export.c — see onnx_export.h. Proto objects are built over the IR's
 * strings and data (no copies); every allocation made here is recorded in a
 * pool and freed after packing. */
#include "ir/onnx_export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "ir/half.h"
#include "ir/host_inputs.h"
#include "ir/onnx_import.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"
#include "ir/model_seal.h"
#include "ir/out_file.h"

typedef struct pool {
    void **p;
    size_t n, cap;
} pool;

static void *palloc(pool *po, size_t count, size_t size) {
    void *p = oc_calloc(count ? count : 1, size);
    oc_grow((void **)&po->p, &po->cap, po->n + 1, sizeof *po->p);
    po->p[po->n++] = p;
    return p;
}

/* protobuf-c's allocator over the pool (an unpacked message freed with it). */
static void *pool_alloc(void *data, size_t size) { return palloc(data, 1, size); }
static void pool_nofree(void *data, void *p) { (void)data, (void)p; }

static char *pstr(pool *po, char *s) { /* strings allocated here (oc_sprintf) */
    oc_grow((void **)&po->p, &po->cap, po->n + 1, sizeof *po->p);
    po->p[po->n++] = s;
    return s;
}

static void pool_free(pool *po) {
    for (size_t i = 0; i < po->n; i++) oc_free(po->p[i]);
    oc_free(po->p);
}

static Onnx__TensorProto *tensor_proto(pool *po, const ir_tensor *t, const void *data,
                                       size_t bytes) {
    Onnx__TensorProto *tp = palloc(po, 1, sizeof *tp);
    onnx__tensor_proto__init(tp);
    tp->name = t->name;
    tp->has_data_type = true;
    tp->data_type = (int32_t)t->dtype;
    tp->n_dims = (size_t)(t->rank > 0 ? t->rank : 0);
    tp->dims = palloc(po, tp->n_dims, sizeof(int64_t));
    for (size_t i = 0; i < tp->n_dims; i++) tp->dims[i] = t->dims[i];
    if (data) {
        tp->has_raw_data = true;
        tp->raw_data.data = (uint8_t *)data;
        tp->raw_data.len = bytes;
    }
    return tp;
}

static Onnx__ValueInfoProto *value_info(pool *po, const ir_tensor *t, bool half_as_float);

/* The value info of a module's buffer: torch.export's mark (onnx_import.c reads it). */
static Onnx__ValueInfoProto *buffer_info(pool *po, const ir_tensor *t) {
    Onnx__ValueInfoProto *vi = value_info(po, t, false);
    Onnx__StringStringEntryProto *kind = palloc(po, 1, sizeof *kind);
    onnx__string_string_entry_proto__init(kind);
    kind->key = "pkg.torch.export.graph_signature.InputSpec.kind";
    kind->value = "BUFFER";
    vi->n_metadata_props = 1;
    vi->metadata_props = palloc(po, 1, sizeof *vi->metadata_props);
    vi->metadata_props[0] = kind;
    return vi;
}

static Onnx__ValueInfoProto *value_info(pool *po, const ir_tensor *t, bool half_as_float) {
    Onnx__ValueInfoProto *vi = palloc(po, 1, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = t->name;
    Onnx__TypeProto *ty = palloc(po, 1, sizeof *ty);
    onnx__type_proto__init(ty);
    Onnx__TypeProto__Tensor *tt = palloc(po, 1, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = true;
    tt->elem_type =
        (int32_t)(half_as_float && ir_dtype_is_half(t->dtype) ? IR_DTYPE_FLOAT : t->dtype);
    Onnx__TensorShapeProto *sh = palloc(po, 1, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)(t->rank > 0 ? t->rank : 0);
    sh->dim = palloc(po, sh->n_dim, sizeof *sh->dim);
    for (size_t i = 0; i < sh->n_dim; i++) {
        Onnx__TensorShapeProto__Dimension *d = palloc(po, 1, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (t->dim_params[i]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = t->dim_params[i];
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = t->dims[i];
        }
        sh->dim[i] = d;
    }
    tt->shape = sh;
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt;
    vi->type = ty;
    return vi;
}

static Onnx__AttributeProto *attr_proto(pool *po, const ir_attr *a) {
    Onnx__AttributeProto *ap = palloc(po, 1, sizeof *ap);
    onnx__attribute_proto__init(ap);
    ap->name = a->name;
    ap->has_type = true;
    switch (a->type) {
    case IR_ATTR_FLOAT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        ap->has_f = true, ap->f = a->f;
        break;
    case IR_ATTR_INT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        ap->has_i = true, ap->i = a->i;
        break;
    case IR_ATTR_STRING:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        ap->has_s = true;
        ap->s.data = (uint8_t *)a->s;
        ap->s.len = strlen(a->s);
        break;
    case IR_ATTR_FLOATS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        ap->n_floats = (size_t)a->n, ap->floats = a->floats;
        break;
    case IR_ATTR_INTS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        ap->n_ints = (size_t)a->n, ap->ints = a->ints;
        break;
    case IR_ATTR_STRINGS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
        ap->n_strings = (size_t)a->n;
        ap->strings = palloc(po, ap->n_strings, sizeof *ap->strings);
        for (int i = 0; i < a->n; i++) {
            ap->strings[i].data = (uint8_t *)a->strings[i];
            ap->strings[i].len = strlen(a->strings[i]);
        }
        break;
    case IR_ATTR_TENSOR:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        ap->t = tensor_proto(po, a->t, a->t->data, a->t->data_bytes);
        break;
    case IR_ATTR_GRAPH: { /* written back as read; its blocks freed with the pool */
        ProtobufCAllocator al = {.alloc = pool_alloc, .free = pool_nofree, .allocator_data = po};
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
        ap->g = onnx__graph_proto__unpack(&al, a->graph_bytes, a->graph);
        OC_ASSERT(ap->g); /* packed by the importer from a parsed GraphProto */
        break;
    }
    }
    return ap;
}

/* The tensor written for tensor t (>= 0): its source where the spec maps it. */
static int tensor_source(const onnx_export_spec *s, int t) {
    for (int hops = 0; s->source && s->source[t] >= 0 && hops < 4; hops++) t = s->source[t];
    return t;
}

/* The name written for tensor t (-1: ""). */
static const char *tensor_name(const ir_graph *g, const onnx_export_spec *s, int t) {
    return t < 0 ? "" : g->tensors[tensor_source(s, t)].name;
}

/* key = value in np's metadata_props (NodeProto field 9, ONNX >= 1.16), which the build's
 * older schema lacks: an unknown field, its data the entry's length prefix and bytes, as
 * protobuf-c stores one it read (onnx_import.c reads it back). */
static void node_meta(pool *po, Onnx__NodeProto *np, const char *key, const char *value) {
    Onnx__StringStringEntryProto e;
    onnx__string_string_entry_proto__init(&e);
    e.key = (char *)key, e.value = (char *)value;
    size_t len = onnx__string_string_entry_proto__get_packed_size(&e), k = 0;
    uint8_t *data = palloc(po, len + 10, 1);
    for (size_t v = len; k == 0 || v; v >>= 7)
        data[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    onnx__string_string_entry_proto__pack(&e, data + k);
    ProtobufCMessageUnknownField *f = palloc(po, 1, sizeof *f);
    f->tag = 9, f->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    f->len = k + len, f->data = data;
    np->base.n_unknown_fields = 1, np->base.unknown_fields = f;
}

static Onnx__NodeProto *node_proto(pool *po, const ir_graph *g, const onnx_export_spec *s,
                                   const ir_node *n) {
    Onnx__NodeProto *np = palloc(po, 1, sizeof *np);
    onnx__node_proto__init(np);
    np->name = n->name;
    np->op_type = n->op_type;
    np->domain = n->domain;
    np->n_input = (size_t)n->n_inputs;
    np->input = palloc(po, np->n_input, sizeof(char *));
    for (int i = 0; i < n->n_inputs; i++) np->input[i] = (char *)tensor_name(g, s, n->inputs[i]);
    /* Trailing omitted outputs are dropped; inner ones stay as "". */
    int nout = n->n_outputs;
    while (nout > 1 && n->outputs[nout - 1] < 0) nout--;
    np->n_output = (size_t)nout;
    np->output = palloc(po, np->n_output, sizeof(char *));
    for (int i = 0; i < nout; i++)
        np->output[i] = n->outputs[i] >= 0 ? g->tensors[n->outputs[i]].name : "";
    /* Standard ops reject unknown attributes (onnx.checker): a plan's outcore_*
     * annotations on them travel in metadata (plan_file.c), never as attributes;
     * a fusion's members (a Gelu from opset 20 on) are not written. */
    bool standard = strcmp(n->domain, OC_DOMAIN) != 0;
    np->attribute = palloc(po, (size_t)n->n_attrs, sizeof *np->attribute);
    for (int i = 0; i < n->n_attrs; i++)
        if (!standard || (strncmp(n->attrs[i].name, "outcore_", 8) != 0 &&
                          strcmp(n->attrs[i].name, "members") != 0))
            np->attribute[np->n_attribute++] = attr_proto(po, &n->attrs[i]);
    const ir_attr *pad = standard ? ir_attr_find(n, OC_ATTR_PADDING_IDX) : NULL;
    if (pad && pad->type == IR_ATTR_INT)
        node_meta(po, np, ONNX_META_PADDING_IDX, pstr(po, oc_sprintf("%" PRId64, pad->i)));
    return np;
}

/* A standard node from names (the unfused chain of a BatchNormRelu or ConvRelu). */
static Onnx__NodeProto *named_node(pool *po, const char *name, const char *op_type, int n_in,
                                   const char *const *in, int n_out, const char *const *out) {
    Onnx__NodeProto *np = palloc(po, 1, sizeof *np);
    onnx__node_proto__init(np);
    np->name = (char *)name;
    np->op_type = (char *)op_type;
    np->domain = "";
    np->n_input = (size_t)n_in, np->n_output = (size_t)n_out;
    np->input = palloc(po, np->n_input, sizeof(char *));
    np->output = palloc(po, np->n_output, sizeof(char *));
    for (int i = 0; i < n_in; i++) np->input[i] = (char *)in[i];
    for (int i = 0; i < n_out; i++) np->output[i] = (char *)out[i];
    np->attribute = palloc(po, 3, sizeof *np->attribute);
    return np;
}

static void add_attr(pool *po, Onnx__NodeProto *np, ir_attr a) {
    ir_attr *k = palloc(po, 1, sizeof *k);
    *k = a;
    np->attribute[np->n_attribute++] = attr_proto(po, k);
}

/* BatchNormRelu (ir/ops/op_bn_relu.c) written back as the chain it replaced:
 * BatchNormalization -> [Add] -> Relu under their own node and tensor names.
 * Returns how many nodes went to dst (0: the node has no chain recorded). */
static int unfused_nodes(pool *po, const ir_graph *g, const onnx_export_spec *s, const ir_node *n,
                         Onnx__NodeProto **dst) {
    const ir_attr *mem = ir_attr_find(n, "members"), *bo = ir_attr_find(n, "bn_outputs");
    const char *add_out = ir_attr_string(n, "add_output", NULL);
    bool residual = n->n_inputs > 5 && n->inputs[5] >= 0;
    if (!mem || !bo || mem->type != IR_ATTR_STRINGS || bo->type != IR_ATTR_STRINGS ||
        mem->n != (residual ? 3 : 2) || bo->n < 1 || bo->n > 5 || residual != (add_out != NULL))
        return 0;
    const char *in[5];
    for (int k = 0; k < 5; k++) in[k] = tensor_name(g, s, n->inputs[k]);
    bool training = ir_attr_int(n, "training_mode", 0) != 0;
    Onnx__NodeProto *bn = named_node(po, mem->strings[0], op_name(OP_BATCH_NORM), 5, in, bo->n,
                                     (const char *const *)bo->strings);
    add_attr(po, bn,
             (ir_attr){.name = "epsilon",
                       .type = IR_ATTR_FLOAT,
                       .f = ir_attr_float(n, "epsilon", 1e-5f)});
    add_attr(po, bn,
             (ir_attr){.name = "momentum",
                       .type = IR_ATTR_FLOAT,
                       .f = ir_attr_float(n, "momentum", 0.9f)});
    if (g->opset >= 14 && training)
        add_attr(po, bn, (ir_attr){.name = "training_mode", .type = IR_ATTR_INT, .i = 1});
    int k = 0;
    dst[k++] = bn;
    const char *z = bo->strings[0];
    if (residual) {
        const char *r = tensor_name(g, s, n->inputs[5]);
        bool first = ir_attr_int(n, "residual_first", 0) != 0;
        const char *add_in[2] = {first ? r : z, first ? z : r};
        dst[k++] = named_node(po, mem->strings[1], op_name(OP_ADD), 2, add_in, 1, &add_out);
        z = add_out;
    }
    const char *relu_out[1] = {g->tensors[n->outputs[0]].name};
    dst[k++] = named_node(po, mem->strings[mem->n - 1], op_name(OP_RELU), 1, &z, 1, relu_out);
    return k;
}

/* ConvRelu (ir/ops/op_conv.c) written back as Conv -> Relu under their own
 * node and tensor names, the Conv with the fused node's convolution attributes. */
static int unfused_conv_relu(pool *po, const ir_graph *g, const onnx_export_spec *s,
                             const ir_node *n, Onnx__NodeProto **dst) {
    const ir_attr *mem = ir_attr_find(n, "members");
    const char *z = ir_attr_string(n, "conv_output", NULL);
    if (!mem || mem->type != IR_ATTR_STRINGS || mem->n != 2 || !z || n->n_inputs > 3) return 0;
    const char *in[3];
    for (int k = 0; k < n->n_inputs; k++) in[k] = tensor_name(g, s, n->inputs[k]);
    Onnx__NodeProto *conv =
        named_node(po, mem->strings[0], op_name(OP_CONV), n->n_inputs, in, 1, &z);
    conv->attribute = palloc(po, (size_t)n->n_attrs, sizeof *conv->attribute);
    for (int i = 0; i < n->n_attrs; i++) {
        const char *a = n->attrs[i].name;
        if (!op_conv_relu_own_attr(a) && strncmp(a, "outcore_", 8))
            conv->attribute[conv->n_attribute++] = attr_proto(po, &n->attrs[i]);
    }
    const char *y = g->tensors[n->outputs[0]].name;
    dst[0] = conv;
    dst[1] = named_node(po, mem->strings[1], op_name(OP_RELU), 1, &z, 1, &y);
    return 2;
}

/* Linear (ir/ops/op_linear.c) written back as the chain it replaced: [Transpose(W)
 * ->] MatMul -> [Add(., B) | Add(B, .)] under their own node and tensor names. */
static int unfused_linear(pool *po, const ir_graph *g, const onnx_export_spec *s, const ir_node *n,
                          Onnx__NodeProto **dst) {
    const ir_attr *mem = ir_attr_find(n, "members");
    const char *wt = ir_attr_string(n, "transpose_output", NULL),
               *z = ir_attr_string(n, "matmul_output", NULL);
    bool tw = ir_attr_int(n, "trans_w", 1) != 0, bias = n->n_inputs > 2 && n->inputs[2] >= 0;
    if (!mem || mem->type != IR_ATTR_STRINGS || tw != (wt != NULL) || bias != (z != NULL) ||
        mem->n != 1 + tw + bias)
        return 0;
    const char *x = tensor_name(g, s, n->inputs[0]), *w = tensor_name(g, s, n->inputs[1]),
               *y = g->tensors[n->outputs[0]].name;
    int k = 0;
    if (tw) {
        dst[k] = named_node(po, mem->strings[k], op_name(OP_TRANSPOSE), 1, &w, 1, &wt);
        static int64_t perm[2] = {1, 0}; /* read when the model is packed */
        add_attr(po, dst[k++],
                 (ir_attr){.name = "perm", .type = IR_ATTR_INTS, .n = 2, .ints = perm});
    }
    const char *mm_in[2] = {x, tw ? wt : w};
    dst[k] = named_node(po, mem->strings[k], op_name(OP_MATMUL), 2, mm_in, 1, bias ? &z : &y);
    k++;
    if (bias) {
        const char *b = tensor_name(g, s, n->inputs[2]);
        bool first = ir_attr_int(n, "bias_first", 0) != 0;
        const char *add_in[2] = {first ? b : z, first ? z : b};
        dst[k] = named_node(po, mem->strings[k], op_name(OP_ADD), 2, add_in, 1, &y);
        k++;
    }
    return k;
}

/* A Gelu below opset 20 (ONNX has none there) written as the exporters write
 * it: GPT-2's tanh form or BERT's erf form. Operands: GELU_X, a constant
 * GELU_C(k), or step k's output. */
#define GELU_X (-1)
#define GELU_NONE (-2)
#define GELU_C(k) (-3 - (k))
typedef struct gelu_step {
    const char *op;
    int a, b;
} gelu_step;
static const gelu_step gelu_tanh[] = {
    {"Mul", GELU_X, GELU_X}, {"Mul", GELU_X, 0},    {"Mul", 1, GELU_C(0)},
    {"Add", GELU_X, 2},      {"Mul", 3, GELU_C(1)}, {"Tanh", 4, GELU_NONE},
    {"Add", 5, GELU_C(2)},   {"Mul", GELU_X, 6},    {"Mul", 7, GELU_C(3)}};
static const float gelu_tanh_c[] = {0.044715f, 0.7978845608f, 1.0f, 0.5f};
static const gelu_step gelu_erf[] = {{"Div", GELU_X, GELU_C(0)},
                                     {"Erf", 0, GELU_NONE},
                                     {"Add", 1, GELU_C(1)},
                                     {"Mul", GELU_X, 2},
                                     {"Mul", 3, GELU_C(2)}};
static const float gelu_erf_c[] = {1.41421356f, 1.0f, 0.5f};

static bool gelu_decomposed(const ir_graph *g, const onnx_export_spec *s, const ir_node *n,
                            bool *tanh_form) {
    *tanh_form = strcmp(ir_attr_string(n, "approximate", "none"), "tanh") == 0;
    return s->unfuse && n->op == OP_GELU && g->opset < OP_GELU_OPSET;
}

/* The decomposition of Gelu n into dst: its constants as Constant nodes (as
 * the exporters write them: an initializer read as data would be a parameter
 * when the model is loaded again), its names from the node's, except that
 * fuse_gelu's "<Tanh or Erf>" OP_GELU_FUSED_SUFFIX names its Tanh or Erf back
 * (so the model reloaded fuses to the same node). Returns how many nodes. */
static int unfused_gelu(pool *po, const ir_graph *g, const onnx_export_spec *s, const ir_node *n,
                        Onnx__NodeProto **dst) {
    bool tanh_form;
    gelu_decomposed(g, s, n, &tanh_form);
    const gelu_step *st = tanh_form ? gelu_tanh : gelu_erf;
    const float *cv = tanh_form ? gelu_tanh_c : gelu_erf_c;
    int ns = tanh_form ? 9 : 5, nc = tanh_form ? 4 : 3, k = 0;
    const char *x = tensor_name(g, s, n->inputs[0]), *c[4], *out[9];
    ir_dtype dt = g->tensors[tensor_source(s, n->inputs[0])].dtype;
    if (!ir_dtype_is_half(dt) || s->half_io_as_float) dt = IR_DTYPE_FLOAT;
    for (int i = 0; i < nc; i++, k++) {
        c[i] = pstr(po, oc_sprintf("%s/Constant_%d_output", n->name, i));
        ir_tensor *t = palloc(po, 1, sizeof *t);
        t->name = (char *)c[i], t->dtype = dt, t->rank = 0;
        uint16_t h = dt == IR_DTYPE_FLOAT ? 0 : half_from_f32(dt, cv[i]);
        t->data = palloc(po, 1, sizeof(float));
        t->data_bytes = (size_t)ir_dtype_size(dt);
        memcpy(t->data, dt == IR_DTYPE_FLOAT ? (const void *)&cv[i] : &h, t->data_bytes);
        char *name = pstr(po, oc_sprintf("%s/Constant_%d", n->name, i));
        dst[k] = named_node(po, name, "Constant", 0, NULL, 1, &c[i]);
        add_attr(po, dst[k], (ir_attr){.name = "value", .type = IR_ATTR_TENSOR, .t = t});
    }
    size_t len = strlen(n->name), sl = strlen(OP_GELU_FUSED_SUFFIX);
    bool fused = len > sl && strcmp(n->name + len - sl, OP_GELU_FUSED_SUFFIX) == 0;
    for (int i = 0; i < ns; i++, k++) {
        const char *in[2];
        int ops[2] = {st[i].a, st[i].b}, n_in = st[i].b == GELU_NONE ? 1 : 2;
        for (int j = 0; j < n_in; j++)
            in[j] = ops[j] == GELU_X ? x : ops[j] >= 0 ? out[ops[j]] : c[-3 - ops[j]];
        bool act = st[i].b == GELU_NONE; /* the Tanh or Erf */
        char *name = act && fused ? pstr(po, oc_sprintf("%.*s", (int)(len - sl), n->name))
                                  : pstr(po, oc_sprintf("%s/%s_%d", n->name, st[i].op, i));
        out[i] = i == ns - 1 ? g->tensors[n->outputs[0]].name
                             : pstr(po, oc_sprintf("%s/%s_%d_output", n->name, st[i].op, i));
        dst[k] = named_node(po, name, st[i].op, n_in, in, 1, &out[i]);
    }
    return k;
}

/* How many nodes n is written as with spec s (a tanh Gelu: 13 at most). */
static int unfused_count(const ir_graph *g, const onnx_export_spec *s, const ir_node *n) {
    bool tanh_form;
    if (gelu_decomposed(g, s, n, &tanh_form)) return tanh_form ? 13 : 8; /* with Constants */
    if (!s->unfuse) return 1;
    if (n->op == OP_LINEAR)
        return 1 + (ir_attr_find(n, "transpose_output") != NULL) +
               (ir_attr_find(n, "matmul_output") != NULL);
    return n->op == OP_BATCH_NORM_RELU ? 3 : n->op == OP_CONV_RELU ? 2 : 1;
}

/* g->host's nodes (host_inputs.h) into out: a Constant node per value they read, then
 * the nodes; returns the count (out NULL: only counts). */
static size_t host_node_protos(pool *po, const ir_graph *h, Onnx__NodeProto **out) {
    size_t n = 0;
    onnx_export_spec plain = {0};
    for (int t = 0; t < h->n_tensors; t++) {
        const ir_tensor *x = &h->tensors[t];
        const char *name = x->name;
        if (!x->is_initializer) continue;
        if (out) {
            out[n] = named_node(po, pstr(po, oc_sprintf("%s/Constant", x->name)), "Constant", 0,
                                NULL, 1, &name);
            add_attr(po, out[n],
                     (ir_attr){.name = "value", .type = IR_ATTR_TENSOR, .t = (ir_tensor *)x});
        }
        n++;
    }
    for (int i = 0; i < h->n_nodes; i++, n++)
        if (out) out[n] = node_proto(po, h, &plain, &h->nodes[i]);
    return n;
}

/* g->host as the model-local function HOST_INPUTS_FUNCTION of OC_DOMAIN. */
static Onnx__FunctionProto *host_function(pool *po, const ir_graph *h,
                                          Onnx__OperatorSetIdProto **opset) {
    Onnx__FunctionProto *fn = palloc(po, 1, sizeof *fn);
    onnx__function_proto__init(fn);
    fn->name = HOST_INPUTS_FUNCTION;
    fn->domain = OC_DOMAIN;
    fn->n_input = (size_t)h->n_inputs;
    fn->input = palloc(po, fn->n_input, sizeof(char *));
    for (int i = 0; i < h->n_inputs; i++) fn->input[i] = h->tensors[h->inputs[i]].name;
    fn->n_output = (size_t)h->n_outputs;
    fn->output = palloc(po, fn->n_output, sizeof(char *));
    for (int i = 0; i < h->n_outputs; i++) fn->output[i] = h->tensors[h->outputs[i]].name;
    fn->node = palloc(po, host_node_protos(po, h, NULL), sizeof *fn->node);
    fn->n_node = host_node_protos(po, h, fn->node);
    fn->n_opset_import = 1;
    fn->opset_import = opset;
    return fn;
}

int onnx_export_graph_buffer(const ir_graph *g, const onnx_export_spec *s, uint8_t **out,
                             size_t *out_len, oc_err *err) {
    *out = NULL;
    *out_len = 0;
    pool po = {0};
    int rc = OC_OK;
    Onnx__GraphProto *gp = palloc(&po, 1, sizeof *gp);
    onnx__graph_proto__init(gp);
    gp->name = g->name && *g->name ? g->name : "outcore";
    /* Initializers the written nodes read; data-less ones become typed inputs. */
    bool *used = palloc(&po, (size_t)g->n_tensors, sizeof(bool));
    bool *node_read = palloc(&po, (size_t)g->n_tensors, sizeof(bool));
    int n_written = 0;
    for (int i = s->node_begin; i < s->node_end; i++) {
        const ir_node *n = &g->nodes[i];
        if (s->skip && s->skip[i]) continue;
        n_written += unfused_count(g, s, n); /* at most */
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) used[tensor_source(s, n->inputs[k])] = true;
    }
    memcpy(node_read, used, (size_t)g->n_tensors * sizeof(bool));
    for (int i = 0; i < s->n_extra; i++) used[s->extra[i]] = true, node_read[s->extra[i]] = false;
    for (int t = 0; t < g->n_tensors; t++) /* buffers only folded nodes read (ir.h), unread */
        if (g->tensors[t].keep_unread && g->tensors[t].data_src == IR_DATA_INLINE && !used[t])
            used[t] = true, node_read[t] = false;
    /* A saved model's floating constants the nodes read (the exporters' Constant nodes: a
     * LayerNorm's epsilon, an attention scale, a mask's fill) are written as Constant nodes
     * again: as initializers read as data they would load as trainable parameters. A
     * module's buffer stays an initializer, marked one as torch.export marks it (its value
     * info's metadata), so the file still holds the state dict and loads it as a buffer. */
    int *as_constant = palloc(&po, (size_t)g->n_tensors, sizeof(int)), n_constants = 0;
    bool *is_constant = palloc(&po, (size_t)g->n_tensors, sizeof(bool));
    for (int t = 0; t < g->n_tensors && s->unfuse; t++) {
        const ir_tensor *x = &g->tensors[t];
        if (node_read[t] && x->is_initializer && x->kind == IR_KIND_CONSTANT &&
            ir_dtype_is_float(x->dtype) && !x->is_buffer && !x->is_frozen)
            as_constant[n_constants++] = t, is_constant[t] = true;
    }
    n_written += n_constants;
    const ir_graph *host = g->host && s->host_inline ? g->host : NULL;
    if (host) n_written += (int)host_node_protos(&po, host, NULL);
    gp->initializer = palloc(&po, (size_t)g->n_tensors, sizeof *gp->initializer);
    gp->input = palloc(&po, (size_t)(g->n_tensors + s->n_inputs), sizeof *gp->input);
    for (int i = 0; i < s->n_inputs; i++)
        gp->input[gp->n_input++] = value_info(&po, &g->tensors[s->inputs[i]], s->half_io_as_float);
    int n_data_inputs = s->n_inputs;
    for (int t = 0; t < g->n_tensors && rc == OC_OK; t++) {
        /* External data is read into the graph's tensor (it becomes inline). */
        ir_tensor *x = (ir_tensor *)&g->tensors[t];
        if (!used[t] || !x->is_initializer) continue;
        if (x->data_src == IR_DATA_EXTERNAL)
            rc = onnx_load_external(g, x, err); /* reads the bytes into x (inline) */
        if (rc) break;
        if (is_constant[t] && x->data_src != IR_DATA_INLINE) {
            rc = oc_fail(err, "constant '%s' has no data", x->name);
            break;
        }
        if (is_constant[t]) continue; /* a Constant node, below */
        if (x->data_src == IR_DATA_INLINE)
            gp->initializer[gp->n_initializer++] = tensor_proto(&po, x, x->data, x->data_bytes);
        else gp->input[gp->n_input++] = value_info(&po, x, false);
        if (x->is_buffer) {
            if (!gp->value_info) gp->value_info = palloc(&po, (size_t)g->n_tensors, sizeof(void *));
            gp->value_info[gp->n_value_info++] = buffer_info(&po, x);
        }
    }
    gp->node = palloc(&po, (size_t)n_written, sizeof *gp->node);
    for (int c = 0; c < n_constants && rc == OC_OK; c++) {
        const ir_tensor *x = &g->tensors[as_constant[c]];
        const char *name = x->name;
        gp->node[gp->n_node] = named_node(&po, pstr(&po, oc_sprintf("%s/Constant", x->name)),
                                          "Constant", 0, NULL, 1, &name);
        add_attr(&po, gp->node[gp->n_node++],
                 (ir_attr){.name = "value", .type = IR_ATTR_TENSOR, .t = (ir_tensor *)x});
    }
    if (host) gp->n_node += host_node_protos(&po, host, gp->node + gp->n_node);
    for (int i = s->node_begin; i < s->node_end; i++) {
        const ir_node *n = &g->nodes[i];
        if (s->skip && s->skip[i]) continue;
        int k = unfused_count(g, s, n) == 1 ? 0
                : n->op == OP_GELU          ? unfused_gelu(&po, g, s, n, gp->node + gp->n_node)
                : n->op == OP_LINEAR        ? unfused_linear(&po, g, s, n, gp->node + gp->n_node)
                : n->op == OP_BATCH_NORM_RELU
                    ? unfused_nodes(&po, g, s, n, gp->node + gp->n_node)
                    : unfused_conv_relu(&po, g, s, n, gp->node + gp->n_node);
        if (k) gp->n_node += (size_t)k;
        else gp->node[gp->n_node++] = node_proto(&po, g, s, n);
    }
    bool uses_oc = false; /* a fused node without its chain recorded stays itself */
    for (size_t i = 0; i < gp->n_node; i++)
        uses_oc = uses_oc || strcmp(gp->node[i]->domain, OC_DOMAIN) == 0;
    gp->n_output = (size_t)s->n_outputs;
    gp->output = palloc(&po, gp->n_output, sizeof *gp->output);
    for (int i = 0; i < s->n_outputs; i++)
        gp->output[i] = value_info(&po, &g->tensors[s->outputs[i]], s->half_io_as_float);

    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = true;
    m.ir_version = g->ir_version >= 7 ? g->ir_version : 7;
    m.producer_name = "outcore";
    m.producer_version = OC_EXPORT_VERSION;
    m.graph = gp;
    Onnx__OperatorSetIdProto *ops = palloc(&po, 2, sizeof *ops);
    Onnx__OperatorSetIdProto *opp[2] = {&ops[0], &ops[1]};
    onnx__operator_set_id_proto__init(&ops[0]);
    onnx__operator_set_id_proto__init(&ops[1]);
    ops[0].domain = "";
    ops[0].has_version = true, ops[0].version = g->opset;
    ops[1].domain = OC_DOMAIN;
    ops[1].has_version = true, ops[1].version = OC_DOMAIN_VERSION;
    m.n_opset_import = uses_oc || (g->host && !s->host_inline) ? 2 : 1;
    m.opset_import = opp;
    Onnx__FunctionProto *fn = g->host && !s->host_inline ? host_function(&po, g->host, opp) : NULL;
    if (fn) m.n_functions = 1, m.functions = &fn;
    /* metadata: the caller's, plus outcore.data_inputs (graph inputs that are data)
     * and ONNX_META_CHANNELS_LAST when a standard node is channels-last */
    char *channels_last = NULL;
    for (int i = s->node_begin; i < s->node_end && !s->logical_layout; i++) {
        const ir_node *n = &g->nodes[i];
        if ((s->skip && s->skip[i]) || !n->channels_last || strcmp(n->domain, OC_DOMAIN) == 0)
            continue;
        char *more = oc_sprintf("%s%s%s", channels_last ? channels_last : "",
                                channels_last ? "\n" : "", n->name);
        oc_free(channels_last);
        channels_last = more;
    }
    int n_meta = s->n_meta + 3;
    Onnx__StringStringEntryProto *kv = palloc(&po, (size_t)n_meta, sizeof *kv);
    Onnx__StringStringEntryProto **kvp = palloc(&po, (size_t)n_meta, sizeof *kvp);
    for (int i = 0; i < s->n_meta; i++) {
        onnx__string_string_entry_proto__init(&kv[i]);
        kv[i].key = (char *)s->meta[2 * i];
        kv[i].value = (char *)s->meta[2 * i + 1];
        kvp[i] = &kv[i];
    }
    m.n_metadata_props = (size_t)s->n_meta;
    {
        onnx__string_string_entry_proto__init(&kv[s->n_meta]);
        kv[s->n_meta].key = "outcore.data_inputs";
        kv[s->n_meta].value = pstr(&po, oc_sprintf("%d", n_data_inputs));
        kvp[s->n_meta] = &kv[s->n_meta];
        m.n_metadata_props++;
    }
    if (channels_last) {
        onnx__string_string_entry_proto__init(&kv[m.n_metadata_props]);
        kv[m.n_metadata_props].key = ONNX_META_CHANNELS_LAST;
        kv[m.n_metadata_props].value = pstr(&po, channels_last);
        kvp[m.n_metadata_props] = &kv[m.n_metadata_props];
        m.n_metadata_props++;
    }
    m.metadata_props = kvp;
    if (s->seal) {
        onnx__string_string_entry_proto__init(&kv[m.n_metadata_props]);
        kv[m.n_metadata_props].key = MODEL_SEAL_KEY;
        kv[m.n_metadata_props].value = pstr(&po, model_seal_text(&m));
        kvp[m.n_metadata_props] = &kv[m.n_metadata_props];
        m.n_metadata_props++;
    }
    if (rc == OC_OK) {
        size_t len = onnx__model_proto__get_packed_size(&m);
        uint8_t *buf = oc_malloc(len ? len : 1);
        onnx__model_proto__pack(&m, buf);
        *out = buf;
        *out_len = len;
    }
    pool_free(&po);
    return rc;
}

int onnx_export_graph(const ir_graph *g, const onnx_export_spec *s, const char *path, oc_err *err) {
    uint8_t *buf;
    size_t len;
    int rc = onnx_export_graph_buffer(g, s, &buf, &len, err);
    if (rc == OC_OK) rc = oc_out_write_file(path, buf, len, err);
    oc_free(buf);
    return rc;
}

int onnx_export_tensor(const ir_tensor *t, const void *data, const char *path, oc_err *err) {
    pool po = {0};
    int64_t bytes = 0;
    if (!ir_tensor_bytes(t, &bytes)) bytes = 0;
    Onnx__TensorProto *tp = tensor_proto(&po, t, data, (size_t)bytes);
    size_t len = onnx__tensor_proto__get_packed_size(tp);
    uint8_t *buf = oc_malloc(len ? len : 1);
    onnx__tensor_proto__pack(tp, buf);
    int rc = oc_out_write_file(path, buf, len, err);
    oc_free(buf);
    pool_free(&po);
    return rc;
}
