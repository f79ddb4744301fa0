/* sim_plan.h — what a strategy decides (DESIGN §6), kept apart from the graph:
 * per tensor KEEP | SWAP | RECOMPUTE and, per swapped tensor, the node at
 * which its swap-in is issued. Every strategy fills one; the simulator scores it.
 *
 *   sim_plan *p = sim_plan_new(tg);            // all KEEP, default issue points
 *   sim_plan_swap_all(p);                      // every saved tensor SWAP
 *   sim_plan_set(p, t, SIM_DECISION_RECOMPUTE, -1);
 *   sim_plan_set(p, u, SIM_DECISION_SWAP, node); // SwapIn(u) issued when compute reaches node
 *   ... sim_run(ctx, p, &opts, &res, NULL, &err) ...
 *   sim_plan_free(p);
 *
 * Semantics (the simulator's contract):
 *  - Only tensors in tg->saved may be SWAP or RECOMPUTE; only forward
 *    activations outside it may be CHECKPOINT; everything else is KEEP.
 *  - SWAP X: SwapOut(X) on D2H after X's producer; the device copy is freed when
 *    the copy is done and every forward reader has run. SwapIn(X) is issued when
 *    compute reaches node swap_in_at[X] (all earlier compute finished); -1 means
 *    its first backward reader (no prefetch). Backward readers wait for it.
 *  - RECOMPUTE X: X is freed after its last forward reader; its producer re-runs on
 *    the compute stream right before X's first backward reader. The producer's
 *    inputs must be resident then: kept, swapped in (their swap-in waits for the
 *    recompute), or recomputed first (chains; forward activations that are not
 *    saved are recomputed implicitly). Recomputing BatchNormalization costs time
 *    and memory only; running statistics are not updated twice.
 *  - CHECKPOINT X (X a forward activation that is NOT saved, e.g. a Conv output
 *    only a later Concat reads): a recompute that reads X reads it where it is
 *    instead of re-running its producer; X stays resident until its last
 *    reader, recomputes included. Without recomputes reading X it changes
 *    nothing. It gives the recomputation DP cut points between saved tensors.
 */
#ifndef OC_SIM_PLAN_H
#define OC_SIM_PLAN_H

#include "train/train_graph.h"

typedef enum sim_decision {
    SIM_DECISION_KEEP = 0,
    SIM_DECISION_SWAP,
    SIM_DECISION_RECOMPUTE,
    SIM_DECISION_CHECKPOINT,
} sim_decision;
const char *sim_decision_name(sim_decision d);

typedef struct sim_plan {
    const train_graph *tg; /* not owned */
    int n_tensors;
    uint8_t *decision; /* sim_decision per tensor of tg->g */
    int *swap_in_at;   /* per tensor: node index, or -1 (default) */
} sim_plan;

sim_plan *sim_plan_new(const train_graph *tg);
void sim_plan_free(sim_plan *p);
/* Every tensor KEEP, issue points default. */
void sim_plan_keep_all(sim_plan *p);
/* Every saved tensor SWAP with default issue points. */
void sim_plan_swap_all(sim_plan *p);
/* Sets one tensor's decision (t must be a saved tensor unless d is KEEP). */
void sim_plan_set(sim_plan *p, int t, sim_decision d, int swap_in_at);
/* Copies src's decisions into dst (same graph). */
void sim_plan_copy(sim_plan *dst, const sim_plan *src);
/* Counts of tensors per decision among tg->saved. */
void sim_plan_counts(const sim_plan *p, int *keep, int *swap, int *recompute);

#endif
