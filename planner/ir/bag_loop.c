/* bag_loop.c — see bag_loop.h. */
#include "ir/bag_loop.h"

#include <stdlib.h>
#include <string.h>

#include "ir/onnx_import.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"
#include "ir/strmap.h"

#define BRANCH_DEPTH 8 /* Ifs within Ifs: torch.export's mean bag has 4 */

/* A value of the body, symbolically: what the forms below need, AV_NONE for the rest. */
typedef enum av_kind {
    AV_NONE,
    AV_OUTER,     /* tensor t of g, known only at run time */
    AV_INT,       /* an integer known at load: v */
    AV_ZEROS,     /* a float tensor of zeros */
    AV_K,         /* the iteration number k + v */
    AV_BOUND,     /* E[k + v], E tensor e of g */
    AV_IDS,       /* legacy: ids t from E[k] to E[k + 1] */
    AV_ROWS,      /* rows t from E[k] to E[k + 1]; legacy: table t gathered at ids u so */
    AV_BAG,       /* their sum (mode 0) or mean (mode 1), keepdims keep */
    AV_BAG_DIV,   /* their sum divided by Cast(v - E[k]) (torch.export's last mean bag) */
    AV_DEN,       /* v - E[k]; cast to float: is_float */
    AV_EMPTY,     /* E[k] == E[k + 1] */
    AV_LAST,      /* k == v */
    AV_DEN_ABOVE, /* v - E[k] > 0 */
    AV_MORE,      /* k + 1 < v: another iteration */
    AV_SEQ,       /* the carried sequence (empty at first) */
    AV_SEQ_BAG,   /* it with a bag appended: bag (an index of the values) */
    AV_WEIGHTS,   /* legacy: per-id weights t from E[k] to E[k + 1], as a column [.., 1] */
} av_kind;

typedef struct av {
    av_kind kind;
    int rank;      /* AV_INT, AV_K, AV_BOUND: 0 or 1 (one element) */
    int64_t v;     /* see the kinds */
    int t, u, e;   /* tensors of g: see the kinds */
    int mode;      /* AV_BAG */
    bool keep;     /* AV_BAG: the reduced axis kept */
    bool legacy;   /* AV_ROWS, AV_BAG: a table gathered at ids */
    bool is_float; /* AV_DEN */
    bool to_end;   /* AV_ROWS, AV_BAG: from E[k] to v, not E[k + 1] (the last max bag) */
    bool weighted; /* AV_ROWS, AV_BAG (legacy): each row times its weight, of tensor w */
    int w;
    int bag; /* AV_SEQ_BAG */
} av;

typedef struct evaluator {
    ir_graph *g;
    bool last;   /* the scenario: the last iteration, else one before it */
    int64_t n;   /* the bags (-1 until known) */
    strmap *env; /* name -> index into vals */
    av *vals;
    int n_vals, cap_vals;
    int depth;
} evaluator;

static int keep_value(evaluator *ev, av v) {
    if (ev->n_vals == ev->cap_vals) {
        ev->cap_vals = ev->cap_vals ? 2 * ev->cap_vals : 64;
        ev->vals = oc_realloc(ev->vals, (size_t)ev->cap_vals * sizeof *ev->vals);
    }
    ev->vals[ev->n_vals] = v;
    return ev->n_vals++;
}

static void bind(evaluator *ev, const char *name, av v) {
    strmap_put(ev->env, name, keep_value(ev, v));
}

static const av none = {.kind = AV_NONE};

/* The node writing tensor *t of g past Identity nodes (*t: the tensor they copy), or NULL. */
static const ir_node *producer_past_copies(const ir_graph *g, int *t) {
    for (int hops = 0; hops < 8; hops++) {
        const ir_tensor *x = &g->tensors[*t];
        const ir_node *p = x->producer >= 0 ? &g->nodes[x->producer] : NULL;
        if (!p || p->op != OP_IDENTITY || p->n_inputs != 1 || p->inputs[0] < 0) return p;
        *t = p->inputs[0];
    }
    return NULL;
}

/* A bound's tensor as a suffix of another: Slice(E, [s], [>= len], axes [0], steps [1])
 * of plan-time bounds is E shifted by s. */
