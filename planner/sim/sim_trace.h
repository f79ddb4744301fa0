/* sim_trace.h — the simulated timeline as Chrome trace-event JSON (opens in
 * Perfetto / chrome://tracing): one track (tid) per stream with complete ("X")
 * events, ts/dur in microseconds, args {bytes, ...}; a "memory" counter ("C")
 * series with the live bytes; thread_name metadata naming the tracks.
 *
 *   sim_timeline *tl = sim_timeline_new();
 *   sim_run(ctx, plan, &o, &r, tl, &err);
 *   if (sim_trace_write(tg, tl, f, &err)) ...   // f from cli_open_output
 */
#ifndef OC_SIM_TRACE_H
#define OC_SIM_TRACE_H

#include <stdio.h>

#include "sim/simulator.h"

/* Writes the trace of tl (a run over tg) to f. OC_ERR on a write error. */
int sim_trace_write(const train_graph *tg, const sim_timeline *tl, FILE *f, oc_err *err);

#endif
