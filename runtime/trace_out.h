/* trace_out.h — the measured timeline of training steps as a Chrome trace
 * (chrome://tracing, Perfetto), in the format of the planner's simulated one
 * (`outcore-plan plan --trace`, sim_trace.h): one track per stream (tid 1
 * compute, 2 d2h, 3 h2d), every op of the executor's program an "X" event
 * with cat compute | recompute | swap_out | swap_in | input | loss and args
 * {step, op, bytes; node, op_type, recompute_of (recomputes); tensor
 * (copies)}. Steps follow one another on the time axis. tools/calibrate reads
 * it beside the planner's profile (docs/profile.md).
 *
 *   rt_trace *tr = rt_trace_new(tg);
 *   rt_exec_trace_on(x, &err);
 *   for (...) { rt_exec_step(x, step, &loss, &err); rt_trace_add_step(tr, x, step); }
 *   if (rt_trace_write(tr, "trace.json", &err)) ...   // whole or not at all
 *   rt_trace_free(tr);
 */
#ifndef OC_TRACE_OUT_H
#define OC_TRACE_OUT_H

#include "executor.h"

typedef struct rt_trace rt_trace;

/* tg must outlive the trace. */
rt_trace *rt_trace_new(const train_graph *tg, const char *device);
/* Appends the last step's op times (rt_exec_op); ops never reached are left out. */
void rt_trace_add_step(rt_trace *tr, const rt_exec *x, int64_t step);
int rt_trace_write(const rt_trace *tr, const char *path, oc_err *err);
void rt_trace_free(rt_trace *tr);

#endif
