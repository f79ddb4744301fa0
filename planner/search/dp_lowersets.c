/* dp_lowersets.c — the DP graph, lower-set families and step costs (DESIGN §6). */
#include "search/dp_lowersets.h"

#include <stdlib.h>
#include <string.h>

dp_graph *dp_graph_new(int n) {
    OC_ASSERT(n >= 0);
    dp_graph *g = oc_calloc(1, sizeof *g);
    g->n = n;
    g->words = n > 0 ? (n + 63) / 64 : 1;
    g->time = oc_calloc((size_t)n + 1, sizeof *g->time);
    g->mem = oc_calloc((size_t)n + 1, sizeof *g->mem);
    g->node_of = oc_malloc(((size_t)n + 1) * sizeof *g->node_of);
    g->keepable = oc_malloc((size_t)n + 1);
    for (int i = 0; i < n; i++) g->node_of[i] = -1, g->keepable[i] = 1;
    g->succ = oc_calloc((size_t)(n + 1) * (size_t)g->words, sizeof(uint64_t));
    g->pred = oc_calloc((size_t)(n + 1) * (size_t)g->words, sizeof(uint64_t));
    return g;
}

void dp_graph_edge_add(dp_graph *g, int u, int v) {
    OC_ASSERT(u >= 0 && u < v && v < g->n);
    dp_set_add(g->succ + (size_t)u * (size_t)g->words, v);
    dp_set_add(g->pred + (size_t)v * (size_t)g->words, u);
}

void dp_graph_free(dp_graph *g) {
    if (!g) return;
    oc_free(g->time);
    oc_free(g->mem);
    oc_free(g->mem_saved);
    oc_free(g->bwd_extra);
    oc_free(g->mem_self);
    oc_free(g->node_of);
    oc_free(g->keepable);
    oc_free(g->succ);
    oc_free(g->pred);
    oc_free(g);
}

static bool persistent_kind(ir_kind k) {
    return k == IR_KIND_PARAMETER || k == IR_KIND_STATE || k == IR_KIND_CONSTANT ||
           k == IR_KIND_OPT_STATE || k == IR_KIND_INPUT || k == IR_KIND_LABEL;
}

int dp_graph_from_train(const train_graph *tg, const double *node_time, dp_graph **out,
                        oc_err *err) {
    const ir_graph *ig = tg->g;
    int *dp_of = oc_malloc((size_t)(tg->n_forward + 1) * sizeof *dp_of);
    int n = 0;
    for (int i = 0; i < tg->n_forward; i++) {
        const ir_node *nd = &ig->nodes[i];
        dp_of[i] = -1;
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t >= 0 && tg->alias_of[t] < 0 && !persistent_kind(ig->tensors[t].kind)) {
                dp_of[i] = n++;
                break;
            }
        }
    }
    dp_graph *g = dp_graph_new(n);
    g->mem_saved = oc_calloc((size_t)n + 1, sizeof *g->mem_saved);
    bool *saved = oc_calloc((size_t)ig->n_tensors + 1, sizeof *saved);
    for (int i = 0; i < tg->n_saved; i++) saved[tg->saved[i]] = true;
    for (int i = 0; i < tg->n_forward; i++) {
        int v = dp_of[i];
        if (v < 0) continue;
        const ir_node *nd = &ig->nodes[i];
        g->node_of[v] = i;
        g->keepable[v] = 0;
        for (int o = 0; o < nd->n_outputs; o++)
            if (nd->outputs[o] >= 0 && saved[nd->outputs[o]]) g->keepable[v] = 1;
        g->time[v] = node_time ? node_time[i] : 0;
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t < 0 || tg->alias_of[t] >= 0 || persistent_kind(ig->tensors[t].kind)) continue;
            int64_t b;
            if (!ir_tensor_device_bytes(&ig->tensors[t], &b)) {
                dp_graph_free(g);
                oc_free(saved);
                oc_free(dp_of);
                return oc_fail(err, "dp: tensor '%s' (output of node '%s') has no static size",
                               ig->tensors[t].name, nd->name);
            }
            g->mem[v] += b;
            if (saved[t]) g->mem_saved[v] += b;
        }
        for (int k = 0; k < nd->n_inputs; k++) {
            int t = nd->inputs[k];
            if (t < 0) continue;
            int p = ig->tensors[t].producer;
            if (p >= 0 && p < tg->n_forward && dp_of[p] >= 0 && dp_of[p] != v &&
                !dp_set_has(g->pred + (size_t)v * (size_t)g->words, dp_of[p]))
                dp_graph_edge_add(g, dp_of[p], v);
        }
    }
    g->bwd_extra = oc_calloc((size_t)n + 1, sizeof *g->bwd_extra);
    g->mem_self = oc_calloc((size_t)n + 1, sizeof *g->mem_self);
    /* self_read[t]: forward node f's saved output t is read by f's own backward */
    bool *self_read = oc_calloc((size_t)ig->n_tensors + 1, sizeof *self_read);
    for (int b = tg->n_forward; b < ig->n_nodes; b++) {
        int f = tg->fwd_of[b];
        int v = f >= 0 && f < tg->n_forward ? dp_of[f] : -1;
        if (v < 0) continue;
        const ir_node *nd = &ig->nodes[b];
        int64_t e = 0, bytes;
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            if (t >= 0 && ig->tensors[t].kind == IR_KIND_GRADIENT &&
                ir_tensor_device_bytes(&ig->tensors[t], &bytes))
                e += bytes;
        }
        if (e > g->bwd_extra[v]) g->bwd_extra[v] = e;
        for (int k = 0; k < nd->n_inputs; k++) {
            int t = nd->inputs[k];
            if (t >= 0 && ig->tensors[t].producer == f) self_read[t] = true;
        }
    }
    for (int i = 0; i < tg->n_forward; i++) {
        int v = dp_of[i];
        if (v < 0) continue;
        const ir_node *nd = &ig->nodes[i];
        for (int o = 0; o < nd->n_outputs; o++) {
            int t = nd->outputs[o];
            int64_t b;
            if (t >= 0 && saved[t] && self_read[t] && tg->alias_of[t] < 0 &&
                !persistent_kind(ig->tensors[t].kind) &&
                ir_tensor_device_bytes(&ig->tensors[t], &b))
                g->mem_self[v] += b;
        }
    }
    oc_free(self_read);
    oc_free(dp_of);
    oc_free(saved);
    *out = g;
    return OC_OK;
}

