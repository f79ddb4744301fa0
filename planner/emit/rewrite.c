/* rewrite.c — see rewrite.h. Two passes over the plan:
 *  1. the compute sequence exactly as the simulator builds it (simulator.c,
 *     plan_build): schedule nodes with recompute ops inserted; per swapped
 *     tensor its first backward op and the op at which its SwapIn is issued;
 *  2. emission into a new graph: copies, clones and rewired inputs. */
#include "emit/rewrite.h"

#include <stdio.h>
#include <string.h>

#include "ir/host_inputs.h"
#include "ir/ops/op_table.h"

typedef struct rw {
    const train_graph *tg;
    const ir_graph *g;
    const uint8_t *dec;
    int nt, nn, fwd_end; /* fwd_end: first node not in the forward phase (the loss) */
    uint8_t *fwd_act, *is_saved, *rc_done;
    int *op_node, n_ops, cap_ops;
    uint8_t *op_rc;
    int *op_target;                    /* rc ops: the tensor it was inserted for */
    int *rc_op;                        /* per tensor: the rc op that re-produces it, -1 */
    int block0;                        /* the first op of the block being built */
    int *block_start;                  /* per node */
    int *first_bwd, *issue, *prod_pos; /* per tensor (ops) */
    /* emission */
    ir_graph *ng;
    int *cur_rc, *swapin, *host; /* per source tensor: tensors of ng, -1 */
    int *n_clones;               /* per source node */
    int *src_node;               /* per new node */
    int cap_new;
} rw;

static bool needs_rc(const rw *s, int t) {
    uint8_t d = s->dec[t];
    return s->fwd_act[t] &&
           (d == SIM_DECISION_RECOMPUTE || (!s->is_saved[t] && d != SIM_DECISION_CHECKPOINT));
}

/* Distinct present inputs of node i, in order, into buf; returns count. */
static int distinct_inputs(const ir_node *n, int *buf) {
    int k = 0;
    for (int j = 0; j < n->n_inputs; j++) {
        int t = n->inputs[j];
        bool dup = t < 0;
        for (int m = 0; m < k && !dup; m++) dup = buf[m] == t;
        if (!dup) buf[k++] = t;
    }
    return k;
}

static void op_push(rw *s, int node, bool rc, int target) {
    if (s->n_ops + 1 > s->cap_ops) {
        size_t c1 = (size_t)s->cap_ops, c2 = c1, c3 = c1;
        oc_grow((void **)&s->op_node, &c1, (size_t)s->n_ops + 1, sizeof(int));
        oc_grow((void **)&s->op_rc, &c2, (size_t)s->n_ops + 1, 1);
        oc_grow((void **)&s->op_target, &c3, (size_t)s->n_ops + 1, sizeof(int));
        s->cap_ops = (int)(c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3));
    }
    s->op_node[s->n_ops] = node;
    s->op_rc[s->n_ops] = rc;
    s->op_target[s->n_ops++] = target;
}

/* simulator.c rc_insert: the producer's inputs first, then the producer; a producer this
 * block already recomputes re-produces t in that clone. */
static void rc_insert(rw *s, int t) {
    int pi = s->g->tensors[t].producer;
    for (int q = s->block0; q < s->n_ops; q++)
        if (s->op_rc[q] && s->op_node[q] == pi) {
            s->rc_done[t] = 1;
            s->rc_op[t] = q;
            return;
        }
    const ir_node *p = &s->g->nodes[pi];
    int *in = oc_malloc(((size_t)p->n_inputs + 1) * sizeof(int));
    int k = distinct_inputs(p, in);
    for (int j = 0; j < k; j++)
        if (needs_rc(s, in[j]) && !s->rc_done[in[j]]) rc_insert(s, in[j]);
    oc_free(in);
    op_push(s, pi, true, t);
    for (int j = 0; j < p->n_outputs; j++) {
        int o = p->outputs[j];
        if (o >= 0 && (o == t || (needs_rc(s, o) && !s->rc_done[o] && s->is_saved[o]))) {
            s->rc_done[o] = 1;
            s->rc_op[o] = s->n_ops - 1;
        }
    }
}

