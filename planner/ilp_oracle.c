/* ilp_oracle.c — the keep/swap/recompute MILP (ilp_oracle.h) on GLPK. */
#include "ilp_oracle.h"

#include <glpk.h>
#include <math.h>
#include <string.h>

#include "strategy_sched.h"

struct ilp_model {
    const train_graph *tg;
    strategy_tinfo *ti;
    int n_nodes;
    double ideal;        /* Σ node times */
    double cap;          /* budget - reserve, bytes (INFINITY when unlimited) */
    double *base;        /* per position: bytes live that are not decisions */
    double *bwd_before;  /* per position: backward compute time before it */
    int n_dec;
    int *dec;            /* decision tensors */
    double *bytes;       /* per decision */
    int *def, *flast, *fbr, *last; /* per decision: positions */
    double *rc_cost;     /* per decision: recompute time */
    double *copy;        /* per decision: H2D copy time (0 when not swappable) */
    bool *can_rc, *can_sw;
};

static bool tensor_persistent(const train_graph *tg, int t) {
    const ir_tensor *x = &tg->g->tensors[t];
    ir_kind k = x->kind;
    return x->is_initializer || k == IR_KIND_PARAMETER || k == IR_KIND_STATE ||
           k == IR_KIND_OPT_STATE || k == IR_KIND_CONSTANT || k == IR_KIND_INPUT ||
           k == IR_KIND_LABEL;
}

/* Recompute time of node n: itself plus non-saved forward activations it reads
 * (they are not resident in backward and re-run with it). */
static double rc_time(const train_graph *tg, const bool *saved, const double *tm, int n,
                      int depth) {
    double c = tm[n];
    if (depth > 64) return c;
    const ir_node *nd = &tg->g->nodes[n];
    for (int i = 0; i < nd->n_inputs; i++) {
        int t = nd->inputs[i];
        if (t < 0 || saved[t] || tensor_persistent(tg, t) || tg->alias_of[t] >= 0) continue;
        int p = tg->g->tensors[t].producer;
        if (p >= 0 && p < tg->n_forward) c += rc_time(tg, saved, tm, p, depth + 1);
    }
    return c;
}

