/* bag_reduce.c — nn.EmbeddingBag's unrolled loop as one reduction (bag_reduce.h).
 *
 * A bag, as op_loop.c unrolls either exporter's loop body (If branches resolved):
 *
 *   legacy:  [Unsqueeze 0] <- Reduce(axes 0) <- Gather(table, S)   S = Slice(ids, s, e) on the host
 *   default: Reduce(axes 0, keepdims) <- Slice(rows, s, e)         rows = the ids' rows, gathered once
 *
 * Reduce is ReduceSum, ReduceMean, Div(ReduceSum, e - s) (torch.export's last mean bag) or
 * ReduceMax as extreme_lower (op_reduce.c) left it: Reshape <- MaxPool [1, e - s] <-
 * Reshape <- Transpose (the reduced axis moved last). s and e are plan-time values, or
 * (sum and mean) host values E[i] and E[i + 1] of one host tensor E: offsets given at run
 * time. torch.export then tests each bag for emptiness (zeros then) and its last mean bag
 * divides by Cast(len - s) where that is above 0: op_loop.c took the branches (the Identity
 * nodes marked IR_ATTR_RUN_TIME) and shape_infer.c the Slice at host bounds, for this rewrite
 * to remove, which gives an empty bag zeros too. */
#include "ir/bag_reduce.h"

#include <string.h>

#include "ir/host_inputs.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"
#include "ir/shape_infer.h"

typedef enum bag_mode { BAG_SUM, BAG_MEAN, BAG_MAX } bag_mode;

#define BAG_CHAIN 32 /* nodes of one bag at most (the If branches leave Identity nodes) */
#define BAG_GUARDS 4 /* Ifs on run-time conditions taken in one bag at most */

/* One bag as matched: the rows it reduces are rows [start, end) of `rows` (default
 * exporter), or the table gathered at ids[start, end) (legacy: ids a tensor of g->host). */
typedef struct bag {
    bag_mode mode;
    int rows, table, ids;
    int ext;                         /* run-time bounds: the host tensor they are elements of */
    int64_t start, end, divisor;     /* divisor: Div's, else 0; with ext: indices into it */
    int64_t div_at, div_len;         /* a divisor computed on the host: div_len - ext[div_at] */
    int div_d;                       /* ... that host tensor, d (Cast to the divisor) */
    int n_guards, guard[BAG_GUARDS]; /* the conditions of the Ifs taken (host tensors) */
    int gather;                      /* the legacy Gather (its attributes copied), else -1 */
    int n_chain, chain[BAG_CHAIN];   /* g's nodes computing the bag, removed once rewritten */
} bag;

/* The node writing t when t is read by that one node only (and is no graph output). */
static const ir_node *sole_producer(const ir_graph *g, int t) {
    if (t < 0) return NULL;
    const ir_tensor *x = &g->tensors[t];
    if (x->producer < 0 || x->n_consumers != 1 || x->is_graph_output) return NULL;
    return &g->nodes[x->producer];
}

/* Node n added to b's chain; false when the chain is full. */
static bool chained(const ir_graph *g, bag *b, const ir_node *n) {
    if (!n || b->n_chain >= BAG_CHAIN) return false;
    b->chain[b->n_chain++] = (int)(n - g->nodes);
    return true;
}

/* The node writing t, read once, past the Identity nodes a resolved If leaves (chained;
 * an If taken on a run-time condition, its condition kept in b->guard). */
static const ir_node *producer_of(const ir_graph *g, int t, bag *b) {
    const ir_node *n = sole_producer(g, t);
    while (n && n->op == OP_IDENTITY && chained(g, b, n)) {
        const char *c = ir_attr_string(n, IR_ATTR_RUN_TIME, NULL);
        int hc = c && g->host ? ir_tensor_find(g->host, c) : -1;
        if (c && (hc < 0 || b->n_guards >= BAG_GUARDS)) return NULL;
        if (c) b->guard[b->n_guards++] = hc;
        n = sole_producer(g, n->inputs[0]);
    }
    return n && n->op != OP_IDENTITY ? n : NULL;
}

/* The int64 values of t, a plan-time value of g (in g->host: an initializer of the host
 * program, not a value computed on stand-in ids), count *n; or NULL. */
static bool is_host_program(const ir_graph *g) {
    return g->host == NULL && g->name && strcmp(g->name, HOST_INPUTS_FUNCTION) == 0;
}

static const int64_t *const_ints(const ir_graph *g, int t, int64_t *n) {
    if (t < 0) return NULL;
    const ir_tensor *x = &g->tensors[t];
    bool host = is_host_program(g);
    if (host && x->producer >= 0) return NULL; /* computed on the stand-in ids */
    bool value = op_is_value(x) || (host && x->data_src == IR_DATA_INLINE);
    if (!value || x->dtype != IR_DTYPE_INT64 || !ir_tensor_numel(x, n) ||
        x->data_bytes != (size_t)*n * sizeof(int64_t))
        return NULL;
    return x->data;
}