static int build_sequence(rw *s, oc_err *err) {
    const ir_graph *g = s->g;
    int *in = oc_malloc(((size_t)g->n_tensors + 1) * sizeof(int));
    for (int i = 0; i < s->nn; i++) {
        s->block_start[i] = s->block0 = s->n_ops;
        if (i >= s->fwd_end) {
            int k = distinct_inputs(&g->nodes[i], in);
            for (int j = 0; j < k; j++) {
                int t = in[j];
                if (s->fwd_act[t] && s->dec[t] == SIM_DECISION_RECOMPUTE && !s->rc_done[t])
                    rc_insert(s, t);
            }
        }
        op_push(s, i, false, -1);
    }
    int bwd0 = s->fwd_end < s->nn ? s->block_start[s->fwd_end] : s->n_ops;
    for (int t = 0; t < s->nt; t++) s->first_bwd[t] = s->issue[t] = s->prod_pos[t] = -1;
    for (int q = 0; q < s->n_ops; q++) {
        const ir_node *n = &g->nodes[s->op_node[q]];
        if (!s->op_rc[q])
            for (int j = 0; j < n->n_outputs; j++)
                if (n->outputs[j] >= 0) s->prod_pos[n->outputs[j]] = q;
        if (q < bwd0) continue;
        for (int j = 0; j < n->n_inputs; j++) {
            int t = n->inputs[j];
            if (t >= 0 && s->first_bwd[t] < 0) s->first_bwd[t] = q;
        }
    }
    int rc = OC_OK;
    for (int t = 0; t < s->nt && rc == OC_OK; t++) {
        if (s->dec[t] != SIM_DECISION_SWAP) continue;
        if (s->first_bwd[t] < 0) {
            rc = oc_fail(err, "rewrite: tensor '%s' is swapped but no backward node reads it",
                         g->tensors[t].name);
            break;
        }
        s->issue[t] = s->first_bwd[t];
    }
    oc_free(in);
    return rc;
}

static char *unique_name(const ir_graph *g, const char *base) {
    char *s = oc_strdup(base);
    while (ir_tensor_find(g, s) >= 0) {
        char *t = oc_sprintf("%s~", s);
        oc_free(s);
        s = t;
    }
    return s;
}

/* A new tensor of ng shaped like source tensor src, named base (made unique). */
static int tensor_like(rw *s, int src, const char *base, ir_kind kind) {
    const ir_tensor *x = &s->g->tensors[src];
    char *name = unique_name(s->ng, base);
    int t = ir_tensor_add(s->ng, name, x->dtype);
    oc_free(name);
    ir_tensor_set_shape(&s->ng->tensors[t], x->rank, x->dims);
    s->ng->tensors[t].kind = kind;
    return t;
}

static void set_string_attr(ir_graph *g, int node, const char *name, const char *v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_STRING, .s = (char *)v};
    ir_node_add_attr(g, node, &a);
}

static int new_node(rw *s, const char *name, op_kind op, int src, rewrite_stream st) {
    int n = op_node_add(s->ng, name, op);
    if (src >= 0) { /* a copy keeps its domain (a Gelu below opset 20 is in OC_DOMAIN) */
        oc_free(s->ng->nodes[n].domain);
        s->ng->nodes[n].domain = oc_strdup(s->g->nodes[src].domain);
    }
    if (n >= s->cap_new) {
        size_t cap = (size_t)s->cap_new;
        oc_grow((void **)&s->src_node, &cap, (size_t)n + 1, sizeof(int));
        s->cap_new = (int)cap;
    }
    s->src_node[n] = src;
    (void)st;
    return n;
}

