/* fuse_grad_sum.c — see fuse_grad_sum.h. */
#include "train/fuse_grad_sum.h"

#include <string.h>

#include "ir/ops/op_table.h"

static bool alike(const ir_tensor *a, const ir_tensor *b) {
    return a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

/* The Sum node that ReluGrad node r folds in, or -1: its dY the output of a
 * backward Sum of two partials of dY's shape and type, read by r alone. */
static int foldable_sum(const ir_graph *g, int tg_forward, int r) {
    const ir_node *n = &g->nodes[r];
    if (n->op != OP_RELU_GRAD || n->n_inputs != 2 || n->inputs[0] < 0) return -1;
    const ir_tensor *d = &g->tensors[n->inputs[0]];
    int s = d->producer;
    if (s < 0 || g->nodes[s].op != OP_SUM || g->nodes[s].n_inputs != 2 || d->n_consumers != 1 ||
        d->is_graph_output || s < tg_forward)
        return -1;
    const ir_node *sum = &g->nodes[s];
    for (int i = 0; i < 2; i++)
        if (sum->inputs[i] < 0 || !alike(&g->tensors[sum->inputs[i]], d)) return -1;
    return s;
}

/* tg's per-node and per-tensor arrays after ir_graph_remove_nodes_map. */
static void remap(train_graph *tg, int n_nodes, int n_tensors, const int *nmap, const int *tmap) {
    for (int i = 0; i < n_nodes; i++) {
        if (nmap[i] < 0) continue;
        tg->phase[nmap[i]] = tg->phase[i];
        int f = tg->fwd_of[i];
        tg->fwd_of[nmap[i]] = f >= 0 ? nmap[f] : -1;
    }
    for (int t = 0; t < n_tensors; t++) {
        if (tmap[t] < 0) continue;
        int d = tg->grad_of[t];
        tg->grad_of[tmap[t]] = d >= 0 ? tmap[d] : -1;
    }
    if (tg->loss_tensor >= 0) tg->loss_tensor = tmap[tg->loss_tensor];
    if (tg->label_tensor >= 0) tg->label_tensor = tmap[tg->label_tensor];
}

void fuse_grad_sum(train_graph *tg, int *n_folded) {
    ir_graph *g = tg->g;
    *n_folded = 0;
    int nn = g->n_nodes, nt = g->n_tensors;
    bool *remove = oc_calloc((size_t)nn + 1, sizeof(bool));
    for (int r = tg->n_forward; r < nn; r++) {
        int s = foldable_sum(g, tg->n_forward, r);
        if (s < 0) continue;
        int a = g->nodes[s].inputs[0], b = g->nodes[s].inputs[1], d = g->nodes[r].inputs[0];
        g->nodes[r].inputs[0] = a; /* a's and b's consumer lists gain r; the Sum's go with it */
        ir_tensor *x = &g->tensors[a];
        oc_grow((void **)&x->consumers, &x->cap_consumers, (size_t)x->n_consumers + 1, sizeof(int));
        x->consumers[x->n_consumers++] = r;
        ir_node_add_input(g, r, b);
        for (int t = 0; t < nt; t++) /* Y's gradient is no tensor now */
            if (tg->grad_of[t] == d) tg->grad_of[t] = -1;
        remove[s] = true;
        (*n_folded)++;
    }
    if (*n_folded) {
        int *nmap = oc_malloc((size_t)nn * sizeof(int)),
            *tmap = oc_malloc((size_t)nt * sizeof(int));
        ir_graph_remove_nodes_map(g, remove, nmap, tmap);
        remap(tg, nn, nt, nmap, tmap);
        oc_free(nmap);
        oc_free(tmap);
    }
    oc_free(remove);
}
