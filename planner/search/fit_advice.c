/* fit_advice.c — see fit_advice.h. */
#include "search/fit_advice.h"

#include <stdio.h>

#include "search/strategy_sched.h"

#define FIT_STEP (1LL << 20) /* budgets are searched to 1 MiB, or 1/256 of the floor if less */
#define FIT_FINE 256LL       /* ... but no finer than the arena's alignment */
#define FIT_MAX (1LL << 50)  /* 1 PiB: beyond it, "none" */

/* Is the all-swap, just-in-time plan feasible under budget b (reserve included)? */
static int fits(const strategy_input *in, const sim_plan *p, int64_t b, bool *ok, char *reason,
                size_t cap, oc_err *err) {
    sim_options o = {.budget_bytes = b, .reserve_bytes = in->sim.reserve_bytes};
    sim_result r;
    if (sim_run(in->ctx, p, &o, &r, NULL, err)) return OC_ERR;
    *ok = r.feasible;
    if (reason) snprintf(reason, cap, "%s", r.feasible ? "" : r.reason);
    return OC_OK;
}

/* The least-memory plan: every swappable saved tensor swapped, each swap-in
 * issued at its first reader (nothing on the device before it is needed). */
static sim_plan *least_memory_plan(const train_graph *tg) {
    strategy_tinfo *ti = strategy_tinfo_new(tg);
    sim_plan *p = sim_plan_new(tg);
    sim_plan_keep_all(p);
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (ti->swappable[t]) sim_plan_set(p, t, SIM_DECISION_SWAP, -1);
    }
    strategy_tinfo_free(ti);
    return p;
}

int fit_swap_all_fits(const strategy_input *in, bool *ok, oc_err *err) {
    sim_plan *p = least_memory_plan(in->tg);
    int rc = fits(in, p, in->sim.budget_bytes, ok, NULL, 0, err);
    sim_plan_free(p);
    return rc;
}

int fit_advice_compute(const strategy_input *in, fit_advice *a, oc_err *err) {
    a->floor_bytes =
        sim_memory_floor(in->ctx, &a->floor_node, &a->persistent_bytes) + in->sim.reserve_bytes;
    a->persistent_bytes += in->sim.reserve_bytes;
    a->swap_all_budget = -1;
    sim_plan *p = least_memory_plan(in->tg);
    bool ok = false;
    int rc =
        fits(in, p, in->sim.budget_bytes, &ok, a->swap_all_reason, sizeof a->swap_all_reason, err);
    /* Feasibility grows with the budget: double from the floor, then bisect (to a step a
     * small model's budgets are told in: kilobytes for a fixture, 1 MiB for a network). */
    int64_t step = a->floor_bytes / 256;
    step = step < FIT_FINE ? FIT_FINE : step > FIT_STEP ? FIT_STEP : step;
    int64_t lo = a->floor_bytes - 1, hi = a->floor_bytes > step ? a->floor_bytes : step;
    ok = false;
    while (rc == OC_OK && hi <= FIT_MAX && (rc = fits(in, p, hi, &ok, NULL, 0, err)) == OC_OK &&
           !ok)
        lo = hi, hi *= 2;
    if (rc == OC_OK && ok) {
        while (hi - lo > step && rc == OC_OK) {
            int64_t mid = lo + (hi - lo) / 2;
            if ((rc = fits(in, p, mid, &ok, NULL, 0, err)) != OC_OK) break;
            if (ok) hi = mid;
            else lo = mid;
        }
        a->swap_all_budget = hi;
    }
    sim_plan_free(p);
    return rc;
}