void dp_graph_allow_checkpoints(dp_graph *g) {
    for (int v = 0; v < g->n; v++) {
        if (g->keepable[v]) continue;
        g->keepable[v] = 1;
        if (g->mem_saved) g->mem_saved[v] = g->mem[v];
        /* a checkpoint's whole output stays until its block's backward ends */
        if (g->mem_self) g->mem_self[v] = g->mem[v];
    }
    g->checkpoints = true;
}

const char *dp_peak_model_name(dp_peak_model m) {
    return m == DP_PEAK_LAZY ? "lazy" : m == DP_PEAK_BLOCK ? "block" : "paper";
}

const char *dp_family_name(dp_family f) { return f == DP_FAMILY_EXACT ? "exact" : "approximate"; }

bool dp_set_subset(const uint64_t *a, const uint64_t *b, int words, bool strict) {
    bool eq = true;
    for (int w = 0; w < words; w++) {
        if (a[w] & ~b[w]) return false;
        if (a[w] != b[w]) eq = false;
    }
    return !(strict && eq);
}

static int set_size(const uint64_t *s, int words) {
    int c = 0;
    for (int w = 0; w < words; w++) c += __builtin_popcountll(s[w]);
    return c;
}

/* A growable list of sets with an open-addressing hash for de-duplication. */
typedef struct set_list {
    int words, count;
    size_t cap;
    uint64_t *sets;
    int *slot; /* hash table of indices, -1 empty */
    size_t nslot;
} set_list;

static uint64_t set_hash(const uint64_t *s, int words) {
    uint64_t h = 1469598103934665603ull;
    for (int w = 0; w < words; w++) h = (h ^ s[w]) * 1099511628211ull, h ^= h >> 29;
    return h;
}

static void list_rehash(set_list *l, size_t nslot) {
    oc_free(l->slot);
    l->nslot = nslot;
    l->slot = oc_malloc(nslot * sizeof *l->slot);
    for (size_t i = 0; i < nslot; i++) l->slot[i] = -1;
    for (int i = 0; i < l->count; i++) {
        const uint64_t *s = l->sets + (size_t)i * (size_t)l->words;
        size_t h = set_hash(s, l->words) & (nslot - 1);
        while (l->slot[h] >= 0) h = (h + 1) & (nslot - 1);
        l->slot[h] = i;
    }
}

