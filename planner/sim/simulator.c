/* simulator.c — see simulator.h.
 *
 * One run has two phases, both over buffers the context owns:
 *  1. plan_build: the effective compute sequence ("ops": schedule nodes with
 *     recompute ops inserted), and per op the bytes allocated at its start and
 *     freed at its end, the swap-ins it waits for; the D2H and H2D queues.
 *  2. run_events: advance time from one stream completion to the next,
 *     starting whatever can start after each. */
#include "sim/simulator.h"

#include <stdio.h>
#include <string.h>

struct sim_context {
    const train_graph *tg;
    int n_nodes, n_tensors, max_ops;
    int n_forward; /* nodes before the first non-forward-phase node */
    profile_device dev;
    double *time; /* per node */
    int64_t *ws;  /* per node */
    double ideal_s;
    /* Memory is counted as the arena holds it (ir_tensor_device_bytes): each tensor and
     * workspace aligned; a copy moves the tensor's own bytes. */
    int64_t *bytes;      /* per tensor, aligned: 0 when persistent, aliased or unsized */
    int64_t *copy_bytes; /* per tensor: bytes a swap or input copy moves */
    int64_t base_bytes;  /* persistent + graph inputs, aligned */
    uint8_t *fwd_act;    /* per tensor: produced by a forward node, not persistent */
    uint8_t *is_saved;
    uint8_t *is_output;   /* graph output */
    int *in_off, *in_idx; /* per node: distinct inputs (CSR) */
    int *out_off, *out_idx;
    /* Per-run scratch. */
    int *op_node;   /* per op: node */
    uint8_t *op_rc; /* per op: recompute */
    int64_t *op_alloc, *op_free;
    int *wait_off, *wait_idx; /* per op: swapped tensors it reads */
    int *block_start;         /* per node: first op of its block */
    int *node_pos;            /* per node: its op */
    int *rc_op; /* per node: its last recompute op (current when op_node and op_rc agree) */
    int *rc_pos, *eff_last, *fwd_last, *first_bwd, *issue; /* per tensor */
    int *so_list, *si_list, *tmp_list, *count;             /* queues; count: max_ops + 1 */
    int *pending;                         /* swapped tensors copied out, forward readers pending */
    uint8_t *so_done, *si_done, *in_done; /* in_done: graph input copied to the device */
    int *inputs, n_inputs;                /* graph inputs with bytes, in the executor's order */
    uint8_t *reads_input;                 /* per node: reads a graph input with bytes */
    int *saved_list, n_saved;             /* the saved tensors (the only ones swapped) */
    int *act_list, n_act; /* non-persistent tensors, ascending: the ones a run tracks */
    /* In-place views (train_view_source): view_root[t] is the first source of t's chain of
     * views (t itself when t is no view's output); view_list the views' outputs. Per run,
     * group_shared[r] says whether r's group shares one storage (no member swapped or
     * re-produced) and group_last[r] the last op that reads any member. */
    int *view_root, *view_list, n_views;
    uint8_t *group_shared;
    int *group_last;
    int *prod;      /* per tensor: producing node or -1 */
    double *res[8]; /* node start/end, rc start/end, so start/end, si start/end */
};

const char *sim_stream_name(sim_stream s) {
    static const char *names[] = {"compute", "D2H", "H2D"};
    return s < SIM_STREAM__COUNT ? names[s] : "?";
}

sim_timeline *sim_timeline_new(void) { return oc_calloc(1, sizeof(sim_timeline)); }

void sim_timeline_free(sim_timeline *tl) {
    if (!tl) return;
    oc_free(tl->events);
    oc_free(tl->samples);
    oc_free(tl);
}

const double *sim_context_node_times(const sim_context *ctx) { return ctx->time; }
const int64_t *sim_context_node_workspaces(const sim_context *ctx) { return ctx->ws; }

void sim_context_set_node_cost(sim_context *ctx, int n, double time_s, int64_t workspace) {
    OC_ASSERT(n >= 0 && n < ctx->n_nodes);
    ctx->ideal_s += time_s - ctx->time[n];
    ctx->time[n] = time_s, ctx->ws[n] = workspace;
}

