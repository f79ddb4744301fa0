/* op_table.c — the registry: every supported op, listed once. */
#include "ir/ops/op_table.h"

#include <stdio.h>
#include <string.h>

#define OP_LIST_DECL(kind, name, domain, def, kern) extern const op_def op_def_##def;
OC_OPS_COMPUTE(OP_LIST_DECL)
OC_OPS_FOLD(OP_LIST_DECL)
OC_OPS_LOWERED(OP_LIST_DECL)
OC_OPS_COPY(OP_LIST_DECL)
#undef OP_LIST_DECL

#define ONNX ""
#define OC OC_DOMAIN
typedef struct op_entry {
    const char *name, *domain;
    const op_def *def;
} op_entry;

static const op_entry op_entries[OP__COUNT] = {
#define OP_LIST_ENTRY(kind, name, domain, def, kern) [OP_##kind] = {name, domain, &op_def_##def},
    OC_OPS_COMPUTE(OP_LIST_ENTRY) OC_OPS_FOLD(OP_LIST_ENTRY) OC_OPS_LOWERED(OP_LIST_ENTRY)
        OC_OPS_COPY(OP_LIST_ENTRY)
#undef OP_LIST_ENTRY
};
#undef ONNX
#undef OC

static bool same_domain(const char *a, const char *b) {
    if (!a || strcmp(a, "ai.onnx") == 0) a = "";
    if (!b || strcmp(b, "ai.onnx") == 0) b = "";
    return strcmp(a, b) == 0;
}

int op_lookup(const char *domain, const char *op_type) {
    for (int k = 0; k < OP__COUNT; k++)
        if (strcmp(op_entries[k].name, op_type) == 0 && same_domain(op_entries[k].domain, domain))
            return k;
    if (domain && strcmp(domain, OC_DOMAIN) == 0) return op_lookup("", op_type); /* op_table.h */
    return OP_UNKNOWN;
}

static const op_def *op_def_kind(op_kind k) {
    OC_ASSERT(k >= 0 && k < OP__COUNT);
    return op_entries[k].def;
}

const op_def *op_def_of(const ir_node *n) { return op_def_kind((op_kind)n->op); }

const char *op_name(op_kind k) {
    OC_ASSERT(k >= 0 && k < OP__COUNT);
    return op_entries[k].name;
}

const char *op_domain(op_kind k) {
    OC_ASSERT(k >= 0 && k < OP__COUNT);
    return op_entries[k].domain;
}

int op_node_add(ir_graph *g, const char *name, op_kind k) {
    int n = ir_node_add(g, name, op_name(k), op_domain(k));
    g->nodes[n].op = (int)k;
    return n;
}

int op_node_insert(ir_graph *g, int at, const char *name, op_kind k) {
    int n = ir_node_insert(g, at, name, op_name(k), op_domain(k));
    g->nodes[n].op = (int)k;
    return n;
}

void op_supported_list(char *buf, size_t cap) {
    size_t off = 0;
    buf[0] = '\0';
    for (int k = 0; k < OP__COUNT && off < cap; k++) {
        if (*op_entries[k].domain) continue; /* project-domain ops are ours, not the model's */
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? ", " : "", op_entries[k].name);
    }
}

bool op_is_conv(int op) {
    switch (op) {
    case OP_CONV:
    case OP_CONV_RELU:
    case OP_CONV_TRANSPOSE:
    case OP_CONV_BACKWARD_DATA:
    case OP_CONV_BACKWARD_FILTER:
    case OP_CONV_TRANSPOSE_BACKWARD_DATA:
    case OP_CONV_TRANSPOSE_BACKWARD_FILTER: return true;
    default: return false;
    }
}

bool op_reads_channel_axis(int op) {
    if (op_is_conv(op)) return true;
    switch (op) {
    case OP_RELU_GRAD_BIAS: /* dB sums over all but the channels */
    case OP_BATCH_NORM:
    case OP_BATCH_NORM_GRAD:
    case OP_BATCH_NORM_RELU:
    case OP_BATCH_NORM_RELU_GRAD:
    case OP_MAX_POOL:
    case OP_MAX_POOL_GRAD:
    case OP_AVERAGE_POOL:
    case OP_AVERAGE_POOL_GRAD:
    case OP_GLOBAL_AVERAGE_POOL:
    case OP_GLOBAL_AVERAGE_POOL_GRAD:
    case OP_CONCAT: /* its axis is one of (N, C, H, W) */
    case OP_CONCAT_GRAD: return true;
    default: return false;
    }
}

