/* ilp_oracle.c — the keep/swap/recompute MILP (ilp_oracle.h): written into a
 * GLPK problem object (a convenient sparse model), solved by CBC.
 *
 * Units inside the LP: milliseconds and megabytes (keeps the solvers'
 * tolerances meaningful). The model's tables are built once (ilp_model_new);
 * ilp_solve writes the MILP from them and ilp_model_eval evaluates one plan
 * under the same equations, so tests can compare the two. */
#include "search/ilp_oracle.h"

#include <coin/Cbc_C_Interface.h>
#include <float.h>
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/strategy_sched.h"

/* "Early need": when every decision on a path k = a0 → a1 → … (each a_{i+1}
 * read by a_i's recompute chain) is RECOMPUTE, the recompute of k at
 * pos = fbr(k) needs target: recomputed there too (rc: target live from pos)
 * or swapped in by then (swap: issue point <= pos). */
typedef struct ilp_cond {
    int target, pos;
    bool swap;
    int path_off, path_len; /* into path_idx */
} ilp_cond;

#define ILP_MAX_PATH 8 /* deeper recompute chains are clamped (documented) */
#define ILP_MAX_CONDS 20000

struct ilp_model {
    const train_graph *tg;
    strategy_tinfo *ti;
    int N, nf;        /* positions; forward side [0, nf) as the simulator's */
    double *tm;       /* per node, ms */
    double *P;        /* per position: ideal start, ms (N + 1 entries) */
    double ideal;     /* ms */
    double in_wait;   /* ms: the first node waits for the step's batch to be copied in */
    double in_busy;   /* ms: the H2D queue copies the batch and labels before any swap-in */
    double cap;       /* MB (INFINITY when unlimited) */
    double *keep_mem; /* per position: all-keep memory, MB */
    double *pre_mem;  /* per position: keep_mem less the node's outputs and workspace */
    double *rc_mb;    /* per decision: recompute transients (re-run intermediates), MB */
    int D;
    int *dec;             /* decision tensors */
    double *mb;           /* per decision: MB */
    int *flast, *fbr;     /* per decision: last forward reader (or producer), first bwd reader */
    double *c_in, *c_out; /* per decision: H2D / D2H copy time, ms */
    double *g_ub;         /* per decision: latest possible D2H end, ms */
    bool *can_rc, *can_sw;
    int *h2d_order, *d2h_order; /* decisions in H2D / D2H queue order */
    int *chain_off, *chain_idx; /* per decision: forward nodes re-run (CSR) */
    ilp_cond *conds;
    int n_conds;
    int *path_idx;
    int *din_off, *din_idx; /* per decision: decisions its chain reads (>= 0) or
                               materializes as a sibling output (-1 - j) */
    int *dec_of;            /* per tensor: decision index or -1 */
};

static bool gap(const ilp_model *m, int k, int p) { return p > m->flast[k] && p < m->fbr[k]; }

/* qsort_r comparators; context: the model. */
static int cmp_h2d(const void *a, const void *b, void *ctx) {
    int ka = *(const int *)a, kb = *(const int *)b;
    const ilp_model *m = ctx;
    int pa = m->tg->g->tensors[m->dec[ka]].producer, pb = m->tg->g->tensors[m->dec[kb]].producer;
    if (m->fbr[ka] != m->fbr[kb]) return m->fbr[ka] < m->fbr[kb] ? -1 : 1;
    if (pa != pb) return pa < pb ? -1 : 1;
    return m->dec[ka] < m->dec[kb] ? -1 : m->dec[ka] > m->dec[kb];
}
static int cmp_d2h(const void *a, const void *b, void *ctx) {
    int ka = *(const int *)a, kb = *(const int *)b;
    const ilp_model *m = ctx;
    int pa = m->tg->g->tensors[m->dec[ka]].producer, pb = m->tg->g->tensors[m->dec[kb]].producer;
    if (pa != pb) return pa < pb ? -1 : 1;
    return m->dec[ka] < m->dec[kb] ? -1 : m->dec[ka] > m->dec[kb];
}

/* Forward nodes re-run to recompute through node n (n itself, then producers
 * of the non-saved forward activations it reads); saved decision inputs met on
 * the way go to ins. mark: per node, visited. */
static void chain_walk(const ilp_model *m, const bool *saved, int n, char *mark, int *nodes,
                       int *n_nodes, int *ins, int *n_ins) {
    const train_graph *tg = m->tg;
    if (mark[n]) return;
    mark[n] = 1;
    nodes[(*n_nodes)++] = n;
    const ir_node *nd = &tg->g->nodes[n];
    for (int i = 0; i < nd->n_inputs; i++) {
        int u = nd->inputs[i];
        if (u < 0 || train_tensor_persistent(tg, u)) continue;
        int p = tg->g->tensors[u].producer;
        if (p < 0 || p >= tg->n_forward) continue;
        if (!saved[u]) chain_walk(m, saved, p, mark, nodes, n_nodes, ins, n_ins);
        else if (m->dec_of[u] >= 0) ins[(*n_ins)++] = m->dec_of[u];
    }
}

typedef struct cond_builder {
    ilp_model *m;
    size_t cap_conds, cap_path;
    int n_path;
    int path[ILP_MAX_PATH];
} cond_builder;

static void cond_add(cond_builder *cb, int target, int pos, bool swap, int len) {
    ilp_model *m = cb->m;
    if (m->n_conds >= ILP_MAX_CONDS) return;
    oc_grow((void **)&m->conds, &cb->cap_conds, (size_t)m->n_conds + 1, sizeof *m->conds);
    oc_grow((void **)&m->path_idx, &cb->cap_path, (size_t)cb->n_path + (size_t)len + 1,
            sizeof(int));
    m->conds[m->n_conds++] = (ilp_cond){target, pos, swap, cb->n_path, len};
    for (int i = 0; i < len; i++) m->path_idx[cb->n_path++] = cb->path[i];
}

/* Paths of recomputed decisions from path[0] (length len); see ilp_cond. */
static void cond_walk(cond_builder *cb, int len) {
    ilp_model *m = cb->m;
    int k = cb->path[0], a = cb->path[len - 1], pos = m->fbr[k];
    for (int i = m->din_off[a]; i < m->din_off[a + 1]; i++) {
        bool sibling = m->din_idx[i] < 0;
        int j = sibling ? -1 - m->din_idx[i] : m->din_idx[i];
        if (m->fbr[j] <= pos) continue; /* needed by then anyway */
        if (!sibling && m->can_sw[j]) cond_add(cb, j, pos, true, len);
        if (!m->can_rc[j]) continue;
        cond_add(cb, j, pos, false, len);
        if (!sibling && len < ILP_MAX_PATH) {
            cb->path[len] = j;
            cond_walk(cb, len + 1);
        }
    }
}

