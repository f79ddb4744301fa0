/* op_loop.c — Loop with a trip count or condition known at load, unrolled before shapes are
 * inferred (op_def.lower): the body (onnx_import_body) once per iteration, its nodes named
 * "<loop>/iter<i>/<node>", reading the iteration number as a constant, the condition, the
 * carried values of the iteration before (the Loop's inputs first) and the graph around it
 * by name; the Loop's outputs are the last carried values (an Identity each) and its scan
 * outputs the iterations' values stacked (Unsqueeze, Concat). Training then differentiates
 * the unrolled ops. torch's legacy exporter writes tensor_split (MViT's pooling) as a Loop
 * over a plan-time count that appends slices to a sequence (op_sequence.c).
 * A condition the body computes (torch.export's nn.EmbeddingBag: a counter against the bag
 * count) is unrolled one iteration a visit: the iteration's nodes go before the Loop, which
 * then reads their condition and carried values (its scan values so far appended to its
 * inputs, the iterations done in its attribute outcore_iterations) and is visited again once
 * they are inferred, until the condition folds to false or the trip count is reached.
 * A node with a body of its own (an If in a Loop's body) is given the name prefixes of the
 * bodies it was unrolled from (attribute outcore_scope, innermost first): its body's names
 * are found there first.
 * Refused, naming the node: a count or condition computed at run time, a Loop in a body, an
 * unrolling past IR_MAX_NODES or LOOP_MAX_ITERATIONS. An If whose condition is known at load
 * is its branch's nodes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ir/bag_loop.h"
#include "ir/onnx_import.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

#define LOOP_MAX_ITERATIONS 4096
#define SCOPE_ATTR "outcore_scope"           /* STRINGS: body name prefixes, innermost first */
#define ITERATIONS_ATTR "outcore_iterations" /* INT: a stepped Loop's iterations so far */

/* A rank-0 constant of type dt holding v (the iteration number, a true condition). */
static int scalar_const(ir_graph *g, const char *name, ir_dtype dt, int64_t v) {
    uint8_t b = v != 0;
    return ir_const_tensor(g, name, dt, 0, NULL, dt == IR_DTYPE_BOOL ? (const void *)&b : &v);
}

/* The tensor of g a name a body of node n reads stands for: the name in the bodies n was
 * unrolled from (SCOPE_ATTR, innermost first: "<prefix>/<name>"), else as it is; -1 none. */
static int scoped_find(const ir_graph *g, const ir_node *n, const char *name) {
    const ir_attr *s = ir_attr_find(n, SCOPE_ATTR);
    for (int k = 0; s && s->type == IR_ATTR_STRINGS && k < s->n; k++) {
        char *full = oc_sprintf("%s/%s", s->strings[k], name);
        int t = ir_tensor_find(g, full);
        oc_free(full);
        if (t >= 0) return t;
    }
    return ir_tensor_find(g, name);
}

/* The outer tensor a body placeholder (a name the body reads but does not define) stands
 * for: defined before the Loop node. */
static int outer_tensor(const ir_graph *g, int node, const ir_tensor *p, int *t, oc_err *err) {
    *t = scoped_find(g, &g->nodes[node], p->name);
    const ir_tensor *x = *t >= 0 ? &g->tensors[*t] : NULL;
    if (!x || (x->producer < 0 && !x->is_initializer && !x->is_graph_input) || x->producer >= node)
        return oc_fail(err, "its body reads '%s', which is not defined before the %s", p->name,
                       g->nodes[node].op_type);
    return OC_OK;
}

static bool placeholder(const ir_tensor *t) {
    return t->producer < 0 && !t->is_initializer && !t->is_graph_input;
}

/* Whether the body's condition output stays what the Loop was given: the condition input,
 * or an Identity of it, or a plan-time true (an Identity of an outer one, torch's legacy
 * export; a Cast to bool of an outer nonzero one, its export of nn.EmbeddingBag). */
static bool condition_kept(const ir_graph *g, int node, const ir_graph *b) {
    int c = b->outputs[0], cin = b->inputs[1];
    for (int hops = 0; hops < 4 && c != cin; hops++) {
        const ir_tensor *x = &b->tensors[c];
        int64_t v;
        const ir_node *p = x->producer >= 0 ? &b->nodes[x->producer] : NULL;
        bool pass = p && (p->op == OP_IDENTITY ||
                          (p->op == OP_CAST && ir_attr_int(p, "to", 0) == IR_DTYPE_BOOL));
        if (pass && p->n_inputs == 1 && p->inputs[0] >= 0) {
            c = p->inputs[0];
            continue;
        }
        int t;
        oc_err ignored;
        if (placeholder(x) && outer_tensor(g, node, x, &t, &ignored) == OC_OK &&
            op_is_value(&g->tensors[t]) && op_int_scalar(&g->tensors[t], true, &v) && v)
            return true;
        if (x->is_initializer && op_is_value(x) && op_int_scalar(x, true, &v) && v) return true;
        break;
    }
    return c == cin;
}