static int shifted_base(const ir_graph *g, int t, int64_t *shift) {
    *shift = 0;
    for (int hops = 0; hops < 4; hops++) {
        const ir_node *p = producer_past_copies(g, &t);
        const ir_tensor *x = &g->tensors[t];
        if (!p || p->op != OP_SLICE || p->n_inputs < 3 || x->rank != 1 || p->inputs[0] < 0 ||
            p->inputs[1] < 0 || p->inputs[2] < 0)
            return t;
        const ir_tensor *d = &g->tensors[p->inputs[0]];
        int64_t s, e, ax = 0, st = 1;
        bool ok = d->rank == 1 && op_is_value(&g->tensors[p->inputs[1]]) &&
                  op_int_scalar(&g->tensors[p->inputs[1]], false, &s) &&
                  op_is_value(&g->tensors[p->inputs[2]]) &&
                  op_int_scalar(&g->tensors[p->inputs[2]], false, &e) &&
                  (p->n_inputs < 4 || p->inputs[3] < 0 ||
                   op_int_scalar(&g->tensors[p->inputs[3]], false, &ax)) &&
                  (p->n_inputs < 5 || p->inputs[4] < 0 ||
                   op_int_scalar(&g->tensors[p->inputs[4]], false, &st));
        if (!ok || ax != 0 || st != 1 || s < 0 || s > d->dims[0] || e < d->dims[0]) return t;
        *shift += s;
        t = p->inputs[0];
    }
    return t;
}

/* Tensor t of g (outside the body) as a value. */
static av outer_value(const ir_graph *g, int t) {
    const ir_tensor *x = &g->tensors[t];
    int64_t v;
    if (op_is_value(x) && ir_dtype_is_float(x->dtype) && op_data_zero(x))
        return (av){.kind = AV_ZEROS};
    if (op_is_value(x) && !ir_dtype_is_float(x->dtype) && op_int_scalar(x, true, &v))
        return (av){.kind = AV_INT, .v = v, .rank = x->rank > 0};
    if (op_is_value(x) && x->dtype == IR_DTYPE_INT64 && x->rank == 1)
        return (av){.kind = AV_OUTER, .t = t}; /* bounds known at load: fixed-size bags */
    if (op_is_value(x) || x->is_sequence) return none;
    return (av){.kind = AV_OUTER, .t = t};
}

/* Tensor t of body or branch b as a value: an initializer's, a name the body bound, or g's. */
static av value_of(evaluator *ev, const ir_graph *b, int t) {
    if (t < 0) return none;
    const ir_tensor *x = &b->tensors[t];
    if (x->is_initializer) return outer_value(b, t);
    const int *k = strmap_get(ev->env, x->name);
    if (k) return ev->vals[*k];
    if (x->producer >= 0 || x->is_graph_input) return none;
    int o = ir_tensor_find(ev->g, x->name);
    return o >= 0 ? outer_value(ev->g, o) : none;
}

static bool is_int(av a, int64_t v) { return a.kind == AV_INT && a.v == v; }

/* A Constant node's value. */
static av constant_value(const ir_node *n) {
    const ir_attr *a = n->n_attrs == 1 ? &n->attrs[0] : NULL;
    if (!a) return none;
    if (a->type == IR_ATTR_TENSOR && a->t) {
        const ir_tensor *x = a->t;
        int64_t v, numel;
        if (ir_dtype_is_float(x->dtype) && op_data_zero(x)) return (av){.kind = AV_ZEROS};
        if (!ir_dtype_is_float(x->dtype) && ir_tensor_numel(x, &numel) && numel == 1 &&
            op_int_scalar(x, true, &v))
            return (av){.kind = AV_INT, .v = v, .rank = x->rank > 0};
        return none;
    }
    if (strcmp(a->name, "value_int") == 0 && a->type == IR_ATTR_INT)
        return (av){.kind = AV_INT, .v = a->i};
    if (strcmp(a->name, "value_ints") == 0 && a->type == IR_ATTR_INTS && a->n == 1)
        return (av){.kind = AV_INT, .v = a->ints[0], .rank = 1};
    if (strcmp(a->name, "value_float") == 0 && a->type == IR_ATTR_FLOAT && a->f == 0)
        return (av){.kind = AV_ZEROS};
    if (strcmp(a->name, "value_floats") == 0 && a->type == IR_ATTR_FLOATS && a->n > 0) {
        for (int i = 0; i < a->n; i++)
            if (a->floats[i] != 0) return none;
        return (av){.kind = AV_ZEROS};
    }
    return none;
}

