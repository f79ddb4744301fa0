/* ilp_oracle.h — an optimality oracle for small training graphs (≲ 100 nodes):
 * a Checkmate-style MILP over keep / swap / recompute per saved activation,
 * with swap variables (and swap-in issue points) as POET adds them, solved by
 * CBC (COIN-OR branch and cut) with a warm start from the best heuristic plan.
 *
 *   ilp_model *m;
 *   if (ilp_model_new(in, &m, &err)) ...                 // in: strategy_input
 *   ilp_result r;
 *   if (ilp_solve(m, 30.0, warm, &r, &err)) ...          // time limit s; warm: plan or NULL
 *   if (r.feasible) ... r.objective_s (model) ... r.optimal ...
 *   ilp_plan(m, &r, plan);                               // decisions + issue points
 *   ... sim_run(ctx, plan, ...) ...                      // the simulator's time for it
 *   double t; bool ok = ilp_model_cost(m, plan, &t);     // any plan under the model
 *   ilp_result_free(&r); ilp_model_free(m);
 *
 * The model is the simulator's (simulator.h) as far as a MILP can say it.
 * Positions are the nodes of the default schedule; the memory at position p is
 * what the simulator counts when node p starts (after allocating its outputs
 * and workspace). For an all-keep plan it equals the simulator's, node by node
 * (tested): persistent tensors (parameters, state, optimizer state, constants;
 * in-place aliases own nothing) throughout, graph inputs from the start to
 * their last reader, every other tensor from its producer to its last reader
 * (graph outputs to the end), the node's workspace.
 * Per decision tensor x (a saved activation with a forward producer, or a
 * saved graph input, which can only be swapped, as in the simulator):
 *  - r_x (RECOMPUTE): x is freed after its last forward reader and live again
 *    from its first backward reader. Time: every forward node of x's
 *    recompute chain (its producer plus, recursively, the producers of the
 *    non-saved activations it reads) re-runs once, however many recomputed
 *    tensors share it (one continuous variable per node).
 *  - s_x (SWAP) with issue point y_{x,i}, i in (last forward reader, first
 *    backward reader]: the device copy stays live until its D2H copy ends
 *    (binary z_{x,p} per position, from the D2H stream below), the swapped-in
 *    copy is live from the issue point on.
 *  - Streams: D2H copies run in production order, each after its producer
 *    ends; H2D copies in order of first backward reader, each after its issue
 *    point is reached, after its own D2H copy and after the previous H2D copy;
 *    a backward node waits for its swap-ins. Stall variables Q_p (cumulative,
 *    non-decreasing) delay node p; iteration time = Σ node times + recompute
 *    time + Q_last. Copy time = latency + bytes / bandwidth, both directions
 *    at once (duplex).
 * Approximations (documented; the oracle's plans are re-scored by the
 * simulator and both figures are reported):
 *  - forward nodes run at their ideal times (no stall in forward); recompute
 *    time delays later nodes but gives copies no extra time to hide in;
 *  - the peak inside a recompute op (its inputs and re-run intermediates) and
 *    the workspaces of re-run nodes are not charged; a non-saved intermediate
 *    shared by two recompute chains is charged once in time, never in memory;
 *  - a swapped-in copy is charged from its issue point (the simulator
 *    allocates it when the H2D copy starts, which may be later);
 *  - a recompute that reads a saved decision tensor y materializes y early
 *    (the simulator re-runs or swaps it in before the recompute): modelled
 *    through chains of up to 8 recomputed tensors (swap-in issued by then, or
 *    y live from then), but the early need does not enter the H2D timing;
 *  - the recompute ops before a node are charged at once: every re-run
 *    intermediate of one chain plus its largest workspace, on top of the
 *    memory before the node;
 *  - a non-duplex device is modelled as duplex.
 * The guarantee: no plan costs less than r.objective_s under ilp_model_cost
 * (which evaluates exactly this model with the least stalls; it may reject a
 * plan the MILP would accept only with a deliberate stall). */
#ifndef OC_ILP_ORACLE_H
#define OC_ILP_ORACLE_H

#include "search/strategy.h"

typedef struct ilp_model ilp_model;

typedef struct ilp_result {
    bool feasible;      /* a feasible integer solution was found */
    bool optimal;       /* proven optimal (no time limit hit) */
    double objective_s; /* model iteration time */
    double bound_s;     /* proven: no plan costs less under the model (= objective when
                           optimal; the LP bound when no solution was found) */
    bool infeasible;    /* proven: no plan fits the model's budget (bound_s meaningless) */
    bool warm_feasible; /* the warm-start plan was accepted by the model */
    double warm_s;      /* its model time (when warm_feasible) */
    uint8_t *decision;  /* per tensor of tg: sim_decision; owned */
    int *issue;         /* per tensor of tg: swap-in issue node (-1: none); owned */
    int n_vars, n_int_vars, n_rows;
    double solve_s; /* wall time of glp_intopt */
} ilp_result;

/* Builds the model for in->tg under in->sim (budget, reserve); node times and
 * workspaces from in->prof (or the context's times when prof is NULL, and
 * then nothing can be swapped). OC_ERR when the graph has more than
 * in->opts.max_nodes_exact nodes (> 0) or the profile does not match. */
int ilp_model_new(const strategy_input *in, ilp_model **out, oc_err *err);
void ilp_model_free(ilp_model *m);
/* Solves with CBC (one thread) within time_limit_s (<= 0: none). warm (may be
 * NULL): a plan whose decisions and issue points start the search when the
 * model accepts them (its other variables are solved for first, within a
 * quarter of the limit, at most 10 s). OC_ERR is reserved for failures. */
int ilp_solve(ilp_model *m, double time_limit_s, const sim_plan *warm, ilp_result *r, oc_err *err);
void ilp_result_free(ilp_result *r);
/* Writes r's decisions and issue points into plan (all KEEP when r is not
 * feasible). Issue points are made monotone in H2D order (which changes no
 * model time and only frees memory) and clamped to legal ones. */
void ilp_plan(const ilp_model *m, const ilp_result *r, sim_plan *plan);

/* The model's view of one plan. */
typedef struct ilp_eval {
    bool fits;          /* memory <= budget - reserve at every position */
    double time_s;      /* model iteration time */
    double recompute_s; /* of which re-run node time */
    double stall_s;     /* of which stall */
    int worst_node;     /* position of the highest memory */
    double worst_bytes;
} ilp_eval;
/* Evaluates plan under the model; mem (may be NULL) gets the memory at each
 * position (tg->g->n_nodes doubles). */
void ilp_model_eval(const ilp_model *m, const sim_plan *plan, ilp_eval *ev, double *mem);
/* The model's time for plan's decisions; false when it breaks the model's
 * memory bound or keeps a CHECKPOINT (which the model cannot price). */
bool ilp_model_cost(const ilp_model *m, const sim_plan *plan, double *time_s);

/* The oracle as a strategy ("ilp"; not in the registry: small graphs only).
 * Notes carry the MILP's objective and status. */
extern const strategy strategy_ilp;

#endif
