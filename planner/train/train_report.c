/* train_report.c — see train_report.h. */
#include "train/train_report.h"

#include <inttypes.h>
#include <string.h>

#include "train/autocast.h"

static void bytes_by_class(const train_graph *tg, int64_t *by) {
    memset(by, 0, IR_KIND__COUNT * sizeof *by);
    for (int t = 0; t < tg->g->n_tensors; t++) {
        int64_t b;
        if (tg->alias_of[t] >= 0 || !ir_tensor_bytes(&tg->g->tensors[t], &b)) continue;
        by[tg->g->tensors[t].kind] += b;
    }
}

/* Saved activations by element type (float32, float16, bfloat16) and the part
 * of them that are autocast's half copies of parameters and graph inputs (in
 * float32 read in place, never saved) or of activations saved in float32 too
 * (e.g. attention's probabilities: float32 for SoftmaxGrad, half for the
 * MatMul's gradient; in float32 one tensor serves both). */
typedef struct saved_split {
    int64_t f32, f16, bf16, copies;
} saved_split;

static saved_split split_saved(const train_graph *tg) {
    const ir_graph *g = tg->g;
    saved_split s = {0};
    for (int i = 0; i < tg->n_saved; i++) {
        const ir_tensor *x = &g->tensors[tg->saved[i]];
        int64_t b = 0;
        if (x->kind != IR_KIND_SAVED || !ir_tensor_bytes(x, &b)) continue;
        if (x->dtype == IR_DTYPE_FLOAT16) s.f16 += b;
        else if (x->dtype == IR_DTYPE_BFLOAT16) s.bf16 += b;
        else s.f32 += b;
        const ir_node *p = x->producer >= 0 ? &g->nodes[x->producer] : NULL;
        ir_kind from = p && autocast_is_cast(p) ? g->tensors[p->inputs[0]].kind : IR_KIND__COUNT;
        if (from == IR_KIND_PARAMETER || from == IR_KIND_INPUT || from == IR_KIND_SAVED)
            s.copies += b;
    }
    return s;
}

static const ir_kind report_kinds[] = {
    IR_KIND_PARAMETER,    IR_KIND_GRADIENT, IR_KIND_OPT_STATE, IR_KIND_STATE,
    IR_KIND_INPUT,        IR_KIND_LABEL,    IR_KIND_SAVED,     IR_KIND_ACTIVATION,
    IR_KIND_ACT_GRADIENT, IR_KIND_CONSTANT, IR_KIND_WORKSPACE,
};
#define N_REPORT_KINDS (sizeof report_kinds / sizeof report_kinds[0])

int train_report_text(const train_graph *tg, FILE *out) {
    const ir_graph *g = tg->g;
    int64_t by[IR_KIND__COUNT];
    char hb[32];
    bytes_by_class(tg, by);
    int counts[4] = {0};
    for (int i = 0; i < g->n_nodes; i++) counts[tg->phase[i]]++;
    fprintf(out,
            "training graph: %d nodes (forward %d, loss %d, backward %d, update %d), "
            "%d tensors\n\nbytes by class:\n",
            g->n_nodes, counts[0], counts[1], counts[2], counts[3], g->n_tensors);
    for (size_t k = 0; k < N_REPORT_KINDS; k++)
        fprintf(out, "  %-20s %16" PRId64 "  %s\n", ir_kind_name(report_kinds[k]),
                by[report_kinds[k]], oc_fmt_bytes(by[report_kinds[k]], hb, sizeof hb));
    saved_split sp = split_saved(tg);
    fprintf(out,
            "\nprecision %s; saved activations by type: float32 %" PRId64 ", float16 %" PRId64
            ", bfloat16 %" PRId64
            " (of which half copies of parameters, inputs and float32-saved activations: %" PRId64
            ")\n",
            train_precision_name(tg->opts.precision), sp.f32, sp.f16, sp.bf16, sp.copies);
    fprintf(out, "\nin-core peak: %" PRId64 " bytes (%s) at node '%s'\n", tg->incore_peak_bytes,
            oc_fmt_bytes(tg->incore_peak_bytes, hb, sizeof hb),
            g->nodes[tg->incore_peak_node].name);
    fprintf(out, "\nsaved tensors (%d):\n", tg->n_saved);
    fprintf(out, "  %-48s %14s  %s\n", "name", "bytes", "backward readers");
    int readers[16];
    for (int i = 0; i < tg->n_saved; i++) {
        int t = tg->saved[i];
        int64_t b = 0;
        ir_tensor_bytes(&g->tensors[t], &b);
        int nr = train_saved_readers(tg, t, readers, 16);
        fprintf(out, "  %-48s %14" PRId64 "  ", g->tensors[t].name, b);
        for (int r = 0; r < nr && r < 16; r++)
            fprintf(out, "%s%s", r ? ", " : "", g->nodes[readers[r]].name);
        fprintf(out, "%s\n", nr > 16 ? ", ..." : "");
    }
    return ferror(out) ? OC_ERR : OC_OK;
}