typedef struct unroll {
    ir_graph *g;
    const ir_graph *b;
    int node;    /* the Loop */
    char *base;  /* its name */
    int *map;    /* per body tensor: its tensor in g for the iteration being written */
    int *outer;  /* per body tensor: the outer tensor or constant it reads, -1 */
    bool nested; /* a body node has a body of its own: its inputs are named tensors too */
} unroll;

/* u for body b (owned from here) of node `node`: the body's initializers as constants of g
 * ("<consts>/<name>", consts NULL: "<node>/<name>", one for every iteration), its outer names
 * bound (OC_ERR naming one not defined before the node). node < 0: nothing bound (u only to
 * close). */
static int unroll_open(unroll *u, ir_graph *g, ir_graph *b, int node, const char *consts,
                       oc_err *err) {
    *u = (unroll){.g = g, .b = b, .node = node};
    u->map = oc_malloc(((size_t)b->n_tensors + 1) * sizeof *u->map);
    u->outer = oc_malloc(((size_t)b->n_tensors + 1) * sizeof *u->outer);
    u->base = oc_strdup(node >= 0 ? g->nodes[node].name : "");
    for (int i = 0; i < b->n_nodes && !u->nested; i++)
        for (int a = 0; a < b->nodes[i].n_attrs; a++)
            u->nested = u->nested || b->nodes[i].attrs[a].type == IR_ATTR_GRAPH;
    int rc = OC_OK;
    for (int t = 0; t < b->n_tensors; t++) u->outer[t] = -1;
    for (int t = 0; t < b->n_tensors && rc == OC_OK && node >= 0; t++) {
        const ir_tensor *x = &b->tensors[t];
        if (x->is_initializer) {
            char *name = oc_sprintf("%s/%s", consts ? consts : u->base, x->name);
            u->outer[t] = ir_tensor_add(g, name, x->dtype);
            oc_free(name);
            ir_tensor *y = &g->tensors[u->outer[t]];
            ir_tensor_set_shape(y, x->rank, x->dims);
            ir_tensor_set_data(y, x->data, x->data_bytes);
            y->is_initializer = true;
            y->kind = IR_KIND_CONSTANT;
        } else if (placeholder(x)) {
            rc = outer_tensor(g, node, x, &u->outer[t], err);
        }
    }
    return rc;
}

static void unroll_close(unroll *u) {
    oc_free(u->map), oc_free(u->outer), oc_free(u->base);
    ir_graph_free((ir_graph *)u->b);
}

/* The body's nodes appended to g, named "<prefix>/<node>", reading u->map (set for the body's
 * inputs and outer values; set here for what its nodes write). */
static void emit_nodes(unroll *u, const char *prefix) {
    ir_graph *g = u->g;
    const ir_graph *b = u->b;
    for (int i = 0; i < b->n_nodes; i++) {
        const ir_node *bn = &b->nodes[i];
        char *name = oc_sprintf("%s/%s", prefix, bn->name);
        int n = ir_node_add(g, name, bn->op_type, bn->domain);
        oc_free(name);
        g->nodes[n].op = bn->op;
        for (int k = 0; k < bn->n_inputs; k++)
            ir_node_add_input(g, n, bn->inputs[k] >= 0 ? u->map[bn->inputs[k]] : -1);
        for (int k = 0; k < bn->n_outputs; k++) {
            int y = bn->outputs[k];
            if (y >= 0) {
                name = oc_sprintf("%s/%s", prefix, b->tensors[y].name);
                u->map[y] = ir_tensor_add(g, name, IR_DTYPE_UNDEFINED);
                oc_free(name);
            }
            ir_node_add_output(g, n, y >= 0 ? u->map[y] : -1);
        }
        bool has_body = false;
        for (int a = 0; a < bn->n_attrs; a++) {
            ir_node_add_attr(g, n, &bn->attrs[a]);
            has_body = has_body || bn->attrs[a].type == IR_ATTR_GRAPH;
        }
        if (has_body) { /* its body reads this body's names: prefix, the body's constants
                         * ("<node>/<name>", unroll_open), then the node's scopes */
            const ir_attr *outer =
                u->node >= 0 ? ir_attr_find(&g->nodes[u->node], SCOPE_ATTR) : NULL;
            int ns = 2 + (outer && outer->type == IR_ATTR_STRINGS ? outer->n : 0);
            char **scopes = oc_malloc((size_t)ns * sizeof *scopes);
            scopes[0] = (char *)prefix;
            scopes[1] = u->base;
            for (int k = 2; k < ns; k++) scopes[k] = outer->strings[k - 2];
            ir_attr sa = {.name = SCOPE_ATTR, .type = IR_ATTR_STRINGS, .n = ns, .strings = scopes};
            ir_node_add_attr(g, n, &sa);
            oc_free(scopes);
        }
    }
}