static void emit_swap_out(rw *s, int t) {
    const char *nm = s->g->tensors[t].name;
    char *name = oc_sprintf("%s/swap_out", nm), *hname = oc_sprintf("%s/host", nm);
    int n = new_node(s, name, OP_SWAP_OUT, -1, REWRITE_STREAM_D2H);
    s->host[t] = tensor_like(s, t, hname, s->g->tensors[t].kind);
    ir_node_add_input(s->ng, n, t);
    ir_node_add_output(s->ng, n, s->host[t]);
    set_string_attr(s->ng, n, PLAN_ATTR_STREAM, "d2h");
    oc_free(name);
    oc_free(hname);
}

static void emit_swap_in(rw *s, int t) {
    const char *nm = s->g->tensors[t].name;
    char *name = oc_sprintf("%s/swap_in", nm), *dname = oc_sprintf("%s/swapin", nm);
    OC_ASSERT(s->host[t] >= 0);
    int n = new_node(s, name, OP_SWAP_IN, -1, REWRITE_STREAM_H2D);
    s->swapin[t] = tensor_like(s, t, dname, IR_KIND_SAVED);
    ir_node_add_input(s->ng, n, s->host[t]);
    ir_node_add_output(s->ng, n, s->swapin[t]);
    set_string_attr(s->ng, n, PLAN_ATTR_STREAM, "h2d");
    oc_free(name);
    oc_free(dname);
}

/* The name a backward op reads for source tensor t. */
static int bwd_name(rw *s, int t, oc_err *err, int *out) {
    *out = t;
    if (t < 0) return OC_OK;
    if (s->dec[t] == SIM_DECISION_SWAP) *out = s->swapin[t];
    else if (needs_rc(s, t)) *out = s->cur_rc[t];
    if (*out < 0)
        return oc_fail(err, "rewrite: tensor '%s' is read in backward before its %s",
                       s->g->tensors[t].name,
                       s->dec[t] == SIM_DECISION_SWAP ? op_name(OP_SWAP_IN) : "recomputation");
    return OC_OK;
}

static void copy_attrs(rw *s, int n, const ir_node *src) {
    for (int a = 0; a < src->n_attrs; a++) ir_node_add_attr(s->ng, n, &src->attrs[a]);
}

static int emit_clone(rw *s, int q, oc_err *err) {
    int p = s->op_node[q], t = s->op_target[q];
    const ir_node *src = &s->g->nodes[p];
    int k = ++s->n_clones[p];
    char *name = oc_sprintf("%s/recompute%d", src->name, k);
    int n = new_node(s, name, (op_kind)src->op, p, REWRITE_STREAM_COMPUTE);
    oc_free(name);
    for (int j = 0; j < src->n_inputs; j++) {
        int in;
        if (bwd_name(s, src->inputs[j], err, &in)) return OC_ERR;
        ir_node_add_input(s->ng, n, in);
    }
    bool bn = src->op == OP_BATCH_NORM;
    int n_out = src->n_outputs;
    /* Opset <= 13 BatchNormalization trains when it has more than one output:
     * with the running statistics dropped, saved_mean / saved_var keep it so. */
    bool bn_saved_stats = bn && s->g->opset < 14 && n_out > 1;
    if (bn_saved_stats) n_out = 5;
    for (int j = 0; j < n_out; j++) {
        int o = j < src->n_outputs ? src->outputs[j] : -1;
        bool alias = op_output_alias(src, j) >= 0;
        if (alias) {
            ir_node_add_output(s->ng, n, -1);
            continue;
        }
        if (o < 0 && !(bn_saved_stats && j >= 3)) {
            ir_node_add_output(s->ng, n, -1);
            continue;
        }
        int nt;
        if (o >= 0) {
            char *nm = oc_sprintf("%s/rc%d", s->g->tensors[o].name, k);
            nt = tensor_like(s, o, nm, IR_KIND_SAVED);
            oc_free(nm);
        } else { /* saved_mean / saved_var (C) like the scale input */
            char *nm = oc_sprintf("%s/rc%d_%s", src->name, k, j == 3 ? "saved_mean" : "saved_var");
            nt = tensor_like(s, src->inputs[1], nm, IR_KIND_ACTIVATION);
            oc_free(nm);
        }
        ir_node_add_output(s->ng, n, nt);
        if (o >= 0 &&
            (o == t || s->rc_op[o] == q || (needs_rc(s, o) && s->cur_rc[o] < 0 && s->is_saved[o])))
            s->cur_rc[o] = nt;
    }
    copy_attrs(s, n, src);
    set_string_attr(s->ng, n, PLAN_ATTR_STREAM, "compute");
    set_string_attr(s->ng, n, PLAN_ATTR_RECOMPUTE_OF, src->name);
    return OC_OK;
}

