/* ir.c — graph containers, name index, attribute and shape helpers. */
#include "ir/ir.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ir_dtype_size(ir_dtype t) {
    switch (t) {
    case IR_DTYPE_FLOAT:
    case IR_DTYPE_INT32:
    case IR_DTYPE_UINT32: return 4;
    case IR_DTYPE_UINT8:
    case IR_DTYPE_INT8:
    case IR_DTYPE_BOOL: return 1;
    case IR_DTYPE_UINT16:
    case IR_DTYPE_INT16:
    case IR_DTYPE_FLOAT16:
    case IR_DTYPE_BFLOAT16: return 2;
    case IR_DTYPE_INT64:
    case IR_DTYPE_DOUBLE:
    case IR_DTYPE_UINT64: return 8;
    default: return 0;
    }
}

bool ir_dtype_is_float(ir_dtype t) {
    return t == IR_DTYPE_FLOAT || t == IR_DTYPE_DOUBLE || t == IR_DTYPE_FLOAT16 ||
           t == IR_DTYPE_BFLOAT16;
}

bool ir_dtype_is_half(ir_dtype t) { return t == IR_DTYPE_FLOAT16 || t == IR_DTYPE_BFLOAT16; }

bool ir_dtype_is_compute(ir_dtype t) { return t == IR_DTYPE_FLOAT || ir_dtype_is_half(t); }

const char *ir_dtype_name(ir_dtype t) {
    switch (t) {
    case IR_DTYPE_FLOAT: return "float32";
    case IR_DTYPE_UINT8: return "uint8";
    case IR_DTYPE_INT8: return "int8";
    case IR_DTYPE_UINT16: return "uint16";
    case IR_DTYPE_INT16: return "int16";
    case IR_DTYPE_INT32: return "int32";
    case IR_DTYPE_INT64: return "int64";
    case IR_DTYPE_STRING: return "string";
    case IR_DTYPE_BOOL: return "bool";
    case IR_DTYPE_FLOAT16: return "float16";
    case IR_DTYPE_DOUBLE: return "float64";
    case IR_DTYPE_UINT32: return "uint32";
    case IR_DTYPE_UINT64: return "uint64";
    case IR_DTYPE_BFLOAT16: return "bfloat16";
    default: return "undefined";
    }
}

const char *ir_kind_name(ir_kind k) {
    static const char *names[IR_KIND__COUNT] = {
        [IR_KIND_ACTIVATION] = "activation",
        [IR_KIND_INPUT] = "input",
        [IR_KIND_LABEL] = "label",
        [IR_KIND_PARAMETER] = "parameter",
        [IR_KIND_STATE] = "state",
        [IR_KIND_CONSTANT] = "constant",
        [IR_KIND_GRADIENT] = "gradient",
        [IR_KIND_ACT_GRADIENT] = "activation_gradient",
        [IR_KIND_WORKSPACE] = "workspace",
        [IR_KIND_SAVED] = "saved_activation",
        [IR_KIND_OPT_STATE] = "optimizer_state",
    };
    OC_ASSERT(k >= 0 && k < IR_KIND__COUNT);
    return names[k];
}

ir_graph *ir_graph_new(void) {
    ir_graph *g = oc_calloc(1, sizeof *g);
    g->name = oc_strdup("");
    return g;
}

void ir_tensor_free_fields(ir_tensor *t) {
    oc_free(t->name);
    for (int i = 0; i < IR_MAX_RANK; i++) oc_free(t->dim_params[i]);
    oc_free(t->consumers);
    oc_free(t->data);
    oc_free(t->ext_location);
    oc_free(t->items);
}

void ir_attr_free(ir_attr *a) {
    oc_free(a->name);
    oc_free(a->s);
    oc_free(a->floats);
    oc_free(a->ints);
    for (int i = 0; a->strings && i < a->n; i++) oc_free(a->strings[i]);
    oc_free(a->strings);
    if (a->t) {
        ir_tensor_free_fields(a->t);
        oc_free(a->t);
    }
    oc_free(a->graph);
}

static void node_free_fields(ir_node *n) {
    oc_free(n->name);
    oc_free(n->op_type);
    oc_free(n->domain);
    for (int a = 0; a < n->n_attrs; a++) ir_attr_free(&n->attrs[a]);
    oc_free(n->attrs);
    oc_free(n->inputs);
    oc_free(n->outputs);
    oc_free(n->args);
}