/* Node n's axes (input i from opset `from`, else the attribute) are exactly {axis}. */
static bool axes_are(const ir_graph *g, const ir_node *n, int64_t from, int i, int64_t axis) {
    const int64_t *v;
    int64_t count;
    if (g->opset >= from) {
        if (n->n_inputs <= i || !(v = const_ints(g, n->inputs[i], &count))) return false;
    } else {
        int k = ir_attr_ints(n, "axes", &v);
        count = k;
    }
    return count == 1 && v[0] == axis;
}

/* Slice node n of graph sg along its data's first axis (axes absent or that one), step 1,
 * its bounds whatever they are. */
static bool slice_rows_only(const ir_graph *sg, const ir_node *n) {
    if (n->op != OP_SLICE || n->n_inputs < 3) return false;
    int rank = sg->tensors[n->inputs[0]].rank;
    int64_t c3, c4;
    bool has_ax = n->n_inputs > 3 && n->inputs[3] >= 0,
         has_sp = n->n_inputs > 4 && n->inputs[4] >= 0;
    const int64_t *ax = has_ax ? const_ints(sg, n->inputs[3], &c3) : NULL;
    const int64_t *sp = has_sp ? const_ints(sg, n->inputs[4], &c4) : NULL;
    return rank >= 1 && (!has_ax || (ax && c3 == 1 && (ax[0] == 0 || ax[0] == -rank))) &&
           (!has_sp || (sp && c4 == 1 && sp[0] == 1));
}

/* Slice node n of graph sg: one axis (0), step 1, plan-time bounds of its data's first dim,
 * normalized into [*s, *e). */
static bool slice_bounds(const ir_graph *sg, const ir_node *n, int64_t *s, int64_t *e) {
    if (!slice_rows_only(sg, n)) return false;
    const ir_tensor *x = &sg->tensors[n->inputs[0]];
    int64_t c1, c2;
    const int64_t *st = const_ints(sg, n->inputs[1], &c1), *en = const_ints(sg, n->inputs[2], &c2);
    if (!st || !en || c1 != 1 || c2 != 1) return false;
    int64_t len = x->dims[0], a = st[0], b = en[0];
    if (a < 0) a += len;
    if (b < 0) b += len;
    *s = a < 0 ? 0 : a > len ? len : a;
    *e = b < 0 ? 0 : b > len ? len : b;
    return *e > *s;
}

/* Element j of the 1-D int64 tensor x of host program h, as a slice of x reads it: through
 * Slices of x from a plan-time start (step 1), down to the tensor x is a slice of: *base. */
static bool element_of(const ir_graph *h, int x, int64_t j, int *base, int64_t *at) {
    for (int hops = 0; hops < 8; hops++) {
        const ir_tensor *xt = &h->tensors[x];
        if (xt->rank != 1 || xt->dtype != IR_DTYPE_INT64 || xt->dims[0] < 1) return false;
        if (j < 0) j += xt->dims[0];
        if (j < 0 || j >= xt->dims[0]) return false;
        const ir_node *p = xt->producer >= 0 ? &h->nodes[xt->producer] : NULL;
        int64_t c1;
        const int64_t *st = p && slice_rows_only(h, p) ? const_ints(h, p->inputs[1], &c1) : NULL;
        const ir_tensor *from = st && c1 == 1 ? &h->tensors[p->inputs[0]] : NULL;
        if (!from || from->rank != 1) {
            *base = x, *at = j;
            return true;
        }
        int64_t a = st[0] < 0 ? st[0] + from->dims[0] : st[0];
        j += a < 0 ? 0 : a > from->dims[0] ? from->dims[0] : a;
        x = p->inputs[0];
    }
    return false;
}

/* A bound of a host Slice, t: one element of a host tensor (Gather at one plan-time index,
 * or a one-element Slice, through Unsqueeze / Reshape / Squeeze / Identity): the tensor it
 * is ultimately a slice of, *base, and the element's index there, *at. */
static bool host_element(const ir_graph *h, int t, int *base, int64_t *at) {
    for (int hops = 0; hops < 8 && t >= 0; hops++) {
        const ir_tensor *x = &h->tensors[t];
        int64_t count, c;
        if (x->dtype != IR_DTYPE_INT64 || !ir_tensor_numel(x, &count) || count != 1 ||
            x->producer < 0)
            return false;
        const ir_node *p = &h->nodes[x->producer];
        const int64_t *k;
        if (p->op == OP_UNSQUEEZE || p->op == OP_RESHAPE || p->op == OP_SQUEEZE ||
            p->op == OP_IDENTITY) {
            t = p->inputs[0];
        } else if (p->op == OP_GATHER && ir_attr_int(p, "axis", 0) == 0 && p->n_inputs == 2 &&
                   (k = const_ints(h, p->inputs[1], &c)) && c == 1) {
            return element_of(h, p->inputs[0], k[0], base, at);
        } else if (p->op == OP_SLICE && p->n_inputs >= 2 && (k = const_ints(h, p->inputs[1], &c)) &&
                   c == 1) {
            return element_of(h, p->inputs[0], k[0], base, at); /* its one element: count 1 */
        } else {
            return false;
        }
    }
    return false;
}

