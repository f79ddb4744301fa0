/* model_builder.c — see model_builder.h. Test-only: aborts on allocation failure. */
#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mb_model {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    void **allocs; /* every block handed out, freed by mb_free */
    size_t n_allocs;
};

/* ---- tracked allocation ---- */

static void *mb_track(mb_model *m, void *p) {
    if (!p) abort();
    void **a = realloc(m->allocs, (m->n_allocs + 1) * sizeof *a);
    if (!a) abort();
    m->allocs = a;
    m->allocs[m->n_allocs++] = p;
    return p;
}

static void *mb_alloc(mb_model *m, size_t n) { return mb_track(m, calloc(1, n ? n : 1)); }

/* Resizes a tracked block (or allocates one when old is NULL). */
static void *mb_resize(mb_model *m, void *old, size_t n) {
    if (!old) return mb_alloc(m, n);
    void *p = realloc(old, n);
    if (!p) abort();
    for (size_t i = 0; i < m->n_allocs; i++)
        if (m->allocs[i] == old) m->allocs[i] = p;
    return p;
}

static char *mb_strdup(mb_model *m, const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(mb_alloc(m, n), s, n);
}

static void *mb_memdup(mb_model *m, const void *src, size_t n) {
    void *p = mb_alloc(m, n);
    if (n) memcpy(p, src, n);
    return p;
}

/* Appends item to a repeated message field (*arr, *count). */
static void mb_append(mb_model *m, void *arr_ptr, size_t *count, void *item) {
    void ***arr = arr_ptr;
    *arr = mb_resize(m, *arr, (*count + 1) * sizeof(void *));
    (*arr)[(*count)++] = item;
}

/* Splits "a,,b" into tracked strings ("a", "", "b"); "" gives none. */
static char **mb_split(mb_model *m, const char *list, size_t *count) {
    *count = 0;
    if (!list || !*list) return NULL;
    char **out = NULL;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *s = mb_alloc(m, len + 1);
        memcpy(s, p, len);
        mb_append(m, &out, count, s);
        if (!comma) return out;
        p = comma + 1;
    }
}

/* ---- model ---- */

mb_model *mb_new(int64_t opset) {
    mb_model *m = calloc(1, sizeof *m);
    if (!m) abort();
    onnx__model_proto__init(&m->model);
    onnx__graph_proto__init(&m->graph);
    m->model.has_ir_version = 1;
    m->model.ir_version = 8;
    m->model.producer_name = "model_builder";
    m->model.graph = &m->graph;
    m->graph.name = "test_graph";
    mb_opset(m, "", opset);
    return m;
}

void mb_free(mb_model *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n_allocs; i++) free(m->allocs[i]);
    free(m->allocs);
    free(m);
}

