/* model_builder.h — builds ONNX ModelProto bytes in memory, for tests only.
 *
 * Every allocation is tracked by the mb_model and released by mb_free; nothing
 * returned by these functions must be freed by the caller.
 *
 *   mb_model *m = mb_new(13);                                // default-domain opset
 *   mb_input(m, "x", MB_FLOAT, "N,3,8,8");                   // dims: values or symbols
 *   mb_init(m, "w", MB_FLOAT, MB_DIMS(4, 3, 3, 3));          // structure-only initializer
 *   Onnx__NodeProto *c = mb_node(m, "Conv", "conv1", "x,w", "y");
 *   mb_attr_ints(m, c, "pads", MB_INTS(1, 1, 1, 1));
 *   mb_output(m, "y");
 *   size_t len; const uint8_t *buf = mb_pack(m, &len);
 *   ... onnx_import_buffer(buf, len, "test.onnx", &g, &err) ...
 *   mb_free(m);
 *
 * A test binary is one translation unit: include "unit/model_builder.c". */
#ifndef MB_MODEL_BUILDER_H
#define MB_MODEL_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

/* ONNX TensorProto.DataType values used by tests. */
enum { MB_FLOAT = 1, MB_UINT8 = 2, MB_INT32 = 6, MB_INT64 = 7, MB_BOOL = 9, MB_DOUBLE = 11 };

/* MB_DIMS(2, 3) expands to "count, array": the (rank, dims) argument pair;
 * MB_INTS and MB_FLOATS likewise give (count, values). */
#define MB_DIMS(...)                                                                               \
    (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})
#define MB_INTS(...) MB_DIMS(__VA_ARGS__)
#define MB_FLOATS(...)                                                                             \
    (sizeof((float[]){__VA_ARGS__}) / sizeof(float)), ((const float[]){__VA_ARGS__})
#define MB_SCALAR 0, NULL

typedef struct mb_model mb_model;

mb_model *mb_new(int64_t opset);
/* Frees the model and everything allocated through it (packed buffers included). */
void mb_free(mb_model *m);
/* Adds another opset import (e.g. a custom domain). */
void mb_opset(mb_model *m, const char *domain, int64_t version);

/* Graph input. dims: comma-separated; a number is a dim_value, "?" a dim with
 * neither value nor name, anything else a dim_param; "" is a scalar. */
void mb_input(mb_model *m, const char *name, int elem_type, const char *dims);
/* Graph output (name and element type float; the importer reads only the name). */
void mb_output(mb_model *m, const char *name);

/* Initializers; each returns the TensorProto (owned by m). */
Onnx__TensorProto *mb_init(mb_model *m, const char *name, int dtype, size_t rank,
                           const int64_t *dims);
Onnx__TensorProto *mb_init_raw(mb_model *m, const char *name, int dtype, size_t rank,
                               const int64_t *dims, const void *bytes, size_t n);
Onnx__TensorProto *mb_init_floats(mb_model *m, const char *name, size_t rank, const int64_t *dims,
                                  size_t n, const float *v);
Onnx__TensorProto *mb_init_int64s(mb_model *m, const char *name, size_t rank, const int64_t *dims,
                                  size_t n, const int64_t *v);
/* External data: location (relative to the model), offset and length (< 0: omitted). */
Onnx__TensorProto *mb_init_external(mb_model *m, const char *name, int dtype, size_t rank,
                                    const int64_t *dims, const char *location, int64_t offset,
                                    int64_t length);

/* A detached TensorProto (for tensor attributes), int64 values in int64_data. */
Onnx__TensorProto *mb_tensor_int64s(mb_model *m, const char *name, size_t rank, const int64_t *dims,
                                    size_t n, const int64_t *v);

/* Node. name NULL or "" leaves it unnamed. inputs/outputs: comma-separated
 * tensor names; an empty entry is an omitted optional ("x,,b"); "" is none. */
Onnx__NodeProto *mb_node(mb_model *m, const char *op_type, const char *name, const char *inputs,
                         const char *outputs);
void mb_attr_int(mb_model *m, Onnx__NodeProto *n, const char *name, int64_t v);
void mb_attr_ints(mb_model *m, Onnx__NodeProto *n, const char *name, size_t count,
                  const int64_t *v);
void mb_attr_float(mb_model *m, Onnx__NodeProto *n, const char *name, float v);
void mb_attr_string(mb_model *m, Onnx__NodeProto *n, const char *name, const char *v);
void mb_attr_tensor(mb_model *m, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t);

/* Serialises the model. The buffer is owned by m; *len gets its size. */
const uint8_t *mb_pack(mb_model *m, size_t *len);
/* Writes the serialised model to path; 0 on success, -1 on an I/O error. */
int mb_write(mb_model *m, const char *path);

#endif