/* Bounds lo and hi (tensors of host program h) from one element of a host tensor to the next
 * (legacy export with offsets given at run time: Concat(offsets, [len])[i], its [1:][i]):
 * b->ext that tensor, b->start and b->end the two elements' indices. */
static bool run_time_bounds(const ir_graph *h, int lo, int hi, bag *b) {
    int e1, e2;
    if (lo < 0 || hi < 0 || !host_element(h, lo, &e1, &b->start) ||
        !host_element(h, hi, &e2, &b->end) || e1 != e2 || b->end != b->start + 1)
        return false;
    b->ext = e1;
    return true;
}

/* Host input t of g as the tensor of g->host that computes it, or -1. */
static int host_tensor(const ir_graph *g, int t) {
    return g->host && t >= 0 && g->tensors[t].is_host_input
               ? ir_tensor_find(g->host, g->tensors[t].name)
               : -1;
}

/* The plan-time value of element `at` of the 1-D host tensor x of h (a Concat's input that
 * is a value, through Identity nodes). */
static bool host_const_element(const ir_graph *h, int x, int64_t at, int64_t *v) {
    for (int hops = 0; hops < 8 && x >= 0; hops++) {
        const ir_tensor *xt = &h->tensors[x];
        int64_t count;
        const int64_t *k = const_ints(h, x, &count);
        if (k) {
            if (at < 0 || at >= count) return false;
            *v = k[at];
            return true;
        }
        const ir_node *p = xt->producer >= 0 ? &h->nodes[xt->producer] : NULL;
        if (p && p->op == OP_IDENTITY) {
            x = p->inputs[0];
        } else if (p && p->op == OP_CONCAT && xt->rank == 1) {
            int i = 0;
            for (; i < p->n_inputs && p->inputs[i] >= 0; i++) {
                const ir_tensor *in = &h->tensors[p->inputs[i]];
                if (in->rank != 1) return false;
                if (at < in->dims[0]) break;
                at -= in->dims[0];
            }
            if (i >= p->n_inputs || p->inputs[i] < 0) return false;
            x = p->inputs[i];
        } else {
            return false;
        }
    }
    return false;
}

/* torch.export's divisor of its last mean bag at run-time bounds, t: Cast[Like] (on the
 * device, or on the host when optimized) of the host's Sub(len, E[s]): b->div_len len,
 * b->div_at s (E is b->ext once the rows are matched). */
static bool run_time_divisor(const ir_graph *g, int t, bag *b) {
    const ir_graph *h = g->host;
    const ir_node *c = host_inputs_producer(g, t), *sub = NULL;
    if (c && c->op == OP_CAST) {
        int x = c->inputs[0];
        sub = h->tensors[x].producer >= 0 ? &h->nodes[h->tensors[x].producer] : NULL;
    } else if (!c && (c = producer_of(g, t, b)) && (c->op == OP_CAST || c->op == OP_CAST_LIKE) &&
               chained(g, b, c)) {
        sub = host_inputs_producer(g, c->inputs[0]);
    }
    int64_t count;
    int base;
    const int64_t *len =
        sub && sub->op == OP_SUB ? const_ints(g->host, sub->inputs[0], &count) : NULL;
    if (!len || count != 1 || !host_element(g->host, sub->inputs[1], &base, &b->div_at))
        return false;
    b->div_len = len[0];
    b->div_d = sub->outputs[0];
    b->ext = base; /* checked against the rows' bounds */
    return true;
}

/* Whether the Ifs op_loop.c took in bag b test what the rewrite gives the same results for:
 * Equal(E[s], E[e]), the bag's emptiness (either order), and Greater(d, 0), its divisor's
 * d above 0 (op_loop.c took the branch that divides; the bag is empty otherwise). */
static bool guards_hold(const ir_graph *g, const bag *b) {
    const ir_graph *h = g->host;
    for (int i = 0; i < b->n_guards; i++) {
        const ir_tensor *c = &h->tensors[b->guard[i]];
        const ir_node *p = c->producer >= 0 ? &h->nodes[c->producer] : NULL;
        int e1, e2;
        int64_t i1, i2, count;
        const int64_t *zero;
        if (!p || p->n_inputs != 2 || b->ext < 0) return false;
        if (p->op == OP_EQUAL) {
            if (!host_element(h, p->inputs[0], &e1, &i1) ||
                !host_element(h, p->inputs[1], &e2, &i2) || e1 != b->ext || e2 != b->ext ||
                !((i1 == b->start && i2 == b->end) || (i1 == b->end && i2 == b->start)))
                return false;
        } else if (p->op == OP_GREATER) {
            zero = const_ints(h, p->inputs[1], &count);
            if (b->divisor >= 0 || p->inputs[0] != b->div_d || !zero || count != 1 || zero[0])
                return false;
        } else {
            return false;
        }
    }
    return true;
}

