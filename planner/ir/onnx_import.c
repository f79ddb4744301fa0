/* onnx_import.c — see onnx_import.h. */
#include "ir/onnx_import.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx.pb-c.h"
#include "ir/host_inputs.h"
#include "ir/onnx_export.h"
#include "ir/onnx_torch_meta.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"
#include "ir/out_file.h"
#include "ir/strmap.h"

typedef struct importer {
    ir_graph *g;
    const char *path;
    oc_err *err;
    strmap *node_names; /* every node name given so far -> the next "#k" suffix to try */
    bool body; /* a Loop's body: a name it does not define is the outer graph's (a placeholder) */
    torch_repair *repair; /* the main graph of a torch.export file: what optimize=True did */
} importer;

/* ---- tensors ---- */

static int set_dims(importer *im, ir_tensor *t, size_t n, const int64_t *dims) {
    if (n > IR_MAX_RANK)
        return oc_fail(im->err, "%s: tensor '%s' has rank %zu (at most %d supported)", im->path,
                       t->name, n, IR_MAX_RANK);
    for (size_t i = 0; i < n; i++)
        if (dims[i] < 0 || dims[i] > IR_MAX_DIM)
            return oc_fail(im->err, "%s: tensor '%s' has dim %" PRId64 " (0 to %" PRId64 ")",
                           im->path, t->name, dims[i], IR_MAX_DIM);
    ir_tensor_set_shape(t, (int)n, dims);
    int64_t b;
    if (!ir_tensor_bytes(t, &b) || b > IR_MAX_TENSOR_BYTES)
        return oc_fail(im->err, "%s: tensor '%s' is larger than %" PRId64 " bytes", im->path,
                       t->name, IR_MAX_TENSOR_BYTES);
    return OC_OK;
}

/* Packs the typed repeated fields into little-endian elements of t->dtype. */
static int copy_typed_data(importer *im, ir_tensor *t, const Onnx__TensorProto *tp, int64_t numel) {
    int es = ir_dtype_size(t->dtype);
    /* The one typed field the data type uses (onnx.proto); values in any other are refused. */
    size_t count, all = tp->n_float_data + tp->n_int64_data + tp->n_int32_data + tp->n_double_data +
                        tp->n_uint64_data;
    switch (t->dtype) {
    case IR_DTYPE_FLOAT: count = tp->n_float_data; break;
    case IR_DTYPE_INT64: count = tp->n_int64_data; break;
    case IR_DTYPE_DOUBLE: count = tp->n_double_data; break;
    case IR_DTYPE_UINT64:
    case IR_DTYPE_UINT32: count = tp->n_uint64_data; break;
    default: count = tp->n_int32_data; break; /* 8-, 16- and 32-bit types, bool */
    }
    if (all == 0) return OC_OK; /* no data: structure-only */
    if (count != all)
        return oc_fail(im->err,
                       "%s: initializer '%s' (%s) has values in a field its type does not use",
                       im->path, t->name, ir_dtype_name(t->dtype));
    if ((int64_t)count != numel)
        return oc_fail(im->err, "%s: initializer '%s' has %zu values but its dims need %" PRId64,
                       im->path, t->name, count, numel);
    uint8_t *buf = oc_malloc(count * (size_t)es);
    for (size_t i = 0; i < count; i++) {
        uint8_t *dst = buf + i * (size_t)es;
        if (tp->n_float_data && t->dtype == IR_DTYPE_FLOAT) memcpy(dst, &tp->float_data[i], 4);
        else if (tp->n_int64_data && t->dtype == IR_DTYPE_INT64) memcpy(dst, &tp->int64_data[i], 8);
        else if (tp->n_double_data && t->dtype == IR_DTYPE_DOUBLE)
            memcpy(dst, &tp->double_data[i], 8);
        else if (tp->n_uint64_data &&
                 (t->dtype == IR_DTYPE_UINT64 || t->dtype == IR_DTYPE_UINT32)) {
            uint64_t v = tp->uint64_data[i];
            if (es == 8) memcpy(dst, &v, 8);
            else {
                uint32_t w = (uint32_t)v;
                memcpy(dst, &w, 4);
            }
        } else if (tp->n_int32_data) {
            int32_t v = tp->int32_data[i];
            switch (es) {
            case 1: {
                uint8_t w = (uint8_t)v;
                memcpy(dst, &w, 1);
                break;
            }
            case 2: {
                uint16_t w = (uint16_t)v;
                memcpy(dst, &w, 2);
                break;
            }
            case 4: memcpy(dst, &v, 4); break;
            default: goto mismatch;
            }
        } else {
            goto mismatch;
        }
    }
    oc_free(t->data);
    t->data = buf;
    t->data_bytes = count * (size_t)es;
    t->data_src = IR_DATA_INLINE;
    return OC_OK;
mismatch:
    oc_free(buf);
    return oc_fail(im->err, "%s: initializer '%s': data field does not match its type %s", im->path,
                   t->name, ir_dtype_name(t->dtype));
}

/* The file of external data location loc, resolved (links followed), which
 * must lie inside the model's folder (also resolved) and be a regular file.
 * *out (owned by the caller) is the resolved path. */
static int external_path(const char *model_dir, const char *loc, const char *tensor, char **out,
                         oc_err *err) {
    *out = NULL;
    char *joined = oc_sprintf("%s/%s", model_dir, loc);
    char *dir = realpath(model_dir, NULL), *file = realpath(joined, NULL);
    int rc = OC_OK;
    size_t n = dir ? strlen(dir) : 0;
    struct stat st;
    if (!dir || !file)
        rc = oc_fail(err, "external data of '%s': '%s': %s", tensor, joined, strerror(errno));
    else if (strncmp(file, dir, n) != 0 || (file[n] != '/' && strcmp(dir, "/") != 0))
        rc = oc_fail(err,
                     "external data of '%s': location '%s' resolves to '%s', outside the "
                     "model's folder '%s'",
                     tensor, loc, file, dir);
    else if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
        rc = oc_fail(err, "external data of '%s': '%s' is not a regular file", tensor, file);
    free(dir); /* realpath's: malloc'd */
    oc_free(joined);
    if (rc) free(file);
    else *out = file;
    return rc;
}