static void conds_build(ilp_model *m) {
    cond_builder cb = {.m = m, .cap_conds = 8, .cap_path = 8};
    m->conds = oc_malloc(cb.cap_conds * sizeof *m->conds);
    m->path_idx = oc_malloc(cb.cap_path * sizeof(int));
    for (int k = 0; k < m->D; k++) {
        if (!m->can_rc[k]) continue;
        cb.path[0] = k;
        cond_walk(&cb, 1);
    }
}

/* True when every decision on c's path is RECOMPUTE (r: per decision). */
static bool cond_active(const ilp_model *m, const ilp_cond *c, const char *r) {
    for (int i = 0; i < c->path_len; i++)
        if (!r[m->path_idx[c->path_off + i]]) return false;
    return true;
}

int ilp_model_new(const strategy_input *in, ilp_model **out, oc_err *err) {
    const train_graph *tg = in->tg;
    const ir_graph *g = tg->g;
    int N = g->n_nodes, NT = g->n_tensors;
    if (in->opts.max_nodes_exact > 0 && N > in->opts.max_nodes_exact)
        return oc_fail(err,
                       "ilp: the training graph has %d nodes, more than the oracle's "
                       "limit of %d",
                       N, in->opts.max_nodes_exact);
    double *tm_s = oc_calloc((size_t)N + 1, sizeof *tm_s);
    int64_t *ws = oc_calloc((size_t)N + 1, sizeof *ws);
    if (in->prof) {
        if (profile_node_costs(in->prof, tg, "ilp profile", tm_s, ws, err)) {
            oc_free(tm_s);
            oc_free(ws);
            return OC_ERR;
        }
    } else {
        memcpy(tm_s, sim_context_node_times(in->ctx), (size_t)N * sizeof *tm_s);
    }
    for (int i = 0; i < N; i++) /* the arena's region, as the simulator counts it */
        ws[i] = ir_device_align_up(ws[i]);
    ilp_model *m = oc_calloc(1, sizeof *m);
    m->tg = tg;
    m->N = N;
    m->ti = strategy_tinfo_new(tg);
    m->nf = m->ti->n_fwd;
    m->tm = oc_calloc((size_t)N + 1, sizeof *m->tm);
    m->P = oc_calloc((size_t)N + 2, sizeof *m->P);
    for (int p = 0; p < N; p++) {
        m->tm[p] = tm_s[p] * 1e3;
        m->P[p + 1] = m->P[p] + m->tm[p];
    }
    m->ideal = m->P[N];
    m->cap = in->sim.budget_bytes > 0 ? (double)(in->sim.budget_bytes - in->sim.reserve_bytes) / 1e6
                                      : INFINITY;
    bool *saved = oc_calloc((size_t)NT + 1, sizeof *saved);
    for (int i = 0; i < tg->n_saved; i++) saved[tg->saved[i]] = true;
    /* Decisions. */
    m->dec_of = oc_malloc(((size_t)NT + 1) * sizeof *m->dec_of);
    for (int t = 0; t < NT; t++) m->dec_of[t] = -1;
    m->dec = oc_malloc(((size_t)tg->n_saved + 1) * sizeof *m->dec);
    for (int i = 0; i < tg->n_saved; i++) {
        int t = tg->saved[i];
        int p = g->tensors[t].producer;
        if (train_tensor_persistent(tg, t) || m->ti->bytes[t] <= 0) continue;
        /* graph inputs (no producer) can be swapped, as the simulator does */
        if (p < tg->n_forward && m->ti->first_bwd[t] >= 0 &&
            (m->ti->can_rc[t] || m->ti->swappable[t])) {
            m->dec_of[t] = m->D;
            m->dec[m->D++] = t;
        }
    }
    int D = m->D;
    m->mb = oc_calloc((size_t)D + 1, sizeof *m->mb);
    m->flast = oc_calloc((size_t)D + 1, sizeof *m->flast);
    m->fbr = oc_calloc((size_t)D + 1, sizeof *m->fbr);
    m->c_in = oc_calloc((size_t)D + 1, sizeof *m->c_in);
    m->c_out = oc_calloc((size_t)D + 1, sizeof *m->c_out);
    m->g_ub = oc_calloc((size_t)D + 1, sizeof *m->g_ub);
    m->can_rc = oc_calloc((size_t)D + 1, sizeof *m->can_rc);
    m->can_sw = oc_calloc((size_t)D + 1, sizeof *m->can_sw);
    m->h2d_order = oc_calloc((size_t)D + 1, sizeof(int));
    m->d2h_order = oc_calloc((size_t)D + 1, sizeof(int));
    /* All-keep memory per position, as simulator.c counts it. */
    m->keep_mem = oc_calloc((size_t)N + 1, sizeof *m->keep_mem);
    m->pre_mem = oc_calloc((size_t)N + 1, sizeof *m->pre_mem);
    m->rc_mb = oc_calloc((size_t)D + 1, sizeof *m->rc_mb);
    double persistent = 0;
    double *delta = oc_calloc((size_t)N + 2, sizeof *delta);
    /* An in-place view's output is its source's storage (train_view_source), which lives to
     * the last reader of either: the simulator's all-keep count. */
    int *root = oc_malloc((size_t)NT * sizeof *root), *last = oc_malloc((size_t)NT * sizeof *last);
    for (int t = 0; t < NT; t++) {
        const ir_tensor *x = &g->tensors[t];
        root[t] = t;
        last[t] = x->producer >= 0 ? x->producer : 0;
        for (int c = 0; c < x->n_consumers; c++)
            if (x->consumers[c] > last[t]) last[t] = x->consumers[c];
        if (x->is_graph_output) last[t] = N - 1;
    }
    for (int i = 0; i < N; i++) {
        int src = train_view_source(tg, i);
        if (src < 0) continue;
        int v = g->nodes[i].outputs[0];
        root[v] = root[src];
        if (last[v] > last[root[v]]) last[root[v]] = last[v];
    }
    for (int t = 0; t < NT; t++) {
        const ir_tensor *x = &g->tensors[t];
        int64_t b;
        if (root[t] != t || !ir_tensor_device_bytes(x, &b) || b == 0) continue;
        if (train_tensor_persistent(tg, t)) {
            if (tg->alias_of[t] < 0) persistent += (double)b;
            continue;
        }
        if (x->producer < 0 && !x->is_graph_input) continue; /* never allocated */
        int def = x->producer >= 0 ? x->producer : 0;
        if (x->producer >= 0) m->pre_mem[x->producer] -= (double)b / 1e6;
        delta[def] += (double)b;
        delta[last[t] + 1] -= (double)b;
    }
    oc_free(root);
    oc_free(last);
    double acc = 0;
    for (int p = 0; p < N; p++) {
        acc += delta[p];
        m->keep_mem[p] = (acc + persistent + (double)ws[p]) / 1e6;
        m->pre_mem[p] += (acc + persistent) / 1e6;
    }
    oc_free(delta);
    /* Per decision. */
    const profile_device *dev = in->prof ? &in->prof->device : NULL;
    double bw_in = dev ? dev->h2d_bytes_per_s : 0, bw_out = dev ? dev->d2h_bytes_per_s : 0;
    double lat = dev ? dev->copy_latency_s : 0;
    /* The step's inputs, first on the H2D queue as the simulator has them. */
    for (int i = 0; i < g->n_inputs && bw_in > 0; i++) {
        int t = g->inputs[i];
        int64_t b;
        if (!ir_tensor_bytes(&g->tensors[t], &b) || b == 0) continue;
        m->in_busy += (lat + (double)b / bw_in) * 1e3;
        for (int c = 0; c < g->tensors[t].n_consumers; c++)
            if (g->tensors[t].consumers[c] == 0) m->in_wait = m->in_busy;
    }
    for (int k = 0; k < D; k++) {
        int t = m->dec[k];
        double b = (double)m->ti->copy_bytes[t];
        m->mb[k] = (double)m->ti->bytes[t] / 1e6;
        m->flast[k] = m->ti->fwd_last[t];
        m->fbr[k] = m->ti->first_bwd[t];
        m->can_rc[k] = m->ti->can_rc[t];
        m->can_sw[k] = m->ti->swappable[t] && bw_in > 0 && bw_out > 0;
        m->c_in[k] = bw_in > 0 ? (lat + b / bw_in) * 1e3 : 0;
        m->c_out[k] = bw_out > 0 ? (lat + b / bw_out) * 1e3 : 0;
        m->h2d_order[k] = m->d2h_order[k] = k;
    }
    qsort_r(m->h2d_order, (size_t)D, sizeof(int), cmp_h2d, m);
    qsort_r(m->d2h_order, (size_t)D, sizeof(int), cmp_d2h, m);
    double gu = 0;
    for (int i = 0; i < D; i++) {
        int k = m->d2h_order[i];
        if (!m->can_sw[k]) continue;
        int def = g->tensors[m->dec[k]].producer;
        gu = fmax(gu, m->P[def + 1]) + m->c_out[k];
        m->g_ub[k] = gu;
    }
    /* Recompute chains, early materialization. */
    m->chain_off = oc_calloc((size_t)D + 1, sizeof(int));
    int cap_idx = 16;
    m->chain_idx = oc_malloc((size_t)cap_idx * sizeof(int));
    char *mark = oc_calloc((size_t)N + 1, 1);
    int *nodes = oc_malloc(((size_t)N + 1) * sizeof(int));
    size_t n_io = 1;
    for (int n = 0; n < N; n++)
        n_io += (size_t)g->nodes[n].n_inputs + (size_t)g->nodes[n].n_outputs;
    int *ins = oc_malloc(n_io * sizeof(int));
    m->din_off = oc_calloc((size_t)D + 1, sizeof(int));
    size_t cap_din = 16;
    m->din_idx = oc_malloc(cap_din * sizeof(int));
    int n_din = 0;
    int n_idx = 0;
    for (int k = 0; k < D; k++) {
        m->chain_off[k] = n_idx;
        m->din_off[k] = n_din;
        if (!m->can_rc[k]) continue;
        int nn = 0, ni = 0;
        memset(mark, 0, (size_t)N + 1);
        chain_walk(m, saved, g->tensors[m->dec[k]].producer, mark, nodes, &nn, ins, &ni);
        /* Saved decision outputs of re-run nodes are materialized with them. */
        for (int i = 0; i < nn; i++) {
            const ir_node *nd = &g->nodes[nodes[i]];
            for (int o = 0; o < nd->n_outputs; o++) {
                int y = nd->outputs[o];
                if (y >= 0 && m->dec_of[y] >= 0 && m->dec_of[y] != k) ins[ni++] = -1 - m->dec_of[y];
            }
        }
        while (n_idx + nn > cap_idx) {
            cap_idx *= 2;
            m->chain_idx = oc_realloc(m->chain_idx, (size_t)cap_idx * sizeof(int));
        }
        for (int i = 0; i < nn; i++) m->chain_idx[n_idx++] = nodes[i];
        /* Transients of the recompute ops: re-run intermediates, all at once. */
        double inter = 0, wmax = 0;
        for (int i = 0; i < nn; i++) {
            wmax = fmax(wmax, (double)ws[nodes[i]]);
            if (i == 0) continue; /* the producer of x itself */
            const ir_node *nd = &g->nodes[nodes[i]];
            for (int o = 0; o < nd->n_outputs; o++) {
                int y = nd->outputs[o];
                if (y >= 0 && !saved[y] && !train_tensor_persistent(tg, y))
                    inter += (double)m->ti->bytes[y];
            }
        }
        m->rc_mb[k] = (inter + wmax) / 1e6;
        for (int i = 0; i < ni; i++) {
            oc_grow((void **)&m->din_idx, &cap_din, (size_t)n_din + 1, sizeof(int));
            m->din_idx[n_din++] = ins[i];
        }
    }
    m->chain_off[D] = n_idx;
    m->din_off[D] = n_din;
    conds_build(m);
    oc_free(mark);
    oc_free(nodes);
    oc_free(ins);
    oc_free(saved);
    oc_free(tm_s);
    oc_free(ws);
    *out = m;
    return OC_OK;
}

