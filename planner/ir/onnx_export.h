/* onnx_export.h — ir_graph / training graph -> ONNX ModelProto file (protobuf-c).
 * The writing counterpart of onnx_import.h; no protobuf type leaks out.
 *
 *   // the in-core training step (outcore-plan emit):
 *   onnx_export_meta m = {.source_model = "resnet18.onnx", .batch = 32};
 *   if (onnx_export_training(tg, &m, "train.onnx", &err)) { puts(err.msg); ... }
 *   // any node range as a model (outcore-run --save writes the forward part):
 *   onnx_export_spec s = {.node_end = n, .inputs = in, .n_inputs = 1, .outputs = out, .n_outputs = 1};
 *   onnx_export_graph(g, &s, "trained.onnx", &err);
 *
 * The training graph file: nodes in schedule order; backward, loss-gradient and
 * update nodes in domain OC_DOMAIN, declared in opset_import with version
 * OC_DOMAIN_VERSION; graph inputs = data and labels; outputs = the loss, then
 * every in-place updated tensor (parameters, momentum buffers, BN running
 * statistics) so the step is a well-formed ONNX graph; initializers with their
 * data (raw_data). metadata_props: outcore.version, outcore.kind =
 * "incore-training-graph", outcore.batch, outcore.lr, outcore.momentum,
 * outcore.weight_decay, outcore.source_model, outcore.forward_nodes,
 * outcore.data_inputs.
 *
 * Initializers without data (structure-only models): the ONNX checker rejects
 * an initializer with no value field, so each is written as a typed graph input
 * after the data inputs; outcore.data_inputs says how many graph inputs are
 * data, and the runtime loader turns the rest back into initializers.
 *
 * The file is written to "<path>.tmp.<pid>" and renamed: no partial file on
 * failure. OC_ERR (naming the path or tensor) on I/O errors or external data
 * that cannot be read. */
#ifndef OC_ONNX_EXPORT_H
#define OC_ONNX_EXPORT_H

#include "train/train_graph.h"

typedef struct onnx_export_spec {
    int node_begin, node_end;   /* nodes [begin, end) of g, in order */
    const int *inputs;          /* typed graph inputs (tensor indices) */
    int n_inputs;
    const int *outputs;         /* typed graph outputs */
    int n_outputs;
    const bool *skip;           /* per node of g: leave it out (NULL: keep all) */
    const char *const *meta;    /* key, value, key, value, ... (2 * n_meta strings) */
    int n_meta;
} onnx_export_spec;

/* Writes nodes [begin, end) with every initializer they read. */
int onnx_export_graph(const ir_graph *g, const onnx_export_spec *s, const char *path,
                      oc_err *err);

typedef struct onnx_export_meta {
    const char *source_model;
    int64_t batch;
    const char *tool_version;   /* NULL: OC_EXPORT_VERSION */
} onnx_export_meta;

#define OC_EXPORT_VERSION "0.1.0"

int onnx_export_training(const train_graph *tg, const onnx_export_meta *m, const char *path,
                         oc_err *err);

/* One TensorProto (name, dims, raw data) to a file: dumps, test fixtures. */
int onnx_export_tensor(const ir_tensor *t, const void *data, const char *path, oc_err *err);

#endif
