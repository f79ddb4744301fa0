/* emu_runtime.c — the CUDA runtime emulator (see emu.h, include/cuda_runtime.h).
 *
 * Model:
 *   - device memory: posix_memalign(256) blocks in a table sorted by address
 *     (rwlock: lookups from several threads create no ordering between them);
 *     pinned host memory in a second table.
 *   - streams: a FIFO of items run in order by the stream's own thread; an
 *     item is a closure (kernel, copy, memset, event marker, event wait, host
 *     function). The stream's mutex is the only thing its thread shares with
 *     the host, so ThreadSanitizer sees exactly CUDA's edges: enqueue -> item,
 *     item -> next item, last item -> cudaStreamSynchronize.
 *   - events: `recorded` is bumped on the host by cudaEventRecord, the marker
 *     item sets `completed` (and the timestamp) when the stream reaches it;
 *     cudaStreamWaitEvent enqueues a wait for the generation recorded at the
 *     call. The event's mutex carries the cross-stream edge. Destroyed events
 *     are kept in a graveyard until every stream is drained (a marker or wait
 *     may still point at them), so destroying gives no ordering.
 *   - errors: a failing call returns its error and sets the calling thread's
 *     last error (cudaGetLastError reads and clears it); an asynchronous error
 *     (emu_async_error) is sticky, as a GPU fault is: every later sync and
 *     cudaGetLastError returns it.
 *   - host functions (cudaLaunchHostFunc) run on the stream's thread; a CUDA
 *     call from inside one is an error (cudaErrorNotPermitted), as in CUDA.
 *   - stream capture: a captured stream's items, event records and waits are
 *     appended to its graph instead of run (items as plain-data templates);
 *     cudaGraphLaunch re-issues them in the recorded order on the streams that
 *     made them, bracketed by events on the launch stream. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_runtime.h"

/* ---- errors ---- */

static _Thread_local cudaError_t tl_last_error;
static _Thread_local int tl_in_host_fn;
static pthread_mutex_t sticky_mu = PTHREAD_MUTEX_INITIALIZER;
static int sticky_error; /* guarded by sticky_mu */

static cudaError_t fail(cudaError_t e) {
    tl_last_error = e;
    return e;
}

static cudaError_t sticky_get(void) {
    pthread_mutex_lock(&sticky_mu);
    int e = sticky_error;
    pthread_mutex_unlock(&sticky_mu);
    return (cudaError_t)e;
}

void emu_async_error(int cuda_error, const char *what) {
    pthread_mutex_lock(&sticky_mu);
    int first = sticky_error == 0;
    if (first) sticky_error = cuda_error ? cuda_error : cudaErrorUnknown;
    pthread_mutex_unlock(&sticky_mu);
    if (first)
        fprintf(stderr, "emu: asynchronous error %s: %s\n",
                cudaGetErrorName((cudaError_t)cuda_error), what ? what : "");
}

/* A CUDA call from a host function (on a stream's thread) is not permitted. */
#define API_ENTER()                                                                                \
    do {                                                                                           \
        if (tl_in_host_fn) {                                                                       \
            emu_async_error(cudaErrorNotPermitted, __func__);                                      \
            return fail(cudaErrorNotPermitted);                                                    \
        }                                                                                          \
    } while (0)

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotPermitted: return "cudaErrorNotPermitted";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorUnknown: return "cudaErrorUnknown";
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotPermitted: return "operation not permitted";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureIsolation:
        return "dependency created on uncaptured work in another stream";
    case cudaErrorUnknown: return "unknown error";
    }
    return "unrecognized error code";
}

cudaError_t cudaGetLastError(void) {
    cudaError_t s = sticky_get();
    if (s) return s;
    cudaError_t e = tl_last_error;
    tl_last_error = cudaSuccess;
    return e;
}

/* ---- memory tables ---- */

typedef struct block {
    uintptr_t lo;
    size_t bytes;
} block;

typedef struct block_table {
    block *v;
    int n, cap;
} block_table;

static pthread_rwlock_t mem_lock = PTHREAD_RWLOCK_INITIALIZER;
static block_table dev_blocks, pinned_blocks; /* guarded by mem_lock */
static size_t dev_allocated;                  /* guarded by mem_lock */
static size_t dev_total_bytes;
static pthread_once_t dev_total_once = PTHREAD_ONCE_INIT;

