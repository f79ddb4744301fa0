/* onnx_torch_meta.c — see onnx_torch_meta.h. */
#include "ir/onnx_torch_meta.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"
#include "ir/strmap.h"

#define SIGNATURE_KEY "pkg.torch.export.ExportedProgram.graph_signature"
#define PARAMETER_MARK ": PARAMETER target='"
#define FX_NODE_KEY "pkg.torch.onnx.fx_node"
#define FOLDED_FROM_KEY "pkg.onnxscript.optimizer.folded_from"
#define RULE_KEY "pkg.onnxscript.rewriter.rule_name"

/* How a parameter was given back (torch_repair.repaired's values). */
enum { GIVEN_BACK_MERGED = 1, GIVEN_BACK_TRANSPOSED = 2, GIVEN_BACK_ZERO_BIAS = 3 };

struct torch_repair {
    ir_graph *g;
    int n, cap;              /* the signature's parameters; room for them */
    char **ph, **name;       /* per parameter: its placeholder, its name */
    strmap *by_ph, *by_name; /* placeholder, name -> parameter index */
    strmap *in_file;         /* the file's initializers -> 1 */
    char **from;             /* per folded float value with one source: that source */
    strmap *folded;          /* folded value -> index into from */
    int n_from;
    strmap *repaired; /* parameters given back -> GIVEN_BACK_* */
    int merged, transposed, zero_bias;
    char names[160]; /* the first few given back, quoted */
};

char *onnx_meta_value(const ProtobufCMessage *m, uint32_t tag, const char *key,
                      const char *needle) {
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *f = &m->unknown_fields[i];
        if (f->tag != tag || f->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) continue;
        size_t k = 0, len = 0; /* protobuf-c keeps the length prefix (a varint) in data */
        for (int shift = 0; k < f->len && shift < 35; shift += 7) {
            len |= (size_t)(f->data[k] & 0x7f) << shift;
            if (!(f->data[k++] & 0x80)) break;
        }
        if (len != f->len - k) continue;
        Onnx__StringStringEntryProto *e =
            onnx__string_string_entry_proto__unpack(NULL, len, f->data + k);
        char *hit = e && e->key && e->value && strcmp(e->key, key) == 0 && strstr(e->value, needle)
                        ? oc_strdup(e->value)
                        : NULL;
        if (e) onnx__string_string_entry_proto__free_unpacked(e, NULL);
        if (hit) return hit;
    }
    return NULL;
}

static char *node_meta_value(const Onnx__NodeProto *np, const char *key, const char *needle) {
    return onnx_meta_value(&np->base, 9, key, needle); /* NodeProto.metadata_props (IR 10) */
}

static bool node_meta_contains(const Onnx__NodeProto *np, const char *key, const char *needle) {
    char *v = node_meta_value(np, key, needle);
    oc_free(v);
    return v != NULL;
}

/* An nn.Embedding's padding_idx (its row takes no gradient in PyTorch), which torch.export's
 * exporter leaves only in the Gather's provenance: metadata pkg.torch.onnx.fx_node
 * "... aten.embedding.default](args = (%weight, %indices, padding_idx[, scale_grad_by_freq
 * [, sparse]]), ...", and outcore's --save as ONNX_META_PADDING_IDX. Sets the node's
 * OC_ATTR_PADDING_IDX; scale_grad_by_freq is refused. */
