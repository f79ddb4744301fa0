/* host_inputs.c — integer glue run on the host (host_inputs.h). */
#include "ir/host_inputs.h"

#include <inttypes.h>
#include <string.h>

#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"

struct host_scan {
    bool *host;      /* per tensor: computed from the integer inputs */
    uint8_t **value; /* per tensor: its stand-in value (owned) */
    bool *glue;      /* per node: moves to the host */
    int cap_t, cap_n, n_glue;
};

host_scan *host_scan_new(const ir_graph *g) {
    host_scan *s = oc_calloc(1, sizeof *s);
    s->cap_t = g->n_tensors, s->cap_n = g->n_nodes;
    s->host = oc_calloc((size_t)s->cap_t + 1, sizeof(bool));
    s->value = oc_calloc((size_t)s->cap_t + 1, sizeof(uint8_t *));
    s->glue = oc_calloc((size_t)s->cap_n + 1, sizeof(bool));
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *x = &g->tensors[g->inputs[i]];
        s->host[g->inputs[i]] =
            x->kind == IR_KIND_INPUT && (x->dtype == IR_DTYPE_INT64 || x->dtype == IR_DTYPE_INT32);
    }
    return s;
}

void host_scan_free(host_scan *s) {
    if (!s) return;
    for (int t = 0; t < s->cap_t; t++) oc_free(s->value[t]);
    oc_free(s->host), oc_free(s->value), oc_free(s->glue), oc_free(s);
}

/* Lowering adds tensors and nodes while the scan runs: the tables follow. */
static void grow(host_scan *s, const ir_graph *g) {
    if (g->n_tensors > s->cap_t) {
        size_t n = (size_t)g->n_tensors, old = (size_t)s->cap_t;
        s->host = oc_realloc(s->host, n * sizeof(bool));
        s->value = oc_realloc(s->value, n * sizeof(uint8_t *));
        memset(s->host + old, 0, (n - old) * sizeof(bool));
        memset(s->value + old, 0, (n - old) * sizeof(uint8_t *));
        s->cap_t = g->n_tensors;
    }
    if (g->n_nodes > s->cap_n) { /* inserted nodes go at the node being scanned, or after */
        size_t n = (size_t)g->n_nodes, old = (size_t)s->cap_n;
        s->glue = oc_realloc(s->glue, n * sizeof(bool));
        memset(s->glue + old, 0, (n - old) * sizeof(bool));
        s->cap_n = g->n_nodes;
    }
}

static void drop_data(ir_tensor *x) {
    oc_free(x->data);
    x->data = NULL;
    x->data_bytes = 0;
    x->data_src = IR_DATA_NONE;
}

/* op_infer of node n with the host-computed tensors it reads holding their stand-in values
 * as plan-time values, which they are not afterwards. */
static int infer_on_stand_ins(host_scan *s, ir_graph *g, ir_node *n, oc_err *err) {
    for (int k = 0; k < n->n_inputs; k++) {
        int t = n->inputs[k];
        ir_tensor *x = t >= 0 ? &g->tensors[t] : NULL;
        int64_t bytes = 0;
        if (!x || !s->host[t] || !ir_tensor_bytes(x, &bytes)) continue;
        if (!s->value[t]) s->value[t] = oc_calloc((size_t)bytes + 1, 1); /* an input: zeros */
        ir_tensor_set_data(x, s->value[t], (size_t)bytes);
        x->kind = IR_KIND_CONSTANT;
    }
    int rc = op_infer(g, n, err);
    for (int k = 0; k < n->n_inputs; k++) {
        int t = n->inputs[k];
        if (t < 0 || !s->host[t]) continue;
        drop_data(&g->tensors[t]);
        g->tensors[t].kind = g->tensors[t].producer < 0 ? IR_KIND_INPUT : IR_KIND_ACTIVATION;
    }
    return rc;
}

int host_scan_infer_stand_in(host_scan *s, ir_graph *g, int i, int *read) {
    grow(s, g);
    ir_node *n = &g->nodes[i];
    *read = -1;
    for (int k = 0; k < n->n_inputs && *read < 0; k++)
        if (n->inputs[k] >= 0 && s->host[n->inputs[k]]) *read = n->inputs[k];
    oc_err ignored;
    if (*read < 0 || infer_on_stand_ins(s, g, n, &ignored)) return OC_ERR;
    for (int o = 0; o < n->n_outputs; o++) {
        ir_tensor *y = ir_node_out(g, n, o);
        if (y && y->data_src == IR_DATA_INLINE) /* a stand-in's, not a plan-time value */
            drop_data(y), y->kind = IR_KIND_ACTIVATION;
    }
    return OC_OK;
}

