/* loader.h — reads what outcore-run executes: a training graph written by
 * `outcore-plan emit` (onnx_export.h), or a plain forward model whose in-core
 * training graph is then built in-process (train_build).
 *
 *   rt_load_opts o = {.batch = 2, .train = train_opts_default()};
 *   train_graph *tg; rt_model_info info;
 *   if (rt_load("train.onnx", &o, &tg, &info, &err)) { puts(err.msg); ... }
 *   ... info.is_training_graph, tg->phase[i], tg->alias_of[t] ...
 *   train_graph_free(tg);
 *
 * A training graph (metadata_props outcore.kind = "incore-training-graph") or
 * a plan (outcore.kind = "plan", written by `outcore-plan plan -o`) is read by
 * plan_file_read (plan_file.h): its structure (phases, loss, label, kinds,
 * gradients) is read back from the file, not re-derived, and --lr / --momentum /
 * --weight-decay override the SGDMomentum attributes before they are decoded.
 * A plan's layout then goes through the verifier (plan_verify.h): a corrupted
 * plan, one whose metadata belongs to another graph, or one whose layout
 * overlaps fails here, naming the file and the node.
 * Errors (file missing, not ONNX, batch differs from the emitted one, bad
 * structure) name the file; nothing is left allocated. */
#ifndef OC_LOADER_H
#define OC_LOADER_H

#include "plan/device_presets.h"
#include "train/train_graph.h"

typedef struct rt_load_opts {
    int64_t batch;    /* 0: the emitted graph's batch (required for forward models) */
    train_opts train; /* forward models: how to build the step */
    bool lr_set, momentum_set, weight_decay_set; /* training graphs: override the file's */
    const char *structure_set; /* an option that shapes the step (--optimizer, ..): forward
                                  models only; a training graph or plan has it built in */
    /* --layout auto (forward models, train.channels_last false): the step is built in
     * both layouts, each priced by profile_analytic on this device, and the faster kept
     * (info->layout_*). NULL: the layout train says. */
    const profile_device *layout_device;
} rt_load_opts;

typedef struct rt_model_info {
    bool is_training_graph;
    int64_t batch;
    char source_model[512]; /* forward model the step was built from */
    /* A plan (outcore.kind "plan", plan_file.h): verified on load; its layout. */
    bool is_plan;
    int64_t *plan_offsets; /* per tensor arena offset, -1 none; owned: rt_model_info_free */
    int64_t plan_arena_bytes;
    char plan_strategy[64];
    /* --layout auto weighed both layouts (layout_device, a model with convolutions):
     * the predicted in-core steps, and whether channels-last was kept. */
    bool layout_weighed, layout_nhwc;
    double layout_nchw_s, layout_nhwc_s;
} rt_model_info;
void rt_model_info_free(rt_model_info *info);

/* True when g has a convolution (or a convolution gradient): a node the layout moves. */
bool rt_graph_has_conv(const ir_graph *g);

int rt_load(const char *path, const rt_load_opts *o, train_graph **out, rt_model_info *info,
            oc_err *err);
/* The same on a file's bytes (path names it in messages; external data
 * resolves beside it). buf is not kept. */
int rt_load_buffer(const uint8_t *buf, size_t len, const char *path, const rt_load_opts *o,
                   train_graph **out, rt_model_info *info, oc_err *err);

#endif