/* Whether axes (input i from opset `from`, else the attribute) are exactly {0}. */
static bool axes_are(evaluator *ev, const ir_graph *b, const ir_node *n, int64_t from, int i,
                     int64_t axis) {
    if (ev->g->opset >= from) return n->n_inputs > i && is_int(value_of(ev, b, n->inputs[i]), axis);
    const int64_t *v;
    return ir_attr_ints(n, "axes", &v) == 1 && v[0] == axis;
}

static bool axes_zero(evaluator *ev, const ir_graph *b, const ir_node *n, int64_t from, int i) {
    return axes_are(ev, b, n, from, i, 0);
}

static av eval_graph(evaluator *ev, const ir_graph *b, int out);

/* Branch `which` of If node n (of b) evaluated: the value of its one output. */
static av eval_branch(evaluator *ev, const ir_node *n, const char *which) {
    const ir_attr *a = ir_attr_find(n, which);
    ir_graph *br;
    oc_err ignored;
    if (!a || a->type != IR_ATTR_GRAPH || ev->depth >= BRANCH_DEPTH ||
        onnx_import_body(ev->g, a, which, &br, &ignored))
        return none;
    av r = none;
    if (br->n_inputs == 0 && br->n_outputs == 1) {
        ev->depth++;
        r = eval_graph(ev, br, br->outputs[0]);
        ev->depth--;
    }
    ir_graph_free(br);
    return r;
}

static bool same_rows(av a, av b) {
    return a.t == b.t && a.u == b.u && a.e == b.e && a.legacy == b.legacy &&
           a.weighted == b.weighted && (!a.weighted || a.w == b.w);
}

static av eval_if(evaluator *ev, const ir_node *n, av c) {
    if (n->n_outputs != 1) return none;
    if (c.kind == AV_INT) return eval_branch(ev, n, c.v ? "then_branch" : "else_branch");
    if (c.kind == AV_LAST) {
        if (ev->n < 1 || c.v != ev->n - 1) return none;
        return eval_branch(ev, n, ev->last ? "then_branch" : "else_branch");
    }
    av t = eval_branch(ev, n, "then_branch"), e = eval_branch(ev, n, "else_branch");
    if (c.kind == AV_EMPTY) /* zeros for an empty bag: what the bag's reduction gives */
        return t.kind == AV_ZEROS && (e.kind == AV_BAG || e.kind == AV_BAG_DIV) && e.e == c.e
                   ? e
                   : none;
    if (c.kind == AV_DEN_ABOVE) /* x / d where d > 0, else x: x is 0 where d is */
        return t.kind == AV_BAG_DIV && e.kind == AV_BAG && e.mode == 0 && e.keep &&
                       same_rows(t, e) && t.v == c.v && t.e == c.e
                   ? t
                   : none;
    return none;
}