/* The rows reduced, x, as a slice: of rows gathered once, or (legacy) of the table at a host
 * slice of the ids. */
static bool match_rows(const ir_graph *g, int x, bag *b) {
    const ir_node *n = producer_of(g, x, b);
    if (!n) return false;
    if (n->op == OP_SLICE) {
        if (!slice_bounds(g, n, &b->start, &b->end) &&
            !(slice_rows_only(g, n) && run_time_bounds(g->host, host_tensor(g, n->inputs[1]),
                                                       host_tensor(g, n->inputs[2]), b)))
            return false;
        b->rows = n->inputs[0];
        b->table = b->ids = b->gather = -1;
    } else if (n->op == OP_GATHER && ir_attr_int(n, "axis", 0) == 0) {
        const ir_node *s = host_inputs_producer(g, n->inputs[1]);
        if (!s || g->tensors[n->inputs[1]].n_consumers != 1 ||
            g->host->tensors[s->inputs[0]].rank != 1 ||
            (!slice_bounds(g->host, s, &b->start, &b->end) &&
             !(slice_rows_only(g->host, s) &&
               run_time_bounds(g->host, s->inputs[1], s->inputs[2], b))))
            return false;
        b->table = n->inputs[0];
        b->ids = s->inputs[0];
        b->rows = -1;
        b->gather = (int)(n - g->nodes);
    } else {
        return false;
    }
    return chained(g, b, n);
}

/* extreme_lower's ReduceMax over axis 0 of x, ending in node r (a Reshape): its x. */
static int match_max(const ir_graph *g, const ir_node *r, bag *b) {
    const ir_node *pool = producer_of(g, r->inputs[0], b);
    if (!pool || pool->op != OP_MAX_POOL || pool->n_outputs > 1) return -1;
    const int64_t *k, *pads, *strides;
    int nk = ir_attr_ints(pool, "kernel_shape", &k), np = ir_attr_ints(pool, "pads", &pads),
        ns = ir_attr_ints(pool, "strides", &strides);
    if (nk != 2 || k[0] != 1 || np >= 0 || ns >= 0 || ir_attr_find(pool, "dilations") ||
        ir_attr_find(pool, "auto_pad") || ir_attr_int(pool, "ceil_mode", 0))
        return -1;
    const ir_node *rows = producer_of(g, pool->inputs[0], b);
    if (!rows || rows->op != OP_RESHAPE) return -1;
    const ir_node *moved = producer_of(g, rows->inputs[0], b);
    if (!moved || moved->op != OP_TRANSPOSE) return -1;
    const int64_t *perm;
    int r_in = ir_attr_ints(moved, "perm", &perm);
    if (r_in < 2 || perm[r_in - 1] != 0) return -1;
    for (int d = 0; d + 1 < r_in; d++)
        if (perm[d] != d + 1) return -1;
    b->mode = BAG_MAX;
    b->divisor = k[1]; /* the bag's size, checked against the slice */
    bool room = chained(g, b, pool) && chained(g, b, rows) && chained(g, b, moved);
    return room ? moved->inputs[0] : -1;
}

/* Concat input p as one bag: [1, D..] (or [D..] Unsqueezed). */
static bool match_bag(const ir_graph *g, int p, bag *b) {
    memset(b, 0, sizeof *b);
    b->ext = -1;
    const ir_node *n = producer_of(g, p, b);
    bool squeezed = false;
    if (n && n->op == OP_UNSQUEEZE && axes_are(g, n, 13, 1, 0)) {
        squeezed = chained(g, b, n);
        n = producer_of(g, n->inputs[0], b);
    }
    if (!chained(g, b, n)) return false;
    int x = -1;
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    if (n->op == OP_REDUCE_SUM || n->op == OP_REDUCE_MEAN) {
        if (keep == squeezed || !axes_are(g, n, n->op == OP_REDUCE_SUM ? 13 : 18, 1, 0))
            return false;
        b->mode = n->op == OP_REDUCE_SUM ? BAG_SUM : BAG_MEAN;
        x = n->inputs[0];
    } else if (n->op == OP_DIV && !squeezed) { /* the sum over the bag's size */
        double d = 0;
        bool fixed = op_in_scalar_f((ir_graph *)g, (ir_node *)n, 1, &d);
        const ir_node *sum = producer_of(g, n->inputs[0], b);
        if (!sum || sum->op != OP_REDUCE_SUM || !ir_attr_int(sum, "keepdims", 1) ||
            !axes_are(g, sum, 13, 1, 0) ||
            (fixed ? !(d >= 1 && d <= 1e15) || d != (double)(int64_t)d
                   : !run_time_divisor(g, n->inputs[1], b)))
            return false;
        b->mode = BAG_MEAN;
        b->divisor = fixed ? (int64_t)d : -1;
        if (!chained(g, b, sum)) return false;
        x = sum->inputs[0];
    } else if (n->op == OP_RESHAPE) {
        x = match_max(g, n, b);
    }
    int div_ext = b->ext;
    b->ext = -1;
    if (x < 0 || !match_rows(g, x, b)) return false;
    /* the reduced rows [e - s, D..]; the bag [1, D..] or [D..] */
    const ir_tensor *xt = &g->tensors[x], *pt = &g->tensors[p];
    int64_t last;
    if (b->divisor < 0 && /* len - E[s], E[e] that len: E[e] - E[s] */
        (b->ext < 0 || b->ext != div_ext || b->div_at != b->start ||
         !host_const_element(g->host, b->ext, b->end, &last) || last != b->div_len))
        return false;
    if (b->ext >= 0 && (b->mode == BAG_MAX || b->divisor > 0)) return false; /* sum, mean */
    if (!guards_hold(g, b)) return false;
    if (b->divisor > 0 && b->divisor != b->end - b->start) return false;
    if (xt->rank != pt->rank || pt->dims[0] != 1 ||
        (b->ext < 0 && xt->dims[0] != b->end - b->start))
        return false;
    for (int d = 1; d < xt->rank; d++)
        if (xt->dims[d] != pt->dims[d]) return false;
    return true;
}

