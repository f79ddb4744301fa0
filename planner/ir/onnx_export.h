/* onnx_export.h — ir_graph -> ONNX ModelProto file (protobuf-c). The writing
 * counterpart of onnx_import.h; no protobuf type leaks out. The training
 * graph file (outcore-plan emit) is written on top of it: train/train_export.h.
 *
 *   // any node range as a model (outcore-run --save writes the forward part):
 *   onnx_export_spec s = {.node_end = n, .inputs = in, .n_inputs = 1, .outputs = out, .n_outputs = 1};
 *   onnx_export_graph(g, &s, "trained.onnx", &err);
 *
 * The file is written whole or not at all (ir/out_file.h). OC_ERR (naming the path or tensor) on I/O errors or external data
 * that cannot be read. */
#ifndef OC_ONNX_EXPORT_H
#define OC_ONNX_EXPORT_H

#include "ir/ir.h"

typedef struct onnx_export_spec {
    int node_begin, node_end; /* nodes [begin, end) of g, in order */
    const int *inputs;        /* typed graph inputs (tensor indices) */
    int n_inputs;
    const int *outputs; /* typed graph outputs */
    int n_outputs;
    const bool *skip;        /* per node of g: leave it out (NULL: keep all) */
    const int *extra;        /* initializers written though no written node reads them */
    int n_extra;             /* (a checkpoint's optimizer state) */
    const char *const *meta; /* key, value, key, value, ... (2 * n_meta strings) */
    int n_meta;
    bool seal;   /* add outcore.seal last (ir/model_seal.h): plans and training graphs */
    bool unfuse; /* BatchNormRelu nodes written as their BatchNormalization [+ Add] + Relu,
                  ConvRelu nodes as their Conv + Relu, Gelu nodes below opset 20 (none in
                  ONNX there) as the tanh or erf decomposition exporters write */
    /* Per tensor of g: the tensor read in its place (-1: itself; NULL: none) — a
     * model trained with --precision bf16 is saved without autocast's Casts
     * (skipped), their readers reading the float32 source; and graph inputs and
     * outputs of a half type are then declared float32 (half_io_as_float). */
    const int *source;
    bool half_io_as_float;
    /* Channels-last nodes (ir.h) written as the model's own: without the
     * attribute and without ONNX_META_CHANNELS_LAST (a saved model, whose
     * layout Transposes are skipped, their readers reading the sources). */
    bool logical_layout;
    /* g->host (ir/host_inputs.h), when there is one: its nodes written before the nodes,
     * computing the host inputs as the model did (a saved forward model: the inputs are
     * then not declared), or (false) as the model-local function HOST_INPUTS_FUNCTION
     * beside a graph that declares them as inputs (training graphs and plans). */
    bool host_inline;
} onnx_export_spec;

/* Metadata naming the channels-last standard nodes, one per line (the
 * attribute outcore_channels_last would fail onnx.checker); onnx_import
 * restores the attribute from it. */
#define ONNX_META_CHANNELS_LAST "outcore.channels_last"
/* A Gather's nn.Embedding padding_idx (OC_ATTR_PADDING_IDX), in the node's own metadata_props
 * (a decimal integer): a model written back keeps its pad row out of training. */
#define ONNX_META_PADDING_IDX "outcore.padding_idx"

/* Writes nodes [begin, end) with every initializer they read. */
int onnx_export_graph(const ir_graph *g, const onnx_export_spec *s, const char *path, oc_err *err);
/* The same model as bytes in memory (*out: the caller frees it with oc_free). */
int onnx_export_graph_buffer(const ir_graph *g, const onnx_export_spec *s, uint8_t **out,
                             size_t *out_len, oc_err *err);

/* The version written as producer_version and outcore.version. */
#define OC_EXPORT_VERSION "0.1.0"

/* One TensorProto (name, dims, raw data) to a file: dumps, test fixtures. */
int onnx_export_tensor(const ir_tensor *t, const void *data, const char *path, oc_err *err);

#endif