int host_scan_node(host_scan *s, ir_graph *g, int i, bool *done, oc_err *err) {
    (void)err;
    *done = false;
    grow(s, g);
    ir_node *n = &g->nodes[i];
    if (n->op == OP_SHAPE) return OC_OK; /* shapes are plan-time */
    if (n->op == OP_CAST_LIKE && n->n_inputs > 0 && n->inputs[0] >= 0 && !s->host[n->inputs[0]])
        return OC_OK; /* reads only the type of its second input */
    bool any = false;
    for (int k = 0; k < n->n_inputs; k++) {
        int t = n->inputs[k];
        if (t < 0) continue;
        if (s->host[t]) any = true;
        else if (!op_is_value(&g->tensors[t])) return OC_OK; /* reads a run-time tensor */
    }
    if (!any) return OC_OK;
    for (int k = 0; k < n->n_inputs; k++) { /* folding takes no larger value */
        int64_t bytes = 0;
        int t = n->inputs[k];
        if (t >= 0 && s->host[t] &&
            (!ir_tensor_bytes(&g->tensors[t], &bytes) || bytes > OP_FOLD_MAX_BYTES))
            return OC_OK;
    }
    oc_err ignored;
    bool folded = infer_on_stand_ins(s, g, n, &ignored) == OC_OK;
    for (int o = 0; o < n->n_outputs; o++) {
        const ir_tensor *y = ir_node_out(g, n, o);
        folded = folded && (!y || y->data_src == IR_DATA_INLINE);
    }
    for (int o = 0; o < n->n_outputs; o++) {
        ir_tensor *y = ir_node_out(g, n, o);
        if (!y) continue;
        if (folded) { /* its value, kept as the stand-in its readers see */
            oc_free(s->value[n->outputs[o]]);
            s->value[n->outputs[o]] = y->data;
            y->data = NULL;
            s->host[n->outputs[o]] = true;
        }
        drop_data(y);
        y->kind = IR_KIND_ACTIVATION;
    }
    if (!folded) return OC_OK; /* stays in the graph: the caller infers it as usual */
    s->glue[i] = *done = true;
    s->n_glue++;
    return OC_OK;
}

bool host_scan_computed(const host_scan *s, int t) { return t >= 0 && t < s->cap_t && s->host[t]; }

/* x as a new tensor of dst named name: dtype, shape, and a value's data (value). */
static int copy_tensor(ir_graph *dst, const ir_tensor *x, const char *name, bool value) {
    int t = ir_tensor_add(dst, name, x->dtype);
    ir_tensor *y = &dst->tensors[t];
    ir_tensor_set_shape(y, x->rank, x->dims);
    y->kind = IR_KIND_ACTIVATION;
    if (value) {
        ir_tensor_set_data(y, x->data, x->data_bytes);
        y->is_initializer = true;
        y->kind = IR_KIND_CONSTANT;
    }
    return t;
}

/* Node n of src appended to dst, its tensors through map (src index -> dst, -1 unmapped:
 * outputs are added; an input unmapped here is an error of the caller). */
static void copy_node(ir_graph *dst, const ir_graph *src, const ir_node *n, int *map) {
    int k = ir_node_add(dst, n->name, n->op_type, n->domain);
    dst->nodes[k].op = n->op;
    for (int i = 0; i < n->n_inputs; i++)
        ir_node_add_input(dst, k, n->inputs[i] < 0 ? -1 : map[n->inputs[i]]);
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        if (t >= 0 && map[t] < 0)
            map[t] = copy_tensor(dst, &src->tensors[t], src->tensors[t].name, false);
        ir_node_add_output(dst, k, t < 0 ? -1 : map[t]);
    }
    for (int a = 0; a < n->n_attrs; a++) ir_node_add_attr(dst, k, &n->attrs[a]);
}

static int add_input(ir_graph *h, const ir_tensor *x) {
    int t = copy_tensor(h, x, x->name, false);
    h->tensors[t].kind = IR_KIND_INPUT;
    h->tensors[t].is_graph_input = true;
    ir_graph_add_input(h, t);
    return t;
}