/* Adds s unless present. Returns true when added. */
static bool list_add(set_list *l, const uint64_t *s) {
    if ((size_t)(l->count + 1) * 2 > l->nslot) list_rehash(l, l->nslot ? l->nslot * 2 : 64);
    size_t h = set_hash(s, l->words) & (l->nslot - 1);
    while (l->slot[h] >= 0) {
        if (memcmp(l->sets + (size_t)l->slot[h] * (size_t)l->words, s,
                   (size_t)l->words * sizeof *s) == 0)
            return false;
        h = (h + 1) & (l->nslot - 1);
    }
    oc_grow((void **)&l->sets, &l->cap, (size_t)(l->count + 1) * (size_t)l->words, sizeof *l->sets);
    memcpy(l->sets + (size_t)l->count * (size_t)l->words, s, (size_t)l->words * sizeof *s);
    l->slot[h] = l->count++;
    return true;
}

typedef struct sort_key {
    int size, idx;
} sort_key;

static int key_cmp(const void *a, const void *b) {
    const sort_key *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* True when every boundary node of L can be kept. */
static bool admissible(const dp_graph *g, const uint64_t *L) {
    int W = g->words;
    for (int v = 0; v < g->n; v++) {
        if (g->keepable[v] || !dp_set_has(L, v)) continue;
        const uint64_t *s = g->succ + (size_t)v * (size_t)W;
        for (int w = 0; w < W; w++)
            if (s[w] & ~L[w]) return false;
    }
    return true;
}

/* Moves the admissible sets of the list into a dp_lowersets sorted by size (stable). */
static dp_lowersets *finish(const dp_graph *g, set_list *l, dp_family fam) {
    dp_lowersets *ls = oc_calloc(1, sizeof *ls);
    ls->family = fam;
    ls->words = l->words;
    sort_key *k = oc_malloc(((size_t)l->count + 1) * sizeof *k);
    int n = 0;
    for (int i = 0; i < l->count; i++) {
        const uint64_t *s = l->sets + (size_t)i * (size_t)l->words;
        if (admissible(g, s)) k[n++] = (sort_key){set_size(s, l->words), i};
    }
    ls->count = n;
    qsort(k, (size_t)n, sizeof *k, key_cmp);
    ls->sets = oc_malloc(((size_t)n + 1) * (size_t)l->words * sizeof *ls->sets);
    ls->size = oc_malloc(((size_t)n + 1) * sizeof *ls->size);
    for (int i = 0; i < n; i++) {
        memcpy(ls->sets + (size_t)i * (size_t)l->words,
               l->sets + (size_t)k[i].idx * (size_t)l->words, (size_t)l->words * sizeof(uint64_t));
        ls->size[i] = k[i].size;
    }
    oc_free(k);
    oc_free(l->sets);
    oc_free(l->slot);
    return ls;
}

dp_lowersets *dp_lowersets_exact(const dp_graph *g, int max_count) {
    set_list l = {.words = g->words};
    uint64_t *cur = oc_calloc((size_t)g->words, sizeof *cur);
    list_add(&l, cur);
    /* Breadth-first over the lattice: each set grows by one node whose
     * predecessors are all inside it. */
    for (int i = 0; i < l.count; i++) {
        for (int v = 0; v < g->n; v++) {
            const uint64_t *s = l.sets + (size_t)i * (size_t)g->words; /* may move on add */
            if (dp_set_has(s, v)) continue;
            if (!dp_set_subset(g->pred + (size_t)v * (size_t)g->words, s, g->words, false))
                continue;
            memcpy(cur, s, (size_t)g->words * sizeof *cur);
            dp_set_add(cur, v);
            if (list_add(&l, cur) && l.count > max_count) {
                oc_free(cur);
                oc_free(l.sets);
                oc_free(l.slot);
                return NULL;
            }
        }
    }
    oc_free(cur);
    return finish(g, &l, DP_FAMILY_EXACT);
}

dp_lowersets *dp_lowersets_approx(const dp_graph *g) {
    set_list l = {.words = g->words};
    int W = g->words;
    /* every node's set, or every stride-th's (the last node's always) */
    bool thin = g->n + 2 > DP_APPROX_MAX_SETS;
    int stride = thin ? (g->n + DP_APPROX_MAX_SETS - 3) / (DP_APPROX_MAX_SETS - 2) : 1;
    /* anc[v] = v ∪ ancestors(v), built in topological order. */
    uint64_t *anc = oc_calloc((size_t)(g->n + 1) * (size_t)W, sizeof *anc);
    uint64_t *empty = oc_calloc((size_t)W, sizeof *empty);
    list_add(&l, empty);
    for (int v = 0; v < g->n; v++) {
        uint64_t *a = anc + (size_t)v * (size_t)W;
        const uint64_t *p = g->pred + (size_t)v * (size_t)W;
        for (int pw = 0; pw < W; pw++)
            for (uint64_t x = p[pw]; x; x &= x - 1) {
                int u = pw * 64 + __builtin_ctzll(x);
                for (int w = 0; w < W; w++) a[w] |= anc[(size_t)u * (size_t)W + (size_t)w];
            }
        dp_set_add(a, v);
        if ((v + 1) % stride == 0 || v + 1 == g->n) list_add(&l, a);
    }
    for (int v = 0; v < g->n; v++) dp_set_add(empty, v);
    list_add(&l, empty); /* V */
    oc_free(anc);
    oc_free(empty);
    dp_lowersets *ls = finish(g, &l, DP_FAMILY_APPROX);
    ls->max_span = thin ? DP_APPROX_MAX_SPAN : 0;
    return ls;
}

dp_lowersets *dp_lowersets_build(const dp_graph *g, int max_exact) {
    dp_lowersets *ls = dp_lowersets_exact(g, max_exact);
    return ls ? ls : dp_lowersets_approx(g);
}

void dp_lowersets_free(dp_lowersets *ls) {
    if (!ls) return;
    oc_free(ls->sets);
    oc_free(ls->size);
    oc_free(ls);
}

void dp_step_cost(const dp_graph *g, const uint64_t *L, const uint64_t *L2, dp_step *out) {
    int W = g->words;
    uint64_t *A = oc_calloc((size_t)W * 2, sizeof *A), *Bs = A + W;
    *out = (dp_step){0};
    int64_t mv = 0;
    for (int v = 0; v < g->n; v++) {
        if (!dp_set_has(L2, v)) continue;
        const uint64_t *s = g->succ + (size_t)v * (size_t)W;
        bool boundary = false;
        for (int w = 0; w < W; w++) {
            uint64_t outside = s[w] & ~L2[w];
            if (outside) boundary = true;
            A[w] |= outside;
        }
        if (dp_set_has(L, v)) continue;
        mv += dp_mem_resident(g, v);
        if (boundary) out->dk += dp_mem_resident(g, v);
        else out->dt += g->time[v];
    }
    for (int a = 0; a < g->n; a++)
        if (dp_set_has(A, a))
            for (int w = 0; w < W; w++)
                Bs[w] |= g->pred[(size_t)a * (size_t)W + (size_t)w] & ~L2[w];
    int64_t extra = 0;
    for (int v = 0; v < g->n; v++) {
        if (dp_set_has(A, v)) extra += g->mem[v];
        if (dp_set_has(Bs, v)) extra += g->mem[v];
    }
    out->peak =
        g->peak_model != DP_PEAK_PAPER ? dp_lazy_block_peak(g, L, L2, NULL) : 2 * mv + extra;
    if (set_size(L2, W) == g->n) out->dt = 0; /* the last block is not dropped */
    oc_free(A);
}

int64_t dp_lazy_block_peak(const dp_graph *g, const uint64_t *L, const uint64_t *L2,
                           const uint64_t *bnd2) {
    int64_t prefix = 0, peak = 0;
    if (g->peak_model == DP_PEAK_BLOCK) { /* R(V') + R(K) + max frontier, over V' = L2 ∖ L */
        int64_t fmax = 0, rk = 0;
        int W = g->words;
        for (int vw = 0; vw < W; vw++)
            for (uint64_t x = L2[vw] & ~L[vw]; x; x &= x - 1) {
                int v = vw * 64 + __builtin_ctzll(x);
                prefix += dp_mem_resident(g, v);
                if (dp_mem_frontier(g, v) > fmax) fmax = dp_mem_frontier(g, v);
                if (bnd2) {
                    if (dp_set_has(bnd2, v)) rk += dp_mem_resident(g, v);
                    continue;
                }
                const uint64_t *sc = g->succ + (size_t)v * (size_t)W;
                for (int w = 0; w < W; w++)
                    if (sc[w] & ~L2[w]) {
                        rk += dp_mem_resident(g, v);
                        break;
                    }
            }
        return prefix + rk + fmax;
    }
    for (int w = 0; w < g->words; w++) {
        uint64_t x = L2[w] & ~L[w];
        while (x) {
            int v = w * 64 + __builtin_ctzll(x);
            x &= x - 1;
            int64_t at = prefix + dp_mem_self(g, v) + dp_mem_frontier(g, v);
            if (at > peak) peak = at;
            prefix += dp_mem_resident(g, v);
        }
    }
    return peak;
}