int torch_meta_padding(ir_graph *g, const char *path, const Onnx__NodeProto *np, int node,
                       oc_err *err) {
    static const char call[] = "aten.embedding.default](args = (";
    char *saved = node_meta_value(np, ONNX_META_PADDING_IDX, ""), *end_saved = NULL;
    if (saved) {
        long long pad = strtoll(saved, &end_saved, 10);
        bool ok = end_saved != saved && *end_saved == '\0';
        oc_free(saved);
        if (!ok)
            return oc_fail(err, "%s: node '%s' (Gather): metadata %s is not an integer", path,
                           g->nodes[node].name, ONNX_META_PADDING_IDX);
        ir_attr a = {.name = (char *)OC_ATTR_PADDING_IDX, .type = IR_ATTR_INT, .i = pad};
        ir_node_add_attr(g, node, &a);
        return OC_OK;
    }
    char *v = node_meta_value(np, "pkg.torch.onnx.fx_node", call);
    if (!v) return OC_OK;
    char *args = strstr(v, call) + sizeof call - 1, *end = strchr(args, ')');
    if (end) *end = '\0';
    char *tok[5] = {NULL}, *save = NULL;
    int n = 0;
    for (char *t = strtok_r(args, ",", &save); t && n < 5; t = strtok_r(NULL, ",", &save))
        tok[n++] = t + strspn(t, " ");
    int rc = OC_OK;
    char *after = NULL;
    long long pad = n > 2 ? strtoll(tok[2], &after, 10) : -1;
    if (n > 2 && after != tok[2] && pad != -1) {
        ir_attr a = {.name = (char *)OC_ATTR_PADDING_IDX, .type = IR_ATTR_INT, .i = pad};
        ir_node_add_attr(g, node, &a);
    }
    if (n > 3 && strncmp(tok[3], "True", 4) == 0)
        rc = oc_fail(err,
                     "%s: node '%s' (Gather): an nn.Embedding with scale_grad_by_freq=True "
                     "is not supported",
                     path, g->nodes[node].name);
    oc_free(v);
    return rc;
}

/* torch.onnx.export (dynamo, optimize=True, its default) folds every
 * Conv -> BatchNormalization into the Conv, also in training mode, and says
 * so in each node's metadata: the file no longer holds the network the user
 * trains in PyTorch. Nothing can restore it; the user is told. */
static void note_folded_normalization(ir_graph *g, const char *path, const Onnx__GraphProto *gp) {
    int folded = 0;
    for (size_t i = 0; i < gp->n_node; i++)
        folded += node_meta_contains(gp->node[i], RULE_KEY, "FuseBatchNormIntoConv");
    if (folded)
        ir_graph_note(g,
                      "%s: %d nodes had a BatchNormalization folded into them on export "
                      "(torch.onnx.export's optimize=True): the file holds no batch normalization "
                      "there, so training it trains a different network than model.train() does in "
                      "PyTorch (it may diverge). Export with torch.onnx.export(..., dynamo=True, "
                      "optimize=False) or dynamo=False, training=torch.onnx.TrainingMode.TRAINING "
                      "(tools/outcore_torch.py does)",
                      path, folded);
}

/* Adds to *m (made on first use) each name of a Python list literal "['a', 'b']". */
static void put_list_names(strmap **m, const char *list) {
    for (const char *p = strchr(list, '\''); p; p = strchr(p, '\'')) {
        const char *end = strchr(++p, '\'');
        if (!end) return;
        char *name = oc_strndup(p, (size_t)(end - p));
        if (!*m) *m = strmap_new();
        strmap_put(*m, name, 1);
        oc_free(name);
        p = end + 1;
    }
}

/* The placeholders ("%name") of an aten call's FX text (pkg.torch.onnx.fx_node), *n of them
 * (each oc_malloc'd, as the array: free_names frees them). */
static char **fx_placeholders(const char *fx, int *n) {
    char **out = NULL;
    *n = 0;
    for (const char *p = fx ? strchr(fx, '%') : NULL; p; p = strchr(p, '%')) {
        const char *name = ++p;
        while (isalnum((unsigned char)*p) || *p == '_') p++;
        if (p == name) continue;
        out = oc_realloc(out, ((size_t)*n + 1) * sizeof *out);
        out[(*n)++] = oc_strndup(name, (size_t)(p - name));
    }
    return out;
}

static void free_names(char **names, int n) {
    for (int i = 0; i < n; i++) oc_free(names[i]);
    oc_free(names);
}

/* The placeholders the nodes' FX metadata (the aten call each node was exported from)
 * names, into *m. */
