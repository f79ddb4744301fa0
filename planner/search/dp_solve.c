/* dp_solve.c — DP over lower sets sorted by size, Pareto-pruned states. */
#include "search/dp_solve.h"

#include <string.h>

/* One transition i -> j (i ⊊ j) with its costs. */
typedef struct dp_edge {
    int from;
    double dt;
    int64_t dk, peak;
} dp_edge;

/* Transitions grouped by target (CSR: in_start[j] .. in_start[j+1]). */
struct dp_table {
    dp_family family;
    int count;
    int *in_start;
    dp_edge *edges;
    long n_edges;
};

typedef struct dp_state {
    double t;     /* overhead so far */
    int64_t m;    /* kept bytes so far */
    int64_t peak; /* peak so far (information, not part of dominance) */
    int from, from_state;
} dp_state;

typedef struct dp_front {
    dp_state *s;
    int n;
    size_t cap;
} dp_front;

/* Per lower set: its boundary, and the parts of P that depend on it alone. */
static void set_info(const dp_graph *g, const uint64_t *L2, uint64_t *bnd, int64_t *extra,
                     int64_t *mem, bool *full) {
    int W = g->words;
    uint64_t *A = oc_calloc((size_t)W * 2, sizeof *A), *Bs = A + W;
    memset(bnd, 0, (size_t)W * sizeof *bnd);
    int64_t mv = 0;
    int cnt = 0;
    for (int v = 0; v < g->n; v++) {
        if (!dp_set_has(L2, v)) continue;
        cnt++;
        mv += dp_mem_resident(g, v);
        const uint64_t *s = g->succ + (size_t)v * (size_t)W;
        bool b = false;
        for (int w = 0; w < W; w++) {
            uint64_t o = s[w] & ~L2[w];
            if (o) b = true;
            A[w] |= o;
        }
        if (b) dp_set_add(bnd, v);
    }
    for (int a = 0; a < g->n; a++)
        if (dp_set_has(A, a))
            for (int w = 0; w < W; w++)
                Bs[w] |= g->pred[(size_t)a * (size_t)W + (size_t)w] & ~L2[w];
    int64_t e = 0;
    for (int v = 0; v < g->n; v++)
        e += (dp_set_has(A, v) ? g->mem[v] : 0) + (dp_set_has(Bs, v) ? g->mem[v] : 0);
    *extra = e;
    *mem = mv;
    *full = cnt == g->n;
    oc_free(A);
}

static void table_build(const dp_graph *g, const dp_lowersets *ls, dp_table *t) {
    int F = ls->count, W = ls->words;
    uint64_t *bnd = oc_malloc((size_t)F * (size_t)W * sizeof *bnd);
    int64_t *extra = oc_malloc((size_t)F * sizeof *extra),
            *mem = oc_malloc((size_t)F * sizeof *mem);
    double *tint = oc_malloc((size_t)F * sizeof *tint); /* T(L ∖ ∂L) */
    int64_t *mbnd = oc_malloc((size_t)F * sizeof *mbnd);
    bool *full = oc_malloc((size_t)F * sizeof *full);
    for (int i = 0; i < F; i++) {
        const uint64_t *L = dp_lowersets_set(ls, i);
        uint64_t *b = bnd + (size_t)i * (size_t)W;
        set_info(g, L, b, &extra[i], &mem[i], &full[i]);
        tint[i] = 0;
        mbnd[i] = 0;
        for (int v = 0; v < g->n; v++)
            if (dp_set_has(L, v)) {
                if (dp_set_has(b, v)) mbnd[i] += dp_mem_resident(g, v);
                else tint[i] += g->time[v];
            }
    }
    t->count = F;
    t->in_start = oc_malloc(((size_t)F + 1) * sizeof *t->in_start);
    size_t cap = 0;
    t->edges = NULL;
    t->n_edges = 0;
    for (int j = 0; j < F; j++) {
        t->in_start[j] = (int)t->n_edges;
        const uint64_t *Lj = dp_lowersets_set(ls, j), *bj = bnd + (size_t)j * (size_t)W;
        /* steps of at most max_span sets, and from ∅ and into V always (∅ -> V among them) */
        int near = ls->max_span && j + 1 < F && j > ls->max_span ? j - ls->max_span : 1;
        for (int i = 0; i < j; i = i == 0 ? near : i + 1) {
            if (ls->size[i] >= ls->size[j]) break; /* sorted by size */
            const uint64_t *Li = dp_lowersets_set(ls, i);
            if (!dp_set_subset(Li, Lj, W, true)) continue;
            /* V' = Lj ∖ Li: K = ∂Lj ∖ Li, F = (Lj ∖ ∂Lj) ∖ Li. Subtract Li's part. */
            double dt = tint[j];
            int64_t dk = mbnd[j], mmax = 0;
            for (int w = 0; w < W; w++) {
                uint64_t x = Li[w];
                while (x) {
                    int v = w * 64 + __builtin_ctzll(x);
                    x &= x - 1;
                    if ((bj[w] >> (v & 63)) & 1u) dk -= dp_mem_resident(g, v);
                    else dt -= g->time[v];
                }
            }
            if (g->peak_model != DP_PEAK_PAPER) /* over V' = Lj ∖ Li */
                mmax = dp_lazy_block_peak(g, Li, Lj, bj);
            oc_grow((void **)&t->edges, &cap, (size_t)t->n_edges + 1, sizeof *t->edges);
            dp_edge *e = &t->edges[t->n_edges++];
            e->from = i;
            e->dt = full[j] ? 0 : (dt < 0 ? 0 : dt);
            e->dk = dk;
            e->peak = g->peak_model != DP_PEAK_PAPER ? mmax : 2 * (mem[j] - mem[i]) + extra[j];
        }
    }
    t->in_start[F] = (int)t->n_edges;
    oc_free(bnd);
    oc_free(extra);
    oc_free(mem);
    oc_free(tint);
    oc_free(mbnd);
    oc_free(full);
}