void ilp_model_free(ilp_model *m) {
    if (!m) return;
    strategy_tinfo_free(m->ti);
    void *p[] = {m->tm,     m->P,        m->keep_mem,  m->pre_mem,   m->rc_mb,     m->dec,
                 m->mb,     m->flast,    m->fbr,       m->c_in,      m->c_out,     m->g_ub,
                 m->can_rc, m->can_sw,   m->h2d_order, m->d2h_order, m->chain_off, m->chain_idx,
                 m->conds,  m->path_idx, m->din_off,   m->din_idx,   m->dec_of};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) oc_free(p[i]);
    oc_free(m);
}

/* ---- evaluation of one plan ------------------------------------------- */

/* Issue position of decision k's swap-in under plan (in [flast+1, fbr]),
 * moved to an earlier need by a recompute chain (as strategy_tinfo_clamp_issue). */
static int plan_issue(const ilp_model *m, const sim_plan *plan, const char *r, int k) {
    int at = plan->swap_in_at[m->dec[k]];
    if (at < 0 || at > m->fbr[k]) at = m->fbr[k];
    for (int i = 0; i < m->n_conds; i++) {
        const ilp_cond *c = &m->conds[i];
        if (c->target == k && c->swap && c->pos < at && cond_active(m, c, r)) at = c->pos;
    }
    if (at <= m->flast[k]) at = m->flast[k] + 1;
    return at;
}