static void put_fx_mentions(strmap **m, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_node; i++) {
        char *v = node_meta_value(gp->node[i], FX_NODE_KEY, "");
        int n;
        char **said = fx_placeholders(v, &n);
        for (int k = 0; k < n; k++) {
            if (!*m) *m = strmap_new();
            strmap_put(*m, said[k], 1);
        }
        free_names(said, n);
        oc_free(v);
    }
}

/* Value info vi's folded_from record (pkg.onnxscript.optimizer.folded_from: "['a', 'b']")
 * when vi names an initializer (inits: the file's), a constant folded so, of a float type (an
 * integer one read a parameter's shape, nn.EmbeddingBag's row width, not its values); else
 * NULL. A value computed at run time has the record too where a rewrite read an input's
 * type only (CastLike to a parameter's type: nn.EmbeddingBag's result). */
static const char *folded_from(const Onnx__ValueInfoProto *vi, const strmap *inits) {
    if (!vi->name || !strmap_get(inits, vi->name)) return NULL;
    int32_t et = vi->type && vi->type->tensor_type ? vi->type->tensor_type->elem_type : 0;
    if (et != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
        et != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
        et != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 &&
        et != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
        return NULL;
    for (size_t k = 0; k < vi->n_metadata_props; k++) {
        const Onnx__StringStringEntryProto *e = vi->metadata_props[k];
        if (e->key && e->value && strcmp(e->key, FOLDED_FROM_KEY) == 0) return e->value;
    }
    return NULL;
}

/* The file's initializers' names -> 1. */
static strmap *initializer_names(const Onnx__GraphProto *gp) {
    strmap *m = strmap_new();
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name) strmap_put(m, gp->initializer[i]->name, 1);
    return m;
}

/* The names the optimizer's folded float tensors were computed from, into *m. */
static void put_folded_from(strmap **m, const Onnx__GraphProto *gp) {
    strmap *inits = initializer_names(gp);
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const char *list = folded_from(gp->value_info[i], inits);
        if (list) put_list_names(m, list);
    }
    strmap_free(inits);
}

/* torch.onnx.export's optimize=True (its default) constant-folds what is computed from
 * parameters alone — a transposed weight, two biases' sum, 1 / p, a BatchNormalization into
 * its Conv — into new initializers (their value info says what they were folded from), and
 * merges initializers whose values are equal at export (a fresh model's LayerNorm weights):
 * a parameter folded so no longer trains through what was folded, one merged trains as the
 * other, and a --save holds the new tensors. The exported program's signature (graph
 * metadata, GraphProto.metadata_props, IR 10) names every parameter and its placeholder:
 * those folded from, and those the file lacks though an aten call read them (a tied
 * parameter, GPT-2's head, has its own line and no initializer in any export, and no call
 * reads it), are noted, from the signature torch_repair_new read (r: NULL without it, and
 * then nothing is said). */
static void note_folded_parameters(ir_graph *g, const char *path, const Onnx__GraphProto *gp,
                                   const torch_repair *r) {
    if (!r) return; /* no exported program's signature */
    char names[160] = "";
    strmap *folded = NULL, *read = NULL;
    put_folded_from(&folded, gp), put_fx_mentions(&read, gp);
    int hit = 0, total = r->n;
    for (int k = 0; k < r->n; k++) {
        const char *name = r->name[k];
        int t = ir_tensor_find(g, name);
        bool absent = t < 0 || !g->tensors[t].is_initializer,
             called = read && strmap_get(read, r->ph[k]);
        if (!strmap_get(r->repaired, name) &&
            ((folded && strmap_get(folded, name)) || (absent && called))) {
            size_t len = strlen(names);
            if (++hit <= 3)
                snprintf(names + len, sizeof names - len, "%s'%s'", hit > 1 ? ", " : "", name);
        }
    }
    if (folded) strmap_free(folded);
    if (read) strmap_free(read);
    if (hit)
        ir_graph_note(
            g,
            "%s: %d of the exported program's %d parameters (%s%s) %s folded into constants "
            "or merged with another by torch.onnx.export's optimize=True: what was folded no "
            "longer trains with the parameter (two biases summed, 1 / p, a BatchNormalization "
            "folded into a Conv), parameters equal at export (a fresh model's LayerNorm "
            "weights) train as one, and a --save holds the new tensors; only a plain "
            "transpose of a weight trains the same. Export with torch.onnx.export(..., "
            "dynamo=True, optimize=False) or dynamo=False, "
            "training=torch.onnx.TrainingMode.TRAINING (tools/outcore_torch.py does)",
            path, hit, total, names, hit > 3 ? ", ..." : "", hit > 1 ? "were" : "was");
}