static ir_graph *new_like(const ir_graph *g) {
    ir_graph *h = ir_graph_new();
    oc_free(h->name);
    h->name = oc_strdup(HOST_INPUTS_FUNCTION);
    h->model_path = oc_strdup(g->model_path ? g->model_path : "model");
    h->model_dir = oc_strdup(g->model_dir ? g->model_dir : ".");
    h->producer_name = oc_strdup("outcore");
    h->opset = g->opset, h->ir_version = g->ir_version;
    return h;
}

/* The glue nodes of g as a graph of their own. */
static ir_graph *extract(const host_scan *s, const ir_graph *g) {
    ir_graph *h = new_like(g);
    int *map = oc_malloc(((size_t)g->n_tensors + 1) * sizeof(int));
    for (int t = 0; t < g->n_tensors; t++) map[t] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (!s->glue[i]) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0 || map[t] >= 0) continue;
            const ir_tensor *x = &g->tensors[t];
            if (s->host[t]) { /* not made by a glue node before it: an integer input */
                map[t] = add_input(h, x);
            } else { /* a plan-time value, under a name of its own */
                char *name = oc_sprintf("%s%s", HOST_INPUTS_PREFIX, x->name);
                map[t] = copy_tensor(h, x, name, true);
                oc_free(name);
            }
        }
        copy_node(h, g, n, map);
    }
    for (int t = 0; t < g->n_tensors; t++) { /* what the rest of g reads */
        const ir_tensor *x = &g->tensors[t];
        bool read = false;
        if (x->producer < 0 || !s->glue[x->producer]) continue;
        for (int c = 0; c < x->n_consumers; c++) read = read || !s->glue[x->consumers[c]];
        if (read) ir_graph_add_output(h, map[t]);
    }
    oc_free(map);
    return h;
}

int host_scan_finish(host_scan *s, ir_graph *g, oc_err *err) {
    if (!s->n_glue) return OC_OK;
    grow(s, g);
    for (int i = 0; i < g->n_outputs; i++) {
        const ir_tensor *y = &g->tensors[g->outputs[i]];
        if (y->producer >= 0 && s->glue[y->producer])
            return oc_fail(err,
                           "%s: the model's output '%s' is computed from its integer inputs "
                           "alone; nothing in it can train",
                           g->model_path, y->name);
    }
    ir_graph *h = extract(s, g);
    if (host_inputs_infer(h, err)) {
        ir_graph_free(h);
        return OC_ERR;
    }
    bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    memcpy(remove, s->glue, (size_t)g->n_nodes * sizeof(bool));
    for (int i = g->n_nodes - 1; i >= 0; i--) { /* values only the glue read (Constants) */
        const ir_node *n = &g->nodes[i];
        bool dead = !remove[i];
        for (int o = 0; o < n->n_outputs && dead; o++) {
            const ir_tensor *y = ir_node_out(g, n, o);
            dead = !y || (op_is_value(y) && !y->is_graph_output);
            for (int c = 0; y && c < y->n_consumers && dead; c++) dead = remove[y->consumers[c]];
        }
        remove[i] = remove[i] || dead;
    }
    for (int j = 0; j < h->n_outputs; j++) {
        ir_tensor *x = &g->tensors[ir_tensor_find(g, h->tensors[h->outputs[j]].name)];
        x->is_graph_input = x->is_host_input = true;
        x->kind = IR_KIND_INPUT;
        ir_graph_add_input(g, (int)(x - g->tensors));
    }
    ir_keep_folded_initializers(g, remove); /* a buffer the removed folds read */
    ir_graph_remove_nodes(g, remove);
    oc_free(remove);
    g->host = h;
    return OC_OK;
}

void host_inputs_note(ir_graph *g) {
    const ir_graph *h = g->host;
    if (!h) return;
    char names[160] = "", roots[160] = "";
    for (int j = 0; j < h->n_outputs && j < 2; j++) {
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s'%s'", j ? ", " : "",
                 h->tensors[h->outputs[j]].name);
    }
    for (int j = 0; j < h->n_inputs && j < 2; j++) {
        size_t len = strlen(roots);
        snprintf(roots + len, sizeof roots - len, "%s'%s'", j ? ", " : "",
                 h->tensors[h->inputs[j]].name);
    }
    ir_graph_note(g,
                  "%d node%s on the host each step (integer glue: position ids, attention "
                  "masks), computing %s%s from the model's integer input%s %s%s; the device "
                  "reads what they give as inputs",
                  h->n_nodes, h->n_nodes == 1 ? " runs" : "s run", names,
                  h->n_outputs > 2 ? ", ..." : "", h->n_inputs > 1 ? "s" : "", roots,
                  h->n_inputs > 2 ? ", ..." : "");
}

