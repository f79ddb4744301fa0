/* plan_verify.c — see plan_verify.h. */
#include "plan/plan_verify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops/op_table.h"
#include "plan/lifetimes.h"

static const char *writer_of(const ir_graph *g, int t) {
    int p = g->tensors[t].producer;
    if (p >= 0) return g->nodes[p].name;
    return g->tensors[t].is_initializer ? "(initializer)" : "(graph input)";
}

static int check_order(const ir_graph *g, oc_err *err) {
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            const ir_tensor *x = &g->tensors[t];
            int p = x->producer;
            if (p < 0 && !x->is_initializer && !x->is_graph_input)
                return oc_fail(err, "plan: node '%s': input '%s' is never produced", n->name,
                               x->name);
            if (p >= i)
                return oc_fail(err,
                               "plan: node '%s' (position %d): input '%s' is produced "
                               "later, by node '%s' (position %d)",
                               n->name, i, x->name, g->nodes[p].name, p);
            bool host = p >= 0 && op_is_swap_out(&g->nodes[p]);
            if (op_is_swap_in(n) && !host)
                return oc_fail(err,
                               "plan: node '%s': SwapIn reads '%s', which no earlier "
                               "SwapOut produced",
                               n->name, x->name);
            if (!op_is_swap_in(n) && host)
                return oc_fail(err,
                               "plan: node '%s' reads host tensor '%s' (a SwapOut "
                               "output); only a SwapIn may",
                               n->name, x->name);
        }
    }
    return OC_OK;
}

/* Items: tensors t < n_tensors, then node workspaces n_tensors + i. */
static const char *item_writer(const ir_graph *g, int t) {
    return t < g->n_tensors ? writer_of(g, t) : g->nodes[t - g->n_tensors].name;
}

static void item_name(const ir_graph *g, int t, char *buf, size_t cap) {
    if (t < g->n_tensors) snprintf(buf, cap, "tensor '%s'", g->tensors[t].name);
    else snprintf(buf, cap, "workspace");
}

/* By offset, then index (qsort_r context: the offsets). */
static int by_offset(const void *a, const void *b, void *ctx) {
    const int64_t *off = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (off[x] != off[y]) return off[x] < off[y] ? -1 : 1;
    return x - y;
}

/* The live items as a set ordered by arena offset: a Fenwick tree over their
 * ranks in (offset, index) order. */
typedef struct live_set {
    int n, *bit;
} live_set;

static void live_set_add(live_set *s, int rank, int d) {
    for (int r = rank + 1; r <= s->n; r += r & -r) s->bit[r] += d;
}

static int live_set_below(const live_set *s, int rank) { /* live items of rank < rank */
    int c = 0;
    for (int r = rank; r > 0; r -= r & -r) c += s->bit[r];
    return c;
}

static int live_set_kth(const live_set *s, int k) { /* rank of the k-th live item, k >= 1 */
    int pos = 0, step = 1;
    while (step * 2 <= s->n) step *= 2;
    for (; step; step /= 2)
        if (pos + step <= s->n && s->bit[pos + step] < k) pos += step, k -= s->bit[pos];
    return pos;
}

/* By first position, then rank (qsort_r context: first, then the ranks). */
typedef struct sweep_ctx {
    const int *key, *rank;
} sweep_ctx;

static int by_key_rank(const void *a, const void *b, void *ctx) {
    const sweep_ctx *c = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (c->key[x] != c->key[y]) return c->key[x] < c->key[y] ? -1 : 1;
    return c->rank[x] - c->rank[y];
}

static int overlap_error(const ir_graph *g, const plan_lifetimes *lt, const int64_t *all, int a,
                         int b, oc_err *err) { /* a before b in (offset, index) order */
    int later = lt->first[a] >= lt->first[b] ? a : b, other = later == a ? b : a;
    int64_t lo = all[b], hi = all[a] + lt->bytes[a] < all[b] + lt->bytes[b] ? all[a] + lt->bytes[a]
                                                                            : all[b] + lt->bytes[b];
    char nl[300], no[300];
    item_name(g, later, nl, sizeof nl);
    item_name(g, other, no, sizeof no);
    return oc_fail(err,
                   "plan: node '%s': its %s overlaps %s (written by '%s') at arena bytes [%" PRId64
                   ", %" PRId64 ") while both are live (positions %d..%d and %d..%d)",
                   item_writer(g, later), nl, no, item_writer(g, other), lo, hi, lt->first[later],
                   lt->last[later], lt->first[other], lt->last[other]);
}

/* No two items live at a common position share an arena byte. A sweep over
 * positions keeps the live items ordered by offset; while they are disjoint,
 * an item that starts overlaps one of them exactly when it overlaps its
 * neighbour below or above in offset order: O(n log n). */