void ilp_model_eval(const ilp_model *m, const sim_plan *plan, ilp_eval *ev, double *mem) {
    int D = m->D, N = m->N, nf = m->nf;
    const train_graph *tg = m->tg;
    memset(ev, 0, sizeof *ev);
    char *r = oc_calloc((size_t)D + 1, 1), *s = oc_calloc((size_t)D + 1, 1);
    for (int k = 0; k < D; k++) {
        sim_decision d = (sim_decision)plan->decision[m->dec[k]];
        r[k] = d == SIM_DECISION_RECOMPUTE && m->can_rc[k];
        s[k] = d == SIM_DECISION_SWAP && m->can_sw[k];
    }
    /* Recompute time: each chain node once. */
    char *x = oc_calloc((size_t)N + 1, 1);
    double rc = 0;
    for (int k = 0; k < D; k++)
        if (r[k])
            for (int i = m->chain_off[k]; i < m->chain_off[k + 1]; i++) x[m->chain_idx[i]] = 1;
    for (int n = 0; n < N; n++)
        if (x[n]) rc += m->tm[n];
    double *G = oc_calloc((size_t)D + 1, sizeof *G), *E = oc_calloc((size_t)D + 1, sizeof *E);
    double g = 0;
    int gi = 0; /* next decision in D2H order whose end is not known yet */
    /* One walk over positions with the least stalls: H2D copies in queue order
     * (a node waits for its swap-ins), then memory at the node's start; in
     * backward a node that does not fit waits for pending D2H copies (the
     * fewest, in order of their ends) as the simulator's allocation does. */
    double *Q = oc_calloc((size_t)N + 1, sizeof *Q); /* Q[p]: stall before node p */
    double *ends = oc_calloc((size_t)D + 1, sizeof *ends);
    int hi = 0;
    double e = m->in_busy, q = m->in_wait;
    ev->fits = true;
    ev->worst_node = -1;
    for (int p = 0; p < N; p++) {
        /* D2H ends of copies whose producer ran before p (producer end = ideal
         * end + its stall). */
        while (gi < D && tg->g->tensors[m->dec[m->d2h_order[gi]]].producer < p) {
            int k = m->d2h_order[gi++], def = tg->g->tensors[m->dec[k]].producer;
            if (s[k]) g = fmax(g, m->P[def + 1] + (def >= 0 ? Q[def] : 0)) + m->c_out[k];
            G[k] = g;
        }
        if (p >= nf)
            while (hi < D && m->fbr[m->h2d_order[hi]] <= p) {
                int k = m->h2d_order[hi++];
                if (s[k]) {
                    int i = plan_issue(m, plan, r, k);
                    double issue_t = m->P[i] + (i > 0 ? Q[i - 1] : 0);
                    e = fmax(fmax(e, issue_t), G[k]) + m->c_in[k];
                    if (e - m->P[p] > q) q = e - m->P[p];
                }
                E[k] = e;
            }
        double T = m->P[p] + q, mm = m->keep_mem[p];
        int n_ends = 0;
        for (int k = 0; k < D; k++) {
            if (!gap(m, k, p) || !(r[k] || s[k])) continue;
            mm -= m->mb[k];
            if (s[k]) {
                if (plan_issue(m, plan, r, k) <= p) mm += m->mb[k];
                if (G[k] > T) {
                    mm += m->mb[k];
                    ends[n_ends++] = G[k];
                }
            } else {
                bool live = false;
                for (int j = 0; j < m->n_conds && !live; j++) {
                    const ilp_cond *c = &m->conds[j];
                    live = c->target == k && !c->swap && c->pos <= p && cond_active(m, c, r);
                }
                if (live) mm += m->mb[k];
            }
        }
        /* the recompute ops before node p peak at mm + their transients - the
         * node's own outputs and workspace */
        double rc_extra = 0;
        for (int k = 0; k < D; k++)
            if (r[k] && m->fbr[k] == p)
                rc_extra = fmax(rc_extra, m->rc_mb[k] - (m->keep_mem[p] - m->pre_mem[p]));
        if (mm + rc_extra > m->cap * (1 + 1e-9) + 1e-9) {
            /* wait for D2H ends, earliest first, until it fits */
            for (int a = 0; a < n_ends && mm + rc_extra > m->cap * (1 + 1e-9) + 1e-9; a++) {
                int best = a;
                for (int b2 = a + 1; b2 < n_ends; b2++)
                    if (ends[b2] < ends[best]) best = b2;
                double tmp = ends[a];
                ends[a] = ends[best];
                ends[best] = tmp;
                double t_new = ends[a];
                for (int k = 0; k < D; k++) /* every copy ending by then frees */
                    if (gap(m, k, p) && s[k] && G[k] > T && G[k] <= t_new) mm -= m->mb[k];
                T = t_new;
                if (T - m->P[p] > q) q = T - m->P[p];
            }
        }
        Q[p] = q;
        for (int k = 0; k < D; k++) /* recompute transients before node p */
            if (r[k] && m->fbr[k] == p) {
                double rm = mm - (m->keep_mem[p] - m->pre_mem[p]) + m->rc_mb[k];
                if (rm > m->cap * (1 + 1e-9) + 1e-9) ev->fits = false;
                if (rm > ev->worst_bytes / 1e6) {
                    ev->worst_node = p;
                    ev->worst_bytes = rm * 1e6;
                }
            }
        if (mem) mem[p] = mm * 1e6;
        if (ev->worst_node < 0 || mm > ev->worst_bytes / 1e6) {
            ev->worst_node = p;
            ev->worst_bytes = mm * 1e6;
        }
        if (mm > m->cap * (1 + 1e-9) + 1e-9) ev->fits = false;
    }
    ev->recompute_s = rc / 1e3;
    ev->stall_s = (N > 0 ? Q[N - 1] : 0) / 1e3;
    ev->time_s = (m->ideal + rc) / 1e3 + ev->stall_s;
    oc_free(ends);
    oc_free(r);
    oc_free(s);
    oc_free(x);
    oc_free(G);
    oc_free(E);
    oc_free(Q);
}

