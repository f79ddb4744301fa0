/* trace_out.c — see trace_out.h. */
#include "trace_out.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "ir/ops/op_table.h"
#include "ir/out_file.h"
#include "plan/plan_file.h"

struct rt_trace {
    const train_graph *tg;
    json_t *events; /* owned */
    double base_s;  /* where the next step starts on the time axis */
};

rt_trace *rt_trace_new(const train_graph *tg, const char *device) {
    rt_trace *tr = oc_calloc(1, sizeof *tr);
    tr->tg = tg;
    tr->events = json_array();
    char name[160];
    snprintf(name, sizeof name, "outcore measured: %s", device);
    json_array_append_new(tr->events, json_pack("{s:s, s:s, s:f, s:i, s:i, s:{s:s}}", "name",
                                                "process_name", "ph", "M", "ts", 0.0, "pid", 1,
                                                "tid", 0, "args", "name", name));
    for (int s = 0; s < RT_STREAM__COUNT; s++)
        json_array_append_new(tr->events,
                              json_pack("{s:s, s:s, s:f, s:i, s:i, s:{s:s}}", "name", "thread_name",
                                        "ph", "M", "ts", 0.0, "pid", 1, "tid", s + 1, "args",
                                        "name", rt_stream_id_name((rt_stream_id)s)));
    return tr;
}

static json_t *op_event(const rt_trace *tr, const rt_exec_op_info *o, int j, int64_t step) {
    const ir_graph *g = tr->tg->g;
    const char *cat, *name;
    json_t *args = json_pack("{s:I, s:i, s:I}", "step", (json_int_t)step, "op", j, "bytes",
                             (json_int_t)o->bytes);
    if (o->node >= 0) {
        const ir_node *n = &g->nodes[o->node];
        const char *of = ir_attr_string(n, PLAN_ATTR_RECOMPUTE_OF, NULL);
        name = n->name;
        cat = n->op == OP_SWAP_OUT  ? "swap_out"
              : n->op == OP_SWAP_IN ? "swap_in"
              : of                  ? "recompute"
                                    : "compute";
        json_object_set_new(args, "node", json_string(n->name));
        json_object_set_new(args, "op_type", json_string(n->op_type));
        if (of) json_object_set_new(args, "recompute_of", json_string(of));
        if (n->op == OP_SWAP_OUT || n->op == OP_SWAP_IN) {
            /* the device tensor copied: a SwapIn reads the host copy its SwapOut made */
            int t = n->inputs[0], p = g->tensors[t].producer;
            if (n->op == OP_SWAP_IN && p >= 0 && g->nodes[p].op == OP_SWAP_OUT)
                t = g->nodes[p].inputs[0];
            json_object_set_new(args, "tensor", json_string(g->tensors[t].name));
        }
    } else {
        name = g->tensors[o->tensor].name;
        cat = o->tensor == tr->tg->loss_tensor ? "loss" : "input";
        json_object_set_new(args, "tensor", json_string(name));
    }
    return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat", cat, "ph",
                     "X", "ts", (tr->base_s + o->start) * 1e6, "dur", (o->end - o->start) * 1e6,
                     "pid", 1, "tid", (int)o->stream + 1, "args", args);
}

void rt_trace_add_step(rt_trace *tr, const rt_exec *x, int64_t step) {
    double span = 0;
    for (int j = 0; j < rt_exec_n_ops(x); j++) {
        rt_exec_op_info o = rt_exec_op(x, j);
        if (o.start < 0 || o.end < o.start) continue;
        json_array_append_new(tr->events, op_event(tr, &o, j, step));
        if (o.end > span) span = o.end;
    }
    tr->base_s += span;
}

int rt_trace_write(const rt_trace *tr, const char *path, oc_err *err) {
    oc_out out;
    if (oc_out_open(&out, path, err)) return OC_ERR;
    json_t *root = json_pack("{s:O, s:s}", "traceEvents", tr->events, "displayTimeUnit", "ms");
    int rc = json_dumpf(root, out.f, JSON_COMPACT) == 0 && fputc('\n', out.f) != EOF
                 ? OC_OK
                 : oc_fail(err, "%s: write error: %s", path, strerror(errno));
    json_decref(root);
    if (oc_out_close(&out, rc == OC_OK, err)) rc = OC_ERR;
    return rc;
}

void rt_trace_free(rt_trace *tr) {
    if (!tr) return;
    json_decref(tr->events);
    oc_free(tr);
}
