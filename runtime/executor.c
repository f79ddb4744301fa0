/* executor.c — see executor.h. The program is rebuilt from the training graph
 * once; each step enqueues it and syncs (so no hazard crosses a step). */
#include "executor.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ir/host_inputs.h"
#include "plan/lifetimes.h"
#include "ir/ops/op_table.h"

/* ---- program ---- */

static bool overlap(const rt_region *a, const rt_region *b) {
    return a->space == b->space && a->bytes > 0 && b->bytes > 0 && a->off < b->off + b->bytes &&
           b->off < a->off + a->bytes;
}

static bool any_overlap(const rt_region *a, int na, const rt_region *b, int nb) {
    for (int i = 0; i < na; i++)
        for (int k = 0; k < nb; k++)
            if (overlap(&a[i], &b[k])) return true;
    return false;
}

/* Op i (earlier) and op j conflict when one writes bytes the other touches. */
static bool conflict(const rt_op *i, const rt_op *j) {
    return any_overlap(i->writes, i->n_writes, j->reads, j->n_reads) ||
           any_overlap(i->writes, i->n_writes, j->writes, j->n_writes) ||
           any_overlap(i->reads, i->n_reads, j->writes, j->n_writes);
}

int rt_program_deps(rt_op *ops, int n) {
    int total = 0;
    for (int j = 0; j < n; j++) {
        for (int s = 0; s < RT_STREAM__COUNT; s++) ops[j].waits[s] = -1;
        int missing = RT_STREAM__COUNT - 1;
        /* The latest conflicting op per other stream suffices: a stream is FIFO. */
        for (int i = j - 1; i >= 0 && missing > 0; i--) {
            int s = ops[i].stream;
            if (s == (int)ops[j].stream || ops[j].waits[s] >= 0) continue;
            if (conflict(&ops[i], &ops[j])) {
                ops[j].waits[s] = i;
                missing--;
                total++;
            }
        }
    }
    return total;
}

void rt_program_run(rt_backend *b, const rt_op *ops, int n, void **events, int64_t step,
                    bool stamped) {
    bool *needed = oc_calloc((size_t)n + 1, sizeof(bool));
    for (int j = 0; j < n; j++)
        for (int s = 0; s < RT_STREAM__COUNT; s++)
            if (ops[j].waits[s] >= 0) needed[ops[j].waits[s]] = true;
    if (stamped) b->stamp(b, RT_STREAM_COMPUTE, 0);
    for (int j = 0; j < n; j++) {
        const rt_op *op = &ops[j];
        for (int s = 0; s < RT_STREAM__COUNT; s++)
            if (op->waits[s] >= 0) b->wait(b, op->stream, events[op->waits[s]]);
        if (stamped) b->stamp(b, op->stream, 1 + 2 * j);
        switch (op->kind) {
        case RT_OP_NODE: b->run_node(b, op->stream, op->args, step); break;
        case RT_OP_COPY: b->copy(b, op->stream, op->dst, op->src, op->bytes); break;
        case RT_OP_HOST_FN: b->host_fn(b, op->stream, op->fn, op->ctx, step); break;
        }
        if (stamped) b->stamp(b, op->stream, 2 + 2 * j);
        if (needed[j]) {
            if (!events[j]) events[j] = b->event_new(b);
            b->record(b, op->stream, events[j]);
        }
    }
    oc_free(needed);
}

void rt_program_events_free(rt_backend *b, void **events, int n) {
    for (int i = 0; i < n; i++)
        if (events[i]) b->event_free(b, events[i]);
}

/* ---- executor ---- */

struct rt_exec {
    const train_graph *tg;
    rt_backend *b;
    int64_t capacity, high_water;
    void *arena;
    uint8_t *host; /* one pinned block: inputs, loss, swapped tensors */
    int64_t host_bytes;
    int *root;               /* per tensor: storage owner (alias_of followed) */
    rt_space *space;         /* per tensor */
    int64_t *off;            /* per tensor: offset in its space (roots; aliases copy) */
    bool *placed;            /* per root tensor: has storage (some op touches it) */
    int64_t *host_input_off; /* per graph input */
    void **host_io;          /* g->host's inputs then outputs: their host buffers (host_inputs.h) */
    int64_t loss_off;
    rt_op *ops;
    int n_ops;
    rt_region *regions; /* every op's reads then writes */
    kernel_args *args;  /* per node */
    void **ptrs;        /* in/out pointer arrays of every node */
    void **events;
    void *scratch;     /* the shared workspace (see plan_scratch) */
    void *scratch_own; /* plans: the shared workspace, outside the planned arena */
    size_t scratch_bytes;
    int64_t *ws_off, *ws_bytes; /* plans: per node, its planned workspace region (-1 / 0) */
    bool *ws_own;               /* plans: per node, runs in its planned region */
    int n_deps;
    double *stamps; /* rt_exec_trace_on: per step, 1 + 2 * n_ops backend stamps */
    enum { GRAPH_OFF, GRAPH_WANTED, GRAPH_READY } graph;
    int64_t steps_run;
};

