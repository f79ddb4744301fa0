/* simulator.h — the one timeline + memory simulator every strategy is scored
 * by (DESIGN §5): one GPU, three in-order streams (compute, D2H, H2D), live
 * bytes against a budget.
 *
 *   sim_context *ctx;
 *   if (sim_context_new(tg, prof, "profile.json", &ctx, &err)) ...  // once per graph+profile
 *   sim_options o = {.budget_bytes = 16LL << 30, .reserve_bytes = 0};
 *   sim_result r;
 *   for (...many candidate plans...)
 *       if (sim_run(ctx, plan, &o, &r, NULL, &err) == OC_OK && r.feasible) ... r.time_s ...
 *   sim_timeline *tl = sim_timeline_new();               // detailed output, only when asked
 *   sim_run(ctx, plan, &o, &r, tl, &err);                // fills tl->events, tl->samples
 *   sim_timeline_free(tl);
 *   sim_context_free(ctx);
 *
 * The context precomputes per-graph tables and owns every per-call buffer, so
 * sim_run allocates nothing when tl is NULL. A context is not thread-safe (one
 * per thread). The model:
 *  - Compute runs the schedule (tg->g's node order) in order, with recompute ops
 *    inserted (sim_plan.h). An op starts when compute is free, the swap-ins it
 *    reads have finished, and its outputs + workspace fit: live + need <= budget
 *    - reserve. Its inputs read for the last time and its workspace are freed at
 *    its end.
 *  - SwapOut(X) runs on D2H, in production order, after X's producer ends.
 *    SwapIn(X) runs on H2D in issue order; it may start once compute has
 *    finished every op before its issue point, X's SwapOut has finished, and X's
 *    bytes fit; it allocates |X| when it starts. While the compute head is
 *    waiting for memory, no SwapIn allocates (compute has priority).
 *  - Copy time = copy_latency + bytes / bandwidth. When the device is not
 *    duplex, D2H and H2D share one engine (SwapOut first when both can start).
 *  - When nothing runs and nothing can start, the plan deadlocks: infeasible,
 *    with a reason naming the node and tensor.
 * Memory starts at persistent tensors (parameters, state, optimizer state,
 * constants; in-place aliases count nothing) + graph inputs; with an all-keep
 * plan and no budget the peak equals train_liveness_peak (+ workspaces). */
#ifndef OC_SIMULATOR_H
#define OC_SIMULATOR_H

#include "plan/profile.h"
#include "sim/sim_plan.h"

typedef struct sim_context sim_context;

typedef struct sim_options {
    int64_t budget_bytes;  /* <= 0: unlimited */
    int64_t reserve_bytes; /* subtracted from the budget (runtime, fragmentation) */
} sim_options;

typedef enum sim_stream {
    SIM_STREAM_COMPUTE = 0,
    SIM_STREAM_D2H,
    SIM_STREAM_H2D,
    SIM_STREAM__COUNT
} sim_stream;
const char *sim_stream_name(sim_stream s);

typedef enum sim_event_kind {
    SIM_EVENT_NODE = 0,  /* index: node */
    SIM_EVENT_RECOMPUTE, /* index: node re-run */
    SIM_EVENT_SWAP_OUT,  /* index: tensor */
    SIM_EVENT_SWAP_IN,   /* index: tensor */
    SIM_EVENT_INPUT,     /* index: tensor, a graph input: the step's batch copied H2D */
} sim_event_kind;

typedef struct sim_event {
    sim_stream stream;
    sim_event_kind kind;
    int index;
    double start, end;
    int64_t bytes; /* allocated at start (compute: outputs + workspace), copied (swaps) */
} sim_event;

typedef struct sim_sample {
    double t;
    int64_t bytes; /* live bytes from time t on */
} sim_sample;

/* Detailed output of one run. */
typedef struct sim_timeline {
    sim_event *events;
    int n_events;
    size_t cap_events;
    sim_sample *samples;
    int n_samples;
    size_t cap_samples;
} sim_timeline;
sim_timeline *sim_timeline_new(void);
void sim_timeline_free(sim_timeline *tl);
/* Per node: the most live bytes while it ran (mem[n_nodes]; 0 where it did not). */
void sim_timeline_node_mem(const sim_timeline *tl, int n_nodes, int64_t *mem);

/* Result of one run. Arrays point into the context: valid until the next
 * sim_run or sim_context_free. Times in seconds; -1 where something did not run. */
typedef struct sim_result {
    bool feasible;
    char reason[512];   /* why not, naming the node / tensor */
    double time_s;      /* iteration time (last stream activity) */
    double ideal_s;     /* sum of node times: in-core, infinite memory */
    double stall_s;     /* compute idle, waiting for swap-ins or memory */
    double recompute_s; /* compute time spent re-running producers */
    double input_s;     /* H2D time of the step's input batch and labels (before any swap-in;
                           the nodes that read them wait for them) */
    int64_t peak_bytes;
    int64_t d2h_bytes, h2d_bytes;
    int n_swap_out, n_swap_in, n_recompute;
    const double *node_start, *node_end;           /* per node */
    const double *recompute_start, *recompute_end; /* per node */
    const double *swap_out_start, *swap_out_end;   /* per tensor */
    const double *swap_in_start, *swap_in_end;     /* per tensor */
} sim_result;

/* Builds the per-graph tables: node times and workspaces from prof (mapped by
 * name; errors name the missing or unknown node, with what = the profile's
 * file), tensor sizes and uses from tg. tg must outlive the context; prof
 * need not (its figures are copied). */
int sim_context_new(const train_graph *tg, const profile *prof, const char *what, sim_context **out,
                    oc_err *err);
void sim_context_free(sim_context *ctx);
/* The node times and workspaces the context uses (n = tg->g->n_nodes). */
const double *sim_context_node_times(const sim_context *ctx);
const int64_t *sim_context_node_workspaces(const sim_context *ctx);
/* Node n's time and workspace from now on (another of its profile's alternatives). */
void sim_context_set_node_cost(sim_context *ctx, int n, double time_s, int64_t workspace);
/* The training graph the context was built for. */
const train_graph *sim_context_graph(const sim_context *ctx);
/* The device the context models (bandwidths, latency, duplex). */
const profile_device *sim_context_device(const sim_context *ctx);

/* The least memory any plan needs (every plan runs every node once with its
 * inputs, outputs and workspace on the device, and starts with the batch on
 * it): persistent bytes plus the largest working set of a node (its distinct
 * non-persistent inputs, its outputs, its workspace; sim_run's allocation
 * rules), or persistent bytes and the batch when larger. *node (may be NULL):
 * the node that needs it (-1: the start); *persistent_bytes (may be NULL):
 * parameters, state and optimizer state. */
int64_t sim_memory_floor(const sim_context *ctx, int *node, int64_t *persistent_bytes);

/* Simulates one training iteration of plan. Returns OC_ERR (naming the tensor)
 * only when the plan itself is malformed (SWAP/RECOMPUTE on a tensor that is not
 * saved, an issue point outside (last forward reader, first backward reader]);
 * an infeasible plan is OC_OK with r->feasible false and r->reason set.
 * tl: NULL for the fast path; else cleared and filled with events and samples. */
int sim_run(sim_context *ctx, const sim_plan *plan, const sim_options *o, sim_result *r,
            sim_timeline *tl, oc_err *err);

#endif