json_t *train_report_json(const train_graph *tg) {
    const ir_graph *g = tg->g;
    int64_t by[IR_KIND__COUNT];
    bytes_by_class(tg, by);
    json_t *o = json_object(), *classes = json_object(), *saved = json_array();
    for (size_t k = 0; k < N_REPORT_KINDS; k++)
        json_object_set_new(classes, ir_kind_name(report_kinds[k]),
                            json_integer(by[report_kinds[k]]));
    int64_t saved_bytes = 0;
    int cap = 64, *readers = oc_malloc((size_t)cap * sizeof(int));
    for (int i = 0; i < tg->n_saved; i++) {
        int t = tg->saved[i];
        int64_t b = 0;
        ir_tensor_bytes(&g->tensors[t], &b);
        saved_bytes += g->tensors[t].kind == IR_KIND_SAVED ? b : 0;
        int nr = train_saved_readers(tg, t, readers, cap);
        if (nr > cap) {
            cap = nr;
            readers = oc_realloc(readers, (size_t)cap * sizeof(int));
            nr = train_saved_readers(tg, t, readers, cap);
        }
        json_t *s = json_object(), *r = json_array();
        for (int k = 0; k < nr; k++)
            json_array_append_new(r, json_string(g->nodes[readers[k]].name));
        json_object_set_new(s, "name", json_string(g->tensors[t].name));
        json_object_set_new(s, "bytes", json_integer(b));
        json_object_set_new(s, "dtype", json_string(ir_dtype_name(g->tensors[t].dtype)));
        json_object_set_new(s, "kind", json_string(ir_kind_name(g->tensors[t].kind)));
        json_object_set_new(s, "readers", r);
        json_array_append_new(saved, s);
    }
    oc_free(readers);
    json_object_set_new(o, "nodes", json_integer(g->n_nodes));
    json_object_set_new(o, "forward_nodes", json_integer(tg->n_forward));
    json_object_set_new(o, "saved_activation_bytes", json_integer(saved_bytes));
    saved_split sp = split_saved(tg);
    json_object_set_new(o, "precision", json_string(train_precision_name(tg->opts.precision)));
    json_t *by_type = json_object();
    json_object_set_new(by_type, "float32", json_integer(sp.f32));
    json_object_set_new(by_type, "float16", json_integer(sp.f16));
    json_object_set_new(by_type, "bfloat16", json_integer(sp.bf16));
    json_object_set_new(o, "saved_bytes_by_dtype", by_type);
    json_object_set_new(o, "saved_copy_bytes", json_integer(sp.copies));
    json_object_set_new(o, "incore_peak_bytes", json_integer(tg->incore_peak_bytes));
    json_object_set_new(o, "incore_peak_node", json_string(g->nodes[tg->incore_peak_node].name));
    json_object_set_new(o, "bytes_by_class", classes);
    json_object_set_new(o, "saved", saved);
    return o;
}

static void dot_escape(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        fputc(*s, out);
    }
}

int ir_write_dot(const ir_graph *g, const train_phase *phase, FILE *out) {
    static const char *colour[] = {"lightblue", "gold", "lightsalmon", "palegreen"};
    fprintf(out, "digraph training {\n  rankdir=TB;\n  node [shape=box, style=filled, "
                 "fontsize=10];\n");
    for (int i = 0; i < g->n_nodes; i++) {
        fprintf(out, "  n%d [label=\"", i);
        dot_escape(out, g->nodes[i].name);
        fprintf(out, "\\n%s\", fillcolor=%s];\n", g->nodes[i].op_type,
                colour[phase ? phase[i] : 0]);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0 || g->tensors[t].producer < 0) continue;
            const char *style =
                g->tensors[t].kind == IR_KIND_SAVED && phase && phase[i] != TRAIN_PHASE_FORWARD
                    ? ", color=red"
                    : "";
            fprintf(out, "  n%d -> n%d [tooltip=\"", g->tensors[t].producer, i);
            dot_escape(out, g->tensors[t].name);
            fprintf(out, "\"%s];\n", style);
        }
    }
    fprintf(out, "}\n");
    return ferror(out) ? OC_ERR : OC_OK;
}