bool ilp_model_cost(const ilp_model *m, const sim_plan *plan, double *time_s) {
    ilp_eval ev;
    ilp_model_eval(m, plan, &ev, NULL);
    *time_s = ev.time_s;
    /* The model has no CHECKPOINT decisions (every unsaved input of a recompute
     * re-runs), so it cannot price a plan that keeps one. */
    for (int t = 0; t < plan->n_tensors; t++)
        if (plan->decision[t] == SIM_DECISION_CHECKPOINT) return false;
    return ev.fits;
}

/* ---- the MILP ------------------------------------------------------------ */

typedef struct lp_builder {
    glp_prob *lp;
    int *ia, *ja;
    double *ar;
    size_t ne, cap;
} lp_builder;

static void lp_push(lp_builder *b, int i, int j, double v) {
    if (v == 0) return;
    if (b->ne + 2 > b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->ia = oc_realloc(b->ia, b->cap * sizeof *b->ia);
        b->ja = oc_realloc(b->ja, b->cap * sizeof *b->ja);
        b->ar = oc_realloc(b->ar, b->cap * sizeof *b->ar);
    }
    b->ne++;
    b->ia[b->ne] = i, b->ja[b->ne] = j, b->ar[b->ne] = v;
}

static int lp_row(lp_builder *b, int type, double lo, double up) {
    int r = glp_add_rows(b->lp, 1);
    glp_set_row_bnds(b->lp, r, type, lo, up);
    return r;
}

static int lp_col(lp_builder *b, int kind, int type, double lo, double up, double obj) {
    int c = glp_add_cols(b->lp, 1);
    glp_set_col_kind(b->lp, c, kind);
    if (kind != GLP_BV) glp_set_col_bnds(b->lp, c, type, lo, up);
    glp_set_obj_coef(b->lp, c, obj);
    return c;
}

/* Pushes the decision terms of position p's memory row. */
static void mem_terms(const ilp_model *m, lp_builder *b, int row, int p, const int *cr,
                      const int *cs, const int *cy, const int *cz, const int *cw) {
    int N = m->N;
    for (int k = 0; k < m->D; k++) {
        if (!gap(m, k, p)) continue;
        if (cr[k]) lp_push(b, row, cr[k], -m->mb[k]);
        if (cw[k * N + p]) lp_push(b, row, cw[k * N + p], m->mb[k]);
        if (!cs[k]) continue;
        lp_push(b, row, cs[k], -m->mb[k]);
        for (int i = m->flast[k] + 1; i <= p; i++)
            lp_push(b, row, cy[k] + i - (m->flast[k] + 1), m->mb[k]);
        if (cz[k * N + p]) lp_push(b, row, cz[k * N + p], m->mb[k]);
    }
}

/* ---- CBC ----------------------------------------------------------------- */

typedef struct cbc_out {
    bool feasible, optimal, infeasible;
    double objective, bound; /* ms, with the objective's constant term */
    double *x;               /* column values (1-based like GLPK; owned) when feasible */
} cbc_out;

/* Solves lp (a GLPK problem used as the model's container) with CBC: one
 * thread (the answer must not depend on the machine but for the time limit),
 * start (1-based column values, may be NULL) as the MIP start, time_limit_s
 * (<= 0: none). */
static void cbc_solve(glp_prob *lp, const double *start, double time_limit_s, cbc_out *o) {
    memset(o, 0, sizeof *o);
    int nc = glp_get_num_cols(lp), nr = glp_get_num_rows(lp);
    CoinBigIndex *cstart = oc_calloc((size_t)nc + 1, sizeof *cstart);
    int nnz = glp_get_num_nz(lp);
    int *rind = oc_malloc(((size_t)nnz + 1) * sizeof *rind);
    double *rval = oc_malloc(((size_t)nnz + 1) * sizeof *rval);
    int *ind = oc_malloc(((size_t)nr + 1) * sizeof *ind);
    double *val = oc_malloc(((size_t)nr + 1) * sizeof *val);
    double *clo = oc_malloc(((size_t)nc + 1) * sizeof *clo),
           *cup = oc_malloc(((size_t)nc + 1) * sizeof *cup);
    double *obj = oc_malloc(((size_t)nc + 1) * sizeof *obj);
    double *rlo = oc_malloc(((size_t)nr + 1) * sizeof *rlo),
           *rup = oc_malloc(((size_t)nr + 1) * sizeof *rup);
    int pos = 0;
    for (int j = 1; j <= nc; j++) {
        cstart[j - 1] = pos;
        int len = glp_get_mat_col(lp, j, ind, val);
        for (int i = 1; i <= len; i++) {
            rind[pos] = ind[i] - 1;
            rval[pos++] = val[i];
        }
        int type = glp_get_col_type(lp, j);
        clo[j - 1] = type == GLP_FR || type == GLP_UP ? -DBL_MAX : glp_get_col_lb(lp, j);
        cup[j - 1] = type == GLP_FR || type == GLP_LO ? DBL_MAX : glp_get_col_ub(lp, j);
        obj[j - 1] = glp_get_obj_coef(lp, j);
    }
    cstart[nc] = pos;
    for (int i = 1; i <= nr; i++) {
        int type = glp_get_row_type(lp, i);
        rlo[i - 1] = type == GLP_FR || type == GLP_UP ? -DBL_MAX : glp_get_row_lb(lp, i);
        rup[i - 1] = type == GLP_FR || type == GLP_LO ? DBL_MAX : glp_get_row_ub(lp, i);
    }
    Cbc_Model *cm = Cbc_newModel();
    Cbc_loadProblem(cm, nc, nr, cstart, rind, rval, clo, cup, obj, rlo, rup);
    for (int j = 1; j <= nc; j++)
        if (glp_get_col_kind(lp, j) != GLP_CV) Cbc_setInteger(cm, j - 1);
    Cbc_setLogLevel(cm, 0);
    Cbc_setParameter(cm, "threads", "1");
    if (time_limit_s > 0) {
        Cbc_setMaximumSeconds(cm, time_limit_s);
        /* CBC 2.10's preprocessing, stopped by the time limit, can crash mapping the
         * solution back (CglPreProcess::postProcess reads a null pointer: seen under ASan,
         * where the limit falls there); without it the bound at a limit was no worse */
        Cbc_setParameter(cm, "preprocess", "off");
    }
    if (start) {
        int *idx = oc_malloc((size_t)nc * sizeof *idx);
        for (int j = 0; j < nc; j++) idx[j] = j;
        Cbc_setMIPStartI(cm, nc, idx, start + 1);
        oc_free(idx);
    }
    Cbc_solve(cm);
    double c0 = glp_get_obj_coef(lp, 0);
    const double *best = Cbc_bestSolution(cm);
    o->feasible = best != NULL;
    o->optimal = o->feasible && Cbc_isProvenOptimal(cm);
    o->infeasible = !o->feasible && Cbc_isProvenInfeasible(cm);
    o->bound = Cbc_getBestPossibleObjValue(cm) + c0;
    if (o->feasible) {
        o->objective = Cbc_getObjValue(cm) + c0;
        if (o->optimal || o->bound > o->objective) o->bound = o->objective;
        o->x = oc_malloc(((size_t)nc + 1) * sizeof *o->x);
        o->x[0] = 0;
        memcpy(o->x + 1, best, (size_t)nc * sizeof *best);
    }
    Cbc_deleteModel(cm);
    oc_free(cstart), oc_free(rind), oc_free(rval), oc_free(ind), oc_free(val);
    oc_free(clo), oc_free(cup), oc_free(obj), oc_free(rlo), oc_free(rup);
}

