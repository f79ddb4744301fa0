/* backend.h — the one door to a device: a vtable of memory, streams, events,
 * copies and kernels, made by name from the registry (backend.c). The cpu
 * backend (backend_cpu.c) runs the three streams on three threads with real
 * events; the cuda backend (cuda/) fills the same table with cudaMalloc,
 * cudaStream_t, cudaEvent_t and cuDNN/cuBLAS kernels. Callers (the executor,
 * outcore-run's main.c) use nothing else of a backend.
 *
 *   rt_backend_opts bo = {.deterministic = true};   // {0}: every default
 *   rt_backend *b;
 *   if (rt_backend_new("cpu", &bo, &b, &err)) { puts(err.msg); ... }
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
#include "train/train_graph.h"

typedef enum rt_stream_id {
    RT_STREAM_COMPUTE = 0,
    RT_STREAM_D2H,
    RT_STREAM_H2D,
    RT_STREAM__COUNT
} rt_stream_id;
const char *rt_stream_id_name(rt_stream_id s);

/* How a backend is made (outcore-run's flags); each backend reads what
 * applies to it. Zero-initialised: every default. */
typedef struct rt_backend_opts {
    bool deterministic;     /* cuda: deterministic cuDNN algorithms only, no BN statistics stash */
    bool verbose;           /* cuda: print every convolution algorithm choice */
    size_t workspace_limit; /* cuda: a convolution's workspace cap in bytes; 0: 8 GiB */
    /* cuda, TF32 as PyTorch's switches (default false: PyTorch's defaults) */
    bool no_tf32_conv; /* --tf32-conv off: fp32 convolutions without tensor cores
                          (torch.backends.cudnn.allow_tf32 = False) */
    bool tf32_matmul;  /* --tf32-matmul on: Gemm / MatMul on TF32 tensor cores
                          (torch.backends.cuda.matmul.allow_tf32 = True) */
    bool cuda_graph;   /* --cuda-graph on: the executor captures the step (cuBLAS gets a
                          workspace of its own, 32 MiB, so a capture allocates nothing) */
    bool conv_measure; /* --conv-algo measure: each convolution shape's algorithm chosen by
                          timing the heuristics' first few on its first run (cuda) */
    bool conv_graph;   /* --conv-api graph: convolutions through cuDNN's graph API, its
                          heuristics' engine configurations (PyTorch's path; cuda) */
    bool conv_auto;    /* --conv-api auto: each convolution shape's graph plans and legacy
                          algorithms timed on its first run, the fastest kept (cuda) */
} rt_backend_opts;

typedef struct rt_backend rt_backend;
struct rt_backend {
    const char *name;
    /* The device's own name (cudaDeviceProp.name: "NVIDIA H100 80GB HBM3"); "" on the
     * cpu. outcore-run's --layout auto finds the device preset it weighs by it. */
    char device_name[128];
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
    bool half;             /* runs float16/bfloat16 tensors (--precision bf16|fp16) */
    const char *half_note; /* how, when the user should know (printed once), or NULL */
    /* Scratch bytes node n's kernel uses when given a scratch of `limit` bytes
     * (SIZE_MAX: no plan limits it). A kernel that can trade speed for memory
     * (cuDNN's convolution algorithms) stays within limit and, run with
     * kernel_args.scratch_bytes == limit, makes the same choice; one with a
     * fixed need (cpu im2col) returns it even when it exceeds limit. */
    size_t (*scratch_bytes)(rt_backend *b, const ir_graph *g, const ir_node *n, size_t limit);
    void (*destroy)(rt_backend *b);
    /* Optional (NULL: the backend has none). */
    /* Times every node run from now on, keyed by node index in g. */
    int (*profile_start)(rt_backend *b, const ir_graph *g, oc_err *err);
    /* Writes the measured profile.json (planner/plan/profile.h format). */
    int (*profile_write)(rt_backend *b, const train_graph *tg, int64_t batch, const char *path,
                         oc_err *err);
    /* Device bytes in use now (context, handles, arena, workspaces); -1 unknown. */
    int64_t (*device_used)(rt_backend *b);
    /* Timestamps (optional, all three or none): stamp_reset makes n slots and
     * forgets earlier stamps; stamp enqueues on stream s "note the time in
     * slot i", taken when the stream reaches it (after the work enqueued before
     * it and the waits before it); after sync, stamp_read fills secs[0..n-1]
     * with each slot's time in seconds since slot 0's (negative when a stream
     * got there first; NAN: not stamped since the last read or reset) and
     * clears the slots. */
    int (*stamp_reset)(rt_backend *b, int n, oc_err *err);
    void (*stamp)(rt_backend *b, rt_stream_id s, int slot);
    int (*stamp_read)(rt_backend *b, double *secs, oc_err *err);
    /* Graphs (optional, all four or none): capture_begin makes every stream
     * record what is enqueued from now on instead of running it; capture_end
     * turns the record into a replayable step (OC_ERR with the reason when the
     * capture failed: nothing recorded ran, so the caller runs the work again
     * on the streams); replay enqueues the captured step once as training step
     * `step` (kernels that depend on the step read it from device memory);
     * capture_free drops it. One captured step per backend. */
    int (*capture_begin)(rt_backend *b, oc_err *err);
    int (*capture_end)(rt_backend *b, oc_err *err);
    void (*replay)(rt_backend *b, int64_t step);
    void (*capture_free)(rt_backend *b);
};

/* One entry of the registry. */
typedef struct rt_backend_kind {
    const char *name;
    /* Makes the backend; OC_ERR with one line when it is not built in or no
     * device is usable. opts is not kept. */
    int (*create)(const rt_backend_opts *opts, rt_backend **out, oc_err *err);
    /* True when it has a kernel for op kind op (op_list.h); needs no device. */
    bool (*supports)(int op);
    /* False when this binary was built without it (create then fails). */
    bool (*built)(void);
} rt_backend_kind;

/* The registered backends ("cpu", "cuda"), *n of them. */
const rt_backend_kind *rt_backend_kinds(int *n);
/* Backend by name with opts (NULL: defaults). OC_ERR naming the known
 * backends when name is not one of them. rt_backend_free releases it. */
int rt_backend_new(const char *name, const rt_backend_opts *opts, rt_backend **out, oc_err *err);
void rt_backend_free(rt_backend *b);

#endif