/* A byte count: decimal digits only, within int64. */
static bool parse_count(const char *s, int64_t *v) {
    if (!*s) return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return false;
    errno = 0;
    *v = strtoll(s, NULL, 10);
    return errno == 0;
}

static int external_info(importer *im, ir_tensor *t, const Onnx__TensorProto *tp, int64_t bytes) {
    const char *loc = NULL;
    int64_t off = 0, len = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key || !e->value) continue;
        bool is_off = strcmp(e->key, "offset") == 0, is_len = strcmp(e->key, "length") == 0;
        if (strcmp(e->key, "location") == 0) loc = e->value;
        else if ((is_off || is_len) && !parse_count(e->value, is_off ? &off : &len))
            return oc_fail(im->err,
                           "%s: initializer '%s': external data %s '%s' is not a byte count",
                           im->path, t->name, e->key, e->value);
    }
    if (!loc || !*loc)
        return oc_fail(im->err, "%s: initializer '%s': external data without a location", im->path,
                       t->name);
    if (strstr(loc, "..") || loc[0] == '/')
        return oc_fail(im->err,
                       "%s: initializer '%s': external data location '%s' leaves the "
                       "model directory",
                       im->path, t->name, loc);
    if (len < 0) len = bytes;
    if (off < 0 || len != bytes)
        return oc_fail(im->err,
                       "%s: initializer '%s': external data length %" PRId64
                       " does not match its dims (%" PRId64 " bytes)",
                       im->path, t->name, len, bytes);
    int64_t end;
    if (!oc_add_i64(off, len, &end))
        return oc_fail(im->err,
                       "%s: initializer '%s': external data offset %" PRId64 " is out of range",
                       im->path, t->name, off);
    char *full;
    if (external_path(im->g->model_dir, loc, t->name, &full, im->err))
        return oc_fail_prefix(im->err, "%s", im->path);
    struct stat st;
    int rc = stat(full, &st);
    if (rc != 0 || (int64_t)st.st_size < end) {
        rc = oc_fail(im->err, "%s: initializer '%s': external data file '%s' %s", im->path, t->name,
                     full, rc != 0 ? strerror(errno) : "is too short");
        free(full);
        return rc;
    }
    free(full);
    t->ext_location = oc_strdup(loc);
    t->ext_offset = off;
    t->ext_length = len;
    t->data_src = IR_DATA_EXTERNAL;
    return OC_OK;
}

/* Fills t (name already set) from a TensorProto: dtype, dims and data. */
static int tensor_from_proto(importer *im, ir_tensor *t, const Onnx__TensorProto *tp) {
    t->dtype = (ir_dtype)tp->data_type;
    if (ir_dtype_size(t->dtype) == 0)
        return oc_fail(im->err, "%s: tensor '%s' has unsupported data type %d", im->path, t->name,
                       tp->data_type);
    if (set_dims(im, t, tp->n_dims, tp->dims)) return OC_ERR;
    int64_t numel, bytes;
    ir_tensor_numel(t, &numel);
    ir_tensor_bytes(t, &bytes);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return external_info(im, t, tp, bytes);
    if (tp->has_raw_data && tp->raw_data.len > 0) {
        if ((int64_t)tp->raw_data.len != bytes)
            return oc_fail(im->err,
                           "%s: initializer '%s' has %zu bytes of data but its dims "
                           "need %" PRId64,
                           im->path, t->name, tp->raw_data.len, bytes);
        ir_tensor_set_data(t, tp->raw_data.data, tp->raw_data.len);
        return OC_OK;
    }
    return copy_typed_data(im, t, tp, numel);
}

static int value_info_to_tensor(importer *im, ir_tensor *t, const Onnx__ValueInfoProto *vi) {
    const Onnx__TypeProto *ty = vi->type;
    if (!ty || ty->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !ty->tensor_type)
        return oc_fail(im->err, "%s: graph input '%s' is not a tensor", im->path, t->name);
    const Onnx__TypeProto__Tensor *tt = ty->tensor_type;
    t->dtype = (ir_dtype)tt->elem_type;
    if (ir_dtype_size(t->dtype) == 0)
        return oc_fail(im->err, "%s: graph input '%s' has unsupported element type %d", im->path,
                       t->name, tt->elem_type);
    if (!tt->shape) return oc_fail(im->err, "%s: graph input '%s' has no shape", im->path, t->name);
    if (tt->shape->n_dim > IR_MAX_RANK)
        return oc_fail(im->err, "%s: graph input '%s' has rank %zu (at most %d supported)",
                       im->path, t->name, tt->shape->n_dim, IR_MAX_RANK);
    t->rank = (int)tt->shape->n_dim;
    for (int i = 0; i < t->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0 || d->dim_value > IR_MAX_DIM)
                return oc_fail(im->err,
                               "%s: graph input '%s' has dim %" PRId64 " (0 to %" PRId64 ")",
                               im->path, t->name, d->dim_value, IR_MAX_DIM);
            t->dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param) {
            t->dim_params[i] = oc_strdup(d->dim_param);
        } else {
            /* Unnamed dynamic dim: give it a name the user can bind. */
            t->dim_params[i] = oc_sprintf("%s:%d", t->name, i);
        }
    }
    return OC_OK;
}

/* ---- attributes ---- */

