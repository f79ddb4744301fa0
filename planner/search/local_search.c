/* local_search.c — see local_search.h. */
#include "search/local_search.h"

#include <math.h>
#include <string.h>

#include "search/strategy_sched.h"
#include "sim/sim_bound.h"

/* xorshift64*: small, fast, the same sequence everywhere. */
static uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}
static int rng_below(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }
static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

/* Fuzzing builds (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, the libFuzzer convention; `make
 * fuzz` sets it) search LS_FUZZ_DIVISOR times shorter: the same moves and code paths within a
 * fuzzer's time per input. Instrumented, a simulation runs about 30x slower, and one `plan -o`
 * on a tiny model runs the search about 14 times (--fuse auto's two variants, each with its
 * re-plans and refinements): 6 s in a plain build, minutes instrumented. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define LS_FUZZ_DIVISOR 50
#else
#define LS_FUZZ_DIVISOR 1
#endif

long local_default_sims(const strategy_input *in) {
    long n = in->tg->g->n_nodes > 0 ? in->tg->g->n_nodes : 1;
    long sims = 20000000L / n;
    /* at least 2,000 up to 10,000 nodes; a larger graph (an unrolled RNN's 46,000) keeps the
     * 2e7 node-simulations, down to 200: 2,000 of its simulations took 10 minutes a search */
    long least = n <= 10000 ? 2000 : 200;
    return (sims < least ? least : sims > 50000 ? 50000 : sims) / LS_FUZZ_DIVISOR;
}

typedef struct ls_ctx {
    const strategy_tinfo *ti;
    int *cand; /* saved tensors that may leave the device */
    int n_cand;
    uint64_t rng;
    double t_start; /* strategy_now() at local_refine's entry */
} ls_ctx;

/* A swap-in issue point for t: just in time, the earliest legal node, or a
 * node between them. */
static int pick_issue(ls_ctx *c, int t) {
    int lo = strategy_tinfo_issue_lo(c->ti, t), hi = c->ti->first_bwd[t];
    int r = rng_below(&c->rng, 4);
    if (r == 0 || hi <= lo) return -1;
    if (r == 1) return lo;
    return lo + rng_below(&c->rng, hi - lo + 1);
}

/* Sets t to decision d (one it may take) with a fresh issue point. */
static void set_to(ls_ctx *c, sim_plan *p, int t, sim_decision d) {
    sim_plan_set(p, t, d, d == SIM_DECISION_SWAP ? pick_issue(c, t) : -1);
}

/* A decision other than t's current one that t may take; -1 when none. */
static int other_decision(ls_ctx *c, const sim_plan *p, int t) {
    sim_decision opts[2];
    int n = 0;
    for (int d = SIM_DECISION_KEEP; d <= SIM_DECISION_RECOMPUTE; d++) {
        if (d == p->decision[t]) continue;
        if (d == SIM_DECISION_SWAP && !c->ti->swappable[t]) continue;
        if (d == SIM_DECISION_RECOMPUTE && !c->ti->can_rc[t]) continue;
        opts[n++] = (sim_decision)d;
    }
    return n ? (int)opts[rng_below(&c->rng, n)] : -1;
}

/* A candidate whose decision is (want_keep ? KEEP : not KEEP); -1 after a few misses. */
static int pick_cand(ls_ctx *c, const sim_plan *p, bool want_keep) {
    for (int i = 0; i < 16; i++) {
        int t = c->cand[rng_below(&c->rng, c->n_cand)];
        if ((p->decision[t] == SIM_DECISION_KEEP) == want_keep) return t;
    }
    return -1;
}

/* One random move applied to p; false when none applied. */
static bool move(ls_ctx *c, sim_plan *p) {
    int kind = rng_below(&c->rng, 10);
    if (kind < 4) { /* one tensor to another decision */
        int t = c->cand[rng_below(&c->rng, c->n_cand)];
        int d = other_decision(c, p, t);
        if (d < 0) return false;
        set_to(c, p, t, (sim_decision)d);
    } else if (kind < 7) { /* a swapped tensor's issue point */
        int t = -1;
        for (int i = 0; i < 16 && t < 0; i++) {
            int u = c->cand[rng_below(&c->rng, c->n_cand)];
            if (p->decision[u] == SIM_DECISION_SWAP) t = u;
        }
        if (t < 0) return false;
        sim_plan_set(p, t, SIM_DECISION_SWAP, pick_issue(c, t));
    } else { /* exchange: one kept tensor leaves, one that had left is kept */
        int a = pick_cand(c, p, true), b = pick_cand(c, p, false);
        if (a < 0 || b < 0) return false;
        int d = other_decision(c, p, a);
        if (d < 0) return false;
        set_to(c, p, a, (sim_decision)d);
        sim_plan_set(p, b, SIM_DECISION_KEEP, -1);
    }
    strategy_tinfo_clamp_issue(c->ti, p);
    return true;
}

/* One annealing chain from start (feasible, start_s) at initial temperature
 * t0_frac x start_s with its own random stream; the fastest plan it sees goes
 * to best when faster than *best_s. */