/* Node n of b evaluated: its output's value. */
static av eval_node(evaluator *ev, const ir_graph *b, const ir_node *n) {
    av a = n->n_inputs > 0 ? value_of(ev, b, n->inputs[0]) : none;
    av c = n->n_inputs > 1 ? value_of(ev, b, n->inputs[1]) : none;
    const ir_graph *g = ev->g;
    switch (n->op) {
    case OP_CONSTANT: return constant_value(n);
    case OP_IDENTITY: return a;
    case OP_IF: return eval_if(ev, n, a);
    case OP_RESHAPE: /* to [-1] or [1]: one element, rank 1 */
        if ((a.kind == AV_INT || a.kind == AV_K || a.kind == AV_BOUND) &&
            (is_int(c, -1) || is_int(c, 1)) && c.rank == 1)
            return a.rank = 1, a;
        return none;
    case OP_CAST_LIKE:
    case OP_CAST: {
        ir_dtype to = IR_DTYPE_UNDEFINED;
        if (n->op == OP_CAST) to = (ir_dtype)ir_attr_int(n, "to", 0);
        else if (c.kind == AV_OUTER) to = g->tensors[c.t].dtype;
        else if (c.kind == AV_INT || c.kind == AV_K || c.kind == AV_BOUND ||
                 (c.kind == AV_DEN && !c.is_float))
            to = IR_DTYPE_INT64;
        if (to == IR_DTYPE_INT64 && (a.kind == AV_INT || a.kind == AV_K || a.kind == AV_BOUND ||
                                     (a.kind == AV_DEN && !a.is_float)))
            return a;
        if (to == IR_DTYPE_BOOL && a.kind == AV_INT) return a.v = a.v != 0, a;
        if (a.kind == AV_DEN && !a.is_float && ir_dtype_is_float(to)) return a.is_float = true, a;
        return none;
    }
    case OP_ADD: { /* k + c, c + k, or constants; none past int64 */
        av k = a.kind == AV_INT ? c : a, d = a.kind == AV_INT ? a : c;
        if (d.kind != AV_INT || (k.kind != AV_K && k.kind != AV_INT) ||
            __builtin_add_overflow(k.v, d.v, &k.v))
            return none;
        return k.rank |= d.rank, k;
    }
    case OP_SUB:
        if (a.kind == AV_INT && c.kind == AV_BOUND && c.v == 0)
            return (av){.kind = AV_DEN, .v = a.v, .e = c.e, .rank = 1};
        if (a.kind == AV_INT && c.kind == AV_INT && !__builtin_sub_overflow(a.v, c.v, &a.v))
            return a.rank |= c.rank, a;
        return none;
    case OP_SHAPE: { /* of a tensor of g: one dim, as [d] */
        const ir_tensor *x = a.kind == AV_OUTER ? &g->tensors[a.t] : NULL;
        int64_t r = x ? x->rank : 0, s = ir_attr_int(n, "start", 0), e = ir_attr_int(n, "end", r);
        if (s < 0) s += r;
        if (e < 0) e += r;
        if (e > r) e = r;
        return x && s >= 0 && e - s == 1 ? (av){.kind = AV_INT, .v = x->dims[s], .rank = 1} : none;
    }
    case OP_SLICE: {
        av ax = n->n_inputs > 3 ? value_of(ev, b, n->inputs[3]) : (av){.kind = AV_INT, .v = 0};
        av st = n->n_inputs > 4 ? value_of(ev, b, n->inputs[4]) : (av){.kind = AV_INT, .v = 1};
        av e = n->n_inputs > 2 ? value_of(ev, b, n->inputs[2]) : none;
        if ((n->n_inputs > 3 && n->inputs[3] < 0) || n->n_inputs <= 3) ax = (av){.kind = AV_INT};
        if (n->n_inputs <= 4 || n->inputs[4] < 0) st = (av){.kind = AV_INT, .v = 1};
        if (!is_int(ax, 0) || !is_int(st, 1) || a.kind != AV_OUTER) return none;
        const ir_tensor *x = &g->tensors[a.t];
        if (c.kind == AV_K && e.kind == AV_K && c.v < INT32_MAX && c.v > -1 && e.v == c.v + 1 &&
            x->dtype == IR_DTYPE_INT64 && x->rank == 1) { /* one bound */
            int64_t shift;
            int base = shifted_base(g, a.t, &shift);
            return (av){.kind = AV_BOUND, .e = base, .v = c.v + shift, .rank = 1};
        }
        if (c.kind == AV_BOUND && e.kind == AV_BOUND && c.e == e.e && c.v == 0 && e.v == 1 &&
            c.rank == 1 && e.rank == 1) /* a bag */
            return (av){
                .kind = x->dtype == IR_DTYPE_INT64 ? AV_IDS : AV_ROWS, .t = a.t, .e = c.e, .u = -1};
        if (c.kind == AV_BOUND && c.v == 0 && c.rank == 1 && e.kind == AV_INT && e.rank == 1 &&
            ir_dtype_is_float(x->dtype)) /* the last bag, to the end: E must end there */
            return (av){.kind = AV_ROWS, .t = a.t, .e = c.e, .u = -1, .to_end = true, .v = e.v};
        return none;
    }
    case OP_GATHER:
        if (ir_attr_int(n, "axis", 0) != 0 || n->n_attrs > 1 || a.kind != AV_OUTER) return none;
        if (c.kind == AV_K && c.rank == 0 && c.v >= 0 && c.v < INT32_MAX &&
            g->tensors[a.t].dtype == IR_DTYPE_INT64 && g->tensors[a.t].rank == 1) {
            int64_t shift;
            int base = shifted_base(g, a.t, &shift);
            return (av){.kind = AV_BOUND, .e = base, .v = c.v + shift, .rank = 0};
        }
        if (c.kind == AV_IDS && ir_dtype_is_float(g->tensors[a.t].dtype))
            return (av){.kind = AV_ROWS, .t = a.t, .u = c.t, .e = c.e, .legacy = true};
        return none;
    case OP_UNSQUEEZE:
        if (a.kind == AV_BOUND && a.rank == 0 && axes_zero(ev, b, n, 13, 1)) return a.rank = 1, a;
        if (a.kind == AV_ROWS && !a.legacy && !a.to_end && g->tensors[a.t].rank == 1 &&
            axes_are(ev, b, n, 13, 1, 1)) /* per-id weights, as a column */
            return (av){.kind = AV_WEIGHTS, .t = a.t, .e = a.e};
        return none;
    case OP_MUL: { /* the legacy export's weighted bag: the rows times the weights' column */
        av r = a.kind == AV_WEIGHTS ? c : a, w = a.kind == AV_WEIGHTS ? a : c;
        if (r.kind == AV_ROWS && r.legacy && !r.weighted && w.kind == AV_WEIGHTS && r.e == w.e &&
            g->tensors[r.t].rank == 2)
            return r.weighted = true, r.w = w.t, r;
        return none;
    }
    case OP_EQUAL:
        if (a.kind == AV_BOUND && c.kind == AV_BOUND && a.e == c.e &&
            ((a.v == 0 && c.v == 1) || (a.v == 1 && c.v == 0)))
            return (av){.kind = AV_EMPTY, .e = a.e};
        if (a.kind == AV_K && a.v == 0 && c.kind == AV_INT) return (av){.kind = AV_LAST, .v = c.v};
        if (a.kind == AV_INT && c.kind == AV_INT) return (av){.kind = AV_INT, .v = a.v == c.v};
        return none;
    case OP_GREATER:
        if (a.kind == AV_DEN && !a.is_float && is_int(c, 0))
            return (av){.kind = AV_DEN_ABOVE, .v = a.v, .e = a.e};
        return none;
    case OP_LESS:
        if (a.kind == AV_K && a.v == 1 && c.kind == AV_INT) return (av){.kind = AV_MORE, .v = c.v};
        return none;
    case OP_REDUCE_SUM:
    case OP_REDUCE_MEAN:
    case OP_REDUCE_MAX: {
        bool sum = n->op == OP_REDUCE_SUM;
        if (a.kind != AV_ROWS || ir_attr_int(n, "noop_with_empty_axes", 0) != 0 ||
            !axes_zero(ev, b, n, sum ? 13 : 18, 1))
            return none;
        a.kind = AV_BAG, a.mode = sum ? 0 : n->op == OP_REDUCE_MEAN ? 1 : 2;
        a.keep = ir_attr_int(n, "keepdims", 1) != 0;
        return a.weighted && !sum ? none : a; /* weights take sum bags only, as in torch */
    }
    case OP_DIV:
        if (a.kind == AV_BAG && a.mode == 0 && a.keep && c.kind == AV_DEN && c.is_float &&
            c.e == a.e)
            return a.kind = AV_BAG_DIV, a.v = c.v, a;
        return none;
    case OP_SEQUENCE_INSERT:
        if (a.kind == AV_SEQ && n->n_inputs == 2 && (c.kind == AV_BAG || c.kind == AV_BAG_DIV))
            return (av){.kind = AV_SEQ_BAG, .bag = keep_value(ev, c)};
        return none;
    case OP_EXPAND: return a.kind == AV_ZEROS ? a : none;
    default: return none;
    }
}