/* Iteration it of the body, appended to g: the carried values cur (updated), its scan
 * outputs' values into scan[k][slot]. */
static void emit_iteration(unroll *u, int64_t it, int64_t slot, int cond, int *cur, int n_carried,
                           int **scan, int n_scan) {
    ir_graph *g = u->g;
    const ir_graph *b = u->b;
    char *prefix = oc_sprintf("%s/iter%" PRId64, u->base, it);
    for (int t = 0; t < b->n_tensors; t++) u->map[t] = u->outer[t];
    char *name = oc_sprintf("%s/iteration", prefix);
    u->map[b->inputs[0]] = scalar_const(g, name, IR_DTYPE_INT64, it);
    oc_free(name);
    u->map[b->inputs[1]] = cond;
    for (int j = 0; j < n_carried; j++) u->map[b->inputs[2 + j]] = cur[j];
    for (int k = 0; k < b->n_inputs && u->nested; k++) { /* named "<prefix>/<input>" for them */
        int t = u->map[b->inputs[k]];
        if (t < 0 || g->tensors[t].is_sequence) continue;
        char *nm = oc_sprintf("%s/%s", prefix, b->tensors[b->inputs[k]].name);
        int id = op_node_add(g, nm, OP_IDENTITY);
        int y = ir_tensor_add(g, nm, IR_DTYPE_UNDEFINED);
        oc_free(nm);
        ir_node_add_input(g, id, t);
        ir_node_add_output(g, id, y);
        u->map[b->inputs[k]] = y;
    }
    emit_nodes(u, prefix);
    for (int j = 0; j < n_carried; j++) cur[j] = u->map[b->outputs[1 + j]];
    for (int k = 0; k < n_scan; k++) scan[k][slot] = u->map[b->outputs[1 + n_carried + k]];
    oc_free(prefix);
}

/* The n values of a scan output, each Unsqueezed to a new first axis (appended), into ins. */
static void unsqueeze_all(unroll *u, const int *vals, int n, int k, int *ins) {
    int64_t axis = 0;
    for (int i = 0; i < n; i++) {
        char what[48];
        snprintf(what, sizeof what, "scan%d/%d", k, i);
        ins[i] = op_rewrite_axes(u->g, u->g->n_nodes, u->base, what, OP_UNSQUEEZE, vals[i], 1,
                                 &axis, 13, -1);
    }
}

/* Loop output j, y: the last carried value (an Identity) or the stacked scan values (a Concat
 * on axis 0), written by the Loop node itself when last (after the appended nodes once they
 * are moved before it), else by a node appended now. */
static void write_output(unroll *u, int j, int y, bool last, const int *cur, int n_carried,
                         int **scan, int64_t trips) {
    ir_graph *g = u->g;
    int n_in = j < n_carried ? 1 : (int)trips;
    int *ins = oc_malloc(((size_t)n_in + 1) * sizeof *ins);
    if (j < n_carried) ins[0] = cur[j];
    else unsqueeze_all(u, scan[j - n_carried], n_in, j - n_carried, ins);
    if (j >= n_carried) { /* past OP_MAX_SPLIT: by groups, appended (moved with the rest) */
        char what[32];
        snprintf(what, sizeof what, "scan%d", j - n_carried);
        int end = g->n_nodes;
        n_in = op_rewrite_concat_groups(g, &end, u->base, what, ins, n_in, 0);
    }
    op_kind k = j < n_carried ? OP_IDENTITY : OP_CONCAT;
    int at = u->node;
    if (last) {
        op_rewrite_become(g, at, k);
    } else {
        char *name = oc_sprintf("%s/output%d", u->base, j);
        at = op_node_add(g, name, k);
        oc_free(name);
    }
    for (int i = 0; i < n_in; i++) ir_node_add_input(g, at, ins[i]);
    if (k == OP_CONCAT) op_rewrite_attr_int(g, at, "axis", 0);
    ir_node_add_output(g, at, y);
    oc_free(ins);
}