static int attr_from_proto(importer *im, const char *node, const Onnx__AttributeProto *ap,
                           ir_attr *a) {
    memset(a, 0, sizeof *a);
    a->name = oc_strdup(ap->name ? ap->name : "");
    size_t n_values = ap->n_floats + ap->n_ints + ap->n_strings;
    if (n_values > IR_MAX_ATTR_VALUES)
        return oc_fail(im->err, "%s: node '%s': attribute '%s' holds %zu values (at most %d)",
                       im->path, node, a->name, n_values, IR_MAX_ATTR_VALUES);
    switch (ap->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a->type = IR_ATTR_FLOAT;
        a->f = ap->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a->type = IR_ATTR_INT;
        a->i = ap->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        a->type = IR_ATTR_STRING;
        a->s = oc_strndup((const char *)ap->s.data, ap->s.len);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a->type = IR_ATTR_FLOATS;
        a->n = (int)ap->n_floats;
        a->floats = oc_malloc(ap->n_floats * sizeof(float));
        if (ap->n_floats) memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        a->type = IR_ATTR_INTS;
        a->n = (int)ap->n_ints;
        a->ints = oc_malloc(ap->n_ints * sizeof(int64_t));
        if (ap->n_ints) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        a->type = IR_ATTR_STRINGS;
        a->n = (int)ap->n_strings;
        a->strings = oc_malloc(ap->n_strings * sizeof(char *));
        for (size_t i = 0; i < ap->n_strings; i++)
            a->strings[i] = oc_strndup((const char *)ap->strings[i].data, ap->strings[i].len);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: /* kept packed: onnx_import_body */
        if (!ap->g) break;
        a->type = IR_ATTR_GRAPH;
        a->graph_bytes = onnx__graph_proto__get_packed_size(ap->g);
        a->graph = oc_malloc(a->graph_bytes ? a->graph_bytes : 1);
        onnx__graph_proto__pack(ap->g, a->graph);
        return OC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!ap->t) break;
        a->type = IR_ATTR_TENSOR;
        a->t = oc_calloc(1, sizeof *a->t);
        a->t->name = oc_strdup(ap->t->name ? ap->t->name : a->name);
        a->t->producer = -1;
        if (tensor_from_proto(im, a->t, ap->t))
            return oc_fail_prefix(im->err, "node '%s' attribute '%s'", node, a->name);
        if (a->t->data_src == IR_DATA_EXTERNAL)
            return oc_fail(im->err,
                           "%s: node '%s' attribute '%s': external data in an "
                           "attribute is not supported",
                           im->path, node, a->name);
        return OC_OK;
    default: break;
    }
    if (a->type == 0)
        return oc_fail(im->err,
                       "%s: node '%s': attribute '%s' has unsupported type %d "
                       "(sparse tensors and lists of graphs or tensors are not supported)",
                       im->path, node, a->name, (int)ap->type);
    return OC_OK;
}

/* ---- graph ---- */

/* A unique node name: the ONNX name, or "<OpType>_<index>" when empty; a
 * duplicate gets "#<k>" appended (profiles and plans key on node names). */
static char *unique_node_name(importer *im, const Onnx__NodeProto *np, int index) {
    char *base =
        (np->name && *np->name) ? oc_strdup(np->name) : oc_sprintf("%s_%d", np->op_type, index);
    int *next = strmap_get(im->node_names, base);
    if (!next) {
        strmap_put(im->node_names, base, 1);
        return base;
    }
    /* linear in the duplicates: each base remembers where its suffixes stopped */
    for (int k = *next;; k++) {
        char *name = oc_sprintf("%s#%d", base, k);
        if (!strmap_get(im->node_names, name)) {
            strmap_put(im->node_names, base, k + 1);
            strmap_put(im->node_names, name, 1);
            oc_free(base);
            return name;
        }
        oc_free(name);
    }
}

/* An input of np by name (-1 for an omitted one): produced earlier, a graph input
 * or an initializer. */
static int node_input(importer *im, const Onnx__NodeProto *np, const char *node, size_t i, int *t) {
    const char *in = np->input[i];
    ir_graph *g = im->g;
    *t = -1;
    if (!in || !*in) return OC_OK;
    *t = ir_tensor_find(g, in);
    if (im->body && (*t < 0 || (g->tensors[*t].producer < 0 && !g->tensors[*t].is_initializer &&
                                !g->tensors[*t].is_graph_input))) {
        if (*t < 0) *t = ir_tensor_add(g, in, IR_DTYPE_UNDEFINED); /* the outer graph's: a */
        return OC_OK; /* placeholder the unrolling binds by name */
    }
    if (*t < 0 || (g->tensors[*t].producer < 0 && !g->tensors[*t].is_initializer &&
                   !g->tensors[*t].is_graph_input))
        return oc_fail(im->err,
                       "%s: node '%s' (%s): input '%s' is not produced by an "
                       "earlier node, a graph input or an initializer",
                       im->path, node, np->op_type, in);
    return OC_OK;
}

/* np's one output, a new tensor (-1 for none). */
static int node_output(importer *im, const Onnx__NodeProto *np, const char *node, size_t i,
                       int *t) {
    const char *out = np->output[i];
    *t = -1;
    if (!out || !*out) return OC_OK;
    if (ir_tensor_find(im->g, out) >= 0)
        return oc_fail(im->err, "%s: node '%s' (%s): output '%s' is already defined", im->path,
                       node, np->op_type, out);
    *t = ir_tensor_add(im->g, out, IR_DTYPE_UNDEFINED);
    return OC_OK;
}

/* A tensor "<name>/<what>" for a lowering's intermediate (ir_tensor_add keeps it unique). */
static int lowered_tensor(importer *im, const char *name, const char *what, ir_dtype dt) {
    char *s = oc_sprintf("%s/%s", name, what);
    int t = ir_tensor_add(im->g, s, dt);
    oc_free(s);
    return t;
}

/* ReduceL2 (F.normalize, torch.linalg.vector_norm): lowered here into
 * Sqrt(Max(ReduceSum(X X), FLT_MIN)) over the same axes, so it runs and differentiates as
 * those do. The ReduceSum takes the node's attributes; axes given as an attribute (opset <
 * 18) become its input from opset 13 on, as ReduceSum takes them there. The gradient is
 * X dY / Y, PyTorch's, and 0 at an all-zero vector as PyTorch's is: the floor takes it there
 * (Sqrt's own gradient at 0 is infinite, and 0 times it NaN). It costs a norm below
 * sqrt(FLT_MIN), 1.1e-19, its value (that floor instead) and its gradient (0). */