/* GRAPH_WANTED, or GRAPH_OFF with the reason on stderr. */
static int graph_mode(const rt_exec *x) {
    if (!x->b->capture_begin) {
        fprintf(stderr, "graph: the %s backend has no graphs; the step runs on its streams\n",
                x->b->name);
        return GRAPH_OFF;
    }
    for (int j = 0; j < x->n_ops; j++)
        if (x->ops[j].kind == RT_OP_HOST_FN) {
            fprintf(stderr, "graph: off: the step calls host functions\n");
            return GRAPH_OFF;
        }
    return GRAPH_WANTED;
}

static bool is_copy_node(const ir_node *n, rt_stream_id *s) {
    if (n->op == OP_SWAP_OUT) *s = RT_STREAM_D2H;
    else if (n->op == OP_SWAP_IN) *s = RT_STREAM_H2D;
    else return false;
    return true;
}

static int64_t tbytes(const ir_tensor *t) {
    int64_t b = 0;
    if (!ir_tensor_bytes(t, &b)) OC_ASSERT(false && "tensor without a static shape");
    return b;
}

static void *ptr_of(rt_exec *x, int t) {
    int r = x->root[t];
    return x->space[r] == RT_SPACE_HOST ? (void *)(x->host + x->off[r])
                                        : (void *)((uint8_t *)x->arena + x->off[r]);
}

static rt_region region_of(rt_exec *x, int t) {
    int r = x->root[t];
    return (rt_region){x->space[r], x->off[r], tbytes(&x->tg->g->tensors[r])};
}

static int check_supported(const train_graph *tg, rt_backend *b, oc_err *err) {
    const ir_graph *g = tg->g;
    bool noted = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        rt_stream_id s;
        if (is_copy_node(n, &s)) continue;
        if (!b->supported(b, n->op))
            return oc_fail(err, "%s: node '%s': op '%s%s%s' is not supported by the %s backend",
                           g->model_path ? g->model_path : "model", n->name, n->domain,
                           *n->domain ? "." : "", n->op_type, b->name);
        for (int o = 0; o < n->n_outputs && b->half && b->half_note && !noted; o++)
            if (n->outputs[o] >= 0 && ir_dtype_is_half(g->tensors[n->outputs[o]].dtype)) {
                fprintf(stderr, "outcore-run: notice: %s backend: %s\n", b->name, b->half_note);
                noted = true;
            }
        for (int o = 0; o < n->n_outputs && !b->half; o++)
            if (n->outputs[o] >= 0 && ir_dtype_is_half(g->tensors[n->outputs[o]].dtype))
                return oc_fail(err,
                               "%s: node '%s' writes %s tensor '%s': the %s backend runs "
                               "float32 only so far (--precision bf16|fp16 runs on --backend cpu)",
                               g->model_path ? g->model_path : "model", n->name,
                               ir_dtype_name(g->tensors[n->outputs[o]].dtype),
                               g->tensors[n->outputs[o]].name, b->name);
    }
    return OC_OK;
}

/* The plan's offsets (o->offsets, per tensor) for every device tensor some op
 * touches; the high-water mark is the end of the highest one, which must not
 * pass the planned arena (o->planned_bytes), nor that the budget (o->capacity). */
