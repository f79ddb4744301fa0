/* fuse_gelu.c — see fuse_gelu.h. */
#include "train/fuse_gelu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"

#define MAX_NODES 24      /* of a region (the exporters' GELUs have 5 to 10) */
#define MAX_CANDIDATES 16 /* tensors tried as x, per Tanh / Erf */

typedef struct region {
    int nodes[MAX_NODES], n;
    int x, y; /* tensors */
} region;

static bool in_region(const region *r, int node) {
    for (int i = 0; i < r->n; i++)
        if (r->nodes[i] == node) return true;
    return false;
}

/* Input k of node n when it is a float scalar plan-time value. */
static bool scalar_value(ir_graph *g, const ir_node *n, int k, double *v) {
    const ir_tensor *t = ir_node_in(g, n, k);
    return t && op_is_value(t) && op_in_scalar_f(g, (ir_node *)n, k, v);
}

static bool arith(const ir_node *n, bool pow) {
    bool op = n->op == OP_MUL || n->op == OP_ADD || n->op == OP_SUB || n->op == OP_DIV ||
              (pow && n->op == OP_POW);
    return op && n->n_inputs == 2 && n->n_outputs == 1;
}

/* Adds to r the nodes computing t from x, region tensors and scalars through
 * Mul/Add/Sub/Div/Pow; false when t depends on anything else. */
static bool add_cone(ir_graph *g, region *r, int t) {
    if (t == r->x) return true;
    int p = t >= 0 ? g->tensors[t].producer : -1;
    if (p < 0) return false;
    if (in_region(r, p)) return true;
    const ir_node *n = &g->nodes[p];
    if (!arith(n, true) || r->n == MAX_NODES) return false;
    r->nodes[r->n++] = p;
    double v;
    for (int k = 0; k < 2; k++)
        if (!scalar_value(g, n, k, &v) && !add_cone(g, r, n->inputs[k])) return false;
    return true;
}

/* The tensors t0 is computed from through Mul/Add/Sub/Div/Pow, nearest first. */
static int candidates(ir_graph *g, int t0, int *c) {
    int n = 0;
    c[n++] = t0;
    for (int i = 0; i < n; i++) {
        int p = g->tensors[c[i]].producer;
        if (p < 0 || !arith(&g->nodes[p], true)) continue;
        const ir_node *q = &g->nodes[p];
        for (int k = 0; k < 2 && n < MAX_CANDIDATES; k++) {
            double v;
            bool seen = false;
            for (int j = 0; j < n; j++) seen |= c[j] == q->inputs[k];
            if (q->inputs[k] >= 0 && !seen && !scalar_value(g, q, k, &v)) c[n++] = q->inputs[k];
        }
    }
    return n;
}

static int by_index(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* y at x = xv, the region's nodes evaluated in graph order in double; NAN
 * where an input is none of x, a region tensor or a scalar. */
static double eval_at(ir_graph *g, const region *r, const int *order, double xv) {
    double val[MAX_NODES];
    for (int i = 0; i < r->n; i++) {
        const ir_node *n = &g->nodes[order[i]];
        double a[2] = {0.0, 0.0};
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k], at = -1;
            for (int j = 0; j < i && t >= 0; j++)
                if (order[j] == g->tensors[t].producer) at = j;
            if (t == r->x) a[k] = xv;
            else if (at >= 0) a[k] = val[at];
            else if (!scalar_value(g, n, k, &a[k])) return NAN;
        }
        switch (n->op) {
        case OP_MUL: val[i] = a[0] * a[1]; break;
        case OP_ADD: val[i] = a[0] + a[1]; break;
        case OP_SUB: val[i] = a[0] - a[1]; break;
        case OP_DIV: val[i] = a[0] / a[1]; break;
        case OP_POW: val[i] = pow(a[0], a[1]); break;
        case OP_TANH: val[i] = tanh(a[0]); break;
        case OP_ERF: val[i] = erf(a[0]); break;
        default: return NAN;
        }
        if (n->outputs[0] == r->y) return val[i];
    }
    return NAN;
}

/* The region computes GELU's tanh or erf form at a dozen points (its
 * constants are float32: 1e-5, relative above 1). */
static bool is_gelu(ir_graph *g, const region *r, bool tanh_form) {
    static const double xs[] = {-6, -3, -1.5, -0.7, -0.1, 0, 0.05, 0.4, 1, 2.2, 5};
    int order[MAX_NODES];
    memcpy(order, r->nodes, (size_t)r->n * sizeof *order);
    qsort(order, (size_t)r->n, sizeof *order, by_index);
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
        double x = xs[i],
               want = tanh_form
                          ? 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
                          : 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
        if (!(fabs(eval_at(g, r, order, x) - want) <= 1e-5 * (1.0 + fabs(want)))) return false;
    }
    return true;
}

/* x and y alike in shape and compute type; every other region output read
 * inside the region alone. */
static bool self_contained(const ir_graph *g, const region *r) {
    const ir_tensor *x = &g->tensors[r->x], *y = &g->tensors[r->y];
    if (!ir_dtype_is_compute(x->dtype) || y->dtype != x->dtype || !ir_tensor_shape_known(x) ||
        !ir_tensor_shape_known(y) || x->rank != y->rank ||
        memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims) != 0)
        return false;
    for (int i = 0; i < r->n; i++) {
        const ir_tensor *o = &g->tensors[g->nodes[r->nodes[i]].outputs[0]];
        if (o == y) continue;
        if (o->is_graph_output) return false;
        for (int c = 0; c < o->n_consumers; c++)
            if (!in_region(r, o->consumers[c])) return false;
    }
    return true;
}