int ilp_solve(ilp_model *m, double time_limit_s, const sim_plan *warm, ilp_result *r, oc_err *err) {
    (void)err; /* CBC reports no failure it cannot put in r (no solution, no proof) */
    memset(r, 0, sizeof *r);
    int D = m->D, N = m->N;
    const train_graph *tg = m->tg;
    r->decision = oc_calloc((size_t)tg->g->n_tensors + 1, 1);
    r->issue = oc_malloc(((size_t)tg->g->n_tensors + 1) * sizeof(int));
    for (int t = 0; t < tg->g->n_tensors; t++) r->issue[t] = -1;
    double M = 2 * m->ideal + 1;
    for (int k = 0; k < D; k++) M += m->c_in[k] + m->c_out[k];
    glp_term_out(GLP_OFF);
    lp_builder b = {.lp = glp_create_prob()};
    glp_set_obj_dir(b.lp, GLP_MIN);
    glp_set_obj_coef(b.lp, 0, m->ideal);
    /* Columns. */
    int *cr = oc_calloc((size_t)D + 1, sizeof(int)), *cs = oc_calloc((size_t)D + 1, sizeof(int));
    int *cy = oc_calloc((size_t)D + 1, sizeof(int)); /* first y col; y_{k,i}: cy + i - (flast+1) */
    int *cG = oc_calloc((size_t)D + 1, sizeof(int)), *cE = oc_calloc((size_t)D + 1, sizeof(int));
    int *cz = oc_calloc((size_t)D * (size_t)N + 1, sizeof(int)); /* [k*N + p], 0: none */
    int *cw = oc_calloc((size_t)D * (size_t)N + 1, sizeof(int));
    int *cQ = oc_calloc((size_t)N + 1, sizeof(int));
    int *cx = oc_calloc((size_t)N + 1, sizeof(int));
    for (int k = 0; k < D; k++) {
        if (m->can_rc[k]) cr[k] = lp_col(&b, GLP_BV, 0, 0, 1, 0);
        if (!m->can_sw[k]) continue;
        cs[k] = lp_col(&b, GLP_BV, 0, 0, 1, 0);
        cy[k] = lp_col(&b, GLP_BV, 0, 0, 1, 0);
        for (int i = m->flast[k] + 2; i <= m->fbr[k]; i++) lp_col(&b, GLP_BV, 0, 0, 1, 0);
        cG[k] = lp_col(&b, GLP_CV, GLP_LO, 0, 0, 0);
        cE[k] = lp_col(&b, GLP_CV, GLP_LO, 0, 0, 0);
        for (int p = m->flast[k] + 1; p < m->fbr[k]; p++) {
            double T_lo = m->P[p];
            if (m->g_ub[k] > T_lo) cz[k * N + p] = lp_col(&b, GLP_BV, 0, 0, 1, 0);
        }
    }
    /* Q_p >= the wait for the step's batch (every node waits at least as long as node 0). */
    for (int p = 0; p < N; p++)
        cQ[p] = lp_col(&b, GLP_CV, GLP_LO, m->in_wait, 0, p == N - 1 ? 1 : 0);
    for (int k = 0; k < D; k++)
        for (int i = m->chain_off[k]; i < m->chain_off[k + 1]; i++) {
            int n = m->chain_idx[i];
            if (!cx[n]) cx[n] = lp_col(&b, GLP_CV, GLP_DB, 0, 1, m->tm[n]);
        }
    for (int j = 0; j < m->n_conds; j++) {
        const ilp_cond *t = &m->conds[j];
        if (t->swap) continue;
        for (int p = t->pos; p < m->fbr[t->target]; p++)
            if (gap(m, t->target, p) && !cw[t->target * N + p])
                cw[t->target * N + p] = lp_col(&b, GLP_CV, GLP_DB, 0, 1, 0);
    }
    int row;
    /* r + s <= 1; Σ_i y = s. */
    for (int k = 0; k < D; k++) {
        if (cr[k] && cs[k]) {
            row = lp_row(&b, GLP_UP, 0, 1);
            lp_push(&b, row, cr[k], 1);
            lp_push(&b, row, cs[k], 1);
        }
        if (!cs[k]) continue;
        row = lp_row(&b, GLP_FX, 0, 0);
        lp_push(&b, row, cs[k], -1);
        for (int i = m->flast[k] + 1; i <= m->fbr[k]; i++)
            lp_push(&b, row, cy[k] + i - (m->flast[k] + 1), 1);
    }
    /* Recompute chains: x_n >= r_k. Early materialization: w >= r_a + r_b - 1. */
    for (int k = 0; k < D; k++)
        for (int i = m->chain_off[k]; i < m->chain_off[k + 1]; i++) {
            row = lp_row(&b, GLP_LO, 0, 0);
            lp_push(&b, row, cx[m->chain_idx[i]], 1);
            lp_push(&b, row, cr[k], -1);
        }
    /* Early needs (ilp_cond): w >= r_target + Σ_path r - |path|;
     * Σ_{i > pos} y_target,i + Σ_path r <= |path|. */
    for (int j = 0; j < m->n_conds; j++) {
        const ilp_cond *t = &m->conds[j];
        int a = t->target;
        if (t->swap) {
            if (!cs[a]) continue;
            row = lp_row(&b, GLP_UP, 0, t->path_len);
            for (int i = t->pos + 1; i <= m->fbr[a]; i++)
                lp_push(&b, row, cy[a] + i - (m->flast[a] + 1), 1);
            for (int i = 0; i < t->path_len; i++)
                lp_push(&b, row, cr[m->path_idx[t->path_off + i]], 1);
            continue;
        }
        for (int p = t->pos; p < m->fbr[a]; p++) {
            if (!cw[a * N + p]) continue;
            row = lp_row(&b, GLP_LO, -t->path_len, 0);
            lp_push(&b, row, cw[a * N + p], 1);
            lp_push(&b, row, cr[a], -1);
            for (int i = 0; i < t->path_len; i++)
                lp_push(&b, row, cr[m->path_idx[t->path_off + i]], -1);
        }
    }
    /* D2H queue: G_k >= G_prev + c s; G_k >= end(producer) + c s. */
    int prev = -1;
    for (int o = 0; o < D; o++) {
        int k = m->d2h_order[o];
        if (!cs[k]) continue;
        int def = tg->g->tensors[m->dec[k]].producer;
        row = lp_row(&b, GLP_LO, m->P[def + 1], 0); /* G - Q_def - c s >= P_{def+1} */
        lp_push(&b, row, cG[k], 1);
        if (def >= 0) lp_push(&b, row, cQ[def], -1);
        lp_push(&b, row, cs[k], -m->c_out[k]);
        if (prev >= 0) {
            row = lp_row(&b, GLP_LO, 0, 0);
            lp_push(&b, row, cG[k], 1);
            lp_push(&b, row, cG[prev], -1);
            lp_push(&b, row, cs[k], -m->c_out[k]);
        }
        prev = k;
    }
    /* H2D queue: E_k >= E_prev + c s; E_k >= issue time + c (if y); E_k >= G_k + c (if s);
     * node fbr_k starts after E_k. */
    prev = -1;
    for (int o = 0; o < D; o++) {
        int k = m->h2d_order[o];
        if (!cs[k]) continue;
        if (prev >= 0) {
            row = lp_row(&b, GLP_LO, 0, 0);
            lp_push(&b, row, cE[k], 1);
            lp_push(&b, row, cE[prev], -1);
            lp_push(&b, row, cs[k], -m->c_in[k]);
        } else { /* the first swap-in queues behind the batch's copy: E >= (in_busy + c) s */
            row = lp_row(&b, GLP_LO, 0, 0);
            lp_push(&b, row, cE[k], 1);
            lp_push(&b, row, cs[k], -(m->in_busy + m->c_in[k]));
        }
        for (int i = m->flast[k] + 1; i <= m->fbr[k]; i++) {
            /* E - Q_{i-1} - M y >= P_i + c - M */
            row = lp_row(&b, GLP_LO, m->P[i] + m->c_in[k] - M, 0);
            lp_push(&b, row, cE[k], 1);
            if (i >= 1) lp_push(&b, row, cQ[i - 1], -1);
            lp_push(&b, row, cy[k] + i - (m->flast[k] + 1), -M);
        }
        row = lp_row(&b, GLP_LO, m->c_in[k] - M, 0);
        lp_push(&b, row, cE[k], 1);
        lp_push(&b, row, cG[k], -1);
        lp_push(&b, row, cs[k], -M);
        row = lp_row(&b, GLP_LO, -m->P[m->fbr[k]], 0); /* Q_fbr - E >= -P_fbr */
        lp_push(&b, row, cQ[m->fbr[k]], 1);
        lp_push(&b, row, cE[k], -1);
        prev = k;
    }
    for (int p = 1; p < N; p++) {
        row = lp_row(&b, GLP_LO, 0, 0);
        lp_push(&b, row, cQ[p], 1);
        lp_push(&b, row, cQ[p - 1], -1);
    }
    /* Device copy resident until its D2H ends: G - M z - Q_p + M s <= P_p + M. */
    for (int k = 0; k < D; k++)
        for (int p = m->flast[k] + 1; p < m->fbr[k]; p++) {
            int z = cz[k * N + p];
            if (!z) continue;
            row = lp_row(&b, GLP_UP, 0, m->P[p] + M);
            lp_push(&b, row, cG[k], 1);
            lp_push(&b, row, z, -M);
            lp_push(&b, row, cQ[p], -1);
            lp_push(&b, row, cs[k], M);
            if (p + 1 < m->fbr[k] && cz[k * N + p + 1]) { /* z non-increasing (valid cut) */
                row = lp_row(&b, GLP_LO, 0, 0);
                lp_push(&b, row, z, 1);
                lp_push(&b, row, cz[k * N + p + 1], -1);
            }
        }
    /* Memory: Σ_gap mb (-r - s + u + z + w) <= cap - keep_mem at every position;
     * before each recompute's node also with its transients (rows relaxed by
     * big-M when x is not recomputed). */
    bool hopeless = false;
    if (isfinite(m->cap)) {
        double all_mb = 0;
        for (int k = 0; k < D; k++) all_mb += m->mb[k];
        for (int p = 0; p < N; p++) {
            double freeable = 0;
            for (int k = 0; k < D; k++)
                if (gap(m, k, p) && (cr[k] || cs[k])) freeable += m->mb[k];
            double slack = m->cap - m->keep_mem[p];
            if (slack < -freeable - 1e-9) hopeless = true;
            if (slack < freeable) { /* else it can never bind */
                row = lp_row(&b, GLP_UP, 0, slack);
                mem_terms(m, &b, row, p, cr, cs, cy, cz, cw);
            }
            for (int k = 0; k < D; k++) {
                if (!cr[k] || m->fbr[k] != p) continue;
                double rslack = slack + (m->keep_mem[p] - m->pre_mem[p]);
                double big = fmax(0, all_mb - rslack) + 1;
                if (rslack >= freeable + m->rc_mb[k]) continue;
                row = lp_row(&b, GLP_UP, 0, rslack + big);
                mem_terms(m, &b, row, p, cr, cs, cy, cz, cw);
                lp_push(&b, row, cr[k], m->rc_mb[k] + big);
            }
        }
    }
    r->n_vars = glp_get_num_cols(b.lp);
    r->n_int_vars = glp_get_num_int(b.lp);
    r->n_rows = glp_get_num_rows(b.lp);
    if (b.ne > 0) glp_load_matrix(b.lp, (int)b.ne, b.ia, b.ja, b.ar);
    oc_free(b.ia);
    oc_free(b.ja);
    oc_free(b.ar);
    double t0 = strategy_now();
    cbc_out start = {0}, sol = {0};
    if (!hopeless && warm) { /* the warm plan's decisions fixed: the solver fills in the rest */
        glp_prob *fixed = glp_create_prob();
        glp_copy_prob(fixed, b.lp, GLP_OFF);
        for (int k = 0; k < D; k++) {
            int t = m->dec[k];
            sim_decision d = (sim_decision)warm->decision[t];
            if (cr[k]) glp_set_col_bnds(fixed, cr[k], GLP_FX, d == SIM_DECISION_RECOMPUTE, 0);
            if (!cs[k]) continue;
            glp_set_col_bnds(fixed, cs[k], GLP_FX, d == SIM_DECISION_SWAP, 0);
            int at = warm->swap_in_at[t] < 0 ? m->fbr[k] : warm->swap_in_at[t];
            at = at <= m->flast[k] ? m->flast[k] + 1 : at > m->fbr[k] ? m->fbr[k] : at;
            for (int i = m->flast[k] + 1; i <= m->fbr[k]; i++)
                glp_set_col_bnds(fixed, cy[k] + i - (m->flast[k] + 1), GLP_FX,
                                 d == SIM_DECISION_SWAP && i == at, 0);
        }
        double lim = time_limit_s > 0 ? fmin(10, time_limit_s / 4) : 10;
        cbc_solve(fixed, NULL, lim, &start);
        glp_delete_prob(fixed);
        r->warm_feasible = start.feasible;
        if (start.feasible) r->warm_s = start.objective / 1e3;
    }
    if (!hopeless) {
        double lim = time_limit_s > 0 ? fmax(1, time_limit_s - (strategy_now() - t0)) : 0;
        cbc_solve(b.lp, start.x, lim, &sol);
        r->feasible = sol.feasible;
        r->optimal = sol.optimal;
        r->infeasible = sol.infeasible;
        r->bound_s = sol.bound / 1e3;
    } else {
        r->infeasible = true; /* some position does not fit with every decision freed */
    }
    r->solve_s = strategy_now() - t0;
    if (r->feasible) {
        r->objective_s = sol.objective / 1e3;
        for (int k = 0; k < D; k++) {
            int t = m->dec[k];
            if (cr[k] && sol.x[cr[k]] > 0.5) {
                r->decision[t] = SIM_DECISION_RECOMPUTE;
            } else if (cs[k] && sol.x[cs[k]] > 0.5) {
                r->decision[t] = SIM_DECISION_SWAP;
                r->issue[t] = m->fbr[k];
                for (int i = m->flast[k] + 1; i <= m->fbr[k]; i++)
                    if (sol.x[cy[k] + i - (m->flast[k] + 1)] > 0.5) r->issue[t] = i;
            }
        }
    }
    oc_free(start.x);
    oc_free(sol.x);
    glp_delete_prob(b.lp);
    oc_free(cr), oc_free(cs), oc_free(cy), oc_free(cG), oc_free(cE);
    oc_free(cz), oc_free(cw), oc_free(cQ), oc_free(cx);
    return OC_OK;
}