static void table_free(dp_table *t) {
    oc_free(t->in_start);
    oc_free(t->edges);
}

/* Feasibility DP: least kept memory reaching each set with every step's peak
 * within budget. True when V is reachable. */
static bool feasible_at(const dp_table *t, int64_t budget, int64_t *best) {
    best[0] = 0;
    for (int j = 1; j < t->count; j++) {
        best[j] = INT64_MAX;
        for (int k = t->in_start[j]; k < t->in_start[j + 1]; k++) {
            const dp_edge *e = &t->edges[k];
            if (best[e->from] == INT64_MAX || best[e->from] + e->peak > budget) continue;
            if (best[e->from] + e->dk < best[j]) best[j] = best[e->from] + e->dk;
        }
    }
    return best[t->count - 1] != INT64_MAX;
}

/* Keeps max states: the first, the last and evenly spaced ones between. */
static void front_thin(dp_front *f, int max) {
    if (f->n <= max || max < 2) return;
    int n = f->n;
    for (int k = 0; k < max; k++) {
        int src = (int)((long)k * (n - 1) / (max - 1));
        f->s[k] = f->s[src];
    }
    f->n = max;
}

/* f := the Pareto front of f and the states of src moved along edge e (those
 * within budget), in O(|f| + |src|): both lists are sorted by t ascending with
 * m strictly descending, so one merge and one sweep give what inserting the
 * states one at a time would (f's states first on equal (t, m), then src's in
 * order: the same front, the same survivors of ties). tmp: scratch, swapped
 * with f. */
static void front_merge(dp_front *f, const dp_front *src, const dp_edge *e, int64_t budget,
                        dp_front *tmp) {
    oc_grow((void **)&tmp->s, &tmp->cap, (size_t)(f->n + src->n) + 1, sizeof *tmp->s);
    tmp->n = 0;
    /* src's m descends: the states over budget are a prefix; skip it. */
    int a = 0, q = 0, hi = src->n;
    while (q < hi) {
        int mid = (q + hi) / 2;
        if (src->s[mid].m + e->peak > budget) q = mid + 1;
        else hi = mid;
    }
    while (a < f->n || q < src->n) {
        dp_state st;
        if (q < src->n) {
            const dp_state *p = &src->s[q];
            int64_t pk = p->m + e->peak;
            st = (dp_state){.t = p->t + e->dt,
                            .m = p->m + e->dk,
                            .peak = pk > p->peak ? pk : p->peak,
                            .from = e->from,
                            .from_state = q};
        }
        bool take_f = q >= src->n ||
                      (a < f->n && (f->s[a].t < st.t || (f->s[a].t == st.t && f->s[a].m <= st.m)));
        const dp_state *x = take_f ? &f->s[a++] : (q++, &st);
        if (tmp->n > 0 && tmp->s[tmp->n - 1].m <= x->m) continue; /* dominated */
        tmp->s[tmp->n++] = *x;
    }
    dp_front sw = *f;
    *f = *tmp;
    *tmp = sw;
}

