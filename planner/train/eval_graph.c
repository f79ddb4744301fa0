/* eval_graph.c — see eval_graph.h. */
#include "train/eval_graph.h"

#include <string.h>

#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"

/* Keeps outputs [0, keep) of node n; the rest lose their producer. */
static void drop_outputs(ir_graph *g, ir_node *n, int keep) {
    for (int o = keep; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) g->tensors[n->outputs[o]].producer = -1;
    if (n->n_outputs > keep) n->n_outputs = keep;
}

/* Node i stops reading tensor t (one use). */
static void drop_use(ir_graph *g, int t, int i) {
    ir_tensor *x = &g->tensors[t];
    for (int c = 0; c < x->n_consumers; c++)
        if (x->consumers[c] == i) {
            x->consumers[c] = x->consumers[--x->n_consumers];
            return;
        }
}

/* Node i becomes Identity(its input `from`) with one output. */
static void to_identity(ir_graph *g, int i, int from) {
    ir_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++)
        if (k != from && n->inputs[k] >= 0) drop_use(g, n->inputs[k], i);
    n->inputs[0] = n->inputs[from];
    n->n_inputs = 1;
    drop_outputs(g, n, 1);
    n->op = OP_IDENTITY;
    oc_free(n->op_type);
    n->op_type = oc_strdup(op_name(OP_IDENTITY));
}

static const ir_node *producer_of(const ir_graph *g, int t, op_kind op) {
    if (t < 0 || g->tensors[t].producer < 0) return NULL;
    const ir_node *p = &g->nodes[g->tensors[t].producer];
    return p->op == (int)op ? p : NULL;
}

/* Tensor t is a random keep-mask scaled by 1/p: Div(Cast(Less(RandomUniformLike, p)), p). */
static bool is_random_mask(const ir_graph *g, int t) {
    const ir_node *div = producer_of(g, t, OP_DIV);
    if (!div) return false;
    const ir_node *cast = producer_of(g, div->inputs[0], OP_CAST);
    if (!cast) cast = producer_of(g, div->inputs[0], OP_CAST_LIKE);
    const ir_node *less = cast ? producer_of(g, cast->inputs[0], OP_LESS) : NULL;
    return less && producer_of(g, less->inputs[0], OP_RANDOM_UNIFORM_LIKE);
}

int eval_graph_make(ir_graph *g, oc_err *err) {
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->op == OP_BATCH_NORM && op_args_of(n)->bn.training) {
            ir_attr *a = (ir_attr *)ir_attr_find(n, "training_mode");
            if (a) a->i = 0;
            drop_outputs(g, n, 1);
        } else if (n->op == OP_DROPOUT) {
            to_identity(g, i, 0);
        } else if (n->op == OP_FUSED_ATTENTION && op_args_of(n)->attention.dropout_ratio > 0.0f) {
            ir_attr *a = (ir_attr *)ir_attr_find(n, "dropout_ratio"); /* its Dropout, off */
            a->f = 0.0f;
        } else if (n->op == OP_MUL &&
                   (is_random_mask(g, n->inputs[1]) || is_random_mask(g, n->inputs[0]))) {
            to_identity(g, i, is_random_mask(g, n->inputs[1]) ? 0 : 1);
        } else {
            continue;
        }
        if (op_infer(g, n, err)) return oc_fail_prefix(err, "node '%s'", n->name);
    }
    /* Remove what no graph output needs, walking back from the outputs. */
    bool *needed = oc_calloc((size_t)g->n_tensors + 1, sizeof(bool));
    bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    for (int i = 0; i < g->n_outputs; i++) needed[g->outputs[i]] = true;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        const ir_node *n = &g->nodes[i];
        bool live = false;
        for (int o = 0; o < n->n_outputs; o++)
            live = live || (n->outputs[o] >= 0 && needed[n->outputs[o]]);
        remove[i] = !live;
        for (int k = 0; live && k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) needed[n->inputs[k]] = true;
    }
    ir_graph_remove_nodes(g, remove);
    oc_free(needed);
    oc_free(remove);
    return OC_OK;
}