/* The inputs of Concat node c (axis 0) and, one level down (op_rewrite_concat_groups' only
 * level), of the Concats of groups it reads, in order, into leaves (at most cap); those
 * Concats into groups. False past cap. */
static bool concat_leaves(const ir_graph *g, int c, bool top, int *leaves, int *n, int cap,
                          int *groups, int *n_groups) {
    const ir_node *node = &g->nodes[c];
    for (int k = 0; k < node->n_inputs; k++) {
        int t = node->inputs[k];
        const ir_node *inner = top ? sole_producer(g, t) : NULL;
        if (inner && inner->op == OP_CONCAT && ir_attr_int(inner, "axis", -1) == 0) {
            int ic = (int)(inner - g->nodes);
            if (*n_groups >= cap) return false;
            groups[(*n_groups)++] = ic;
            if (!concat_leaves(g, ic, false, leaves, n, cap, groups, n_groups)) return false;
            continue;
        }
        if (*n >= cap || t < 0) return false;
        leaves[(*n)++] = t;
    }
    return true;
}

/* Whether the bags are alike and the equal consecutive slices covering their rows. */
static bool bags_fixed(const ir_graph *g, const bag *bags, int n) {
    const bag *a = &bags[0];
    int64_t size = a->end - a->start;
    int64_t len = a->rows >= 0 ? g->tensors[a->rows].dims[0] : g->host->tensors[a->ids].dims[0];
    if (a->ext >= 0 || a->start != 0 || size * n != len) return false;
    for (int i = 1; i < n; i++) {
        const bag *b = &bags[i];
        if (b->mode != a->mode || b->rows != a->rows || b->table != a->table || b->ids != a->ids ||
            b->ext >= 0 || b->start != i * size || b->end != b->start + size)
            return false;
    }
    return true;
}

/* Slice(x, [lo], [hi], axes [0]) inserted at `at` of g, writing y (or "<base>/<what>"). */
static int slice_rows(ir_graph *g, int at, const char *base, const char *what, int x, int64_t lo,
                      int64_t hi, int y) {
    char *s = oc_sprintf("%s_bounds", what);
    int64_t zero = 0;
    int a = op_rewrite_ints(g, base, s, 1, &lo), b = -1, ax = -1;
    oc_free(s);
    s = oc_sprintf("%s_end", what);
    b = op_rewrite_ints(g, base, s, 1, &hi);
    oc_free(s);
    s = oc_sprintf("%s_axes", what);
    ax = op_rewrite_ints(g, base, s, 1, &zero);
    oc_free(s);
    y = op_rewrite_insert(g, at, base, what, OP_SLICE, x, a, y);
    ir_node_add_input(g, at, b);
    ir_node_add_input(g, at, ax);
    return y;
}

/* The name of the host program input bounds x were computed from (the offsets: the first
 * input reached going back through the first inputs), else x's own. */
static const char *offsets_input(const ir_graph *h, int x) {
    for (int hops = 0; hops < 64; hops++) {
        const ir_tensor *t = &h->tensors[x];
        if (t->is_graph_input || t->producer < 0) return t->name;
        const ir_node *p = &h->nodes[t->producer];
        int next = -1;
        for (int i = 0; i < p->n_inputs && next < 0; i++) next = p->inputs[i];
        if (next < 0) return t->name;
        x = next;
    }
    return h->tensors[x].name;
}

/* Bounds ext of bags of len ids (a tensor of host program h) checked each step (BagBounds,
 * op_bags.c), the check appended to h: its output. */
