/* live_index.c — see live_index.h. Tree nodes are heap-numbered from 1. */
#include "emit/live_index.h"

#include "ir/common.h"

struct live_index {
    int lo, size;       /* positions lo .. lo + size - 1 (size a power of two) */
    int **items;        /* per tree node: the items covering its whole range */
    int *n_items, *cap; /* per tree node */
    int *count;         /* per tree node: items listed in its subtree */
    int *mark, stamp;   /* per item: the query that found it last */
    int *found, n_found, cap_found;
};

live_index *live_index_new(int lo, int hi, int n_items) {
    OC_ASSERT(hi >= lo && n_items >= 0);
    live_index *ix = oc_calloc(1, sizeof *ix);
    ix->lo = lo;
    ix->size = 1;
    while (ix->size < hi - lo + 1) ix->size *= 2;
    size_t nodes = 2 * (size_t)ix->size;
    ix->items = oc_calloc(nodes, sizeof *ix->items);
    ix->n_items = oc_calloc(nodes, sizeof(int));
    ix->cap = oc_calloc(nodes, sizeof(int));
    ix->count = oc_calloc(nodes, sizeof(int));
    ix->mark = oc_calloc((size_t)n_items + 1, sizeof(int));
    return ix;
}

void live_index_free(live_index *ix) {
    if (!ix) return;
    for (size_t k = 0; k < 2 * (size_t)ix->size; k++) oc_free(ix->items[k]);
    oc_free(ix->items), oc_free(ix->n_items), oc_free(ix->cap), oc_free(ix->count);
    oc_free(ix->mark), oc_free(ix->found), oc_free(ix);
}

static void push(int **list, int *n, int *cap, int t) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        *list = oc_realloc(*list, (size_t)*cap * sizeof(int));
    }
    (*list)[(*n)++] = t;
}

static void add(live_index *ix, int node, int l, int r, int a, int b, int t) {
    if (b < l || r < a) return;
    ix->count[node]++;
    if (a <= l && r <= b) {
        push(&ix->items[node], &ix->n_items[node], &ix->cap[node], t);
        return;
    }
    int m = l + (r - l) / 2;
    add(ix, 2 * node, l, m, a, b, t);
    add(ix, 2 * node + 1, m + 1, r, a, b, t);
}

void live_index_add(live_index *ix, int t, int first, int last) {
    OC_ASSERT(first <= last && first >= ix->lo && last - ix->lo < ix->size);
    add(ix, 1, 0, ix->size - 1, first - ix->lo, last - ix->lo, t);
}

static void query(live_index *ix, int node, int l, int r, int a, int b) {
    if (b < l || r < a || ix->count[node] == 0) return;
    for (int k = 0; k < ix->n_items[node]; k++) {
        int t = ix->items[node][k];
        if (ix->mark[t] == ix->stamp) continue;
        ix->mark[t] = ix->stamp;
        push(&ix->found, &ix->n_found, &ix->cap_found, t);
    }
    if (l == r) return;
    int m = l + (r - l) / 2;
    query(ix, 2 * node, l, m, a, b);
    query(ix, 2 * node + 1, m + 1, r, a, b);
}

int live_index_query(live_index *ix, int first, int last, const int **found) {
    ix->stamp++;
    ix->n_found = 0;
    if (first <= last) query(ix, 1, 0, ix->size - 1, first - ix->lo, last - ix->lo);
    *found = ix->found;
    return ix->n_found;
}