void ir_graph_free(ir_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_tensors; i++) ir_tensor_free_fields(&g->tensors[i]);
    for (int i = 0; i < g->n_nodes; i++) node_free_fields(&g->nodes[i]);
    oc_free(g->tensors);
    oc_free(g->nodes);
    oc_free(g->inputs);
    oc_free(g->outputs);
    oc_free(g->index);
    oc_free(g->name);
    oc_free(g->model_dir);
    oc_free(g->model_path);
    oc_free(g->producer_name);
    for (int i = 0; i < g->n_notes; i++) oc_free(g->notes[i]);
    oc_free(g->notes);
    ir_graph_free(g->host);
    oc_free(g);
}

void ir_graph_print_notes(ir_graph *g, const char *prog, FILE *f) {
    for (int i = 0; i < g->n_notes; i++) {
        if (f) fprintf(f, "%s: notice: %s\n", prog, g->notes[i]);
        oc_free(g->notes[i]);
    }
    g->n_notes = 0;
}

void ir_graph_note(ir_graph *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = oc_vsprintf(fmt, ap);
    va_end(ap);
    g->notes = oc_realloc(g->notes, (size_t)(g->n_notes + 1) * sizeof *g->notes);
    g->notes[g->n_notes++] = s;
}

/* ---- name index: open addressing over tensor indices, -1 = empty ---- */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void index_insert(ir_graph *g, int t) {
    size_t mask = g->index_cap - 1;
    size_t i = (size_t)hash_str(g->tensors[t].name) & mask;
    while (g->index[i] >= 0) i = (i + 1) & mask;
    g->index[i] = t;
}

static void index_rebuild(ir_graph *g, size_t cap) {
    oc_free(g->index);
    g->index = oc_malloc(cap * sizeof *g->index);
    for (size_t i = 0; i < cap; i++) g->index[i] = -1;
    g->index_cap = cap;
    for (int t = 0; t < g->n_tensors; t++) index_insert(g, t);
}

int ir_tensor_find(const ir_graph *g, const char *name) {
    if (!g->index_cap) return -1;
    size_t mask = g->index_cap - 1;
    for (size_t i = (size_t)hash_str(name) & mask; g->index[i] >= 0; i = (i + 1) & mask)
        if (strcmp(g->tensors[g->index[i]].name, name) == 0) return g->index[i];
    return -1;
}

int ir_tensor_sole_consumer(const ir_graph *g, int t) {
    const ir_tensor *x = &g->tensors[t];
    return x->n_consumers == 1 && !x->is_graph_output ? x->consumers[0] : -1;
}

int ir_tensor_add(ir_graph *g, const char *name, ir_dtype dtype) {
    char *own = oc_strdup(name);
    for (int k = 1; ir_tensor_find(g, own) >= 0; k++) {
        oc_free(own);
        own = oc_sprintf("%s.%d", name, k);
    }
    oc_grow((void **)&g->tensors, &g->cap_tensors, (size_t)g->n_tensors + 1, sizeof(ir_tensor));
    int t = g->n_tensors++;
    ir_tensor *x = &g->tensors[t];
    memset(x, 0, sizeof *x);
    x->name = own;
    x->dtype = dtype;
    x->rank = -1;
    x->producer = -1;
    x->kind = IR_KIND_ACTIVATION;
    if ((size_t)g->n_tensors * 2 > g->index_cap)
        index_rebuild(g, g->index_cap ? g->index_cap * 2 : 64);
    else index_insert(g, t);
    return t;
}

int ir_const_tensor(ir_graph *g, const char *name, ir_dtype dtype, int rank, const int64_t *dims,
                    const void *data) {
    int c = ir_tensor_add(g, name, dtype);
    ir_tensor *t = &g->tensors[c];
    ir_tensor_set_shape(t, rank, dims);
    int64_t bytes = 0;
    bool sized = ir_tensor_bytes(t, &bytes);
    OC_ASSERT(sized); /* the caller's shape: checked where it was read */
    void *zeros = data ? NULL : oc_calloc(1, (size_t)bytes + 1);
    ir_tensor_set_data(t, data ? data : zeros, (size_t)bytes);
    oc_free(zeros);
    t->is_initializer = true;
    t->kind = IR_KIND_CONSTANT;
    return c;
}

