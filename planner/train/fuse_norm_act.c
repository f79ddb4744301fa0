/* fuse_norm_act.c — see fuse_norm_act.h. */
#include "train/fuse_norm_act.h"

#include <string.h>

#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"

static bool same_dims(const ir_tensor *a, const ir_tensor *b) {
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int64_t)) == 0;
}

/* A BatchNormalization whose only read output is Y, read by `reader` alone: its running
 * statistics read by no node (the fused node takes the Relu's place, after any reader of
 * them between the two: a fuzzed model's, found 2026-11-30), its opset <= 13 saved ones
 * not even a graph output. */
static bool fusable_bn(const ir_graph *g, int p, int reader) {
    if (p < 0 || g->nodes[p].op != OP_BATCH_NORM) return false;
    const ir_node *bn = &g->nodes[p];
    if (ir_tensor_sole_consumer(g, bn->outputs[0]) != reader) return false;
    if (!ir_dtype_is_compute(g->tensors[bn->inputs[0]].dtype)) return false;
    for (int o = 1; o < bn->n_outputs; o++) {
        int t = bn->outputs[o];
        if (t >= 0 && (g->tensors[t].n_consumers || (o >= 3 && g->tensors[t].is_graph_output)))
            return false;
    }
    return true;
}

typedef struct match {
    int bn, add, relu; /* nodes (add -1: none) */
    int conv;          /* a Conv -> Relu instead (bn -1) */
    int residual;      /* tensor R, or -1 */
    bool residual_first;
} match;

static bool match_at(const ir_graph *g, int r, match *m) {
    const ir_node *relu = &g->nodes[r];
    int t = relu->inputs[0], p = g->tensors[t].producer;
    *m = (match){.bn = -1, .add = -1, .relu = r, .residual = -1, .conv = -1};
    if (p < 0 || ir_tensor_sole_consumer(g, t) != r) return false;
    if (g->nodes[p].op == OP_CONV && ir_dtype_is_compute(g->tensors[t].dtype)) {
        m->conv = p;
        return true;
    }
    if (fusable_bn(g, p, r)) {
        m->bn = p;
        return true;
    }
    const ir_node *add = &g->nodes[p];
    if (add->op != OP_ADD || add->n_inputs != 2) return false;
    for (int k = 0; k < 2; k++) {
        int z = add->inputs[k], other = add->inputs[1 - k];
        if (z < 0 || other < 0 || z == other) continue;
        int q = g->tensors[z].producer;
        if (!fusable_bn(g, q, p)) continue;
        const ir_tensor *zt = &g->tensors[z], *rt = &g->tensors[other];
        if (!same_dims(zt, rt) || rt->dtype != zt->dtype) continue;
        m->bn = q, m->add = p, m->residual = other, m->residual_first = k == 1;
        return true;
    }
    return false;
}

static void add_attr(ir_graph *g, int n, ir_attr a) { ir_node_add_attr(g, n, &a); }

/* A node of kind op named after the Relu r, inserted before it, taking its
 * output Y (the Relu writes a placeholder until removed). Its index. */
static int insert_fused(ir_graph *g, int r, op_kind op) {
    int y = g->nodes[r].outputs[0];
    char *name = oc_sprintf("%s/fused", g->nodes[r].name);
    char *dummy = oc_sprintf("%s/unfused", g->tensors[y].name);
    int ph = ir_tensor_add(g, dummy, IR_DTYPE_FLOAT);
    g->nodes[r].outputs[0] = ph;
    g->tensors[ph].producer = r;
    g->tensors[y].producer = -1;
    int n = ir_node_insert(g, r, name, op_name(op), OC_DOMAIN);
    g->nodes[n].op = op;
    oc_free(name), oc_free(dummy);
    return n;
}

static int infer_fused(ir_graph *g, int n, oc_err *err) {
    int rc = op_infer(g, &g->nodes[n], err);
    return rc ? oc_fail_prefix(err, "node '%s'", g->nodes[n].name) : OC_OK;
}

/* ConvRelu (ir/ops/op_conv.c): the Conv's inputs and attributes, the Relu's
 * output; backward: the bias gradient with dZ (fused_backward). */
static int replace_conv(ir_graph *g, const match *m, bool backward, oc_err *err) {
    char *members[2] = {oc_strdup(g->nodes[m->conv].name), oc_strdup(g->nodes[m->relu].name)};
    char *z = oc_strdup(g->tensors[g->nodes[m->conv].outputs[0]].name);
    int y = g->nodes[m->relu].outputs[0];
    int n = insert_fused(g, m->relu, OP_CONV_RELU);
    for (int k = 0; k < g->nodes[m->conv].n_inputs; k++)
        ir_node_add_input(g, n, g->nodes[m->conv].inputs[k]);
    ir_node_add_output(g, n, y);
    for (int i = 0; i < g->nodes[m->conv].n_attrs; i++) {
        ir_attr a = g->nodes[m->conv].attrs[i]; /* shallow view; ir_node_add_attr copies */
        ir_node_add_attr(g, n, &a);
    }
    add_attr(g, n,
             (ir_attr){.name = "members", .type = IR_ATTR_STRINGS, .n = 2, .strings = members});
    add_attr(g, n, (ir_attr){.name = "conv_output", .type = IR_ATTR_STRING, .s = z});
    if (backward) add_attr(g, n, (ir_attr){.name = "fused_backward", .type = IR_ATTR_INT, .i = 1});
    oc_free(members[0]), oc_free(members[1]), oc_free(z);
    return infer_fused(g, n, err);
}

