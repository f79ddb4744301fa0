/* strategy_many.c — see strategy_run_many in strategy.h. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "search/strategy.h"

typedef struct many_job {
    const strategy_input *in;
    const strategy *const *list;
    sim_plan **plans;
    strategy_stats *stats;
    int n;
    int next; /* the next strategy to take (under lock) */
    pthread_mutex_t lock;
    int *order;  /* the order strategies are taken in: heavy ones first */
    int *rc;     /* per strategy */
    oc_err *err; /* per strategy */
} many_job;

/* One worker: its own simulator context (contexts are not thread-safe), then
 * strategies taken one at a time from the shared counter. */
static void *worker(void *arg) {
    many_job *j = arg;
    strategy_input in = *j->in;
    sim_context *ctx = NULL;
    oc_err err;
    int rc_ctx =
        j->in->prof ? sim_context_new(in.tg, in.prof, in.prof->device.name, &ctx, &err) : OC_ERR;
    in.ctx = ctx;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int next = j->next++;
        pthread_mutex_unlock(&j->lock);
        if (next >= j->n) break;
        int i = j->order[next];
        if (rc_ctx != OC_OK) {
            j->rc[i] = OC_ERR;
            j->err[i] = err;
            continue;
        }
        j->rc[i] = strategy_run(j->list[i], &in, j->plans[i], &j->stats[i], &j->err[i]);
        /* its per-node arrays live in this worker's context, freed below */
        sim_result *r = &j->stats[i].result;
        r->node_start = r->node_end = r->recompute_start = r->recompute_end = NULL;
        r->swap_out_start = r->swap_out_end = r->swap_in_start = r->swap_in_end = NULL;
    }
    sim_context_free(ctx);
    return NULL;
}

int strategy_threads(void) {
    const char *env = getenv("OUTCORE_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

int strategy_run_many(const strategy_input *in, const strategy *const *list, int n,
                      sim_plan **plans, strategy_stats *stats, oc_err *err) {
    int threads = strategy_threads();
    if (threads > n) threads = n;
    if (threads <= 1 || !in->prof) { /* one thread: the caller's context */
        for (int i = 0; i < n; i++)
            if (strategy_run(list[i], in, plans[i], &stats[i], err))
                return oc_fail_prefix(err, "strategy %s", list[i]->name);
        return OC_OK;
    }
    many_job j = {.in = in, .list = list, .plans = plans, .stats = stats, .n = n};
    j.rc = oc_calloc((size_t)n, sizeof *j.rc);
    j.err = oc_calloc((size_t)n, sizeof *j.err);
    j.order = oc_calloc((size_t)n, sizeof *j.order);
    int o = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if (list[i]->heavy == (pass == 0)) j.order[o++] = i;
    pthread_mutex_init(&j.lock, NULL);
    pthread_t *tid = oc_calloc((size_t)threads, sizeof *tid);
    int started = 0;
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, &j) == 0) started++;
        else break;
    if (started == 0) worker(&j); /* no thread could start: do it here */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&j.lock);
    int rc = OC_OK;
    for (int i = 0; i < n && rc == OC_OK; i++) /* the first failure in list order */
        if (j.rc[i] != OC_OK) {
            *err = j.err[i];
            rc = oc_fail_prefix(err, "strategy %s", list[i]->name);
        }
    oc_free(tid);
    oc_free(j.rc);
    oc_free(j.order);
    oc_free(j.err);
    return rc;
}