int ir_const_int64s(ir_graph *g, const char *name, int n, const int64_t *v) {
    int64_t len = n;
    return ir_const_tensor(g, name, IR_DTYPE_INT64, 1, &len, v);
}

int ir_node_add(ir_graph *g, const char *name, const char *op_type, const char *domain) {
    oc_grow((void **)&g->nodes, &g->cap_nodes, (size_t)g->n_nodes + 1, sizeof(ir_node));
    int n = g->n_nodes++;
    ir_node *x = &g->nodes[n];
    memset(x, 0, sizeof *x);
    x->name = oc_strdup(name);
    x->op_type = oc_strdup(op_type);
    x->domain = oc_strdup(domain ? domain : "");
    x->op = -1; /* OP_UNKNOWN: the importer or op_node_add sets it */
    return n;
}

int ir_node_insert(ir_graph *g, int at, const char *name, const char *op_type, const char *domain) {
    OC_ASSERT(at >= 0 && at <= g->n_nodes);
    int n = ir_node_add(g, name, op_type, domain); /* the last slot, then moved to at */
    ir_nodes_move_tail(g, n, at);
    return at;
}

void ir_nodes_move_tail(ir_graph *g, int from, int at) {
    OC_ASSERT(at >= 0 && at <= from && from <= g->n_nodes);
    int n = g->n_nodes, k = n - from;
    if (k == 0 || at == from) return;
    ir_node *tail = oc_malloc((size_t)k * sizeof *tail);
    memcpy(tail, &g->nodes[from], (size_t)k * sizeof *tail);
    memmove(&g->nodes[at + k], &g->nodes[at], (size_t)(from - at) * sizeof(ir_node));
    memcpy(&g->nodes[at], tail, (size_t)k * sizeof *tail);
    oc_free(tail);
#define MOVED(i) ((i) < at ? (i) : (i) < from ? (i) + k : at + (i)-from)
    /* Only a tensor a node now at `at` or later reads or writes holds an index that moved
     * (graph order: a rewrite inserting near the end touches few): each renumbered once. */
    bool *seen = oc_calloc((size_t)g->n_tensors + 1, sizeof *seen);
    for (int i = at; i < n; i++) {
        const ir_node *node = &g->nodes[i];
        for (int e = 0; e < node->n_inputs + node->n_outputs; e++) {
            int t = e < node->n_inputs ? node->inputs[e] : node->outputs[e - node->n_inputs];
            if (t < 0 || seen[t]) continue;
            seen[t] = true;
            ir_tensor *y = &g->tensors[t];
            if (y->producer >= 0) y->producer = MOVED(y->producer);
            for (int c = 0; c < y->n_consumers; c++) y->consumers[c] = MOVED(y->consumers[c]);
        }
    }
    oc_free(seen);
#undef MOVED
}

void ir_node_add_input(ir_graph *g, int node, int t) {
    ir_node *n = &g->nodes[node];
    n->inputs = oc_realloc(n->inputs, (size_t)(n->n_inputs + 1) * sizeof *n->inputs);
    n->inputs[n->n_inputs++] = t;
    if (t < 0) return;
    ir_tensor *x = &g->tensors[t];
    oc_grow((void **)&x->consumers, &x->cap_consumers, (size_t)x->n_consumers + 1, sizeof(int));
    x->consumers[x->n_consumers++] = node;
}

void ir_node_set_input(ir_graph *g, int node, int i, int t) {
    ir_node *n = &g->nodes[node];
    OC_ASSERT(i >= 0 && i < n->n_inputs && t >= -1);
    if (n->inputs[i] >= 0) {
        ir_tensor *old = &g->tensors[n->inputs[i]];
        for (int c = 0; c < old->n_consumers; c++)
            if (old->consumers[c] == node) { /* the order of the others kept */
                memmove(old->consumers + c, old->consumers + c + 1,
                        (size_t)(old->n_consumers - c - 1) * sizeof(int));
                old->n_consumers--;
                break;
            }
    }
    n->inputs[i] = t;
    if (t < 0) return;
    ir_tensor *x = &g->tensors[t];
    oc_grow((void **)&x->consumers, &x->cap_consumers, (size_t)x->n_consumers + 1, sizeof(int));
    x->consumers[x->n_consumers++] = node;
}