/* The fused node takes the Relu's place and output; the chain's nodes go. */
static int replace(ir_graph *g, const match *m, bool backward, oc_err *err) {
    if (m->conv >= 0) return replace_conv(g, m, backward, err);
    const ir_node *bn = &g->nodes[m->bn];
    const op_bn_args *ba = &op_args_of(bn)->bn;
    int y = g->nodes[m->relu].outputs[0];
    char *members[3], *bn_outs[5], *add_out = NULL;
    int nm = 0, no = bn->n_outputs;
    members[nm++] = oc_strdup(bn->name);
    for (int o = 0; o < no; o++)
        bn_outs[o] = oc_strdup(bn->outputs[o] >= 0 ? g->tensors[bn->outputs[o]].name : "");
    if (m->add >= 0) {
        members[nm++] = oc_strdup(g->nodes[m->add].name);
        add_out = oc_strdup(g->tensors[g->nodes[m->add].outputs[0]].name);
    }
    members[nm++] = oc_strdup(g->nodes[m->relu].name);
    int n = insert_fused(g, m->relu, OP_BATCH_NORM_RELU);
    bn = &g->nodes[m->bn]; /* before the Relu: not moved, but the array may have been */
    for (int k = 0; k < 5; k++) ir_node_add_input(g, n, bn->inputs[k]);
    if (m->residual >= 0) ir_node_add_input(g, n, m->residual);
    ir_node_add_output(g, n, y);
    if (ba->training && bn->n_outputs >= 3 && bn->outputs[1] >= 0 && bn->outputs[2] >= 0) {
        for (int o = 1; o < 3; o++) { /* the running statistics move to the fused node */
            int t = bn->outputs[o];
            g->nodes[m->bn].outputs[o] = -1;
            g->tensors[t].producer = -1;
            ir_node_add_output(g, n, t);
        }
    }
    add_attr(g, n, (ir_attr){.name = "epsilon", .type = IR_ATTR_FLOAT, .f = ba->epsilon});
    add_attr(g, n, (ir_attr){.name = "momentum", .type = IR_ATTR_FLOAT, .f = ba->momentum});
    add_attr(g, n, (ir_attr){.name = "training_mode", .type = IR_ATTR_INT, .i = ba->training});
    add_attr(g, n,
             (ir_attr){.name = "members", .type = IR_ATTR_STRINGS, .n = nm, .strings = members});
    add_attr(g, n,
             (ir_attr){.name = "bn_outputs", .type = IR_ATTR_STRINGS, .n = no, .strings = bn_outs});
    if (add_out)
        add_attr(g, n, (ir_attr){.name = "add_output", .type = IR_ATTR_STRING, .s = add_out});
    if (backward && m->residual < 0)
        add_attr(g, n, (ir_attr){.name = "fused_backward", .type = IR_ATTR_INT, .i = 1});
    if (m->residual_first)
        add_attr(g, n, (ir_attr){.name = "residual_first", .type = IR_ATTR_INT, .i = 1});
    for (int i = 0; i < nm; i++) oc_free(members[i]);
    for (int i = 0; i < no; i++) oc_free(bn_outs[i]);
    oc_free(add_out);
    return infer_fused(g, n, err);
}

int fuse_norm_act(ir_graph *g, bool backward, int *n_fused, oc_err *err) {
    *n_fused = 0;
    bool *remove = NULL;
    for (int r = 0; r < g->n_nodes; r++) {
        if (g->nodes[r].op != OP_RELU) continue;
        match m;
        if (!match_at(g, r, &m)) continue;
        if (replace(g, &m, backward, err)) {
            oc_free(remove);
            return OC_ERR;
        }
        /* the insert moved every node from the Relu on up by one */
        remove = oc_realloc(remove, ((size_t)g->n_nodes + 1) * sizeof(bool));
        memset(remove, 0, ((size_t)g->n_nodes + 1) * sizeof(bool));
        int head = m.conv >= 0 ? m.conv : m.bn;
        remove[head] = true; /* Conv or BN, and Add, precede the Relu, which moved up by one */
        if (m.add >= 0) remove[m.add] = true;
        remove[m.relu + 1] = true;
        ir_graph_remove_nodes(g, remove);
        (*n_fused)++;
        r = head - 1; /* indices from the head on changed */
    }
    oc_free(remove);
    return OC_OK;
}