static int planned_layout(rt_exec *x, const rt_exec_opts *o, const arena_item *items, int nt,
                          int64_t *offs, oc_err *err) {
    const ir_graph *g = x->tg->g;
    x->high_water = 0;
    offs[nt] = 0;
    for (int t = 0; t < nt; t++) {
        offs[t] = 0;
        if (items[t].bytes <= 0) continue;
        if (o->offsets[t] < 0 || o->offsets[t] % PLAN_ALIGN)
            return oc_fail(err, "plan: tensor '%s' has no valid arena offset (%" PRId64 ")",
                           g->tensors[t].name, o->offsets[t]);
        offs[t] = o->offsets[t];
        int64_t end = offs[t] + (items[t].bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
        if (end > x->high_water) x->high_water = end;
    }
    for (int i = 0; x->ws_off && i < g->n_nodes; i++) {
        if (x->ws_bytes[i] <= 0) continue;
        if (x->ws_off[i] < 0 || x->ws_off[i] % PLAN_ALIGN)
            return oc_fail(err, "plan: node '%s' has no valid workspace offset (%" PRId64 ")",
                           g->nodes[i].name, x->ws_off[i]);
        int64_t end = x->ws_off[i] + x->ws_bytes[i];
        if (end > x->high_water) x->high_water = end;
    }
    if (x->high_water > o->planned_bytes)
        return oc_fail(err,
                       "plan: the layout ends at byte %" PRId64 ", past the planned arena "
                       "of %" PRId64 " bytes",
                       x->high_water, o->planned_bytes);
    if (o->capacity > 0 && o->planned_bytes > o->capacity)
        return oc_fail(err,
                       "the plan's arena needs %" PRId64 " bytes, more than the budget of "
                       "%" PRId64 " bytes",
                       o->planned_bytes, o->capacity);
    return OC_OK;
}

/* The kernels' scratch. Without a plan: one workspace in the arena, the
 * largest any node needs, shared by all (they run in order on the compute
 * stream). With a plan: node i runs in its planned region (outcore_workspace,
 * layout.h), and its kernel chooses within that size (cuDNN's algorithm); a
 * kernel whose fixed need exceeds its region (the cpu backend's im2col when
 * the profile said 0) uses the shared workspace, a separate buffer outside the
 * plan, reported on stderr. */
static void plan_scratch(rt_exec *x, bool planned) {
    const ir_graph *g = x->tg->g;
    x->scratch_bytes = 0;
    int outside = 0, first_outside = -1;
    if (planned) {
        plan_workspaces_of(g, &x->ws_off, &x->ws_bytes);
        x->ws_own = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    }
    for (int i = 0; i < g->n_nodes; i++) {
        size_t limit = planned ? (size_t)x->ws_bytes[i] : SIZE_MAX;
        size_t s = x->b->scratch_bytes(x->b, g, &g->nodes[i], limit);
        if (planned && s <= limit) {
            x->ws_own[i] = x->ws_bytes[i] > 0;
            continue;
        }
        if (planned && outside++ == 0) first_outside = i;
        if (s > x->scratch_bytes) x->scratch_bytes = s;
    }
    if (outside)
        fprintf(stderr,
                "kernel workspace outside the plan: %zu bytes, for %d node(s) whose %s "
                "kernel needs more than the plan's workspace (first: '%s'; plan with a profile "
                "measured on this backend to include it)\n",
                x->scratch_bytes, outside, x->b->name, g->nodes[first_outside].name);
}

/* Roots, spaces, host layout, op list (without regions), and lifetimes. */
static int plan_layout(rt_exec *x, const rt_exec_opts *o, oc_err *err) {
    const train_graph *tg = x->tg;
    const ir_graph *g = tg->g;
    int nt = g->n_tensors;
    x->root = oc_malloc((size_t)nt * sizeof(int));
    x->space = oc_calloc((size_t)nt, sizeof(rt_space));
    x->off = oc_calloc((size_t)nt, sizeof(int64_t));
    x->placed = oc_calloc((size_t)nt, sizeof(bool));
    plan_storage_roots(tg, x->root); /* the layout's: aliases and in-place views */
    /* Host space: graph inputs, the loss, then SwapOut outputs. */
    x->host_input_off = oc_calloc((size_t)g->n_inputs + 1, sizeof(int64_t));
    int64_t h = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        x->host_input_off[i] = h;
        h += (tbytes(&g->tensors[g->inputs[i]]) + 63) / 64 * 64;
    }
    x->loss_off = h;
    h += 64;
    for (int i = 0; i < g->n_nodes; i++) {
        rt_stream_id s;
        const ir_node *n = &g->nodes[i];
        if (is_copy_node(n, &s) && s == RT_STREAM_D2H && n->n_outputs > 0 && n->outputs[0] >= 0) {
            int t = x->root[n->outputs[0]];
            x->space[t] = RT_SPACE_HOST;
            x->off[t] = h;
            h += (tbytes(&g->tensors[t]) + 63) / 64 * 64;
        }
    }
    x->host_bytes = h;

    /* Ops: H2D of each input, the nodes, D2H of the loss. */
    x->n_ops = g->n_inputs + g->n_nodes + 1;
    x->ops = oc_calloc((size_t)x->n_ops, sizeof(rt_op));
    int last_op = x->n_ops - 1;
    arena_item *items = oc_calloc((size_t)nt + 1, sizeof(arena_item));
    for (int t = 0; t < nt; t++) {
        items[t].name = g->tensors[t].name;
        items[t].first = INT32_MAX;
        items[t].last = -1;
    }
#define TOUCH(t, op)                                                                               \
    do {                                                                                           \
        int r_ = x->root[t];                                                                       \
        if ((op) < items[r_].first) items[r_].first = (op);                                        \
        if ((op) > items[r_].last) items[r_].last = (op);                                          \
    } while (0)
    /* An input's copy writes it even when no node reads it (token ids only the host
     * reads, ir/host_inputs.h): it has storage for that op at least. */
    for (int i = 0; i < g->n_inputs; i++) TOUCH(g->inputs[i], i);
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        int op = g->n_inputs + i;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) TOUCH(n->inputs[k], op);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) TOUCH(n->outputs[k], op);
    }
    for (int t = 0; t < nt; t++) {
        bool to_end = g->tensors[t].is_graph_output || (o->keep && o->keep[t]);
        if (to_end) TOUCH(t, last_op);
    }
