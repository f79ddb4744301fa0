/* strategy_sched.h — shared tables and swap-in scheduling for strategies
 * (seed 000 §4.3): per saved tensor its size, its last forward reader and
 * first backward reader, and the swap-in issue-point optimizer.
 *
 *   strategy_tinfo *ti = strategy_tinfo_new(in->tg);
 *   ... ti->fwd_last[t], ti->first_bwd[t], ti->bytes[t], ti->producer_op[t] ...
 *   strategy_sched_early(in, ti, plan, stats, &r, &err); // issue points as early as memory allows
 *   strategy_tinfo_free(ti);
 */
#ifndef OC_STRATEGY_SCHED_H
#define OC_STRATEGY_SCHED_H

#include "search/strategy.h"

typedef struct strategy_tinfo {
    const train_graph *tg;
    int n_tensors;
    int n_fwd;           /* leading FORWARD-phase nodes: the simulator's forward side
                           (the loss counts as backward, as in simulator.c) */
    int64_t *bytes;      /* per tensor, as the arena holds it (0 when unknown) */
    int64_t *copy_bytes; /* per tensor: what a copy moves (ir_tensor_bytes) */
    int *fwd_last;       /* per tensor: last forward node reading or producing it, -1 */
    int *first_bwd;      /* per tensor: first node >= n_forward reading it, -1 */
    bool *can_rc;        /* per tensor: saved with a forward producer (RECOMPUTE allowed) */
    bool *swappable;     /* per tensor: saved and read in backward (SWAP allowed) */
    int *saved_by_prod;  /* tg->saved sorted by production order (inputs first) */
    int n_saved;
    int *conv_bwd; /* backward nodes whose fwd_of is a Conv, ascending */
    int n_conv_bwd;
} strategy_tinfo;

strategy_tinfo *strategy_tinfo_new(const train_graph *tg);
void strategy_tinfo_free(strategy_tinfo *ti);

/* need[t] for every tensor: the first node (in block terms) at which plan's
 * backward side needs t resident: its first backward reader, or earlier when
 * a forward node reading t is recomputed (its recompute runs in the block of
 * the backward node that needs it, as simulator.c inserts it); -1 if never.
 * need must hold ti->n_tensors ints; scratch holds tg->g->n_nodes ints. */
void strategy_tinfo_need(const strategy_tinfo *ti, const sim_plan *plan, int *need, int *scratch);

/* Moves every SWAP tensor's issue point that lies after its need node (see
 * strategy_tinfo_need) back to it, so a plan stays well-formed after a
 * decision changed to RECOMPUTE. */
void strategy_tinfo_clamp_issue(const strategy_tinfo *ti, sim_plan *plan);

/* Earliest legal issue node of t's swap-in (after its last forward reader,
 * never before the backward pass begins). */
int strategy_tinfo_issue_lo(const strategy_tinfo *ti, int t);
/* The backward-Conv node that runs immediately before t's first backward
 * reader, when it is a legal issue point; else the first backward reader
 * (the "prefetch with the previous Conv" rule of vDNN / SuperNeurons). */
int strategy_tinfo_prev_conv_issue(const strategy_tinfo *ti, int t, int need);
/* True when node n of tg is a forward Conv (false for n < 0: no producer). */
bool strategy_tinfo_is_conv(const strategy_tinfo *ti, int node);

/* Swap-in scheduling (seed 000 §4.3): every SWAP tensor's issue point is moved
 * as early as the memory left free by the rest of the backward pass allows.
 * Free memory per node comes from a simulation with every swap-in issued just
 * in time (at its first reader); tensors are placed in order of first need,
 * each taking the earliest node from which it fits until its reader. The
 * placement is verified by simulation (tighter safety margins are tried when
 * it deadlocks or is slower). The fastest feasible of {incoming issue points
 * (clamped legal), just in time, the placement} is kept, so the result is
 * never slower than the plan passed in; when none is feasible the incoming
 * points stay. *r: the simulator's verdict on the final plan. */
int strategy_sched_early(const strategy_input *in, const strategy_tinfo *ti, sim_plan *plan,
                         strategy_stats *stats, sim_result *r, oc_err *err);

#endif
