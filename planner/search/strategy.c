/* strategy.c — the strategy registry, the run wrapper and `auto`. */
#include "search/strategy.h"

#include "search/local_search.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The registry: one line per strategy. "auto" runs every other entry. */
static const strategy *const k_strategies[] = {
    &strategy_incore,       &strategy_swap_all_nosched, &strategy_swap_all, &strategy_vdnn_conv,
    &strategy_superneurons, &strategy_hybrid,           &strategy_chen,     &strategy_dp,
    &strategy_dp_min,       &strategy_dp_swap,          &strategy_auto,
};

int strategy_count(void) { return (int)(sizeof k_strategies / sizeof k_strategies[0]); }

const strategy *strategy_at(int i) {
    OC_ASSERT(i >= 0 && i < strategy_count());
    return k_strategies[i];
}

const strategy *strategy_find(const char *name) {
    for (int i = 0; i < strategy_count(); i++)
        if (strcmp(k_strategies[i]->name, name) == 0) return k_strategies[i];
    return NULL;
}

void strategy_list(char *buf, size_t cap) {
    if (cap == 0) return;
    buf[0] = '\0';
    size_t n = 0;
    for (int i = 0; i < strategy_count() && n + 1 < cap; i++) {
        int w = snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", k_strategies[i]->name);
        if (w < 0) break;
        n += (size_t)w;
    }
}

struct strategy_shared {
    pthread_mutex_t lock;
    void *slot[STRATEGY_SHARED_SLOTS];
    void (*free_fn[STRATEGY_SHARED_SLOTS])(void *);
};

strategy_shared *strategy_shared_new(void) {
    strategy_shared *sh = oc_calloc(1, sizeof *sh);
    pthread_mutex_init(&sh->lock, NULL);
    return sh;
}

void strategy_shared_free(strategy_shared *sh) {
    if (!sh) return;
    for (int i = 0; i < STRATEGY_SHARED_SLOTS; i++)
        if (sh->slot[i]) sh->free_fn[i](sh->slot[i]);
    pthread_mutex_destroy(&sh->lock);
    oc_free(sh);
}

void *strategy_shared_get(const strategy_input *in, strategy_shared_slot slot,
                          void *(*make)(const strategy_input *in, oc_err *err),
                          void (*free_fn)(void *), bool *owned, oc_err *err) {
    strategy_shared *sh = in->shared;
    *owned = sh == NULL;
    if (!sh) return make(in, err);
    pthread_mutex_lock(&sh->lock);
    if (!sh->slot[slot]) {
        sh->slot[slot] = make(in, err);
        sh->free_fn[slot] = free_fn;
    }
    void *v = sh->slot[slot];
    pthread_mutex_unlock(&sh->lock);
    return v;
}

strategy_options strategy_options_default(void) {
    strategy_options o = {.max_leaves = 0,
                          .max_sims = 0,
                          .max_seconds = 0,
                          .node_sims = 0,
                          .max_nodes_exact = 100,
                          .verbose = 0};
    return o;
}