#undef TOUCH
    for (int t = 0; t < nt; t++) {
        arena_item *it = &items[t];
        const ir_tensor *x_t = &g->tensors[t];
        x->placed[t] = it->last >= 0;
        if (x->root[t] != t || x->space[t] == RT_SPACE_HOST || it->last < 0) {
            it->bytes = 0;
            it->first = it->last = 0;
            continue;
        }
        it->bytes = tbytes(x_t);
        if (x_t->is_initializer) it->first = it->last = ARENA_FOREVER;
    }
    bool planned = o->offsets != NULL;
    plan_scratch(x, planned);
    /* A plan brings its layout (workspaces included); the shared workspace of
     * kernels that do not fit their region is a separate buffer. */
    items[nt] = (arena_item){"(kernel workspace)", planned ? 0 : (int64_t)x->scratch_bytes,
                             ARENA_FOREVER, ARENA_FOREVER};
    int64_t *offs = oc_malloc(((size_t)nt + 1) * sizeof(int64_t));
    int rc = planned ? planned_layout(x, o, items, nt, offs, err)
                     : arena_plan(items, nt + 1, o->capacity, offs, &x->high_water, err);
    if (rc == OC_OK) {
        for (int t = 0; t < nt; t++)
            if (x->space[t] == RT_SPACE_DEVICE) x->off[t] = offs[t];
        x->capacity = planned ? o->planned_bytes : o->capacity > 0 ? o->capacity : x->high_water;
        OC_ASSERT(x->high_water <= x->capacity);
    }
    int64_t scratch_off = offs[nt];
    oc_free(offs);
    oc_free(items);
    if (rc) return OC_ERR;
    void *host = NULL;
    if (x->b->dev_alloc(x->b, (size_t)(x->capacity ? x->capacity : 1), &x->arena, err) ||
        x->b->host_alloc(x->b, (size_t)x->host_bytes, &host, err))
        return OC_ERR;
    x->host = host;
    x->scratch = x->scratch_bytes ? (uint8_t *)x->arena + scratch_off : NULL;
    if (planned && x->scratch_bytes) {
        if (x->b->dev_alloc(x->b, x->scratch_bytes, &x->scratch_own, err)) return OC_ERR;
        x->scratch = x->scratch_own;
    }
    return OC_OK;
}

