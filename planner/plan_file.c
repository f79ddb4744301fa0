/* plan_file.c — see plan_file.h. */
#include "plan_file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "shape_infer.h"
#include "ops/op_table.h"
#include "plan_verify.h"
#include "profile.h"

/* ---- making the plan ---- */

void plan_made_free(plan_made *pm) {
    rewrite_result_free(&pm->rw);
    layout_result_free(&pm->layout);
    sim_timeline_free(pm->tl);
    if (pm->plan) sim_plan_free(pm->plan);
    memset(pm, 0, sizeof *pm);
}

int plan_make(const strategy *s, const strategy_input *in, plan_made *out, oc_err *err) {
    memset(out, 0, sizeof *out);
    out->budget_bytes = in->sim.budget_bytes;
    strategy_input cur = *in;
    sim_plan *p = sim_plan_new(in->tg);
    int rc = OC_OK;
    int64_t prev_budget = in->sim.budget_bytes;
    for (int iter = 0; iter <= PLAN_MAX_REPLANS; iter++) {
        rewrite_result_free(&out->rw);
        layout_result_free(&out->layout);
        sim_timeline_free(out->tl);
        out->tl = NULL;
        out->planned_budget = cur.sim.budget_bytes;
        out->replans = iter;
        if ((rc = strategy_run(s, &cur, p, &out->stats, err))) break;
        if (!out->stats.feasible) {
            char lowered[96] = "";
            if (iter)
                snprintf(lowered, sizeof lowered, " (lowered: the last layout needed %" PRId64
                         " bytes)", out->last_arena);
            snprintf(out->reason, sizeof out->reason, "strategy %s found no feasible plan under "
                     "%" PRId64 " bytes%s: %s (%s)", s->name, cur.sim.budget_bytes, lowered,
                     out->stats.result.reason, out->stats.notes);
            break;
        }
        out->tl = sim_timeline_new();
        if ((rc = sim_run(cur.ctx, p, &cur.sim, &out->result, out->tl, err))) break;
        if ((rc = rewrite_plan(in->tg, p, out->tl, &out->rw, err))) break;
        /* Each node's workspace is the profile's for the node it runs or clones. */
        const int64_t *src_ws = sim_context_node_workspaces(cur.ctx);
        int nn = out->rw.tg->g->n_nodes;
        int64_t *ws = oc_calloc((size_t)nn + 1, sizeof(int64_t));
        for (int i = 0; i < nn; i++)
            if (out->rw.src_node[i] >= 0) ws[i] = src_ws[out->rw.src_node[i]];
        layout_plan(out->rw.tg, ws, &out->layout);
        oc_free(ws);
        int64_t budget = in->sim.budget_bytes, arena = out->layout.arena_bytes;
        if (budget <= 0 || arena <= budget) {
            out->feasible = true;
            break;
        }
        /* Ask the strategy for a plan whose simulated peak is lower by the layout's overshoot
         * (at least 0.1% of the budget); when the last lowering left the arena unchanged (the
         * strategy's choices are discrete), lower twice as far the next time. */
        int64_t step = arena - budget, min_step = budget / 1000;
        if (step < min_step) step = min_step;
        if (arena == out->last_arena) step = 2 * (prev_budget - cur.sim.budget_bytes > step
                                                      ? prev_budget - cur.sim.budget_bytes : step);
        out->last_arena = arena;
        int64_t next = cur.sim.budget_bytes - step, from_peak = out->result.peak_bytes - step;
        if (from_peak > 0 && from_peak < next) next = from_peak;
        if (iter == PLAN_MAX_REPLANS || next <= 0) {
            snprintf(out->reason, sizeof out->reason, "the layout needs %" PRId64 " bytes, over "
                     "the budget of %" PRId64 ", after %d re-plans with lower budgets", arena,
                     budget, iter);
            break;
        }
        prev_budget = cur.sim.budget_bytes;
        cur.sim.budget_bytes = next;
    }
    out->plan = p;
    if (rc == OC_OK && out->feasible) {
        layout_apply(out->rw.tg, &out->layout);
        rc = plan_verify(out->rw.tg, out->layout.offset, out->layout.arena_bytes,
                         in->sim.budget_bytes, err);
        if (rc) oc_fail_prefix(err, "internal: the planner's own plan fails verification");
    }
    if (rc) plan_made_free(out);
    return rc;
}

/* ---- digests ---- */

uint64_t plan_fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) { return plan_fnv(h, s, strlen(s) + 1); }

