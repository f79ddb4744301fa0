/* plan_write.c — see plan_write.h. */
#include "emit/plan_write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/onnx_export.h"
#include "ir/ops/op_table.h"
#include "plan/plan_verify.h"
#include "sim/sim_bound.h"
#include "train/train_structure.h"

/* ---- making the plan ---- */

void plan_made_free(plan_made *pm) {
    rewrite_result_free(&pm->rw);
    layout_result_free(&pm->layout);
    sim_timeline_free(pm->tl);
    if (pm->plan) sim_plan_free(pm->plan);
    memset(pm, 0, sizeof *pm);
}

/* One try under the planned budget cur->sim.budget_bytes, replacing out's last: the
 * strategy's plan into p, its timeline, the rewrite and the layout. *fits: the strategy
 * found a plan and its arena is within the asked budget. */
static int plan_try(const strategy *s, const strategy_input *cur, int64_t budget, sim_plan *p,
                    plan_made *out, bool *fits, oc_err *err) {
    rewrite_result_free(&out->rw);
    layout_result_free(&out->layout);
    sim_timeline_free(out->tl);
    out->tl = NULL;
    out->planned_budget = cur->sim.budget_bytes;
    *fits = false;
    int rc = strategy_run(s, cur, p, &out->stats, err);
    if (rc || !out->stats.feasible) return rc;
    out->tl = sim_timeline_new();
    if ((rc = sim_run(cur->ctx, p, &cur->sim, &out->result, out->tl, err))) return rc;
    if ((rc = rewrite_plan(cur->tg, p, out->tl, &out->rw, err))) return rc;
    /* Each node's workspace is the profile's for the node it runs or clones. */
    const int64_t *src_ws = sim_context_node_workspaces(cur->ctx);
    int nn = out->rw.tg->g->n_nodes;
    int64_t *ws = oc_calloc((size_t)nn + 1, sizeof(int64_t));
    for (int i = 0; i < nn; i++)
        if (out->rw.src_node[i] >= 0) ws[i] = src_ws[out->rw.src_node[i]];
    int *hold = layout_swap_out_holds(out->rw.tg, out->rw.start, out->rw.end);
    layout_plan(out->rw.tg, ws, hold, &out->layout);
    oc_free(hold);
    oc_free(ws);
    *fits = budget <= 0 || out->layout.arena_bytes <= budget;
    return OC_OK;
}

/* After re-plans found a layout that fits under the planned budget `fit` (out's), and the
 * plan under `over` did not: when that plan is more than PLAN_REFINE_GAIN slower than the
 * first plan (`first_time`, under the asked budget), the budgets between, bisected up to
 * PLAN_MAX_REFINES times, may hold a faster plan that fits (a lowering by the overshoot can
 * step past a cliff of the strategy's). Stops once a plan within PLAN_REFINE_GAIN of the
 * first fits. out ends as the fastest that fits (re-run at its budget when it was not the
 * last try; the strategies are deterministic). */
static int plan_refine(const strategy *s, strategy_input *cur, int64_t budget, sim_plan *p,
                       plan_made *out, int64_t fit, int64_t over, int64_t min_step,
                       double first_time, oc_err *err) {
    int64_t best = fit;
    double best_time = out->stats.result.time_s, good = first_time * (1 + PLAN_REFINE_GAIN);
    bool last_best = true, fits;
    for (int k = 0; k < PLAN_MAX_REFINES && over - fit > 2 * min_step && best_time > good; k++) {
        cur->sim.budget_bytes = fit + (over - fit) / 2;
        int rc = plan_try(s, cur, budget, p, out, &fits, err);
        if (rc) return rc;
        last_best = false;
        if (!fits) {
            over = cur->sim.budget_bytes;
            continue;
        }
        fit = cur->sim.budget_bytes;
        if (out->stats.result.time_s < best_time)
            best = fit, best_time = out->stats.result.time_s, last_best = true;
    }
    if (last_best) return OC_OK;
    cur->sim.budget_bytes = best;
    int rc = plan_try(s, cur, budget, p, out, &fits, err);
    OC_ASSERT(rc || fits); /* the same plan as before */
    return rc;
}