static int import_reduce_l2(importer *im, const Onnx__NodeProto *np, const char *name) {
    ir_graph *g = im->g;
    int x, axes = -1, out;
    if (np->n_input < 1 || np->n_input > 2 || np->n_output != 1)
        return oc_fail(im->err, "%s: node '%s' (ReduceL2): takes one or two inputs, one output",
                       im->path, name);
    if (node_input(im, np, name, 0, &x) || (np->n_input > 1 && node_input(im, np, name, 1, &axes)))
        return OC_ERR;
    if (x < 0)
        return oc_fail(im->err, "%s: node '%s' (ReduceL2): input 0 is empty", im->path, name);
    if (node_output(im, np, name, 0, &out)) return OC_ERR;
    if (out < 0)
        return oc_fail(im->err, "%s: node '%s' (ReduceL2): output 0 is empty", im->path, name);
    int sq = lowered_tensor(im, name, "square", IR_DTYPE_UNDEFINED);
    int sum = lowered_tensor(im, name, "sum_squares", IR_DTYPE_UNDEFINED);
    char *mul_name = oc_sprintf("%s/square", name), *sum_name = oc_sprintf("%s/sum_squares", name);
    int m = op_node_add(g, mul_name, OP_MUL);
    ir_node_add_input(g, m, x);
    ir_node_add_input(g, m, x);
    ir_node_add_output(g, m, sq);
    int r = op_node_add(g, sum_name, OP_REDUCE_SUM);
    oc_free(mul_name), oc_free(sum_name);
    ir_node_add_input(g, r, sq);
    if (axes >= 0) ir_node_add_input(g, r, axes);
    ir_node_add_output(g, r, sum);
    for (size_t i = 0; i < np->n_attribute; i++) {
        ir_attr a;
        if (attr_from_proto(im, name, np->attribute[i], &a)) {
            ir_attr_free(&a); /* its name and what was read before the failure */
            return OC_ERR;
        }
        if (strcmp(a.name, "axes") == 0 && g->opset >= 13 && a.type == IR_ATTR_INTS) {
            char *axes_name = oc_sprintf("%s/axes", name);
            ir_node_add_input(g, r, ir_const_int64s(g, axes_name, a.n, a.ints));
            oc_free(axes_name);
        } else {
            ir_node_add_attr(g, r, &a);
        }
        ir_attr_free(&a);
    }
    static const float floor_value = FLT_MIN;
    int fl = lowered_tensor(im, name, "floor", IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[fl], 0, NULL);
    ir_tensor_set_data(&g->tensors[fl], &floor_value, sizeof floor_value);
    g->tensors[fl].is_initializer = true;
    int floored = lowered_tensor(im, name, "floored", IR_DTYPE_UNDEFINED);
    char *max_name = oc_sprintf("%s/floor", name);
    int mx = op_node_add(g, max_name, OP_MAX);
    oc_free(max_name);
    ir_node_add_input(g, mx, sum);
    ir_node_add_input(g, mx, fl);
    ir_node_add_output(g, mx, floored);
    int q = op_node_add(g, name, OP_SQRT);
    ir_node_add_input(g, q, floored);
    ir_node_add_output(g, q, out);
    return OC_OK;
}

/* Max / Min of more than two inputs: a chain of two-input ones, in input order
 * ("<name>/part_k", the last one the node itself), which run, differentiate and fold on
 * plan-time values as two-input ones do. */
static int import_min_max_chain(importer *im, const Onnx__NodeProto *np, const char *name,
                                op_kind k) {
    ir_graph *g = im->g;
    int acc, out;
    if (np->n_output != 1)
        return oc_fail(im->err, "%s: node '%s' (%s): one output", im->path, name, np->op_type);
    if (node_input(im, np, name, 0, &acc)) return OC_ERR;
    for (size_t i = 1; i < np->n_input; i++) {
        int x;
        if (node_input(im, np, name, i, &x)) return OC_ERR;
        if (acc < 0 || x < 0)
            return oc_fail(im->err, "%s: node '%s' (%s): an input is empty", im->path, name,
                           np->op_type);
        bool last = i + 1 == np->n_input;
        char *part = oc_sprintf("%s/part_%zu", name, i);
        if (last) {
            if (node_output(im, np, name, 0, &out)) {
                oc_free(part);
                return OC_ERR;
            }
            if (out < 0) {
                oc_free(part);
                return oc_fail(im->err, "%s: node '%s' (%s): output 0 is empty", im->path, name,
                               np->op_type);
            }
        } else {
            out = ir_tensor_add(g, part, IR_DTYPE_UNDEFINED);
        }
        int n = op_node_add(g, last ? name : part, k);
        oc_free(part);
        ir_node_add_input(g, n, acc);
        ir_node_add_input(g, n, x);
        ir_node_add_output(g, n, out);
        acc = out;
    }
    return OC_OK;
}

static int import_node(importer *im, const Onnx__NodeProto *np, int index) {
    ir_graph *g = im->g;
    if (!np->op_type || !*np->op_type)
        return oc_fail(im->err, "%s: node #%d has no op_type", im->path, index);
    char *name = unique_node_name(im, np, index);
    const char *domain = np->domain && strcmp(np->domain, "ai.onnx") != 0 ? np->domain : "";
    op_kind lowered = op_lookup(domain, np->op_type);
    if (lowered == OP_REDUCE_L2 || ((lowered == OP_MAX || lowered == OP_MIN) && np->n_input > 2)) {
        int rc = lowered == OP_REDUCE_L2 ? import_reduce_l2(im, np, name)
                                         : import_min_max_chain(im, np, name, lowered);
        oc_free(name);
        return rc;
    }
    int n = ir_node_add(g, name, np->op_type, domain);
    g->nodes[n].op = op_lookup(domain, np->op_type); /* the one name lookup */
    oc_free(name);
    name = g->nodes[n].name;
    for (size_t i = 0; i < np->n_input; i++) {
        int t;
        if (node_input(im, np, name, i, &t)) return OC_ERR;
        ir_node_add_input(g, n, t);
    }
    for (size_t i = 0; i < np->n_output; i++) {
        int t;
        if (node_output(im, np, name, i, &t)) return OC_ERR;
        ir_node_add_output(g, n, t);
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        ir_attr a;
        int rc = attr_from_proto(im, name, np->attribute[i], &a);
        if (rc == OC_OK) ir_node_add_attr(g, n, &a);
        ir_attr_free(&a);
        if (rc) return OC_ERR;
    }
    if (g->nodes[n].op == OP_GATHER && torch_meta_padding(g, im->path, np, n, im->err))
        return OC_ERR;
    return im->repair ? torch_repair_node(im->repair, np, n, im->err) : OC_OK;
}