/* Ops with their regions, pointers and kernel args. */
static void build_program(rt_exec *x) {
    const ir_graph *g = x->tg->g;
    size_t n_regions = (size_t)g->n_inputs * 2 + 2 + (size_t)g->n_nodes, n_ptrs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        n_regions += (size_t)(g->nodes[i].n_inputs + g->nodes[i].n_outputs);
        n_ptrs += (size_t)(g->nodes[i].n_inputs + g->nodes[i].n_outputs);
    }
    x->regions = oc_calloc(n_regions + 1, sizeof(rt_region));
    x->ptrs = oc_calloc(n_ptrs + 1, sizeof(void *));
    x->args = oc_calloc((size_t)g->n_nodes + 1, sizeof(kernel_args));
    rt_region *r = x->regions;
    void **p = x->ptrs;
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        rt_op *op = &x->ops[i];
        int64_t bytes = tbytes(&g->tensors[t]);
        r[0] = (rt_region){RT_SPACE_HOST, x->host_input_off[i], bytes};
        r[1] = region_of(x, t);
        *op = (rt_op){.kind = RT_OP_COPY,
                      .stream = RT_STREAM_H2D,
                      .reads = &r[0],
                      .n_reads = 1,
                      .writes = &r[1],
                      .n_writes = 1,
                      .dst = ptr_of(x, t),
                      .src = x->host + x->host_input_off[i],
                      .bytes = (size_t)bytes};
        r += 2;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        rt_op *op = &x->ops[g->n_inputs + i];
        op->reads = r;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) r[op->n_reads++] = region_of(x, n->inputs[k]);
        r += op->n_reads;
        op->writes = r;
        /* an in-place view writes nothing (its kernel sees one pointer and returns): no
         * wait for a copy still reading its input */
        bool view = train_view_source(x->tg, i) >= 0;
        for (int k = 0; k < n->n_outputs && !view; k++)
            if (n->outputs[k] >= 0) r[op->n_writes++] = region_of(x, n->outputs[k]);
        /* A planned workspace region is written by its node: copies of tensors that
         * held those bytes before, or will after, are ordered against it. */
        if (x->ws_own && x->ws_own[i])
            r[op->n_writes++] = (rt_region){RT_SPACE_DEVICE, x->ws_off[i], x->ws_bytes[i]};
        r += op->n_writes;
        rt_stream_id s;
        if (is_copy_node(n, &s)) {
            op->kind = RT_OP_COPY;
            op->stream = s;
            op->src = ptr_of(x, n->inputs[0]);
            op->dst = ptr_of(x, n->outputs[0]);
            op->bytes = (size_t)tbytes(&g->tensors[n->outputs[0]]);
            continue;
        }
        kernel_args *a = &x->args[i];
        void **in = p, **out = p + n->n_inputs;
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = n->inputs[k] >= 0 ? ptr_of(x, n->inputs[k]) : NULL;
        for (int k = 0; k < n->n_outputs; k++)
            out[k] = n->outputs[k] >= 0 ? ptr_of(x, n->outputs[k]) : NULL;
        p += n->n_inputs + n->n_outputs;
        *a = (kernel_args){.g = g,
                           .n = n,
                           .in = in,
                           .out = out,
                           .seed = 0,
                           .scratch = x->scratch,
                           .scratch_bytes = x->scratch_bytes};
        if (x->ws_own && x->ws_own[i]) {
            a->scratch = (uint8_t *)x->arena + x->ws_off[i];
            a->scratch_bytes = (size_t)x->ws_bytes[i];
        }
        op->kind = RT_OP_NODE;
        op->stream = RT_STREAM_COMPUTE;
        op->args = a;
    }
    rt_op *op = &x->ops[x->n_ops - 1];
    r[0] = region_of(x, x->tg->loss_tensor);
    r[1] = (rt_region){RT_SPACE_HOST, x->loss_off, 4};
    *op = (rt_op){.kind = RT_OP_COPY,
                  .stream = RT_STREAM_D2H,
                  .reads = &r[0],
                  .n_reads = 1,
                  .writes = &r[1],
                  .n_writes = 1,
                  .dst = x->host + x->loss_off,
                  .src = ptr_of(x, x->tg->loss_tensor),
                  .bytes = 4};
    x->n_deps = rt_program_deps(x->ops, x->n_ops);
    x->events = oc_calloc((size_t)x->n_ops, sizeof(void *));
}

/* g->host's inputs and outputs are graph inputs of g of the same type and shape: their
 * host buffers, where each step's evaluation reads the batch and writes what it gives. */
