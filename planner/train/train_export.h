/* train_export.h — the in-core training step as an ONNX file (outcore-plan
 * emit), written through ir/onnx_export.h.
 *
 *   onnx_export_meta m = {.source_model = "resnet18.onnx", .batch = 32};
 *   if (onnx_export_training(tg, &m, "train.onnx", &err)) { puts(err.msg); ... }
 *
 * The training graph file: nodes in schedule order; backward, loss-gradient and
 * update nodes in domain OC_DOMAIN, declared in opset_import with version
 * OC_DOMAIN_VERSION; graph inputs = data and labels; outputs = the loss, then
 * every in-place updated tensor (parameters, momentum buffers, BN running
 * statistics) so the step is a well-formed ONNX graph; initializers with their
 * data (raw_data). metadata_props: outcore.version, outcore.kind =
 * "incore-training-graph", outcore.batch, outcore.lr, outcore.momentum,
 * outcore.weight_decay, outcore.source_model, outcore.forward_nodes,
 * outcore.data_inputs and outcore.structure (train_structure.h).
 *
 * Initializers without data (structure-only models): the ONNX checker rejects
 * an initializer with no value field, so each is written as a typed graph input
 * after the data inputs; outcore.data_inputs says how many graph inputs are
 * data, and the runtime loader turns the rest back into initializers. */
#ifndef OC_TRAIN_EXPORT_H
#define OC_TRAIN_EXPORT_H

#include "ir/onnx_export.h"
#include "train/train_graph.h"

typedef struct onnx_export_meta {
    const char *source_model;
    int64_t batch;
    const char *tool_version; /* NULL: OC_EXPORT_VERSION */
} onnx_export_meta;

int onnx_export_training(const train_graph *tg, const onnx_export_meta *m, const char *path,
                         oc_err *err);

#endif