static int read_opset(importer *im, const Onnx__ModelProto *m) {
    im->g->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->domain || !*o->domain || strcmp(o->domain, "ai.onnx") == 0)
            im->g->opset = o->version;
    }
    if (im->g->opset < 0)
        return oc_fail(im->err, "%s: model imports no default-domain opset", im->path);
    if (im->g->opset < OP_MIN_OPSET || im->g->opset > OP_MAX_OPSET)
        return oc_fail(im->err, "%s: opset %" PRId64 " is not supported (supported: %d to %d)",
                       im->path, im->g->opset, OP_MIN_OPSET, OP_MAX_OPSET);
    return OC_OK;
}

static int check_ops_supported(importer *im) {
    for (int i = 0; i < im->g->n_nodes; i++) {
        const ir_node *n = &im->g->nodes[i];
        if (n->op == OP_UNKNOWN) {
            char list[2048];
            op_supported_list(list, sizeof list);
            return oc_fail(im->err,
                           "%s: node '%s': unsupported op '%s%s%s' (opset %" PRId64
                           "); supported ops: %s",
                           im->path, n->name, n->domain, *n->domain ? "." : "", n->op_type,
                           im->g->opset, list);
        }
    }
    return OC_OK;
}

/* The int64 (or int32) scalar value of tensor t at import: an initializer's
 * data or a Constant node's value attribute. */
static bool import_scalar(const ir_graph *g, int t, int64_t *v) {
    if (t < 0) return false; /* an empty input */
    const ir_tensor *x = &g->tensors[t];
    const ir_tensor *src = x->is_initializer ? x : NULL;
    if (!src && x->producer >= 0) {
        const ir_node *p = &g->nodes[x->producer];
        const ir_attr *a = p->op == OP_CONSTANT ? ir_attr_find(p, "value") : NULL;
        if (a && a->type == IR_ATTR_TENSOR) src = a->t;
        else if ((a = p->op == OP_CONSTANT ? ir_attr_find(p, "value_int") : NULL)) {
            *v = a->i;
            return true;
        }
    }
    return src && src->rank == 0 && op_int_scalar(src, false, v);
}

/* torch 2.x's exporter writes torch.chunk / split as SplitToSequence whose
 * sequence only SequenceAt nodes read, at constant positions. outcore has no
 * sequence type: that is one Split whose outputs are the SequenceAt outputs
 * in position order (a scalar split, a chunk size, stays a scalar: op_slice.c
 * reads it so, and adds the chunks after the last one read). A chunk is read at most once;
 * one never read is an output nothing reads (timm's SelectiveKernel reads half). */
static int fuse_split_to_sequence(importer *im) {
    ir_graph *g = im->g;
    bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    int rc = OC_OK;
    for (int i = 0; i < g->n_nodes && rc == OC_OK; i++) {
        ir_node *s = &g->nodes[i];
        if (*s->domain || strcmp(s->op_type, "SplitToSequence") != 0) continue;
        int seq = s->n_outputs == 1 ? s->outputs[0] : -1, n = 0, outs[OP_MAX_SPLIT];
        for (int k = 0; k < OP_MAX_SPLIT; k++) outs[k] = -1;
        if (seq < 0) {
            rc = oc_fail(im->err, "%s: node '%s' (SplitToSequence): it must have one output",
                         im->path, s->name);
            break;
        }
        const ir_tensor *q = &g->tensors[seq];
        for (int c = 0; c < q->n_consumers && rc == OC_OK; c++) {
            ir_node *r = &g->nodes[q->consumers[c]];
            int64_t pos;
            if (*r->domain || strcmp(r->op_type, op_name(OP_SEQUENCE_AT)) != 0 ||
                r->n_inputs != 2 || r->n_outputs != 1 || r->inputs[0] != seq ||
                !import_scalar(g, r->inputs[1], &pos) || pos < 0 || pos >= OP_MAX_SPLIT ||
                outs[pos] >= 0)
                rc = oc_fail(im->err,
                             "%s: node '%s' (SplitToSequence): its sequence is read by '%s' (%s); "
                             "outcore takes sequences only as SequenceAt at distinct constant "
                             "positions below %d",
                             im->path, s->name, r->name, r->op_type, OP_MAX_SPLIT);
            else {
                outs[pos] = r->outputs[0];
                remove[q->consumers[c]] = true;
                n = pos + 1 > n ? (int)pos + 1 : n;
            }
        }
        for (int k = 0; k < n && rc == OC_OK; k++)
            if (outs[k] < 0) { /* a chunk the model never reads: an output no node reads */
                char *name = oc_sprintf("%s/chunk_%d", s->name, k);
                outs[k] = ir_tensor_add(g, name, IR_DTYPE_UNDEFINED); /* typed by infer */
                oc_free(name);
                s = &g->nodes[i];
            }
        if (rc == OC_OK && (ir_attr_int(s, "keepdims", 1) == 0 && s->n_inputs < 2))
            rc = oc_fail(im->err, "%s: node '%s' (SplitToSequence): keepdims=0 is not supported",
                         im->path, s->name);
        if (rc) break;
        g->tensors[seq].producer = -1;
        s->n_outputs = 0;
        for (int k = 0; k < n; k++) {
            g->tensors[outs[k]].producer = -1;
            ir_node_add_output(g, i, outs[k]);
        }
        s = &g->nodes[i];
        s->op = OP_SPLIT;
        oc_free(s->op_type);
        s->op_type = oc_strdup(op_name(OP_SPLIT));
    }
    bool any = false;
    for (int i = 0; i < g->n_nodes && rc == OC_OK; i++) /* detach the SequenceAt nodes */
        if (remove[i]) g->nodes[i].n_outputs = 0, any = true;
    /* Only then: compaction also drops tensors nothing reads (a checkpoint's momenta). */
    if (rc == OC_OK && any) ir_graph_remove_nodes(g, remove);
    oc_free(remove);
    return rc;
}

