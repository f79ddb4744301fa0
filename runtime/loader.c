/* loader.c — see loader.h. */
#include "loader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops/op_table.h"
#include "ir/shape_infer.h"
#include "plan/plan_file.h"
#include "plan/profile.h"
#include "plan/plan_verify.h"

/* A training graph or plan (plan_file_read); a plan's layout is verified
 * (plan_verify.h) before anything runs. */
static int load_training_graph(const uint8_t *buf, size_t len, const char *path,
                               const rt_load_opts *o, train_graph **out, rt_model_info *info,
                               oc_err *err) {
    plan_read_opts ro = {.lr_set = o->lr_set,
                         .momentum_set = o->momentum_set,
                         .weight_decay_set = o->weight_decay_set,
                         .lr = o->train.lr,
                         .momentum = o->train.momentum,
                         .weight_decay = o->train.weight_decay};
    if (o->structure_set)
        return oc_fail(err,
                       "%s: %s shapes the training step, which this training graph or plan "
                       "has built in; give it to `outcore-plan` when planning",
                       path, o->structure_set);
    plan_read r;
    if (plan_file_read(buf, len, path, &ro, &r, err)) return OC_ERR;
    int rc = OC_OK;
    if (o->batch && o->batch != r.batch)
        rc = oc_fail(err,
                     "%s: this training graph was emitted for batch %" PRId64 "; --batch %" PRId64
                     " needs `outcore-plan emit --batch %" PRId64 "`",
                     path, r.batch, o->batch, o->batch);
    if (rc == OC_OK && r.is_plan && plan_verify(r.tg, r.offsets, r.arena_bytes, 0, err))
        rc = oc_fail_prefix(err, "%s: rejected", path);
    if (rc) {
        plan_read_free(&r);
        return OC_ERR;
    }
    info->is_training_graph = true;
    info->is_plan = r.is_plan;
    info->batch = r.batch;
    snprintf(info->source_model, sizeof info->source_model, "%s", r.source_model);
    snprintf(info->plan_strategy, sizeof info->plan_strategy, "%s", r.strategy);
    info->plan_offsets = r.offsets;
    info->plan_arena_bytes = r.arena_bytes;
    *out = r.tg;
    r.tg = NULL, r.offsets = NULL;
    plan_read_free(&r);
    return OC_OK;
}

bool rt_graph_has_conv(const ir_graph *g) {
    for (int i = 0; i < g->n_nodes; i++)
        if (op_is_conv(g->nodes[i].op)) return true;
    return false;
}

/* A forward model's in-core training step built with to; *batch its input's. */
static int build_step(const uint8_t *buf, size_t len, const char *path, const rt_load_opts *o,
                      const train_opts *to, train_graph **out, int64_t *batch, oc_err *err) {
    ir_graph *g;
    ir_bind_opts b = {.batch = o->batch};
    if (ir_load_model_buffer(buf, len, path, &b, &g, err)) return OC_ERR;
    *batch = g->n_inputs ? g->tensors[g->inputs[0]].dims[0] : 0;
    return train_build(g, to, out, err) ? OC_ERR : OC_OK;
}

/* --layout auto: *tg (NCHW) against the channels-last step, each the sum of its
 * analytic node times on o->layout_device (the planner's --layout auto weighs the
 * same figures, with its simulator); the faster stays in *tg. A model whose
 * channels-last step is the same graph (no convolution) is not weighed, and one
 * that does not build channels-last stays NCHW, as `outcore-plan plan` does. */
static void weigh_layout(const uint8_t *buf, size_t len, const char *path, const rt_load_opts *o,
                         train_graph **tg, rt_model_info *info) {
    train_opts alt = o->train;
    alt.channels_last = true;
    train_graph *nhwc = NULL;
    int64_t batch;
    oc_err ignored;
    if (!rt_graph_has_conv((*tg)->g)) return; /* nothing for the layout to move */
    if (build_step(buf, len, path, o, &alt, &nhwc, &batch, &ignored) ||
        nhwc->g->n_nodes == (*tg)->g->n_nodes) {
        train_graph_free(nhwc);
        return;
    }
    profile *pa = profile_analytic(*tg, o->layout_device, info->batch);
    profile *pb = profile_analytic(nhwc, o->layout_device, info->batch);
    info->layout_weighed = true;
    info->layout_nchw_s = profile_total_s(pa);
    info->layout_nhwc_s = profile_total_s(pb);
    info->layout_nhwc = info->layout_nhwc_s < info->layout_nchw_s;
    profile_free(pa), profile_free(pb);
    if (info->layout_nhwc) {
        train_graph_free(*tg);
        *tg = nhwc;
    } else {
        train_graph_free(nhwc);
    }
}

void rt_model_info_free(rt_model_info *info) {
    oc_free(info->plan_offsets);
    info->plan_offsets = NULL;
}

int rt_load_buffer(const uint8_t *buf, size_t len, const char *path, const rt_load_opts *o,
                   train_graph **out, rt_model_info *info, oc_err *err) {
    *out = NULL;
    memset(info, 0, sizeof *info);
    char *kind = plan_file_meta_get(buf, len, "outcore.kind");
    int rc = OC_OK;
    if (kind && (strcmp(kind, PLAN_KIND_TRAINING) == 0 || strcmp(kind, PLAN_KIND) == 0)) {
        rc = load_training_graph(buf, len, path, o, out, info, err);
    } else if (kind && *kind) {
        rc = oc_fail(err,
                     "%s: outcore.kind '%s' is not something outcore-run executes "
                     "(expected a forward model, an incore-training-graph or a plan)",
                     path, kind);
    } else {
        snprintf(info->source_model, sizeof info->source_model, "%s", path);
        rc = build_step(buf, len, path, o, &o->train, out, &info->batch, err);
        if (rc == OC_OK && o->layout_device && !o->train.channels_last)
            weigh_layout(buf, len, path, o, out, info);
    }
    oc_free(kind);
    return rc;
}

int rt_load(const char *path, const rt_load_opts *o, train_graph **out, rt_model_info *info,
            oc_err *err) {
    *out = NULL;
    memset(info, 0, sizeof *info);
    uint8_t *buf;
    size_t len;
    if (oc_read_file(path, &buf, &len, err)) return OC_ERR;
    int rc = rt_load_buffer(buf, len, path, o, out, info, err);
    oc_free(buf);
    return rc;
}
