/* streams.c — see streams.h. One mutex + condvar per stream (its queue) and
 * per event (its counters). */
#include "streams.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef enum task_kind { TASK_FN = 0, TASK_RECORD, TASK_WAIT, TASK_STOP } task_kind;

typedef struct task {
    task_kind kind;
    rt_task_fn fn;
    void *ctx;
    int64_t arg; /* TASK_FN: argument; RECORD/WAIT: event target */
    rt_event *ev;
} task;

struct rt_event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t recorded; /* records enqueued (host thread) */
    int64_t reached;  /* highest record reached (stream thread) */
};

struct rt_stream {
    char *name;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* queue non-empty, or drained */
    task *q;           /* ring buffer */
    size_t cap, head, count;
    int64_t pushed, done; /* tasks enqueued / finished */
    bool failed;
    oc_err err; /* first error since the last sync */
};

static void lock(pthread_mutex_t *m) { OC_ASSERT(pthread_mutex_lock(m) == 0); }
static void unlock(pthread_mutex_t *m) { OC_ASSERT(pthread_mutex_unlock(m) == 0); }

rt_event *rt_event_new(void) {
    rt_event *e = oc_calloc(1, sizeof *e);
    OC_ASSERT(pthread_mutex_init(&e->mu, NULL) == 0);
    OC_ASSERT(pthread_cond_init(&e->cv, NULL) == 0);
    return e;
}

void rt_event_free(rt_event *e) {
    if (!e) return;
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    oc_free(e);
}

static void event_reach(rt_event *e, int64_t target) {
    lock(&e->mu);
    if (target > e->reached) e->reached = target;
    pthread_cond_broadcast(&e->cv);
    unlock(&e->mu);
}

static void event_block(rt_event *e, int64_t target) {
    lock(&e->mu);
    while (e->reached < target) pthread_cond_wait(&e->cv, &e->mu);
    unlock(&e->mu);
}

bool rt_event_query(rt_event *e) {
    lock(&e->mu);
    bool ok = e->reached >= e->recorded;
    unlock(&e->mu);
    return ok;
}

static void *stream_main(void *arg) {
    rt_stream *s = arg;
    for (;;) {
        lock(&s->mu);
        while (s->count == 0) pthread_cond_wait(&s->cv, &s->mu);
        task t = s->q[s->head];
        s->head = (s->head + 1) % s->cap;
        s->count--;
        bool failed = s->failed;
        unlock(&s->mu);

        oc_err err = {{0}};
        int rc = OC_OK;
        switch (t.kind) {
        case TASK_FN:
            if (!failed) rc = t.fn(t.ctx, t.arg, &err);
            break;
        case TASK_RECORD: event_reach(t.ev, t.arg); break;
        case TASK_WAIT: event_block(t.ev, t.arg); break;
        case TASK_STOP: break;
        }
        lock(&s->mu);
        if (rc != OC_OK && !s->failed) {
            s->failed = true;
            s->err = err;
        }
        s->done++;
        pthread_cond_broadcast(&s->cv);
        unlock(&s->mu);
        if (t.kind == TASK_STOP) return NULL;
    }
}

rt_stream *rt_stream_new(const char *name) {
    rt_stream *s = oc_calloc(1, sizeof *s);
    s->name = oc_strdup(name);
    s->cap = 64;
    s->q = oc_malloc(s->cap * sizeof *s->q);
    OC_ASSERT(pthread_mutex_init(&s->mu, NULL) == 0);
    OC_ASSERT(pthread_cond_init(&s->cv, NULL) == 0);
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        fprintf(stderr, "outcore: cannot start the thread of stream '%s'\n", name);
        OC_ASSERT(false && "pthread_create failed");
    }
    return s;
}

static void push(rt_stream *s, task t) {
    lock(&s->mu);
    if (s->count == s->cap) { /* grow the ring, unrolling it */
        task *q = oc_malloc(2 * s->cap * sizeof *q);
        for (size_t i = 0; i < s->count; i++) q[i] = s->q[(s->head + i) % s->cap];
        oc_free(s->q);
        s->q = q;
        s->head = 0;
        s->cap *= 2;
    }
    s->q[(s->head + s->count) % s->cap] = t;
    s->count++;
    s->pushed++;
    pthread_cond_broadcast(&s->cv);
    unlock(&s->mu);
}

void rt_stream_push(rt_stream *s, rt_task_fn fn, void *ctx, int64_t arg) {
    OC_ASSERT(fn);
    push(s, (task){.kind = TASK_FN, .fn = fn, .ctx = ctx, .arg = arg});
}

void rt_stream_record(rt_stream *s, rt_event *e) {
    lock(&e->mu);
    int64_t target = ++e->recorded;
    unlock(&e->mu);
    push(s, (task){.kind = TASK_RECORD, .ev = e, .arg = target});
}

void rt_stream_wait(rt_stream *s, rt_event *e) {
    lock(&e->mu);
    int64_t target = e->recorded;
    unlock(&e->mu);
    if (target == 0) return; /* never recorded: nothing to wait for (CUDA semantics) */
    push(s, (task){.kind = TASK_WAIT, .ev = e, .arg = target});
}

int rt_stream_sync(rt_stream *s, oc_err *err) {
    lock(&s->mu);
    int64_t target = s->pushed;
    while (s->done < target) pthread_cond_wait(&s->cv, &s->mu);
    int rc = OC_OK;
    if (s->failed) {
        rc = oc_fail(err, "stream '%s': %s", s->name, s->err.msg);
        s->failed = false;
    }
    unlock(&s->mu);
    return rc;
}

void rt_stream_free(rt_stream *s) {
    if (!s) return;
    push(s, (task){.kind = TASK_STOP});
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    oc_free(s->q);
    oc_free(s->name);
    oc_free(s);
}
