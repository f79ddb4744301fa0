/* live_index.h — items with lifetimes [first, last] (inclusive positions), and
 * which of them are live at some position of a given range: the layout's
 * "who is live beside this tensor" in O(log P + found) instead of a scan of
 * every item placed so far. A segment tree over the positions lists each item
 * at the O(log P) nodes that cover its range; per-subtree counts let a query
 * skip subtrees that hold nothing.
 *
 *   live_index *ix = live_index_new(-1, n_nodes, n_items);  // live_index_free
 *   live_index_add(ix, t, first, last);
 *   const int *found;
 *   int k = live_index_query(ix, first, last, &found);      // each item once
 */
#ifndef OC_LIVE_INDEX_H
#define OC_LIVE_INDEX_H

typedef struct live_index live_index;

/* Positions lo..hi; items are 0..n_items-1. */
live_index *live_index_new(int lo, int hi, int n_items);
void live_index_free(live_index *ix);
/* Item t lives at first..last (lo <= first <= last <= hi). */
void live_index_add(live_index *ix, int t, int first, int last);
/* The items live at some position of first..last, each once, in no
 * particular order; *found is valid until the next call. */
int live_index_query(live_index *ix, int first, int last, const int **found);

#endif