static int bind_host_inputs(rt_exec *x, oc_err *err) {
    const ir_graph *g = x->tg->g, *h = g->host;
    x->host_io = oc_calloc((size_t)(h->n_inputs + h->n_outputs) + 1, sizeof(void *));
    for (int k = 0; k < h->n_inputs + h->n_outputs; k++) {
        const ir_tensor *ht =
            &h->tensors[k < h->n_inputs ? h->inputs[k] : h->outputs[k - h->n_inputs]];
        int t = ir_tensor_find(g, ht->name), i = 0;
        while (i < g->n_inputs && g->inputs[i] != t) i++;
        const ir_tensor *gt = i < g->n_inputs ? &g->tensors[t] : NULL;
        if (!gt || gt->kind == IR_KIND_LABEL || gt->dtype != ht->dtype || gt->rank != ht->rank ||
            memcmp(gt->dims, ht->dims, (size_t)gt->rank * sizeof(int64_t)) != 0 ||
            (k >= h->n_inputs) != gt->is_host_input)
            return oc_fail(err,
                           "%s: host input program: '%s' is not a %s of the step of its type "
                           "and shape",
                           h->model_path, ht->name,
                           k < h->n_inputs ? "data input" : "host-computed input");
        x->host_io[k] = rt_exec_host_input(x, i);
    }
    return OC_OK;
}

int rt_exec_new(const train_graph *tg, const rt_exec_opts *o, rt_exec **out, oc_err *err) {
    *out = NULL;
    if (check_supported(tg, o->backend, err)) return OC_ERR;
    const ir_tensor *loss = &tg->g->tensors[tg->loss_tensor];
    if (loss->dtype != IR_DTYPE_FLOAT || loss->rank != 0)
        return oc_fail(err, "loss '%s' is not a float scalar", loss->name);
    rt_exec *x = oc_calloc(1, sizeof *x);
    x->tg = tg;
    x->b = o->backend;
    if (plan_layout(x, o, err)) {
        rt_exec_free(x);
        return OC_ERR;
    }
    build_program(x);
    for (int i = 0; i < tg->g->n_nodes; i++) x->args[i].seed = o->seed;
    x->graph = o->graph ? graph_mode(x) : GRAPH_OFF;
    if (tg->g->host && bind_host_inputs(x, err)) {
        rt_exec_free(x);
        return OC_ERR;
    }
    *out = x;
    return OC_OK;
}

void rt_exec_free(rt_exec *x) {
    if (!x) return;
    if (x->graph == GRAPH_READY) x->b->capture_free(x->b);
    if (x->events) rt_program_events_free(x->b, x->events, x->n_ops);
    oc_free(x->stamps);
    if (x->arena) x->b->dev_free(x->b, x->arena);
    if (x->scratch_own) x->b->dev_free(x->b, x->scratch_own);
    oc_free(x->ws_off), oc_free(x->ws_bytes), oc_free(x->ws_own);
    if (x->host) x->b->host_free(x->b, x->host);
    oc_free(x->events);
    oc_free(x->root);
    oc_free(x->space);
    oc_free(x->off);
    oc_free(x->placed);
    oc_free(x->host_input_off);
    oc_free(x->host_io);
    oc_free(x->ops);
    oc_free(x->regions);
    oc_free(x->args);
    oc_free(x->ptrs);
    oc_free(x);
}

int rt_exec_upload_initializers(rt_exec *x, oc_err *err) {
    const ir_graph *g = x->tg->g;
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *s = &g->tensors[t];
        if (!s->is_initializer || x->root[t] != t || !x->placed[t]) continue;
        if (s->data_src != IR_DATA_INLINE || (int64_t)s->data_bytes != tbytes(s))
            return oc_fail(err, "initializer '%s' has no data to upload", s->name);
        if (s->data_bytes) x->b->copy(x->b, RT_STREAM_H2D, ptr_of(x, t), s->data, s->data_bytes);
    }
    return x->b->sync(x->b, err);
}

int rt_exec_data_buffers(rt_exec *x, void **bufs, int cap) {
    int *idx = oc_malloc((size_t)(cap > 0 ? cap : 1) * sizeof(int));
    int n = train_data_inputs(x->tg, idx, cap);
    for (int i = 0; i < n && i < cap; i++) bufs[i] = rt_exec_host_input(x, idx[i]);
    oc_free(idx);
    return n;
}

void *rt_exec_host_input(rt_exec *x, int i) {
    OC_ASSERT(i >= 0 && i < x->tg->g->n_inputs);
    return x->host + x->host_input_off[i];
}

/* The step as a graph: captured on the executor's second step (the first
 * chooses algorithms and allocates what the kernels keep), replayed after. */
