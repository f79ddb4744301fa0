/* layout.c — see layout.h. */
#include "emit/layout.h"

#include <stdlib.h>
#include <string.h>

#include "emit/live_index.h"
#include "emit/rewrite.h"
#include "ir/ops/op_table.h"
#include "plan/best_fit.h"

/* ---- greedy placement in a given order ---- */

/* Larger first, then earlier-born, then by index (qsort_r context: the lifetimes). */
static int by_size_cmp(const void *a, const void *b, void *ctx) {
    const plan_lifetimes *lt = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (lt->bytes[x] != lt->bytes[y]) return lt->bytes[x] > lt->bytes[y] ? -1 : 1;
    if (lt->first[x] != lt->first[y]) return lt->first[x] < lt->first[y] ? -1 : 1;
    return x - y;
}

static int64_t span_len(const plan_lifetimes *lt, int t) { return lt->last[t] - lt->first[t] + 1; }

/* Larger bytes x positions first (a long-lived tensor before a short burst of the
 * same size: cuDNN workspaces live at one node), then by size. */
static int by_area_cmp(const void *a, const void *b, void *ctx) {
    const plan_lifetimes *lt = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    double ax = (double)lt->bytes[x] * (double)span_len(lt, x);
    double ay = (double)lt->bytes[y] * (double)span_len(lt, y);
    if (ax != ay) return ax > ay ? -1 : 1;
    return by_size_cmp(a, b, ctx);
}

/* Longer-lived first, then by size. */
static int by_length_cmp(const void *a, const void *b, void *ctx) {
    const plan_lifetimes *lt = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (span_len(lt, x) != span_len(lt, y)) return span_len(lt, x) > span_len(lt, y) ? -1 : 1;
    return by_size_cmp(a, b, ctx);
}

typedef struct span {
    int64_t off, end;
} span;

/* Span order: by offset (then end, for a fixed order; the gap scan's result
 * does not depend on the order of equal offsets). */
static int span_order(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

typedef int (*order_cmp)(const void *, const void *, void *);

/* The placed items, sorted by span (offset, then end): when a sixteenth of them or more are
 * live beside a new item, one walk over this list finds its gap for less than sorting those
 * (an unrolled RNN's thousands of long-lived states). */
typedef struct placed_list {
    int *item, n;
} placed_list;

static bool span_before(const int64_t *off, const plan_lifetimes *lt, int a, int b) {
    if (off[a] != off[b]) return off[a] < off[b];
    return off[a] + lt->bytes[a] < off[b] + lt->bytes[b];
}

static void placed_insert(placed_list *p, const int64_t *off, const plan_lifetimes *lt, int t) {
    int lo = 0, hi = p->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (span_before(off, lt, p->item[mid], t)) lo = mid + 1;
        else hi = mid;
    }
    memmove(&p->item[lo + 1], &p->item[lo], (size_t)(p->n - lo) * sizeof *p->item);
    p->item[lo] = t;
    p->n++;
}

/* The gap scan over spans in (offset, end) order: the lowest offset of the smallest gap that
 * holds need bytes, or the end of the last span. */
typedef struct gap_scan {
    int64_t need, cur, best, best_gap;
} gap_scan;

static inline void gap_next(gap_scan *g, int64_t off, int64_t end) {
    int64_t gap = off - g->cur;
    if (gap >= g->need && gap < g->best_gap) g->best = g->cur, g->best_gap = gap;
    if (end > g->cur) g->cur = end;
}

/* The items in order, each at the lowest offset of the smallest gap that fits
 * among the placed items live beside it (found through a live_index). */