/* outcore.channels_last (written by onnx_export: standard nodes cannot carry
 * the attribute past onnx.checker): the names of the channels-last nodes, one
 * per line; each gets its attribute back before shapes are inferred. */
static int mark_channels_last(importer *im, const Onnx__ModelProto *m) {
    const char *v = NULL;
    for (size_t i = 0; i < m->n_metadata_props && !v; i++)
        if (m->metadata_props[i]->key && m->metadata_props[i]->value &&
            strcmp(m->metadata_props[i]->key, ONNX_META_CHANNELS_LAST) == 0)
            v = m->metadata_props[i]->value;
    ir_graph *g = im->g;
    while (v && *v) {
        const char *nl = strchr(v, '\n');
        size_t len = nl ? (size_t)(nl - v) : strlen(v);
        int found = -1;
        for (int i = 0; i < g->n_nodes && found < 0; i++)
            if (strlen(g->nodes[i].name) == len && strncmp(g->nodes[i].name, v, len) == 0)
                found = i;
        if (found < 0 || !op_reads_channel_axis(g->nodes[found].op))
            return oc_fail(im->err, "%s: metadata %s names '%.*s', %s", im->path,
                           ONNX_META_CHANNELS_LAST, (int)(len > 200 ? 200 : len), v,
                           found < 0 ? "which is no node of the graph"
                                     : "whose op does not read a channel axis");
        ir_node_mark_channels_last(g, found);
        v = nl ? nl + 1 : NULL;
    }
    return OC_OK;
}

/* The initializers' kinds torch.export's exporter writes: the value info of each of a
 * module's parameters, buffers and lifted constant tensors carries metadata
 * "pkg.torch.export.graph_signature.InputSpec.kind" = PARAMETER, BUFFER or CONSTANT_TENSOR;
 * the constants the exporter makes itself (a literal's scalar) carry none. Nothing else in
 * the file tells them apart. marked[t]: t carries a kind; returns whether any is PARAMETER
 * (outcore's own files, a --save or a plan, mark only buffers). */
static bool mark_input_kinds(ir_graph *g, Onnx__ValueInfoProto *const *vis, size_t n,
                             bool *marked) {
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const Onnx__ValueInfoProto *vi = vis[i];
        int t = vi->name ? ir_tensor_find(g, vi->name) : -1;
        if (t < 0 || !g->tensors[t].is_initializer) continue;
        for (size_t k = 0; k < vi->n_metadata_props; k++) {
            const Onnx__StringStringEntryProto *p = vi->metadata_props[k];
            if (!p->key || !p->value ||
                strcmp(p->key, "pkg.torch.export.graph_signature.InputSpec.kind") != 0)
                continue;
            marked[t] = true;
            any = any || strcmp(p->value, "PARAMETER") == 0;
            g->tensors[t].is_buffer = strcmp(p->value, "BUFFER") == 0;
            g->tensors[t].is_export_constant = strcmp(p->value, "CONSTANT_TENSOR") == 0;
        }
    }
    return any;
}

/* In a torch.export file (its parameters marked), every initializer not marked a parameter
 * is a constant: a literal's scalar (x * 0.1, huber's delta, 2 ** x's base) never trains in
 * PyTorch. */
static void mark_export_constants(ir_graph *g, const Onnx__GraphProto *gp) {
    bool *marked = oc_calloc((size_t)g->n_tensors + 1, sizeof(bool));
    bool any = mark_input_kinds(g, gp->value_info, gp->n_value_info, marked);
    any = mark_input_kinds(g, gp->input, gp->n_input, marked) || any;
    for (int t = 0; any && t < g->n_tensors; t++)
        if (g->tensors[t].is_initializer && !marked[t]) g->tensors[t].is_export_constant = true;
    oc_free(marked);
}

