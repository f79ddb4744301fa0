/* op_table.c — the registry: every supported op, listed once. */
#include "ir/ops/op_table.h"

#include <stdio.h>
#include <string.h>

#define OP_LIST_DECL(kind, name, domain, def, kern) extern const op_def op_def_##def;
OC_OPS_COMPUTE(OP_LIST_DECL)
OC_OPS_FOLD(OP_LIST_DECL)
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
    OC_OPS_COMPUTE(OP_LIST_ENTRY) OC_OPS_FOLD(OP_LIST_ENTRY) OC_OPS_COPY(OP_LIST_ENTRY)
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

static const char *op_domain(op_kind k) {
    OC_ASSERT(k >= 0 && k < OP__COUNT);
    return op_entries[k].domain;
}

int op_node_add(ir_graph *g, const char *name, op_kind k) {
    int n = ir_node_add(g, name, op_name(k), op_domain(k));
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

op_role op_input_role(const op_def *d, int i) {
    if (d->n_roles == 0) return OP_IN_DATA;
    return d->roles[i < d->n_roles ? i : d->n_roles - 1];
}

static double tensor_bytes_d(const ir_graph *g, int t) {
    int64_t b = 0;
    if (t >= 0) ir_tensor_bytes(&g->tensors[t], &b);
    return (double)b;
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

void op_cost_of(const ir_graph *g, const ir_node *n, op_cost *c) {
    const op_def *d = op_def_of(n);
    if (d->cost) d->cost(g, n, c);
    else op_cost_default(g, n, c);
}

int op_infer(ir_graph *g, ir_node *n, oc_err *err) {
    if (op_def_of(n)->infer(g, n, g->opset, err)) return OC_ERR;
    return op_decode(g, n, err);
}

int op_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const op_def *d = op_def_of(n);
    return d->decode ? d->decode(g, n, err) : OC_OK;
}