/* ---- giving back what optimize=True merged or folded ---- */

/* The last component of a parameter's name ("weight" of "blocks.0.ln1.weight"). */
static const char *leaf(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

torch_repair *torch_repair_new(ir_graph *g, const Onnx__GraphProto *gp) {
    char *sig = onnx_meta_value(&gp->base, 16, SIGNATURE_KEY, PARAMETER_MARK);
    if (!sig) return NULL;
    torch_repair *r = oc_calloc(1, sizeof *r);
    r->g = g;
    r->by_ph = strmap_new(), r->by_name = strmap_new(), r->in_file = initializer_names(gp);
    r->folded = strmap_new(), r->repaired = strmap_new();
    for (char *at = strstr(sig, PARAMETER_MARK); at; at = strstr(at, PARAMETER_MARK)) {
        char *line = at, *name = at + sizeof PARAMETER_MARK - 1, *end = strchr(name, '\'');
        while (line > sig && line[-1] != '\n') line--;
        line += strspn(line, " ");
        if (!end) break;
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 64;
            r->ph = oc_realloc(r->ph, (size_t)r->cap * sizeof *r->ph);
            r->name = oc_realloc(r->name, (size_t)r->cap * sizeof *r->name);
        }
        r->ph[r->n] = oc_strndup(line, (size_t)(at - line));
        r->name[r->n] = oc_strndup(name, (size_t)(end - name));
        strmap_put(r->by_ph, r->ph[r->n], r->n);
        strmap_put(r->by_name, r->name[r->n], r->n);
        r->n++;
        at = end + 1;
    }
    oc_free(sig);
    strmap *sources = NULL; /* a value folded from exactly one name: that name */
    r->from = oc_malloc((gp->n_value_info + 1) * sizeof *r->from);
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        const char *list = folded_from(vi, r->in_file);
        if (!list) continue;
        put_list_names(&sources, list);
        const char *a = strchr(list, '\''), *b = a ? strchr(a + 1, '\'') : NULL;
        if (!b || strchr(b + 1, '\'')) continue;
        r->from[r->n_from] = oc_strndup(a + 1, (size_t)(b - a - 1));
        strmap_put(r->folded, vi->name, r->n_from++);
    }
    /* a parameter a fold read is absent for that, not for a merge */
    for (int k = 0; sources && k < r->n; k++)
        if (strmap_get(sources, r->name[k])) strmap_put(r->in_file, r->name[k], 1);
    if (sources) strmap_free(sources);
    return r;
}

void torch_repair_free(torch_repair *r) {
    if (!r) return;
    free_names(r->ph, r->n), free_names(r->name, r->n), free_names(r->from, r->n_from);
    strmap_free(r->by_ph), strmap_free(r->by_name), strmap_free(r->in_file);
    strmap_free(r->folded), strmap_free(r->repaired);
    oc_free(r);
}

static bool said(char *const *ph, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(ph[i], name) == 0) return true;
    return false;
}