static int import_model(importer *im, const Onnx__ModelProto *m) {
    ir_graph *g = im->g;
    const Onnx__GraphProto *gp = m->graph;
    if (!gp) return oc_fail(im->err, "%s: model has no graph", im->path);
    if (read_opset(im, m)) return OC_ERR;
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    if (g->ir_version < OC_MIN_IR_VERSION || g->ir_version > OC_MAX_IR_VERSION)
        return oc_fail(im->err, "%s: ONNX IR version %" PRId64 " (this build reads %d to %d)",
                       im->path, g->ir_version, OC_MIN_IR_VERSION, OC_MAX_IR_VERSION);
    g->producer_name = oc_strdup(m->producer_name ? m->producer_name : "");
    oc_free(g->name);
    g->name = oc_strdup(gp->name ? gp->name : "");
    if (gp->n_sparse_initializer)
        return oc_fail(im->err, "%s: sparse initializers are not supported", im->path);
    if (gp->n_node > IR_MAX_NODES || gp->n_initializer + gp->n_input > IR_MAX_TENSORS)
        return oc_fail(
            im->err, "%s: %zu nodes, %zu initializers and graph inputs (at most %d and %d)",
            im->path, gp->n_node, gp->n_initializer + gp->n_input, IR_MAX_NODES, IR_MAX_TENSORS);

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name)
            return oc_fail(im->err, "%s: initializer #%zu has no name", im->path, i);
        if (ir_tensor_find(g, tp->name) >= 0)
            return oc_fail(im->err, "%s: initializer '%s' is defined twice", im->path, tp->name);
        int t = ir_tensor_add(g, tp->name, IR_DTYPE_UNDEFINED);
        g->tensors[t].is_initializer = g->tensors[t].is_model_initializer = true;
        g->tensors[t].kind = IR_KIND_PARAMETER; /* refined by op roles later */
        if (tensor_from_proto(im, &g->tensors[t], tp)) return OC_ERR;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name)
            return oc_fail(im->err, "%s: graph input #%zu has no name", im->path, i);
        int known = ir_tensor_find(g, vi->name);
        if (known >= 0 && g->tensors[known].is_graph_input)
            return oc_fail(im->err, "%s: graph input '%s' is listed twice", im->path, vi->name);
        if (known >= 0) continue; /* initializer also listed as input */
        int t = ir_tensor_add(g, vi->name, IR_DTYPE_UNDEFINED);
        g->tensors[t].kind = IR_KIND_INPUT;
        if (value_info_to_tensor(im, &g->tensors[t], vi)) return OC_ERR;
        ir_graph_add_input(g, t);
    }
    mark_export_constants(g, gp);
    if (gp->n_node == 0) return oc_fail(im->err, "%s: graph has no nodes", im->path);
    im->repair = torch_repair_new(g, gp); /* the caller frees it */
    for (size_t i = 0; i < gp->n_node; i++)
        if (import_node(im, gp->node[i], (int)i)) return OC_ERR;
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name;
        int t = name ? ir_tensor_find(g, name) : -1;
        if (t < 0)
            return oc_fail(im->err, "%s: graph output '%s' is not produced by any node", im->path,
                           name ? name : "");
        ir_graph_add_output(g, t);
    }
    if (mark_channels_last(im, m)) return OC_ERR;
    torch_meta_notes(g, im->path, gp, im->repair);
    if (fuse_split_to_sequence(im)) return OC_ERR;
    return check_ops_supported(im);
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return oc_strdup(".");
    if (slash == path) return oc_strdup("/");
    return oc_strndup(path, (size_t)(slash - path));
}

int onnx_import_buffer(const uint8_t *buf, size_t len, const char *path, ir_graph **out,
                       oc_err *err) {
    *out = NULL;
    if (len == 0) return oc_fail(err, "%s: empty file, not an ONNX model", path);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m)
        return oc_fail(err,
                       "%s: not a valid ONNX model (protobuf parse failed; truncated or "
                       "corrupt file?)",
                       path);
    importer im = {.g = ir_graph_new(), .path = path, .err = err, .node_names = strmap_new()};
    im.g->model_path = oc_strdup(path);
    im.g->model_dir = dir_of(path);
    int rc = import_model(&im, m);
    onnx__model_proto__free_unpacked(m, NULL);
    strmap_free(im.node_names);
    torch_repair_free(im.repair);
    if (rc) {
        ir_graph_free(im.g);
        return OC_ERR;
    }
    *out = im.g;
    return OC_OK;
}

/* *fn: the file's host function, or NULL. */
static int import_body(importer *im, const Onnx__GraphProto *gp) {
    ir_graph *g = im->g;
    if (gp->n_sparse_initializer)
        return oc_fail(im->err, "%s: sparse initializers are not supported", im->path);
    if (gp->n_node > IR_MAX_NODES || gp->n_initializer + gp->n_input > IR_MAX_TENSORS)
        return oc_fail(im->err, "%s: %zu nodes", im->path, gp->n_node);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name || ir_tensor_find(g, tp->name) >= 0)
            return oc_fail(im->err, "%s: initializer #%zu has no name or one defined twice",
                           im->path, i);
        int t = ir_tensor_add(g, tp->name, IR_DTYPE_UNDEFINED);
        g->tensors[t].is_initializer = true;
        g->tensors[t].kind = IR_KIND_CONSTANT;
        if (tensor_from_proto(im, &g->tensors[t], tp)) return OC_ERR;
        if (g->tensors[t].data_src == IR_DATA_EXTERNAL)
            return oc_fail(im->err, "%s: initializer '%s': external data in a body", im->path,
                           tp->name);
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *name = gp->input[i]->name;
        if (!name || !*name || ir_tensor_find(g, name) >= 0)
            return oc_fail(im->err, "%s: input #%zu has no name or one defined twice", im->path, i);
        int t = ir_tensor_add(g, name, IR_DTYPE_UNDEFINED);
        g->tensors[t].kind = IR_KIND_INPUT;
        ir_graph_add_input(g, t);
    }
    for (size_t i = 0; i < gp->n_node; i++)
        if (import_node(im, gp->node[i], (int)i)) return OC_ERR;
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        int t = *name ? ir_tensor_find(g, name) : -1;
        if (t < 0 && *name) t = ir_tensor_add(g, name, IR_DTYPE_UNDEFINED); /* an outer value */
        if (t < 0) return oc_fail(im->err, "%s: output #%zu has no name", im->path, i);
        ir_graph_add_output(g, t);
    }
    return check_ops_supported(im);
}

int onnx_import_body(const ir_graph *outer, const ir_attr *a, const char *where, ir_graph **out,
                     oc_err *err) {
    *out = NULL;
    Onnx__GraphProto *gp =
        a->type == IR_ATTR_GRAPH ? onnx__graph_proto__unpack(NULL, a->graph_bytes, a->graph) : NULL;
    if (!gp) return oc_fail(err, "%s: attribute '%s' is no graph", where, a->name);
    importer im = {
        .g = ir_graph_new(), .path = where, .err = err, .node_names = strmap_new(), .body = true};
    im.g->opset = outer->opset, im.g->ir_version = outer->ir_version;
    im.g->model_path = oc_strdup(where);
    im.g->model_dir = oc_strdup(outer->model_dir ? outer->model_dir : ".");
    int rc = import_body(&im, gp);
    strmap_free(im.node_names);
    onnx__graph_proto__free_unpacked(gp, NULL);
    if (rc) ir_graph_free(im.g);
    else *out = im.g;
    return rc;
}

