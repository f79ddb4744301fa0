/* cmd_show.c — `outcore-plan show PLAN.onnx [--trace F] [--svg F]`: a plan
 * file's schedule as a table, and its predicted timeline as a Chrome trace /
 * SVG memory plot. Also cli_plan_write_made, the writer behind `plan -o`.
 *
 * The trace and plot come from the plan file alone: the planner stores the
 * simulated start/end of every node (outcore.timeline) and the live bytes over
 * time (outcore.memory) when it writes the plan, so neither the model, the
 * profile nor the strategy is needed again (plan_file.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops/op_table.h"
#include "emit/plan_write.h"
#include "plan/plan_verify.h"
#include "sim/sim_svg.h"
#include "sim/sim_trace.h"
#include "cli.h"

int cli_plan_write_made(const cli_plan_env *e, const strategy *s, plan_made *made, const char *path,
                        oc_err *err) {
    plan_made pm = *made;
    if (!pm.feasible) return oc_fail(err, "%s not written: %s", path, pm.reason);
    char digest[32];
    plan_profile_digest(e->prof, digest, sizeof digest);
    plan_file_meta m = {.tool_version = OC_VERSION,
                        .strategy = s->name,
                        .source_model = e->mo.model,
                        .device = e->prof->device.name,
                        .profile_digest = digest,
                        .batch = e->mo.batch};
    int rc = plan_file_write(&pm, &m, path, err);
    if (rc == OC_OK) {
        char a[32], p[32], b[32];
        fprintf(stderr,
                "%s: %d nodes (%d SwapOut, %d SwapIn, %d recompute), arena %s (peak live %s, "
                "fragmentation %.3f, %s), budget %s, planned under %" PRId64 " bytes after %d "
                "re-plan%s\n",
                path, pm.rw.tg->g->n_nodes, pm.rw.n_swap_out, pm.rw.n_swap_in, pm.rw.n_recompute,
                oc_fmt_bytes(pm.layout.arena_bytes, a, sizeof a),
                oc_fmt_bytes(pm.layout.peak_bytes, p, sizeof p), pm.layout.fragmentation,
                pm.layout.method,
                pm.budget_bytes > 0 ? oc_fmt_bytes(pm.budget_bytes, b, sizeof b) : "unlimited",
                pm.planned_budget, pm.replans, pm.replans == 1 ? "" : "s");
    }
    return rc;
}

void cmd_show_usage(FILE *f) {
    fprintf(f, "usage: outcore-plan show PLAN.onnx [--trace FILE] [--svg FILE]\n\n"
               "Prints a plan written by `outcore-plan plan ... -o PLAN.onnx`: its metadata and\n"
               "one row per node in execution order (index, stream, op, name, inputs, outputs,\n"
               "arena offsets of the outputs, predicted start/end). The plan is verified first.\n"
               "  --trace FILE  Chrome trace-event JSON of the predicted timeline\n"
               "  --svg FILE    memory-over-time plot of the predicted timeline\n"
               "Both come from the timeline stored in the plan (no model or profile needed).\n");
}

static char *meta(const uint8_t *buf, size_t len, const char *key) {
    char *v = plan_file_meta_get(buf, len, key);
    return v ? v : oc_strdup("");
}

/* Predicted events from outcore.timeline, on the plan's nodes. */
static sim_timeline *stored_timeline(const train_graph *tg, const char *text, double *t_end) {
    const ir_graph *g = tg->g;
    sim_timeline *tl = sim_timeline_new();
    *t_end = 0;
    for (const char *p = text; p && *p;) {
        char *end;
        long i = strtol(p, &end, 10);
        double a = strtod(end, &end), b = strtod(end, &end);
        p = strchr(end, '\n');
        p = p ? p + 1 : NULL;
        if (i < 0 || i >= g->n_nodes) continue;
        const ir_node *n = &g->nodes[i];
        sim_event ev = {.stream = (sim_stream)rewrite_node_stream(n),
                        .kind = SIM_EVENT_NODE,
                        .index = (int)i,
                        .start = a,
                        .end = b};
        if (op_is_swap_out(n)) ev.kind = SIM_EVENT_SWAP_OUT, ev.index = n->inputs[0];
        else if (op_is_swap_in(n)) ev.kind = SIM_EVENT_SWAP_IN, ev.index = n->outputs[0];
        else if (ir_attr_find(n, PLAN_ATTR_RECOMPUTE_OF)) ev.kind = SIM_EVENT_RECOMPUTE;
        for (int k = 0; k < n->n_outputs; k++) {
            int64_t by = 0;
            if (n->outputs[k] >= 0 && ir_tensor_bytes(&g->tensors[n->outputs[k]], &by))
                ev.bytes += by;
        }
        oc_grow((void **)&tl->events, &tl->cap_events, (size_t)tl->n_events + 1, sizeof(sim_event));
        tl->events[tl->n_events++] = ev;
        if (b > *t_end) *t_end = b;
    }
    return tl;
}

