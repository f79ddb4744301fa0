/* plan_file.c — see plan_file.h: digests and the reading side. */
#include "plan/plan_file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "ir/host_inputs.h"
#include "ir/model_seal.h"
#include "ir/onnx_import.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"
#include "ir/shape_infer.h"
#include "plan/plan_verify.h"
#include "plan/profile.h"
#include "train/autocast.h"
#include "train/train_structure.h"

/* ---- digests ---- */

/* FNV-1a 64 of bytes, continuing from h (start with PLAN_FNV_INIT). */
#define PLAN_FNV_INIT 0xcbf29ce484222325ULL
static uint64_t plan_fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) { return plan_fnv(h, s, strlen(s) + 1); }

static uint64_t fnv_tensor(uint64_t h, const ir_tensor *t) {
    h = fnv_str(h, t->name);
    int32_t r = t->rank;
    h = plan_fnv(h, &r, sizeof r);
    for (int i = 0; i < t->rank; i++) h = plan_fnv(h, &t->dims[i], sizeof t->dims[i]);
    return h;
}

uint64_t plan_graph_digest(const ir_graph *g) {
    uint64_t h = PLAN_FNV_INIT;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        h = fnv_str(fnv_str(fnv_str(h, n->name), n->op_type), n->domain);
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) h = fnv_tensor(h, &g->tensors[n->inputs[k]]);
        h = plan_fnv(h, "|", 1);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) h = fnv_tensor(h, &g->tensors[n->outputs[k]]);
    }
    return h;
}

void plan_profile_digest(const profile *p, char *buf, size_t cap) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    uint64_t h = PLAN_FNV_INIT;
    if (f) {
        oc_err e;
        profile_write_file(p, f, &e);
        fclose(f);
        h = plan_fnv(h, text, len);
        free(text); /* open_memstream's buffer: libc-owned */
    }
    snprintf(buf, cap, "%016llx", (unsigned long long)h);
}

/* ---- reading ---- */