static int64_t greedy_in_order(const plan_lifetimes *lt, const int *order, int n, int64_t *off) {
    int lo = 0, hi = 0, max_item = 0;
    for (int i = 0; i < n; i++) {
        int t = order[i];
        if (i == 0 || lt->first[t] < lo) lo = lt->first[t];
        if (i == 0 || lt->last[t] > hi) hi = lt->last[t];
        if (t > max_item) max_item = t;
    }
    live_index *ix = live_index_new(lo, hi, max_item + 1);
    placed_list pl = {.item = oc_malloc(((size_t)n + 1) * sizeof(int))};
    int *mark = oc_calloc((size_t)max_item + 1, sizeof *mark); /* i + 1: live beside item i */
    span *sp = NULL;
    int cap_sp = 0;
    int64_t top = 0;
    for (int i = 0; i < n; i++) {
        int t = order[i];
        const int *found;
        int ns = live_index_query(ix, lt->first[t], lt->last[t], &found);
        gap_scan g = {.need = lt->bytes[t], .cur = 0, .best = -1, .best_gap = INT64_MAX};
        if ((int64_t)ns * 16 > pl.n) { /* walk the placed list, the live ones marked */
            for (int k = 0; k < ns; k++) mark[found[k]] = i + 1;
            for (int k = 0; k < pl.n; k++) {
                int p = pl.item[k];
                if (mark[p] == i + 1) gap_next(&g, off[p], off[p] + lt->bytes[p]);
            }
        } else {
            if (ns > cap_sp) {
                cap_sp = 2 * ns;
                sp = oc_realloc(sp, (size_t)cap_sp * sizeof(span));
            }
            for (int k = 0; k < ns; k++)
                sp[k] = (span){off[found[k]], off[found[k]] + lt->bytes[found[k]]};
            if (ns > 1) qsort(sp, (size_t)ns, sizeof(span), span_order);
            for (int k = 0; k < ns; k++) gap_next(&g, sp[k].off, sp[k].end);
        }
        off[t] = g.best >= 0 ? g.best : g.cur;
        if (off[t] + g.need > top) top = off[t] + g.need;
        live_index_add(ix, t, lt->first[t], lt->last[t]);
        placed_insert(&pl, off, lt, t);
    }
    live_index_free(ix);
    oc_free(pl.item);
    oc_free(mark);
    oc_free(sp);
    return top;
}

/* greedy_in_order in cmp's order (left in order[n]). */
static int64_t greedy_place(const plan_lifetimes *lt, const int *items, int n, order_cmp cmp,
                            int *order, int64_t *off) {
    memcpy(order, items, (size_t)n * sizeof(int));
    qsort_r(order, (size_t)n, sizeof(int), cmp, (void *)lt);
    return greedy_in_order(lt, order, n, off);
}

typedef struct pos_load {
    int pos;
    int64_t bytes;
} pos_load;

static int by_load_cmp(const void *a, const void *b) {
    const pos_load *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->pos - y->pos;
}

/* Greedy by breadth (as TFLite's arena planner): the most loaded position
 * first, its items not yet placed largest first; then the next position. */
static int64_t greedy_by_breadth(const plan_lifetimes *lt, const int *items, int n, int *order,
                                 int64_t *off) {
    int lo = 0, hi = -1;
    for (int i = 0; i < n; i++) {
        if (i == 0 || lt->first[items[i]] < lo) lo = lt->first[items[i]];
        if (i == 0 || lt->last[items[i]] > hi) hi = lt->last[items[i]];
    }
    int np = hi - lo + 1;
    if (n == 0 || np <= 0) return 0;
    pos_load *pl = oc_calloc((size_t)np, sizeof *pl);
    int64_t *delta = oc_calloc((size_t)np + 1, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        delta[lt->first[items[i]] - lo] += lt->bytes[items[i]];
        delta[lt->last[items[i]] - lo + 1] -= lt->bytes[items[i]];
    }
    int64_t live = 0;
    for (int p = 0; p < np; p++) pl[p] = (pos_load){p + lo, live += delta[p]};
    qsort(pl, (size_t)np, sizeof *pl, by_load_cmp);
    int *by_size = oc_malloc(((size_t)n + 1) * sizeof(int));
    memcpy(by_size, items, (size_t)n * sizeof(int));
    qsort_r(by_size, (size_t)n, sizeof(int), by_size_cmp, (void *)lt);
    uint8_t *taken = oc_calloc((size_t)n + 1, 1);
    int k = 0;
    for (int q = 0; q < np && k < n; q++)
        for (int i = 0; i < n; i++) {
            int t = by_size[i];
            if (!taken[i] && lt->first[t] <= pl[q].pos && pl[q].pos <= lt->last[t]) {
                taken[i] = 1;
                order[k++] = t;
            }
        }
    int64_t top = greedy_in_order(lt, order, k, off);
    oc_free(pl), oc_free(delta), oc_free(by_size), oc_free(taken);
    return top;
}

