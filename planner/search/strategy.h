/* strategy.h — one interface for every planning strategy (DESIGN §6):
 * plan = strategy(training graph, profile/simulator, budget, options).
 * Every strategy fills a sim_plan (per saved tensor KEEP | SWAP | RECOMPUTE
 * plus swap-in issue points); every plan is scored by the one simulator.
 *
 *   sim_context *ctx; sim_context_new(tg, prof, "v100", &ctx, &err);
 *   strategy_input in = {.tg = tg, .ctx = ctx, .prof = prof,
 *                        .sim = {.budget_bytes = 16LL << 30},
 *                        .opts = strategy_options_default()};
 *   const strategy *s = strategy_find("hybrid");          // NULL if unknown
 *   sim_plan *p = sim_plan_new(tg);
 *   strategy_stats st;
 *   if (s->plan(&in, p, &st, &err)) ...                   // OC_ERR: internal/bad input
 *   if (st.feasible) ... st.result.time_s ...             // scored by sim_run
 *   sim_plan_free(p);
 *
 *   for (int i = 0; i < strategy_count(); i++) strategy_at(i)->name ...
 *
 * Contract of plan():
 *  - in->ctx was built from in->tg (and in->prof); plan() may call sim_run on
 *    it as often as it likes (not thread-safe: one ctx per thread).
 *  - out was made by sim_plan_new(in->tg); plan() overwrites every decision.
 *  - Returns OC_OK when it produced a plan, feasible or not. stats->feasible and
 *    stats->result are the simulator's verdict on *out under in->sim (the
 *    strategy_run wrapper re-scores to guarantee that). When no feasible plan
 *    is found, *out is the strategy's best attempt and stats->notes says why.
 *  - Returns OC_ERR only on malformed input or a bug-like failure (err set).
 *  - Strategies do not print; explanations go to stats->notes.
 *
 * Adding a strategy: write planner/strategy_<name>.c exporting a
 * `const strategy strategy_<name>` and add one line to the table in
 * planner/strategy.c. */
#ifndef OC_STRATEGY_H
#define OC_STRATEGY_H

#include "sim/simulator.h"

typedef struct strategy_options {
    /* Cap on leaves of any exhaustive search (hybrid keep/swap step, DP
     * states, ...). <= 0: the strategy's default. */
    long max_leaves;
    /* Cap on simulator calls for one plan() (<= 0: unlimited). */
    long max_sims;
    /* Wall-clock cap for one plan() in seconds (<= 0: unlimited). Strategies
     * that hit it return their best plan so far and set bound_hit. A seconds
     * cap makes the result depend on machine speed: tests may use it only
     * where what they assert holds for whatever plan comes back. */
    double max_seconds;
    /* Simulation work one greedy pass may spend, in node-simulations (simulations x nodes of
     * the step); <= 0: the pass's default. dp-swap's take-back of each swept chain (default
     * 1e7, at least 64 simulations) takes swaps back in groups past it. */
    long node_sims;
    /* ILP and other external solvers: node limit for applicability. */
    int max_nodes_exact;
    int verbose; /* > 0: strategies may put more detail in notes */
    /* auto: run this strategy alone (then the local search) instead of every
     * one; plan_make's re-plans set it to the first run's winner. NULL: all. */
    const struct strategy *auto_only;
} strategy_options;
strategy_options strategy_options_default(void);

/* Budget-independent intermediate results that strategies of one run share
 * (the recomputation DP's chains, computed once for dp, dp-swap and dp-min):
 * one per (tg, profile, options), made by whoever runs several strategies
 * (auto, compare), thread-safe. */
typedef struct strategy_shared strategy_shared;
strategy_shared *strategy_shared_new(void);
void strategy_shared_free(strategy_shared *sh);
/* Runs make(in) once under the lock and returns its result (slot: which
 * result; free_fn frees it in strategy_shared_free). NULL sh: make's result,
 * which the caller frees. */
typedef enum strategy_shared_slot {
    STRATEGY_SHARED_DP,
    STRATEGY_SHARED_SLOTS
} strategy_shared_slot;

typedef struct strategy_input {
    const train_graph *tg;
    const profile *prof; /* may be NULL when only ctx is available */
    sim_context *ctx;    /* built from tg (+prof); shared by all calls */
    sim_options sim;     /* budget + reserve the plan must fit */
    strategy_options opts;
    strategy_shared *shared; /* may be NULL: every strategy computes its own */
} strategy_input;