void ir_node_add_output(ir_graph *g, int node, int t) {
    ir_node *n = &g->nodes[node];
    n->outputs = oc_realloc(n->outputs, (size_t)(n->n_outputs + 1) * sizeof *n->outputs);
    n->outputs[n->n_outputs++] = t;
    if (t < 0) return;
    OC_ASSERT(g->tensors[t].producer < 0);
    g->tensors[t].producer = node;
}

void ir_graph_add_input(ir_graph *g, int t) {
    g->inputs = oc_realloc(g->inputs, (size_t)(g->n_inputs + 1) * sizeof *g->inputs);
    g->inputs[g->n_inputs++] = t;
    g->tensors[t].is_graph_input = true;
}

void ir_graph_add_output(ir_graph *g, int t) {
    g->outputs = oc_realloc(g->outputs, (size_t)(g->n_outputs + 1) * sizeof *g->outputs);
    g->outputs[g->n_outputs++] = t;
    g->tensors[t].is_graph_output = true;
}

bool ir_tensor_shape_known(const ir_tensor *t) {
    if (t->rank < 0) return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dim_params[i] || t->dims[i] < 0) return false;
    return true;
}

bool ir_tensor_numel(const ir_tensor *t, int64_t *numel) {
    if (!ir_tensor_shape_known(t)) return false;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (!oc_mul_i64(n, t->dims[i], &n)) return false;
    *numel = n;
    return true;
}

bool ir_tensor_bytes(const ir_tensor *t, int64_t *bytes) {
    int64_t n;
    return ir_tensor_numel(t, &n) && oc_mul_i64(n, ir_dtype_size(t->dtype), bytes);
}

int64_t ir_device_align_up(int64_t bytes) {
    return (bytes + IR_DEVICE_ALIGN - 1) / IR_DEVICE_ALIGN * IR_DEVICE_ALIGN;
}

bool ir_tensor_device_bytes(const ir_tensor *t, int64_t *bytes) {
    int64_t b;
    if (!ir_tensor_bytes(t, &b) || b > INT64_MAX - (IR_DEVICE_ALIGN - 1)) return false;
    *bytes = ir_device_align_up(b);
    return true;
}

void ir_tensor_set_shape(ir_tensor *t, int rank, const int64_t *dims) {
    OC_ASSERT(rank >= 0 && rank <= IR_MAX_RANK);
    t->rank = rank;
    for (int i = 0; i < IR_MAX_RANK; i++) {
        oc_free(t->dim_params[i]);
        t->dim_params[i] = NULL;
        t->dims[i] = i < rank ? dims[i] : 0;
    }
}

const char *ir_shape_str(const ir_tensor *t, char *buf, size_t cap) {
    if (t->rank < 0) {
        snprintf(buf, cap, "?");
        return buf;
    }
    size_t off = 0;
    off += (size_t)snprintf(buf + off, cap - off, "[");
    for (int i = 0; i < t->rank && off < cap; i++) {
        const char *sep = i ? ", " : "";
        if (t->dim_params[i])
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", sep, t->dim_params[i]);
        else off += (size_t)snprintf(buf + off, cap - off, "%s%" PRId64, sep, t->dims[i]);
    }
    if (off < cap) snprintf(buf + off, cap - off, "]");
    return buf;
}

void ir_tensor_set_data(ir_tensor *t, const void *bytes, size_t n) {
    oc_free(t->data);
    t->data = oc_malloc(n);
    if (n) memcpy(t->data, bytes, n);
    t->data_bytes = n;
    t->data_src = IR_DATA_INLINE;
}

bool ir_tensor_int64_values(const ir_tensor *t, const int64_t **vals, int64_t *numel) {
    int64_t n;
    if (t->dtype != IR_DTYPE_INT64 || t->data_src != IR_DATA_INLINE || !ir_tensor_numel(t, &n))
        return false;
    if ((size_t)n * sizeof(int64_t) != t->data_bytes) return false;
    *vals = t->data;
    *numel = n;
    return true;
}

