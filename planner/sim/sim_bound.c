/* sim_bound.c — see sim_bound.h. */
#include "sim/sim_bound.h"

#include <math.h>
#include <stdlib.h>

/* Saved tensors by recompute cost per byte (the knapsack's order). */
typedef struct rc_item {
    double per_byte;
    int64_t bytes;
} rc_item;

static int cmp_item(const void *a, const void *b) {
    double x = ((const rc_item *)a)->per_byte, y = ((const rc_item *)b)->per_byte;
    return x < y ? -1 : x > y;
}

/* Least recompute time to free y bytes: the cheapest bytes first, fractionally. */
static double rc_cost(const rc_item *it, const double *pre_t, const int64_t *pre_b, int n,
                      double y) {
    if (y <= 0) return 0;
    int lo = 0, hi = n; /* first item whose prefix reaches y */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((double)pre_b[mid + 1] < y) lo = mid + 1;
        else hi = mid;
    }
    if (lo >= n) return INFINITY;
    return pre_t[lo] + (y - (double)pre_b[lo]) * it[lo].per_byte;
}

typedef struct bound_k {
    double before, tk, after; /* input + compute before k; k; compute after k */
    double e;                 /* excess bytes */
    double d2h, h2d;          /* bytes per second */
    const rc_item *it;
    const double *pre_t;
    const int64_t *pre_b;
    int n;
} bound_k;

static double f_of(const bound_k *q, double x) {
    double a = fmax(q->before, x / q->d2h);
    double c = fmax(q->after + rc_cost(q->it, q->pre_t, q->pre_b, q->n, q->e - x), x / q->h2d);
    return a + q->tk + c;
}

/* Non-persistent outputs of node n (a pure path needs exactly one). */
static int live_outputs(const train_graph *tg, int n) {
    const ir_node *nd = &tg->g->nodes[n];
    int c = 0;
    for (int o = 0; o < nd->n_outputs; o++) {
        int t = nd->outputs[o];
        if (t >= 0 && !train_tensor_persistent(tg, t)) c++;
    }
    return c;
}

/* Least time to recompute x (the saved tensor root, or an unsaved tensor on
 * its path) for a plan that frees root: x's producer, plus the recompute of
 * each unsaved forward input u that no plan could keep as a checkpoint to any
 * gain: u read only by that producer, which has no other output, and u at
 * least as large as root (holding u to spare root frees nothing). Other
 * inputs may be checkpoints and are not charged. */
static double recompute_cost(const train_graph *tg, const double *time, const bool *saved, int x,
                             int64_t root_bytes) {
    const ir_graph *g = tg->g;
    int p = g->tensors[x].producer;
    double c = time[p];
    if (live_outputs(tg, p) != 1) return c;
    const ir_node *n = &g->nodes[p];
    for (int k = 0; k < n->n_inputs; k++) {
        int u = n->inputs[k], q = u >= 0 ? g->tensors[u].producer : -1;
        int64_t ub = 0;
        if (q < 0 || q >= tg->n_forward || saved[u] || g->tensors[u].is_initializer ||
            g->tensors[u].n_consumers != 1 || !ir_tensor_bytes(&g->tensors[u], &ub) ||
            ub < root_bytes)
            continue;
        c += recompute_cost(tg, time, saved, u, root_bytes);
    }
    return c;
}