static void dev_total_init(void) {
    size_t t = (size_t)80 << 30;
    const char *s = getenv("EMU_DEVICE_BYTES");
    if (s && *s) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (!*end && v) t = (size_t)v;
    }
    dev_total_bytes = t;
}

static size_t dev_total(void) {
    pthread_once(&dev_total_once, dev_total_init);
    return dev_total_bytes;
}

/* Index of the block containing address a, or -1. Caller holds mem_lock. */
static int table_find(const block_table *t, uintptr_t a) {
    int lo = 0, hi = t->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a < t->v[mid].lo) hi = mid - 1;
        else if (a >= t->v[mid].lo + (t->v[mid].bytes ? t->v[mid].bytes : 1)) lo = mid + 1;
        else return mid;
    }
    return -1;
}

/* First block with lo >= a. Caller holds mem_lock. */
static int table_lower(const block_table *t, uintptr_t a) {
    int lo = 0, hi = t->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t->v[mid].lo < a) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int table_add(block_table *t, uintptr_t lo, size_t bytes) {
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        block *v = realloc(t->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        t->v = v;
        t->cap = cap;
    }
    int at = table_lower(t, lo);
    memmove(t->v + at + 1, t->v + at, (size_t)(t->n - at) * sizeof *t->v);
    t->v[at] = (block){lo, bytes};
    t->n++;
    return 0;
}

/* Removes the block starting exactly at lo; its size in *bytes. -1 if none. */
static int table_remove(block_table *t, uintptr_t lo, size_t *bytes) {
    int at = table_lower(t, lo);
    if (at >= t->n || t->v[at].lo != lo) return -1;
    *bytes = t->v[at].bytes;
    memmove(t->v + at, t->v + at + 1, (size_t)(t->n - at - 1) * sizeof *t->v);
    t->n--;
    if (t->n == 0) {
        free(t->v);
        *t = (block_table){0};
    }
    return 0;
}

typedef enum mem_kind { MEM_HOST = 0, MEM_PINNED, MEM_DEVICE, MEM_BAD } mem_kind;

/* Where [p, p + bytes) lies: inside one device block, inside one pinned block,
 * ordinary host memory, or MEM_BAD (straddles a block's end or overlaps one). */
static mem_kind classify(const void *p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    if (!p) return MEM_BAD;
    if (bytes == 0) bytes = 1;
    if (a + bytes < a) return MEM_BAD;
    mem_kind k = MEM_HOST;
    pthread_rwlock_rdlock(&mem_lock);
    const block_table *ts[2] = {&dev_blocks, &pinned_blocks};
    for (int i = 0; i < 2 && k == MEM_HOST; i++) {
        int b = table_find(ts[i], a);
        if (b >= 0) {
            k = a + bytes <= ts[i]->v[b].lo + ts[i]->v[b].bytes ? (i ? MEM_PINNED : MEM_DEVICE)
                                                                : MEM_BAD;
        } else {
            int nx = table_lower(ts[i], a);
            if (nx < ts[i]->n && ts[i]->v[nx].lo < a + bytes) k = MEM_BAD;
        }
    }
    pthread_rwlock_unlock(&mem_lock);
    return k;
}

bool emu_is_device_range(const void *p, size_t bytes) { return classify(p, bytes) == MEM_DEVICE; }

/* ---- streams ---- */

typedef struct item {
    void (*fn)(void *ctx);
    void *ctx;
    struct item *next;
} item;

struct emu_stream {
    struct emu_graph *cap; /* the capture this stream records into, or NULL (host side) */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* work arrived / stop */
    pthread_cond_t done_cv; /* an item finished */
    item *head, *tail;
    uint64_t enqueued, done;
    int stop;
    struct emu_stream *next_all;
};

/* Every live stream (host-side bookkeeping: only API calls take this lock). */
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_stream *streams_all;