int ilp_model_new(const strategy_input *in, ilp_model **out, oc_err *err) {
    const train_graph *tg = in->tg;
    const ir_graph *g = tg->g;
    int N = g->n_nodes;
    if (in->opts.max_nodes_exact > 0 && N > in->opts.max_nodes_exact)
        return oc_fail(err, "ilp: the training graph has %d nodes, more than the oracle's "
                            "limit of %d", N, in->opts.max_nodes_exact);
    double *tm = oc_calloc((size_t)N + 1, sizeof *tm);
    int64_t *ws = oc_calloc((size_t)N + 1, sizeof *ws);
    if (in->prof) {
        if (profile_node_costs(in->prof, tg, "ilp profile", tm, ws, err)) {
            oc_free(tm);
            oc_free(ws);
            return OC_ERR;
        }
    } else {
        memcpy(tm, sim_context_node_times(in->ctx), (size_t)N * sizeof *tm);
    }
    ilp_model *m = oc_calloc(1, sizeof *m);
    m->tg = tg;
    m->n_nodes = N;
    m->ti = strategy_tinfo_new(tg);
    int64_t cap = in->sim.budget_bytes > 0 ? in->sim.budget_bytes - in->sim.reserve_bytes : 0;
    m->cap = in->sim.budget_bytes > 0 ? (double)cap : INFINITY;
    bool *saved = oc_calloc((size_t)g->n_tensors + 1, sizeof *saved);
    for (int i = 0; i < tg->n_saved; i++) saved[tg->saved[i]] = true;
    m->dec = oc_malloc(((size_t)tg->n_saved + 1) * sizeof *m->dec);
    bool *is_dec = oc_calloc((size_t)g->n_tensors + 1, sizeof *is_dec);
    for (int i = 0; i < tg->n_saved; i++) {
        int t = tg->saved[i];
        int p = g->tensors[t].producer;
        if (p >= 0 && p < tg->n_forward && m->ti->first_bwd[t] >= 0 &&
            (m->ti->can_rc[t] || m->ti->swappable[t])) {
            m->dec[m->n_dec++] = t;
            is_dec[t] = true;
        }
    }
    int D = m->n_dec;
    m->bytes = oc_calloc((size_t)D + 1, sizeof *m->bytes);
    m->def = oc_calloc((size_t)D + 1, sizeof *m->def);
    m->flast = oc_calloc((size_t)D + 1, sizeof *m->flast);
    m->fbr = oc_calloc((size_t)D + 1, sizeof *m->fbr);
    m->last = oc_calloc((size_t)D + 1, sizeof *m->last);
    m->rc_cost = oc_calloc((size_t)D + 1, sizeof *m->rc_cost);
    m->copy = oc_calloc((size_t)D + 1, sizeof *m->copy);
    m->can_rc = oc_calloc((size_t)D + 1, sizeof *m->can_rc);
    m->can_sw = oc_calloc((size_t)D + 1, sizeof *m->can_sw);
    m->base = oc_calloc((size_t)N + 1, sizeof *m->base);
    m->bwd_before = oc_calloc((size_t)N + 1, sizeof *m->bwd_before);
    /* liveness of every tensor over the default schedule */
    double persistent = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        int64_t b;
        if (tg->alias_of[t] >= 0 || !ir_tensor_bytes(x, &b) || b == 0) continue;
        if (tensor_persistent(tg, t)) {
            persistent += (double)b;
            continue;
        }
        int def = x->producer >= 0 ? x->producer : 0, last = def;
        for (int c = 0; c < x->n_consumers; c++)
            if (x->consumers[c] > last) last = x->consumers[c];
        if (x->is_graph_output) last = N - 1;
        if (is_dec[t]) continue;
        for (int p = def; p <= last; p++) m->base[p] += (double)b;
    }
    for (int p = 0; p < N; p++) {
        m->base[p] += persistent + (double)ws[p];
        m->ideal += tm[p];
    }
    double acc = 0;
    for (int p = tg->n_forward; p < N; p++) {
        m->bwd_before[p] = acc;
        acc += tm[p];
    }
    double bw = in->prof ? in->prof->device.h2d_bytes_per_s : 0;
    double lat = in->prof ? in->prof->device.copy_latency_s : 0;
    for (int k = 0; k < D; k++) {
        int t = m->dec[k];
        const ir_tensor *x = &g->tensors[t];
        int64_t b = 0;
        ir_tensor_bytes(x, &b);
        m->bytes[k] = (double)b;
        m->def[k] = x->producer;
        m->flast[k] = m->ti->fwd_last[t] >= 0 ? m->ti->fwd_last[t] : x->producer;
        m->fbr[k] = m->ti->first_bwd[t];
        int last = m->fbr[k];
        for (int c = 0; c < x->n_consumers; c++)
            if (x->consumers[c] > last) last = x->consumers[c];
        m->last[k] = last;
        m->can_rc[k] = m->ti->can_rc[t];
        m->can_sw[k] = m->ti->swappable[t] && bw > 0;
        m->rc_cost[k] = rc_time(tg, saved, tm, x->producer, 0);
        m->copy[k] = bw > 0 ? lat + (double)b / bw : 0;
    }
    oc_free(saved);
    oc_free(is_dec);
    oc_free(tm);
    oc_free(ws);
    *out = m;
    return OC_OK;
}

void ilp_model_free(ilp_model *m) {
    if (!m) return;
    strategy_tinfo_free(m->ti);
    oc_free(m->base);
    oc_free(m->bwd_before);
    oc_free(m->dec);
    oc_free(m->bytes);
    oc_free(m->def);
    oc_free(m->flast);
    oc_free(m->fbr);
    oc_free(m->last);
    oc_free(m->rc_cost);
    oc_free(m->copy);
    oc_free(m->can_rc);
    oc_free(m->can_sw);
    oc_free(m);
}

/* Bytes of decision k live at position p when kept (full) or not (gap freed). */
static bool in_gap(const ilp_model *m, int k, int p) { return p > m->flast[k] && p < m->fbr[k]; }
static bool live_full(const ilp_model *m, int k, int p) { return p >= m->def[k] && p <= m->last[k]; }

