/* lifetimes.c — see lifetimes.h. */
#include "plan/lifetimes.h"

#include <string.h>

#include "ir/ops/op_table.h"
#include "plan/plan_file.h"

int64_t plan_align_up(int64_t x) { return ir_device_align_up(x); }

void plan_storage_roots(const train_graph *tg, int *root) {
    const ir_graph *g = tg->g;
    int nt = g->n_tensors;
    for (int t = 0; t < nt; t++) {
        int r = t, hops = 0;
        while (tg->alias_of[r] >= 0 && hops++ <= nt) r = tg->alias_of[r];
        root[t] = r;
    }
    for (int i = 0; i < g->n_nodes; i++) { /* in order: a view of a view takes the first's root */
        int s = train_view_source(tg, i);
        if (s >= 0) root[g->nodes[i].outputs[0]] = root[s];
    }
}

void plan_lifetimes_compute(const train_graph *tg, plan_lifetimes *lt) {
    const ir_graph *g = tg->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    lt->n = nt;
    lt->root = oc_malloc(((size_t)nt + 1) * sizeof(int));
    lt->first = oc_malloc(((size_t)nt + 1) * sizeof(int));
    lt->last = oc_malloc(((size_t)nt + 1) * sizeof(int));
    lt->host = oc_calloc((size_t)nt + 1, 1);
    lt->bytes = oc_calloc((size_t)nt + 1, sizeof(int64_t));
    plan_storage_roots(tg, lt->root);
    for (int t = 0; t < nt; t++) {
        lt->first[t] = nn + 1;
        lt->last[t] = -2;
    }
#define TOUCH(t, pos)                                                                              \
    do {                                                                                           \
        int r_ = lt->root[t];                                                                      \
        if ((pos) < lt->first[r_]) lt->first[r_] = (pos);                                          \
        if ((pos) > lt->last[r_]) lt->last[r_] = (pos);                                            \
    } while (0)
    for (int i = 0; i < g->n_inputs; i++) TOUCH(g->inputs[i], -1);
    for (int i = 0; i < nn; i++) {
        const ir_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) TOUCH(n->inputs[k], i);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) TOUCH(n->outputs[k], i);
        if (op_is_swap_out(n) && n->n_outputs > 0 && n->outputs[0] >= 0)
            lt->host[lt->root[n->outputs[0]]] = 1;
    }
    for (int t = 0; t < nt; t++)
        if (g->tensors[t].is_graph_output) TOUCH(t, nn);
#undef TOUCH
    for (int t = 0; t < nt; t++) {
        if (lt->root[t] != t || lt->last[t] < lt->first[t]) continue;
        if (g->tensors[t].is_initializer) lt->first[t] = -1, lt->last[t] = nn;
        int64_t b = 0;
        if (!ir_tensor_bytes(&g->tensors[t], &b)) b = 0;
        lt->bytes[t] = plan_align_up(b);
    }
}

void plan_lifetimes_free(plan_lifetimes *lt) {
    oc_free(lt->root), oc_free(lt->first), oc_free(lt->last), oc_free(lt->host), oc_free(lt->bytes);
    memset(lt, 0, sizeof *lt);
}

bool plan_lifetimes_device(const plan_lifetimes *lt, int t) {
    return lt->root[t] == t && !lt->host[t] && lt->bytes[t] > 0 && lt->last[t] >= lt->first[t];
}

void plan_lifetimes_add_workspaces(plan_lifetimes *lt, int n_nodes, const int64_t *ws) {
    size_t cap = (size_t)lt->n + (size_t)n_nodes + 1;
    lt->root = oc_realloc(lt->root, cap * sizeof(int));
    lt->first = oc_realloc(lt->first, cap * sizeof(int));
    lt->last = oc_realloc(lt->last, cap * sizeof(int));
    lt->host = oc_realloc(lt->host, cap);
    lt->bytes = oc_realloc(lt->bytes, cap * sizeof(int64_t));
    for (int i = 0; i < n_nodes; i++) {
        int k = lt->n + i;
        lt->root[k] = k;
        lt->first[k] = lt->last[k] = i;
        lt->host[k] = 0;
        lt->bytes[k] = ws && ws[i] > 0 ? plan_align_up(ws[i]) : 0;
    }
    lt->n_ws = n_nodes;
}

void plan_workspaces_of(const ir_graph *g, int64_t **offset, int64_t **bytes) {
    *offset = oc_malloc(((size_t)g->n_nodes + 1) * sizeof(int64_t));
    *bytes = oc_calloc((size_t)g->n_nodes + 1, sizeof(int64_t));
    for (int i = 0; i < g->n_nodes; i++) {
        const int64_t *v;
        (*offset)[i] = -1;
        if (ir_attr_ints(&g->nodes[i], PLAN_ATTR_WORKSPACE, &v) == 2 && v[1] > 0) {
            (*offset)[i] = v[0];
            (*bytes)[i] = v[1];
        }
    }
}
