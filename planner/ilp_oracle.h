/* ilp_oracle.h — an optimality oracle for small training graphs (≲ 100 nodes):
 * a Checkmate-style MILP over keep / swap / recompute per saved activation,
 * with swap variables as POET adds them, solved by GLPK (glp_intopt).
 *
 *   ilp_model *m;
 *   if (ilp_model_new(in, &m, &err)) ...                 // in: strategy_input
 *   ilp_result r;
 *   if (ilp_solve(m, 30.0, &r, &err)) ...                // time limit, seconds
 *   if (r.feasible) ... r.objective_s (model) ... r.optimal ...
 *   ilp_plan(m, &r, plan);                               // decisions into a sim_plan
 *   double t; bool ok = ilp_model_cost(m, plan, &t);     // any plan under the model
 *   ilp_result_free(&r); ilp_model_free(m);
 *
 * The cost model is the simulator's (§5) as far as a linear program can say it:
 *  - Positions are the nodes of the default schedule. Every tensor that is not
 *    a decision lives from its producer to its last reader (its in-core
 *    liveness) plus persistent bytes and the running node's workspace.
 *  - A saved activation x: keep → live [producer, last reader]; recompute or
 *    swap → live [producer, last forward reader] and [first backward reader,
 *    last reader] (swap-in / recompute issued right before its reader).
 *    Memory at every position <= budget - reserve.
 *  - Time = ideal + Σ recompute_x · (T(producer) + T(non-saved forward inputs
 *    that must be re-run with it)) + stall, where for every backward position p
 *    stall >= Σ_{swapped x needed by p} copy(x) - compute time of backward
 *    before p (H2D is one in-order stream that may start at the beginning of
 *    backward). D2H traffic is taken as hidden.
 * Approximations, so the model is an estimate like the DP's: recompute chains
 * are costed per tensor (a recomputed input is not shared), the recompute's
 * own input residency and early prefetch memory are not charged, swap-outs are
 * free. ilp_plan's plans are re-scored by the simulator; the figure the oracle
 * guarantees is the model objective: no plan is below it under ilp_model_cost. */
#ifndef OC_ILP_ORACLE_H
#define OC_ILP_ORACLE_H

#include "strategy.h"

typedef struct ilp_model ilp_model;

typedef struct ilp_result {
    bool feasible;      /* a feasible integer solution was found */
    bool optimal;       /* proven optimal (no time limit hit) */
    double objective_s; /* model iteration time */
    uint8_t *decision;  /* per tensor of tg: sim_decision; owned */
    int n_vars, n_rows;
} ilp_result;

/* Builds the model for in->tg under in->sim (budget, reserve); node times and
 * workspaces from in->prof (or the context's times when prof is NULL).
 * OC_ERR when the graph has more than in->opts.max_nodes_exact nodes (> 0) or
 * the profile does not match. */
int ilp_model_new(const strategy_input *in, ilp_model **out, oc_err *err);
void ilp_model_free(ilp_model *m);
/* Solves with GLPK within time_limit_s (<= 0: none). OC_ERR only when GLPK
 * fails outright (message names the GLPK code). */
int ilp_solve(ilp_model *m, double time_limit_s, ilp_result *r, oc_err *err);
void ilp_result_free(ilp_result *r);
/* Writes r's decisions into plan; swap-ins issued one node before the reader. */
void ilp_plan(const ilp_model *m, const ilp_result *r, sim_plan *plan);
/* The model's time for plan's decisions; false when it breaks the model's
 * memory bound. */
bool ilp_model_cost(const ilp_model *m, const sim_plan *plan, double *time_s);

extern const strategy strategy_ilp; /* "ilp": the oracle as a strategy (small graphs) */

#endif
