/* tensor_io.h — ONNX TensorProto files (--input/--labels, dumps).
 *
 *   if (rt_tensor_read_pb("x.pb", &g->tensors[input], host_buf, &err)) ...
 *
 * Reading checks the file's dtype and dims against the expected tensor (the
 * message names file and tensor) and copies the data (raw_data or the typed
 * field) into dst (ir_tensor_bytes(expect) bytes). Writing: onnx_export_tensor. */
#ifndef OC_TENSOR_IO_H
#define OC_TENSOR_IO_H

#include "ir/ir.h"

int rt_tensor_read_pb(const char *path, const ir_tensor *expect, void *dst, oc_err *err);

#endif
