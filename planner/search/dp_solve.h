/* dp_solve.h — the recomputation DP over a family of lower sets (Kusumoto et
 * al., NeurIPS 2019; DESIGN §6). A plan is a chain ∅ ⊊ L1 ⊊ … ⊊ Lk = V; its
 * overhead is ΣΔT and its peak max_i(Σ_{j<i} ΔK_j + P_i) (dp_lowersets.h).
 *
 *   dp_lowersets *ls = dp_lowersets_build(g, 2000);
 *   dp_options o = {.mode = DP_MODE_MEMORY};             // least peak
 *   dp_solution s;
 *   dp_solve(g, ls, &o, &s);
 *   if (s.feasible) ... s.peak, s.overhead, s.chain[0..n_chain) ...
 *   uint8_t *drop = ...[g->n]; dp_solution_dropped(g, ls, &s, drop);
 *   dp_solution_free(&s);
 *
 * Lower sets are processed in order of size; the state of a lower set is its
 * Pareto front of (overhead, kept memory): for each overhead the least memory
 * kept so far, dominated states pruned. Time-centric mode: least overhead
 * among chains whose peak is <= budget (ties: least kept memory). Memory-centric
 * mode: least peak (binary search over the budget with a feasibility DP, which
 * is exact), then the least overhead at that peak. Exact over the family given;
 * when a front exceeds max_front it is thinned (s.thinned says so). */
#ifndef OC_DP_SOLVE_H
#define OC_DP_SOLVE_H

#include "search/dp_lowersets.h"

typedef enum dp_mode {
    DP_MODE_TIME = 0, /* least overhead with peak <= budget */
    DP_MODE_MEMORY,   /* least peak, then least overhead */
} dp_mode;

typedef struct dp_options {
    dp_mode mode;
    int64_t budget; /* DP_MODE_TIME: bytes available to the chain's terms */
    int max_front;  /* states kept per lower set; <= 0: 512 */
} dp_options;

typedef struct dp_solution {
    bool feasible;
    double overhead; /* ΣΔT, seconds */
    int64_t peak;    /* the chain's peak in the DP's model */
    int *chain;      /* indices into the family: L1 … Lk (Lk = V); owned */
    int n_chain;
    dp_family family;   /* which family ran */
    int n_lowersets;    /* its size */
    long n_transitions; /* pairs L ⊊ L' considered */
    long n_states;      /* states kept, summed over lower sets (last run) */
    bool thinned;       /* a front was cut to max_front: no longer exact */
} dp_solution;

/* Solves over family ls of g. Never fails (no chain under the budget:
 * feasible = false). */
void dp_solve(const dp_graph *g, const dp_lowersets *ls, const dp_options *o, dp_solution *out);
/* The same in two parts, for many solves of one graph: the transitions and
 * their costs (under g->peak_model as it is now; the table does not keep g or
 * ls), then solves against them. */
typedef struct dp_table dp_table;
dp_table *dp_table_new(const dp_graph *g, const dp_lowersets *ls);
void dp_table_free(dp_table *t);
void dp_solve_table(const dp_table *t, const dp_options *o, dp_solution *out);
void dp_solution_free(dp_solution *s);
/* dropped[v] = 1 when node v is in the dropped part F of its block (recomputed
 * in backward), 0 when kept or when v is in the last block's V'∖∂V (= V'). */
void dp_solution_dropped(const dp_graph *g, const dp_lowersets *ls, const dp_solution *s,
                         uint8_t *dropped);

#endif
