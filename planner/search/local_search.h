/* local_search.h — the joint keep / swap / recompute search: simulated
 * annealing over per-tensor decisions and swap-in issue points, started from
 * a plan another strategy found (auto's best), scored by the simulator.
 *
 *   sim_plan *p = ...;                        // a feasible plan (auto's best)
 *   local_stats ls;
 *   if (local_refine(&in, p, 0, &ls, &err)) ...  // p: never slower than before
 *   ... ls.start_s, ls.best_s, ls.sims, ls.accepted ...
 *
 * Moves (seeded, so the same input gives the same plan on any machine and
 * under any load; bounded by a count of simulations, and by wall time only
 * when --max-seconds (in->opts.max_seconds) is given):
 *  - one tensor to another decision (a swap-in just in time, at the earliest
 *    legal node or anywhere between);
 *  - one swapped tensor's issue point moved;
 *  - an exchange: a kept tensor leaves the device (swap or recompute) while
 *    one that had left it is kept, which keeps the memory roughly level.
 * A move is scored by one simulation; an infeasible plan is refused; a slower
 * one is accepted with probability exp(-slowdown / temperature), the
 * temperature falling linearly to zero, and the fastest plan seen is kept.
 * Graphs of up to 100 nodes run four chains from the start plan (initial
 * temperatures 0.3%, 1%, 3% and 10% of its time), larger ones the first. A
 * start that keeps everything, or that reaches the lower bound (sim_bound.h),
 * is returned as it is. */
#ifndef OC_LOCAL_SEARCH_H
#define OC_LOCAL_SEARCH_H

#include "search/strategy.h"

typedef struct local_stats {
    double start_s, best_s; /* simulated time of the incoming and the returned plan */
    long sims, accepted, improved;
} local_stats;

/* The default simulation count per chain for in->tg: about 2e7
 * node-simulations, 2,000 to 50,000 simulations (down to 200 past 10,000 nodes). */
long local_default_sims(const strategy_input *in);

/* Refines plan in place (it must be feasible under in->sim, else it is left
 * as it is and ls->sims is 0). max_sims <= 0: local_default_sims. Uses
 * in->ctx. OC_ERR only on a malformed plan. */
int local_refine(const strategy_input *in, sim_plan *plan, long max_sims, local_stats *ls,
                 oc_err *err);

/* The search as a row of compare and a step of auto: refines plan (found by
 * strategy `from`) with the default count and fills st as strategy_run does
 * (sims, plan_seconds, the simulator's verdict, a note naming `from`). */
int local_run(const strategy_input *in, sim_plan *plan, const char *from, strategy_stats *st,
              oc_err *err);
/* Its name and summary for reports; not in the registry (it needs a start
 * plan): .plan is NULL, local_run is the entry point. */
extern const strategy strategy_local;

#endif
