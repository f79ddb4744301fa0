/* train_export.c — see train_export.h. */
#include "train/train_export.h"

#include <inttypes.h>

#include "train/train_structure.h"

int onnx_export_training(const train_graph *tg, const onnx_export_meta *m, const char *path,
                         oc_err *err) {
    const ir_graph *g = tg->g;
    int *outs = oc_malloc(((size_t)g->n_tensors + 1) * sizeof(int));
    int n_out = 0;
    outs[n_out++] = tg->loss_tensor;
    for (int t = 0; t < g->n_tensors; t++)
        if (tg->alias_of[t] >= 0 && t != tg->loss_tensor) outs[n_out++] = t;
    char *vals[5];
    vals[0] = oc_sprintf("%" PRId64, m->batch);
    vals[1] = oc_sprintf("%.9g", (double)tg->opts.lr);
    vals[2] = oc_sprintf("%.9g", (double)tg->opts.momentum);
    vals[3] = oc_sprintf("%.9g", (double)tg->opts.weight_decay);
    vals[4] = oc_sprintf("%d", tg->n_forward);
    char *structure = train_structure_format(tg);
    const char *meta[] = {
        "outcore.version",
        m->tool_version ? m->tool_version : OC_EXPORT_VERSION,
        "outcore.kind",
        "incore-training-graph",
        "outcore.batch",
        vals[0],
        "outcore.lr",
        vals[1],
        "outcore.momentum",
        vals[2],
        "outcore.weight_decay",
        vals[3],
        "outcore.source_model",
        m->source_model ? m->source_model : "",
        "outcore.forward_nodes",
        vals[4],
        TRAIN_STRUCTURE_KEY,
        structure,
    };
    onnx_export_spec s = {.node_begin = 0,
                          .node_end = g->n_nodes,
                          .inputs = g->inputs,
                          .n_inputs = g->n_inputs,
                          .outputs = outs,
                          .n_outputs = n_out,
                          .meta = meta,
                          .n_meta = (int)(sizeof meta / sizeof meta[0] / 2),
                          .seal = true};
    int rc = onnx_export_graph(g, &s, path, err);
    for (int i = 0; i < 5; i++) oc_free(vals[i]);
    oc_free(structure);
    oc_free(outs);
    return rc;
}