/* ---- replay best-fit (allocation order, as runtime/arena.c) ---- */

typedef struct ev {
    int pos, is_free, t;
} ev;

static int ev_cmp(const void *a, const void *b) {
    const ev *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    if (x->is_free != y->is_free) return y->is_free - x->is_free; /* frees first: not live there */
    return x->t - y->t;
}

static int64_t replay_best_fit(const plan_lifetimes *lt, const int *items, int n, int64_t *off) {
    ev *evs = oc_malloc(((size_t)n * 2 + 1) * sizeof(ev));
    int ne = 0;
    for (int i = 0; i < n; i++) {
        evs[ne++] = (ev){lt->first[items[i]], 0, items[i]};
        evs[ne++] = (ev){lt->last[items[i]] + 1, 1, items[i]}; /* free after the last use */
    }
    qsort(evs, (size_t)ne, sizeof(ev), ev_cmp);
    best_fit f = {0};
    for (int k = 0; k < ne; k++) {
        int t = evs[k].t;
        if (evs[k].is_free) best_fit_free(&f, off[t], lt->bytes[t]);
        else off[t] = best_fit_alloc(&f, lt->bytes[t]);
    }
    int64_t top = f.top;
    best_fit_release(&f);
    oc_free(evs);
    return top;
}

int *layout_swap_out_holds(const train_graph *tg, const double *start, const double *end) {
    if (!start || !end) return NULL;
    const ir_graph *g = tg->g;
    int *hold = oc_malloc(((size_t)g->n_tensors + 1) * sizeof(int));
    for (int t = 0; t < g->n_tensors; t++) hold[t] = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const ir_node *n = &g->nodes[k];
        if (n->op != OP_SWAP_OUT || end[k] < 0 || n->n_inputs < 1 || n->inputs[0] < 0) continue;
        int h = -1;
        for (int i = k + 1; i < g->n_nodes; i++) {
            if (rewrite_node_stream(&g->nodes[i]) != REWRITE_STREAM_COMPUTE || start[i] < 0)
                continue;
            if (start[i] >= end[k]) break; /* compute runs in order: the rest start later */
            h = i;
        }
        if (h > hold[n->inputs[0]]) hold[n->inputs[0]] = h;
    }
    return hold;
}