static int checked_bounds(ir_graph *h, int ext, const char *hb, int64_t len) {
    int k = h->n_nodes;
    int y = op_rewrite_insert(h, k, hb, "bag_bounds", OP_BAG_BOUNDS, ext, -1, -1);
    op_rewrite_attr_int(h, k, "ids", len);
    ir_attr from = {.name = "input", .type = IR_ATTR_STRING, .s = (char *)offsets_input(h, ext)};
    ir_node_add_attr(h, k, &from);
    return y;
}

/* Run-time bags' host values, computed by nodes appended to g->host from b->ext (the n + 1
 * bounds E, checked to ascend within the ids each step: BagBounds, which the segments are
 * exact for) and evaluated on its stand-in values: *seg, each id's bag + 1 (0 before E[0],
 * n + 1 from E[n] on): how many bounds are at or below its position, the CumSum of ones
 * scatter-added at the bounds; *sizes (mean bags), each bag's size, at least 1, as [n, 1]
 * of the table's type, else -1. Both given to g (host inputs). */
static int host_segments(ir_graph *g, const bag *a, int n, const char *base, int *seg, int *sizes,
                         oc_err *err) {
    ir_graph *h = g->host;
    int first = h->n_nodes, sz = -1;
    int64_t len = a->ids >= 0 ? h->tensors[a->ids].dims[0] : g->tensors[a->rows].dims[0];
    int64_t marks_len = len + 1, zero = 0, one = 1;
    char *hb = oc_sprintf("%s%s", HOST_INPUTS_PREFIX, base);
    int64_t *ones = oc_malloc(((size_t)n + 1) * sizeof *ones);
    for (int i = 0; i <= n; i++) ones[i] = 1;
    int zeros = op_rewrite_constant(h, hb, "bag_marks_zeros", IR_DTYPE_INT64, 1, &marks_len, NULL);
    int ones_t = op_rewrite_ints(h, hb, "bag_marks_ones", n + 1, ones);
    oc_free(ones);
    int ext = checked_bounds(h, a->ext, hb, len), k = h->n_nodes;
    int marks = op_rewrite_insert(h, k, hb, "bag_marks", OP_SCATTER_ELEMENTS, zeros, ext, -1);
    ir_node_add_input(h, k, ones_t);
    ir_attr add = {.name = "reduction", .type = IR_ATTR_STRING, .s = (char *)"add"};
    ir_node_add_attr(h, k, &add);
    int axis = op_rewrite_ints(h, hb, "bag_cum_axis", 1, &zero);
    int cum = op_rewrite_insert(h, h->n_nodes, hb, "bag_cum", OP_CUM_SUM, marks, axis, -1);
    int sg = slice_rows(h, h->n_nodes, hb, "bag_segments", cum, 0, len, -1);
    if (a->mode == BAG_MEAN) {
        int hi = slice_rows(h, h->n_nodes, hb, "bag_ends", ext, 1, n + 1, -1);
        int lo = slice_rows(h, h->n_nodes, hb, "bag_starts", ext, 0, n, -1);
        int cnt = op_rewrite_insert(h, h->n_nodes, hb, "bag_counts", OP_SUB, hi, lo, -1);
        int one_t = op_rewrite_ints(h, hb, "bag_one", 1, &one);
        int at_least = op_rewrite_insert(h, h->n_nodes, hb, "bag_counts_1", OP_MAX, cnt, one_t, -1);
        k = h->n_nodes;
        int f = op_rewrite_insert(h, k, hb, "bag_counts_f", OP_CAST, at_least, -1, -1);
        op_rewrite_attr_int(h, k, "to", g->tensors[a->rows >= 0 ? a->rows : a->table].dtype);
        int64_t dims[2] = {n, 1};
        sz = op_rewrite_reshape(h, h->n_nodes, hb, "bag_sizes", f, 2, dims);
    }
    oc_free(hb);
    if (host_inputs_infer_added(h, first, err)) return OC_ERR;
    *seg = host_inputs_export(g, sg);
    *sizes = sz >= 0 ? host_inputs_export(g, sz) : -1;
    return OC_OK;
}

/* Concat node c (its bags matched) replaced, writing its output: fixed-size bags by
 * [Gather(table, ids) ->] Reshape [n, L, D..] -> the reduction over axis 1; run-time bags by
 * Gather(table, ids) -> GatherGrad at the ids' bags + 1 (host_segments) into [n + 2, D..] ->
 * its rows 1..n [-> Div by the bags' sizes]. Then c, its groups and the bags' chains
 * removed; *next: the last new node's index then (-1: nothing done). */