int sim_context_new(const train_graph *tg, const profile *prof, const char *what, sim_context **out,
                    oc_err *err) {
    const ir_graph *g = tg->g;
    sim_context *c = oc_calloc(1, sizeof *c);
    *out = NULL;
    c->tg = tg;
    c->n_nodes = g->n_nodes;
    c->n_tensors = g->n_tensors;
    /* Backward side = from the first node not in the forward phase (the loss):
     * tg->saved counts the loss's inputs as saved too. */
    c->n_forward = 0;
    while (c->n_forward < g->n_nodes && tg->phase[c->n_forward] == TRAIN_PHASE_FORWARD)
        c->n_forward++;
    /* every node once, plus recompute ops: one recompute op re-produces one
     * tensor at least (rc_insert) and a tensor is re-produced once per step,
     * but a node with several outputs (Split, LayerNormalization, Dropout) can be
     * recomputed once per output — so one per forward-produced tensor, not per node */
    int fwd_outputs = 0;
    for (int t = 0; t < g->n_tensors; t++)
        fwd_outputs += g->tensors[t].producer >= 0 && g->tensors[t].producer < tg->n_forward;
    c->max_ops = g->n_nodes + fwd_outputs;
    size_t nn = (size_t)c->n_nodes + 1, nt = (size_t)c->n_tensors + 1, no = (size_t)c->max_ops + 1;
    c->time = oc_calloc(nn, sizeof *c->time);
    c->ws = oc_calloc(nn, sizeof *c->ws);
    c->bytes = oc_calloc(nt, sizeof *c->bytes);
    c->copy_bytes = oc_calloc(nt, sizeof *c->copy_bytes);
    c->fwd_act = oc_calloc(nt, 1);
    c->is_saved = oc_calloc(nt, 1);
    c->is_output = oc_calloc(nt, 1);
    c->in_off = oc_calloc(nn, sizeof(int));
    c->out_off = oc_calloc(nn, sizeof(int));
    c->op_node = oc_calloc(no, sizeof(int));
    c->op_rc = oc_calloc(no, 1);
    c->op_alloc = oc_calloc(no, sizeof(int64_t));
    c->op_free = oc_calloc(no, sizeof(int64_t));
    c->wait_off = oc_calloc(no + 1, sizeof(int));
    c->block_start = oc_calloc(nn, sizeof(int));
    c->node_pos = oc_calloc(nn, sizeof(int));
    c->rc_op = oc_calloc(nn, sizeof(int));
    int **per_t[] = {&c->rc_pos,  &c->eff_last, &c->fwd_last, &c->first_bwd, &c->issue,
                     &c->so_list, &c->si_list,  &c->tmp_list, &c->pending};
    for (size_t i = 0; i < sizeof per_t / sizeof per_t[0]; i++)
        *per_t[i] = oc_calloc(nt, sizeof(int));
    c->count = oc_calloc(no + 1, sizeof(int));
    c->so_done = oc_calloc(nt, 1);
    c->si_done = oc_calloc(nt, 1);
    c->in_done = oc_calloc(nt, 1);
    c->inputs = oc_calloc((size_t)tg->g->n_inputs + 1, sizeof(int));
    for (int i = 0; i < 8; i++) c->res[i] = oc_calloc(i < 4 ? nn : nt, sizeof(double));
    c->dev = prof->device;
    if (profile_node_costs(prof, tg, what, c->time, c->ws, err)) {
        sim_context_free(c);
        return OC_ERR;
    }
    for (int i = 0; i < c->n_nodes; i++) c->ideal_s += c->time[i];
    int64_t b;
    for (int t = 0; t < c->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        if (!ir_tensor_bytes(x, &b)) b = 0;
        if (train_tensor_persistent(tg, t)) {
            if (tg->alias_of[t] < 0) c->base_bytes += ir_device_align_up(b);
            continue;
        }
        c->is_output[t] = x->is_graph_output;
        c->fwd_act[t] = x->producer >= 0 && x->producer < tg->n_forward;
        /* Producer-less tensors that are not graph inputs are never allocated. */
        c->copy_bytes[t] = x->producer >= 0 || x->is_graph_input ? b : 0;
        c->bytes[t] = ir_device_align_up(c->copy_bytes[t]);
    }
    for (int i = 0; i < g->n_inputs; i++) {
        c->base_bytes += c->bytes[g->inputs[i]];
        if (c->bytes[g->inputs[i]] > 0) c->inputs[c->n_inputs++] = g->inputs[i];
    }
    for (int i = 0; i < tg->n_saved; i++) c->is_saved[tg->saved[i]] = 1;
    /* Distinct inputs / present outputs per node. */
    int n_in = 0, n_out = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        n_in += g->nodes[i].n_inputs;
        n_out += g->nodes[i].n_outputs;
    }
    c->in_idx = oc_calloc((size_t)n_in + 1, sizeof(int));
    c->out_idx = oc_calloc((size_t)n_out + 1, sizeof(int));
    c->wait_idx = oc_calloc(2 * (size_t)n_in + 1, sizeof(int)); /* nodes + recomputes */
    n_in = n_out = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        c->in_off[i] = n_in;
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            bool dup = t < 0;
            for (int j = c->in_off[i]; j < n_in && !dup; j++) dup = c->in_idx[j] == t;
            if (!dup) c->in_idx[n_in++] = t;
        }
        c->out_off[i] = n_out;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) c->out_idx[n_out++] = n->outputs[k];
    }
    c->in_off[c->n_nodes] = n_in;
    c->out_off[c->n_nodes] = n_out;
    c->reads_input = oc_calloc(nn, 1);
    for (int i = 0; i < c->n_nodes; i++)
        for (int j = c->in_off[i]; j < c->in_off[i + 1]; j++)
            if (g->tensors[c->in_idx[j]].is_graph_input && c->bytes[c->in_idx[j]] > 0)
                c->reads_input[i] = 1;
    c->act_list = oc_calloc(nt, sizeof(int));
    c->prod = oc_calloc(nt, sizeof(int));
    for (int t = 0; t < c->n_tensors; t++) {
        c->prod[t] = g->tensors[t].producer;
        c->rc_pos[t] = c->eff_last[t] = c->fwd_last[t] = c->first_bwd[t] = -1;
        if (!train_tensor_persistent(tg, t)) c->act_list[c->n_act++] = t;
    }
    c->view_root = oc_calloc(nt, sizeof(int));
    c->view_list = oc_calloc(nt, sizeof(int));
    c->group_shared = oc_calloc(nt, 1);
    c->group_last = oc_calloc(nt, sizeof(int));
    for (int t = 0; t < c->n_tensors; t++) c->view_root[t] = t;
    for (int i = 0; i < c->n_nodes; i++) { /* in order: a view of a view takes the first's root */
        int src = train_view_source(tg, i);
        if (src < 0) continue;
        int v = g->nodes[i].outputs[0];
        c->view_root[v] = c->view_root[src];
        c->view_list[c->n_views++] = v;
    }
    c->saved_list = oc_calloc((size_t)tg->n_saved + 1, sizeof(int));
    for (int i = 0; i < tg->n_saved; i++) c->saved_list[c->n_saved++] = tg->saved[i];
    /* Swap times stay -1 but for saved tensors (sim_run resets those). */
    for (int t = 0; t < c->n_tensors; t++)
        for (int k = 4; k < 8; k++) c->res[k][t] = -1;
    *out = c;
    return OC_OK;
}