static int check_overlaps(const ir_graph *g, const plan_lifetimes *lt, const int64_t *all,
                          int *items, int n, oc_err *err) {
    int *rank = oc_malloc(((size_t)g->n_tensors + g->n_nodes + 1) * sizeof(int));
    qsort_r(items, (size_t)n, sizeof(int), by_offset, (void *)all);
    for (int i = 0; i < n; i++) rank[items[i]] = i;
    int *by_first = oc_malloc(((size_t)n + 1) * sizeof(int));
    int *by_last = oc_malloc(((size_t)n + 1) * sizeof(int));
    memcpy(by_first, items, (size_t)n * sizeof(int));
    memcpy(by_last, items, (size_t)n * sizeof(int));
    sweep_ctx cf = {lt->first, rank}, cl = {lt->last, rank};
    qsort_r(by_first, (size_t)n, sizeof(int), by_key_rank, &cf);
    qsort_r(by_last, (size_t)n, sizeof(int), by_key_rank, &cl);
    live_set s = {.n = n, .bit = oc_calloc((size_t)n + 1, sizeof(int))};
    int rc = OC_OK, j = 0, live = 0;
    for (int i = 0; i < n && rc == OC_OK; i++) {
        int x = by_first[i];
        /* ended before x starts (so started before it too: already added) */
        for (; j < n && lt->last[by_last[j]] < lt->first[x]; j++)
            live_set_add(&s, rank[by_last[j]], -1), live--;
        int below = live_set_below(&s, rank[x]);
        if (below > 0) {
            int p = items[live_set_kth(&s, below)];
            if (all[p] + lt->bytes[p] > all[x]) rc = overlap_error(g, lt, all, p, x, err);
        }
        if (rc == OC_OK && live > below) {
            int q = items[live_set_kth(&s, below + 1)];
            if (all[q] < all[x] + lt->bytes[x]) rc = overlap_error(g, lt, all, x, q, err);
        }
        live_set_add(&s, rank[x], 1), live++;
    }
    oc_free(s.bit), oc_free(by_first), oc_free(by_last), oc_free(rank);
    return rc;
}

int plan_verify(const train_graph *tg, const int64_t *off, int64_t arena_bytes, int64_t budget,
                oc_err *err) {
    const ir_graph *g = tg->g;
    if (check_order(g, err)) return OC_ERR;
    plan_lifetimes lt;
    plan_lifetimes_compute(tg, &lt);
    int nt = g->n_tensors, nn = g->n_nodes;
    int64_t *ws_off, *ws_bytes;
    plan_workspaces_of(g, &ws_off, &ws_bytes);
    plan_lifetimes_add_workspaces(&lt, nn, ws_bytes);
    /* Offsets of tensors and workspace items (nt + node). */
    int64_t *all = oc_malloc(((size_t)nt + nn + 1) * sizeof(int64_t));
    memcpy(all, off, (size_t)nt * sizeof(int64_t));
    memcpy(all + nt, ws_off, (size_t)nn * sizeof(int64_t));
    int *items = oc_malloc(((size_t)nt + nn + 1) * sizeof(int)), n = 0;
    int rc = OC_OK;
    for (int t = 0; t < nt + nn && rc == OC_OK; t++) {
        if (!plan_lifetimes_device(&lt, t)) continue;
        char what[300];
        const char *w = t < nt ? writer_of(g, t) : g->nodes[t - nt].name;
        if (t < nt) snprintf(what, sizeof what, "tensor '%s'", g->tensors[t].name);
        else snprintf(what, sizeof what, "workspace of %" PRId64 " bytes", ws_bytes[t - nt]);
        if (all[t] < 0) rc = oc_fail(err, "plan: node '%s': %s has no arena offset", w, what);
        else if (all[t] % PLAN_ALIGN)
            rc = oc_fail(err,
                         "plan: node '%s': %s at offset %" PRId64 " is not a multiple of "
                         "%d",
                         w, what, all[t], PLAN_ALIGN);
        else if (lt.bytes[t] > arena_bytes || all[t] > arena_bytes - lt.bytes[t]) /* no overflow */
            rc = oc_fail(err,
                         "plan: node '%s': %s at offset %" PRId64 " (%" PRId64
                         " bytes) ends past the arena of %" PRId64 " bytes",
                         w, what, all[t], lt.bytes[t], arena_bytes);
        items[n++] = t;
    }
    if (rc == OC_OK) rc = check_overlaps(g, &lt, all, items, n, err);
    oc_free(all), oc_free(ws_off), oc_free(ws_bytes);
    if (rc == OC_OK && budget > 0 && arena_bytes > budget)
        rc = oc_fail(err, "plan: the arena needs %" PRId64 " bytes, over the budget of %" PRId64,
                     arena_bytes, budget);
    oc_free(items);
    plan_lifetimes_free(&lt);
    return rc;
}
