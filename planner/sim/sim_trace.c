/* sim_trace.c — see sim_trace.h. */
#include "sim/sim_trace.h"

#include <errno.h>
#include <string.h>

#include "ir/ops/op_table.h"

#include <jansson.h>

static const char *kind_cat[] = {"compute", "recompute", "swap_out", "swap_in", "input"};

static json_t *event_json(const train_graph *tg, const sim_event *e) {
    const ir_graph *g = tg->g;
    char name[600];
    json_t *args = json_object();
    json_object_set_new(args, "bytes", json_integer((json_int_t)e->bytes));
    if (e->kind == SIM_EVENT_NODE || e->kind == SIM_EVENT_RECOMPUTE) {
        const ir_node *n = &g->nodes[e->index];
        snprintf(name, sizeof name, "%s%s", e->kind == SIM_EVENT_RECOMPUTE ? "recompute " : "",
                 n->name);
        json_object_set_new(args, "op", json_string(n->op_type));
        json_object_set_new(args, "phase", json_string(train_phase_name(tg->phase[e->index])));
    } else {
        snprintf(name, sizeof name, "%s %s",
                 e->kind == SIM_EVENT_INPUT
                     ? "input"
                     : op_name(e->kind == SIM_EVENT_SWAP_OUT ? OP_SWAP_OUT : OP_SWAP_IN),
                 g->tensors[e->index].name);
        json_object_set_new(args, "tensor", json_string(g->tensors[e->index].name));
    }
    return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat",
                     kind_cat[e->kind], "ph", "X", "ts", e->start * 1e6, "dur",
                     (e->end - e->start) * 1e6, "pid", 1, "tid", (int)e->stream + 1, "args", args);
}

int sim_trace_write(const train_graph *tg, const sim_timeline *tl, FILE *f, oc_err *err) {
    json_t *evs = json_array();
    json_array_append_new(evs, json_pack("{s:s, s:s, s:f, s:i, s:i, s:{s:s}}", "name",
                                         "process_name", "ph", "M", "ts", 0.0, "pid", 1, "tid", 0,
                                         "args", "name", "outcore simulated GPU"));
    for (int s = 0; s < SIM_STREAM__COUNT; s++)
        json_array_append_new(evs,
                              json_pack("{s:s, s:s, s:f, s:i, s:i, s:{s:s}}", "name", "thread_name",
                                        "ph", "M", "ts", 0.0, "pid", 1, "tid", s + 1, "args",
                                        "name", sim_stream_name((sim_stream)s)));
    for (int i = 0; i < tl->n_events; i++)
        json_array_append_new(evs, event_json(tg, &tl->events[i]));
    for (int i = 0; i < tl->n_samples; i++)
        json_array_append_new(evs,
                              json_pack("{s:s, s:s, s:f, s:i, s:i, s:{s:I}}", "name", "memory",
                                        "ph", "C", "ts", tl->samples[i].t * 1e6, "pid", 1, "tid", 0,
                                        "args", "bytes", (json_int_t)tl->samples[i].bytes));
    json_t *root = json_pack("{s:o, s:s}", "traceEvents", evs, "displayTimeUnit", "ms");
    int rc = json_dumpf(root, f, JSON_COMPACT);
    json_decref(root);
    if (rc != 0 || fputc('\n', f) == EOF)
        return oc_fail(err, "trace: write error: %s", strerror(errno));
    return OC_OK;
}