static int chain(const strategy_input *in, ls_ctx *c, const sim_plan *start, double start_s,
                 double t0_frac, long max_sims, sim_plan *cur, sim_plan *trial, sim_plan *best,
                 double *best_s, local_stats *ls, oc_err *err) {
    sim_plan_copy(cur, start);
    double cur_s = start_s, t0 = t0_frac * start_s;
    sim_result r;
    for (long i = 0; i < max_sims; i++) {
        /* --max-seconds bounds this search too (then the result depends on speed) */
        if (in->opts.max_seconds > 0 && (i & 63) == 0 &&
            strategy_now() - c->t_start >= in->opts.max_seconds)
            break;
        sim_plan_copy(trial, cur);
        if (!move(c, trial)) continue;
        ls->sims++;
        if (sim_run(in->ctx, trial, &in->sim, &r, NULL, err)) return OC_ERR;
        if (!r.feasible) continue;
        double temp = t0 * (1.0 - (double)i / (double)max_sims), delta = r.time_s - cur_s;
        if (delta > 0 && (temp <= 0 || rng_unit(&c->rng) >= exp(-delta / temp))) continue;
        sim_plan *tmp = cur;
        cur = trial, trial = tmp;
        cur_s = r.time_s;
        ls->accepted++;
        if (cur_s < *best_s) {
            *best_s = cur_s;
            ls->improved++;
            sim_plan_copy(best, cur);
        }
    }
    return OC_OK;
}

/* Initial temperatures of the chains (fractions of the start's time): a
 * portfolio, since which one wins depends on the graph (measured on
 * graphs/small: 0.003 best on some, 0.03-0.1 on others). Graphs up to
 * LS_PORTFOLIO_NODES nodes (simulations are cheap) run every chain with the
 * full count; larger ones the first chain only. */
static const double LS_T0[] = {0.003, 0.01, 0.03, 0.1};
#define LS_CHAINS ((int)(sizeof LS_T0 / sizeof LS_T0[0]))
#define LS_PORTFOLIO_NODES 100

int local_refine(const strategy_input *in, sim_plan *plan, long max_sims, local_stats *ls,
                 oc_err *err) {
    memset(ls, 0, sizeof *ls);
    sim_result r;
    if (sim_run(in->ctx, plan, &in->sim, &r, NULL, err)) return OC_ERR;
    ls->start_s = ls->best_s = r.time_s;
    if (!r.feasible) return OC_OK;
    bool moved = false; /* keeping everything is the fastest plan there is */
    for (int i = 0; i < in->tg->n_saved && !moved; i++)
        moved = plan->decision[in->tg->saved[i]] != SIM_DECISION_KEEP;
    if (!moved) return OC_OK;
    sim_bound lb; /* a plan at the lower bound cannot be improved */
    if (sim_lower_bound(in->ctx, &in->sim, &lb, err)) return OC_ERR;
    double floor_s = lb.feasible ? lb.time_s * (1 + 1e-9) : 0;
    if (r.time_s <= floor_s) return OC_OK;
    if (max_sims <= 0) max_sims = local_default_sims(in);
    strategy_tinfo *ti = strategy_tinfo_new(in->tg);
    ls_ctx c = {.ti = ti, .t_start = strategy_now()};
    c.cand = oc_malloc((size_t)(ti->n_saved > 0 ? ti->n_saved : 1) * sizeof *c.cand);
    for (int i = 0; i < ti->n_saved; i++) {
        int t = ti->saved_by_prod[i];
        if (ti->swappable[t] || ti->can_rc[t]) c.cand[c.n_cand++] = t;
    }
    sim_plan *start = sim_plan_new(in->tg), *cur = sim_plan_new(in->tg),
             *trial = sim_plan_new(in->tg);
    sim_plan_copy(start, plan);
    int rc = OC_OK;
    int chains = in->tg->g->n_nodes <= LS_PORTFOLIO_NODES ? LS_CHAINS : 1;
    for (int k = 0; k < chains && c.n_cand > 0 && rc == OC_OK; k++) {
        c.rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(2 * k + 1); /* odd multiple: never 0 */
        rc = chain(in, &c, start, r.time_s, LS_T0[k], max_sims, cur, trial, plan, &ls->best_s, ls,
                   err);
        if (ls->best_s <= floor_s) break;
    }
    sim_plan_free(start);
    sim_plan_free(cur);
    sim_plan_free(trial);
    oc_free(c.cand);
    strategy_tinfo_free(ti);
    return rc;
}

int local_run(const strategy_input *in, sim_plan *plan, const char *from, strategy_stats *st,
              oc_err *err) {
    memset(st, 0, sizeof *st);
    double t0 = strategy_now();
    local_stats ls;
    if (local_refine(in, plan, 0, &ls, err)) return OC_ERR;
    st->plan_seconds = strategy_now() - t0;
    st->sims = ls.sims + 1;
    sim_result r;
    if (sim_run(in->ctx, plan, &in->sim, &r, NULL, err)) return OC_ERR;
    st->feasible = r.feasible;
    st->result = r;
    strategy_note(st,
                  "from %s: %.6g -> %.6g ms (%ld simulations, %ld moves accepted, %ld improving)",
                  from, ls.start_s * 1e3, ls.best_s * 1e3, ls.sims, ls.accepted, ls.improved);
    return OC_OK;
}

const strategy strategy_local = {
    .name = "local",
    .summary = "joint keep/swap/recompute search (simulated annealing) from the best plan found",
    .plan = NULL,
};