bool ilp_model_cost(const ilp_model *m, const sim_plan *plan, double *time_s) {
    double t = m->ideal, stall = 0;
    bool ok = true;
    for (int p = 0; p < m->n_nodes; p++) {
        double mem = m->base[p], need = 0;
        for (int k = 0; k < m->n_dec; k++) {
            sim_decision d = (sim_decision)plan->decision[m->dec[k]];
            if (live_full(m, k, p) && !(d != SIM_DECISION_KEEP && in_gap(m, k, p)))
                mem += m->bytes[k];
            if (p >= m->tg->n_forward && d == SIM_DECISION_SWAP && m->fbr[k] <= p)
                need += m->copy[k];
        }
        if (mem > m->cap * (1 + 1e-12)) ok = false;
        if (p >= m->tg->n_forward && need - m->bwd_before[p] > stall)
            stall = need - m->bwd_before[p];
    }
    for (int k = 0; k < m->n_dec; k++)
        if (plan->decision[m->dec[k]] == SIM_DECISION_RECOMPUTE) t += m->rc_cost[k];
    *time_s = t + stall;
    return ok;
}

int ilp_solve(ilp_model *m, double time_limit_s, ilp_result *r, oc_err *err) {
    memset(r, 0, sizeof *r);
    int D = m->n_dec, N = m->n_nodes, nf = m->tg->n_forward;
    glp_term_out(GLP_OFF);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    /* columns: r_k (1..D), s_k (D+1..2D), stall (2D+1) */
    glp_add_cols(lp, 2 * D + 1);
    for (int k = 0; k < D; k++) {
        glp_set_col_kind(lp, k + 1, GLP_BV);
        glp_set_col_kind(lp, D + k + 1, GLP_BV);
        if (!m->can_rc[k]) glp_set_col_bnds(lp, k + 1, GLP_FX, 0, 0);
        if (!m->can_sw[k]) glp_set_col_bnds(lp, D + k + 1, GLP_FX, 0, 0);
        glp_set_obj_coef(lp, k + 1, m->rc_cost[k]);
    }
    glp_set_col_bnds(lp, 2 * D + 1, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, 2 * D + 1, 1.0);
    glp_set_obj_coef(lp, 0, m->ideal);
    size_t cap = 16, ne = 0;
    int *ia = oc_malloc(cap * sizeof *ia), *ja = oc_malloc(cap * sizeof *ja);
    double *ar = oc_malloc(cap * sizeof *ar);
#define ILP_PUSH(i, j, v)                                                                  \
    do {                                                                                   \
        if (ne + 2 > cap) {                                                                \
            cap *= 2;                                                                      \
            ia = oc_realloc(ia, cap * sizeof *ia);                                         \
            ja = oc_realloc(ja, cap * sizeof *ja);                                         \
            ar = oc_realloc(ar, cap * sizeof *ar);                                         \
        }                                                                                  \
        ne++;                                                                              \
        ia[ne] = (i), ja[ne] = (j), ar[ne] = (v);                                          \
    } while (0)
    int row = 0;
    /* one decision per tensor: r + s <= 1 */
    for (int k = 0; k < D; k++) {
        row = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, GLP_UP, 0, 1);
        ILP_PUSH(row, k + 1, 1.0);
        ILP_PUSH(row, D + k + 1, 1.0);
    }
    /* memory at each position, in MB: Σ_gap bytes·(r+s) >= keep-all - cap */
    bool mem_infeasible = false;
    if (isfinite(m->cap)) {
        for (int p = 0; p < N; p++) {
            double full = m->base[p], freeable = 0;
            for (int k = 0; k < D; k++) {
                if (live_full(m, k, p)) full += m->bytes[k];
                if (live_full(m, k, p) && in_gap(m, k, p)) freeable += m->bytes[k];
            }
            double need = full - m->cap;
            if (need <= 0) continue;
            if (need > freeable) mem_infeasible = true;
            row = glp_add_rows(lp, 1);
            glp_set_row_bnds(lp, row, GLP_LO, need / 1e6, 0);
            for (int k = 0; k < D; k++)
                if (live_full(m, k, p) && in_gap(m, k, p)) {
                    ILP_PUSH(row, k + 1, m->bytes[k] / 1e6);
                    ILP_PUSH(row, D + k + 1, m->bytes[k] / 1e6);
                }
        }
    }
    /* H2D stream: stall - Σ_{fbr <= p} copy·s >= -compute before p */
    for (int p = nf; p < N; p++) {
        int any = 0;
        for (int k = 0; k < D; k++) any += m->can_sw[k] && m->fbr[k] <= p;
        if (!any) continue;
        row = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, GLP_LO, -m->bwd_before[p], 0);
        ILP_PUSH(row, 2 * D + 1, 1.0);
        for (int k = 0; k < D; k++)
            if (m->can_sw[k] && m->fbr[k] <= p) ILP_PUSH(row, D + k + 1, -m->copy[k]);
    }