op_role op_input_role(const op_def *d, int i) {
    if (d->n_roles == 0) return OP_IN_DATA;
    return d->roles[i < d->n_roles ? i : d->n_roles - 1];
}

static double tensor_bytes_d(const ir_graph *g, int t) {
    int64_t b = 0;
    if (t >= 0) ir_tensor_bytes(&g->tensors[t], &b);
    return (double)b;
}

int op_output_alias(const ir_node *n, int o) {
    const op_def *d = op_def_of(n);
    if (d->alias) return d->alias(n, o);
    return o >= 0 && o < d->n_aliases && o < n->n_outputs ? d->aliases[o] : -1;
}

void op_cost_default(const ir_graph *g, const ir_node *n, op_cost *c) {
    c->flops = c->bytes_read = c->bytes_written = 0;
    for (int i = 0; i < n->n_inputs; i++) c->bytes_read += tensor_bytes_d(g, n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++) {
        int64_t numel = 0;
        if (n->outputs[i] >= 0) ir_tensor_numel(&g->tensors[n->outputs[i]], &numel);
        c->flops += (double)numel;
        c->bytes_written += tensor_bytes_d(g, n->outputs[i]);
    }
}

static void cost_of(const ir_graph *g, const ir_node *n, op_cost *c) {
    const op_def *d = op_def_of(n);
    if (d->cost) d->cost(g, n, c);
    else op_cost_default(g, n, c);
}

void op_cost_of(const ir_graph *g, const ir_node *n, op_cost *c) {
    if (!n->channels_last) {
        cost_of(g, n, c);
        return;
    }
    ir_node_view v;
    ir_node_view_init(&v, g, n);
    ir_node_view_logical(&v);
    cost_of(&v.g, &v.n, c);
    ir_node_view_free(&v);
}

static int decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const op_def *d = op_def_of(n);
    return d->decode ? d->decode(g, n, err) : OC_OK;
}

/* The node's rank-4 tensors between their stored and logical order, each once. */
static void permute_node(ir_graph *g, const ir_node *n, bool to_logical, bool outputs) {
    for (int k = 0; k < n->n_inputs + (outputs ? n->n_outputs : 0); k++) {
        int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs], seen = 0;
        for (int j = 0; j < k && t >= 0; j++)
            seen |= (j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs]) == t;
        if (t < 0 || seen || g->tensors[t].rank != 4) continue;
        if (to_logical) ir_dims_to_logical(g->tensors[t].dims);
        else ir_dims_to_nhwc(g->tensors[t].dims);
    }
}

/* A channels-last node: its rules (shapes, arguments — a decoder may look
 * past the node, at producers) run with its tensors in the logical order,
 * in place, then back; the outputs come out channels-last. */
static int infer_logical(ir_graph *g, ir_node *n, bool infer, oc_err *err) {
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        const ir_tensor *t =
            k < n->n_inputs ? ir_node_in(g, n, k) : ir_node_out(g, n, k - n->n_inputs);
        if (t && t->rank == 4 && !ir_tensor_shape_known(t) && (k < n->n_inputs || !infer))
            return oc_fail(err, "channels-last: '%s' has no static shape", t->name);
    }
    /* outputs about to be inferred are not permuted in (infer sets them) */
    permute_node(g, n, true, !infer);
    int rc = infer ? op_def_of(n)->infer(g, n, g->opset, err) : OC_OK;
    if (rc == OC_OK) rc = decode(g, n, err);
    permute_node(g, n, false, true); /* the outputs: permuted in, or inferred logical */
    return rc;
}

int op_infer(ir_graph *g, ir_node *n, oc_err *err) {
    n->channels_last = ir_attr_int(n, IR_ATTR_CHANNELS_LAST, 0) != 0;
    if (n->channels_last && !op_reads_channel_axis(n->op))
        return oc_fail(err, "attribute %s on an op without a channel axis", IR_ATTR_CHANNELS_LAST);
    if (n->channels_last) return infer_logical(g, n, true, err);
    if (op_def_of(n)->infer(g, n, g->opset, err)) return OC_ERR;
    return decode(g, n, err);
}

int op_decode(ir_graph *g, ir_node *n, oc_err *err) {
    if (n->channels_last) return infer_logical(g, n, false, err);
    return decode(g, n, err);
}
