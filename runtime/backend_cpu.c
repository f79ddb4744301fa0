/* backend_cpu.c — the cpu backend: memory is host memory (64-byte aligned),
 * each of the three streams is a thread (streams.h), events are real, and
 * kernels are runtime/cpu's (kernels.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cpu.h"

typedef struct cpu_stamp_slot {
    struct timespec t;
    bool set;
} cpu_stamp_slot;

typedef struct cpu_impl {
    rt_stream *s[RT_STREAM__COUNT];
    cpu_stamp_slot *stamps; /* stamp_reset's slots; each written by one stream task */
    int n_stamps;
} cpu_impl;

static rt_stream *stream_of(rt_backend *b, rt_stream_id s) {
    OC_ASSERT(s >= 0 && s < RT_STREAM__COUNT);
    return ((cpu_impl *)b->impl)->s[s];
}

static int cpu_alloc(rt_backend *b, size_t bytes, void **p, oc_err *err) {
    (void)b;
    *p = NULL;
    size_t n = (bytes + 63) / 64 * 64;
    if (posix_memalign(p, 64, n ? n : 64) != 0 || !*p)
        return oc_fail(err, "cpu backend: cannot allocate %zu bytes", bytes);
    return OC_OK;
}

static void cpu_free(rt_backend *b, void *p) {
    (void)b;
    free(p);
}

typedef struct copy_task {
    void *dst;
    const void *src;
    size_t bytes;
} copy_task;

static int copy_run(void *ctx, int64_t arg, oc_err *err) {
    (void)arg;
    (void)err;
    copy_task *c = ctx;
    memcpy(c->dst, c->src, c->bytes);
    oc_free(c);
    return OC_OK;
}

static void cpu_copy(rt_backend *b, rt_stream_id s, void *dst, const void *src, size_t bytes) {
    copy_task *c = oc_malloc(sizeof *c);
    *c = (copy_task){dst, src, bytes};
    rt_stream_push(stream_of(b, s), copy_run, c, 0);
}

static int node_run(void *ctx, int64_t step, oc_err *err) {
    kernel_args a = *(const kernel_args *)ctx;
    a.step = step;
    if (cpu_kernel_run(&a, err) == OC_OK) return OC_OK;
    char named[512]; /* kernel_fail names the node already */
    snprintf(named, sizeof named, "node '%s' (%s): ", a.n->name, a.n->op_type);
    if (strncmp(err->msg, named, strlen(named)) == 0) return OC_ERR;
    return oc_fail_prefix(err, "node '%s' (%s)", a.n->name, a.n->op_type);
}

static void cpu_run_node(rt_backend *b, rt_stream_id s, const kernel_args *a, int64_t step) {
    rt_stream_push(stream_of(b, s), node_run, (void *)a, step);
}

static void cpu_host_fn(rt_backend *b, rt_stream_id s, rt_task_fn fn, void *ctx, int64_t arg) {
    rt_stream_push(stream_of(b, s), fn, ctx, arg);
}

static void *cpu_event_new(rt_backend *b) {
    (void)b;
    return rt_event_new();
}

static void cpu_event_free(rt_backend *b, void *ev) {
    (void)b;
    rt_event_free(ev);
}

static void cpu_record(rt_backend *b, rt_stream_id s, void *ev) {
    rt_stream_record(stream_of(b, s), ev);
}

static void cpu_wait(rt_backend *b, rt_stream_id s, void *ev) {
    rt_stream_wait(stream_of(b, s), ev);
}

static int cpu_sync(rt_backend *b, oc_err *err) {
    int rc = OC_OK;
    for (int s = 0; s < RT_STREAM__COUNT; s++) {
        oc_err e;
        if (rt_stream_sync(stream_of(b, (rt_stream_id)s), &e) && rc == OC_OK) {
            rc = OC_ERR;
            if (err) *err = e;
        }
    }
    return rc;
}

static int cpu_stamp_reset(rt_backend *b, int n, oc_err *err) {
    (void)err;
    cpu_impl *im = b->impl;
    oc_free(im->stamps);
    im->stamps = oc_calloc((size_t)n + 1, sizeof *im->stamps);
    im->n_stamps = n;
    return OC_OK;
}

static int stamp_run(void *ctx, int64_t arg, oc_err *err) {
    (void)err;
    cpu_stamp_slot *st = &((cpu_stamp_slot *)ctx)[arg];
    clock_gettime(CLOCK_MONOTONIC, &st->t);
    st->set = true;
    return OC_OK;
}

static void cpu_stamp(rt_backend *b, rt_stream_id s, int slot) {
    cpu_impl *im = b->impl;
    OC_ASSERT(slot >= 0 && slot < im->n_stamps);
    rt_stream_push(stream_of(b, s), stamp_run, im->stamps, slot);
}

static int cpu_stamp_read(rt_backend *b, double *secs, oc_err *err) {
    cpu_impl *im = b->impl;
    if (im->n_stamps == 0 || !im->stamps[0].set)
        return oc_fail(err, "cpu backend: stamp slot 0 was not stamped");
    struct timespec t0 = im->stamps[0].t;
    for (int i = 0; i < im->n_stamps; i++) {
        cpu_stamp_slot *st = &im->stamps[i];
        secs[i] = st->set ? (double)(st->t.tv_sec - t0.tv_sec) +
                                1e-9 * (double)(st->t.tv_nsec - t0.tv_nsec)
                          : NAN;
        st->set = false;
    }
    return OC_OK;
}

static bool cpu_supported(rt_backend *b, int op) {
    (void)b;
    return cpu_kernel_supported(op);
}

static size_t cpu_scratch(rt_backend *b, const ir_graph *g, const ir_node *n, size_t limit) {
    (void)limit; /* fixed needs */
    (void)b;
    return cpu_kernel_scratch_bytes(g, n);
}

static void cpu_destroy(rt_backend *b) {
    cpu_impl *im = b->impl;
    for (int s = 0; s < RT_STREAM__COUNT; s++) rt_stream_free(im->s[s]);
    oc_free(im->stamps);
    oc_free(im);
    oc_free(b);
}

int rt_backend_cpu_new(const rt_backend_opts *opts, rt_backend **out, oc_err *err) {
    (void)opts, (void)err;
    rt_backend *b = oc_calloc(1, sizeof *b);
    cpu_impl *im = oc_calloc(1, sizeof *im);
    for (int s = 0; s < RT_STREAM__COUNT; s++)
        im->s[s] = rt_stream_new(rt_stream_id_name((rt_stream_id)s));
    *b = (rt_backend){
        .name = "cpu",
        .impl = im,
        .dev_alloc = cpu_alloc,
        .dev_free = cpu_free,
        .host_alloc = cpu_alloc,
        .host_free = cpu_free,
        .copy = cpu_copy,
        .run_node = cpu_run_node,
        .host_fn = cpu_host_fn,
        .event_new = cpu_event_new,
        .event_free = cpu_event_free,
        .record = cpu_record,
        .wait = cpu_wait,
        .sync = cpu_sync,
        .supported = cpu_supported,
        .half = true, /* widened to float32, rounded when stored (cpu_kernels.c) */
        .scratch_bytes = cpu_scratch,
        .destroy = cpu_destroy,
        .stamp_reset = cpu_stamp_reset,
        .stamp = cpu_stamp,
        .stamp_read = cpu_stamp_read,
    };
    *out = b;
    return OC_OK;
}