static void stored_samples(sim_timeline *tl, const char *text) {
    for (const char *p = text; p && *p;) {
        char *end;
        double t = strtod(p, &end);
        long long b = strtoll(end, &end, 10);
        oc_grow((void **)&tl->samples, &tl->cap_samples, (size_t)tl->n_samples + 1,
                sizeof(sim_sample));
        tl->samples[tl->n_samples++] = (sim_sample){t, (int64_t)b};
        p = strchr(end, '\n');
        p = p ? p + 1 : NULL;
    }
}

static void print_names(const ir_graph *g, const int *ts, int n) {
    int w = 0;
    for (int k = 0; k < n; k++)
        if (ts[k] >= 0) printf("%s%s", w++ ? "," : "", g->tensors[ts[k]].name);
    if (!w) printf("-");
}

static void print_table(const train_graph *tg, const sim_timeline *tl) {
    const ir_graph *g = tg->g;
    double *st = oc_malloc(((size_t)g->n_nodes + 1) * sizeof(double));
    double *en = oc_malloc(((size_t)g->n_nodes + 1) * sizeof(double));
    for (int i = 0; i < g->n_nodes; i++) st[i] = en[i] = -1;
    for (int i = 0; i < tl->n_events; i++) {
        const sim_event *e = &tl->events[i];
        /* events of copies are indexed by tensor: find their node */
        int node = e->index;
        if (e->kind == SIM_EVENT_SWAP_OUT || e->kind == SIM_EVENT_SWAP_IN) {
            int t = e->index;
            node = e->kind == SIM_EVENT_SWAP_IN ? g->tensors[t].producer : -1;
            for (int k = 0; node < 0 && k < g->tensors[t].n_consumers; k++)
                if (op_is_swap_out(&g->nodes[g->tensors[t].consumers[k]]))
                    node = g->tensors[t].consumers[k];
        }
        if (node >= 0) st[node] = e->start, en[node] = e->end;
    }
    printf("%5s  %-7s %-28s %-40s %-12s %12s  %s -> %s\n", "#", "stream", "op", "name",
           "start..end ms", "offsets", "inputs", "outputs");
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        char op[64], when[40], offs[96];
        snprintf(op, sizeof op, "%s%s%s%s", *n->domain ? n->domain : "", *n->domain ? "." : "",
                 n->op_type, ir_attr_find(n, PLAN_ATTR_RECOMPUTE_OF) ? " (rc)" : "");
        if (st[i] >= 0) snprintf(when, sizeof when, "%.3f..%.3f", st[i] * 1e3, en[i] * 1e3);
        else snprintf(when, sizeof when, "-");
        const int64_t *v;
        int nv = ir_attr_ints(n, PLAN_ATTR_OFFSETS, &v), w = 0;
        offs[0] = 0;
        for (int k = 0; k < nv && w < (int)sizeof offs - 24; k++) {
            if (v[k] < 0) w += snprintf(offs + w, sizeof offs - (size_t)w, "%s-", k ? "," : "");
            else w += snprintf(offs + w, sizeof offs - (size_t)w, "%s%" PRId64, k ? "," : "", v[k]);
        }
        printf("%5d  %-7s %-28s %-40s %-12s %12s  ", i, rewrite_stream_name(rewrite_node_stream(n)),
               op, n->name, when, offs);
        print_names(g, n->inputs, n->n_inputs);
        printf(" -> ");
        print_names(g, n->outputs, n->n_outputs);
        const char *of = ir_attr_string(n, PLAN_ATTR_RECOMPUTE_OF, NULL);
        if (of) printf("  [recompute of %s]", of);
        const ir_attr *mem = ir_attr_find(n, "members"); /* a fused node: what it fuses */
        if (mem && mem->type == IR_ATTR_STRINGS && mem->n > 0) {
            printf("  [fuses %s", mem->strings[0]);
            for (int k = 1; k < mem->n; k++) printf(" + %s", mem->strings[k]);
            printf("]");
        }
        const int64_t *ws;
        if (ir_attr_ints(n, PLAN_ATTR_WORKSPACE, &ws) == 2)
            printf("  [workspace %" PRId64 " bytes at %" PRId64 "]", ws[1], ws[0]);
        printf("\n");
    }
    oc_free(st), oc_free(en);
}

