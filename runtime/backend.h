/* backend.h — what the executor needs from a device: memory, streams, events,
 * copies and kernels. The cpu backend (backend_cpu.c) runs the three streams on
 * three threads with real events; a cuda backend fills the same table with
 * cudaMalloc, cudaStream_t, cudaEvent_t and cuDNN/cuBLAS kernels.
 *
 *   rt_backend *b;
 *   if (rt_backend_new("cpu", &b, &err)) { puts(err.msg); ... }
 *   void *arena; b->dev_alloc(b, bytes, &arena, &err);
 *   b->copy(b, RT_STREAM_H2D, dev, host, n);        // asynchronous
 *   void *ev = b->event_new(b);
 *   b->record(b, RT_STREAM_H2D, ev);
 *   b->wait(b, RT_STREAM_COMPUTE, ev);              // compute waits for the copy
 *   b->run_node(b, RT_STREAM_COMPUTE, &args, step); // args live until sync
 *   if (b->sync(b, &err)) ...                       // all streams drained; first error
 *   b->event_free(b, ev); b->dev_free(b, arena); rt_backend_free(b);
 *
 * Contract: enqueueing never fails (errors of asynchronous work surface at
 * sync, naming the stream and the node); a stream runs its work in order;
 * different streams are ordered only through events. */
#ifndef OC_BACKEND_H
#define OC_BACKEND_H

#include "kernels.h"
#include "streams.h"

typedef enum rt_stream_id {
    RT_STREAM_COMPUTE = 0,
    RT_STREAM_D2H,
    RT_STREAM_H2D,
    RT_STREAM__COUNT
} rt_stream_id;
const char *rt_stream_id_name(rt_stream_id s);

typedef struct rt_backend rt_backend;
struct rt_backend {
    const char *name;
    void *impl;
    /* Device memory (one arena per run). OC_ERR when the device has not got it. */
    int (*dev_alloc)(rt_backend *b, size_t bytes, void **p, oc_err *err);
    void (*dev_free)(rt_backend *b, void *p);
    /* Page-locked host memory (swap buffers, input batches). */
    int (*host_alloc)(rt_backend *b, size_t bytes, void **p, oc_err *err);
    void (*host_free)(rt_backend *b, void *p);
    /* Asynchronous copy of bytes on stream s (host<->device or device<->device). */
    void (*copy)(rt_backend *b, rt_stream_id s, void *dst, const void *src, size_t bytes);
    /* Asynchronous kernel of a->n on stream s, at training step `step`; *a and
     * the pointers in it must stay valid until the stream has run it. */
    void (*run_node)(rt_backend *b, rt_stream_id s, const kernel_args *a, int64_t step);
    /* Asynchronous host function on stream s (cudaLaunchHostFunc; tests, hooks). */
    void (*host_fn)(rt_backend *b, rt_stream_id s, rt_task_fn fn, void *ctx, int64_t arg);
    void *(*event_new)(rt_backend *b);
    void (*event_free)(rt_backend *b, void *ev);
    void (*record)(rt_backend *b, rt_stream_id s, void *ev);
    /* Later work on s waits for the most recent record of ev. */
    void (*wait)(rt_backend *b, rt_stream_id s, void *ev);
    /* Blocks until every stream is drained; the first asynchronous error. */
    int (*sync)(rt_backend *b, oc_err *err);
    bool (*supported)(rt_backend *b, int op); /* op_kind (ir/ops/op_list.h) */
    /* Scratch bytes node n's kernel uses when given a scratch of `limit` bytes
     * (SIZE_MAX: no plan limits it). A kernel that can trade speed for memory
     * (cuDNN's convolution algorithms) stays within limit and, run with
     * kernel_args.scratch_bytes == limit, makes the same choice; one with a
     * fixed need (cpu im2col) returns it even when it exceeds limit. */
    size_t (*scratch_bytes)(rt_backend *b, const ir_graph *g, const ir_node *n, size_t limit);
    void (*destroy)(rt_backend *b);
};

/* Backend by name ("cpu"). OC_ERR naming the known backends otherwise. */
int rt_backend_new(const char *name, rt_backend **out, oc_err *err);
void rt_backend_free(rt_backend *b);

/* The cpu backend (backend_cpu.c). */
rt_backend *rt_backend_cpu_new(void);

#endif