/* The nodes of b evaluated in order, each output bound by name; the value of b's tensor out. */
static av eval_graph(evaluator *ev, const ir_graph *b, int out) {
    for (int i = 0; i < b->n_nodes; i++) {
        const ir_node *n = &b->nodes[i];
        av v = n->n_outputs == 1 ? eval_node(ev, b, n) : none;
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) bind(ev, b->tensors[n->outputs[o]].name, o ? none : v);
    }
    return value_of(ev, b, out);
}

/* What one scenario gave: the bag's value (kind AV_BAG or AV_BAG_DIV), or kind AV_NONE. */
typedef struct scenario {
    av bag;
    int64_t n;
    int counter, seq; /* torch.export's: which carried value is which */
} scenario;

/* Whether E's last element is len: E known at load, or E = Concat(.., L) (through Identity
 * nodes) with L the plan-time [len]. */
static bool ends_at(const ir_graph *g, int e, int64_t len) {
    const int64_t *ev;
    int64_t count;
    if (op_is_value(&g->tensors[e]))
        return ir_tensor_int64_values(&g->tensors[e], &ev, &count) && count > 0 &&
               ev[count - 1] == len;
    const ir_node *p = producer_past_copies(g, &e);
    if (!p || p->op != OP_CONCAT || ir_attr_int(p, "axis", -1) != 0 || p->n_inputs < 2 ||
        p->inputs[p->n_inputs - 1] < 0)
        return false;
    const ir_tensor *l = &g->tensors[p->inputs[p->n_inputs - 1]];
    int64_t v;
    return op_is_value(l) && l->rank == 1 && l->dims[0] == 1 && op_int_scalar(l, false, &v) &&
           v == len;
}