static uint64_t fnv_tensor(uint64_t h, const ir_tensor *t) {
    h = fnv_str(h, t->name);
    int32_t r = t->rank;
    h = plan_fnv(h, &r, sizeof r);
    for (int i = 0; i < t->rank; i++) h = plan_fnv(h, &t->dims[i], sizeof t->dims[i]);
    return h;
}

uint64_t plan_graph_digest(const ir_graph *g) {
    uint64_t h = PLAN_FNV_INIT;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        h = fnv_str(fnv_str(fnv_str(h, n->name), n->op_type), n->domain);
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) h = fnv_tensor(h, &g->tensors[n->inputs[k]]);
        h = plan_fnv(h, "|", 1);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) h = fnv_tensor(h, &g->tensors[n->outputs[k]]);
    }
    return h;
}

void plan_profile_digest(const profile *p, char *buf, size_t cap) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    uint64_t h = PLAN_FNV_INIT;
    if (f) {
        oc_err e;
        profile_write_file(p, f, &e);
        fclose(f);
        h = plan_fnv(h, text, len);
        free(text); /* open_memstream's buffer: libc-owned */
    }
    snprintf(buf, cap, "%016llx", (unsigned long long)h);
}

/* ---- writing ---- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#include <stdarg.h>
static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    oc_grow((void **)&b->s, &b->cap, b->n + (size_t)need + 1, 1);
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

static bool is_annotation(const ir_attr *a) { return strncmp(a->name, "outcore_", 8) == 0; }

/* Trailing outcore_* attributes of a node (rewrite and layout append them last). */
static int n_trailing_annotations(const ir_node *n) {
    int k = 0;
    while (k < n->n_attrs && is_annotation(&n->attrs[n->n_attrs - 1 - k])) k++;
    return k;
}

