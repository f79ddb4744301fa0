/* fuzz_tensor.c — libFuzzer target: the TensorProto readers (outcore-run's
 * --input/--labels, rt_tensor_read_pb, against a float (2, 3, 8, 8) and an
 * int64 (2) expectation; onnx_read_tensor_file, the test fixtures' reader).
 * The input is written to a file in the scratch folder, as both take paths. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/onnx_import.h"
#include "tensor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen("t.pb", "wb");
    if (!f || fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    oc_err err;
    ir_tensor x = {.name = "input", .dtype = IR_DTYPE_FLOAT, .rank = 4, .dims = {2, 3, 8, 8}};
    ir_tensor y = {.name = "labels", .dtype = IR_DTYPE_INT64, .rank = 1, .dims = {2}};
    float xb[2 * 3 * 8 * 8];
    int64_t yb[2];
    rt_tensor_read_pb("t.pb", &x, xb, &err);
    rt_tensor_read_pb("t.pb", &y, yb, &err);
    ir_tensor t;
    if (onnx_read_tensor_file("t.pb", &t, &err) == OC_OK) ir_tensor_free_fields(&t);
    return 0;
}