const ir_attr *ir_attr_find(const ir_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t ir_attr_int(const ir_node *n, const char *name, int64_t dflt) {
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->type == IR_ATTR_INT ? a->i : dflt;
}

float ir_attr_float(const ir_node *n, const char *name, float dflt) {
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->type == IR_ATTR_FLOAT ? a->f : dflt;
}

const char *ir_attr_string(const ir_node *n, const char *name, const char *dflt) {
    const ir_attr *a = ir_attr_find(n, name);
    return a && a->type == IR_ATTR_STRING ? a->s : dflt;
}

int ir_attr_ints(const ir_node *n, const char *name, const int64_t **vals) {
    const ir_attr *a = ir_attr_find(n, name);
    if (!a || a->type != IR_ATTR_INTS) return -1;
    *vals = a->ints;
    return a->n;
}

static ir_tensor *tensor_clone(const ir_tensor *src) {
    ir_tensor *t = oc_calloc(1, sizeof *t);
    t->name = oc_strdup(src->name ? src->name : "");
    t->dtype = src->dtype;
    t->rank = src->rank;
    memcpy(t->dims, src->dims, sizeof t->dims);
    t->producer = -1;
    if (src->data_src == IR_DATA_INLINE) ir_tensor_set_data(t, src->data, src->data_bytes);
    return t;
}

void ir_node_add_attr(ir_graph *g, int node, const ir_attr *a) {
    ir_node *n = &g->nodes[node];
    n->attrs = oc_realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof *n->attrs);
    ir_attr *d = &n->attrs[n->n_attrs++];
    memset(d, 0, sizeof *d);
    if (strcmp(a->name, IR_ATTR_CHANNELS_LAST) == 0) n->channels_last = a->i != 0;
    d->name = oc_strdup(a->name);
    d->type = a->type;
    d->f = a->f;
    d->i = a->i;
    d->n = a->n;
    if (a->s) d->s = oc_strdup(a->s);
    if (a->floats) {
        d->floats = oc_malloc((size_t)a->n * sizeof(float));
        memcpy(d->floats, a->floats, (size_t)a->n * sizeof(float));
    }
    if (a->ints) {
        d->ints = oc_malloc((size_t)a->n * sizeof(int64_t));
        memcpy(d->ints, a->ints, (size_t)a->n * sizeof(int64_t));
    }
    if (a->strings) {
        d->strings = oc_malloc((size_t)a->n * sizeof(char *));
        for (int i = 0; i < a->n; i++) d->strings[i] = oc_strdup(a->strings[i]);
    }
    if (a->t) d->t = tensor_clone(a->t);
    if (a->graph) {
        d->graph = oc_malloc(a->graph_bytes);
        memcpy(d->graph, a->graph, a->graph_bytes);
        d->graph_bytes = a->graph_bytes;
    }
}

ir_tensor *ir_node_in(ir_graph *g, const ir_node *n, int i) {
    if (i >= n->n_inputs || n->inputs[i] < 0) return NULL;
    return &g->tensors[n->inputs[i]];
}

ir_tensor *ir_node_out(ir_graph *g, const ir_node *n, int i) {
    if (i >= n->n_outputs || n->outputs[i] < 0) return NULL;
    return &g->tensors[n->outputs[i]];
}

int64_t ir_graph_bytes_of_kind(const ir_graph *g, ir_kind k) {
    int64_t total = 0, b;
    for (int i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].kind == k && ir_tensor_bytes(&g->tensors[i], &b)) total += b;
    return total;
}

void ir_keep_folded_initializers(ir_graph *g, const bool *remove) {
    for (int t = 0; t < g->n_tensors; t++) {
        ir_tensor *x = &g->tensors[t];
        bool only = x->is_model_initializer && x->kind == IR_KIND_CONSTANT && x->n_consumers > 0;
        for (int c = 0; c < x->n_consumers && only; c++) only = remove[x->consumers[c]];
        x->keep_unread = x->keep_unread || only;
    }
}

void ir_graph_remove_nodes(ir_graph *g, const bool *remove) {
    ir_graph_remove_nodes_map(g, remove, NULL, NULL);
}

