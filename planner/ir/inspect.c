/* inspect.c — see inspect.h. */
#include "ir/inspect.h"

#include <inttypes.h>
#include <string.h>

static void inspect_totals_compute(const ir_graph *g, const int *alias_of, inspect_totals *t) {
    memset(t, 0, sizeof *t);
    t->n_tensors = g->n_tensors;
    t->n_nodes = g->n_nodes;
    for (int i = 0; i < g->n_tensors; i++) {
        const ir_tensor *x = &g->tensors[i];
        int64_t b, n;
        if ((alias_of && alias_of[i] >= 0) || !ir_tensor_bytes(x, &b)) continue;
        t->bytes[x->kind] += b;
        if (x->kind == IR_KIND_PARAMETER && ir_tensor_numel(x, &n)) t->parameter_count += n;
    }
}

static const char *producer_name(const ir_graph *g, const ir_tensor *x) {
    return x->producer >= 0 ? g->nodes[x->producer].name : x->is_host_input ? "(host)" : NULL;
}

/* The host program (ir/host_inputs.h): one line a node, its inputs and outputs. */
static void print_host(const ir_graph *h, FILE *out) {
    fprintf(out, "\nhost inputs: %d nodes run on the host each step (ir/host_inputs.h):\n",
            h->n_nodes);
    for (int i = 0; i < h->n_nodes; i++) {
        const ir_node *n = &h->nodes[i];
        fprintf(out, "  %s (%s):", n->name, n->op_type);
        for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
            int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            fprintf(out, "%s %s",
                    k == n->n_inputs ? " ->"
                    : k              ? ","
                                     : "",
                    t >= 0 ? h->tensors[t].name : "");
        }
        fprintf(out, "\n");
    }
}

int inspect_print_text(const ir_graph *g, const int *alias_of, int64_t batch, FILE *out) {
    size_t wname = 4, wshape = 5;
    char shape[256], hb[32];
    for (int i = 0; i < g->n_tensors; i++) {
        size_t l = strlen(g->tensors[i].name);
        if (l > wname) wname = l;
        l = strlen(ir_shape_str(&g->tensors[i], shape, sizeof shape));
        if (l > wshape) wshape = l;
    }
    if (wname > 60) wname = 60;
    fprintf(out, "model: %s  (opset %" PRId64 ", batch %" PRId64 ", %d nodes, %d tensors)\n\n",
            g->model_path ? g->model_path : "?", g->opset, batch, g->n_nodes, g->n_tensors);
    fprintf(out, "%-*s  %-*s  %-8s  %14s  %-10s  %s\n", (int)wname, "name", (int)wshape, "shape",
            "dtype", "bytes", "kind", "producer");
    for (int i = 0; i < g->n_tensors; i++) {
        const ir_tensor *x = &g->tensors[i];
        int64_t b = 0;
        ir_tensor_bytes(x, &b);
        const char *p = producer_name(g, x);
        fprintf(out, "%-*s  %-*s  %-8s  %14" PRId64 "  %-10s  %s\n", (int)wname, x->name,
                (int)wshape, ir_shape_str(x, shape, sizeof shape), ir_dtype_name(x->dtype), b,
                ir_kind_name(x->kind), p ? p : "-");
    }
    if (g->host) print_host(g->host, out);
    inspect_totals t;
    inspect_totals_compute(g, alias_of, &t);
    fprintf(out, "\ntotals:\n");
    fprintf(out, "  parameters   %14" PRId64 " bytes  (%s, %" PRId64 " elements)\n",
            t.bytes[IR_KIND_PARAMETER], oc_fmt_bytes(t.bytes[IR_KIND_PARAMETER], hb, sizeof hb),
            t.parameter_count);
    static const ir_kind rest[] = {IR_KIND_STATE, IR_KIND_INPUT, IR_KIND_CONSTANT,
                                   IR_KIND_ACTIVATION};
    for (size_t k = 0; k < sizeof rest / sizeof rest[0]; k++)
        fprintf(out, "  %-12s %14" PRId64 " bytes  (%s)\n", ir_kind_name(rest[k]), t.bytes[rest[k]],
                oc_fmt_bytes(t.bytes[rest[k]], hb, sizeof hb));
    return ferror(out) ? OC_ERR : OC_OK;
}

int inspect_print_json(const ir_graph *g, const int *alias_of, int64_t batch, json_t *extra,
                       FILE *out) {
    json_t *root = json_object(), *tensors = json_array(), *totals = json_object();
    json_object_set_new(root, "model", json_string(g->model_path ? g->model_path : ""));
    json_object_set_new(root, "opset", json_integer(g->opset));
    json_object_set_new(root, "batch", json_integer(batch));
    for (int i = 0; i < g->n_tensors; i++) {
        const ir_tensor *x = &g->tensors[i];
        json_t *o = json_object(), *shape = json_array();
        int64_t b = 0;
        ir_tensor_bytes(x, &b);
        for (int d = 0; d < x->rank; d++) json_array_append_new(shape, json_integer(x->dims[d]));
        const char *p = producer_name(g, x);
        json_object_set_new(o, "name", json_string(x->name));
        json_object_set_new(o, "shape", shape);
        json_object_set_new(o, "dtype", json_string(ir_dtype_name(x->dtype)));
        json_object_set_new(o, "bytes", json_integer(b));
        json_object_set_new(o, "kind", json_string(ir_kind_name(x->kind)));
        json_object_set_new(o, "producer", p && !x->is_host_input ? json_string(p) : json_null());
        if (x->is_host_input) json_object_set_new(o, "host", json_true());
        json_array_append_new(tensors, o);
    }
    inspect_totals t;
    inspect_totals_compute(g, alias_of, &t);
    json_object_set_new(totals, "parameter_bytes", json_integer(t.bytes[IR_KIND_PARAMETER]));
    json_object_set_new(totals, "parameter_count", json_integer(t.parameter_count));
    json_object_set_new(totals, "state_bytes", json_integer(t.bytes[IR_KIND_STATE]));
    json_object_set_new(totals, "input_bytes", json_integer(t.bytes[IR_KIND_INPUT]));
    json_object_set_new(totals, "constant_bytes", json_integer(t.bytes[IR_KIND_CONSTANT]));
    json_object_set_new(totals, "activation_bytes", json_integer(t.bytes[IR_KIND_ACTIVATION]));
    json_object_set_new(totals, "nodes", json_integer(t.n_nodes));
    json_object_set_new(totals, "tensors", json_integer(t.n_tensors));
    json_object_set_new(root, "tensors", tensors);
    json_object_set_new(root, "totals", totals);
    if (extra) {
        json_object_update(root, extra);
        json_decref(extra);
    }
    int rc = json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    fputc('\n', out);
    return rc || ferror(out) ? OC_ERR : OC_OK;
}