static int rewrite(ir_graph *g, int c, const bag *bags, int n, int n_matched, const int *groups,
                   int n_groups, int *next, oc_err *err) {
    const bag *a = &bags[0];
    bool run_time = a->ext >= 0;
    const ir_tensor *from = &g->tensors[a->rows >= 0 ? a->rows : a->table];
    /* run-time bags: the sums' rank; else the rows with the bag axis */
    int rank = run_time ? from->rank : from->rank + 1;
    if (rank > IR_MAX_RANK) return OC_OK; /* no room for it: left unrolled */
    int64_t dims[IR_MAX_RANK];
    if (run_time) { /* the sums: the ids before the first bag, the bags, those past the last */
        dims[0] = n + 2;
        for (int d = 1; d < rank; d++) dims[d] = from->dims[d];
    } else {
        dims[0] = n, dims[1] = a->end - a->start;
        for (int d = 2; d < rank; d++) dims[d] = from->dims[d - 1];
    }
    char *base = oc_strdup(g->nodes[c].name);
    int at = c, rows = a->rows, seg = -1, sizes = -1;
    if (run_time && host_segments(g, a, n, base, &seg, &sizes, err)) {
        oc_free(base);
        return OC_ERR;
    }
    bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof *remove);
    for (int i = 0; i < n_groups; i++) remove[groups[i]] = true;
    for (int i = 0; i < n_matched; i++)
        for (int j = 0; j < bags[i].n_chain; j++) remove[bags[i].chain[j]] = true;
    if (rows < 0) { /* legacy: the table's rows at all the ids, gathered once */
        int ids = host_inputs_export(g, a->ids);
        rows = op_rewrite_insert(g, at, base, "bag_rows", OP_GATHER, a->table, ids, -1);
        const ir_attr *pad = ir_attr_find(&g->nodes[a->gather], OC_ATTR_PADDING_IDX);
        if (pad) ir_node_add_attr(g, at, pad);
        at++;
    }
    int x; /* what the last node, writing c's output, reads */
    if (run_time) {
        x = op_rewrite_insert(g, at, base, "bag_sums", OP_GATHER_GRAD, rows, seg, -1);
        op_rewrite_attr_ints(g, at, "input_shape", rank, dims);
        op_rewrite_attr_int(g, at++, "axis", 0);
        if (sizes >= 0) x = slice_rows(g, at++, base, "bag_mean_sums", x, 1, n + 1, -1);
    } else {
        x = op_rewrite_reshape(g, at++, base, "bags", rows, rank, dims);
    }
    int y = g->nodes[at].outputs[0];
    int unrolled = op_rewrite_redirect(g, at, base, "unrolled");
    if (!run_time) {
        op_kind k = a->mode == BAG_SUM    ? OP_REDUCE_SUM
                    : a->mode == BAG_MEAN ? OP_REDUCE_MEAN
                                          : OP_REDUCE_MAX;
        int64_t axis = 1;
        op_rewrite_axes(g, at, base, "reduced", k, x, 1, &axis, k == OP_REDUCE_SUM ? 13 : 18, y);
        op_rewrite_attr_int(g, at, "keepdims", 0);
    } else if (sizes >= 0) {
        op_rewrite_insert(g, at, base, "bag_means", OP_DIV, x, sizes, y);
    } else {
        slice_rows(g, at, base, "bag_kept", x, 1, n + 1, y);
    }
    oc_free(base);
    int end = at + 1;
    int rc = ir_infer_inserted(g, c, &end, err);
    if (rc == OC_OK) { /* nodes before c kept their indices; c moved to end */
        remove = oc_realloc(remove, ((size_t)g->n_nodes + 1) * sizeof *remove);
        memset(remove + c, 0, (size_t)(g->n_nodes + 1 - c) * sizeof *remove);
        remove[g->tensors[unrolled].producer] = true;
        int last = g->tensors[y].producer, *moved = oc_malloc((size_t)g->n_nodes * sizeof *moved);
        ir_graph_remove_nodes_map(g, remove, moved, NULL);
        *next = moved[last];
        oc_free(moved);
    }
    oc_free(remove);
    return rc;
}

/* Whether the bags are alike and each reads its ids from one run-time bound to the next,
 * E[i] to E[i + 1], of one host tensor E of n + 1 bounds. */
static bool bags_run_time(const ir_graph *g, const bag *bags, int n) {
    const bag *a = &bags[0];
    if (a->ext < 0 || g->host->tensors[a->ext].dims[0] != (int64_t)n + 1) return false;
    for (int i = 0; i < n; i++) {
        const bag *b = &bags[i];
        if (b->mode != a->mode || b->rows != a->rows || b->table != a->table || b->ids != a->ids ||
            b->ext != a->ext || b->start != i || b->end != i + 1)
            return false;
    }
    return true;
}

/* BagReduce node c of max bags (mode 2) made SegmentMax(rows, E), E the bounds host tensor
 * ext checked each step (BagBounds). *next: c. */
static int max_bags(ir_graph *g, int c, int ext, int *next, oc_err *err) {
    ir_graph *h = g->host;
    int first = h->n_nodes, rows = g->nodes[c].inputs[0];
    char *hb = oc_sprintf("%s%s", HOST_INPUTS_PREFIX, g->nodes[c].name);
    int e = checked_bounds(h, ext, hb, g->tensors[rows].dims[0]);
    oc_free(hb);
    if (host_inputs_infer_added(h, first, err)) return OC_ERR;
    int bounds = host_inputs_export(g, e);
    op_rewrite_become(g, c, OP_SEGMENT_MAX);
    ir_node_add_input(g, c, rows);
    ir_node_add_input(g, c, bounds);
    int end = c + 1;
    *next = c;
    return ir_infer_inserted(g, c, &end, err);
}