/* The Loop's outputs from the carried values cur and the scan values scan (trips each), the
 * Loop node itself the last; the nodes added moved before it. */
static void write_outputs(unroll *u, const int *cur, int n_carried, int **scan, int64_t trips) {
    ir_graph *g = u->g;
    int node = u->node, n_out = g->nodes[node].n_outputs, last_out = -1;
    int *outs = oc_malloc((size_t)n_out * sizeof *outs);
    for (int j = 0; j < n_out; j++) {
        outs[j] = g->nodes[node].outputs[j];
        if (outs[j] >= 0) g->tensors[outs[j]].producer = -1, last_out = j;
    }
    g->nodes[node].n_outputs = 0;
    int first = g->n_nodes;
    for (int j = 0; j < n_out; j++)
        if (outs[j] >= 0 && j != last_out)
            write_output(u, j, outs[j], false, cur, n_carried, scan, trips);
    write_output(u, last_out, outs[last_out], true, cur, n_carried, scan, trips);
    ir_nodes_move_tail(g, first, node);
    oc_free(outs);
}

/* One visit of a Loop whose body computes its condition (condition c, a plan-time value;
 * trips: the trip count, -1 none): iteration `done` unrolled before the Loop, which then
 * reads its condition, carried values and scan values; or, when the condition is false or
 * the count reached, the Loop's outputs written. */
static int loop_step(unroll *u, ir_tensor *c, int64_t trips, int64_t done, int n_carried,
                     int n_scan, bool *changed, oc_err *err) {
    ir_graph *g = u->g;
    int node = u->node;
    int64_t run;
    if (!op_int_scalar(c, true, &run))
        return oc_fail(err,
                       "the condition its body computed after %" PRId64
                       " iterations ('%s') is known only at run time",
                       done, c->name);
    int *cur = oc_malloc(((size_t)n_carried + 1) * sizeof *cur);
    for (int j = 0; j < n_carried; j++) cur[j] = g->nodes[node].inputs[2 + j];
    int rc = OC_OK;
    if (run && (trips < 0 || done < trips)) { /* one more iteration */
        if (done >= LOOP_MAX_ITERATIONS)
            rc = oc_fail(err,
                         "its condition still holds after %d iterations (outcore unrolls "
                         "at most that many)",
                         LOOP_MAX_ITERATIONS);
        else if (g->n_nodes + 2 * (int64_t)u->b->n_nodes + 8 > IR_MAX_NODES)
            rc = oc_fail(err, "unrolled over %" PRId64 " iterations, the graph would pass %d nodes",
                         done + 1, IR_MAX_NODES);
        if (rc == OC_OK) {
            int first = g->n_nodes, *one = oc_malloc(((size_t)n_scan + 1) * sizeof *one);
            int **scan = oc_malloc(((size_t)n_scan + 1) * sizeof *scan);
            for (int k = 0; k < n_scan; k++) scan[k] = one + k; /* this iteration's: slot 0 */
            emit_iteration(u, done, 0, g->nodes[node].inputs[1], cur, n_carried, scan, n_scan);
            int cond = u->map[u->b->outputs[0]];
            ir_node_set_input(g, node, 1, cond);
            for (int j = 0; j < n_carried; j++) ir_node_set_input(g, node, 2 + j, cur[j]);
            for (int k = 0; k < n_scan; k++) ir_node_add_input(g, node, one[k]);
            op_rewrite_attr_drop(g, node, ITERATIONS_ATTR);
            op_rewrite_attr_int(g, node, ITERATIONS_ATTR, done + 1);
            ir_nodes_move_tail(g, first, node);
            oc_free(scan), oc_free(one);
        }
    } else { /* the outputs: carried values, scan values stacked */
        if (n_scan > 0 && done == 0)
            rc = oc_fail(err, "a scan output of no iterations (an empty tensor)");
        else if (n_scan > 0 && done > OP_MAX_SPLIT * OP_MAX_SPLIT)
            rc =
                oc_fail(err, "scan outputs over %" PRId64 " iterations (outcore stacks at most %d)",
                        done, OP_MAX_SPLIT * OP_MAX_SPLIT);
        if (rc == OC_OK) {
            int **scan = oc_calloc((size_t)n_scan + 1, sizeof *scan);
            for (int k = 0; k < n_scan; k++) {
                scan[k] = oc_malloc(((size_t)done + 1) * sizeof **scan);
                for (int64_t it = 0; it < done; it++)
                    scan[k][it] = g->nodes[node].inputs[2 + n_carried + it * n_scan + k];
            }
            write_outputs(u, cur, n_carried, scan, done);
            for (int k = 0; k < n_scan; k++) oc_free(scan[k]);
            oc_free(scan);
        }
    }
    oc_free(cur);
    if (rc == OC_OK) *changed = true;
    return rc;
}