double strategy_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void strategy_note(strategy_stats *stats, const char *fmt, ...) {
    size_t n = strlen(stats->notes);
    if (n + 1 >= sizeof stats->notes) return;
    if (n > 0 && n + 3 < sizeof stats->notes) {
        stats->notes[n++] = ';';
        stats->notes[n++] = ' ';
        stats->notes[n] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(stats->notes + n, sizeof stats->notes - n, fmt, ap);
    va_end(ap);
}

int strategy_sim(const strategy_input *in, const sim_plan *plan, sim_result *r,
                 strategy_stats *stats, oc_err *err) {
    if (stats) stats->sims++;
    return sim_run(in->ctx, plan, &in->sim, r, NULL, err);
}

bool strategy_budget_spent(const strategy_input *in, strategy_stats *stats, double start) {
    bool spent = false;
    if (in->opts.max_sims > 0 && stats->sims >= in->opts.max_sims) spent = true;
    if (in->opts.max_seconds > 0 && strategy_now() - start >= in->opts.max_seconds) spent = true;
    if (spent) stats->bound_hit = true;
    return spent;
}

int strategy_run(const strategy *s, const strategy_input *in, sim_plan *out, strategy_stats *stats,
                 oc_err *err) {
    memset(stats, 0, sizeof *stats);
    double t0 = strategy_now();
    int rc = s->plan(in, out, stats, err);
    double t1 = strategy_now();
    if (rc != OC_OK) return rc;
    sim_result r;
    if (sim_run(in->ctx, out, &in->sim, &r, NULL, err) != OC_OK)
        return oc_fail_prefix(err, "strategy %s produced a malformed plan", s->name);
    stats->plan_seconds = t1 - t0;
    stats->feasible = r.feasible;
    stats->result = r;
    if (!r.feasible && stats->notes[0] == '\0') strategy_note(stats, "%s", r.reason);
    return OC_OK;
}

/* auto: every other registered strategy (in parallel: strategy_run_many); the
 * fastest feasible plan wins, the first in registry order on a tie, and the
 * joint local search (local_search.h) refines it. */
static int auto_plan(const strategy_input *in_caller, sim_plan *out, strategy_stats *stats,
                     oc_err *err) {
    strategy_input in_shared = *in_caller;
    strategy_shared *own = in_caller->shared ? NULL : strategy_shared_new();
    if (own) in_shared.shared = own;
    const strategy_input *in = &in_shared;
    int n = 0;
    const strategy **list = oc_calloc((size_t)strategy_count(), sizeof *list);
    for (int i = 0; i < strategy_count(); i++)
        if (strategy_at(i) != &strategy_auto &&
            (!in->opts.auto_only || strategy_at(i) == in->opts.auto_only))
            list[n++] = strategy_at(i);
    sim_plan **plans = oc_calloc((size_t)n, sizeof *plans);
    strategy_stats *st = oc_calloc((size_t)n, sizeof *st);
    for (int i = 0; i < n; i++) plans[i] = sim_plan_new(in->tg);
    int rc = strategy_run_many(in, list, n, plans, st, err);
    if (rc != OC_OK) rc = oc_fail_prefix(err, "auto");
    int best = -1;
    for (int i = 0; i < n && rc == OC_OK; i++) {
        stats->sims += st[i].sims + 1;
        stats->leaves_explored += st[i].leaves_explored;
        stats->bound_hit = stats->bound_hit || st[i].bound_hit;
        if (st[i].feasible && (best < 0 || st[i].result.time_s < st[best].result.time_s)) best = i;
    }
    if (rc == OC_OK) {
        if (best >= 0) {
            stats->chose = list[best];
            sim_plan_copy(out, plans[best]);
            local_stats ls;
            rc = local_refine(in, out, 0, &ls, err);
            stats->sims += ls.sims;
            if (ls.best_s < ls.start_s)
                strategy_note(stats, "chose %s, refined by the local search: %.6g -> %.6g ms",
                              list[best]->name, ls.start_s * 1e3, ls.best_s * 1e3);
            else if (ls.sims > 0)
                strategy_note(stats, "chose %s (the local search found nothing faster)",
                              list[best]->name);
            else /* keeps everything, or at the lower bound: nothing to search */
                strategy_note(stats, "chose %s", list[best]->name);
        } else {
            sim_plan_swap_all(out);
            strategy_note(stats, "no strategy found a feasible plan; the fallback swaps every "
                                 "saved tensor");
        }
    }
    for (int i = 0; i < n; i++) sim_plan_free(plans[i]);
    oc_free(plans);
    oc_free(st);
    oc_free(list);
    strategy_shared_free(own);
    return rc;
}

const strategy strategy_auto = {
    .name = "auto",
    .summary = "runs every other strategy, keeps the fastest feasible simulated plan",
    .plan = auto_plan,
};