int sim_lower_bound(sim_context *ctx, const sim_options *o, sim_bound *b, oc_err *err) {
    const train_graph *tg = sim_context_graph(ctx);
    const ir_graph *g = tg->g;
    const double *time = sim_context_node_times(ctx);
    const profile_device *dev = sim_context_device(ctx);
    int n = g->n_nodes;
    *b = (sim_bound){.feasible = true, .at_node = -1};
    int64_t cap0 = o->budget_bytes > 0 ? o->budget_bytes - o->reserve_bytes : INT64_MAX;
    int fn;
    int64_t floor = sim_memory_floor(ctx, &fn, NULL);
    if (floor > cap0) { /* no plan at all: one node's own working set is over it */
        *b = (sim_bound){.feasible = false, .at_node = fn, .excess_bytes = floor - cap0};
        return OC_OK;
    }
    /* The in-core step: its live bytes per node and its input copy. */
    sim_plan *p = sim_plan_new(tg);
    sim_plan_keep_all(p);
    sim_timeline *tl = sim_timeline_new();
    sim_options unl = {0};
    sim_result r;
    int64_t *mem = oc_malloc(((size_t)n + 1) * sizeof *mem);
    int rc = sim_run(ctx, p, &unl, &r, tl, err);
    if (rc == OC_OK) sim_timeline_node_mem(tl, n, mem);
    sim_timeline_free(tl);
    sim_plan_free(p);
    if (rc != OC_OK) {
        oc_free(mem);
        return rc;
    }
    /* The first node waits for the graph inputs it reads (latency left out). */
    double input = 0, total = 0;
    for (int k = 0; n > 0 && k < g->nodes[0].n_inputs; k++) {
        int u = g->nodes[0].inputs[k];
        int64_t bytes = 0;
        bool dup = false;
        for (int j = 0; j < k && !dup; j++) dup = g->nodes[0].inputs[j] == u;
        if (u >= 0 && !dup && g->tensors[u].is_graph_input &&
            ir_tensor_bytes(&g->tensors[u], &bytes))
            input += (double)bytes / dev->h2d_bytes_per_s;
    }
    for (int i = 0; i < n; i++) total += time[i];
    b->time_s = input + total;
    /* Recompute costs per byte (recompute_cost: the producer, and the unsaved
     * inputs on a pure path that no CHECKPOINT could spare). */
    rc_item *it = oc_malloc(((size_t)tg->n_saved + 1) * sizeof *it);
    bool *saved = oc_calloc((size_t)g->n_tensors + 1, sizeof *saved);
    for (int i = 0; i < tg->n_saved; i++) saved[tg->saved[i]] = true;
    int n_it = 0, n_sized = 0;
    int64_t swappable = 0;
    for (int i = 0; i < tg->n_saved; i++) {
        int t = tg->saved[i], pr = g->tensors[t].producer;
        int64_t bytes = 0;
        if (!ir_tensor_bytes(&g->tensors[t], &bytes) || bytes <= 0) continue;
        swappable += bytes;
        n_sized++;
        if (pr >= 0 && pr < tg->n_forward)
            it[n_it++] =
                (rc_item){.per_byte = recompute_cost(tg, time, saved, t, bytes) / (double)bytes,
                          .bytes = bytes};
    }
    qsort(it, (size_t)n_it, sizeof *it, cmp_item);
    double *pre_t = oc_malloc(((size_t)n_it + 1) * sizeof *pre_t);
    int64_t *pre_b = oc_malloc(((size_t)n_it + 1) * sizeof *pre_b);
    pre_t[0] = 0, pre_b[0] = 0;
    for (int i = 0; i < n_it; i++) {
        pre_t[i + 1] = pre_t[i] + it[i].per_byte * (double)it[i].bytes;
        pre_b[i + 1] = pre_b[i] + it[i].bytes;
    }
    int64_t cap = o->budget_bytes > 0 ? o->budget_bytes - o->reserve_bytes : INT64_MAX;
    /* The simulator's memory is aligned (ir_tensor_device_bytes); the items are the bytes a copy
     * moves. Freeing e aligned bytes frees at least e less one alignment per saved tensor of
     * them, so the bound asks that much of the items: a bound still, and an infeasibility
     * verdict still certain. */
    int64_t slack = (int64_t)(IR_DEVICE_ALIGN - 1) * n_sized;
    double before = input;
    for (int k = 0; k < n && b->feasible; k++) {
        int64_t e = mem[k] - cap - slack;
        if (o->budget_bytes > 0 && e > 0) {
            bound_k q = {.before = before,
                         .tk = time[k],
                         .after = total - (before - input) - time[k],
                         .e = (double)e,
                         .d2h = dev->d2h_bytes_per_s,
                         .h2d = dev->h2d_bytes_per_s,
                         .it = it,
                         .pre_t = pre_t,
                         .pre_b = pre_b,
                         .n = n_it};
            /* x: swapped bytes, at most what is saved; the rest recomputed. */
            double lo = fmax(0, q.e - (double)pre_b[n_it]), hi = fmin(q.e, (double)swappable);
            if (lo > hi) {
                b->feasible = false; /* more over the budget than all saved bytes */
                b->at_node = k;
                b->excess_bytes = mem[k] - cap;
                break;
            }
            const double phi = 0.6180339887498949;
            double a = lo, c = hi;
            for (int it_ = 0; it_ < 200 && c - a > 1e-9 * (hi - lo + 1); it_++) {
                double x1 = c - phi * (c - a), x2 = a + phi * (c - a);
                if (f_of(&q, x1) <= f_of(&q, x2)) c = x2;
                else a = x1;
            }
            double v = fmin(fmin(f_of(&q, a), f_of(&q, c)), fmin(f_of(&q, lo), f_of(&q, hi)));
            v *= 1 - 1e-9; /* the search's last step: stay below the true minimum */
            if (v > b->time_s) {
                b->time_s = v;
                b->at_node = k;
                b->excess_bytes = mem[k] - cap;
            }
        }
        before += time[k];
    }
    oc_free(it);
    oc_free(saved);
    oc_free(pre_t);
    oc_free(pre_b);
    oc_free(mem);
    return OC_OK;
}