static int loop_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    if (bag_loop_lower(g, node)) return *changed = true, OC_OK; /* nn.EmbeddingBag's, whole */
    ir_node *n = &g->nodes[node];
    int64_t trips = -1, run = 1, done = ir_attr_int(n, ITERATIONS_ATTR, 0);
    if (n->n_inputs < 2)
        return oc_fail(err,
                       "has %d inputs; a Loop lists its trip count and condition (either "
                       "may be empty) before its carried values",
                       n->n_inputs);
    ir_tensor *m = ir_node_in(g, n, 0), *c = ir_node_in(g, n, 1);
    if (!m && !c)
        return oc_fail(err, "neither a trip count nor a condition: a loop that never ends");
    if (m && !(op_is_value(m) && op_int_scalar(m, true, &trips)))
        return oc_fail(err,
                       "trip count '%s' is computed at run time; outcore unrolls loops whose "
                       "count is known at load",
                       m->name);
    if (c && done == 0 && !(op_is_value(c) && op_int_scalar(c, true, &run)))
        return oc_fail(err, "condition '%s' is computed at run time", c->name);
    if (m && (trips < 0 || trips > LOOP_MAX_ITERATIONS))
        return oc_fail(err, "trip count %" PRId64 " (outcore unrolls 0 to %d iterations)", trips,
                       LOOP_MAX_ITERATIONS);
    const ir_attr *ba = ir_attr_find(n, "body");
    if (!ba || ba->type != IR_ATTR_GRAPH) return oc_fail(err, "attribute 'body' is required");
    ir_graph *b;
    if (onnx_import_body(g, ba, "body", &b, err)) return OC_ERR;
    int n_carried = b->n_inputs - 2, n_scan = b->n_outputs - 1 - n_carried, rc = OC_OK;
    if (n_carried < 0 || n_scan < 0 || n->n_inputs != 2 + n_carried + done * n_scan ||
        n->n_outputs > n_carried + n_scan)
        rc = oc_fail(err,
                     "its body takes %d inputs and gives %d outputs; the Loop carries %d "
                     "values and has %d outputs",
                     b->n_inputs, b->n_outputs, n->n_inputs - 2, n->n_outputs);
    for (int j = 0; j < n_carried && rc == OC_OK; j++)
        if (n->inputs[2 + j] < 0) rc = oc_fail(err, "carried value %d has no initial value", j);
    for (int i = 0; i < b->n_nodes && rc == OC_OK; i++)
        if (b->nodes[i].op == OP_LOOP)
            rc = oc_fail(err, "its body holds a Loop ('%s'), which is not supported",
                         b->nodes[i].name);
    int last_out = -1;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0) last_out = j;
    if (rc == OC_OK && last_out < 0) rc = oc_fail(err, "the Loop has no output");
    /* stepped: a condition the body computes, and the iterations of earlier visits */
    bool stepped = rc == OC_OK && (done > 0 || (c && !condition_kept(g, node, b)));
    if (rc == OC_OK && !stepped && !m)
        rc = oc_fail(err, "no trip count, and a condition its body keeps: a loop that never ends");
    unroll u;
    char *consts = stepped ? oc_sprintf("%s/iter%" PRId64, g->nodes[node].name, done) : NULL;
    if (rc == OC_OK) rc = unroll_open(&u, g, b, node, consts, err);
    else unroll_open(&u, g, b, -1, NULL, err);
    oc_free(consts);
    if (rc == OC_OK && stepped) {
        rc = loop_step(&u, ir_node_in(g, &g->nodes[node], 1), trips, done, n_carried, n_scan,
                       changed, err);
        unroll_close(&u);
        return rc;
    }
    if (!run) trips = 0;
    if (rc == OC_OK &&
        g->n_nodes + trips * (b->n_nodes + 2 + n_scan + b->n_inputs) + 2 * n->n_outputs >
            IR_MAX_NODES)
        rc = oc_fail(err, "unrolled over %" PRId64 " iterations, the graph would pass %d nodes",
                     trips, IR_MAX_NODES);
    if (rc == OC_OK && n_scan > 0 && trips == 0)
        rc = oc_fail(err, "a scan output of no iterations (an empty tensor)");
    if (rc == OC_OK && trips > OP_MAX_SPLIT * OP_MAX_SPLIT && n_scan > 0)
        rc = oc_fail(err, "scan outputs over %" PRId64 " iterations (outcore stacks at most %d)",
                     trips, OP_MAX_SPLIT * OP_MAX_SPLIT);
    if (rc == OC_OK) {
        n = &g->nodes[node];
        int cond = c ? n->inputs[1] : -1;
        if (cond < 0) {
            char *name = oc_sprintf("%s/true", u.base);
            cond = scalar_const(g, name, IR_DTYPE_BOOL, 1);
            oc_free(name);
        }
        int *cur = oc_malloc(((size_t)n_carried + 1) * sizeof *cur);
        for (int j = 0; j < n_carried; j++) cur[j] = g->nodes[node].inputs[2 + j];
        int **scan = oc_calloc((size_t)n_scan + 1, sizeof *scan);
        for (int k = 0; k < n_scan; k++) scan[k] = oc_malloc(((size_t)trips + 1) * sizeof **scan);
        int first = g->n_nodes;
        for (int64_t it = 0; it < trips; it++)
            emit_iteration(&u, it, it, cond, cur, n_carried, scan, n_scan);
        int moved = g->n_nodes - first;
        ir_nodes_move_tail(g, first, node);
        u.node = node + moved; /* the Loop, after its iterations */
        write_outputs(&u, cur, n_carried, scan, trips);
        for (int k = 0; k < n_scan; k++) oc_free(scan[k]);
        oc_free(scan);
        oc_free(cur);
        *changed = true;
    }
    unroll_close(&u);
    return rc;
}