static int emit_node(rw *s, int q, bool backward, oc_err *err) {
    int i = s->op_node[q];
    const ir_node *src = &s->g->nodes[i];
    int n = new_node(s, src->name, (op_kind)src->op, i, REWRITE_STREAM_COMPUTE);
    for (int j = 0; j < src->n_inputs; j++) {
        int in = src->inputs[j];
        if (backward && bwd_name(s, in, err, &in)) return OC_ERR;
        ir_node_add_input(s->ng, n, in);
    }
    for (int j = 0; j < src->n_outputs; j++) ir_node_add_output(s->ng, n, src->outputs[j]);
    copy_attrs(s, n, src);
    set_string_attr(s->ng, n, PLAN_ATTR_STREAM, "compute");
    /* SwapOuts of what it produced, in tensor order (the simulator's D2H order). */
    int *outs = oc_malloc(((size_t)src->n_outputs + 1) * sizeof(int)), no = 0;
    for (int j = 0; j < src->n_outputs; j++)
        if (src->outputs[j] >= 0 && s->dec[src->outputs[j]] == SIM_DECISION_SWAP)
            outs[no++] = src->outputs[j];
    for (int a = 1; a < no; a++)
        for (int b = a; b > 0 && outs[b - 1] > outs[b]; b--) {
            int tmp = outs[b];
            outs[b] = outs[b - 1], outs[b - 1] = tmp;
        }
    for (int a = 0; a < no; a++) emit_swap_out(s, outs[a]);
    oc_free(outs);
    return OC_OK;
}

/* Copies every tensor of g into ng with the same index. */
static void copy_tensors(rw *s) {
    const ir_graph *g = s->g;
    ir_graph *ng = s->ng;
    oc_free(ng->name); /* ir_graph_new's "" */
    ng->name = oc_strdup(g->name ? g->name : "outcore");
    ng->model_dir = g->model_dir ? oc_strdup(g->model_dir) : NULL;
    ng->model_path = g->model_path ? oc_strdup(g->model_path) : NULL;
    ng->producer_name = g->producer_name ? oc_strdup(g->producer_name) : NULL;
    ng->opset = g->opset;
    ng->ir_version = g->ir_version;
    ng->host = g->host ? host_inputs_clone(g->host) : NULL;
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        int u = ir_tensor_add(ng, x->name, x->dtype);
        OC_ASSERT(u == t);
        ir_tensor *y = &ng->tensors[u];
        if (x->rank >= 0) ir_tensor_set_shape(y, x->rank, x->dims);
        y->kind = x->kind;
        y->is_initializer = x->is_initializer;
        y->keep_unread = x->keep_unread;
        y->is_buffer = x->is_buffer;
        y->is_frozen = x->is_frozen;
        y->is_export_constant = x->is_export_constant;
        y->is_host_input = x->is_host_input;
        y->data_src = x->data_src;
        if (x->data_src == IR_DATA_INLINE) {
            ir_tensor_set_data(y, x->data, x->data_bytes);
        } else if (x->data_src == IR_DATA_EXTERNAL) {
            y->ext_location = oc_strdup(x->ext_location);
            y->ext_offset = x->ext_offset;
            y->ext_length = x->ext_length;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) ir_graph_add_input(ng, g->inputs[i]);
}

