/* executor.h — runs the training step's schedule on a backend (DESIGN §8).
 *
 * Two layers:
 *  1. The program: a list of ops, each on one stream (compute nodes, copies,
 *     host functions), with the byte regions each op reads and writes.
 *     rt_program_deps derives, per op, the ops on OTHER streams it must wait
 *     for: read-after-write, and the write-after-read rule "an op writing bytes
 *     waits until every earlier occupant of those bytes is dead": every earlier
 *     op on another stream that read or wrote an overlapping region (pending
 *     D2H copies included). Ops on one stream are ordered by the stream itself.
 *     rt_program_run enqueues the ops in order with an event after each op
 *     that some later op waits for.
 *  2. The executor: builds that program from a training graph (H2D copies of
 *     the input batch and labels, the nodes in schedule order, SwapOut/SwapIn
 *     nodes as D2H/H2D copies, a D2H copy of the loss), lays every device tensor
 *     out in ONE arena (arena.h) and runs steps.
 *
 *   rt_exec_opts o = {.backend = b, .capacity = 0, .seed = 42};
 *   rt_exec *x;
 *   if (rt_exec_new(tg, &o, &x, &err)) ...        // unsupported op, layout > capacity
 *   rt_exec_upload_initializers(x, &err);         // every initializer needs data (init.h)
 *   memcpy(rt_exec_host_input(x), images, n);      // pinned host batch
 *   rt_exec_step(x, step, &loss, &err);
 *   rt_exec_read(x, tensor, dst, &err);            // any device tensor still live at the end
 *   rt_exec_free(x);
 */
#ifndef OC_EXECUTOR_H
#define OC_EXECUTOR_H

#include "arena.h"
#include "backend.h"
#include "train/train_graph.h"

typedef enum rt_space { RT_SPACE_DEVICE = 0, RT_SPACE_HOST } rt_space;

typedef struct rt_region {
    rt_space space;
    int64_t off, bytes;
} rt_region;

typedef enum rt_op_kind { RT_OP_NODE = 0, RT_OP_COPY, RT_OP_HOST_FN } rt_op_kind;

typedef struct rt_op {
    rt_op_kind kind;
    rt_stream_id stream;
    const rt_region *reads, *writes; /* owned by whoever built the program */
    int n_reads, n_writes;
    const kernel_args *args; /* RT_OP_NODE */
    void *dst;               /* RT_OP_COPY */
    const void *src;
    size_t bytes;
    rt_task_fn fn; /* RT_OP_HOST_FN */
    void *ctx;
    /* Filled by rt_program_deps: ops (earlier, on other streams) to wait for. */
    int waits[RT_STREAM__COUNT]; /* -1: none, per stream */
} rt_op;

/* Fills ops[j].waits; returns the number of cross-stream dependencies. */
int rt_program_deps(rt_op *ops, int n);

/* Enqueues the program on the backend (events from the pool, created on first
 * use; *events has n slots, NULL-initialised, owned by the caller: free with
 * rt_program_events_free). Does not sync. */
void rt_program_run(rt_backend *b, const rt_op *ops, int n, void **events, int64_t step,
                    bool stamped);
void rt_program_events_free(rt_backend *b, void **events, int n);

typedef struct rt_exec_opts {
    rt_backend *backend;
    int64_t capacity; /* arena bytes; 0: exactly what the layout needs */
    uint64_t seed;    /* Dropout */
    const bool *keep; /* per tensor or NULL: keep live to the end of the step (dumps) */
    /* A plan's static layout (plan_file.h): per tensor arena offset (-1 none),
     * and the planned arena size. NULL: the executor lays out itself. With a
     * plan, capacity is the budget the planned arena must fit, the arena is
     * exactly planned_bytes, and each node's kernel works in its planned
     * workspace region (outcore_workspace attributes, layout.h); a kernel that
     * needs more than its region gets a separate buffer, reported on stderr. */
    const int64_t *offsets;
    int64_t planned_bytes;
    /* Capture the step as a graph on its second run and replay it from then on
     * (backends with capture_*; rt_exec_step): the same kernels, copies and
     * events, enqueued in one call; kernels that depend on the step (Dropout's
     * draws, AdamW's bias correction) read it from device memory. A step whose
     * capture fails keeps running on the streams, said once on stderr. */
    bool graph;
} rt_exec_opts;

typedef struct rt_exec rt_exec;

/* Checks every node has a kernel on the backend, plans the layout, allocates
 * the arena and host buffers. OC_ERR (naming node or tensor) before any work. */
int rt_exec_new(const train_graph *tg, const rt_exec_opts *o, rt_exec **out, oc_err *err);
void rt_exec_free(rt_exec *x);

/* Copies every initializer's data into the arena. OC_ERR naming a tensor without data. */
int rt_exec_upload_initializers(rt_exec *x, oc_err *err);
/* Host (pinned) buffers of the graph inputs (g->inputs order: the data, the host inputs
 * if any, the labels; train_data_input says which is the data). */
void *rt_exec_host_input(rt_exec *x, int i);
/* The host buffers of the data inputs (train_data_inputs' order: token ids, then a mask, ..)
 * into bufs, cap at most; returns how many data inputs there are. */
int rt_exec_data_buffers(rt_exec *x, void **bufs, int cap);
/* One training step; *loss is the loss tensor's value. A model with host inputs
 * (ir/host_inputs.h: position ids from token ids) has them computed first, on the host,
 * from the batch in the host buffers; a shape the step was not planned with fails. */
int rt_exec_step(rt_exec *x, int64_t step, float *loss, oc_err *err);

/* Tracing: after rt_exec_trace_on, every step times each of its ops with the
 * backend's stamps (backend.h; OC_ERR when the backend has none). The ops are
 * the program's: the H2D copies of the graph inputs, then one per node in
 * order (SwapOut/SwapIn nodes are copies on their streams), then the D2H copy
 * of the loss. rt_exec_op describes op j (0 <= j < rt_exec_n_ops) with its
 * times in the last step: seconds from the step's start to when the op's
 * stream reached it (its waits met, the op before it on its stream done) and
 * to when it finished; -1 without tracing. */
int rt_exec_trace_on(rt_exec *x, oc_err *err);
int rt_exec_n_ops(const rt_exec *x);
typedef struct rt_exec_op_info {
    rt_stream_id stream;
    int node;      /* node index, or -1 (an input or loss copy) */
    int tensor;    /* the input / loss copied, or -1 (a node) */
    int64_t bytes; /* copies: bytes moved */
    double start, end;
} rt_exec_op_info;
rt_exec_op_info rt_exec_op(const rt_exec *x, int j);
/* Device tensor -> host / host -> device, synchronously (between steps). A
 * transient tensor reads what the last step left, if it was kept (opts.keep). */
int rt_exec_read(rt_exec *x, int tensor, void *dst, oc_err *err);

int64_t rt_exec_high_water(const rt_exec *x);
int64_t rt_exec_capacity(const rt_exec *x);

#endif