/* Node n's outputs back to the shapes they were planned with (a failed evaluation must
 * not change what the next is checked against). */
static void restore_shapes(ir_graph *h, const ir_node *n, const int *rank,
                           int64_t (*dims)[IR_MAX_RANK]) {
    for (int o = 0; o < n->n_outputs && o < 8; o++) {
        ir_tensor *y = ir_node_out(h, n, o);
        if (y && rank[o] >= 0) ir_tensor_set_shape(y, rank[o], dims[o]);
    }
}

/* Runs nodes [first, end) of h on the values their inputs hold; outputs whose shape is known
 * keep it. */
static int run(ir_graph *h, int first, oc_err *err) {
    for (int i = first; i < h->n_nodes; i++) {
        ir_node *n = &h->nodes[i];
        int rank[8];
        int64_t dims[8][IR_MAX_RANK];
        for (int o = 0; o < n->n_outputs && o < 8; o++) {
            ir_tensor *y = ir_node_out(h, n, o);
            rank[o] = y && ir_tensor_shape_known(y) ? y->rank : -1;
            if (rank[o] >= 0) memcpy(dims[o], y->dims, sizeof dims[o]);
            if (y) drop_data(y);
        }
        if (op_infer(h, n, err)) {
            restore_shapes(h, n, rank, dims);
            return oc_fail_prefix(err, "%s: host input node '%s' (%s)", h->model_path, n->name,
                                  n->op_type);
        }
        for (int o = 0; o < n->n_outputs; o++) {
            ir_tensor *y = ir_node_out(h, n, o);
            char want[96], got[96];
            if (!y) continue;
            int rc = OC_OK;
            if (y->data_src != IR_DATA_INLINE) {
                rc = oc_fail(err, "%s: host input node '%s' (%s): '%s' is not computed by folding",
                             h->model_path, n->name, n->op_type, y->name);
            } else if (o < 8 && rank[o] >= 0 &&
                       (y->rank != rank[o] ||
                        memcmp(y->dims, dims[o], (size_t)y->rank * sizeof(int64_t)) != 0)) {
                ir_tensor planned = *y; /* shares y's fields: only rank and dims change */
                planned.rank = rank[o];
                memcpy(planned.dims, dims[o], sizeof planned.dims);
                rc = oc_fail(err,
                             "%s: host input node '%s' (%s): '%s' has shape %s for this batch, "
                             "the step was planned with %s (the shape depends on the values of "
                             "the integer inputs, taken as zeros at load, and a plan's shapes "
                             "are static: a loop over nn.EmbeddingBag's bags that outcore did "
                             "not read whole, for one; the loops it reads whole load as one "
                             "scatter-add (sum and mean bags), one SegmentMax (max bags) or, "
                             "for fixed-size bags, one reduction)",
                             h->model_path, n->name, n->op_type, y->name,
                             ir_shape_str(y, got, sizeof got),
                             ir_shape_str(&planned, want, sizeof want));
            }
            if (rc) {
                restore_shapes(h, n, rank, dims);
                return OC_ERR;
            }
            y->kind = IR_KIND_CONSTANT;
        }
    }
    return OC_OK;
}

int host_inputs_infer(ir_graph *h, oc_err *err) {
    for (int i = 0; i < h->n_inputs; i++) {
        ir_tensor *x = &h->tensors[h->inputs[i]];
        int64_t bytes = 0;
        if (!ir_tensor_bytes(x, &bytes) || bytes > OP_FOLD_MAX_BYTES)
            return oc_fail(err,
                           "%s: host input '%s' has no static shape of at most %" PRId64 " bytes",
                           h->model_path, x->name, OP_FOLD_MAX_BYTES);
        uint8_t *zeros = oc_calloc((size_t)bytes + 1, 1);
        ir_tensor_set_data(x, zeros, (size_t)bytes);
        x->kind = IR_KIND_CONSTANT;
        oc_free(zeros);
    }
    return run(h, 0, err);
}

int host_inputs_infer_added(ir_graph *h, int first, oc_err *err) { return run(h, first, err); }

