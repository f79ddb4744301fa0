/* arena.h — the static layout of ONE device arena (DESIGN §7, §8).
 *
 * Every device tensor gets an offset in one arena of fixed capacity, from its
 * lifetime over the schedule: best-fit, replaying allocations and frees in
 * schedule order. Tensors whose lifetimes overlap never share a byte; an
 * allocation that would end past the capacity is an error naming the tensor,
 * never a fallback.
 *
 *   arena_item it[] = {{"w", 4096, ARENA_FOREVER, ARENA_FOREVER},  // persistent
 *                      {"x", 1024, 0, 3}, {"y", 1024, 1, 5}};      // live at ops [first, last]
 *   int64_t off[3], high;
 *   if (arena_plan(it, 3, capacity, off, &high, &err)) ...     // capacity 0: unbounded
 */
#ifndef OC_ARENA_H
#define OC_ARENA_H

#include "plan/lifetimes.h"

#define ARENA_FOREVER (-1) /* first == last == ARENA_FOREVER: live for the whole step */

typedef struct arena_item {
    const char *name; /* for messages */
    int64_t bytes;    /* 0: no storage (offset 0) */
    int first, last;  /* op indices, inclusive; outputs of op i have first == i */
} arena_item;

/* Fills offsets[i] (multiples of PLAN_ALIGN) and *high_water (the bytes the
 * layout needs). Items allocated at op i never overlap items freed at op i
 * (an op's inputs and outputs are distinct storage). OC_ERR when capacity > 0
 * and an allocation would end past it: the message names the item, its size,
 * the op index and the capacity. */
int arena_plan(const arena_item *items, int n, int64_t capacity, int64_t *offsets,
               int64_t *high_water, oc_err *err);

/* True when items i and j share a byte and are live at a common op. */
bool arena_items_conflict(const arena_item *items, const int64_t *offsets, int i, int j);

#endif