void sim_context_free(sim_context *c) {
    if (!c) return;
    void *p[] = {
        c->time,      c->ws,       c->bytes,     c->copy_bytes,  c->fwd_act,      c->is_saved,
        c->is_output, c->in_off,   c->in_idx,    c->out_off,     c->out_idx,      c->op_node,
        c->op_rc,     c->op_alloc, c->op_free,   c->wait_off,    c->wait_idx,     c->block_start,
        c->node_pos,  c->rc_pos,   c->eff_last,  c->fwd_last,    c->first_bwd,    c->issue,
        c->so_list,   c->si_list,  c->tmp_list,  c->count,       c->pending,      c->so_done,
        c->si_done,   c->in_done,  c->inputs,    c->reads_input, c->saved_list,   c->act_list,
        c->prod,      c->rc_op,    c->view_root, c->view_list,   c->group_shared, c->group_last};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) oc_free(p[i]);
    for (int i = 0; i < 8; i++) oc_free(c->res[i]);
    oc_free(c);
}

void sim_timeline_node_mem(const sim_timeline *tl, int n_nodes, int64_t *mem) {
    for (int i = 0; i < n_nodes; i++) mem[i] = 0;
    for (int e = 0; e < tl->n_events; e++) {
        const sim_event *ev = &tl->events[e];
        if (ev->stream != SIM_STREAM_COMPUTE || ev->kind != SIM_EVENT_NODE) continue;
        /* Binary search for the last sample at or before ev->start. */
        int lo = 0, hi = tl->n_samples - 1, s = 0;
        while (lo <= hi) {
            int mid = (lo + hi) / 2;
            if (tl->samples[mid].t <= ev->start) {
                s = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        int64_t m = tl->n_samples ? tl->samples[s].bytes : 0;
        for (int j = s + 1; j < tl->n_samples && tl->samples[j].t < ev->end; j++)
            if (tl->samples[j].bytes > m) m = tl->samples[j].bytes;
        if (m > mem[ev->index]) mem[ev->index] = m;
    }
}

const profile_device *sim_context_device(const sim_context *c) { return &c->dev; }
const train_graph *sim_context_graph(const sim_context *c) { return c->tg; }

int64_t sim_memory_floor(const sim_context *c, int *node, int64_t *persistent_bytes) {
    /* The batch (graph inputs) is on the device at the start; later only while
     * a node reads it (a plan may swap it out in between). */
    int64_t persistent = c->base_bytes, best = c->base_bytes;
    for (int k = 0; k < c->n_inputs; k++) persistent -= c->bytes[c->inputs[k]];
    int at = -1;
    for (int n = 0; n < c->n_nodes; n++) {
        int64_t need = persistent + ir_device_align_up(c->ws[n]);
        for (int j = c->in_off[n]; j < c->in_off[n + 1]; j++) need += c->bytes[c->in_idx[j]];
        for (int j = c->out_off[n]; j < c->out_off[n + 1]; j++) {
            int t = c->out_idx[j];
            bool read = c->view_root[t] != t; /* a view's output: its source's storage */
            /* an output that is also an input counts once */
            for (int k = c->in_off[n]; k < c->in_off[n + 1] && !read; k++) read = c->in_idx[k] == t;
            if (!read) need += c->bytes[t];
        }
        if (need > best) best = need, at = n;
    }
    if (node) *node = at;
    if (persistent_bytes) *persistent_bytes = persistent;
    return best;
}

/* ---- phase 1: the effective sequence ---------------------------------- */

typedef struct run_state {
    sim_context *c;
    const sim_plan *plan;
    int n_ops;
    int n_swap;
    int block0; /* the first op of the block being built */
} run_state;

/* Does tensor t have to be re-produced when a recompute reads it? */
static bool needs_rc(const run_state *s, int t) {
    const sim_context *c = s->c;
    uint8_t d = s->plan->decision[t];
    return c->fwd_act[t] &&
           (d == SIM_DECISION_RECOMPUTE || (!c->is_saved[t] && d != SIM_DECISION_CHECKPOINT));
}

/* Appends the recompute op of t's producer, after those of its inputs — or, when this block
 * already recomputes the producer for another of its outputs, that op re-produces t too (a
 * node's recompute makes all its outputs: GPT-2's q/k/v Split once, not once per output;
 * rewrite.c does the same). */
static void rc_insert(run_state *s, int t) {
    sim_context *c = s->c;
    int p = c->tg->g->tensors[t].producer, q = c->rc_op[p];
    if (q >= s->block0 && q < s->n_ops && c->op_rc[q] && c->op_node[q] == p) {
        c->rc_pos[t] = q; /* this block recomputes p already (once a block: no scan) */
        return;
    }
    for (int j = c->in_off[p]; j < c->in_off[p + 1]; j++) {
        int u = c->in_idx[j];
        if (needs_rc(s, u) && c->rc_pos[u] < 0) rc_insert(s, u);
    }
    q = s->n_ops++;
    OC_ASSERT(q < c->max_ops);
    c->op_node[q] = p;
    c->op_rc[q] = 1;
    c->rc_op[p] = q;
    for (int j = c->out_off[p]; j < c->out_off[p + 1]; j++) {
        int o = c->out_idx[j];
        if (o == t || (needs_rc(s, o) && c->rc_pos[o] < 0 && c->is_saved[o])) c->rc_pos[o] = q;
    }
}

typedef enum sort_key { KEY_PRODUCTION, KEY_FIRST_NEED, KEY_ISSUE } sort_key;

static int key_of(const run_state *s, int t, sort_key k) {
    const sim_context *c = s->c;
    int p = c->tg->g->tensors[t].producer;
    if (k == KEY_PRODUCTION) return p < 0 ? 0 : c->node_pos[p] + 1;
    return k == KEY_FIRST_NEED ? c->first_bwd[t] : c->issue[t];
}

/* Stable counting sort of the s->n_swap tensors in src into dst by key (0..n_ops). */
static void sort_by_key(const run_state *s, const int *src, int *dst, sort_key k) {
    int *count = s->c->count, nk = s->n_ops + 1;
    memset(count, 0, (size_t)(nk + 1) * sizeof(int));
    for (int i = 0; i < s->n_swap; i++) count[key_of(s, src[i], k) + 1]++;
    for (int i = 0; i < nk; i++) count[i + 1] += count[i];
    for (int i = 0; i < s->n_swap; i++) dst[count[key_of(s, src[i], k)]++] = src[i];
}

static int plan_check(const run_state *s, oc_err *err) {
    const sim_context *c = s->c;
    const ir_graph *g = c->tg->g;
    for (int t = 0; t < c->n_tensors; t++) {
        int d = s->plan->decision[t];
        if (d == SIM_DECISION_KEEP) continue;
        if (d > SIM_DECISION_CHECKPOINT)
            return oc_fail(err, "plan: tensor '%s': bad decision %d", g->tensors[t].name, d);
        if (d == SIM_DECISION_CHECKPOINT) {
            if (c->is_saved[t] || !c->fwd_act[t])
                return oc_fail(err,
                               "plan: tensor '%s' cannot be a checkpoint: only forward "
                               "activations that are not saved can",
                               g->tensors[t].name);
            continue;
        }
        if (!c->is_saved[t])
            return oc_fail(err,
                           "plan: tensor '%s' is not a saved activation; only saved "
                           "tensors can be %s",
                           g->tensors[t].name, sim_decision_name((sim_decision)d));
        if (d == SIM_DECISION_RECOMPUTE && !c->fwd_act[t])
            return oc_fail(err, "plan: tensor '%s' has no forward producer to recompute",
                           g->tensors[t].name);
        int at = s->plan->swap_in_at[t];
        if (d == SIM_DECISION_SWAP && (at < -1 || at >= c->n_nodes))
            return oc_fail(err, "plan: tensor '%s': swap-in issue node %d out of range",
                           g->tensors[t].name, at);
    }
    return OC_OK;
}

/* A tensor that stays on the device as it was first produced: kept (or a checkpoint), never
 * re-produced by a recompute. */
static bool stays(const run_state *s, int t) {
    uint8_t d = s->plan->decision[t];
    return (d == SIM_DECISION_KEEP || d == SIM_DECISION_CHECKPOINT) && s->c->rc_pos[t] < 0 &&
           s->c->eff_last[t] >= 0;
}

/* In-place views, as the layout places them: a group (a source and its chain of views) whose
 * members all stay is one storage, allocated with the source and freed after the last reader
 * of any member; the views allocate nothing. A group with a member swapped or recomputed is
 * counted member by member (where the layout shares less, the count is a little high). */
static void views_share(run_state *s) {
    sim_context *c = s->c;
    for (int i = 0; i < c->n_views; i++) {
        int r = c->view_root[c->view_list[i]];
        c->group_shared[r] = stays(s, r);
        c->group_last[r] = c->eff_last[r];
    }
    for (int i = 0; i < c->n_views; i++) {
        int v = c->view_list[i], r = c->view_root[v];
        if (!stays(s, v)) c->group_shared[r] = 0;
        if (c->eff_last[v] > c->group_last[r]) c->group_last[r] = c->eff_last[v];
    }
    for (int i = 0; i < c->n_views; i++) {
        int v = c->view_list[i];
        if (c->group_shared[c->view_root[v]]) c->op_alloc[c->node_pos[c->prod[v]]] -= c->bytes[v];
    }
}

static int plan_build(run_state *s, oc_err *err) {
    sim_context *c = s->c;
    const ir_graph *g = c->tg->g;
    const uint8_t *dec = s->plan->decision;
    if (plan_check(s, err)) return OC_ERR;
    /* Persistent tensors are never swapped, recomputed or freed: only the
     * others are tracked (their entries stay as sim_context_new left them). */
    for (int i = 0; i < c->n_act; i++) {
        int t = c->act_list[i];
        c->rc_pos[t] = c->eff_last[t] = c->fwd_last[t] = c->first_bwd[t] = -1;
        c->so_done[t] = c->si_done[t] = 0;
    }
    /* The sequence. */
    s->n_ops = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        c->block_start[i] = s->block0 = s->n_ops;
        if (i >= c->n_forward)
            for (int j = c->in_off[i]; j < c->in_off[i + 1]; j++) {
                int t = c->in_idx[j];
                if (c->fwd_act[t] && dec[t] == SIM_DECISION_RECOMPUTE && c->rc_pos[t] < 0)
                    rc_insert(s, t);
            }
        c->node_pos[i] = s->n_ops;
        OC_ASSERT(s->n_ops < c->max_ops);
        c->op_node[s->n_ops] = i;
        c->op_rc[s->n_ops++] = 0;
    }
    int bwd0 = c->n_forward < c->n_nodes ? c->block_start[c->n_forward] : s->n_ops;
    /* Uses over the sequence; allocations at op start. */
    int n_wait = 0;
    for (int i = 0; i < c->n_act; i++) {
        int t = c->act_list[i], p = c->prod[t];
        if (p >= 0) c->eff_last[t] = c->fwd_last[t] = c->node_pos[p];
        if (c->is_output[t]) c->eff_last[t] = c->node_pos[c->n_nodes - 1];
    }
    for (int q = 0; q < s->n_ops; q++) {
        int n = c->op_node[q];
        c->op_free[q] = c->op_alloc[q] = ir_device_align_up(c->ws[n]);
        c->wait_off[q] = n_wait;
        for (int j = c->in_off[n]; j < c->in_off[n + 1]; j++) {
            int t = c->in_idx[j];
            c->eff_last[t] = q;
            if (q < bwd0) c->fwd_last[t] = q;
            else if (c->first_bwd[t] < 0) c->first_bwd[t] = q;
            if (dec[t] == SIM_DECISION_SWAP && q >= bwd0) c->wait_idx[n_wait++] = t;
        }
        for (int j = c->out_off[n]; j < c->out_off[n + 1]; j++) {
            int t = c->out_idx[j];
            if (!c->op_rc[q] || c->rc_pos[t] == q) c->op_alloc[q] += c->bytes[t];
        }
    }
    c->wait_off[s->n_ops] = n_wait;
    views_share(s);
    /* Frees at op end; swap queues. */
    int n_so = 0;
    for (int i = 0; i < c->n_act; i++) {
        int t = c->act_list[i];
        int64_t b = c->bytes[t];
        int r = c->view_root[t];
        if (c->group_shared[r]) { /* one storage: freed with the group's last reader */
            if (r == t) c->op_free[c->group_last[r]] += b;
            continue;
        }
        if (dec[t] == SIM_DECISION_SWAP) {
            int at = s->plan->swap_in_at[t];
            c->issue[t] = at < 0 ? c->first_bwd[t] : c->block_start[at];
            if (c->first_bwd[t] < 0)
                return oc_fail(err, "plan: tensor '%s' is swapped but no backward node reads it",
                               g->tensors[t].name);
            if (c->issue[t] <= c->fwd_last[t] || c->issue[t] > c->first_bwd[t])
                return oc_fail(err,
                               "plan: tensor '%s': swap-in issued at node '%s', which is "
                               "not after its last forward reader '%s' and at or before "
                               "its first backward reader '%s'",
                               g->tensors[t].name, g->nodes[at].name,
                               c->fwd_last[t] >= 0 ? g->nodes[c->op_node[c->fwd_last[t]]].name
                                                   : "(none)",
                               g->nodes[c->op_node[c->first_bwd[t]]].name);
            c->so_list[n_so++] = t;
            c->op_free[c->eff_last[t]] += b; /* the swapped-in copy */
        } else if (c->rc_pos[t] >= 0) {
            if (c->fwd_last[t] >= 0) c->op_free[c->fwd_last[t]] += b;
            c->op_free[c->eff_last[t]] += b;
        } else if (c->eff_last[t] >= 0) {
            c->op_free[c->eff_last[t]] += b;
        }
    }
    /* D2H in production order (graph inputs first); H2D by issue point, then
     * by first need: two stable counting sorts. */
    s->n_swap = n_so;
    for (int i = 0; i < n_so; i++) c->tmp_list[i] = c->so_list[i];
    sort_by_key(s, c->tmp_list, c->so_list, KEY_PRODUCTION);
    sort_by_key(s, c->so_list, c->tmp_list, KEY_FIRST_NEED);
    sort_by_key(s, c->tmp_list, c->si_list, KEY_ISSUE);
    return OC_OK;
}

/* ---- phase 2: events --------------------------------------------------- */

static void tl_event(sim_timeline *tl, sim_stream st, sim_event_kind k, int idx, double a, double b,
                     int64_t bytes) {
    if (!tl) return;
    oc_grow((void **)&tl->events, &tl->cap_events, (size_t)tl->n_events + 1, sizeof(sim_event));
    tl->events[tl->n_events++] = (sim_event){st, k, idx, a, b, bytes};
}

static void tl_sample(sim_timeline *tl, double t, int64_t bytes) {
    if (!tl) return;
    if (tl->n_samples && tl->samples[tl->n_samples - 1].t == t) {
        tl->samples[tl->n_samples - 1].bytes = bytes;
        return;
    }
    oc_grow((void **)&tl->samples, &tl->cap_samples, (size_t)tl->n_samples + 1, sizeof(sim_sample));
    tl->samples[tl->n_samples++] = (sim_sample){t, bytes};
}

/* What runs on one stream now: when it ends, the stretch factor its remaining
 * time is counted at (contention, profile_device), and where its end time is
 * reported (a result array slot, a timeline event). */
typedef struct stream_run {
    bool busy;
    double end, stretch;
    double *end_slot; /* NULL: none */
    int tl_event;     /* -1: none */
} stream_run;

static void run_start(stream_run *u, double end, double *end_slot, const sim_timeline *tl) {
    *u = (stream_run){true, end, 1.0, end_slot, tl ? tl->n_events - 1 : -1};
    if (end_slot) *end_slot = end;
}

/* Contention: the busy set changed at `now`; each busy stream's remaining time
 * is rescaled from its old stretch to the new one. With every factor 0 nothing
 * changes (the times are those of the plain model, bit for bit). */
static void retime(stream_run *u, const profile_device *d, double now, sim_timeline *tl) {
    bool h = u[SIM_STREAM_H2D].busy, o = u[SIM_STREAM_D2H].busy;
    double want[SIM_STREAM__COUNT] = {
        [SIM_STREAM_COMPUTE] =
            1 + (h ? d->compute_slowdown_h2d : 0) + (o ? d->compute_slowdown_d2h : 0),
        [SIM_STREAM_D2H] = 1 + (h && d->duplex ? d->copy_slowdown_duplex : 0),
        [SIM_STREAM_H2D] = 1 + (o && d->duplex ? d->copy_slowdown_duplex : 0),
    };
    for (int k = 0; k < SIM_STREAM__COUNT; k++) {
        stream_run *r = &u[k];
        if (!r->busy || want[k] == r->stretch) continue;
        r->end = now + (r->end - now) * (want[k] / r->stretch);
        r->stretch = want[k];
        if (r->end_slot) *r->end_slot = r->end;
        if (tl && r->tl_event >= 0) tl->events[r->tl_event].end = r->end;
    }
}

static double copy_time(const sim_context *c, const profile_device *d, int t, bool h2d) {
    return d->copy_latency_s +
           (double)c->copy_bytes[t] / (h2d ? d->h2d_bytes_per_s : d->d2h_bytes_per_s);
}

int sim_run(sim_context *c, const sim_plan *plan, const sim_options *o, sim_result *r,
            sim_timeline *tl, oc_err *err) {
    OC_ASSERT(plan->tg == c->tg);
    memset(r, 0, sizeof *r);
    run_state s = {.c = c, .plan = plan};
    if (plan_build(&s, err)) return OC_ERR;
    if (tl) tl->n_events = tl->n_samples = 0;
    const ir_graph *g = c->tg->g;
    const profile_device *dev = &c->dev;
    double *nst = c->res[0], *nen = c->res[1], *rst = c->res[2], *ren = c->res[3];
    double *sost = c->res[4], *soen = c->res[5], *sist = c->res[6], *sien = c->res[7];
    for (int i = 0; i < c->n_nodes; i++) nst[i] = nen[i] = rst[i] = ren[i] = -1;
    for (int i = 0; i < c->n_saved; i++) {
        int t = c->saved_list[i];
        sost[t] = soen[t] = sist[t] = sien[t] = -1;
    }
    r->node_start = nst, r->node_end = nen, r->recompute_start = rst, r->recompute_end = ren;
    r->swap_out_start = sost, r->swap_out_end = soen, r->swap_in_start = sist;
    r->swap_in_end = sien;
    r->ideal_s = c->ideal_s;
    r->feasible = true;

    int64_t cap = o->budget_bytes > 0 ? o->budget_bytes - o->reserve_bytes : INT64_MAX;
    int64_t live = c->base_bytes, peak = live;
    double now = 0, c_finish = 0, busy_s = 0, c_begin = 0, h_begin = 0;
    stream_run u[SIM_STREAM__COUNT] = {{0}};
    stream_run *uc = &u[SIM_STREAM_COMPUTE], *ud = &u[SIM_STREAM_D2H], *uh = &u[SIM_STREAM_H2D];
    bool c_mem_wait = false, h_input = false;
    int cq = 0, di = 0, hi = 0, n_pend = 0, n_sw = 0, ii = 0;
    for (int k = 0; k < c->n_inputs; k++) c->in_done[c->inputs[k]] = 0;
    const int n_ops = s.n_ops;
    n_sw = s.n_swap; /* plan_build counted them (only saved tensors may swap) */
    tl_sample(tl, 0, live);
    if (live > cap) {
        r->feasible = false;
        snprintf(r->reason, sizeof r->reason,
                 "parameters, state and inputs alone need %lld bytes, over the budget of %lld",
                 (long long)live, (long long)cap);
    }
    while (r->feasible) {
        /* Start what can start at `now`. */
        c_mem_wait = false;
        if (!uc->busy && cq < n_ops) {
            bool ready = true;
            for (int j = c->wait_off[cq]; j < c->wait_off[cq + 1] && ready; j++)
                ready = c->si_done[c->wait_idx[j]];
            int on = c->op_node[cq]; /* the step's batch must be on the device */
            for (int j = c->in_off[on]; c->reads_input[on] && j < c->in_off[on + 1] && ready; j++)
                ready = !g->tensors[c->in_idx[j]].is_graph_input || c->in_done[c->in_idx[j]] ||
                        c->bytes[c->in_idx[j]] == 0;
            int64_t need = c->op_alloc[cq];
            if (ready && live + need > cap) c_mem_wait = true;
            else if (ready) {
                int n = c->op_node[cq];
                live += need;
                if (live > peak) peak = live;
                double end = now + c->time[n];
                c_begin = now;
                if (c->op_rc[cq]) {
                    rst[n] = now;
                    r->recompute_s += c->time[n];
                    r->n_recompute++;
                } else {
                    nst[n] = now;
                }
                tl_event(tl, SIM_STREAM_COMPUTE,
                         c->op_rc[cq] ? SIM_EVENT_RECOMPUTE : SIM_EVENT_NODE, n, now, end, need);
                run_start(uc, end, c->op_rc[cq] ? &ren[n] : &nen[n], tl);
                tl_sample(tl, now, live);
            }
        }
        bool engine_free = dev->duplex ? !ud->busy : !ud->busy && !uh->busy;
        if (engine_free && di < n_sw) {
            int t = c->so_list[di], p = g->tensors[t].producer;
            if (p < 0 || cq > c->node_pos[p]) { /* producer finished */
                double end = now + copy_time(c, dev, t, false);
                sost[t] = now;
                r->d2h_bytes += c->copy_bytes[t];
                r->n_swap_out++;
                tl_event(tl, SIM_STREAM_D2H, SIM_EVENT_SWAP_OUT, t, now, end, c->copy_bytes[t]);
                run_start(ud, end, &soen[t], tl);
                di++;
            }
        }
        engine_free = dev->duplex ? !uh->busy : !ud->busy && !uh->busy;
        if (engine_free && ii < c->n_inputs) { /* the batch first, as the executor issues it */
            int t = c->inputs[ii++];
            double end = now + copy_time(c, dev, t, true);
            h_input = true;
            h_begin = now;
            tl_event(tl, SIM_STREAM_H2D, SIM_EVENT_INPUT, t, now, end, c->copy_bytes[t]);
            run_start(uh, end, NULL, tl);
        } else if (engine_free && hi < n_sw && !c_mem_wait) {
            int t = c->si_list[hi];
            if (cq >= c->issue[t] && c->so_done[t] && live + c->bytes[t] <= cap) {
                live += c->bytes[t];
                if (live > peak) peak = live;
                double end = now + copy_time(c, dev, t, true);
                sist[t] = now;
                r->h2d_bytes += c->copy_bytes[t];
                r->n_swap_in++;
                tl_event(tl, SIM_STREAM_H2D, SIM_EVENT_SWAP_IN, t, now, end, c->copy_bytes[t]);
                run_start(uh, end, &sien[t], tl);
                tl_sample(tl, now, live);
                hi++;
            }
        }
        retime(u, dev, now, tl);
        /* Next completion. */
        double next = -1;
        for (int k = 0; k < SIM_STREAM__COUNT; k++)
            if (u[k].busy && (next < 0 || u[k].end < next)) next = u[k].end;
        if (next < 0) {
            if (cq >= n_ops && di >= n_sw && hi >= n_sw && ii >= c->n_inputs) break;
            r->feasible = false;
            break;
        }
        now = next;
        if (uc->busy && uc->end <= now) {
            uc->busy = false;
            c_finish = now;
            busy_s += now - c_begin;
            live -= c->op_free[cq];
            cq++;
            /* Swapped tensors whose copy is done and whose forward readers are now done. */
            for (int k = 0; k < n_pend;) {
                int t = c->pending[k];
                if (c->fwd_last[t] < cq) {
                    live -= c->bytes[t];
                    c->pending[k] = c->pending[--n_pend];
                } else {
                    k++;
                }
            }
            tl_sample(tl, now, live);
        }
        if (ud->busy && ud->end <= now) {
            int t = c->so_list[di - 1];
            ud->busy = false;
            c->so_done[t] = 1;
            if (c->fwd_last[t] < cq) { /* ops before cq have completed */
                live -= c->bytes[t];
                tl_sample(tl, now, live);
            } else {
                c->pending[n_pend++] = t;
            }
        }
        if (uh->busy && uh->end <= now) {
            uh->busy = false;
            if (h_input) {
                c->in_done[c->inputs[ii - 1]] = 1, h_input = false;
                r->input_s += now - h_begin;
            } else {
                c->si_done[c->si_list[hi - 1]] = 1;
            }
        }
    }
    r->peak_bytes = peak;
    if (!r->feasible && !r->reason[0]) {
        /* Nothing runs and nothing can start: say who waits for what. */
        int n = cq < n_ops ? c->op_node[cq] : -1;
        int waited = -1;
        for (int j = cq < n_ops ? c->wait_off[cq] : 0; n >= 0 && j < c->wait_off[cq + 1]; j++)
            if (!c->si_done[c->wait_idx[j]]) waited = c->wait_idx[j];
        if (n >= 0 && waited < 0)
            snprintf(r->reason, sizeof r->reason,
                     "deadlock: %snode '%s' needs %lld bytes but %lld of %lld are live and "
                     "nothing left can free memory",
                     c->op_rc[cq] ? "recompute of " : "", g->nodes[n].name,
                     (long long)c->op_alloc[cq], (long long)live, (long long)cap);
        else if (n >= 0)
            snprintf(r->reason, sizeof r->reason,
                     "deadlock: %snode '%s' waits for SwapIn of '%s' (%lld bytes), which cannot "
                     "be allocated: %lld of %lld bytes are live and nothing left can free memory",
                     c->op_rc[cq] ? "recompute of " : "", g->nodes[n].name, g->tensors[waited].name,
                     (long long)c->bytes[waited], (long long)live, (long long)cap);
        else snprintf(r->reason, sizeof r->reason, "deadlock: copies left that cannot start");
    }
    r->time_s = now;
    r->stall_s = r->feasible ? c_finish - busy_s : 0;
    if (r->stall_s < 0) r->stall_s = 0;
    return OC_OK;
}