char *plan_file_meta_get(const uint8_t *buf, size_t len, const char *key) {
    Onnx__ModelProto *m = len ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    if (!m) return NULL;
    char *val = NULL;
    for (size_t i = 0; i < m->n_metadata_props && !val; i++) {
        const Onnx__StringStringEntryProto *e = m->metadata_props[i];
        if (e->key && e->value && strcmp(e->key, key) == 0) val = oc_strdup(e->value);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return val;
}

static int parse_i64(const char *s, char **end, int64_t *out) {
    *out = strtoll(s, end, 10);
    return *end == s ? OC_ERR : OC_OK;
}

/* One annotation line: "<index>\t<stream>\t<offsets|->\t<recompute_of>". */
static int restore_line(ir_graph *g, char *line, const char *path, int lineno, oc_err *err) {
    char *f[4] = {line, NULL, NULL, NULL};
    for (int k = 1; k < 4; k++) {
        f[k] = f[k - 1] ? strchr(f[k - 1], '\t') : NULL;
        if (f[k]) *f[k]++ = 0;
    }
    char *end;
    int64_t idx;
    if (!f[3] || parse_i64(f[0], &end, &idx) || *end || idx < 0 || idx >= g->n_nodes)
        return oc_fail(err, "%s: outcore.node_annotations line %d is malformed", path, lineno);
    int i = (int)idx;
    if (*g->nodes[i].domain)
        return oc_fail(err,
                       "%s: outcore.node_annotations line %d names node %d ('%s'), which "
                       "is not a standard-domain node",
                       path, lineno, i, g->nodes[i].name);
    ir_attr st = {.name = PLAN_ATTR_STREAM, .type = IR_ATTR_STRING, .s = f[1]};
    ir_node_add_attr(g, i, &st);
    if (strcmp(f[2], "-") != 0) {
        int64_t vals[64];
        int n = 0;
        for (char *p = f[2]; *p;) {
            if (n == 64 || parse_i64(p, &end, &vals[n++]) || (*end && *end != ','))
                return oc_fail(err, "%s: node '%s': bad offsets '%s' in outcore.node_annotations",
                               path, g->nodes[i].name, f[2]);
            p = *end ? end + 1 : end;
        }
        ir_attr of = {.name = PLAN_ATTR_OFFSETS, .type = IR_ATTR_INTS, .ints = vals, .n = n};
        ir_node_add_attr(g, i, &of);
    }
    if (*f[3]) {
        ir_attr ro = {.name = PLAN_ATTR_RECOMPUTE_OF, .type = IR_ATTR_STRING, .s = f[3]};
        ir_node_add_attr(g, i, &ro);
    }
    return OC_OK;
}

/* outcore.workspaces lines "<node>\t<offset>\t<bytes>" -> outcore_workspace
 * attributes (project-domain nodes carry it already). Absent: no workspaces. */
static int restore_workspaces(ir_graph *g, const uint8_t *buf, size_t len, const char *path,
                              int64_t arena_bytes, oc_err *err) {
    char *val = plan_file_meta_get(buf, len, "outcore.workspaces");
    int rc = OC_OK, lineno = 0;
    for (char *line = val; rc == OC_OK && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        int64_t v[3];
        char *p = line, *end = line;
        for (int k = 0; k < 3 && rc == OC_OK; k++) {
            if (parse_i64(p, &end, &v[k]) || (k < 2 ? *end != '\t' : *end != 0))
                rc = oc_fail(err, "%s: outcore.workspaces line %d is malformed", path, lineno);
            p = end + 1;
        }
        if (rc == OC_OK && (v[0] < 0 || v[0] >= g->n_nodes || v[1] < 0 || v[2] <= 0 ||
                            v[2] > arena_bytes || v[1] > arena_bytes - v[2]))
            rc = oc_fail(err,
                         "%s: outcore.workspaces line %d: node %" PRId64 ", region [%" PRId64
                         ", +%" PRId64 ") is not a node and a region of the %" PRId64 "-byte arena",
                         path, lineno, v[0], v[1], v[2], arena_bytes);
        const int64_t *have;
        if (rc == OC_OK && ir_attr_ints(&g->nodes[v[0]], PLAN_ATTR_WORKSPACE, &have) < 0) {
            ir_attr wa = {.name = PLAN_ATTR_WORKSPACE, .type = IR_ATTR_INTS, .ints = v + 1, .n = 2};
            ir_node_add_attr(g, (int)v[0], &wa);
        }
        line = nl ? nl + 1 : NULL;
    }
    oc_free(val);
    return rc;
}

int plan_file_restore(ir_graph *g, const uint8_t *buf, size_t len, const char *path,
                      int64_t **offsets, int64_t *arena_bytes, oc_err *err) {
    *offsets = NULL;
    const char *keys[] = {"outcore.graph_digest", "outcore.node_annotations",
                          "outcore.fixed_offsets", "outcore.arena_bytes"};
    char *val[4];
    int rc = OC_OK;
    for (int k = 0; k < 4; k++) {
        val[k] = plan_file_meta_get(buf, len, keys[k]);
        if (!val[k] && rc == OC_OK)
            rc = oc_fail(err,
                         "%s: plan without metadata %s (corrupted or not written by "
                         "outcore-plan plan -o)",
                         path, keys[k]);
    }
    char digest[32];
    snprintf(digest, sizeof digest, "%016llx", (unsigned long long)plan_graph_digest(g));
    if (rc == OC_OK && strcmp(digest, val[0]) != 0)
        rc = oc_fail(err,
                     "%s: the plan's layout metadata belongs to another graph (graph digest "
                     "%s, expected %s): a plan from another model, or a modified plan",
                     path, digest, val[0]);
    char *end;
    if (rc == OC_OK && (parse_i64(val[3], &end, arena_bytes) || *end || *arena_bytes < 0))
        rc = oc_fail(err, "%s: outcore.arena_bytes '%s' is not a byte count", path, val[3]);
    int lineno = 0;
    for (char *line = val[1]; rc == OC_OK && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        rc = restore_line(g, line, path, ++lineno, err);
        line = nl ? nl + 1 : NULL;
    }
    int64_t *off = oc_malloc(((size_t)g->n_tensors + 1) * sizeof(int64_t));
    for (int t = 0; t < g->n_tensors; t++) off[t] = -1;
    for (int i = 0; rc == OC_OK && i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        const int64_t *v;
        int nv = ir_attr_ints(n, PLAN_ATTR_OFFSETS, &v);
        if (nv < 0) rc = oc_fail(err, "%s: node '%s' has no %s", path, n->name, PLAN_ATTR_OFFSETS);
        for (int k = 0; k < nv && k < n->n_outputs && rc == OC_OK; k++)
            if (n->outputs[k] >= 0 && v[k] >= 0) off[n->outputs[k]] = v[k];
    }
    if (rc == OC_OK) rc = restore_workspaces(g, buf, len, path, *arena_bytes, err);
    /* A recompute clone's annotation names its original, which keys its
     * Dropout mask and the BN statistics of what reads it (op_args.h): decode
     * every node again, now that the annotations are back. */
    for (int i = 0; rc == OC_OK && i < g->n_nodes; i++)
        if (op_decode(g, &g->nodes[i], err))
            rc = oc_fail_prefix(err, "%s: node '%s'", path, g->nodes[i].name);
    for (char *line = val[2]; rc == OC_OK && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        int64_t o;
        char *tab;
        if (parse_i64(line, &tab, &o) || *tab != '\t' || o < 0)
            rc = oc_fail(err, "%s: outcore.fixed_offsets: malformed line '%s'", path, line);
        int t = rc == OC_OK ? ir_tensor_find(g, tab + 1) : -1;
        if (rc == OC_OK && t < 0)
            rc = oc_fail(err,
                         "%s: outcore.fixed_offsets names tensor '%s', which the graph "
                         "does not have",
                         path, tab + 1);
        if (rc == OC_OK) off[t] = o;
        line = nl ? nl + 1 : NULL;
    }
    for (int k = 0; k < 4; k++) oc_free(val[k]);
    if (rc) {
        oc_free(off);
        return OC_ERR;
    }
    *offsets = off;
    return OC_OK;
}

/* Update-node attributes (SGDMomentum's, AdamW's) overridden before decoding
 * (op_args.h reads them). */
static void set_sgd_attr(ir_graph *g, const char *name, float v) {
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->op != OP_SGD_MOMENTUM && n->op != OP_ADAMW) continue;
        for (int a = 0; a < n->n_attrs; a++)
            if (strcmp(n->attrs[a].name, name) == 0) n->attrs[a].f = v;
    }
}