int cmd_show(int argc, char **argv) {
    const char *path = NULL, *trace = NULL, *svg = NULL;
    oc_err err;
    int rc = 1;
    plan_read pr = {0};
    uint8_t *buf = NULL;
    size_t len = 0;
    sim_timeline *tl = NULL;
    char *keys[] = {"outcore.strategy",
                    "outcore.source_model",
                    "outcore.batch",
                    "outcore.budget_bytes",
                    "outcore.arena_bytes",
                    "outcore.peak_live_bytes",
                    "outcore.fragmentation",
                    "outcore.predicted_time_s",
                    "outcore.predicted_peak_bytes",
                    "outcore.predicted_stall_s",
                    "outcore.device",
                    "outcore.profile_digest",
                    "outcore.version",
                    "outcore.timeline",
                    "outcore.memory",
                    "outcore.replans",
                    "outcore.planned_budget_bytes",
                    "outcore.lower_bound_s"};
    enum { N_KEYS = sizeof keys / sizeof keys[0] };
    char *val[N_KEYS] = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trace") == 0 || strcmp(argv[i], "--svg") == 0) {
            const char **dst = argv[i][2] == 't' ? &trace : &svg;
            if (cli_value(argc, argv, &i, dst, &err)) goto fail;
            continue;
        }
        if (argv[i][0] == '-' || path) {
            oc_fail(&err, "unexpected argument '%s' (see --help)", argv[i]);
            goto fail;
        }
        path = argv[i];
    }
    if (!path) {
        oc_fail(&err, "no PLAN.onnx given (see --help)");
        goto fail;
    }
    if (oc_read_file(path, &buf, &len, &err) || plan_file_read(buf, len, path, NULL, &pr, &err))
        goto fail;
    if (!pr.is_plan) {
        oc_fail(&err,
                "%s: a training graph, not a plan (write one with `outcore-plan plan ... "
                "-o PLAN.onnx`)",
                path);
        goto fail;
    }
    const train_graph *tg = pr.tg;
    for (int k = 0; k < N_KEYS; k++) val[k] = meta(buf, len, keys[k]);
    int64_t budget = strtoll(val[3], NULL, 10);
    if (plan_verify(tg, pr.offsets, pr.arena_bytes, budget, &err)) goto fail;
    printf("plan %s: %d nodes, strategy %s, model %s, batch %s, device %s (profile %s), "
           "outcore %s\n",
           path, tg->g->n_nodes, val[0], val[1], val[2], val[10], val[11], val[12]);
    printf("budget %s bytes (planned under %s, %s re-plans); arena %s bytes, peak live %s, "
           "fragmentation %s\n",
           val[3], val[16], val[15], val[4], val[5], val[6]);
    printf("predicted: iteration %.3f ms, peak %s bytes, stall %.3f ms\n",
           strtod(val[7], NULL) * 1e3, val[8], strtod(val[9], NULL) * 1e3);
    double bound = val[17] ? strtod(val[17], NULL) : 0; /* absent in plans before it */
    if (bound > 0)
        printf("lower bound: %.3f ms at the budget (the plan takes %.3fx of it)\n", bound * 1e3,
               strtod(val[7], NULL) / bound);
    double t_end;
    tl = stored_timeline(tg, val[13], &t_end);
    stored_samples(tl, val[14]);
    print_table(tg, tl);
    sim_result r = {.feasible = true,
                    .time_s = strtod(val[7], NULL),
                    .peak_bytes = strtoll(val[8], NULL, 10),
                    .stall_s = strtod(val[9], NULL)};
    cli_output out;
    if (trace) {
        if (cli_open_output(&out, trace, &err)) goto fail;
        int w = sim_trace_write(tg, tl, out.f, &err);
        if (cli_close_output(&out, w == OC_OK, &err) || w) goto fail;
    }
    if (svg) {
        char title[600];
        snprintf(title, sizeof title, "%s (plan %s, strategy %s)", val[1], path, val[0]);
        if (cli_open_output(&out, svg, &err)) goto fail;
        int w = sim_svg_write(tl, &r, budget, title, out.f, &err);
        if (cli_close_output(&out, w == OC_OK, &err) || w) goto fail;
    }
    rc = 0;
    goto done;
fail:
    rc = cli_report("show", &err);
done:
    for (int k = 0; k < N_KEYS; k++) oc_free(val[k]);
    sim_timeline_free(tl);
    plan_read_free(&pr);
    oc_free(buf);
    return rc;
}
