/* fit_advice.h — when no plan fits the budget: why, and what would.
 *
 *   fit_advice a;
 *   if (fit_advice_compute(&in, &a, &err)) ...
 *   // a.floor_bytes > budget: node a.floor_node alone does not fit, whatever the plan
 *   // a.swap_all_budget: the smallest budget under which a plan exists (every saved
 *   //                    tensor swapped, each brought back just in time)
 *
 * The budget figures include in->sim.reserve_bytes (they compare with --budget). */
#ifndef OC_FIT_ADVICE_H
#define OC_FIT_ADVICE_H

#include "search/strategy.h"

typedef struct fit_advice {
    int64_t floor_bytes;      /* no plan fits a smaller budget (sim_memory_floor + reserve) */
    int floor_node;           /* the node whose working set sets it (-1: the start) */
    int64_t persistent_bytes; /* parameters, state, optimizer state (+ reserve) */
    int64_t swap_all_budget;  /* smallest budget the all-swap plan fits (to 1 MiB, or 1/256 of
                                 the floor when less); -1: none */
    char swap_all_reason[sizeof(((sim_result *)0)->reason)]; /* why it fails in->sim's budget */
} fit_advice;

/* Fills a for in's graph, profile and budget. */
int fit_advice_compute(const strategy_input *in, fit_advice *a, oc_err *err);
/* Whether the all-swap plan fits in->sim's budget (one simulation). */
int fit_swap_all_fits(const strategy_input *in, bool *ok, oc_err *err);

#endif