int host_inputs_eval(ir_graph *h, const void *const *in, void *const *out, oc_err *err) {
    for (int i = 0; i < h->n_inputs; i++) {
        ir_tensor *x = &h->tensors[h->inputs[i]];
        int64_t bytes = 0;
        ir_tensor_bytes(x, &bytes);
        ir_tensor_set_data(x, in[i], (size_t)bytes);
        x->kind = IR_KIND_CONSTANT;
    }
    if (run(h, 0, err)) return OC_ERR;
    for (int j = 0; j < h->n_outputs; j++) {
        const ir_tensor *y = &h->tensors[h->outputs[j]];
        memcpy(out[j], y->data, y->data_bytes);
    }
    return OC_OK;
}

ir_graph *host_inputs_clone(const ir_graph *h) {
    ir_graph *c = new_like(h);
    int *map = oc_malloc(((size_t)h->n_tensors + 1) * sizeof(int));
    for (int t = 0; t < h->n_tensors; t++) map[t] = -1;
    for (int i = 0; i < h->n_inputs; i++)
        map[h->inputs[i]] = add_input(c, &h->tensors[h->inputs[i]]);
    for (int t = 0; t < h->n_tensors; t++)
        if (map[t] < 0 && h->tensors[t].is_initializer)
            map[t] = copy_tensor(c, &h->tensors[t], h->tensors[t].name, true);
    for (int i = 0; i < h->n_nodes; i++) copy_node(c, h, &h->nodes[i], map);
    for (int j = 0; j < h->n_outputs; j++) ir_graph_add_output(c, map[h->outputs[j]]);
    oc_free(map);
    oc_err err;
    int rc = host_inputs_infer(c, &err); /* decodes the copy's nodes, as h's were */
    OC_ASSERT(rc == OC_OK);
    return c;
}

const ir_node *host_inputs_producer(const ir_graph *g, int t) {
    if (!g->host || t < 0 || !g->tensors[t].is_host_input) return NULL;
    int ht = ir_tensor_find(g->host, g->tensors[t].name);
    return ht >= 0 && g->host->tensors[ht].producer >= 0
               ? &g->host->nodes[g->host->tensors[ht].producer]
               : NULL;
}

int host_inputs_export(ir_graph *g, int ht) {
    ir_graph *h = g->host;
    const ir_tensor *x = &h->tensors[ht];
    int t = ir_tensor_find(g, x->name);
    if (t >= 0) return t; /* given already (or a name of g's: never a host tensor's) */
    t = ir_tensor_add(g, x->name, x->dtype);
    ir_tensor *y = &g->tensors[t];
    ir_tensor_set_shape(y, x->rank, x->dims);
    y->kind = IR_KIND_INPUT;
    y->is_graph_input = y->is_host_input = true;
    ir_graph_add_input(g, t);
    ir_graph_add_output(h, ht);
    return t;
}

void host_inputs_prune(ir_graph *g) {
    ir_graph *h = g->host;
    if (!h) return;
    int kept = 0;
    bool pruned = false;
    for (int i = 0; i < g->n_inputs; i++) {
        ir_tensor *x = &g->tensors[g->inputs[i]];
        int ht = x->is_host_input ? ir_tensor_find(h, x->name) : -1;
        if (ht < 0 || x->n_consumers || x->is_graph_output) {
            g->inputs[kept++] = g->inputs[i];
            continue;
        }
        x->is_graph_input = x->is_host_input = false;
        h->tensors[ht].is_graph_output = false;
        int ko = 0;
        for (int j = 0; j < h->n_outputs; j++)
            if (h->outputs[j] != ht) h->outputs[ko++] = h->outputs[j];
        h->n_outputs = ko;
        pruned = true;
    }
    g->n_inputs = kept;
    if (!pruned) return;
    bool *dead = oc_calloc((size_t)h->n_nodes + 1, sizeof(bool));
    for (int i = h->n_nodes - 1; i >= 0; i--) { /* readers come after: one pass back */
        const ir_node *n = &h->nodes[i];
        bool d = true;
        for (int o = 0; o < n->n_outputs && d; o++) {
            const ir_tensor *y = ir_node_out(h, n, o);
            d = !y || !y->is_graph_output;
            for (int c = 0; y && c < y->n_consumers && d; c++) d = dead[y->consumers[c]];
        }
        dead[i] = d;
    }
    ir_graph_remove_nodes(h, dead);
    oc_free(dead);
    bool *none = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    ir_graph_remove_nodes(g, none); /* the tensors no longer given */
    oc_free(none);
    if (h->n_nodes == 0) {
        ir_graph_free(h);
        g->host = NULL;
    }
}