/* The node of body b writing its tensor t, or NULL. */
static const ir_node *body_producer(const ir_graph *b, int t) {
    return t >= 0 && b->tensors[t].producer >= 0 ? &b->nodes[b->tensors[t].producer] : NULL;
}

/* Whether x holds float data whose bytes are all 0. */
static bool float_zeros(const ir_tensor *x) {
    return x && ir_dtype_is_float(x->dtype) && op_data_zero(x);
}

/* Whether tensor t of body b is a float Constant of zeros. */
static bool body_zeros(const ir_graph *b, int t) {
    const ir_node *p = body_producer(b, t);
    const ir_attr *a = p && p->op == OP_CONSTANT && p->n_attrs == 1 ? &p->attrs[0] : NULL;
    if (!a) return false;
    if (strcmp(a->name, "value_float") == 0 && a->type == IR_ATTR_FLOAT) return a->f == 0;
    bool all = true;
    if (strcmp(a->name, "value_floats") == 0 && a->type == IR_ATTR_FLOATS) {
        for (int i = 0; i < a->n; i++) all = all && a->floats[i] == 0;
        return all && a->n > 0;
    }
    return strcmp(a->name, "value") == 0 && a->type == IR_ATTR_TENSOR && float_zeros(a->t);
}

/* Node n's branch `which` imported, its sole output's producer (*out: the output) or NULL;
 * *b to free by the caller. */
static const ir_node *branch_result(const ir_graph *g, const ir_node *n, const char *which,
                                    ir_graph **b, int *out) {
    const ir_attr *ba = ir_attr_find(n, which);
    oc_err ignored;
    *b = NULL;
    *out = -1;
    if (!ba || ba->type != IR_ATTR_GRAPH || onnx_import_body(g, ba, which, b, &ignored))
        return NULL;
    if ((*b)->n_inputs != 0 || (*b)->n_outputs != 1) return NULL;
    *out = (*b)->outputs[0];
    return body_producer(*b, *out);
}

/* An If on a condition computed at run time that outcore takes when a load-time rewrite
 * turns what reads it into one reduction (bag_reduce.c), which refuses it otherwise: the
 * branch taken, 1 then or 0 else, or -1. torch.export's nn.EmbeddingBag tests each bag for
 * emptiness, Equal(start, end), and gives zeros then: else is taken (the reduction gives an
 * empty bag zeros); its last mean bag divides by the ids from its start when there are
 * any, Greater(d, 0) then Div(x, d) else x: then is taken (an empty bag is zeros already). */