/* The file's content against its outcore.seal (ir/model_seal.h). */
static int check_seal(const uint8_t *buf, size_t len, const char *path, oc_err *err) {
    Onnx__ModelProto *m = len ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    if (!m) return oc_fail(err, "%s: not a valid ONNX model", path);
    int rc = model_seal_check(m, path, err);
    onnx__model_proto__free_unpacked(m, NULL);
    return rc ? oc_fail_prefix(err, "refused") : OC_OK;
}

static char *meta_or_empty(const uint8_t *buf, size_t len, const char *key) {
    char *v = plan_file_meta_get(buf, len, key);
    return v ? v : oc_strdup("");
}

/* The graph inputs the host function computes (host_inputs.h). */
static int mark_host_inputs(ir_graph *g, oc_err *err) {
    const ir_graph *h = g->host;
    for (int j = 0; h && j < h->n_outputs; j++) {
        int t = ir_tensor_find(g, h->tensors[h->outputs[j]].name);
        if (t < 0 || !g->tensors[t].is_graph_input || h->tensors[h->outputs[j]].is_graph_input)
            return oc_fail(err, "%s: '%s' is not a graph input of the step", h->model_path,
                           h->tensors[h->outputs[j]].name);
        g->tensors[t].is_host_input = true;
    }
    return OC_OK;
}

/* Evaluated once on zeros, the host function gives each host input its declared type
 * and shape. */
static int check_host_inputs(ir_graph *g, oc_err *err) {
    ir_graph *h = g->host;
    if (host_inputs_infer(h, err)) return OC_ERR;
    for (int j = 0; j < h->n_outputs; j++) {
        const ir_tensor *y = &h->tensors[h->outputs[j]];
        const ir_tensor *x = &g->tensors[ir_tensor_find(g, y->name)];
        char a[96], b[96];
        if (x->dtype != y->dtype || x->rank != y->rank ||
            memcmp(x->dims, y->dims, (size_t)x->rank * sizeof(int64_t)) != 0)
            return oc_fail(err, "%s: '%s' is %s %s; the step declares it %s %s", h->model_path,
                           y->name, ir_dtype_name(y->dtype), ir_shape_str(y, a, sizeof a),
                           ir_dtype_name(x->dtype), ir_shape_str(x, b, sizeof b));
    }
    return OC_OK;
}