/* Parameter `name` given back (how: GIVEN_BACK_*), counted and named, once. */
static void given_back(torch_repair *r, const char *name, int how) {
    if (strmap_get(r->repaired, name)) return;
    strmap_put(r->repaired, name, how);
    int k = r->merged + r->transposed + r->zero_bias + 1;
    if (how == GIVEN_BACK_MERGED) r->merged++;
    else if (how == GIVEN_BACK_TRANSPOSED) r->transposed++;
    else r->zero_bias++;
    size_t len = strlen(r->names);
    if (k <= 3) snprintf(r->names + len, sizeof r->names - len, "%s'%s'", k > 1 ? ", " : "", name);
}

/* A new parameter initializer of g named `name`, of tensor src's type and the given shape,
 * its bytes taken from data (owned from here) or, data NULL, src's own (inline or
 * external). */
static int new_parameter(ir_graph *g, const char *name, int src, int rank, const int64_t *dims,
                         void *data) {
    int t = ir_tensor_add(g, name, g->tensors[src].dtype); /* may move g->tensors */
    const ir_tensor *x = &g->tensors[src];
    ir_tensor *y = &g->tensors[t];
    ir_tensor_set_shape(y, rank, dims);
    y->is_initializer = y->is_model_initializer = true;
    y->kind = IR_KIND_PARAMETER;
    if (data) {
        y->data = data, y->data_bytes = x->data_bytes, y->data_src = IR_DATA_INLINE;
    } else if (x->data_src == IR_DATA_EXTERNAL) {
        y->data_src = IR_DATA_EXTERNAL;
        y->ext_location = oc_strdup(x->ext_location);
        y->ext_offset = x->ext_offset, y->ext_length = x->ext_length;
    } else {
        ir_tensor_set_data(y, x->data, x->data_bytes);
        y->data_src = x->data_src;
    }
    return t;
}

/* Initializer t read by a node whose call names placeholders ph[0..n) but not t's own: when
 * exactly one of them is a parameter the file lacks (not for a fold) with t's leaf name, the
 * node read that one, merged into t at export; its own copy of t (made once), else -1. */
static int merged_parameter(torch_repair *r, char *const *ph, int n, int t) {
    ir_graph *g = r->g;
    const ir_tensor *x = &g->tensors[t];
    const int *own = strmap_get(r->by_name, x->name);
    if (!own || said(ph, n, r->ph[*own])) return -1;
    int found = -1;
    for (int i = 0; i < n; i++) {
        const int *k = strmap_get(r->by_ph, ph[i]);
        if (!k || *k == found || strmap_get(r->in_file, r->name[*k]) ||
            strcmp(leaf(r->name[*k]), leaf(x->name)) != 0)
            continue;
        if (found >= 0) return -1; /* two: which is which is not known */
        found = *k;
    }
    if (found < 0) return -1;
    const char *name = r->name[found];
    int y = ir_tensor_find(g, name);
    if (y >= 0) { /* given back for an earlier node: the same values, the same shape */
        const int *how = strmap_get(r->repaired, name);
        return how && *how == GIVEN_BACK_MERGED ? y : -1;
    }
    int64_t dims[IR_MAX_RANK];
    int rank = x->rank;
    memcpy(dims, x->dims, sizeof dims);
    y = new_parameter(g, name, t, rank, dims, NULL);
    given_back(r, name, GIVEN_BACK_MERGED);
    return y;
}

/* Whether the [a, b] elements at v are the transpose of the [b, a] ones at w. */
static bool transposed_bytes(const uint8_t *v, const uint8_t *w, int64_t a, int64_t b,
                             size_t size) {
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++)
            if (memcmp(v + (size_t)(i * b + j) * size, w + (size_t)(j * a + i) * size, size))
                return false;
    return true;
}

/* Folded initializer t that aten.linear's MatMul reads as its weight, when its one source is
 * a parameter W the call names: torch's linear computes x @ W^T, so t is W^T. *w: W, from
 * the file (a tied weight, checked to be t's transpose) or made from t's transpose once;
 * -1 when not so. */