int plan_file_write(plan_made *pm, const plan_file_meta *m, const char *path, oc_err *err) {
    train_graph *tg = pm->rw.tg;
    ir_graph *g = tg->g;
    sbuf ann = {0}, fixed = {0}, tl = {0}, mem = {0}, wsl = {0};
    /* Standard-domain annotations into metadata; stripped from the nodes while writing. */
    int *strip = oc_calloc((size_t)g->n_nodes + 1, sizeof(int));
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (*n->domain) continue;
        sb_printf(&ann, "%d\t%s\t", i, ir_attr_string(n, REWRITE_ATTR_STREAM, "compute"));
        const int64_t *v;
        int nv = ir_attr_ints(n, LAYOUT_ATTR_OFFSETS, &v);
        if (nv <= 0) sb_printf(&ann, "-");
        for (int k = 0; k < nv; k++) sb_printf(&ann, "%s%" PRId64, k ? "," : "", v[k]);
        sb_printf(&ann, "\t%s\n", ir_attr_string(n, REWRITE_ATTR_RECOMPUTE_OF, ""));
        strip[i] = n_trailing_annotations(n);
        n->n_attrs -= strip[i];
    }
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer < 0 && pm->layout.offset[t] >= 0 && tg->alias_of[t] < 0)
            sb_printf(&fixed, "%" PRId64 "\t%s\n", pm->layout.offset[t], g->tensors[t].name);
    for (int i = 0; i < g->n_nodes; i++)
        if (pm->layout.ws_offset && pm->layout.ws_offset[i] >= 0)
            sb_printf(&wsl, "%d\t%" PRId64 "\t%" PRId64 "\n", i, pm->layout.ws_offset[i],
                      pm->layout.ws_bytes[i]);
    for (int i = 0; i < g->n_nodes; i++)
        if (pm->rw.start && pm->rw.start[i] >= 0)
            sb_printf(&tl, "%d\t%.9g\t%.9g\n", i, pm->rw.start[i], pm->rw.end[i]);
    for (int i = 0; pm->tl && i < pm->tl->n_samples; i++)
        sb_printf(&mem, "%.9g\t%" PRId64 "\n", pm->tl->samples[i].t, pm->tl->samples[i].bytes);
    sb_printf(&ann, "%s", ""), sb_printf(&fixed, "%s", ""), sb_printf(&tl, "%s", "");
    sb_printf(&mem, "%s", ""), sb_printf(&wsl, "%s", "");
    const sim_result *r = &pm->result;
    char *v[20];
    int nv = 0;
    v[nv++] = oc_sprintf("%" PRId64, m->batch);
    v[nv++] = oc_sprintf("%.9g", (double)tg->opts.lr);
    v[nv++] = oc_sprintf("%.9g", (double)tg->opts.momentum);
    v[nv++] = oc_sprintf("%.9g", (double)tg->opts.weight_decay);
    v[nv++] = oc_sprintf("%d", tg->n_forward);
    v[nv++] = oc_sprintf("%" PRId64, pm->budget_bytes);
    v[nv++] = oc_sprintf("%" PRId64, pm->planned_budget);
    v[nv++] = oc_sprintf("%d", pm->replans);
    v[nv++] = oc_sprintf("%.9g", r->time_s);
    v[nv++] = oc_sprintf("%.9g", r->ideal_s);
    v[nv++] = oc_sprintf("%.9g", r->stall_s);
    v[nv++] = oc_sprintf("%" PRId64, r->peak_bytes);
    v[nv++] = oc_sprintf("%" PRId64, pm->layout.arena_bytes);
    v[nv++] = oc_sprintf("%" PRId64, pm->layout.peak_bytes);
    v[nv++] = oc_sprintf("%.6f", pm->layout.fragmentation);
    v[nv++] = oc_sprintf("%016llx", (unsigned long long)plan_graph_digest(g));
    const char *meta[] = {
        "outcore.version", m->tool_version ? m->tool_version : OC_EXPORT_VERSION,
        "outcore.kind", PLAN_KIND,
        "outcore.batch", v[0],
        "outcore.lr", v[1],
        "outcore.momentum", v[2],
        "outcore.weight_decay", v[3],
        "outcore.source_model", m->source_model ? m->source_model : "",
        "outcore.forward_nodes", v[4],
        "outcore.strategy", m->strategy ? m->strategy : "",
        "outcore.budget_bytes", v[5],
        "outcore.planned_budget_bytes", v[6],
        "outcore.replans", v[7],
        "outcore.predicted_time_s", v[8],
        "outcore.predicted_ideal_s", v[9],
        "outcore.predicted_stall_s", v[10],
        "outcore.predicted_peak_bytes", v[11],
        "outcore.arena_bytes", v[12],
        "outcore.peak_live_bytes", v[13],
        "outcore.fragmentation", v[14],
        "outcore.device", m->device ? m->device : "",
        "outcore.profile_digest", m->profile_digest ? m->profile_digest : "",
        "outcore.graph_digest", v[15],
        "outcore.node_annotations", ann.s,
        "outcore.fixed_offsets", fixed.s,
        "outcore.workspaces", wsl.s,
        "outcore.timeline", tl.s,
        "outcore.memory", mem.s,
    };
    int *outs = oc_malloc(((size_t)g->n_outputs + 1) * sizeof(int));
    memcpy(outs, g->outputs, (size_t)g->n_outputs * sizeof(int));
    onnx_export_spec s = {.node_begin = 0, .node_end = g->n_nodes, .inputs = g->inputs,
                          .n_inputs = g->n_inputs, .outputs = outs, .n_outputs = g->n_outputs,
                          .meta = meta, .n_meta = (int)(sizeof meta / sizeof meta[0] / 2)};
    int rc = onnx_export_graph(g, &s, path, err);
    for (int i = 0; i < g->n_nodes; i++) g->nodes[i].n_attrs += strip[i];
    for (int i = 0; i < nv; i++) oc_free(v[i]);
    oc_free(outs), oc_free(strip), oc_free(ann.s), oc_free(fixed.s), oc_free(tl.s), oc_free(mem.s);
    oc_free(wsl.s);
    return rc;
}

/* ---- reading ---- */