static void run_graph(rt_exec *x, int64_t step) {
    if (x->graph == GRAPH_READY) {
        x->b->replay(x->b, step);
        return;
    }
    oc_err why;
    if (x->b->capture_begin(x->b, &why) == OC_OK) {
        rt_program_run(x->b, x->ops, x->n_ops, x->events, step, false);
        if (x->b->capture_end(x->b, &why) == OC_OK) {
            x->graph = GRAPH_READY;
            fprintf(stderr, "graph: step %" PRId64 " captured (%d ops), replayed from here on\n",
                    step, x->n_ops);
            x->b->replay(x->b, step);
            return;
        }
    }
    fprintf(stderr, "graph: capture failed (%s); the steps run on the streams\n", why.msg);
    x->graph = GRAPH_OFF;
    rt_program_run(x->b, x->ops, x->n_ops, x->events, step, false);
}

int rt_exec_step(rt_exec *x, int64_t step, float *loss, oc_err *err) {
    ir_graph *h = x->tg->g->host;
    if (h && host_inputs_eval(h, (const void *const *)x->host_io, x->host_io + h->n_inputs, err))
        return oc_fail_prefix(err, "step %" PRId64, step);
    if (x->graph != GRAPH_OFF && x->steps_run > 0 && !x->stamps) run_graph(x, step);
    else rt_program_run(x->b, x->ops, x->n_ops, x->events, step, x->stamps != NULL);
    x->steps_run++;
    if (x->b->sync(x->b, err)) return oc_fail_prefix(err, "step %" PRId64, step);
    if (x->stamps) {
        if (x->b->stamp_read(x->b, x->stamps, err))
            return oc_fail_prefix(err, "step %" PRId64 ": timestamps", step);
        /* from the step's first stamp on (a copy stream may get there before compute) */
        double t0 = 0;
        for (int i = 0; i < 1 + 2 * x->n_ops; i++)
            if (x->stamps[i] < t0) t0 = x->stamps[i];
        for (int i = 0; i < 1 + 2 * x->n_ops; i++) x->stamps[i] -= t0;
    }
    memcpy(loss, x->host + x->loss_off, sizeof *loss);
    return OC_OK;
}

int rt_exec_trace_on(rt_exec *x, oc_err *err) {
    if (!x->b->stamp_reset)
        return oc_fail(err, "backend '%s' has no timestamps to trace with", x->b->name);
    if (x->b->stamp_reset(x->b, 1 + 2 * x->n_ops, err)) return OC_ERR;
    if (!x->stamps) x->stamps = oc_calloc(1 + 2 * (size_t)x->n_ops, sizeof(double));
    return OC_OK;
}

int rt_exec_n_ops(const rt_exec *x) { return x->n_ops; }

rt_exec_op_info rt_exec_op(const rt_exec *x, int j) {
    OC_ASSERT(j >= 0 && j < x->n_ops);
    const ir_graph *g = x->tg->g;
    rt_exec_op_info o = {.stream = x->ops[j].stream, .node = -1, .tensor = -1, .bytes = 0};
    o.start = x->stamps && !isnan(x->stamps[1 + 2 * j]) ? x->stamps[1 + 2 * j] : -1;
    o.end = x->stamps && !isnan(x->stamps[2 + 2 * j]) ? x->stamps[2 + 2 * j] : -1;
    if (x->ops[j].kind == RT_OP_COPY) o.bytes = (int64_t)x->ops[j].bytes;
    if (j < g->n_inputs) o.tensor = g->inputs[j];
    else if (j == x->n_ops - 1) o.tensor = x->tg->loss_tensor;
    else o.node = j - g->n_inputs;
    return o;
}

int rt_exec_read(rt_exec *x, int tensor, void *dst, oc_err *err) {
    if (!x->placed[x->root[tensor]])
        return oc_fail(err, "tensor '%s' has no storage (no op uses it)",
                       x->tg->g->tensors[tensor].name);
    int64_t n = tbytes(&x->tg->g->tensors[tensor]);
    if (n) x->b->copy(x->b, RT_STREAM_D2H, dst, ptr_of(x, tensor), (size_t)n);
    return x->b->sync(x->b, err);
}

int64_t rt_exec_high_water(const rt_exec *x) { return x->high_water; }
int64_t rt_exec_capacity(const rt_exec *x) { return x->capacity; }