/* The body b of Loop node `node` read for one scenario: legacy (no carried values, one scan
 * output) or torch.export's (a counter from 0 and a sequence the bags are appended to). */
static scenario read_body(evaluator *ev, const ir_graph *b, int node, bool last) {
    ir_graph *g = ev->g;
    const ir_node *loop = &g->nodes[node];
    scenario s = {.bag = none, .n = -1, .counter = -1, .seq = -1};
    strmap_free(ev->env); /* NULL at first */
    ev->env = strmap_new();
    ev->n_vals = 0;
    ev->last = last;
    int n_carried = b->n_inputs - 2;
    bind(ev, b->tensors[b->inputs[1]].name, (av){.kind = AV_INT, .v = 1}); /* the condition */
    if (n_carried == 0 && b->n_outputs == 2) { /* legacy: k is the iteration number */
        bind(ev, b->tensors[b->inputs[0]].name, (av){.kind = AV_K});
        av cond = eval_graph(ev, b, b->outputs[0]);
        if (cond.kind == AV_INT && cond.v) s.bag = value_of(ev, b, b->outputs[1]);
        s.n = ev->n;
        return s;
    }
    if (n_carried != 2 || b->n_outputs != 3 || loop->n_inputs != 4 || loop->inputs[2] < 0 ||
        loop->inputs[3] < 0)
        return s;
    int counter = -1, seq = -1;
    for (int j = 0; j < 2; j++) {
        const ir_tensor *init = &g->tensors[loop->inputs[2 + j]];
        int64_t v;
        const ir_node *p = init->producer >= 0 ? &g->nodes[init->producer] : NULL;
        if (op_is_value(init) && op_int_scalar(init, false, &v) && v == 0 && init->rank == 0)
            counter = j;
        else if ((p && p->op == OP_SEQUENCE_EMPTY) || (init->is_sequence && init->n_items == 0))
            seq = j;
    }
    if (counter < 0 || seq < 0) return s;
    s.counter = counter, s.seq = seq;
    bind(ev, b->tensors[b->inputs[0]].name, none); /* the iteration number: unread */
    bind(ev, b->tensors[b->inputs[2 + counter]].name, (av){.kind = AV_K});
    bind(ev, b->tensors[b->inputs[2 + seq]].name, (av){.kind = AV_SEQ});
    av more = eval_graph(ev, b, b->outputs[0]);
    av next = value_of(ev, b, b->outputs[1 + counter]), bags = value_of(ev, b, b->outputs[1 + seq]);
    if (more.kind != AV_MORE || next.kind != AV_K || next.v != 1 || next.rank != 0) return s;
    s.n = more.v; /* k from 0 while k + 1 < n: n iterations */
    if (bags.kind == AV_SEQ_BAG) s.bag = ev->vals[bags.bag];
    return s;
}

/* The readers of the Loop's sequence output: ConcatFromSequence on axis 0, no new axis. */
static bool concatenated(const ir_graph *g, int t) {
    const ir_tensor *x = &g->tensors[t];
    if (x->is_graph_output || x->n_consumers == 0) return false;
    for (int i = 0; i < x->n_consumers; i++) {
        const ir_node *c = &g->nodes[x->consumers[i]];
        if (c->op != OP_CONCAT_FROM_SEQUENCE || ir_attr_int(c, "axis", 0) != 0 ||
            ir_attr_int(c, "new_axis", 0) != 0)
            return false;
    }
    return true;
}

/* The bags as one tensor [n, D..], nodes inserted at *at: bounds known at load in equal
 * steps of `size` ids, a reduction over the bag axis of the rows viewed [n, size, D..];
 * else BagReduce(rows, E), which ir_bag_reductions makes a scatter-add once the host program
 * is built. */