/* Graph outputs as the exporter writes them: the loss, then every in-place
 * updated tensor (so a reloaded plan has the same lifetimes). */
static void set_outputs(train_graph *ntg, int loss) {
    ir_graph *g = ntg->g;
    oc_free(g->outputs);
    g->outputs = oc_malloc(((size_t)g->n_tensors + 1) * sizeof(int));
    g->n_outputs = 0;
    for (int t = 0; t < g->n_tensors; t++) g->tensors[t].is_graph_output = false;
    g->outputs[g->n_outputs++] = loss;
    g->tensors[loss].is_graph_output = true;
    for (int t = 0; t < g->n_tensors; t++)
        if (ntg->alias_of[t] >= 0 && t != loss) {
            g->outputs[g->n_outputs++] = t;
            g->tensors[t].is_graph_output = true;
        }
}

/* The plan's structure, carried from the source step's (train_structure.h
 * records it): an emitted node keeps its phase and forward partner; a recompute
 * clone is backward (forward when it comes before the loss node: the simulator
 * counts the loss as backward, so the loss's input may be recomputed for it); a swap takes its predecessor's phase, backward after the
 * loss. Tensors keep their indices, kinds, gradients and the saved list. */
static void carry_structure(const rw *s, train_graph *ntg) {
    const train_graph *tg = s->tg;
    const ir_graph *ng = ntg->g;
    int nn = ng->n_nodes, nt = ng->n_tensors;
    int *new_of = oc_malloc(((size_t)s->nn + 1) * sizeof(int));
    ntg->phase = oc_calloc((size_t)nn + 1, sizeof *ntg->phase);
    ntg->fwd_of = oc_malloc(((size_t)nn + 1) * sizeof(int));
    ntg->grad_of = oc_malloc(((size_t)nt + 1) * sizeof(int));
    ntg->saved = oc_malloc(((size_t)tg->n_saved + 1) * sizeof(int));
    for (int i = 0; i < s->nn; i++) new_of[i] = -1;
    train_phase prev = TRAIN_PHASE_FORWARD;
    for (int n = 0; n < nn; n++) {
        int src = s->src_node[n];
        bool clone = src >= 0 && ir_attr_find(&ng->nodes[n], PLAN_ATTR_RECOMPUTE_OF);
        if (src >= 0 && !clone) new_of[src] = n;
        /* a clone before the loss node (the loss's own input recomputed) is forward */
        ntg->phase[n] = clone      ? (prev == TRAIN_PHASE_FORWARD ? prev : TRAIN_PHASE_BACKWARD)
                        : src >= 0 ? tg->phase[src]
                        : prev == TRAIN_PHASE_LOSS ? TRAIN_PHASE_BACKWARD
                                                   : prev;
        if (ntg->phase[n] == TRAIN_PHASE_LOSS) ntg->n_forward = n + 1;
        prev = ntg->phase[n];
        ntg->fwd_of[n] = -1;
    }
    for (int n = 0; n < nn; n++) {
        int src = s->src_node[n];
        if (src >= 0 && new_of[src] == n && tg->fwd_of[src] >= 0)
            ntg->fwd_of[n] = new_of[tg->fwd_of[src]];
    }
    for (int t = 0; t < nt; t++) ntg->grad_of[t] = t < s->nt ? tg->grad_of[t] : -1;
    memcpy(ntg->saved, tg->saved, (size_t)tg->n_saved * sizeof(int));
    ntg->n_saved = tg->n_saved;
    ntg->loss_tensor = tg->loss_tensor;
    ntg->label_tensor = tg->label_tensor;
    train_mark_aliases(ntg);
    oc_free(new_of);
}