int plan_make(const strategy *s, const strategy_input *in, plan_made *out, oc_err *err) {
    memset(out, 0, sizeof *out);
    out->budget_bytes = in->sim.budget_bytes;
    sim_bound lb;
    if (sim_lower_bound(in->ctx, &in->sim, &lb, err)) return OC_ERR;
    out->lower_bound_s = lb.feasible ? lb.time_s : 0;
    strategy_input cur = *in;
    /* budget-independent results (the DP's chains) computed once for every re-plan */
    strategy_shared *own = in->shared ? NULL : strategy_shared_new();
    if (own) cur.shared = own;
    sim_plan *p = sim_plan_new(in->tg);
    int rc = OC_OK;
    int64_t prev_budget = in->sim.budget_bytes, budget = in->sim.budget_bytes;
    /* lo: the largest lowered budget the strategy found nothing under; hi: the
     * smallest whose plan it found but whose layout did not fit. A lowering that
     * lands at or under lo bisects (lo, hi) instead. */
    int64_t lo = -1, hi = -1, min_step = in->sim.budget_bytes / 1000;
    double first_time = 0; /* the first plan's (under the asked budget) */
    for (int iter = 0; iter <= PLAN_MAX_REPLANS; iter++) {
        bool fits;
        out->replans = iter;
        if ((rc = plan_try(s, &cur, budget, p, out, &fits, err))) break;
        if (!out->stats.feasible && hi > 0 && iter < PLAN_MAX_REPLANS &&
            hi - cur.sim.budget_bytes > 2 * min_step) {
            lo = cur.sim.budget_bytes;
            cur.sim.budget_bytes = lo + (hi - lo) / 2;
            continue;
        }
        if (!out->stats.feasible) {
            char lowered[96] = "";
            if (iter)
                snprintf(lowered, sizeof lowered,
                         " (lowered: the last layout needed %" PRId64 " bytes)", out->last_arena);
            snprintf(out->reason, sizeof out->reason,
                     "strategy %s found no feasible plan under "
                     "%" PRId64 " bytes%s: %s (%s)",
                     s->name, cur.sim.budget_bytes, lowered, out->stats.result.reason,
                     out->stats.notes);
            break;
        }
        int64_t arena = out->layout.arena_bytes;
        if (iter == 0) first_time = out->stats.result.time_s;
        if (fits) {
            out->feasible = true;
            if (hi > 0)
                rc = plan_refine(s, &cur, budget, p, out, cur.sim.budget_bytes, hi, min_step,
                                 first_time, err);
            break;
        }
        /* Ask the strategy for a plan whose simulated peak is lower by the layout's overshoot
         * and 1% of the budget (another plan's layout fragments differently, by a percent or
         * two: without the margin a re-plan often overshoots again, and each is a whole
         * strategy run); when the last lowering left the arena unchanged (the strategy's
         * choices are discrete), lower twice as far the next time. */
        hi = cur.sim.budget_bytes;
        int64_t step = arena - budget + budget / 100;
        if (step < min_step) step = min_step;
        if (arena == out->last_arena)
            step =
                2 * (prev_budget - cur.sim.budget_bytes > step ? prev_budget - cur.sim.budget_bytes
                                                               : step);
        out->last_arena = arena;
        /* re-plans run the first run's winning strategy (and the local search) alone:
         * a whole auto again would double the planning time for a slightly lower budget */
        if (s == &strategy_auto && out->stats.chose && !cur.opts.auto_only)
            cur.opts.auto_only = out->stats.chose;
        int64_t next = cur.sim.budget_bytes - step, from_peak = out->result.peak_bytes - step;
        if (from_peak > 0 && from_peak < next) next = from_peak;
        if (next <= lo) next = lo + (hi - lo) / 2;
        if (iter == PLAN_MAX_REPLANS || next <= 0 || next >= hi) {
            snprintf(out->reason, sizeof out->reason,
                     "the layout needs %" PRId64 " bytes, over "
                     "the budget of %" PRId64 ", after %d re-plans with lower budgets",
                     arena, budget, iter);
            break;
        }
        prev_budget = cur.sim.budget_bytes;
        cur.sim.budget_bytes = next;
    }
    strategy_shared_free(own);
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
        sb_printf(&ann, "%d\t%s\t", i, ir_attr_string(n, PLAN_ATTR_STREAM, "compute"));
        const int64_t *v;
        int nv = ir_attr_ints(n, PLAN_ATTR_OFFSETS, &v);
        if (nv <= 0) sb_printf(&ann, "-");
        for (int k = 0; k < nv; k++) sb_printf(&ann, "%s%" PRId64, k ? "," : "", v[k]);
        sb_printf(&ann, "\t%s\n", ir_attr_string(n, PLAN_ATTR_RECOMPUTE_OF, ""));
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
    char *structure = train_structure_format(tg);
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
    v[nv++] = oc_sprintf("%.9g", pm->lower_bound_s);
    const char *meta[] = {
        "outcore.version",
        m->tool_version ? m->tool_version : OC_EXPORT_VERSION,
        "outcore.kind",
        PLAN_KIND,
        "outcore.batch",
        v[0],
        "outcore.lr",
        v[1],
        "outcore.momentum",
        v[2],
        "outcore.weight_decay",
        v[3],
        "outcore.source_model",
        m->source_model ? m->source_model : "",
        "outcore.forward_nodes",
        v[4],
        "outcore.strategy",
        m->strategy ? m->strategy : "",
        "outcore.budget_bytes",
        v[5],
        "outcore.planned_budget_bytes",
        v[6],
        "outcore.replans",
        v[7],
        "outcore.predicted_time_s",
        v[8],
        "outcore.predicted_ideal_s",
        v[9],
        "outcore.predicted_stall_s",
        v[10],
        "outcore.lower_bound_s",
        v[16],
        "outcore.predicted_peak_bytes",
        v[11],
        "outcore.arena_bytes",
        v[12],
        "outcore.peak_live_bytes",
        v[13],
        "outcore.fragmentation",
        v[14],
        "outcore.device",
        m->device ? m->device : "",
        "outcore.profile_digest",
        m->profile_digest ? m->profile_digest : "",
        "outcore.graph_digest",
        v[15],
        "outcore.node_annotations",
        ann.s,
        "outcore.fixed_offsets",
        fixed.s,
        "outcore.workspaces",
        wsl.s,
        "outcore.timeline",
        tl.s,
        "outcore.memory",
        mem.s,
        TRAIN_STRUCTURE_KEY,
        structure,
    };
    int *outs = oc_malloc(((size_t)g->n_outputs + 1) * sizeof(int));
    memcpy(outs, g->outputs, (size_t)g->n_outputs * sizeof(int));
    onnx_export_spec s = {.node_begin = 0,
                          .node_end = g->n_nodes,
                          .inputs = g->inputs,
                          .n_inputs = g->n_inputs,
                          .outputs = outs,
                          .n_outputs = g->n_outputs,
                          .meta = meta,
                          .n_meta = (int)(sizeof meta / sizeof meta[0] / 2),
                          .seal = true};
    int rc = onnx_export_graph(g, &s, path, err);
    for (int i = 0; i < g->n_nodes; i++) g->nodes[i].n_attrs += strip[i];
    for (int i = 0; i < nv; i++) oc_free(v[i]);
    oc_free(outs), oc_free(strip), oc_free(ann.s), oc_free(fixed.s), oc_free(tl.s), oc_free(mem.s);
    oc_free(wsl.s), oc_free(structure);
    return rc;
}