static int emit_bags(ir_graph *g, int *at, const char *base, av bag, int64_t n, int64_t size) {
    int rows = bag.t;
    if (bag.legacy) { /* the table's rows at all the ids, gathered once */
        rows = op_rewrite_insert(g, *at, base, "bag_rows", OP_GATHER, bag.t, bag.u, -1);
        op_rewrite_attr_int(g, (*at)++, "axis", 0);
    }
    if (bag.weighted) { /* each times its weight */
        int64_t one = 1;
        int col =
            op_rewrite_axes(g, *at, base, "bag_weights", OP_UNSQUEEZE, bag.w, 1, &one, 13, -1);
        (*at)++;
        rows = op_rewrite_insert(g, (*at)++, base, "bag_rows_weighted", OP_MUL, rows, col, -1);
    }
    if (size < 1) {
        int y = op_rewrite_insert(g, *at, base, "bags", OP_BAG_REDUCE, rows, bag.e, -1);
        op_rewrite_attr_int(g, (*at)++, "mode", bag.mode);
        return y;
    }
    const ir_tensor *r = &g->tensors[bag.t]; /* legacy: the table, whose rows these are */
    int64_t dims[IR_MAX_RANK], axis = 1;
    dims[0] = n, dims[1] = size;
    for (int d = 1; d < r->rank; d++) dims[d + 1] = r->dims[d];
    int rank = r->rank + 1;
    int x = op_rewrite_reshape(g, (*at)++, base, "bag_rows_viewed", rows, rank, dims);
    op_kind k = bag.mode == 0 ? OP_REDUCE_SUM : bag.mode == 1 ? OP_REDUCE_MEAN : OP_REDUCE_MAX;
    int y =
        op_rewrite_axes(g, *at, base, "reduced", k, x, 1, &axis, k == OP_REDUCE_SUM ? 13 : 18, -1);
    op_rewrite_attr_int(g, (*at)++, "keepdims", 0);
    return y;
}

/* The Loop replaced by the bags (emit_bags): its scan output (legacy) an Identity of them;
 * else a sequence of them alone, its sequence output (the counter's output, when read, n). */
static void replace(ir_graph *g, int node, av bag, int64_t n, int64_t size, int seq, int counter) {
    char *base = oc_strdup(g->nodes[node].name);
    int at = node;
    g->tensors[seq].producer = -1;
    if (counter >= 0) g->tensors[counter].producer = -1;
    g->nodes[at].n_outputs = 0;
    if (counter >= 0) {
        char *name = oc_sprintf("%s/count", base);
        int nt = ir_const_tensor(g, name, IR_DTYPE_INT64, 0, NULL, &n);
        oc_free(name);
        op_rewrite_insert(g, at++, base, "counted", OP_IDENTITY, nt, -1, counter);
    }
    int y = emit_bags(g, &at, base, bag, n, size);
    if (bag.legacy) {
        op_rewrite_become(g, at, OP_IDENTITY);
        ir_node_add_input(g, at, y);
    } else {
        char *name = oc_sprintf("%s/bags_none", base);
        int k = op_node_insert(g, at, name, OP_SEQUENCE_EMPTY),
            empty = ir_tensor_add(g, name, IR_DTYPE_UNDEFINED);
        oc_free(name);
        ir_node_add_output(g, k, empty);
        op_rewrite_attr_int(g, at++, "dtype", g->tensors[bag.t].dtype);
        op_rewrite_become(g, at, OP_SEQUENCE_INSERT);
        ir_node_add_input(g, at, empty);
        ir_node_add_input(g, at, y);
    }
    ir_node_add_output(g, at, seq);
    oc_free(base);
}

/* Bounds E known at load in equal steps from 0 to len (fixed-size bags): the step; else 0. */
static int64_t fixed_size(const ir_graph *g, int e, int64_t n, int64_t len) {
    const int64_t *v;
    int64_t count;
    if (!op_is_value(&g->tensors[e]) || !ir_tensor_int64_values(&g->tensors[e], &v, &count) ||
        count != n + 1 || n < 1 || v[0] != 0 || v[n] != len)
        return 0;
    int64_t size = v[1];
    if (size < 1 || len % size != 0 || len / size != n) return 0; /* i * size <= len below */
    for (int64_t i = 0; i <= n; i++)
        if (v[i] != i * size) return 0;
    return size;
}