#undef ILP_PUSH
    r->n_vars = 2 * D + 1;
    r->n_rows = glp_get_num_rows(lp);
    if (ne > 0) glp_load_matrix(lp, (int)ne, ia, ja, ar);
    oc_free(ia);
    oc_free(ja);
    oc_free(ar);
    r->decision = oc_calloc((size_t)m->tg->g->n_tensors + 1, 1);
    if (mem_infeasible) { /* some position cannot fit even with every gap freed */
        glp_delete_prob(lp);
        return OC_OK;
    }
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    if (time_limit_s > 0) parm.tm_lim = (int)(time_limit_s * 1000);
    int rc = glp_intopt(lp, &parm);
    if (rc != 0 && rc != GLP_ETMLIM && rc != GLP_ENOPFS && rc != GLP_ENODFS) {
        glp_delete_prob(lp);
        return oc_fail(err, "ilp: GLPK glp_intopt failed with code %d", rc);
    }
    int st = glp_mip_status(lp);
    r->feasible = st == GLP_OPT || st == GLP_FEAS;
    r->optimal = st == GLP_OPT && rc == 0;
    if (r->feasible) {
        r->objective_s = glp_mip_obj_val(lp);
        for (int k = 0; k < D; k++) {
            int t = m->dec[k];
            if (glp_mip_col_val(lp, k + 1) > 0.5) r->decision[t] = SIM_DECISION_RECOMPUTE;
            else if (glp_mip_col_val(lp, D + k + 1) > 0.5) r->decision[t] = SIM_DECISION_SWAP;
        }
    }
    glp_delete_prob(lp);
    return OC_OK;
}

void ilp_result_free(ilp_result *r) {
    oc_free(r->decision);
    r->decision = NULL;
}

void ilp_plan(const ilp_model *m, const ilp_result *r, sim_plan *plan) {
    sim_plan_keep_all(plan);
    if (!r->feasible) return;
    for (int k = 0; k < m->n_dec; k++) {
        int t = m->dec[k];
        sim_decision d = (sim_decision)r->decision[t];
        if (d == SIM_DECISION_KEEP) continue;
        int at = -1;
        if (d == SIM_DECISION_SWAP) {
            int lo = strategy_tinfo_issue_lo(m->ti, t);
            at = m->fbr[k] - 1 > lo ? m->fbr[k] - 1 : lo;
            if (at > m->fbr[k]) at = m->fbr[k];
        }
        sim_plan_set(plan, t, d, at);
    }
}

static int ilp_strategy_plan(const strategy_input *in, sim_plan *out, strategy_stats *st,
                             oc_err *err) {
    ilp_model *m;
    if (ilp_model_new(in, &m, err)) return OC_ERR;
    ilp_result r;
    if (ilp_solve(m, 60.0, &r, err)) {
        ilp_model_free(m);
        return OC_ERR;
    }
    ilp_plan(m, &r, out);
    if (r.feasible)
        strategy_note(st, "MILP %s: model time %.6g s (%d vars, %d rows)",
                      r.optimal ? "optimal" : "time limit, best found", r.objective_s, r.n_vars,
                      r.n_rows);
    else
        strategy_note(st, "MILP infeasible under the budget");
    ilp_result_free(&r);
    ilp_model_free(m);
    return OC_OK;
}

const strategy strategy_ilp = {
    .name = "ilp",
    .summary = "optimality oracle: keep/swap/recompute MILP on GLPK (graphs <= ~100 nodes)",
    .plan = ilp_strategy_plan,
};
