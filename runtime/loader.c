/* loader.c — see loader.h. */
#include "loader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "ir/onnx_import.h"
#include "plan/plan_file.h"
#include "plan/plan_verify.h"
#include "ir/ops/op_table.h"
#include "ir/shape_infer.h"

static int rt_model_metadata(const uint8_t *buf, size_t len, const char *path, const char *key,
                      char *val, size_t cap, oc_err *err) {
    val[0] = 0;
    Onnx__ModelProto *m = len ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    if (!m) return oc_fail(err, "%s: not a valid ONNX model (protobuf parse failed)", path);
    for (size_t i = 0; i < m->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *e = m->metadata_props[i];
        if (e->key && e->value && strcmp(e->key, key) == 0) snprintf(val, cap, "%s", e->value);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return OC_OK;
}

/* Graph inputs past the first n_data are data-less initializers. */
static void restore_initializers(ir_graph *g, int n_data) {
    if (g->n_inputs <= n_data) return;
    for (int i = n_data; i < g->n_inputs; i++) {
        ir_tensor *t = &g->tensors[g->inputs[i]];
        t->is_graph_input = false;
        t->is_initializer = true;
        t->kind = IR_KIND_PARAMETER;
    }
    g->n_inputs = n_data;
}

static int find_loss_node(const ir_graph *g) {
    if (g->n_outputs < 1) return -1;
    return g->tensors[g->outputs[0]].producer;
}

/* Phases, aliases, kinds, gradients, saved list: the train_graph fields that
 * train_build would have computed. */
static int recover_structure(train_graph *tg, oc_err *err) {
    ir_graph *g = tg->g;
    const char *path = g->model_path;
    int loss_node = find_loss_node(g);
    if (loss_node < 0)
        return oc_fail(err, "%s: training graph: its first output is not produced by a node", path);
    tg->loss_tensor = g->outputs[0];
    tg->n_forward = loss_node + 1;
    tg->phase = oc_calloc((size_t)g->n_nodes + 1, sizeof *tg->phase);
    tg->fwd_of = oc_malloc(((size_t)g->n_nodes + 1) * sizeof *tg->fwd_of);
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        tg->fwd_of[i] = -1;
        bool oc = strcmp(n->domain, OC_DOMAIN) == 0;
        if (i < loss_node) {
            if (oc && n->op != OP_SWAP_OUT && n->op != OP_SWAP_IN)
                return oc_fail(err, "%s: node '%s' (%s.%s) comes before the loss node '%s'; a "
                               "training graph has its forward nodes first", path, n->name,
                               n->domain, n->op_type, g->nodes[loss_node].name);
            tg->phase[i] = TRAIN_PHASE_FORWARD;
        } else if (i == loss_node) {
            tg->phase[i] = TRAIN_PHASE_LOSS;
        } else {
            tg->phase[i] = n->op == OP_SGD_MOMENTUM ? TRAIN_PHASE_UPDATE
                                                                         : TRAIN_PHASE_BACKWARD;
        }
    }
    int nt = g->n_tensors;
    train_mark_aliases(tg);
    tg->grad_of = oc_malloc((size_t)nt * sizeof(int));
    for (int t = 0; t < nt; t++) tg->grad_of[t] = -1;
    tg->label_tensor = -1;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->tensors[g->inputs[i]].dtype == IR_DTYPE_INT64) {
            tg->label_tensor = g->inputs[i];
            g->tensors[g->inputs[i]].kind = IR_KIND_LABEL;
        }
    bool have_sgd = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (tg->phase[i] == TRAIN_PHASE_UPDATE) {
            ir_tensor *w = ir_node_in(g, n, 0), *m = ir_node_in(g, n, 2);
            if (!w->is_initializer || !m->is_initializer)
                return oc_fail(err, "%s: node '%s': SGDMomentum must update initializers", path,
                               n->name);
            m->kind = IR_KIND_OPT_STATE;
            w->kind = IR_KIND_PARAMETER;
            tg->grad_of[n->inputs[0]] = n->inputs[1];
            g->tensors[n->inputs[1]].kind = IR_KIND_GRADIENT;
            if (!have_sgd) {
                tg->opts.lr = ir_attr_float(n, "lr", tg->opts.lr);
                tg->opts.momentum = ir_attr_float(n, "momentum", tg->opts.momentum);
                tg->opts.weight_decay = ir_attr_float(n, "weight_decay", tg->opts.weight_decay);
                have_sgd = true;
            }
        }
    }
    train_alias_kinds(tg);
    /* Saved: forward-made activations (and inputs) that a later phase reads. */
    bool *read_late = oc_calloc((size_t)nt + 1, sizeof(bool));
    for (int i = tg->n_forward; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) read_late[g->nodes[i].inputs[k]] = true;
    tg->saved = oc_malloc(((size_t)nt + 1) * sizeof(int));
    tg->n_saved = 0;
    for (int t = 0; t < nt; t++) {
        ir_tensor *x = &g->tensors[t];
        bool fwd_made = x->producer >= 0 && x->producer < loss_node && tg->alias_of[t] < 0;
        if (fwd_made && read_late[t]) x->kind = IR_KIND_SAVED;
        if ((fwd_made || x->is_graph_input) && read_late[t]) tg->saved[tg->n_saved++] = t;
    }
    oc_free(read_late);
    tg->incore_peak_bytes = train_liveness_peak(tg, &tg->incore_peak_node);
    return OC_OK;
}

