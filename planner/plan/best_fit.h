/* best_fit.h — the one best-fit free list, shared by the planner's layout
 * (emit/layout.c, "replay best-fit") and the runtime's arena (runtime/arena.c).
 *
 *   best_fit f = {0};
 *   int64_t a = best_fit_alloc(&f, 4096), b = best_fit_alloc(&f, 1024);
 *   best_fit_free(&f, a, 4096);            // coalesced with free neighbours
 *   ... f.top: the high-water mark ...
 *   best_fit_release(&f);                  // frees the block list
 *
 * Allocation takes the smallest free block below the top that holds the
 * request (the first of equals); otherwise it extends the top, starting inside
 * the last free block when that block touches the top. Sizes are taken as
 * given (callers align them: PLAN_ALIGN). The free list is a sorted array of
 * [off, end) blocks; each call is linear in its length. */
#ifndef OC_BEST_FIT_H
#define OC_BEST_FIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct best_fit_block {
    int64_t off, end;
} best_fit_block;

typedef struct best_fit {
    best_fit_block *b; /* owned; best_fit_release frees it */
    size_t n, cap;
    int64_t top; /* high-water mark */
} best_fit;

/* Offset of a new block of need bytes. */
int64_t best_fit_alloc(best_fit *f, int64_t need);
/* Returns [off, off + len) to the free list. */
void best_fit_free(best_fit *f, int64_t off, int64_t len);
void best_fit_release(best_fit *f);

#endif