void mb_opset(mb_model *m, const char *domain, int64_t version) {
    Onnx__OperatorSetIdProto *o = mb_alloc(m, sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = mb_strdup(m, domain);
    o->has_version = 1;
    o->version = version;
    mb_append(m, &m->model.opset_import, &m->model.n_opset_import, o);
}

/* ---- graph inputs and outputs ---- */

static Onnx__TensorShapeProto__Dimension *mb_dim(mb_model *m, const char *tok) {
    Onnx__TensorShapeProto__Dimension *d = mb_alloc(m, sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    char *end;
    long long v = strtoll(tok, &end, 10);
    if (strcmp(tok, "?") == 0) return d; /* neither value nor name */
    if (*tok && *end == '\0') {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = v;
    } else {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = mb_strdup(m, tok);
    }
    return d;
}

static Onnx__ValueInfoProto *mb_value_info(mb_model *m, const char *name, int elem_type,
                                           const char *dims) {
    Onnx__TensorShapeProto *shape = mb_alloc(m, sizeof *shape);
    onnx__tensor_shape_proto__init(shape);
    size_t n;
    char **toks = mb_split(m, dims, &n);
    for (size_t i = 0; i < n; i++) mb_append(m, &shape->dim, &shape->n_dim, mb_dim(m, toks[i]));
    Onnx__TypeProto__Tensor *tt = mb_alloc(m, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    tt->shape = shape;
    Onnx__TypeProto *ty = mb_alloc(m, sizeof *ty);
    onnx__type_proto__init(ty);
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt;
    Onnx__ValueInfoProto *vi = mb_alloc(m, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = mb_strdup(m, name);
    vi->type = ty;
    return vi;
}

void mb_input(mb_model *m, const char *name, int elem_type, const char *dims) {
    mb_append(m, &m->graph.input, &m->graph.n_input, mb_value_info(m, name, elem_type, dims));
}

void mb_output(mb_model *m, const char *name) {
    Onnx__ValueInfoProto *vi = mb_alloc(m, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = mb_strdup(m, name);
    mb_append(m, &m->graph.output, &m->graph.n_output, vi);
}

/* ---- tensors and initializers ---- */

static Onnx__TensorProto *mb_tensor(mb_model *m, const char *name, int dtype, size_t rank,
                                    const int64_t *dims) {
    Onnx__TensorProto *t = mb_alloc(m, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = mb_strdup(m, name);
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = rank;
    t->dims = mb_memdup(m, dims, rank * sizeof *dims);
    return t;
}

static Onnx__TensorProto *mb_add_init(mb_model *m, Onnx__TensorProto *t) {
    mb_append(m, &m->graph.initializer, &m->graph.n_initializer, t);
    return t;
}

Onnx__TensorProto *mb_init(mb_model *m, const char *name, int dtype, size_t rank,
                           const int64_t *dims) {
    return mb_add_init(m, mb_tensor(m, name, dtype, rank, dims));
}

Onnx__TensorProto *mb_init_raw(mb_model *m, const char *name, int dtype, size_t rank,
                               const int64_t *dims, const void *bytes, size_t n) {
    Onnx__TensorProto *t = mb_tensor(m, name, dtype, rank, dims);
    t->has_raw_data = 1;
    t->raw_data.len = n;
    t->raw_data.data = mb_memdup(m, bytes, n);
    return mb_add_init(m, t);
}

Onnx__TensorProto *mb_init_floats(mb_model *m, const char *name, size_t rank, const int64_t *dims,
                                  size_t n, const float *v) {
    Onnx__TensorProto *t = mb_tensor(m, name, MB_FLOAT, rank, dims);
    t->n_float_data = n;
    t->float_data = mb_memdup(m, v, n * sizeof *v);
    return mb_add_init(m, t);
}

Onnx__TensorProto *mb_tensor_int64s(mb_model *m, const char *name, size_t rank, const int64_t *dims,
                                    size_t n, const int64_t *v) {
    Onnx__TensorProto *t = mb_tensor(m, name, MB_INT64, rank, dims);
    t->n_int64_data = n;
    t->int64_data = mb_memdup(m, v, n * sizeof *v);
    return t;
}

Onnx__TensorProto *mb_init_int64s(mb_model *m, const char *name, size_t rank, const int64_t *dims,
                                  size_t n, const int64_t *v) {
    return mb_add_init(m, mb_tensor_int64s(m, name, rank, dims, n, v));
}

static void mb_ext_entry(mb_model *m, Onnx__TensorProto *t, const char *key, const char *value) {
    Onnx__StringStringEntryProto *e = mb_alloc(m, sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = mb_strdup(m, key);
    e->value = mb_strdup(m, value);
    mb_append(m, &t->external_data, &t->n_external_data, e);
}

Onnx__TensorProto *mb_init_external(mb_model *m, const char *name, int dtype, size_t rank,
                                    const int64_t *dims, const char *location, int64_t offset,
                                    int64_t length) {
    Onnx__TensorProto *t = mb_tensor(m, name, dtype, rank, dims);
    char num[32];
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    mb_ext_entry(m, t, "location", location);
    if (offset >= 0) {
        snprintf(num, sizeof num, "%lld", (long long)offset);
        mb_ext_entry(m, t, "offset", num);
    }
    if (length >= 0) {
        snprintf(num, sizeof num, "%lld", (long long)length);
        mb_ext_entry(m, t, "length", num);
    }
    return mb_add_init(m, t);
}

/* ---- nodes and attributes ---- */

Onnx__NodeProto *mb_node(mb_model *m, const char *op_type, const char *name, const char *inputs,
                         const char *outputs) {
    Onnx__NodeProto *n = mb_alloc(m, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = mb_strdup(m, op_type);
    if (name) n->name = mb_strdup(m, name);
    n->input = mb_split(m, inputs, &n->n_input);
    n->output = mb_split(m, outputs, &n->n_output);
    mb_append(m, &m->graph.node, &m->graph.n_node, n);
    return n;
}

static Onnx__AttributeProto *mb_attr(mb_model *m, Onnx__NodeProto *n, const char *name,
                                     Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = mb_alloc(m, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = mb_strdup(m, name);
    a->has_type = 1;
    a->type = type;
    mb_append(m, &n->attribute, &n->n_attribute, a);
    return a;
}

void mb_attr_int(mb_model *m, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = mb_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void mb_attr_ints(mb_model *m, Onnx__NodeProto *n, const char *name, size_t count,
                  const int64_t *v) {
    Onnx__AttributeProto *a = mb_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = count;
    a->ints = mb_memdup(m, v, count * sizeof *v);
}

void mb_attr_float(mb_model *m, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = mb_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void mb_attr_string(mb_model *m, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = mb_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = mb_memdup(m, v, a->s.len);
}

void mb_attr_tensor(mb_model *m, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t) {
    mb_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
}

/* ---- output ---- */

const uint8_t *mb_pack(mb_model *m, size_t *len) {
    *len = onnx__model_proto__get_packed_size(&m->model);
    uint8_t *buf = mb_alloc(m, *len);
    size_t packed = onnx__model_proto__pack(&m->model, buf);
    if (packed != *len) abort();
    return buf;
}

int mb_write(mb_model *m, const char *path) {
    size_t len;
    const uint8_t *buf = mb_pack(m, &len);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t wrote = fwrite(buf, 1, len, f);
    return (fclose(f) == 0 && wrote == len) ? 0 : -1;
}