static int guarded_branch(const ir_graph *g, const ir_node *n, const ir_tensor *c) {
    const ir_node *p = c->producer >= 0 ? &g->nodes[c->producer] : NULL;
    if (!p || n->n_outputs != 1 || (p->op != OP_EQUAL && p->op != OP_GREATER)) return -1;
    ir_graph *tb, *eb;
    int to, eo, pick = -1;
    const ir_node *t = branch_result(g, n, "then_branch", &tb, &to),
                  *e = branch_result(g, n, "else_branch", &eb, &eo);
    if (p->op == OP_EQUAL && e &&
        ((t && t->op == OP_EXPAND && body_zeros(tb, t->inputs[0])) || /* torch.export's */
         (tb && !t && to >= 0 && tb->tensors[to].is_initializer &&    /* optimized: folded */
          float_zeros(&tb->tensors[to])))) {
        pick = 0;
    } else if (p->op == OP_GREATER && t && e && t->op == OP_DIV && e->op == OP_IDENTITY &&
               t->n_inputs == 2 && e->n_inputs == 1 &&
               strcmp(tb->tensors[t->inputs[0]].name, eb->tensors[e->inputs[0]].name) == 0) {
        int64_t zero; /* Div(x, Cast[Like](d)) where Greater(d, 0) */
        const ir_tensor *z = p->inputs[1] >= 0 ? &g->tensors[p->inputs[1]] : NULL;
        const ir_node *cast = body_producer(tb, t->inputs[1]);
        int d = cast && (cast->op == OP_CAST || cast->op == OP_CAST_LIKE) && cast->inputs[0] >= 0
                    ? scoped_find(g, n, tb->tensors[cast->inputs[0]].name)
                    : -1;
        if (d >= 0 && d == p->inputs[0] && z && op_is_value(z) && op_int_scalar(z, false, &zero) &&
            zero == 0)
            pick = 1;
    }
    if (tb) ir_graph_free(tb);
    if (eb) ir_graph_free(eb);
    return pick;
}

/* If with a condition known at load (torch's legacy export of a shape test: MViT's residual
 * pooling), or one guarded_branch takes: the chosen branch's nodes in its place
 * ("<if>/then/<node>", "<if>/else/<node>"), its outputs the If's (an Identity each, the last
 * by the If node itself; a guarded one's marked with IR_ATTR_RUN_TIME, the condition's name). */
static int if_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    const ir_node *n = &g->nodes[node];
    int64_t cond;
    ir_tensor *c = ir_node_in(g, n, 0);
    int guard = -1;
    if (!c || !((op_is_value(c) && op_int_scalar(c, true, &cond)) ||
                (guard = guarded_branch(g, n, c)) >= 0))
        return oc_fail(err,
                       "condition '%s' is computed at run time; outcore takes an If whose "
                       "condition is known at load",
                       c ? c->name : "");
    if (guard >= 0) cond = guard;
    const char *which = cond ? "then_branch" : "else_branch";
    const ir_attr *ba = ir_attr_find(n, which);
    if (!ba || ba->type != IR_ATTR_GRAPH) return oc_fail(err, "attribute '%s' is required", which);
    ir_graph *b;
    if (onnx_import_body(g, ba, which, &b, err)) return OC_ERR;
    int rc = OC_OK, last = -1;
    char *guard_name = guard >= 0 ? oc_strdup(c->name) : NULL; /* g's tensors move below */
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0) last = j;
    if (b->n_inputs != 0 || b->n_outputs != n->n_outputs || last < 0)
        rc = oc_fail(err, "its %s takes %d inputs and gives %d outputs for the If's %d", which,
                     b->n_inputs, b->n_outputs, n->n_outputs);
    for (int i = 0; i < b->n_nodes && rc == OC_OK; i++)
        if (b->nodes[i].op == OP_LOOP)
            rc = oc_fail(err, "its %s holds a %s ('%s'), which is not supported", which,
                         b->nodes[i].op_type, b->nodes[i].name);
    unroll u;
    if (rc == OC_OK) rc = unroll_open(&u, g, b, node, NULL, err);
    else unroll_open(&u, g, b, -1, NULL, err);
    if (rc == OC_OK) {
        int n_out = g->nodes[node].n_outputs, *outs = oc_malloc((size_t)n_out * sizeof *outs);
        for (int j = 0; j < n_out; j++) {
            outs[j] = g->nodes[node].outputs[j];
            if (outs[j] >= 0) g->tensors[outs[j]].producer = -1;
        }
        g->nodes[node].n_outputs = 0;
        int first = g->n_nodes;
        for (int t = 0; t < b->n_tensors; t++) u.map[t] = u.outer[t];
        char *prefix = oc_sprintf("%s/%s", u.base, cond ? "then" : "else");
        emit_nodes(&u, prefix);
        oc_free(prefix);
        for (int j = 0; j < n_out; j++) {
            if (outs[j] < 0) continue;
            int at = node;
            if (j == last) {
                op_rewrite_become(g, node, OP_IDENTITY);
            } else {
                char *name = oc_sprintf("%s/output%d", u.base, j);
                at = op_node_add(g, name, OP_IDENTITY);
                oc_free(name);
            }
            ir_node_add_input(g, at, u.map[b->outputs[j]]);
            ir_node_add_output(g, at, outs[j]);
            if (guard_name) {
                ir_attr a = {
                    .name = (char *)IR_ATTR_RUN_TIME, .type = IR_ATTR_STRING, .s = guard_name};
                ir_node_add_attr(g, at, &a);
            }
        }
        ir_nodes_move_tail(g, first, node);
        oc_free(outs);
        *changed = true;
    }
    unroll_close(&u);
    oc_free(guard_name);
    return rc;
}