static void solve_time(const dp_table *t, int64_t budget, int max_front, dp_solution *out) {
    int F = t->count;
    dp_front *fr = oc_calloc((size_t)F, sizeof *fr), tmp = {0};
    dp_state s0 = {.t = 0, .m = 0, .peak = 0, .from = -1, .from_state = -1};
    oc_grow((void **)&fr[0].s, &fr[0].cap, 1, sizeof *fr[0].s);
    fr[0].s[fr[0].n++] = s0;
    out->n_states = 1;
    for (int j = 1; j < F; j++) {
        for (int k = t->in_start[j]; k < t->in_start[j + 1]; k++)
            front_merge(&fr[j], &fr[t->edges[k].from], &t->edges[k], budget, &tmp);
        if (fr[j].n > max_front) {
            front_thin(&fr[j], max_front);
            out->thinned = true;
        }
        out->n_states += fr[j].n;
    }
    oc_free(tmp.s);
    const dp_front *last = &fr[F - 1];
    out->feasible = last->n > 0;
    if (out->feasible) {
        const dp_state *b = &last->s[0]; /* least overhead; ties: least memory */
        out->overhead = b->t;
        out->peak = b->peak;
        int len = 0; /* walk parents: count, then fill */
        int j = F - 1, q = 0;
        while (j > 0) {
            len++;
            const dp_state *st = &fr[j].s[q];
            j = st->from;
            q = st->from_state;
        }
        out->chain = oc_malloc((size_t)len * sizeof *out->chain);
        out->n_chain = len;
        j = F - 1;
        q = 0;
        for (int k = len - 1; k >= 0; k--) {
            out->chain[k] = j;
            const dp_state *st = &fr[j].s[q];
            j = st->from;
            q = st->from_state;
        }
    }
    for (int j = 0; j < F; j++) oc_free(fr[j].s);
    oc_free(fr);
}

dp_table *dp_table_new(const dp_graph *g, const dp_lowersets *ls) {
    dp_table *t = oc_calloc(1, sizeof *t);
    t->family = ls->family;
    if (ls->count >= 2) table_build(g, ls, t);
    return t;
}

void dp_table_free(dp_table *t) {
    if (!t) return;
    table_free(t);
    oc_free(t);
}

void dp_solve(const dp_graph *g, const dp_lowersets *ls, const dp_options *o, dp_solution *out) {
    OC_ASSERT(ls->count >= 2 || g->n == 0);
    dp_table *t = dp_table_new(g, ls);
    dp_solve_table(t, o, out);
    dp_table_free(t);
}

void dp_solve_table(const dp_table *tab, const dp_options *o, dp_solution *out) {
    memset(out, 0, sizeof *out);
    out->family = tab->family;
    out->n_lowersets = tab->count;
    if (tab->count < 2) { /* empty graph: nothing to plan */
        out->feasible = true;
        return;
    }
    const dp_table t = *tab;
    out->n_transitions = t.n_edges;
    int max_front = o->max_front > 0 ? o->max_front : 512;
    int64_t budget = o->budget;
    if (o->mode == DP_MODE_MEMORY) {
        int64_t *best = oc_malloc((size_t)t.count * sizeof *best);
        int64_t hi = 0, lo = -1; /* feasible(hi), !feasible(lo) */
        for (int k = t.in_start[t.count - 1]; k < t.in_start[t.count]; k++)
            if (t.edges[k].from == 0) hi = t.edges[k].peak; /* ∅ -> V always exists */
        OC_ASSERT(feasible_at(&t, hi, best));
        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            if (feasible_at(&t, mid, best)) hi = mid;
            else lo = mid;
        }
        oc_free(best);
        budget = hi;
    }
    solve_time(&t, budget, max_front, out);
}

void dp_solution_free(dp_solution *s) {
    oc_free(s->chain);
    s->chain = NULL;
    s->n_chain = 0;
}

void dp_solution_dropped(const dp_graph *g, const dp_lowersets *ls, const dp_solution *s,
                         uint8_t *dropped) {
    int W = g->words;
    memset(dropped, 0, (size_t)g->n);
    for (int i = 0; i + 1 < s->n_chain; i++) { /* the last block is not dropped */
        const uint64_t *L2 = dp_lowersets_set(ls, s->chain[i]);
        const uint64_t *L = i > 0 ? dp_lowersets_set(ls, s->chain[i - 1]) : NULL;
        for (int v = 0; v < g->n; v++) {
            if (!dp_set_has(L2, v) || (L && dp_set_has(L, v))) continue;
            const uint64_t *sc = g->succ + (size_t)v * (size_t)W;
            bool bnd = false;
            for (int w = 0; w < W && !bnd; w++) bnd = (sc[w] & ~L2[w]) != 0;
            if (!bnd) dropped[v] = 1;
        }
    }
}
