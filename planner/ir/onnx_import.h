/* onnx_import.h — ONNX ModelProto -> ir_graph. With onnx_torch_meta.c (the metadata
 * torch.onnx.export writes), the only planner code that sees protobuf types; nothing
 * generated from onnx.proto leaks past this interface.
 *
 *   ir_graph *g; oc_err err;
 *   if (onnx_import_file("graphs/resnet50_op13.onnx", &g, &err)) { puts(err.msg); ... }
 *
 * On success *out is owned by the caller (ir_graph_free). On failure *out is
 * NULL and err names the file and, where it applies, the node or tensor.
 * Checks made here: the bytes parse as a ModelProto with a graph and a default
 * opset; every node input is produced earlier (topological order); no tensor is
 * produced twice; initializer data agrees with its dims; external data files
 * exist and are long enough; every op is in the op table (message lists them). */
#ifndef OC_ONNX_IMPORT_H
#define OC_ONNX_IMPORT_H

#include "ir/ir.h"

int onnx_import_file(const char *path, ir_graph **out, oc_err *err);

/* Same, from bytes already in memory. path is used in messages and to resolve
 * external data (its directory). */
int onnx_import_buffer(const uint8_t *buf, size_t len, const char *path, ir_graph **out,
                       oc_err *err);

/* The model-local function HOST_INPUTS_FUNCTION (ir/host_inputs.h) of a training graph
 * or plan, when the file has one, as g->host: its inputs are graph inputs of g (their
 * types and shapes taken from g), its outputs what it computes. Shapes past the inputs
 * stay unknown until host_inputs_infer. OC_ERR naming the file and function. */
int onnx_import_host_function(const uint8_t *buf, size_t len, const char *path, ir_graph *g,
                              oc_err *err);

/* A Loop's body (an IR_ATTR_GRAPH attribute) as a graph of its own, for ops/op_loop.c to
 * unroll: its inputs are its graph inputs, its initializers constants, its outputs graph
 * outputs; a name it reads but does not define (a value of the graph around it) is a tensor
 * with no producer, neither input nor initializer, for the unrolling to find in outer by name.
 * Messages start with `where`. *out: the caller's (ir_graph_free). */
int onnx_import_body(const ir_graph *outer, const ir_attr *a, const char *where, ir_graph **out,
                     oc_err *err);

/* Reads the bytes of an IR_DATA_EXTERNAL initializer into t->data (turning it
 * into IR_DATA_INLINE). */
int onnx_load_external(const ir_graph *g, ir_tensor *t, oc_err *err);

/* Reads a serialized TensorProto (a .pb file, as in the ONNX backend test
 * data) into *out: a detached tensor (name, dtype, static shape, inline data;
 * producer -1). *out is overwritten; on success the caller releases it with
 * ir_tensor_free_fields. Fails (naming the file) on I/O errors, a parse
 * failure, an unsupported dtype (strings), external data, or data that does
 * not match the dims; *out then owns nothing. */
int onnx_read_tensor_file(const char *path, ir_tensor *out, oc_err *err);

#endif
