/* skip_dropout.c — see skip_dropout.h. */
#include "train/skip_dropout.h"

#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"

/* Node n passes its input through unchanged, and nothing else reads it. */
static bool skippable(const ir_graph *g, const ir_node *n) {
    if (n->op != OP_DROPOUT || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 ||
        n->outputs[0] < 0)
        return false;
    if (op_args_of(n)->dropout.ratio != 0.0f) return false;
    if (n->n_outputs > 1 && n->outputs[1] >= 0) {
        const ir_tensor *mask = &g->tensors[n->outputs[1]];
        if (mask->n_consumers > 0 || mask->is_graph_output) return false;
    }
    const ir_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
    return !y->is_graph_output && x->dtype == y->dtype;
}

void skip_identity_dropouts(ir_graph *g, int *n_skipped) {
    *n_skipped = 0;
    bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (!skippable(g, n)) continue;
        int x = n->inputs[0], y = n->outputs[0];
        ir_tensor *tx = &g->tensors[x], *ty = &g->tensors[y];
        for (int c = 0; c < ty->n_consumers; c++) { /* y's readers read x */
            ir_node *r = &g->nodes[ty->consumers[c]];
            for (int k = 0; k < r->n_inputs; k++)
                if (r->inputs[k] == y) r->inputs[k] = x;
            oc_grow((void **)&tx->consumers, &tx->cap_consumers, (size_t)tx->n_consumers + 1,
                    sizeof(int));
            tx->consumers[tx->n_consumers++] = ty->consumers[c];
        }
        ty->n_consumers = 0;
        remove[i] = true;
        (*n_skipped)++;
    }
    if (*n_skipped) ir_graph_remove_nodes(g, remove);
    oc_free(remove);
}