static int linear_weight(torch_repair *r, char *const *ph, int n, int t, int *w, oc_err *err) {
    ir_graph *g = r->g;
    *w = -1;
    const int *f = strmap_get(r->folded, g->tensors[t].name);
    const int *k = f ? strmap_get(r->by_name, r->from[*f]) : NULL;
    if (!k || !said(ph, n, r->ph[*k]) || g->tensors[t].rank != 2) return OC_OK;
    const char *name = r->name[*k];
    if (g->tensors[t].data_src == IR_DATA_EXTERNAL && onnx_load_external(g, &g->tensors[t], err))
        return OC_ERR;
    const ir_tensor *x = &g->tensors[t];
    int64_t a = x->dims[0], b = x->dims[1], dims[2] = {b, a};
    size_t size = (size_t)ir_dtype_size(x->dtype);
    if (!ir_dtype_is_float(x->dtype) || x->data_src != IR_DATA_INLINE ||
        x->data_bytes != (size_t)(a * b) * size)
        return OC_OK;
    int y = ir_tensor_find(g, name);
    const int *how = y >= 0 ? strmap_get(r->repaired, name) : NULL;
    if (y >= 0 && !how) { /* the file's own (tied): its values must be t's transpose */
        if (g->tensors[y].data_src == IR_DATA_EXTERNAL &&
            onnx_load_external(g, &g->tensors[y], err))
            return OC_ERR;
        const ir_tensor *p = &g->tensors[y];
        if (!p->is_model_initializer || p->dtype != x->dtype || p->rank != 2 || p->dims[0] != b ||
            p->dims[1] != a || p->data_src != IR_DATA_INLINE || p->data_bytes != x->data_bytes ||
            !transposed_bytes(x->data, p->data, a, b, size))
            return OC_OK;
    } else if (y >= 0 && *how != GIVEN_BACK_TRANSPOSED) {
        return OC_OK;
    } else if (y < 0) {
        uint8_t *data = oc_malloc(x->data_bytes);
        const uint8_t *v = x->data;
        for (int64_t i = 0; i < a; i++)
            for (int64_t j = 0; j < b; j++)
                memcpy(data + (size_t)(j * a + i) * size, v + (size_t)(i * b + j) * size, size);
        y = new_parameter(g, name, t, 2, dims, data);
    }
    given_back(r, name, GIVEN_BACK_TRANSPOSED);
    *w = y;
    return OC_OK;
}

/* Gemm or Conv node n, its all-zero bias removed by the optimizer (rule
 * RemoveOptionalBiasFrom<op>: it applies to a bias of zeros only), reading weight W: the one
 * parameter its call names that the file lacks (nor a fold read) is that bias, given back
 * as zeros of W's output width (Gemm: transB ? W's rows : its columns; Conv: W's rows) and
 * read as the node's third input. */
static void zero_bias(torch_repair *r, char *const *ph, int count, int n) {
    ir_graph *g = r->g;
    const ir_node *node = &g->nodes[n];
    int w = node->n_inputs == 2 ? node->inputs[1] : -1;
    const int *own = w >= 0 ? strmap_get(r->by_name, g->tensors[w].name) : NULL;
    if (!own || !said(ph, count, r->ph[*own]) || g->tensors[w].rank < 2 ||
        !ir_dtype_is_float(g->tensors[w].dtype))
        return;
    int found = -1;
    for (int i = 0; i < count; i++) {
        const int *k = strmap_get(r->by_ph, ph[i]);
        if (!k || *k == found || strmap_get(r->in_file, r->name[*k])) continue;
        if (found >= 0) return;
        found = *k;
    }
    const char *name = found >= 0 ? r->name[found] : NULL;
    if (!name || ir_tensor_find(g, name) >= 0) return;
    const ir_tensor *x = &g->tensors[w];
    int64_t width =
        node->op == OP_GEMM && !ir_attr_int(node, "transB", 0) ? x->dims[1] : x->dims[0];
    size_t bytes = (size_t)width * (size_t)ir_dtype_size(x->dtype);
    int b = new_parameter(g, name, w, 1, &width, oc_calloc(bytes, 1));
    g->tensors[b].data_bytes = bytes;
    ir_node_add_input(g, n, b);
    given_back(r, name, GIVEN_BACK_ZERO_BIAS);
}