int plan_file_read(const uint8_t *buf, size_t len, const char *path, const plan_read_opts *o,
                   plan_read *out, oc_err *err) {
    memset(out, 0, sizeof *out);
    const plan_read_opts none = {0};
    if (!o) o = &none;
    char *kind = plan_file_meta_get(buf, len, "outcore.kind");
    char *batch = meta_or_empty(buf, len, "outcore.batch");
    char *nd = meta_or_empty(buf, len, "outcore.data_inputs");
    char *structure = plan_file_meta_get(buf, len, TRAIN_STRUCTURE_KEY);
    int rc = OC_OK;
    out->is_plan = kind && strcmp(kind, PLAN_KIND) == 0;
    if (!out->is_plan && (!kind || strcmp(kind, PLAN_KIND_TRAINING) != 0))
        rc = oc_fail(err,
                     "%s: neither a plan nor a training graph (metadata outcore.kind is '%s'; "
                     "write one with `outcore-plan plan ... -o` or `outcore-plan emit`)",
                     path, kind ? kind : "");
    if (rc == OC_OK) rc = check_seal(buf, len, path, err);
    char *end;
    if (rc == OC_OK && (parse_i64(batch, &end, &out->batch) || *end || out->batch < 1))
        rc = oc_fail(err, "%s: outcore.batch '%s' is not a batch size", path, batch);
    int64_t n_data = 2;
    if (rc == OC_OK && *nd && (parse_i64(nd, &end, &n_data) || *end))
        rc = oc_fail(err, "%s: outcore.data_inputs '%s' is not a count", path, nd);
    if (rc == OC_OK && !structure)
        rc = oc_fail(err,
                     "%s: no %s metadata (written by an older outcore-plan? emit or plan it "
                     "again)",
                     path, TRAIN_STRUCTURE_KEY);
    ir_graph *g = NULL;
    if (rc == OC_OK) rc = onnx_import_buffer(buf, len, path, &g, err);
    if (rc == OC_OK && (n_data < 1 || n_data > g->n_inputs))
        rc = oc_fail(err, "%s: outcore.data_inputs=%" PRId64 " but the graph has %d inputs", path,
                     n_data, g->n_inputs);
    if (rc == OC_OK) {
        for (int i = (int)n_data; i < g->n_inputs; i++) { /* data-less initializers */
            ir_tensor *t = &g->tensors[g->inputs[i]];
            t->is_graph_input = false;
            t->is_initializer = true;
            t->kind = IR_KIND_PARAMETER;
        }
        g->n_inputs = (int)n_data;
        if (o->lr_set) set_sgd_attr(g, "lr", o->lr);
        if (o->momentum_set) set_sgd_attr(g, "momentum", o->momentum);
        if (o->weight_decay_set) set_sgd_attr(g, "weight_decay", o->weight_decay);
        ir_bind_opts b = {0};
        train_structure_mark_constants(g, structure);
        rc = onnx_import_host_function(buf, len, path, g, err) || mark_host_inputs(g, err) ||
                     ir_bind_dims(g, &b, err) || ir_infer_shapes(g, err) ||
                     (g->host && check_host_inputs(g, err))
                 ? OC_ERR
                 : OC_OK;
    }
    if (rc == OC_OK && out->is_plan) /* first: it names a plan of another graph as such */
        rc = plan_file_restore(g, buf, len, path, &out->offsets, &out->arena_bytes, err);
    if (rc == OC_OK) {
        out->tg = oc_calloc(1, sizeof *out->tg);
        out->tg->g = g;
        g = NULL;
        rc = train_structure_parse(out->tg, structure, path, err);
    }
    if (rc == OC_OK) {
        train_graph *tg = out->tg;
        tg->opts = train_opts_default();
        tg->opts.loss = tg->label_tensor >= 0 ? TRAIN_LOSS_SOFTMAX_CE : TRAIN_LOSS_MODEL;
        for (int i = 0; i < tg->g->n_nodes; i++)
            if (tg->g->nodes[i].op == OP_SOFTMAX_CROSS_ENTROPY &&
                op_args_of(&tg->g->nodes[i])->sce.has_ignore_index)
                tg->opts.ignore_index = op_args_of(&tg->g->nodes[i])->sce.ignore_index;
        for (int i = 0; i < tg->g->n_nodes; i++) { /* the optimizer settings as run */
            const ir_node *n = &tg->g->nodes[i];
            if (n->op == OP_CLIP_GRAD_NORM)
                tg->opts.clip_grad_norm = op_args_of(n)->clip_norm.max_norm;
            if (n->op == OP_SGD_MOMENTUM) {
                const op_sgd_args *a = &op_args_of(n)->sgd;
                tg->opts.optimizer = TRAIN_OPT_SGD;
                tg->opts.lr = a->lr, tg->opts.momentum = a->momentum;
                tg->opts.weight_decay = a->weight_decay;
            } else if (n->op == OP_ADAMW) {
                const op_adamw_args *a = &op_args_of(n)->adamw;
                tg->opts.optimizer = TRAIN_OPT_ADAMW;
                tg->opts.lr = a->lr, tg->opts.weight_decay = a->weight_decay;
                tg->opts.beta1 = a->beta1, tg->opts.beta2 = a->beta2;
                tg->opts.epsilon = a->epsilon;
            } else if (autocast_is_cast(n)) { /* --precision, from autocast's half casts */
                ir_dtype to = tg->g->tensors[n->outputs[0]].dtype;
                if (to == IR_DTYPE_BFLOAT16) tg->opts.precision = TRAIN_PRECISION_BF16;
                if (to == IR_DTYPE_FLOAT16) tg->opts.precision = TRAIN_PRECISION_FP16;
            }
        }
    }
    if (rc == OC_OK) {
        out->source_model = meta_or_empty(buf, len, "outcore.source_model");
        out->strategy = meta_or_empty(buf, len, "outcore.strategy");
    }
    ir_graph_free(g);
    oc_free(kind), oc_free(batch), oc_free(nd), oc_free(structure);
    if (rc) plan_read_free(out);
    return rc;
}

void plan_read_free(plan_read *r) {
    train_graph_free(r->tg);
    oc_free(r->offsets), oc_free(r->source_model), oc_free(r->strategy);
    memset(r, 0, sizeof *r);
}
