/* sim_bound.h — a lower bound on the iteration time of any plan under a
 * budget, in the simulator's model (DESIGN §5), printed beside every plan so
 * a user sees how much a strategy leaves on the table.
 *
 *   sim_bound b;
 *   if (sim_lower_bound(ctx, &opts, &b, &err)) ...
 *   if (b.feasible) ... plan time / b.time_s ...
 *
 * The bound: every plan runs every node once and starts with the batch copied
 * in, so T >= input copy + Σ node times. And at every node k where the in-core
 * step holds E_k bytes more than the budget, any plan has at least E_k bytes of
 * saved activations off the device while k runs: x of them swapped (their
 * D2H before k starts, their H2D after k ends) and E_k - x recomputed after k
 * (at least their producers' times: a fractional knapsack over the saved
 * tensors by producer time per byte). So
 *   T >= min over x of  max(input + Σ_{i<k} t_i, x / D2H) + t_k
 *                      + max(Σ_{i>k} t_i + recompute(E_k - x), x / H2D),
 * which is convex in x (minimised by golden-section search). The bound is the
 * largest over k. Copy latencies and contention are left out (it stays a
 * bound). */
#ifndef OC_SIM_BOUND_H
#define OC_SIM_BOUND_H

#include "sim/simulator.h"

typedef struct sim_bound {
    bool feasible;        /* false: no plan fits (sim_memory_floor over the budget, or more
                             over it at a node than every saved tensor) */
    double time_s;        /* the bound */
    int at_node;          /* the node whose excess sets it (-1: compute alone) */
    int64_t excess_bytes; /* in-core bytes over the budget at that node */
} sim_bound;

int sim_lower_bound(sim_context *ctx, const sim_options *o, sim_bound *b, oc_err *err);

#endif