void ir_graph_remove_nodes_map(ir_graph *g, const bool *remove, int *node_map_out,
                               int *tensor_map_out) {
    int *node_map = oc_malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof(int));
    int n_nodes_before = g->n_nodes, n_tensors_before = g->n_tensors;
    int kept_nodes = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (!remove[i]) {
            node_map[i] = kept_nodes;
            g->nodes[kept_nodes++] = *n;
            continue;
        }
        node_map[i] = -1;
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) g->tensors[n->outputs[o]].producer = -1;
        node_free_fields(n);
    }
    g->n_nodes = kept_nodes;
    /* Which tensors are still referenced. */
    bool *used = oc_calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof(bool));
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) used[n->inputs[k]] = true;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) used[n->outputs[k]] = true;
    }
    for (int i = 0; i < g->n_inputs; i++) used[g->inputs[i]] = true;
    for (int i = 0; i < g->n_outputs; i++) used[g->outputs[i]] = true;
    for (int t = 0; t < g->n_tensors; t++) used[t] = used[t] || g->tensors[t].keep_unread;
    int *tmap = oc_malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof(int));
    int kept_t = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        ir_tensor *x = &g->tensors[t];
        if (!used[t]) {
            tmap[t] = -1;
            ir_tensor_free_fields(x);
            continue;
        }
        tmap[t] = kept_t;
        /* Consumers: keep those that survive, renumbered. */
        int nc = 0;
        for (int c = 0; c < x->n_consumers; c++)
            if (node_map[x->consumers[c]] >= 0) x->consumers[nc++] = node_map[x->consumers[c]];
        x->n_consumers = nc;
        if (x->producer >= 0) x->producer = node_map[x->producer];
        if (x->producer < 0 && !x->is_graph_input && !x->is_initializer) {
            OC_ASSERT(x->data_src == IR_DATA_INLINE); /* a folded value */
            x->is_initializer = true;
        }
        g->tensors[kept_t++] = *x;
    }
    g->n_tensors = kept_t;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) n->inputs[k] = tmap[n->inputs[k]];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) n->outputs[k] = tmap[n->outputs[k]];
    }
    for (int i = 0; i < g->n_inputs; i++) g->inputs[i] = tmap[g->inputs[i]];
    for (int i = 0; i < g->n_outputs; i++) g->outputs[i] = tmap[g->outputs[i]];
    index_rebuild(g, g->index_cap ? g->index_cap : 64);
    if (node_map_out) memcpy(node_map_out, node_map, (size_t)n_nodes_before * sizeof(int));
    if (tensor_map_out) memcpy(tensor_map_out, tmap, (size_t)n_tensors_before * sizeof(int));
    oc_free(used);
    oc_free(tmap);
    oc_free(node_map);
}

void ir_node_mark_channels_last(ir_graph *g, int node) {
    if (!ir_attr_find(&g->nodes[node], IR_ATTR_CHANNELS_LAST))
        ir_node_add_attr(g, node,
                         &(ir_attr){.name = IR_ATTR_CHANNELS_LAST, .type = IR_ATTR_INT, .i = 1});
    g->nodes[node].channels_last = true;
}

void ir_node_view_init(ir_node_view *v, const ir_graph *g, const ir_node *n) {
    int ni = n->n_inputs, nt = ni + n->n_outputs;
    v->t = oc_calloc((size_t)nt + 1, sizeof *v->t);
    v->slot = oc_malloc(((size_t)nt + 1) * sizeof *v->slot);
    for (int k = 0; k < nt; k++) {
        int t = k < ni ? n->inputs[k] : n->outputs[k - ni];
        v->slot[k] = t < 0 ? -1 : k;
        if (t < 0) continue;
        v->t[k] = g->tensors[t]; /* shallow: names and data shared */
        memset(v->t[k].dim_params, 0, sizeof v->t[k].dim_params);
        v->t[k].consumers = NULL, v->t[k].n_consumers = 0, v->t[k].cap_consumers = 0;
    }
    v->g = *g;
    v->g.tensors = v->t;
    v->g.n_tensors = nt;
    v->g.index = NULL, v->g.index_cap = 0; /* no name lookups in a view */
    v->n = *n;
    v->n.inputs = v->slot;
    v->n.outputs = v->slot + ni;
}

void ir_node_view_free(ir_node_view *v) {
    oc_free(v->t), oc_free(v->slot);
    memset(v, 0, sizeof *v);
}

void ir_dims_to_logical(int64_t *d) {
    int64_t h = d[1], w = d[2];
    d[1] = d[3], d[2] = h, d[3] = w;
}

void ir_dims_to_nhwc(int64_t *d) {
    int64_t c = d[1];
    d[1] = d[2], d[2] = d[3], d[3] = c;
}

void ir_node_view_logical(ir_node_view *v) {
    if (!v->n.channels_last) return;
    for (int k = 0; k < v->n.n_inputs + v->n.n_outputs; k++)
        if (v->slot[k] >= 0 && v->t[k].rank == 4) ir_dims_to_logical(v->t[k].dims);
}
