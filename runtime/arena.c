/* arena.c — best-fit static layout (see arena.h), on the planner's free list
 * (plan/best_fit.h): allocations and frees replayed in schedule order. */
#include "arena.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan/best_fit.h"

typedef struct ev {
    int t;     /* op index; persistent items at INT_MIN-ish */
    int alloc; /* 0: alloc (first), 1: free (after last) */
    int item;
} ev;

static int ev_cmp(const void *a, const void *b) {
    const ev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->alloc != y->alloc) return x->alloc - y->alloc;
    return x->item - y->item;
}

int arena_plan(const arena_item *items, int n, int64_t capacity, int64_t *offsets,
               int64_t *high_water, oc_err *err) {
    ev *evs = oc_malloc(((size_t)n * 2 + 1) * sizeof *evs);
    int ne = 0;
    for (int i = 0; i < n; i++) {
        offsets[i] = 0;
        if (items[i].bytes <= 0) continue;
        bool forever = items[i].first == ARENA_FOREVER;
        OC_ASSERT(forever || items[i].first <= items[i].last);
        evs[ne++] = (ev){forever ? -2 : items[i].first, 0, i};
        if (!forever) evs[ne++] = (ev){items[i].last, 1, i};
    }
    qsort(evs, (size_t)ne, sizeof *evs, ev_cmp);
    best_fit f = {0};
    int rc = OC_OK;
    for (int k = 0; k < ne && rc == OC_OK; k++) {
        const arena_item *it = &items[evs[k].item];
        int64_t len = plan_align_up(it->bytes);
        if (evs[k].alloc == 1) {
            best_fit_free(&f, offsets[evs[k].item], len);
            continue;
        }
        int64_t off = best_fit_alloc(&f, len);
        offsets[evs[k].item] = off;
        if (capacity > 0 && off + len > capacity) {
            char when[48];
            if (it->first == ARENA_FOREVER) snprintf(when, sizeof when, "persistent");
            else snprintf(when, sizeof when, "live from op %d", it->first);
            rc = oc_fail(err,
                         "arena: tensor '%s' (%" PRId64 " bytes, %s) does not fit: it would "
                         "end at byte %" PRId64 " of an arena of %" PRId64 " bytes",
                         it->name, it->bytes, when, off + len, capacity);
        }
    }
    *high_water = f.top;
    best_fit_release(&f);
    oc_free(evs);
    return rc;
}

bool arena_items_conflict(const arena_item *items, const int64_t *offsets, int i, int j) {
    const arena_item *a = &items[i], *b = &items[j];
    if (a->bytes <= 0 || b->bytes <= 0) return false;
    bool time = a->first == ARENA_FOREVER || b->first == ARENA_FOREVER ||
                (a->first <= b->last && b->first <= a->last);
    bool space = offsets[i] < offsets[j] + b->bytes && offsets[j] < offsets[i] + a->bytes;
    return time && space;
}