int torch_repair_node(torch_repair *r, const Onnx__NodeProto *np, int n, oc_err *err) {
    char *fx = node_meta_value(np, FX_NODE_KEY, "");
    if (!fx) return OC_OK;
    int count, rc = OC_OK;
    char **ph = fx_placeholders(fx, &count);
    bool linear = strstr(fx, "aten.linear.default]") != NULL;
    oc_free(fx);
    ir_graph *g = r->g;
    /* a node a rewrite rule made (BatchNormalization folded into a Conv) keeps one call's
     * metadata, which need not say what its inputs are */
    bool rewritten = node_meta_contains(np, RULE_KEY, "");
    for (int i = 0; i < g->nodes[n].n_inputs && rc == OC_OK && !rewritten; i++) {
        int t = g->nodes[n].inputs[i], w = -1;
        if (t < 0 || !g->tensors[t].is_model_initializer) continue;
        if (linear && i == 1 && g->nodes[n].op == OP_MATMUL) {
            if ((rc = linear_weight(r, ph, count, t, &w, err)) || w < 0) continue;
            /* MatMul(x, Transpose(W)), as the export without optimize writes it */
            char *name = oc_sprintf("%s/weight_transposed", g->nodes[n].name);
            int at = ir_node_insert(g, n, name, "Transpose", "");
            oc_free(name);
            g->nodes[at].op = OP_TRANSPOSE;
            ir_node_add_input(g, at, w);
            name = oc_sprintf("%s/transposed", g->tensors[w].name);
            int wt = ir_tensor_add(g, name, g->tensors[w].dtype);
            oc_free(name);
            ir_node_add_output(g, at, wt);
            op_rewrite_attr_ints(g, at, "perm", 2, (const int64_t[]){1, 0});
            ir_node_set_input(g, ++n, i, wt);
        } else if ((w = merged_parameter(r, ph, count, t)) >= 0) {
            ir_node_set_input(g, n, i, w);
        }
    }
    const ir_node *node = &g->nodes[n];
    if (rc == OC_OK && (node->op == OP_GEMM || node->op == OP_CONV) &&
        node_meta_contains(np, RULE_KEY, "RemoveOptionalBiasFrom"))
        zero_bias(r, ph, count, n);
    free_names(ph, count);
    return rc;
}

void torch_meta_notes(ir_graph *g, const char *path, const Onnx__GraphProto *gp,
                      const torch_repair *r) {
    note_folded_normalization(g, path, gp);
    note_folded_parameters(g, path, gp, r);
    int back = r ? r->merged + r->transposed + r->zero_bias : 0;
    if (!back) return;
    const char *what[3] = {"merged with an equal one", "folded as a Linear's transposed weight",
                           "removed as a bias of zeros"};
    int count[3] = {r->merged, r->transposed, r->zero_bias}, said_kinds = 0, kinds = 0;
    char how[200] = "";
    for (int k = 0; k < 3; k++) kinds += count[k] > 0;
    for (int k = 0; k < 3; k++) {
        if (!count[k]) continue;
        size_t len = strlen(how);
        snprintf(how + len, sizeof how - len, "%s%s (%d)",
                 !said_kinds             ? ""
                 : ++said_kinds == kinds ? " or "
                                         : ", ",
                 what[k], count[k]);
        said_kinds += !said_kinds;
    }
    ir_graph_note(g,
                  "%s: %d parameter%s (%s%s) that torch.onnx.export's optimize=True %s %s given "
                  "back from the exported program's metadata: %s, and --save writes it, as in "
                  "PyTorch",
                  path, back, back > 1 ? "s" : "", r->names, back > 3 ? ", ..." : "", how,
                  back > 1 ? "are" : "is", back > 1 ? "each trains" : "it trains");
}