static void *stream_main(void *p) {
    struct emu_stream *s = p;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
        item *it = s->head;
        if (!it) break;
        s->head = it->next;
        if (!s->head) s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        it->fn(it->ctx);
        free(it);
        pthread_mutex_lock(&s->mu);
        s->done++;
        pthread_cond_broadcast(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void stream_drain(struct emu_stream *s) {
    pthread_mutex_lock(&s->mu);
    uint64_t target = s->enqueued;
    while (s->done < target) pthread_cond_wait(&s->done_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static void graveyard_flush(void);

/* Drains every stream (the legacy default stream's implicit synchronisation). */
static void drain_all(void) {
    pthread_mutex_lock(&streams_mu);
    for (struct emu_stream *s = streams_all; s; s = s->next_all) stream_drain(s);
    pthread_mutex_unlock(&streams_mu);
    graveyard_flush();
}

static void oom(void) {
    fputs("emu: out of host memory\n", stderr);
    abort();
}

static bool capture_item(struct emu_stream *s, void (*fn)(void *), void *ctx, size_t size);
static cudaError_t capture_invalidate(struct emu_graph *g, cudaError_t why);
static int n_captures;

void emu_stream_enqueue(cudaStream_t s, void (*fn)(void *ctx), void *ctx, size_t size) {
    if (s && s->cap && capture_item(s, fn, ctx, size)) return;
    if (!s) {
        drain_all();
        fn(ctx);
        return;
    }
    item *it = malloc(sizeof *it);
    if (!it) oom();
    *it = (item){fn, ctx, NULL};
    pthread_mutex_lock(&s->mu);
    if (s->tail) s->tail->next = it;
    else s->head = it;
    s->tail = it;
    s->enqueued++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *ps, unsigned int flags) {
    API_ENTER();
    if (!ps || flags > cudaStreamNonBlocking) return fail(cudaErrorInvalidValue);
    struct emu_stream *s = calloc(1, sizeof *s);
    if (!s) return fail(cudaErrorMemoryAllocation);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    if (pthread_create(&s->th, NULL, stream_main, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        pthread_cond_destroy(&s->done_cv);
        free(s);
        return fail(cudaErrorMemoryAllocation);
    }
    pthread_mutex_lock(&streams_mu);
    s->next_all = streams_all;
    streams_all = s;
    pthread_mutex_unlock(&streams_mu);
    *ps = s;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    API_ENTER();
    if (!s) return fail(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&streams_mu);
    struct emu_stream **pp = &streams_all;
    while (*pp && *pp != s) pp = &(*pp)->next_all;
    bool found = *pp != NULL;
    if (found) {
        *pp = s->next_all;
    }
    pthread_mutex_unlock(&streams_mu);
    if (!found) return fail(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL); /* the thread runs what is queued first */
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->done_cv);
    free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    API_ENTER();
    if (s && s->cap) return fail(capture_invalidate(s->cap, cudaErrorStreamCaptureUnsupported));
    if (!s && n_captures) return fail(cudaErrorStreamCaptureUnsupported);
    if (!s) drain_all();
    else stream_drain(s);
    cudaError_t e = sticky_get();
    return e ? fail(e) : cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
    API_ENTER();
    if (n_captures) return fail(cudaErrorStreamCaptureUnsupported);
    drain_all();
    cudaError_t e = sticky_get();
    return e ? fail(e) : cudaSuccess;
}

/* ---- events ---- */

#define EVENT_MAGIC 0x45564e54u

struct emu_event {
    unsigned magic;
    unsigned flags;
    struct emu_graph *cap; /* recorded in this capture (host side), or NULL */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t recorded;  /* host: generations recorded so far */
    uint64_t completed; /* latest generation whose marker ran */
    struct timespec ts; /* when `completed` was reached */
    struct emu_event *next_dead;
};

static pthread_mutex_t grave_mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_event *graveyard;

/* Frees destroyed events; only called when every stream is drained. */
static void graveyard_flush(void) {
    pthread_mutex_lock(&grave_mu);
    struct emu_event *e = graveyard;
    graveyard = NULL;
    pthread_mutex_unlock(&grave_mu);
    while (e) {
        struct emu_event *nx = e->next_dead;
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        free(e);
        e = nx;
    }
}

static bool event_ok(cudaEvent_t e) { return e && e->magic == EVENT_MAGIC; }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned int flags) {
    API_ENTER();
    if (!pe || (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming)))
        return fail(cudaErrorInvalidValue);
    struct emu_event *e = calloc(1, sizeof *e);
    if (!e) return fail(cudaErrorMemoryAllocation);
    e->magic = EVENT_MAGIC;
    e->flags = flags;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    *pe = e;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *pe) {
    return cudaEventCreateWithFlags(pe, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    API_ENTER();
    if (!event_ok(e)) return fail(cudaErrorInvalidResourceHandle);
    e->magic = 0;
    pthread_mutex_lock(&grave_mu);
    e->next_dead = graveyard;
    graveyard = e;
    pthread_mutex_unlock(&grave_mu);
    return cudaSuccess;
}

typedef struct ev_gen {
    struct emu_event *e;
    uint64_t gen;
} ev_gen;

static void marker_complete(struct emu_event *e, uint64_t gen) {
    pthread_mutex_lock(&e->mu);
    if (gen > e->completed) {
        e->completed = gen;
        clock_gettime(CLOCK_MONOTONIC, &e->ts);
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void marker_run(void *p) {
    ev_gen *m = p;
    marker_complete(m->e, m->gen);
    free(m);
}

static void event_wait_gen(struct emu_event *e, uint64_t gen) {
    pthread_mutex_lock(&e->mu);
    while (e->completed < gen) pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

static void wait_run(void *p) {
    ev_gen *w = p;
    event_wait_gen(w->e, w->gen);
    free(w);
}

static bool capture_record(struct emu_event *e, struct emu_stream *s);
static cudaError_t capture_wait(struct emu_stream *s, struct emu_event *e, bool *done);

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    API_ENTER();
    if (!event_ok(e)) return fail(cudaErrorInvalidResourceHandle);
    if (s && s->cap && capture_record(e, s)) return cudaSuccess;
    pthread_mutex_lock(&e->mu);
    uint64_t gen = ++e->recorded;
    pthread_mutex_unlock(&e->mu);
    if (!s) {
        drain_all();
        marker_complete(e, gen);
        return cudaSuccess;
    }
    ev_gen *m = malloc(sizeof *m);
    if (!m) oom();
    *m = (ev_gen){e, gen};
    emu_stream_enqueue(s, marker_run, m, sizeof *m);
    return cudaSuccess;
}

/* The generation recorded so far (host-side counter; only host threads
 * write it, under e->mu with the marker's completion). */
static uint64_t event_recorded(struct emu_event *e) {
    pthread_mutex_lock(&e->mu);
    uint64_t g = e->recorded;
    pthread_mutex_unlock(&e->mu);
    return g;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
    API_ENTER();
    if (!event_ok(e)) return fail(cudaErrorInvalidResourceHandle);
    if (flags) return fail(cudaErrorInvalidValue);
    bool captured = false;
    cudaError_t ce = capture_wait(s, e, &captured);
    if (ce) return fail(ce);
    if (captured) return cudaSuccess;
    uint64_t gen = event_recorded(e);
    if (gen == 0) return cudaSuccess; /* never recorded: no-op, as in CUDA */
    if (!s) {
        event_wait_gen(e, gen);
        return cudaSuccess;
    }
    ev_gen *w = malloc(sizeof *w);
    if (!w) oom();
    *w = (ev_gen){e, gen};
    emu_stream_enqueue(s, wait_run, w, sizeof *w);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    API_ENTER();
    if (!event_ok(e)) return fail(cudaErrorInvalidResourceHandle);
    uint64_t gen = event_recorded(e);
    if (gen) event_wait_gen(e, gen);
    cudaError_t st = sticky_get();
    return st ? fail(st) : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    API_ENTER();
    if (!ms) return fail(cudaErrorInvalidValue);
    if (!event_ok(a) || !event_ok(b)) return fail(cudaErrorInvalidResourceHandle);
    if ((a->flags | b->flags) & cudaEventDisableTiming) return fail(cudaErrorInvalidResourceHandle);
    struct timespec t[2];
    uint64_t rec[2], done[2];
    struct emu_event *ev[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&ev[i]->mu);
        rec[i] = ev[i]->recorded;
        done[i] = ev[i]->completed;
        t[i] = ev[i]->ts;
        pthread_mutex_unlock(&ev[i]->mu);
    }
    if (!rec[0] || !rec[1]) return fail(cudaErrorInvalidResourceHandle);
    if (done[0] < rec[0] || done[1] < rec[1]) return fail(cudaErrorNotReady);
    double d =
        (double)(t[1].tv_sec - t[0].tv_sec) * 1e3 + (double)(t[1].tv_nsec - t[0].tv_nsec) * 1e-6;
    *ms = (float)d;
    return cudaSuccess;
}

/* ---- memory ---- */

cudaError_t cudaMalloc(void **p, size_t size) {
    API_ENTER();
    if (!p) return fail(cudaErrorInvalidValue);
    *p = NULL;
    if (size == 0) return cudaSuccess; /* CUDA: NULL, success */
    pthread_rwlock_wrlock(&mem_lock);
    size_t total = dev_total();
    if (size > total - dev_allocated) {
        pthread_rwlock_unlock(&mem_lock);
        return fail(cudaErrorMemoryAllocation);
    }
    void *q = NULL;
    if (posix_memalign(&q, 256, size) != 0 || table_add(&dev_blocks, (uintptr_t)q, size)) {
        free(q);
        pthread_rwlock_unlock(&mem_lock);
        return fail(cudaErrorMemoryAllocation);
    }
    dev_allocated += size;
    pthread_rwlock_unlock(&mem_lock);
    *p = q;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    API_ENTER();
    if (!p) return cudaSuccess;
    drain_all(); /* cudaFree synchronises the device */
    size_t bytes = 0;
    pthread_rwlock_wrlock(&mem_lock);
    int rc = table_remove(&dev_blocks, (uintptr_t)p, &bytes);
    if (rc == 0) dev_allocated -= bytes;
    pthread_rwlock_unlock(&mem_lock);
    if (rc) return fail(cudaErrorInvalidDevicePointer);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags) {
    API_ENTER();
    if (!p || (flags & ~(unsigned)0x0f)) return fail(cudaErrorInvalidValue);
    *p = NULL;
    void *q = NULL;
    if (posix_memalign(&q, 4096, size ? size : 1) != 0) return fail(cudaErrorMemoryAllocation);
    pthread_rwlock_wrlock(&mem_lock);
    int rc = table_add(&pinned_blocks, (uintptr_t)q, size ? size : 1);
    pthread_rwlock_unlock(&mem_lock);
    if (rc) {
        free(q);
        return fail(cudaErrorMemoryAllocation);
    }
    *p = q;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
    API_ENTER();
    if (!p) return cudaSuccess;
    drain_all(); /* cudaFreeHost synchronises the device */
    size_t bytes = 0;
    pthread_rwlock_wrlock(&mem_lock);
    int rc = table_remove(&pinned_blocks, (uintptr_t)p, &bytes);
    pthread_rwlock_unlock(&mem_lock);
    if (rc) return fail(cudaErrorInvalidValue);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *fr, size_t *total) {
    API_ENTER();
    if (!fr || !total) return fail(cudaErrorInvalidValue);
    pthread_rwlock_rdlock(&mem_lock);
    *total = dev_total();
    *fr = *total - dev_allocated;
    pthread_rwlock_unlock(&mem_lock);
    return cudaSuccess;
}

/* ---- copies ---- */

typedef struct copy_job {
    char *dst;
    const char *src;
    size_t width, height, dpitch, spitch;
    void *staging; /* owned: the pageable source read at the call */
} copy_job;

static void copy_run(void *p) {
    copy_job *j = p;
    for (size_t r = 0; r < j->height; r++)
        memcpy(j->dst + r * j->dpitch, j->src + r * j->spitch, j->width);
    free(j->staging);
    free(j);
}

/* Checks the kind against the pointers (cudaErrorInvalidValue on a mismatch or
 * on a range not inside one block) and enqueues the copy. */
static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                           size_t height, enum cudaMemcpyKind kind, cudaStream_t s) {
    if (width == 0 || height == 0) return cudaSuccess;
    if (!dst || !src || dpitch < width || spitch < width) return fail(cudaErrorInvalidValue);
    if ((unsigned)kind > cudaMemcpyDefault) return fail(cudaErrorInvalidMemcpyDirection);
    size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
    mem_kind dk = classify(dst, dspan), sk = classify(src, sspan);
    if (dk == MEM_BAD || sk == MEM_BAD) return fail(cudaErrorInvalidValue);
    bool dd = dk == MEM_DEVICE, sd = sk == MEM_DEVICE;
    bool ok = kind == cudaMemcpyDefault || (kind == cudaMemcpyHostToHost && !dd && !sd) ||
              (kind == cudaMemcpyHostToDevice && dd && !sd) ||
              (kind == cudaMemcpyDeviceToHost && !dd && sd) ||
              (kind == cudaMemcpyDeviceToDevice && dd && sd);
    if (!ok) return fail(cudaErrorInvalidValue);
    copy_job *j = malloc(sizeof *j);
    if (!j) oom();
    *j = (copy_job){dst, src, width, height, dpitch, spitch, NULL};
    if (sk == MEM_HOST && dd) { /* pageable source: staged now, as the driver does */
        j->staging = malloc(width * height);
        if (!j->staging) oom();
        for (size_t r = 0; r < height; r++)
            memcpy((char *)j->staging + r * width, (const char *)src + r * spitch, width);
        j->src = j->staging;
        j->spitch = width;
    }
    if (s && s->cap && j->staging) { /* a pageable copy cannot be replayed */
        free(j->staging), free(j);
        return fail(capture_invalidate(s->cap, cudaErrorStreamCaptureUnsupported));
    }
    emu_stream_enqueue(s, copy_run, j, sizeof *j);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t s) {
    API_ENTER();
    return copy_2d(dst, count, src, count, count, 1, kind, s);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t s) {
    API_ENTER();
    return copy_2d(dst, dpitch, src, spitch, width, height, kind, s);
}

typedef struct set_job {
    void *dst;
    int value;
    size_t n;
} set_job;

static void set_run(void *p) {
    set_job *j = p;
    memset(j->dst, j->value, j->n);
    free(j);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t count, cudaStream_t s) {
    API_ENTER();
    if (count == 0) return cudaSuccess;
    if (classify(dst, count) != MEM_DEVICE) return fail(cudaErrorInvalidValue);
    set_job *j = malloc(sizeof *j);
    if (!j) oom();
    *j = (set_job){dst, value, count};
    emu_stream_enqueue(s, set_run, j, sizeof *j);
    return cudaSuccess;
}

/* ---- host functions ---- */

typedef struct host_job {
    cudaHostFn_t fn;
    void *data;
} host_job;

static void host_run(void *p) {
    host_job *j = p;
    tl_in_host_fn = 1;
    j->fn(j->data);
    tl_in_host_fn = 0;
    free(j);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data) {
    API_ENTER();
    if (!fn) return fail(cudaErrorInvalidValue);
    host_job *j = malloc(sizeof *j);
    if (!j) oom();
    *j = (host_job){fn, data};
    emu_stream_enqueue(s, host_run, j, sizeof *j);
    return cudaSuccess;
}

/* ---- stream capture (CUDA graphs) ---- */

#define GRAPH_MAGIC 0x47524150u
#define EXEC_MAGIC 0x47455845u

typedef enum gop_kind { GOP_WORK, GOP_RECORD, GOP_WAIT } gop_kind;

typedef struct gop {
    gop_kind k;
    struct emu_stream *s;
    struct emu_event *e; /* RECORD, WAIT */
    void (*fn)(void *);  /* WORK */
    void *ctx;           /* WORK: the item's bytes, a template never run */
    size_t size;
} gop;

struct emu_graph {
    unsigned magic;
    struct emu_stream *origin;
    gop *ops;
    int n, cap;
    cudaError_t invalid; /* the first error that invalidated the capture, or 0 */
};

struct emu_graph_exec {
    unsigned magic;
    struct emu_stream *origin;
    gop *ops;
    int n;
    struct emu_stream **others; /* the streams besides the origin the ops use */
    int n_others;
    struct emu_event *start, **ends; /* a launch: after the launch stream, before its next work */
};

/* n_captures (declared above): captures in progress (host side; the backend
 * captures from one thread). */

static cudaError_t capture_invalidate(struct emu_graph *g, cudaError_t why) {
    if (!g->invalid) g->invalid = why;
    return why;
}

static void gop_push(struct emu_graph *g, gop o) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->ops = realloc(g->ops, (size_t)g->cap * sizeof *g->ops);
        if (!g->ops) oom();
    }
    g->ops[g->n++] = o;
}

static void *memdup_or_die(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (!q) oom();
    memcpy(q, p, n);
    return q;
}

/* EMU_CAPTURE_FAIL_AT=N (tests): the N-th item captured invalidates its capture, and
 * the enqueuing call's cudaGetLastError says so (as a launch CUDA refuses in a capture). */
static long capture_fail_at(void) {
    static long at = -1;
    if (at < 0) {
        const char *e = getenv("EMU_CAPTURE_FAIL_AT");
        at = e ? atol(e) : 0;
    }
    return at;
}

static bool capture_item(struct emu_stream *s, void (*fn)(void *), void *ctx, size_t size) {
    static long n_captured;
    gop_push(s->cap, (gop){GOP_WORK, s, NULL, fn, ctx, size});
    if (++n_captured == capture_fail_at())
        tl_last_error = capture_invalidate(s->cap, cudaErrorStreamCaptureInvalidated);
    return true;
}

static bool capture_record(struct emu_event *e, struct emu_stream *s) {
    gop_push(s->cap, (gop){GOP_RECORD, s, e, NULL, NULL, 0});
    e->cap = s->cap;
    return true;
}

/* s waits on e inside a capture: e recorded in it (s joins the capture), or s
 * captured and e from outside it (an isolation error, as in CUDA). */
static cudaError_t capture_wait(struct emu_stream *s, struct emu_event *e, bool *done) {
    *done = false;
    struct emu_graph *g = e->cap;
    if (s && s->cap && g != s->cap)
        return capture_invalidate(s->cap, cudaErrorStreamCaptureIsolation);
    if (!g) return cudaSuccess;
    if (!s) return capture_invalidate(g, cudaErrorStreamCaptureIsolation);
    s->cap = g;
    gop_push(g, (gop){GOP_WAIT, s, e, NULL, NULL, 0});
    *done = true;
    return cudaSuccess;
}

static void gops_free(gop *ops, int n) {
    for (int i = 0; i < n; i++)
        if (ops[i].k == GOP_WORK) free(ops[i].ctx);
    free(ops);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
    API_ENTER();
    if (!s || (unsigned)mode > cudaStreamCaptureModeRelaxed) return fail(cudaErrorInvalidValue);
    if (s->cap) return fail(cudaErrorStreamCaptureUnsupported);
    struct emu_graph *g = calloc(1, sizeof *g);
    if (!g) oom();
    g->magic = GRAPH_MAGIC;
    g->origin = s;
    s->cap = g;
    n_captures++;
    return cudaSuccess;
}

/* Every stream besides the origin that joined must end with a record the
 * origin waits on later. */
static bool capture_joined(const struct emu_graph *g) {
    for (int i = 0; i < g->n; i++) {
        struct emu_stream *x = g->ops[i].s;
        if (x == g->origin) continue;
        int last = -1;
        for (int j = 0; j < g->n; j++)
            if (g->ops[j].s == x) last = j;
        if (last != i) continue; /* judged at its last op */
        if (g->ops[i].k != GOP_RECORD) return false;
        bool waited = false;
        for (int j = i + 1; j < g->n && !waited; j++)
            waited =
                g->ops[j].k == GOP_WAIT && g->ops[j].s == g->origin && g->ops[j].e == g->ops[i].e;
        if (!waited) return false;
    }
    return true;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
    API_ENTER();
    if (!s || !graph) return fail(cudaErrorInvalidValue);
    struct emu_graph *g = s->cap;
    *graph = NULL;
    if (!g || g->origin != s) return fail(cudaErrorStreamCaptureUnmatched);
    if (!g->invalid && !capture_joined(g)) capture_invalidate(g, cudaErrorStreamCaptureUnjoined);
    pthread_mutex_lock(&streams_mu);
    for (struct emu_stream *x = streams_all; x; x = x->next_all)
        if (x->cap == g) x->cap = NULL;
    pthread_mutex_unlock(&streams_mu);
    for (int i = 0; i < g->n; i++)
        if (g->ops[i].k == GOP_RECORD && event_ok(g->ops[i].e)) g->ops[i].e->cap = NULL;
    n_captures--;
    if (g->invalid) {
        cudaError_t why = g->invalid;
        gops_free(g->ops, g->n);
        free(g);
        return fail(why);
    }
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status) {
    API_ENTER();
    if (!status) return fail(cudaErrorInvalidValue);
    *status = !s || !s->cap     ? cudaStreamCaptureStatusNone
              : s->cap->invalid ? cudaStreamCaptureStatusInvalidated
                                : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags) {
    API_ENTER();
    if (!exec || !g || g->magic != GRAPH_MAGIC || flags) return fail(cudaErrorInvalidValue);
    struct emu_graph_exec *x = calloc(1, sizeof *x);
    if (!x) oom();
    x->magic = EXEC_MAGIC;
    x->origin = g->origin;
    x->n = g->n;
    x->ops = malloc((size_t)(g->n ? g->n : 1) * sizeof *x->ops);
    x->others = malloc((size_t)(g->n ? g->n : 1) * sizeof *x->others);
    if (!x->ops || !x->others) oom();
    for (int i = 0; i < g->n; i++) {
        x->ops[i] = g->ops[i];
        if (g->ops[i].k == GOP_WORK) x->ops[i].ctx = memdup_or_die(g->ops[i].ctx, g->ops[i].size);
        struct emu_stream *s = g->ops[i].s;
        bool seen = s == g->origin;
        for (int k = 0; k < x->n_others && !seen; k++) seen = x->others[k] == s;
        if (!seen) x->others[x->n_others++] = s;
    }
    x->ends = calloc((size_t)x->n_others + 1, sizeof *x->ends);
    if (!x->ends) oom();
    cudaEventCreateWithFlags(&x->start, cudaEventDisableTiming);
    for (int k = 0; k < x->n_others; k++)
        cudaEventCreateWithFlags(&x->ends[k], cudaEventDisableTiming);
    *exec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
    API_ENTER();
    if (!x || x->magic != EXEC_MAGIC || !s) return fail(cudaErrorInvalidValue);
    if (s->cap) return fail(capture_invalidate(s->cap, cudaErrorStreamCaptureUnsupported));
    cudaEventRecord(x->start, s);
    for (int k = 0; k < x->n_others; k++) cudaStreamWaitEvent(x->others[k], x->start, 0);
    for (int i = 0; i < x->n; i++) {
        const gop *o = &x->ops[i];
        struct emu_stream *on = o->s == x->origin ? s : o->s;
        switch (o->k) {
        case GOP_WORK:
            emu_stream_enqueue(on, o->fn, memdup_or_die(o->ctx, o->size), o->size);
            break;
        case GOP_RECORD: cudaEventRecord(o->e, on); break;
        case GOP_WAIT: cudaStreamWaitEvent(on, o->e, 0); break;
        }
    }
    for (int k = 0; k < x->n_others; k++) {
        cudaEventRecord(x->ends[k], x->others[k]);
        cudaStreamWaitEvent(s, x->ends[k], 0);
    }
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
    API_ENTER();
    if (!x || x->magic != EXEC_MAGIC) return fail(cudaErrorInvalidValue);
    x->magic = 0;
    cudaEventDestroy(x->start);
    for (int k = 0; k < x->n_others; k++) cudaEventDestroy(x->ends[k]);
    gops_free(x->ops, x->n);
    free(x->others), free(x->ends), free(x);
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    API_ENTER();
    if (!g || g->magic != GRAPH_MAGIC) return fail(cudaErrorInvalidValue);
    g->magic = 0;
    gops_free(g->ops, g->n);
    free(g);
    return cudaSuccess;
}

/* ---- device ---- */

static int device_count(void) {
    const char *s = getenv("EMU_DEVICE_COUNT"); /* 0: emulate a machine without a GPU */
    return s && *s ? atoi(s) : 1;
}

cudaError_t cudaGetDeviceCount(int *count) {
    API_ENTER();
    if (!count) return fail(cudaErrorInvalidValue);
    *count = device_count();
    return *count > 0 ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) {
    API_ENTER();
    if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    API_ENTER();
    if (!prop) return fail(cudaErrorInvalidValue);
    if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    /* EMU_DEVICE_NAME: another GPU's name (outcore-run picks device presets by it) */
    const char *name = getenv("EMU_DEVICE_NAME");
    snprintf(prop->name, sizeof prop->name, "%s", name && *name ? name : "outcore CUDA emulator");
    prop->totalGlobalMem = dev_total();
    prop->sharedMemPerBlock = 48 << 10;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 1;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    return cudaSuccess;
}
