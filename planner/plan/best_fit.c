/* best_fit.c — see best_fit.h. */
#include "plan/best_fit.h"

#include <string.h>

#include "ir/common.h"

static void remove_at(best_fit *f, size_t i) {
    memmove(&f->b[i], &f->b[i + 1], (f->n - i - 1) * sizeof *f->b);
    f->n--;
}

int64_t best_fit_alloc(best_fit *f, int64_t need) {
    size_t best = f->n;
    for (size_t i = 0; i < f->n; i++)
        if (f->b[i].end - f->b[i].off >= need &&
            (best == f->n || f->b[i].end - f->b[i].off < f->b[best].end - f->b[best].off))
            best = i;
    if (best < f->n) {
        int64_t off = f->b[best].off;
        f->b[best].off += need;
        if (f->b[best].off == f->b[best].end) remove_at(f, best);
        return off;
    }
    int64_t off = f->top;
    if (f->n && f->b[f->n - 1].end == f->top) off = f->b[--f->n].off;
    f->top = off + need;
    return off;
}

void best_fit_free(best_fit *f, int64_t off, int64_t len) {
    size_t i = 0;
    while (i < f->n && f->b[i].off < off) i++;
    oc_grow((void **)&f->b, &f->cap, f->n + 1, sizeof *f->b);
    memmove(&f->b[i + 1], &f->b[i], (f->n - i) * sizeof *f->b);
    f->b[i] = (best_fit_block){off, off + len};
    f->n++;
    if (i + 1 < f->n && f->b[i].end == f->b[i + 1].off) { /* merge right */
        f->b[i].end = f->b[i + 1].end;
        remove_at(f, i + 1);
    }
    if (i > 0 && f->b[i - 1].end == f->b[i].off) { /* merge left */
        f->b[i - 1].end = f->b[i].end;
        remove_at(f, i);
    }
}

void best_fit_release(best_fit *f) {
    oc_free(f->b);
    memset(f, 0, sizeof *f);
}
