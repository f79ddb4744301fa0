/* arena.c — best-fit static layout (see arena.h). The free list is a sorted
 * array of [offset, end) blocks below the high-water mark, coalesced on free. */
#include "arena.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct block {
    int64_t off, end;
} block;

typedef struct freelist {
    block *b;
    size_t n, cap;
    int64_t top; /* high-water mark */
} freelist;

static int64_t align_up(int64_t x) { return (x + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

/* Best fit: the smallest free block that holds need; else extend the top,
 * starting inside the last free block when it touches the top. */
static int64_t fl_alloc(freelist *f, int64_t need) {
    size_t best = f->n;
    for (size_t i = 0; i < f->n; i++)
        if (f->b[i].end - f->b[i].off >= need &&
            (best == f->n || f->b[i].end - f->b[i].off < f->b[best].end - f->b[best].off))
            best = i;
    if (best < f->n) {
        int64_t off = f->b[best].off;
        f->b[best].off += need;
        if (f->b[best].off == f->b[best].end) {
            for (size_t i = best + 1; i < f->n; i++) f->b[i - 1] = f->b[i];
            f->n--;
        }
        return off;
    }
    int64_t off = f->top;
    if (f->n && f->b[f->n - 1].end == f->top) off = f->b[--f->n].off;
    f->top = off + need;
    return off;
}

static void fl_free(freelist *f, int64_t off, int64_t len) {
    size_t i = 0;
    while (i < f->n && f->b[i].off < off) i++;
    oc_grow((void **)&f->b, &f->cap, f->n + 1, sizeof *f->b);
    for (size_t k = f->n; k > i; k--) f->b[k] = f->b[k - 1];
    f->b[i] = (block){off, off + len};
    f->n++;
    if (i + 1 < f->n && f->b[i].end == f->b[i + 1].off) { /* merge right */
        f->b[i].end = f->b[i + 1].end;
        for (size_t k = i + 2; k < f->n; k++) f->b[k - 1] = f->b[k];
        f->n--;
    }
    if (i > 0 && f->b[i - 1].end == f->b[i].off) { /* merge left */
        f->b[i - 1].end = f->b[i].end;
        for (size_t k = i + 1; k < f->n; k++) f->b[k - 1] = f->b[k];
        f->n--;
    }
}

typedef struct ev {
    int t;      /* op index; persistent items at INT_MIN-ish */
    int alloc;  /* 0: alloc (first), 1: free (after last) */
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
    freelist f = {0};
    int rc = OC_OK;
    for (int k = 0; k < ne && rc == OC_OK; k++) {
        const arena_item *it = &items[evs[k].item];
        int64_t len = align_up(it->bytes);
        if (evs[k].alloc == 1) {
            fl_free(&f, offsets[evs[k].item], len);
            continue;
        }
        int64_t off = fl_alloc(&f, len);
        offsets[evs[k].item] = off;
        if (capacity > 0 && off + len > capacity) {
            char when[48];
            if (it->first == ARENA_FOREVER) snprintf(when, sizeof when, "persistent");
            else snprintf(when, sizeof when, "live from op %d", it->first);
            rc = oc_fail(err, "arena: tensor '%s' (%" PRId64 " bytes, %s) does not fit: it would "
                         "end at byte %" PRId64 " of an arena of %" PRId64 " bytes", it->name,
                         it->bytes, when, off + len, capacity);
        }
    }
    *high_water = f.top;
    oc_free(f.b);
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