/* The one node reading t (every use of it), or -1 (none, several, a graph output). */
static int sole_reader(const ir_graph *g, int t) {
    const ir_tensor *x = &g->tensors[t];
    if (x->n_consumers < 1 || x->is_graph_output) return -1;
    for (int c = 1; c < x->n_consumers; c++)
        if (x->consumers[c] != x->consumers[0]) return -1;
    return x->consumers[0];
}

/* The region from x through Tanh / Erf node a, y the first tensor forward
 * of it that is GELU of x. */
static bool match_from(ir_graph *g, int a, int x, bool tanh_form, region *r) {
    *r = (region){.x = x, .y = -1};
    r->nodes[r->n++] = a;
    if (!add_cone(g, r, g->nodes[a].inputs[0])) return false;
    for (int cur = g->nodes[a].outputs[0];;) {
        r->y = cur;
        if (is_gelu(g, r, tanh_form)) return self_contained(g, r);
        int c = sole_reader(g, cur);
        if (c < 0 || in_region(r, c) || r->n == MAX_NODES || !arith(&g->nodes[c], false))
            return false;
        const ir_node *n = &g->nodes[c];
        r->nodes[r->n++] = c;
        double v;
        for (int k = 0; k < 2; k++)
            if (n->inputs[k] != cur && !scalar_value(g, n, k, &v) && !add_cone(g, r, n->inputs[k]))
                return false;
        cur = n->outputs[0];
    }
}

static bool match_at(ir_graph *g, int a, region *r) {
    const ir_node *n = &g->nodes[a];
    if (n->n_inputs != 1 || n->n_outputs != 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
        return false;
    int c[MAX_CANDIDATES], nc = candidates(g, n->inputs[0], c);
    for (int i = 0; i < nc; i++)
        if (!op_is_value(&g->tensors[c[i]]) && match_from(g, a, c[i], n->op == OP_TANH, r))
            return true;
    return false;
}

static void add_attr(ir_graph *g, int n, ir_attr a) { ir_node_add_attr(g, n, &a); }

/* Gelu(x) -> y at y's producer's place (which writes a placeholder until
 * removed), named after the Tanh / Erf node a. */
static int replace(ir_graph *g, const region *r, int a, oc_err *err) {
    int at = g->tensors[r->y].producer, order[MAX_NODES];
    memcpy(order, r->nodes, (size_t)r->n * sizeof *order);
    qsort(order, (size_t)r->n, sizeof *order, by_index);
    char *members[MAX_NODES];
    for (int i = 0; i < r->n; i++) members[i] = oc_strdup(g->nodes[order[i]].name);
    bool tanh_form = g->nodes[a].op == OP_TANH;
    char *name = oc_sprintf("%s" OP_GELU_FUSED_SUFFIX, g->nodes[a].name);
    char *dummy = oc_sprintf("%s/unfused", g->tensors[r->y].name);
    int ph = ir_tensor_add(g, dummy, IR_DTYPE_FLOAT);
    g->nodes[at].outputs[0] = ph;
    g->tensors[ph].producer = at;
    g->tensors[r->y].producer = -1;
    int n =
        ir_node_insert(g, at, name, op_name(OP_GELU), g->opset >= OP_GELU_OPSET ? "" : OC_DOMAIN);
    g->nodes[n].op = OP_GELU;
    ir_node_add_input(g, n, r->x);
    ir_node_add_output(g, n, r->y);
    add_attr(
        g, n,
        (ir_attr){.name = "approximate", .type = IR_ATTR_STRING, .s = tanh_form ? "tanh" : "none"});
    add_attr(g, n,
             (ir_attr){.name = "members", .type = IR_ATTR_STRINGS, .n = r->n, .strings = members});
    for (int i = 0; i < r->n; i++) oc_free(members[i]);
    oc_free(name), oc_free(dummy);
    int rc = op_infer(g, &g->nodes[n], err);
    return rc ? oc_fail_prefix(err, "node '%s'", g->nodes[n].name) : OC_OK;
}

int fuse_gelu(ir_graph *g, int *n_fused, oc_err *err) {
    *n_fused = 0;
    for (int a = 0; a < g->n_nodes; a++) {
        if (g->nodes[a].op != OP_TANH && g->nodes[a].op != OP_ERF) continue;
        region r;
        if (!match_at(g, a, &r)) continue;
        int at = g->tensors[r.y].producer;
        if (replace(g, &r, a, err)) return OC_ERR;
        /* the insert moved every node from at on up by one */
        bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
        int lo = at;
        for (int i = 0; i < r.n; i++) {
            remove[r.nodes[i] >= at ? r.nodes[i] + 1 : r.nodes[i]] = true;
            if (r.nodes[i] < lo) lo = r.nodes[i];
        }
        ir_graph_remove_nodes(g, remove);
        oc_free(remove);
        (*n_fused)++;
        a = lo - 1; /* nodes before the region's first kept their indices */
    }
    return OC_OK;
}