bool bag_loop_lower(ir_graph *g, int node) {
    if (getenv("OC_UNROLL_BAG_LOOPS")) return false; /* the other path, for comparing */
    const ir_node *loop = &g->nodes[node];
    const ir_attr *ba = ir_attr_find(loop, "body");
    if (!ba || ba->type != IR_ATTR_GRAPH || ir_attr_find(loop, "outcore_scope") ||
        ir_attr_find(loop, "outcore_iterations") || loop->n_inputs < 2)
        return false;
    ir_graph *b;
    oc_err ignored;
    if (onnx_import_body(g, ba, "body", &b, &ignored)) return false; /* the unrolling says why */
    evaluator ev = {.g = g, .n = -1};
    int64_t trips = -1;
    const ir_tensor *m = loop->inputs[0] >= 0 ? &g->tensors[loop->inputs[0]] : NULL;
    const ir_tensor *c = loop->inputs[1] >= 0 ? &g->tensors[loop->inputs[1]] : NULL;
    int64_t run = 1;
    bool ok = b->n_inputs >= 2 && (!m || (op_is_value(m) && op_int_scalar(m, false, &trips))) &&
              (!c || (op_is_value(c) && op_int_scalar(c, true, &run) && run));
    ev.n = trips; /* legacy: the count; torch.export's: from its condition, below */
    scenario last = {.bag = none}, mid = {.bag = none};
    if (ok && !m && b->n_inputs == 4) { /* torch.export's: the count its condition tests */
        last = read_body(&ev, b, node, true);
        ev.n = last.n;
        last = read_body(&ev, b, node, true);
    } else if (ok && m && b->n_inputs == 2 && g->nodes[node].n_inputs == 2) {
        last = read_body(&ev, b, node, true);
    }
    int64_t n = ev.n;
    av bag = last.bag;
    ok = ok && n >= 1 && n < INT32_MAX && (bag.kind == AV_BAG || bag.kind == AV_BAG_DIV);
    if (ok && n >= 2) { /* a bag before the last: the same rows, the same mode */
        mid = read_body(&ev, b, node, false);
        ok = mid.bag.kind == AV_BAG && !mid.bag.to_end && same_rows(mid.bag, bag) &&
             mid.n == last.n &&
             (bag.kind == AV_BAG_DIV ? mid.bag.mode == 1 && mid.bag.keep
                                     : mid.bag.mode == bag.mode && mid.bag.keep == bag.keep);
        if (ok && bag.kind == AV_BAG_DIV) bag = mid.bag; /* the mean, the last one's too: */
    } else if (ok && bag.kind == AV_BAG_DIV) { /* its sum over len - E[k]: E ends at len */
        bag.kind = AV_BAG, bag.mode = 1;
    }
    if (ok && (last.bag.kind == AV_BAG_DIV || last.bag.to_end)) /* to len: E ends there */
        ok = ends_at(g, last.bag.e, last.bag.v) && g->tensors[last.bag.t].dims[0] == last.bag.v;
    const ir_tensor *e = ok ? &g->tensors[bag.e] : NULL;
    ok = ok && e->dtype == IR_DTYPE_INT64 && e->rank == 1 && e->dims[0] == n + 1 &&
         ir_dtype_is_float(g->tensors[bag.t].dtype) && g->tensors[bag.t].rank >= 1 &&
         g->tensors[bag.t].rank < IR_MAX_RANK;
    /* bounds known at load: fixed-size bags (any mode), else left to the unrolling; at run
     * time: any mode (max bags: SegmentMax) */
    int64_t len = ok ? g->tensors[bag.legacy ? bag.u : bag.t].dims[0] : 0, size = 0;
    if (ok && bag.weighted) /* a weight per id */
        ok = g->tensors[bag.w].rank == 1 && g->tensors[bag.w].dims[0] == len;
    if (ok && op_is_value(e)) ok = (size = fixed_size(g, bag.e, n, len)) > 0;
    /* the output: legacy, the scan of bags without their axis; else the sequence, of
     * bags with it, concatenated */
    const ir_node *l = &g->nodes[node];
    int n_out = l->n_outputs, seq = -1, counter = -1;
    if (ok && bag.legacy) {
        ok = !bag.keep && n_out == 1 && l->outputs[0] >= 0;
        seq = l->outputs[0];
    } else if (ok) { /* the carried values' outputs, in their order */
        seq = last.seq < n_out ? l->outputs[last.seq] : -1;
        counter = last.counter < n_out ? l->outputs[last.counter] : -1;
        ok = bag.keep && n_out <= 2 && seq >= 0 && concatenated(g, seq) &&
             (counter < 0 || !g->tensors[counter].is_graph_output);
    }
    strmap_free(ev.env);
    oc_free(ev.vals);
    ir_graph_free(b);
    if (ok) replace(g, node, bag, n, size, seq, counter);
    return ok;
}
