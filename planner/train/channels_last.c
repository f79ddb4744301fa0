/* channels_last.c — see channels_last.h. */
#include "train/channels_last.h"

#include <string.h>

#include "ir/ops/op_table.h"

enum { TO_NHWC, TO_NCHW };

typedef struct pass {
    ir_graph *g;
    bool *nhwc;   /* per tensor: stored channels-last */
    int *conv[2]; /* per tensor: its TO_NHWC / TO_NCHW conversion, or -1 */
    int n;        /* tensors the arrays cover */
    int n_conversions;
    oc_err *err;
} pass;

static void grow(pass *p) {
    int n = p->g->n_tensors;
    if (n <= p->n) return;
    p->nhwc = oc_realloc(p->nhwc, (size_t)n * sizeof *p->nhwc);
    for (int s = 0; s < 2; s++) p->conv[s] = oc_realloc(p->conv[s], (size_t)n * sizeof(int));
    for (int t = p->n; t < n; t++) p->nhwc[t] = false, p->conv[0][t] = p->conv[1][t] = -1;
    p->n = n;
}

static bool rank4(const ir_graph *g, int t) {
    return t >= 0 && g->tensors[t].rank == 4 && ir_tensor_shape_known(&g->tensors[t]);
}

static bool one_element(const ir_graph *g, int t) {
    int64_t n;
    return t >= 0 && ir_tensor_numel(&g->tensors[t], &n) && n == 1;
}

static bool writes_graph_output(const ir_graph *g, const ir_node *n) {
    for (int o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0 && g->tensors[n->outputs[o]].is_graph_output) return true;
    return false;
}

static bool elementwise(int op) {
    switch (op) {
    case OP_RELU:
    case OP_SIGMOID:
    case OP_TANH:
    case OP_HARD_SIGMOID:
    case OP_HARD_SWISH:
    case OP_ERF:
    case OP_GELU:
    case OP_SQRT:
    case OP_CLIP:
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_SUM: return true;
    default: return false;
    }
}

/* What node n becomes: 2 channels-last (attribute), 1 layout-free (its
 * channels-last inputs taken as they are), 0 as it is. */
static int takes(const pass *p, const ir_node *n) {
    const ir_graph *g = p->g;
    if (n->n_inputs < 1 || writes_graph_output(g, n) || !rank4(g, n->inputs[0])) return 0;
    if (!ir_dtype_is_compute(g->tensors[n->inputs[0]].dtype)) return 0;
    /* continuing a channels-last region, or starting one at the model's input
     * (which a Conv further on would convert anyway) or at a tensor an earlier
     * node converted already */
    int x = n->inputs[0];
    bool from = p->nhwc[x] || g->tensors[x].producer < 0 || p->conv[TO_NHWC][x] >= 0;
    switch (n->op) {
    case OP_CONV:
    case OP_CONV_RELU:
    case OP_CONV_TRANSPOSE: return n->n_inputs >= 2 && rank4(g, n->inputs[1]) ? 2 : 0;
    case OP_BATCH_NORM:
    case OP_BATCH_NORM_RELU:
    case OP_AVERAGE_POOL:
    case OP_GLOBAL_AVERAGE_POOL: return from ? 2 : 0;
    case OP_MAX_POOL: return from && n->n_outputs == 1 ? 2 : 0;
    case OP_CONCAT: { /* of channels-last tensors (DenseNet, Inception, U-Net) */
        bool any = false;
        for (int i = 0; i < n->n_inputs; i++) {
            int t = n->inputs[i];
            if (!rank4(g, t)) return 0;
            any |= p->nhwc[t] || p->conv[TO_NHWC][t] >= 0 || g->tensors[t].producer < 0;
        }
        return any ? 2 : 0;
    }
    default: break;
    }
    if (!elementwise(n->op) || n->n_outputs != 1 || !rank4(g, n->outputs[0])) return 0;
    const ir_tensor *y = &g->tensors[n->outputs[0]];
    bool any = false;
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0 || one_element(g, t)) continue;
        if (!rank4(g, t)) return 0;
        /* the output's shape in the input's own order */
        int64_t d[4];
        memcpy(d, g->tensors[t].dims, sizeof d);
        if (p->nhwc[t]) ir_dims_to_logical(d);
        if (memcmp(d, y->dims, sizeof d) != 0) return 0;
        any |= p->nhwc[t];
    }
    return any ? 1 : 0;
}

static void drop_consumer(ir_tensor *x, int node) {
    for (int c = 0; c < x->n_consumers; c++)
        if (x->consumers[c] == node) {
            x->consumers[c] = x->consumers[--x->n_consumers];
            return;
        }
}