/* BagReduce node c (bag_loop.c: a Loop over the bags, whole) as the run-time bags'
 * scatter-add (sums and means) or SegmentMax (max bags), its bounds those the host
 * computes. */
static int rewrite_loop(ir_graph *g, int c, int *next, oc_err *err) {
    const ir_node *n = &g->nodes[c];
    bag a = {.mode = ir_attr_int(n, "mode", 0) ? BAG_MEAN : BAG_SUM,
             .rows = n->inputs[0],
             .table = -1,
             .ids = -1,
             .ext = host_tensor(g, n->inputs[1]),
             .end = 1,
             .div_d = -1,
             .gather = -1};
    if (a.ext < 0)
        return oc_fail(err,
                       "%s: node '%s' (Loop): nn.EmbeddingBag's bounds '%s' are computed on the "
                       "device; outcore computes bags on the host, from the model's integer inputs",
                       g->model_path ? g->model_path : "model", n->name,
                       g->tensors[n->inputs[1]].name);
    if (ir_attr_int(n, "mode", 0) == 2) return max_bags(g, c, a.ext, next, err);
    int64_t bags = g->tensors[n->inputs[1]].dims[0] - 1;
    return rewrite(g, c, &a, (int)bags, 1, NULL, 0, next, err);
}

/* A node taken at load for a rewrite to remove (IR_ATTR_RUN_TIME, BagReduce) that none
 * removed: refused, as it would have been at once. */
static int refuse_run_time(const ir_graph *g, oc_err *err) {
    const char *path = g->model_path ? g->model_path : "model";
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->op == OP_BAG_REDUCE)
            return oc_fail(err,
                           "%s: node '%s' (nn.EmbeddingBag's Loop): its bags could not become one "
                           "reduction (rows of rank %d)",
                           path, n->name, g->tensors[n->inputs[0]].rank);
        const char *t = ir_attr_string(n, IR_ATTR_RUN_TIME, NULL);
        if (!t) continue;
        if (n->op == OP_IDENTITY) /* an If's branch */
            return oc_fail(err,
                           "%s: node '%s' (If): condition '%s' is computed at run time from the "
                           "model's integer inputs; outcore takes such an If only as torch.export "
                           "writes it in nn.EmbeddingBag's loop (an empty bag's test) when its sum "
                           "or mean bags become one reduction, and these did not",
                           path, n->name, t);
        return oc_fail(err,
                       "%s: node '%s' (%s): input '%s' is computed at run time from the model's "
                       "integer inputs, and the node's shape follows its value; a plan's shapes "
                       "are static (outcore takes such nodes only in nn.EmbeddingBag's sum and "
                       "mean bags, which become one reduction)",
                       path, n->name, n->op_type, t);
    }
    return OC_OK;
}

int ir_bag_reductions(ir_graph *g, oc_err *err) {
    int cap = OP_MAX_SPLIT * OP_MAX_SPLIT, count = 0, rc = OC_OK;
    int *leaves = oc_malloc((size_t)cap * sizeof *leaves);
    int *groups = oc_malloc((size_t)cap * sizeof *groups);
    bag *bags = oc_malloc((size_t)cap * sizeof *bags);
    /* the outermost Concat first, from the last node back */
    for (int c = g->n_nodes - 1; c >= 0 && rc == OC_OK; c--) {
        const ir_node *n = &g->nodes[c];
        int nl = 0, ng = 0;
        if (n->op == OP_BAG_REDUCE) { /* a whole Loop (bag_loop.c) */
            int next = -1;
            rc = rewrite_loop(g, c, &next, err);
            if (next >= 0) count++, c = next;
            continue;
        }
        if (n->op != OP_CONCAT || ir_attr_int(n, "axis", -1) != 0 ||
            !concat_leaves(g, c, true, leaves, &nl, cap, groups, &ng) || nl < 2)
            continue;
        bool ok = true;
        for (int i = 0; i < nl && ok; i++) ok = match_bag(g, leaves[i], &bags[i]);
        if (!ok || !(bags_fixed(g, bags, nl) || bags_run_time(g, bags, nl))) continue;
        int next = -1;
        rc = rewrite(g, c, bags, nl, nl, groups, ng, &next, err);
        if (next >= 0) count++, c = next; /* the nodes after it are scanned, and unchanged */
    }
    if (rc == OC_OK && count) host_inputs_prune(g); /* the host's slices of the ids, unread */
    oc_free(bags), oc_free(groups), oc_free(leaves);
    return rc == OC_OK ? refuse_run_time(g, err) : rc;
}