static int host_function(const Onnx__ModelProto *m, const char *path,
                         const Onnx__FunctionProto **fn, oc_err *err) {
    *fn = NULL;
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (!f->name || strcmp(f->name, HOST_INPUTS_FUNCTION) != 0 || !f->domain ||
            strcmp(f->domain, OC_DOMAIN) != 0)
            continue;
        if (*fn)
            return oc_fail(err, "%s: function %s.%s is defined twice", path, OC_DOMAIN,
                           HOST_INPUTS_FUNCTION);
        *fn = f;
    }
    return OC_OK;
}

static int import_host_function(importer *im, const ir_graph *g, const Onnx__FunctionProto *fn) {
    ir_graph *h = im->g;
    h->opset = g->opset, h->ir_version = g->ir_version;
    if (fn->n_node > IR_MAX_NODES || fn->n_input + fn->n_node > IR_MAX_TENSORS)
        return oc_fail(im->err, "%s: %zu nodes", im->path, fn->n_node);
    for (size_t i = 0; i < fn->n_input; i++) {
        const char *name = fn->input[i] ? fn->input[i] : "";
        int t = ir_tensor_find(g, name);
        if (t < 0 || !g->tensors[t].is_graph_input)
            return oc_fail(im->err, "%s: input '%s' is not a graph input of the step", im->path,
                           name);
        if (ir_tensor_find(h, name) >= 0)
            return oc_fail(im->err, "%s: input '%s' is listed twice", im->path, name);
        int u = ir_tensor_add(h, name, g->tensors[t].dtype);
        ir_tensor_set_shape(&h->tensors[u], g->tensors[t].rank, g->tensors[t].dims);
        h->tensors[u].kind = IR_KIND_INPUT;
        h->tensors[u].is_graph_input = true;
        ir_graph_add_input(h, u);
    }
    for (size_t i = 0; i < fn->n_node; i++)
        if (import_node(im, fn->node[i], (int)i)) return OC_ERR;
    for (size_t i = 0; i < fn->n_output; i++) {
        const char *name = fn->output[i] ? fn->output[i] : "";
        int t = ir_tensor_find(h, name);
        if (t < 0 || h->tensors[t].producer < 0)
            return oc_fail(im->err, "%s: output '%s' is not produced by any node", im->path, name);
        ir_graph_add_output(h, t);
    }
    return check_ops_supported(im);
}

int onnx_import_host_function(const uint8_t *buf, size_t len, const char *path, ir_graph *g,
                              oc_err *err) {
    Onnx__ModelProto *m = len ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    if (!m) return oc_fail(err, "%s: not a valid ONNX model", path);
    const Onnx__FunctionProto *fn;
    int rc = host_function(m, path, &fn, err);
    if (rc == OC_OK && fn) {
        char *where = oc_sprintf("%s: function %s.%s", path, OC_DOMAIN, HOST_INPUTS_FUNCTION);
        importer im = {.g = ir_graph_new(), .path = where, .err = err, .node_names = strmap_new()};
        im.g->model_path = oc_strdup(where);
        im.g->model_dir = dir_of(path);
        rc = import_host_function(&im, g, fn);
        strmap_free(im.node_names);
        oc_free(where);
        if (rc) ir_graph_free(im.g);
        else g->host = im.g;
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return rc;
}

int onnx_import_file(const char *path, ir_graph **out, oc_err *err) {
    uint8_t *buf;
    size_t len;
    *out = NULL;
    if (oc_read_file(path, &buf, &len, err)) return OC_ERR;
    int rc = onnx_import_buffer(buf, len, path, out, err);
    oc_free(buf);
    return rc;
}

int onnx_load_external(const ir_graph *g, ir_tensor *t, oc_err *err) {
    OC_ASSERT(t->data_src == IR_DATA_EXTERNAL);
    char *full;
    if (external_path(g->model_dir, t->ext_location, t->name, &full, err))
        return oc_fail_prefix(err, "%s", g->model_path ? g->model_path : "model");
    FILE *f = fopen(full, "rb");
    int rc = OC_OK;
    if (f) oc_out_note_input(fileno(f));
    if (!f) {
        rc = oc_fail(err, "%s: cannot open external data of '%s': %s", full, t->name,
                     strerror(errno));
    } else {
        uint8_t *buf = oc_malloc((size_t)t->ext_length);
        if (fseek(f, (long)t->ext_offset, SEEK_SET) != 0 ||
            fread(buf, 1, (size_t)t->ext_length, f) != (size_t)t->ext_length) {
            oc_free(buf);
            rc = oc_fail(err, "%s: short read of external data of '%s'", full, t->name);
        } else {
            oc_free(t->data);
            t->data = buf;
            t->data_bytes = (size_t)t->ext_length;
            t->data_src = IR_DATA_INLINE;
        }
        fclose(f);
    }
    free(full); /* realpath's */
    return rc;
}

int onnx_read_tensor_file(const char *path, ir_tensor *out, oc_err *err) {
    memset(out, 0, sizeof *out);
    out->producer = -1;
    uint8_t *buf;
    size_t len;
    if (oc_read_file(path, &buf, &len, err)) return OC_ERR;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    oc_free(buf);
    if (!tp)
        return oc_fail(err, "%s: not a serialized ONNX TensorProto (protobuf parse failed)", path);
    out->name = oc_strdup(tp->name ? tp->name : "");
    importer im = {.g = NULL, .path = path, .err = err};
    int rc = OC_OK;
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        rc =
            oc_fail(err, "%s: tensor '%s' has external data (not supported here)", path, out->name);
    else rc = tensor_from_proto(&im, out, tp);
    int64_t bytes = 0;
    if (rc == OC_OK && out->data_src != IR_DATA_INLINE && ir_tensor_bytes(out, &bytes) && bytes > 0)
        rc = oc_fail(err, "%s: tensor '%s' has no data", path, out->name);
    if (rc == OC_OK && out->data_src != IR_DATA_INLINE) {
        /* empty tensor: no bytes to hold */
        out->data_src = IR_DATA_INLINE;
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (rc) {
        ir_tensor_free_fields(out);
        memset(out, 0, sizeof *out);
        out->producer = -1;
    }
    return rc;
}
