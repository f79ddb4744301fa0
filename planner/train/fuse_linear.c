/* fuse_linear.c — see fuse_linear.h. */
#include "train/fuse_linear.h"

#include <string.h>

#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"

/* MatMul m reading X and W (through Transpose t: trans_w; t -1: directly), then
 * Add a (-1: none) of its output and the vector B. */
typedef struct linear_match {
    int m, t, a, x, w, b;
    bool bias_first;
} linear_match;

/* A 2-d transpose: perm 1 0, or none (reversed dims). */
static bool swaps_2d(const ir_node *n) {
    const int64_t *perm;
    int np = ir_attr_ints(n, "perm", &perm);
    return np < 0 || (np == 2 && perm[0] == 1 && perm[1] == 0);
}

/* Add a's input other than y, when it is a vector initializer of y's last dim and type. */
static int bias_input(const ir_graph *g, int a, int y, bool *first) {
    const ir_node *n = &g->nodes[a];
    if (n->op != OP_ADD || n->n_inputs != 2 || n->n_outputs != 1 || n->inputs[0] == n->inputs[1])
        return -1;
    *first = n->inputs[1] == y;
    int b = *first ? n->inputs[0] : n->inputs[1];
    const ir_tensor *bt = &g->tensors[b], *yt = &g->tensors[y];
    bool ok = bt->is_initializer && bt->rank == 1 && bt->dtype == yt->dtype &&
              bt->dims[0] == yt->dims[yt->rank - 1];
    return ok ? b : -1;
}

static bool match_at(const ir_graph *g, int m, linear_match *r) {
    const ir_node *n = &g->nodes[m];
    if (n->op != OP_MATMUL || n->n_inputs != 2 || n->n_outputs != 1 || n->inputs[0] < 0 ||
        n->inputs[1] < 0 || n->outputs[0] < 0)
        return false;
    const ir_tensor *x = &g->tensors[n->inputs[0]], *w = &g->tensors[n->inputs[1]];
    if (x->rank < 2 || w->rank != 2 || x->dtype != w->dtype || !ir_dtype_is_compute(x->dtype))
        return false;
    *r = (linear_match){.m = m, .t = -1, .a = -1, .x = n->inputs[0], .w = n->inputs[1], .b = -1};
    int p = w->producer;
    if (p >= 0 && g->nodes[p].op == OP_TRANSPOSE && swaps_2d(&g->nodes[p]) &&
        ir_tensor_sole_consumer(g, n->inputs[1]) == m) {
        int src = g->nodes[p].inputs[0];
        if (src >= 0 && g->tensors[src].is_initializer && g->tensors[src].rank == 2)
            r->t = p, r->w = src;
    }
    if (r->t < 0 && !w->is_initializer) return false;
    int a = ir_tensor_sole_consumer(g, n->outputs[0]);
    if (a >= 0 && (r->b = bias_input(g, a, n->outputs[0], &r->bias_first)) >= 0) r->a = a;
    return r->t >= 0 || r->a >= 0;
}

static void add_attr(ir_graph *g, int n, ir_attr a) { ir_node_add_attr(g, n, &a); }
static void add_string(ir_graph *g, int n, const char *name, const char *s) {
    add_attr(g, n, (ir_attr){.name = (char *)name, .type = IR_ATTR_STRING, .s = (char *)s});
}

/* Linear(X, W [, B]) -> Y (the chain's last output) at the last member's place
 * (which writes a placeholder until removed), named "<MatMul>/linear". */
static int replace(ir_graph *g, const linear_match *r, oc_err *err) {
    int last = r->a >= 0 ? r->a : r->m, y = g->nodes[last].outputs[0];
    const char *members[3];
    int nm = 0;
    if (r->t >= 0) members[nm++] = g->nodes[r->t].name;
    members[nm++] = g->nodes[r->m].name;
    if (r->a >= 0) members[nm++] = g->nodes[r->a].name;
    char *name = oc_sprintf("%s/linear", g->nodes[r->m].name);
    char *dummy = oc_sprintf("%s/unfused", g->tensors[y].name);
    char *mem[3], *t_out = r->t >= 0 ? oc_strdup(g->tensors[g->nodes[r->t].outputs[0]].name) : NULL,
                  *m_out = r->a >= 0 ? oc_strdup(g->tensors[g->nodes[r->m].outputs[0]].name) : NULL;
    for (int i = 0; i < nm; i++) mem[i] = oc_strdup(members[i]);
    int ph = ir_tensor_add(g, dummy, g->tensors[y].dtype);
    g->nodes[last].outputs[0] = ph;
    g->tensors[ph].producer = last;
    g->tensors[y].producer = -1;
    int n = ir_node_insert(g, last, name, op_name(OP_LINEAR), OC_DOMAIN);
    g->nodes[n].op = OP_LINEAR;
    ir_node_add_input(g, n, r->x);
    ir_node_add_input(g, n, r->w);
    if (r->b >= 0) ir_node_add_input(g, n, r->b);
    ir_node_add_output(g, n, y);
    add_attr(g, n, (ir_attr){.name = "trans_w", .type = IR_ATTR_INT, .i = r->t >= 0});
    add_attr(g, n, (ir_attr){.name = "members", .type = IR_ATTR_STRINGS, .n = nm, .strings = mem});
    if (t_out) add_string(g, n, "transpose_output", t_out);
    if (m_out) add_string(g, n, "matmul_output", m_out);
    if (r->a >= 0 && r->bias_first)
        add_attr(g, n, (ir_attr){.name = "bias_first", .type = IR_ATTR_INT, .i = 1});
    for (int i = 0; i < nm; i++) oc_free(mem[i]);
    oc_free(t_out), oc_free(m_out), oc_free(name), oc_free(dummy);
    int rc = op_infer(g, &g->nodes[n], err);
    return rc ? oc_fail_prefix(err, "node '%s'", g->nodes[n].name) : OC_OK;
}

int fuse_linear(ir_graph *g, int *n_fused, oc_err *err) {
    *n_fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        linear_match r;
        if (!match_at(g, i, &r)) continue;
        int last = r.a >= 0 ? r.a : r.m, first = r.t >= 0 && r.t < r.m ? r.t : r.m;
        if (replace(g, &r, err)) return OC_ERR;
        /* the insert moved every node from `last` on up by one */
        bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
        int members[3] = {r.t, r.m, r.a};
        for (int k = 0; k < 3; k++)
            if (members[k] >= 0) remove[members[k] >= last ? members[k] + 1 : members[k]] = true;
        ir_graph_remove_nodes(g, remove);
        oc_free(remove);
        (*n_fused)++;
        i = first - 1; /* nodes before the chain's first kept their indices */
    }
    return OC_OK;
}
