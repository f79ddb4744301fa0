/* plan_write.h — a strategy's plan made runnable and written as plan.onnx
 * (DESIGN §7): strategy -> rewrite (rewrite.h) -> static layout (layout.h) ->
 * verification (plan/plan_verify.h) -> ONNX file (format: plan/plan_file.h).
 *
 *   plan_made pm;
 *   if (plan_make(strategy_find("hybrid"), &in, &pm, &err)) ...   // in: strategy.h
 *   if (!pm.feasible) ... pm.stats.notes / pm.stats.result.reason ...
 *   plan_file_meta m = {.strategy = "hybrid", .source_model = "resnet18.onnx", .batch = 8,
 *                       .profile_digest = d, .device = "v100"};
 *   plan_file_write(&pm, &m, "plan.onnx", &err);
 *   plan_made_free(&pm);
 *
 * plan_make: runs the strategy under in->sim.budget_bytes; rewrites and lays out
 * the plan; when the arena exceeds the budget (fragmentation, or lifetimes that
 * differ from the simulator's), re-plans with the budget lowered by the
 * overshoot and 1% of the budget, up to PLAN_MAX_REPLANS times (bisecting
 * when a lowered budget leaves the strategy without a plan); once a layout fits
 * with a plan more than PLAN_REFINE_GAIN slower than the first, the budgets
 * between it and the last that did not fit are bisected up to PLAN_MAX_REFINES
 * times for a faster plan that fits (plan_refine). The
 * result is verified against the real budget. pm.feasible false: no plan fits
 * (the strategy found none, or re-planning ran out), with pm.reason set. */
#ifndef OC_PLAN_WRITE_H
#define OC_PLAN_WRITE_H

#include "emit/layout.h"
#include "emit/rewrite.h"
#include "plan/plan_file.h"
#include "search/strategy.h"

#define PLAN_MAX_REPLANS 8
#define PLAN_MAX_REFINES 3
#define PLAN_REFINE_GAIN 0.01

typedef struct plan_made {
    bool feasible;
    char reason[600];
    strategy_stats stats;   /* of the final strategy run */
    sim_result result;      /* scalars of its simulation (pointers invalid) */
    int64_t budget_bytes;   /* asked */
    int64_t planned_budget; /* the budget the strategy planned under */
    int replans;            /* lowerings until a layout fitted (refinements not counted) */
    int64_t last_arena;     /* arena of the last layout that did not fit */
    rewrite_result rw;
    layout_result layout;
    sim_timeline *tl;     /* the predicted timeline (source graph indices) */
    sim_plan *plan;       /* the final decisions (source graph); owned */
    double lower_bound_s; /* any plan's least time under the asked budget (sim_bound.h); 0: none */
} plan_made;

int plan_make(const strategy *s, const strategy_input *in, plan_made *out, oc_err *err);
void plan_made_free(plan_made *pm);

typedef struct plan_file_meta {
    const char *tool_version; /* NULL: OC_EXPORT_VERSION */
    const char *strategy;
    const char *source_model;
    const char *device;
    const char *profile_digest; /* hex */
    int64_t batch;
} plan_file_meta;

int plan_file_write(plan_made *pm, const plan_file_meta *m, const char *path, oc_err *err);

#endif