/* The shared result in slot, made by make(in, err) on first use (under a lock:
 * other threads wait for it). NULL with err set when make failed. With
 * in->shared NULL, make's fresh result: *owned is then true and the caller
 * frees it with free_fn. */
void *strategy_shared_get(const strategy_input *in, strategy_shared_slot slot,
                          void *(*make)(const strategy_input *in, oc_err *err),
                          void (*free_fn)(void *), bool *owned, oc_err *err);

typedef struct strategy_stats {
    long leaves_explored;         /* leaves of the exhaustive step (0 if none) */
    bool bound_hit;               /* a cap (leaves/sims/seconds) cut the search short */
    long sims;                    /* sim_run calls made */
    double plan_seconds;          /* wall time of plan() (filled by strategy_run) */
    bool feasible;                /* the simulator's verdict on the returned plan */
    sim_result result;            /* scalar figures of that run (pointer fields invalid
                              after later sim_run calls on the same ctx) */
    char notes[512];              /* human-readable: fallbacks taken, why infeasible */
    const struct strategy *chose; /* auto: the strategy whose plan it refined (NULL: none) */
} strategy_stats;

typedef struct strategy strategy;
struct strategy {
    const char *name;
    const char *summary; /* one line for --help / docs */
    int (*plan)(const strategy_input *in, sim_plan *out, strategy_stats *stats, oc_err *err);
    /* Runs for seconds on large graphs: strategy_run_many starts these first
     * (longest first keeps both cores busy to the end). */
    bool heavy;
};

/* Registry (table in strategy.c). "auto" is registered too. */
int strategy_count(void);
const strategy *strategy_at(int i);
const strategy *strategy_find(const char *name); /* NULL when unknown */
/* Writes "incore, swap-all-nosched, ..." into buf (for error messages). */
void strategy_list(char *buf, size_t cap);

/* Runs s->plan with stats zeroed, times it (plan_seconds), then re-scores *out
 * with sim_run under in->sim so stats->feasible/result are the simulator's
 * word, whatever the strategy claimed. */
int strategy_run(const strategy *s, const strategy_input *in, sim_plan *out, strategy_stats *stats,
                 oc_err *err);

/* Runs list[i] into plans[i] / stats[i] (as strategy_run) for i < n, on
 * strategy_threads() threads, each with its own simulator context built from
 * in->tg and in->prof (in->prof NULL: one thread, in->ctx). Each result is
 * the one a single thread gives: which thread ran a strategy does not change
 * it. stats[i].result's per-node arrays are NULL afterwards. OC_ERR: the first
 * failing strategy in list order, named. */
int strategy_run_many(const strategy_input *in, const strategy *const *list, int n,
                      sim_plan **plans, strategy_stats *stats, oc_err *err);
/* Threads for strategy_run_many: $OUTCORE_THREADS, else the online CPUs (1..64). */
int strategy_threads(void);

/* Helpers for strategy implementations. */
/* sim_run on plan with in->sim; counts stats->sims; OC_ERR only on malformed plan. */
int strategy_sim(const strategy_input *in, const sim_plan *plan, sim_result *r,
                 strategy_stats *stats, oc_err *err);
/* Appends a formatted note (truncates silently). */
void strategy_note(strategy_stats *stats, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Monotonic wall clock in seconds. */
double strategy_now(void);
/* True when stats show a sim or time cap from in->opts has been reached
 * (start = strategy_now() at plan() entry); sets stats->bound_hit. */
bool strategy_budget_spent(const strategy_input *in, strategy_stats *stats, double start);

/* Strategies (defined in strategy_*.c). */
extern const strategy strategy_incore;
extern const strategy strategy_swap_all_nosched;
extern const strategy strategy_swap_all;
extern const strategy strategy_vdnn_conv;
extern const strategy strategy_superneurons;
extern const strategy strategy_hybrid;
extern const strategy strategy_chen;    /* strategy_chen.c */
extern const strategy strategy_dp;      /* strategy_dp.c: time-centric DP */
extern const strategy strategy_dp_min;  /* strategy_dp.c: memory-centric DP */
extern const strategy strategy_dp_swap; /* strategy_dp.c: DP + swapped checkpoints */
extern const strategy strategy_auto;

#endif