/* t in the other layout (to: TO_NHWC or TO_NCHW), made by a Transpose
 * inserted before node *at (which moves up by one) unless made already. */
static int converted(pass *p, int t, int to, int *at) {
    if (p->conv[to][t] >= 0) return p->conv[to][t];
    ir_graph *g = p->g;
    const char *suffix = to == TO_NHWC ? "nhwc" : "nchw";
    char *tname = oc_sprintf("%s/%s", g->tensors[t].name, suffix);
    char *nname = oc_sprintf(CHANNELS_LAST_PREFIX "%s", tname);
    int n = ir_node_insert(g, *at, nname, op_name(OP_TRANSPOSE), "");
    g->nodes[n].op = OP_TRANSPOSE;
    ir_node_add_input(g, n, t);
    int y = ir_tensor_add(g, tname, g->tensors[t].dtype);
    ir_node_add_output(g, n, y);
    static const int64_t perm[2][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}};
    ir_node_add_attr(
        g, n,
        &(ir_attr){.name = "perm", .type = IR_ATTR_INTS, .ints = (int64_t *)perm[to], .n = 4});
    oc_free(tname);
    oc_free(nname);
    (*at)++;
    p->n_conversions++;
    if (op_infer(g, &g->nodes[n], p->err)) return -1;
    grow(p);
    p->conv[to][t] = y;
    p->nhwc[y] = to == TO_NHWC;
    return y;
}

/* Input k of node reads t instead. */
static void rewire(ir_graph *g, int node, int k, int t) {
    drop_consumer(&g->tensors[g->nodes[node].inputs[k]], node);
    g->nodes[node].inputs[k] = t;
    ir_tensor *x = &g->tensors[t];
    oc_grow((void **)&x->consumers, &x->cap_consumers, (size_t)x->n_consumers + 1, sizeof(int));
    x->consumers[x->n_consumers++] = node;
}

/* The Conv's kernel_shape, from its (N, C, H, W) filter, before that becomes (K, R, S, C). */
static void pin_kernel_shape(ir_graph *g, int node) {
    if (ir_attr_find(&g->nodes[node], "kernel_shape")) return;
    const ir_tensor *w = &g->tensors[g->nodes[node].inputs[1]];
    int64_t k[2] = {w->dims[2], w->dims[3]};
    ir_node_add_attr(g, node,
                     &(ir_attr){.name = "kernel_shape", .type = IR_ATTR_INTS, .ints = k, .n = 2});
}

static int visit(pass *p, int *i, int *n_nodes) {
    ir_graph *g = p->g;
    int how = takes(p, &g->nodes[*i]);
    int op = g->nodes[*i].op;
    bool conv = op == OP_CONV || op == OP_CONV_RELU || op == OP_CONV_TRANSPOSE;
    if (how == 2 && conv) pin_kernel_shape(g, *i); /* W still (K, C, R, S) */
    for (int k = 0; k < g->nodes[*i].n_inputs; k++) {
        int t = g->nodes[*i].inputs[k];
        if (t < 0 || (how == 1 && one_element(g, t))) continue; /* a scalar: either layout */
        bool want = how != 0 && rank4(g, t);
        if (want == p->nhwc[t]) continue;
        int c = converted(p, t, want ? TO_NHWC : TO_NCHW, i);
        if (c < 0) return OC_ERR;
        rewire(g, *i, k, c);
    }
    if (how == 2) ir_node_mark_channels_last(g, *i);
    ir_node *n = &g->nodes[*i];
    if (how && op_infer(g, n, p->err))
        return oc_fail_prefix(p->err, "node '%s' (%s) made channels-last", n->name, n->op_type);
    for (int o = 0; how && o < n->n_outputs; o++)
        if (n->outputs[o] >= 0 && g->tensors[n->outputs[o]].rank == 4)
            p->nhwc[n->outputs[o]] = true;
    *n_nodes += how != 0;
    return OC_OK;
}

int channels_last_pass(ir_graph *g, int *n_nodes, int *n_conversions, oc_err *err) {
    pass p = {.g = g, .err = err};
    grow(&p);
    *n_nodes = 0;
    int rc = OC_OK;
    for (int i = 0; i < g->n_nodes && rc == OC_OK; i++) rc = visit(&p, &i, n_nodes);
    *n_conversions = p.n_conversions;
    oc_free(p.nhwc), oc_free(p.conv[0]), oc_free(p.conv[1]);
    return rc;
}

bool channels_last_is_conversion(const ir_node *n) {
    return n->op == OP_TRANSPOSE &&
           strncmp(n->name, CHANNELS_LAST_PREFIX, strlen(CHANNELS_LAST_PREFIX)) == 0;
}