static void map_timeline(rw *s, const sim_timeline *tl, rewrite_result *r) {
    int nn = s->ng->n_nodes;
    r->start = oc_malloc(((size_t)nn + 1) * sizeof(double));
    r->end = oc_malloc(((size_t)nn + 1) * sizeof(double));
    for (int i = 0; i < nn; i++) r->start[i] = r->end[i] = -1;
    if (!tl) return;
    /* Per source node: its run, then its clones in emission order. */
    int *node_of = oc_malloc(((size_t)s->nn + 1) * sizeof(int));
    int *clone_seen = oc_calloc((size_t)s->nn + 1, sizeof(int));
    int *so = oc_malloc(((size_t)s->nt + 1) * sizeof(int)),
        *si = oc_malloc(((size_t)s->nt + 1) * sizeof(int));
    for (int i = 0; i < s->nn; i++) node_of[i] = -1;
    for (int t = 0; t < s->nt; t++) so[t] = si[t] = -1;
    for (int i = 0; i < nn; i++) {
        const ir_node *n = &s->ng->nodes[i];
        if (s->src_node[i] >= 0 && !ir_attr_find(n, PLAN_ATTR_RECOMPUTE_OF))
            node_of[s->src_node[i]] = i;
        if (op_is_swap_out(n) && n->inputs[0] < s->nt) so[n->inputs[0]] = i;
    }
    for (int t = 0; t < s->nt; t++)
        if (s->swapin[t] >= 0) si[t] = s->ng->tensors[s->swapin[t]].producer;
    for (int e = 0; e < tl->n_events; e++) {
        const sim_event *ev = &tl->events[e];
        int idx = -1;
        if (ev->kind == SIM_EVENT_NODE) idx = node_of[ev->index];
        else if (ev->kind == SIM_EVENT_SWAP_OUT) idx = so[ev->index];
        else if (ev->kind == SIM_EVENT_SWAP_IN) idx = si[ev->index];
        else if (ev->kind == SIM_EVENT_INPUT) continue; /* the executor's copy, not a node */
        else {
            int want = ++clone_seen[ev->index], k = 0;
            for (int i = 0; i < nn && idx < 0; i++)
                if (s->src_node[i] == ev->index &&
                    ir_attr_find(&s->ng->nodes[i], PLAN_ATTR_RECOMPUTE_OF) && ++k == want)
                    idx = i;
        }
        if (idx >= 0) r->start[idx] = ev->start, r->end[idx] = ev->end;
    }
    oc_free(node_of), oc_free(clone_seen), oc_free(so), oc_free(si);
}

/* With a timeline: a SwapIn goes where the simulator started it, before the
 * first op (at or after its issue point) that started later. The simulator
 * delays a SwapIn until its bytes fit; placing it at the issue point would
 * make the layout hold its bytes earlier than the simulated memory did. */
static void place_at_start(rw *s, const sim_timeline *tl) {
    double *op_start = oc_malloc(((size_t)s->n_ops + 1) * sizeof(double));
    double *si_start = oc_malloc(((size_t)s->nt + 1) * sizeof(double));
    int *node_op = oc_malloc(((size_t)s->nn + 1) * sizeof(int));
    int *rc_seen = oc_calloc((size_t)s->nn + 1, sizeof(int));
    for (int q = 0; q < s->n_ops; q++) {
        op_start[q] = -1;
        if (!s->op_rc[q]) node_op[s->op_node[q]] = q;
    }
    for (int t = 0; t < s->nt; t++) si_start[t] = -1;
    for (int e = 0; e < tl->n_events; e++) {
        const sim_event *ev = &tl->events[e];
        if (ev->kind == SIM_EVENT_NODE) op_start[node_op[ev->index]] = ev->start;
        else if (ev->kind == SIM_EVENT_SWAP_IN) si_start[ev->index] = ev->start;
        else if (ev->kind == SIM_EVENT_RECOMPUTE) {
            int want = ++rc_seen[ev->index], k = 0;
            for (int q = 0; q < s->n_ops; q++)
                if (s->op_rc[q] && s->op_node[q] == ev->index && ++k == want) {
                    op_start[q] = ev->start;
                    break;
                }
        }
    }
    for (int t = 0; t < s->nt; t++) {
        if (s->dec[t] != SIM_DECISION_SWAP || si_start[t] < 0) continue;
        int q = s->issue[t];
        while (q < s->first_bwd[t] && op_start[q] >= 0 && op_start[q] <= si_start[t]) q++;
        s->issue[t] = q;
    }
    oc_free(op_start), oc_free(si_start), oc_free(node_op), oc_free(rc_seen);
}