void layout_plan(const train_graph *tg, const int64_t *ws, const int *hold, layout_result *out) {
    const ir_graph *g = tg->g;
    int nt = g->n_tensors, nn = g->n_nodes, ni = nt + nn;
    plan_lifetimes lt;
    plan_lifetimes_compute(tg, &lt);
    for (int t = 0; hold && t < nt; t++) {
        int r = lt.root[t];
        if (hold[t] >= 0 && plan_lifetimes_device(&lt, r) && hold[t] > lt.last[r])
            lt.last[r] = hold[t] < nn ? hold[t] : nn;
    }
    plan_lifetimes_add_workspaces(&lt, nn, ws);
    memset(out, 0, sizeof *out);
    out->offset = oc_malloc(((size_t)nt + 1) * sizeof(int64_t));
    out->ws_offset = oc_malloc(((size_t)nn + 1) * sizeof(int64_t));
    out->ws_bytes = oc_calloc((size_t)nn + 1, sizeof(int64_t));
    int *items = oc_malloc(((size_t)ni + 1) * sizeof(int)), n = 0;
    for (int t = 0; t < ni; t++)
        if (plan_lifetimes_device(&lt, t)) items[n++] = t;
    /* Peak: a sweep over positions -1 .. n_nodes. */
    int np = nn + 3;
    int64_t *delta = oc_calloc((size_t)np + 1, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        int t = items[i];
        delta[lt.first[t] + 1] += lt.bytes[t];
        delta[lt.last[t] + 2] -= lt.bytes[t];
    }
    int64_t live = 0;
    for (int p = 0; p < np; p++) {
        live += delta[p];
        if (live > out->peak_bytes) out->peak_bytes = live;
    }
    /* Every heuristic; the smallest arena wins (ties: the first). */
    static const struct {
        const char *name;
        order_cmp cmp; /* NULL: replay best-fit, or breadth */
        bool breadth;
    } methods[] = {{"greedy by size", by_size_cmp, false},
                   {"replay best-fit", NULL, false},
                   {"greedy by size x lifetime", by_area_cmp, false},
                   {"greedy by lifetime", by_length_cmp, false},
                   {"greedy by breadth", NULL, true}};
    int64_t *best = oc_calloc((size_t)ni + 1, sizeof(int64_t));
    int64_t *cand = oc_calloc((size_t)ni + 1, sizeof(int64_t));
    int *order = oc_malloc(((size_t)n + 1) * sizeof(int)); /* the greedy methods' scratch */
    out->arena_bytes = -1;
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        int64_t top = methods[m].cmp ? greedy_place(&lt, items, n, methods[m].cmp, order, cand)
                      : methods[m].breadth ? greedy_by_breadth(&lt, items, n, order, cand)
                                           : replay_best_fit(&lt, items, n, cand);
        if (out->arena_bytes >= 0 && top >= out->arena_bytes) continue;
        out->arena_bytes = top;
        out->method = methods[m].name;
        int64_t *tmp = best;
        best = cand;
        cand = tmp;
    }
    oc_free(order);
    for (int t = 0; t < nt; t++) out->offset[t] = -1;
    for (int i = 0; i < nn; i++) out->ws_offset[i] = -1;
    for (int i = 0; i < n; i++) {
        int t = items[i];
        if (t < nt) {
            out->offset[t] = best[t];
        } else {
            out->ws_offset[t - nt] = best[t];
            out->ws_bytes[t - nt] = ws[t - nt];
        }
    }
    for (int t = 0; t < nt; t++)
        if (lt.root[t] != t) out->offset[t] = out->offset[lt.root[t]];
    out->fragmentation =
        out->peak_bytes > 0 ? (double)out->arena_bytes / (double)out->peak_bytes : 1.0;
    oc_free(delta), oc_free(best), oc_free(cand), oc_free(items);
    plan_lifetimes_free(&lt);
}

void layout_result_free(layout_result *l) {
    oc_free(l->offset);
    oc_free(l->ws_offset);
    oc_free(l->ws_bytes);
    memset(l, 0, sizeof *l);
}

void layout_apply(train_graph *tg, const layout_result *l) {
    ir_graph *g = tg->g;
    plan_lifetimes lt;
    plan_lifetimes_compute(tg, &lt);
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) /* drop existing ones */
            if (strcmp(n->attrs[a].name, PLAN_ATTR_OFFSETS) == 0 ||
                strcmp(n->attrs[a].name, PLAN_ATTR_WORKSPACE) == 0) {
                ir_attr_free(&n->attrs[a]);
                memmove(&n->attrs[a], &n->attrs[a + 1],
                        (size_t)(n->n_attrs - a - 1) * sizeof(ir_attr));
                n->n_attrs--;
                a--;
            }
        int64_t *v = oc_malloc(((size_t)n->n_outputs + 1) * sizeof(int64_t));
        for (int k = 0; k < n->n_outputs; k++) {
            int t = n->outputs[k];
            v[k] = t >= 0 && lt.root[t] == t && plan_lifetimes_device(&lt, t) ? l->offset[t] : -1;
        }
        ir_attr at = {
            .name = PLAN_ATTR_OFFSETS, .type = IR_ATTR_INTS, .ints = v, .n = n->n_outputs};
        ir_node_add_attr(g, i, &at);
        oc_free(v);
        if (l->ws_offset && l->ws_offset[i] >= 0) {
            int64_t w[2] = {l->ws_offset[i], l->ws_bytes[i]};
            ir_attr wa = {.name = PLAN_ATTR_WORKSPACE, .type = IR_ATTR_INTS, .ints = w, .n = 2};
            ir_node_add_attr(g, i, &wa);
        }
    }
    plan_lifetimes_free(&lt);
}
