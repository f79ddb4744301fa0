/* op_rewrite.c — see op_rewrite.h. */
#include "ir/ops/op_rewrite.h"

#include <stdio.h>
#include <string.h>

#include "ir/ops/op_util.h"

int op_rewrite_insert(ir_graph *g, int at, const char *base, const char *what, op_kind k, int in0,
                      int in1, int y) {
    char *s = oc_sprintf("%s/%s", base, what);
    int n = at == g->n_nodes ? op_node_add(g, s, k) : op_node_insert(g, at, s, k);
    ir_node_add_input(g, n, in0);
    if (in1 >= 0) ir_node_add_input(g, n, in1);
    if (y < 0) y = ir_tensor_add(g, s, IR_DTYPE_UNDEFINED);
    oc_free(s);
    ir_node_add_output(g, n, y);
    return y;
}

int op_rewrite_axes(ir_graph *g, int at, const char *base, const char *what, op_kind k, int x,
                    int n, const int64_t *axes, int axes_input_from, int y) {
    if (g->opset >= axes_input_from) {
        char *s = oc_sprintf("%s/%s_axes", base, what);
        int a = ir_const_int64s(g, s, n, axes);
        oc_free(s);
        return op_rewrite_insert(g, at, base, what, k, x, a, y);
    }
    y = op_rewrite_insert(g, at, base, what, k, x, -1, y);
    op_rewrite_attr_ints(g, at, "axes", n, axes);
    return y;
}

void op_rewrite_attr_ints(ir_graph *g, int node, const char *name, int n, const int64_t *v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INTS, .n = n, .ints = (int64_t *)v};
    ir_node_add_attr(g, node, &a);
}

void op_rewrite_attr_int(ir_graph *g, int node, const char *name, int64_t v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INT, .i = v};
    ir_node_add_attr(g, node, &a);
}

void op_rewrite_attr_drop(ir_graph *g, int node, const char *name) {
    ir_node *n = &g->nodes[node];
    int k = 0;
    for (int i = 0; i < n->n_attrs; i++) {
        if (strcmp(n->attrs[i].name, name) == 0) ir_attr_free(&n->attrs[i]);
        else n->attrs[k++] = n->attrs[i];
    }
    n->n_attrs = k;
}

int op_rewrite_constant(ir_graph *g, const char *base, const char *what, ir_dtype dtype, int rank,
                        const int64_t *dims, const void *data) {
    char *s = oc_sprintf("%s/%s", base, what);
    int t = ir_const_tensor(g, s, dtype, rank, dims, data);
    oc_free(s);
    return t;
}

int op_rewrite_ints(ir_graph *g, const char *base, const char *what, int n, const int64_t *v) {
    int64_t len = n;
    return op_rewrite_constant(g, base, what, IR_DTYPE_INT64, 1, &len, v);
}

int op_rewrite_reshape(ir_graph *g, int at, const char *base, const char *what, int t, int rank,
                       const int64_t *dims) {
    char *s = oc_sprintf("%s_shape", what);
    int sh = op_rewrite_ints(g, base, s, rank, dims);
    oc_free(s);
    return op_rewrite_insert(g, at, base, what, OP_RESHAPE, t, sh, -1);
}

int op_rewrite_flatten(ir_graph *g, int at, const char *base, const char *what, int t) {
    static const int64_t flat = -1;
    return op_rewrite_reshape(g, at, base, what, t, 1, &flat);
}

int op_rewrite_fill(ir_graph *g, const char *base, const char *what, int rank, const int64_t *dims,
                    float v) {
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) numel *= dims[d];
    float *buf = oc_malloc((size_t)numel * sizeof *buf + 1);
    for (int64_t i = 0; i < numel; i++) buf[i] = v;
    int c = op_rewrite_constant(g, base, what, IR_DTYPE_FLOAT, rank, dims, buf);
    oc_free(buf);
    return c;
}

void op_rewrite_become(ir_graph *g, int node, op_kind k) {
    for (int i = 0; i < g->nodes[node].n_inputs; i++) ir_node_set_input(g, node, i, -1);
    ir_node *n = &g->nodes[node];
    n->n_inputs = 0;
    for (int i = 0; i < n->n_attrs; i++) ir_attr_free(&n->attrs[i]);
    n->n_attrs = 0;
    oc_free(n->op_type);
    oc_free(n->domain);
    n->op_type = oc_strdup(op_name(k));
    n->domain = oc_strdup(op_domain(k));
    n->op = (int)k;
}

int op_rewrite_concat_groups(ir_graph *g, int *at, const char *base, const char *what, int *ins,
                             int n, int64_t axis) {
    if (n <= OP_MAX_SPLIT) return n;
    OC_ASSERT(n <= OP_MAX_SPLIT * OP_MAX_SPLIT);
    int groups = (n + OP_MAX_SPLIT - 1) / OP_MAX_SPLIT;
    for (int k = 0; k < groups; k++) {
        char w[96];
        snprintf(w, sizeof w, "%s_group%d", what, k);
        int lo = k * OP_MAX_SPLIT, hi = lo + OP_MAX_SPLIT < n ? lo + OP_MAX_SPLIT : n;
        int y = op_rewrite_insert(g, *at, base, w, OP_CONCAT, ins[lo], -1, -1);
        for (int i = lo + 1; i < hi; i++) ir_node_add_input(g, *at, ins[i]);
        op_rewrite_attr_int(g, *at, "axis", axis);
        ++*at;
        ins[k] = y;
    }
    return groups;
}

int op_rewrite_redirect(ir_graph *g, int node, const char *base, const char *what) {
    char *s = oc_sprintf("%s/%s", base, what);
    int y = ir_tensor_add(g, s, IR_DTYPE_UNDEFINED);
    oc_free(s);
    g->tensors[g->nodes[node].outputs[0]].producer = -1;
    g->nodes[node].outputs[0] = y;
    g->tensors[y].producer = node;
    return y;
}

bool op_rewrite_all(const ir_tensor *t, float v) {
    int64_t n;
    if (!op_is_value(t) || t->dtype != IR_DTYPE_FLOAT || !ir_tensor_numel(t, &n) ||
        t->data_bytes != (size_t)n * sizeof(float))
        return false;
    for (int64_t i = 0; i < n; i++)
        if (((const float *)t->data)[i] != v) return false;
    return true;
}

int op_rewrite_per_channel(ir_graph *g, int *at, const char *base, const char *what, int p, int r,
                           int64_t c) {
    int64_t shape[IR_MAX_RANK];
    shape[0] = c;
    for (int d = 1; d + 1 < r; d++) shape[d] = 1;
    return op_rewrite_reshape(g, (*at)++, base, what, p, r - 1, shape);
}

void op_rewrite_affine(ir_graph *g, int node, const char *base, int scale, int shift, int r,
                       int64_t c) {
    if (scale < 0 && shift < 0) return;
    int out = g->nodes[node].outputs[0];
    int y = op_rewrite_redirect(g, node, base, "normalised"), at = node + 1;
    if (scale >= 0) {
        int sc = op_rewrite_per_channel(g, &at, base, "scale", scale, r, c);
        y = op_rewrite_insert(g, at++, base, "scaled", OP_MUL, y, sc, shift >= 0 ? -1 : out);
    }
    if (shift >= 0) {
        int sh = op_rewrite_per_channel(g, &at, base, "shift", shift, r, c);
        op_rewrite_insert(g, at, base, "shifted", OP_ADD, y, sh, out);
    }
}