int rewrite_plan(const train_graph *tg, const sim_plan *p, const sim_timeline *tl,
                 rewrite_result *out, oc_err *err) {
    memset(out, 0, sizeof *out);
    OC_ASSERT(p->tg == tg);
    const ir_graph *g = tg->g;
    rw s = {.tg = tg, .g = g, .dec = p->decision, .nt = g->n_tensors, .nn = g->n_nodes};
    size_t nt1 = (size_t)s.nt + 1, nn1 = (size_t)s.nn + 1;
    while (s.fwd_end < s.nn && tg->phase[s.fwd_end] == TRAIN_PHASE_FORWARD) s.fwd_end++;
    s.fwd_act = oc_calloc(nt1, 1);
    s.is_saved = oc_calloc(nt1, 1);
    s.rc_done = oc_calloc(nt1, 1);
    s.block_start = oc_calloc(nn1, sizeof(int));
    s.first_bwd = oc_calloc(nt1, sizeof(int));
    s.issue = oc_calloc(nt1, sizeof(int));
    s.prod_pos = oc_calloc(nt1, sizeof(int));
    s.cur_rc = oc_malloc(nt1 * sizeof(int));
    s.rc_op = oc_malloc(nt1 * sizeof(int));
    s.swapin = oc_malloc(nt1 * sizeof(int));
    s.host = oc_malloc(nt1 * sizeof(int));
    s.n_clones = oc_calloc(nn1, sizeof(int));
    for (int t = 0; t < s.nt; t++) {
        const ir_tensor *x = &g->tensors[t];
        s.fwd_act[t] =
            !train_tensor_persistent(tg, t) && x->producer >= 0 && x->producer < tg->n_forward;
        s.cur_rc[t] = s.rc_op[t] = s.swapin[t] = s.host[t] = -1;
    }
    for (int i = 0; i < tg->n_saved; i++) s.is_saved[tg->saved[i]] = 1;
    int rc = OC_OK;
    for (int t = 0; t < s.nt && rc == OC_OK; t++) {
        if (s.dec[t] == SIM_DECISION_CHECKPOINT && (s.is_saved[t] || !s.fwd_act[t]))
            rc = oc_fail(err,
                         "rewrite: tensor '%s' is a checkpoint but not a forward activation "
                         "outside the saved ones",
                         g->tensors[t].name);
        else if (s.dec[t] != SIM_DECISION_KEEP && s.dec[t] != SIM_DECISION_CHECKPOINT &&
                 !s.is_saved[t])
            rc = oc_fail(err, "rewrite: tensor '%s' is %s but not a saved activation",
                         g->tensors[t].name, sim_decision_name((sim_decision)s.dec[t]));
        else if (s.dec[t] == SIM_DECISION_RECOMPUTE && !s.fwd_act[t])
            rc = oc_fail(err, "rewrite: tensor '%s' has no forward producer to recompute",
                         g->tensors[t].name);
    }
    if (rc == OC_OK) rc = build_sequence(&s, err);
    /* Issue points from the plan (the simulator's checks apply). */
    for (int t = 0; t < s.nt && rc == OC_OK; t++) {
        int at = p->swap_in_at[t];
        if (s.dec[t] != SIM_DECISION_SWAP || at < 0) continue;
        if (at >= s.nn)
            rc = oc_fail(err, "rewrite: tensor '%s': swap-in issue node %d out of range",
                         g->tensors[t].name, at);
        else if (s.block_start[at] > s.first_bwd[t])
            rc = oc_fail(err,
                         "rewrite: tensor '%s': swap-in issued at node '%s', after its "
                         "first backward reader",
                         g->tensors[t].name, g->nodes[at].name);
        else s.issue[t] = s.block_start[at];
    }
    if (rc == OC_OK && tl) place_at_start(&s, tl);
    train_graph *ntg = NULL;
    if (rc == OC_OK) {
        s.ng = ir_graph_new();
        copy_tensors(&s);
        int bwd0 = s.fwd_end < s.nn ? s.block_start[s.fwd_end] : s.n_ops;
        /* Swapped tensors by (issue, first need, production, index): SwapIn order. */
        int *sw = oc_malloc(nt1 * sizeof(int)), n_sw = 0;
        for (int t = 0; t < s.nt; t++)
            if (s.dec[t] == SIM_DECISION_SWAP) sw[n_sw++] = t;
        for (int a = 1; a < n_sw; a++)
            for (int b = a; b > 0; b--) {
                int x = sw[b - 1], y = sw[b];
                bool swap = s.issue[x] != s.issue[y]           ? s.issue[x] > s.issue[y]
                            : s.first_bwd[x] != s.first_bwd[y] ? s.first_bwd[x] > s.first_bwd[y]
                            : s.prod_pos[x] != s.prod_pos[y]   ? s.prod_pos[x] > s.prod_pos[y]
                                                               : x > y;
                if (!swap) break;
                sw[b - 1] = y, sw[b] = x;
            }
        for (int t = 0; t < s.nt; t++) /* swapped graph inputs: copied out first */
            if (s.dec[t] == SIM_DECISION_SWAP && g->tensors[t].producer < 0) emit_swap_out(&s, t);
        int k = 0;
        for (int q = 0; q < s.n_ops && rc == OC_OK; q++) {
            while (k < n_sw && s.issue[sw[k]] == q) emit_swap_in(&s, sw[k++]);
            rc = s.op_rc[q] ? emit_clone(&s, q, err) : emit_node(&s, q, q >= bwd0, err);
            if (s.op_rc[q]) out->n_recompute++;
        }
        out->n_swap_in = out->n_swap_out = n_sw;
        oc_free(sw);
        ntg = oc_calloc(1, sizeof *ntg);
        ntg->g = s.ng;
        ntg->opts = tg->opts;
        if (rc == OC_OK) {
            carry_structure(&s, ntg); /* aliases first: the outputs depend on them */
            set_outputs(ntg, tg->loss_tensor);
        }
        if (rc == OC_OK) {
            out->tg = ntg;
            map_timeline(&s, tl, out);
            out->src_node = s.src_node;
            s.src_node = NULL;
        } else {
            train_graph_free(ntg);
        }
    }
    void *fr[] = {s.fwd_act,     s.is_saved,  s.rc_done,  s.op_node,  s.op_rc,  s.op_target,
                  s.block_start, s.first_bwd, s.issue,    s.prod_pos, s.cur_rc, s.rc_op,
                  s.swapin,      s.host,      s.n_clones, s.src_node};
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++) oc_free(fr[i]);
    if (rc) memset(out, 0, sizeof *out);
    return rc;
}

void rewrite_result_free(rewrite_result *r) {
    if (!r) return;
    train_graph_free(r->tg);
    oc_free(r->src_node);
    oc_free(r->start);
    oc_free(r->end);
    memset(r, 0, sizeof *r);
}

rewrite_stream rewrite_node_stream(const ir_node *n) {
    if (op_is_swap_out(n)) return REWRITE_STREAM_D2H;
    if (op_is_swap_in(n)) return REWRITE_STREAM_H2D;
    return REWRITE_STREAM_COMPUTE;
}

const char *rewrite_stream_name(rewrite_stream s) {
    return s == REWRITE_STREAM_D2H ? "d2h" : s == REWRITE_STREAM_H2D ? "h2d" : "compute";
}