char *plan_file_meta_get(const uint8_t *buf, size_t len, const char *key) {
    Onnx__ModelProto *m = len ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    if (!m) return NULL;
    char *val = NULL;
    for (size_t i = 0; i < m->n_metadata_props && !val; i++) {
        const Onnx__StringStringEntryProto *e = m->metadata_props[i];
        if (e->key && e->value && strcmp(e->key, key) == 0) val = oc_strdup(e->value);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return val;
}

static int parse_i64(const char *s, char **end, int64_t *out) {
    *out = strtoll(s, end, 10);
    return *end == s ? OC_ERR : OC_OK;
}

/* One annotation line: "<index>\t<stream>\t<offsets|->\t<recompute_of>". */
static int restore_line(ir_graph *g, char *line, const char *path, int lineno, oc_err *err) {
    char *f[4] = {line, NULL, NULL, NULL};
    for (int k = 1; k < 4; k++) {
        f[k] = f[k - 1] ? strchr(f[k - 1], '\t') : NULL;
        if (f[k]) *f[k]++ = 0;
    }
    char *end;
    int64_t idx;
    if (!f[3] || parse_i64(f[0], &end, &idx) || *end || idx < 0 || idx >= g->n_nodes)
        return oc_fail(err, "%s: outcore.node_annotations line %d is malformed", path, lineno);
    int i = (int)idx;
    if (*g->nodes[i].domain)
        return oc_fail(err, "%s: outcore.node_annotations line %d names node %d ('%s'), which "
                       "is not a standard-domain node", path, lineno, i, g->nodes[i].name);
    ir_attr st = {.name = REWRITE_ATTR_STREAM, .type = IR_ATTR_STRING, .s = f[1]};
    ir_node_add_attr(g, i, &st);
    if (strcmp(f[2], "-") != 0) {
        int64_t vals[64];
        int n = 0;
        for (char *p = f[2]; *p;) {
            if (n == 64 || parse_i64(p, &end, &vals[n++]) || (*end && *end != ','))
                return oc_fail(err, "%s: node '%s': bad offsets '%s' in outcore.node_annotations",
                               path, g->nodes[i].name, f[2]);
            p = *end ? end + 1 : end;
        }
        ir_attr of = {.name = LAYOUT_ATTR_OFFSETS, .type = IR_ATTR_INTS, .ints = vals, .n = n};
        ir_node_add_attr(g, i, &of);
    }
    if (*f[3]) {
        ir_attr ro = {.name = REWRITE_ATTR_RECOMPUTE_OF, .type = IR_ATTR_STRING, .s = f[3]};
        ir_node_add_attr(g, i, &ro);
    }
    return OC_OK;
}

/* outcore.workspaces lines "<node>\t<offset>\t<bytes>" -> outcore_workspace
 * attributes (project-domain nodes carry it already). Absent: no workspaces. */
static int restore_workspaces(ir_graph *g, const uint8_t *buf, size_t len, const char *path,
                              int64_t arena_bytes, oc_err *err) {
    char *val = plan_file_meta_get(buf, len, "outcore.workspaces");
    int rc = OC_OK, lineno = 0;
    for (char *line = val; rc == OC_OK && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        int64_t v[3];
        char *p = line, *end = line;
        for (int k = 0; k < 3 && rc == OC_OK; k++) {
            if (parse_i64(p, &end, &v[k]) || (k < 2 ? *end != '\t' : *end != 0))
                rc = oc_fail(err, "%s: outcore.workspaces line %d is malformed", path, lineno);
            p = end + 1;
        }
        if (rc == OC_OK && (v[0] < 0 || v[0] >= g->n_nodes || v[1] < 0 || v[2] <= 0 ||
                            v[1] + v[2] > arena_bytes))
            rc = oc_fail(err, "%s: outcore.workspaces line %d: node %" PRId64 ", region [%" PRId64
                         ", +%" PRId64 ") is not a node and a region of the %" PRId64 "-byte arena",
                         path, lineno, v[0], v[1], v[2], arena_bytes);
        const int64_t *have;
        if (rc == OC_OK && ir_attr_ints(&g->nodes[v[0]], LAYOUT_ATTR_WORKSPACE, &have) < 0) {
            ir_attr wa = {.name = LAYOUT_ATTR_WORKSPACE, .type = IR_ATTR_INTS, .ints = v + 1, .n = 2};
            ir_node_add_attr(g, (int)v[0], &wa);
        }
        line = nl ? nl + 1 : NULL;
    }
    oc_free(val);
    return rc;
}

int plan_file_restore(ir_graph *g, const uint8_t *buf, size_t len, const char *path,
                      int64_t **offsets, int64_t *arena_bytes, oc_err *err) {
    *offsets = NULL;
    const char *keys[] = {"outcore.graph_digest", "outcore.node_annotations",
                          "outcore.fixed_offsets", "outcore.arena_bytes"};
    char *val[4];
    int rc = OC_OK;
    for (int k = 0; k < 4; k++) {
        val[k] = plan_file_meta_get(buf, len, keys[k]);
        if (!val[k] && rc == OC_OK)
            rc = oc_fail(err, "%s: plan without metadata %s (corrupted or not written by "
                         "outcore-plan plan -o)", path, keys[k]);
    }
    char digest[32];
    snprintf(digest, sizeof digest, "%016llx", (unsigned long long)plan_graph_digest(g));
    if (rc == OC_OK && strcmp(digest, val[0]) != 0)
        rc = oc_fail(err, "%s: the plan's layout metadata belongs to another graph (graph digest "
                     "%s, expected %s): a plan from another model, or a modified plan", path,
                     digest, val[0]);
    char *end;
    if (rc == OC_OK && (parse_i64(val[3], &end, arena_bytes) || *end || *arena_bytes < 0))
        rc = oc_fail(err, "%s: outcore.arena_bytes '%s' is not a byte count", path, val[3]);
    int lineno = 0;
    for (char *line = val[1]; rc == OC_OK && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        rc = restore_line(g, line, path, ++lineno, err);
        line = nl ? nl + 1 : NULL;
    }
    int64_t *off = oc_malloc(((size_t)g->n_tensors + 1) * sizeof(int64_t));
    for (int t = 0; t < g->n_tensors; t++) off[t] = -1;
    for (int i = 0; rc == OC_OK && i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        const int64_t *v;
        int nv = ir_attr_ints(n, LAYOUT_ATTR_OFFSETS, &v);
        if (nv < 0)
            rc = oc_fail(err, "%s: node '%s' has no %s", path, n->name, LAYOUT_ATTR_OFFSETS);
        for (int k = 0; k < nv && k < n->n_outputs && rc == OC_OK; k++)
            if (n->outputs[k] >= 0 && v[k] >= 0) off[n->outputs[k]] = v[k];
    }
    if (rc == OC_OK) rc = restore_workspaces(g, buf, len, path, *arena_bytes, err);
    for (char *line = val[2]; rc == OC_OK && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        int64_t o;
        char *tab;
        if (parse_i64(line, &tab, &o) || *tab != '\t' || o < 0)
            rc = oc_fail(err, "%s: outcore.fixed_offsets: malformed line '%s'", path, line);
        int t = rc == OC_OK ? ir_tensor_find(g, tab + 1) : -1;
        if (rc == OC_OK && t < 0)
            rc = oc_fail(err, "%s: outcore.fixed_offsets names tensor '%s', which the graph "
                         "does not have", path, tab + 1);
        if (rc == OC_OK) off[t] = o;
        line = nl ? nl + 1 : NULL;
    }
    for (int k = 0; k < 4; k++) oc_free(val[k]);
    if (rc) {
        oc_free(off);
        return OC_ERR;
    }
    *offsets = off;
    return OC_OK;
}

int plan_file_load(const char *path, train_graph **tg, int64_t **offsets, int64_t *arena_bytes,
                   uint8_t **buf, size_t *len, oc_err *err) {
    *tg = NULL, *offsets = NULL, *buf = NULL;
    if (oc_read_file(path, buf, len, err)) return OC_ERR;
    char *kind = plan_file_meta_get(*buf, *len, "outcore.kind");
    char *nd = plan_file_meta_get(*buf, *len, "outcore.data_inputs");
    int rc = OC_OK;
    if (!kind || strcmp(kind, PLAN_KIND) != 0)
        rc = oc_fail(err, "%s: not a plan (metadata outcore.kind is '%s'; write one with "
                     "`outcore-plan plan ... -o PLAN.onnx`)", path, kind ? kind : "");
    ir_graph *g = NULL;
    if (rc == OC_OK) rc = onnx_import_buffer(*buf, *len, path, &g, err);
    int n_data = nd ? atoi(nd) : 2;
    if (rc == OC_OK && (n_data < 1 || n_data > g->n_inputs))
        rc = oc_fail(err, "%s: outcore.data_inputs=%d but the graph has %d inputs", path, n_data,
                     g->n_inputs);
    if (rc == OC_OK) {
        for (int i = n_data; i < g->n_inputs; i++) { /* data-less initializers (onnx_export.h) */
            ir_tensor *t = &g->tensors[g->inputs[i]];
            t->is_graph_input = false;
            t->is_initializer = true;
            t->kind = IR_KIND_PARAMETER;
        }
        g->n_inputs = n_data;
        ir_bind_opts b = {0};
        rc = ir_bind_dims(g, &b, err) || ir_infer_shapes(g, err) ? OC_ERR : OC_OK;
    }
    if (rc == OC_OK) rc = plan_file_restore(g, *buf, *len, path, offsets, arena_bytes, err);
    if (rc == OC_OK) {
        *tg = oc_calloc(1, sizeof **tg);
        (*tg)->g = g;
        (*tg)->opts = train_opts_default();
        g = NULL;
        rc = rewrite_fill_structure(*tg, err);
    }
    ir_graph_free(g);
    oc_free(kind), oc_free(nd);
    if (rc) {
        train_graph_free(*tg), oc_free(*offsets), oc_free(*buf);
        *tg = NULL, *offsets = NULL, *buf = NULL;
    }
    return rc;
}