void ilp_result_free(ilp_result *r) {
    oc_free(r->decision);
    oc_free(r->issue);
    r->decision = NULL;
    r->issue = NULL;
}

void ilp_plan(const ilp_model *m, const ilp_result *r, sim_plan *plan) {
    sim_plan_keep_all(plan);
    if (!r->feasible) return;
    int latest = -1; /* running max of issue points in H2D order */
    for (int o = 0; o < m->D; o++) {
        int k = m->h2d_order[o], t = m->dec[k];
        sim_decision d = (sim_decision)r->decision[t];
        if (d == SIM_DECISION_KEEP) continue;
        int at = -1;
        if (d == SIM_DECISION_SWAP) {
            at = r->issue[t] > latest ? r->issue[t] : latest;
            if (at > m->fbr[k]) at = m->fbr[k];
            latest = at;
        }
        sim_plan_set(plan, t, d, at);
    }
    strategy_tinfo_clamp_issue(m->ti, plan);
}

static int ilp_strategy_plan(const strategy_input *in, sim_plan *out, strategy_stats *st,
                             oc_err *err) {
    ilp_model *m;
    if (ilp_model_new(in, &m, err)) return OC_ERR;
    ilp_result r;
    double lim = in->opts.max_seconds > 0 ? in->opts.max_seconds : 60.0;
    if (ilp_solve(m, lim, NULL, &r, err)) {
        ilp_model_free(m);
        return OC_ERR;
    }
    ilp_plan(m, &r, out);
    if (r.feasible)
        strategy_note(st, "MILP %s: model time %.6g ms (%d vars, %d integer, %d rows, %.2f s)",
                      r.optimal ? "optimal" : "time limit, best found", r.objective_s * 1e3,
                      r.n_vars, r.n_int_vars, r.n_rows, r.solve_s);
    else
        strategy_note(st, "MILP infeasible under the budget%s",
                      r.solve_s > 0 ? ""
                                    : " (no "
                                      "position can fit even with every decision freed)");
    if (!r.optimal) st->bound_hit = r.feasible;
    ilp_result_free(&r);
    ilp_model_free(m);
    return OC_OK;
}

const strategy strategy_ilp = {
    .name = "ilp",
    .summary = "optimality oracle: keep/swap/recompute MILP on CBC (graphs <= ~100 nodes)",
    .plan = ilp_strategy_plan,
};