static void set_sgd_attr(ir_graph *g, const char *name, float v) {
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->op != OP_SGD_MOMENTUM) continue;
        for (int a = 0; a < n->n_attrs; a++)
            if (strcmp(n->attrs[a].name, name) == 0) n->attrs[a].f = v;
    }
}

static int load_training_graph(const uint8_t *buf, size_t len, const char *path,
                               const rt_load_opts *o, train_graph **out, rt_model_info *info,
                               oc_err *err) {
    char val[64];
    if (rt_model_metadata(buf, len, path, "outcore.batch", val, sizeof val, err)) return OC_ERR;
    int64_t batch = strtoll(val, NULL, 10);
    if (batch < 1) return oc_fail(err, "%s: training graph without a valid outcore.batch", path);
    if (o->batch && o->batch != batch)
        return oc_fail(err, "%s: this training graph was emitted for batch %" PRId64
                       "; --batch %" PRId64 " needs `outcore-plan emit --batch %" PRId64 "`",
                       path, batch, o->batch, o->batch);
    info->batch = batch;
    if (rt_model_metadata(buf, len, path, "outcore.data_inputs", val, sizeof val, err)) return OC_ERR;
    int n_data = *val ? atoi(val) : 2;
    rt_model_metadata(buf, len, path, "outcore.source_model", info->source_model,
                      sizeof info->source_model, err);
    ir_graph *g;
    if (onnx_import_buffer(buf, len, path, &g, err)) return OC_ERR;
    if (n_data < 1 || n_data > g->n_inputs) {
        ir_graph_free(g);
        return oc_fail(err, "%s: outcore.data_inputs=%d but the graph has %d inputs", path,
                       n_data, g->n_inputs);
    }
    restore_initializers(g, n_data);
    ir_bind_opts b = {0};
    if (ir_bind_dims(g, &b, err) || ir_infer_shapes(g, err)) {
        ir_graph_free(g);
        return OC_ERR;
    }
    train_graph *tg = oc_calloc(1, sizeof *tg);
    tg->g = g;
    tg->opts = o->train;
    if (o->lr_set) set_sgd_attr(g, "lr", o->train.lr);
    if (o->momentum_set) set_sgd_attr(g, "momentum", o->train.momentum);
    if (o->weight_decay_set) set_sgd_attr(g, "weight_decay", o->train.weight_decay);
    if (recover_structure(tg, err)) {
        train_graph_free(tg);
        return OC_ERR;
    }
    *out = tg;
    return OC_OK;
}

/* A plan: annotations and offsets back (plan_file_restore), then the verifier
 * (plan_verify.h) before anything runs. */
static int load_plan_layout(train_graph *tg, const uint8_t *buf, size_t len, const char *path,
                            rt_model_info *info, oc_err *err) {
    if (plan_file_restore(tg->g, buf, len, path, &info->plan_offsets, &info->plan_arena_bytes, err))
        return OC_ERR;
    char *st = plan_file_meta_get(buf, len, "outcore.strategy");
    snprintf(info->plan_strategy, sizeof info->plan_strategy, "%s", st ? st : "");
    oc_free(st);
    if (plan_verify(tg, info->plan_offsets, info->plan_arena_bytes, 0, err))
        return oc_fail_prefix(err, "%s: rejected", path);
    return OC_OK;
}

void rt_model_info_free(rt_model_info *info) {
    oc_free(info->plan_offsets);
    info->plan_offsets = NULL;
}

int rt_load(const char *path, const rt_load_opts *o, train_graph **out, rt_model_info *info,
            oc_err *err) {
    *out = NULL;
    memset(info, 0, sizeof *info);
    uint8_t *buf;
    size_t len;
    if (oc_read_file(path, &buf, &len, err)) return OC_ERR;
    char kind[64];
    int rc = rt_model_metadata(buf, len, path, "outcore.kind", kind, sizeof kind, err);
    if (rc == OC_OK && strcmp(kind, "incore-training-graph") == 0) {
        info->is_training_graph = true;
        rc = load_training_graph(buf, len, path, o, out, info, err);
    } else if (rc == OC_OK && strcmp(kind, PLAN_KIND) == 0) {
        info->is_training_graph = info->is_plan = true;
        rc = load_training_graph(buf, len, path, o, out, info, err);
        if (rc == OC_OK) rc = load_plan_layout(*out, buf, len, path, info, err);
        if (rc) {
            train_graph_free(*out);
            *out = NULL;
        }
    } else if (rc == OC_OK && *kind) {
        rc = oc_fail(err, "%s: outcore.kind '%s' is not something outcore-run executes "
                     "(expected a forward model, an incore-training-graph or a plan)", path, kind);
    } else if (rc == OC_OK) {
        snprintf(info->source_model, sizeof info->source_model, "%s", path);
        ir_graph *g;
        ir_bind_opts b = {.batch = o->batch};
        rc = onnx_import_buffer(buf, len, path, &g, err);
        if (rc == OC_OK && (rc = ir_bind_dims(g, &b, err) || ir_infer_shapes(g, err)) != 0)
            ir_graph_free(g);
        if (rc == OC_OK) {
            info->batch = g->n_inputs ? g->tensors[g->inputs[0]].dims[0] : 0;
            rc = train_build(g, &o->train, out, err);
        }
        rc = rc ? OC_ERR : OC_OK;
    }
    oc_free(buf);
    return rc;
}