/* A growing list of names (not owned). */
typedef struct name_list {
    const char **v;
    int n, cap;
    ir_graph **keep; /* the imported bodies the names point into (freed by the caller) */
    int n_keep, cap_keep;
} name_list;

static void names_push(name_list *l, const char *s) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = oc_realloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] = s;
}

/* The names node n's bodies read from outside them, nested bodies' included: a body's
 * placeholders, and what its own nodes' bodies read that it does not define (depth: the
 * nesting left; a body that does not import reads nothing here, its lowering names it). */
static void body_reads(const ir_graph *g, const ir_node *n, name_list *l, int depth) {
    for (int a = 0; a < n->n_attrs && depth > 0; a++) {
        if (n->attrs[a].type != IR_ATTR_GRAPH) continue;
        ir_graph *b;
        oc_err ignored;
        if (onnx_import_body(g, &n->attrs[a], "body", &b, &ignored)) continue;
        if (l->n_keep == l->cap_keep) {
            l->cap_keep = l->cap_keep ? 2 * l->cap_keep : 4;
            l->keep = oc_realloc(l->keep, (size_t)l->cap_keep * sizeof *l->keep);
        }
        l->keep[l->n_keep++] = b;
        for (int t = 0; t < b->n_tensors; t++)
            if (placeholder(&b->tensors[t])) names_push(l, b->tensors[t].name);
        for (int i = 0; i < b->n_nodes; i++) {
            name_list inner = {0};
            body_reads(b, &b->nodes[i], &inner, depth - 1);
            for (int k = 0; k < inner.n; k++) {
                int t = ir_tensor_find(b, inner.v[k]);
                if (t < 0 || placeholder(&b->tensors[t])) names_push(l, inner.v[k]);
            }
            for (int k = 0; k < inner.n_keep; k++) { /* the names live on in l */
                if (l->n_keep == l->cap_keep) {
                    l->cap_keep *= 2;
                    l->keep = oc_realloc(l->keep, (size_t)l->cap_keep * sizeof *l->keep);
                }
                l->keep[l->n_keep++] = inner.keep[k];
            }
            oc_free(inner.v), oc_free(inner.keep);
        }
    }
}

/* The tensors of g the bodies (every GRAPH attribute) of node n read by name, nested
 * bodies' reads included: found in g through n's scopes. */
static int *body_captures(const ir_graph *g, const ir_node *n, int *count) {
    name_list l = {0};
    body_reads(g, n, &l, 8);
    int *out = oc_malloc(((size_t)l.n + 1) * sizeof *out);
    *count = 0;
    for (int k = 0; k < l.n; k++) {
        int x = scoped_find(g, n, l.v[k]);
        if (x >= 0) out[(*count)++] = x;
    }
    for (int k = 0; k < l.n_keep; k++) ir_graph_free(l.keep[k]);
    oc_free(l.v), oc_free(l.keep);
    return out;
}

/* Never reached: unrolled before shapes are inferred. */
static int loop_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)opset;
    return oc_fail(err, "%s reached shape inference unrolled", n->op_type);
}

static const op_role loop_roles[] = {OP_IN_CONST, OP_IN_CONST, OP_IN_DATA};

static const op_role if_roles[] = {OP_IN_CONST};

const op_def op_def_if = {.min_inputs = 1,
                          .max_inputs = 1,
                          .min_outputs = 1,
                          .output0_optional = true,
                          .max_outputs = -1,
                          .roles = if_roles,
                          .n_roles = 1,
                          .infer = loop_infer,
                          .lower = if_lower,
                          .captures = body_captures};

const op_def op_def_loop = {.min_inputs = 0, /* M and cond may be empty: loop_lower */
                            .max_inputs = -1,
                            .min_outputs = 1,
                            .output0_optional = true,
                            .max_outputs = -1,
                            .roles = loop_roles,
                            .n_roles = 3,
                            .infer = loop_infer,
                            .lower = loop_lower,
                            .captures = body_captures};
