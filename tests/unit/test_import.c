/* test_import.c — ONNX import: graph structure, initializer data forms,
 * external data, and the errors bad models must produce. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit/fixture.h"

/* ---- models ---- */

/* x (N,3,8,8) -> Conv 3x3 p1 -> BN (training, 5 outputs) -> Relu -> MaxPool 2x2
 * -> Flatten -> Gemm (10) -> y. Initializers are structure-only. */
static void build_tiny(mb_model *m) {
    mb_input(m, "x", MB_FLOAT, "N,3,8,8");
    mb_init(m, "conv.w", MB_FLOAT, MB_DIMS(4, 3, 3, 3));
    mb_init(m, "conv.b", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "bn.scale", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "bn.bias", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "bn.mean", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "bn.var", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "fc.w", MB_FLOAT, MB_DIMS(10, 64));
    mb_init(m, "fc.b", MB_FLOAT, MB_DIMS(10));
    Onnx__NodeProto *n = mb_node(m, "Conv", "conv1", "x,conv.w,conv.b", "c1");
    mb_attr_ints(m, n, "kernel_shape", MB_INTS(3, 3));
    mb_attr_ints(m, n, "pads", MB_INTS(1, 1, 1, 1));
    mb_attr_string(m, n, "auto_pad", "NOTSET");
    n = mb_node(m, "BatchNormalization", "bn1", "c1,bn.scale,bn.bias,bn.mean,bn.var",
                "b1,b1.mean,b1.var,b1.saved_mean,b1.saved_var");
    mb_attr_float(m, n, "epsilon", 1e-5f);
    mb_node(m, "Relu", "relu1", "b1", "r1");
    n = mb_node(m, "MaxPool", "pool1", "r1", "p1");
    mb_attr_ints(m, n, "kernel_shape", MB_INTS(2, 2));
    mb_attr_ints(m, n, "strides", MB_INTS(2, 2));
    n = mb_node(m, "Flatten", "flat", "p1", "f1");
    mb_attr_int(m, n, "axis", 1);
    n = mb_node(m, "Gemm", "fc", "f1,fc.w,fc.b", "y");
    mb_attr_int(m, n, "transB", 1);
    mb_attr_float(m, n, "alpha", 0.5f);
    mb_output(m, "y");
}

/* x (2,2) + init -> y: the smallest graph that uses an initializer. */
static void build_add(mb_model *m, const char *init) {
    char ins[64];
    snprintf(ins, sizeof ins, "x,%s", init);
    mb_input(m, "x", MB_FLOAT, "2,2");
    mb_node(m, "Add", "add", ins, "y");
    mb_output(m, "y");
}

static int node_index(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return i;
    fail_msg("no node '%s'", name);
    return -1;
}

/* ---- structure ---- */

static void test_tiny_structure(void **state) {
    fixture *f = *state;
    build_tiny(f->m = mb_new(13));
    assert_int_equal(fx_import(f), OC_OK);
    ir_graph *g = f->g;
    /* 1 input + 8 initializers + 10 node outputs */
    assert_int_equal(g->n_tensors, 19);
    assert_int_equal(g->n_nodes, 6);
    assert_int_equal(g->opset, 13);
    assert_int_equal(g->n_inputs, 1);
    assert_string_equal(g->tensors[g->inputs[0]].name, "x");
    assert_int_equal(g->n_outputs, 1);
    assert_string_equal(g->tensors[g->outputs[0]].name, "y");
    assert_true(fx_tensor(g, "y")->is_graph_output);
    assert_true(fx_tensor(g, "fc.w")->is_initializer);
    assert_false(fx_tensor(g, "x")->is_initializer);

    assert_int_equal(fx_tensor(g, "y")->producer, node_index(g, "fc"));
    assert_int_equal(fx_tensor(g, "b1.saved_var")->producer, node_index(g, "bn1"));
    assert_int_equal(fx_tensor(g, "x")->producer, -1);
    assert_int_equal(fx_tensor(g, "conv.w")->producer, -1);
    ir_tensor *r1 = fx_tensor(g, "r1");
    assert_int_equal(r1->n_consumers, 1);
    assert_int_equal(r1->consumers[0], node_index(g, "pool1"));
    assert_int_equal(fx_tensor(g, "y")->n_consumers, 0);
    assert_int_equal(fx_tensor(g, "b1.mean")->n_consumers, 0);

    const ir_node *bn = &g->nodes[node_index(g, "bn1")];
    assert_string_equal(bn->op_type, "BatchNormalization");
    assert_int_equal(bn->n_inputs, 5);
    assert_int_equal(bn->n_outputs, 5);
    assert_int_equal(bn->inputs[3], ir_tensor_find(g, "bn.mean"));
}

static void test_tiny_attributes(void **state) {
    fixture *f = *state;
    build_tiny(f->m = mb_new(13));
    assert_int_equal(fx_import(f), OC_OK);
    ir_graph *g = f->g;
    const ir_node *conv = &g->nodes[node_index(g, "conv1")];
    const int64_t *v;
    assert_int_equal(ir_attr_ints(conv, "pads", &v), 4);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[3], 1);
    assert_int_equal(ir_attr_ints(conv, "kernel_shape", &v), 2);
    assert_int_equal(v[1], 3);
    assert_int_equal(ir_attr_ints(conv, "strides", &v), -1); /* absent */
    assert_string_equal(ir_attr_string(conv, "auto_pad", "?"), "NOTSET");
    const ir_node *fc = &g->nodes[node_index(g, "fc")];
    assert_int_equal(ir_attr_int(fc, "transB", 0), 1);
    assert_int_equal(ir_attr_int(fc, "transA", -7), -7);
    assert_true(ir_attr_float(fc, "alpha", 1.0f) == 0.5f);
    const ir_node *bn = &g->nodes[node_index(g, "bn1")];
    assert_true(ir_attr_float(bn, "epsilon", 0.0f) == 1e-5f);
    assert_int_equal(ir_attr_find(bn, "epsilon")->type, IR_ATTR_FLOAT);
}

static void test_tensor_attribute(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    Onnx__NodeProto *n = mb_node(m, "Constant", "k", "", "kval");
    mb_attr_tensor(m, n, "value", mb_tensor_int64s(m, "v", MB_DIMS(3), MB_INTS(2, -1, 7)));
    mb_output(m, "kval");
    assert_int_equal(fx_import(f), OC_OK);
    const ir_attr *a = ir_attr_find(&f->g->nodes[0], "value");
    assert_non_null(a);
    assert_int_equal(a->type, IR_ATTR_TENSOR);
    assert_int_equal(a->t->dtype, IR_DTYPE_INT64);
    assert_int_equal(a->t->rank, 1);
    assert_int_equal(a->t->dims[0], 3);
    assert_int_equal(a->t->data_src, IR_DATA_INLINE);
    assert_int_equal(a->t->data_bytes, 24);
    const int64_t *vals = a->t->data;
    assert_int_equal(vals[0], 2);
    assert_int_equal(vals[1], -1);
    assert_int_equal(vals[2], 7);
}

/* After binding and inference every tensor has the kind its role implies. */
static void test_tiny_kinds(void **state) {
    fixture *f = *state;
    build_tiny(f->m = mb_new(13));
    assert_int_equal(fx_infer(f, 2), OC_OK);
    ir_graph *g = f->g;
    static const struct {
        const char *name;
        ir_kind kind;
    } want[] = {
        {"x", IR_KIND_INPUT},           {"conv.w", IR_KIND_PARAMETER},
        {"conv.b", IR_KIND_PARAMETER},  {"bn.scale", IR_KIND_PARAMETER},
        {"bn.bias", IR_KIND_PARAMETER}, {"bn.mean", IR_KIND_STATE},
        {"bn.var", IR_KIND_STATE},      {"fc.w", IR_KIND_PARAMETER},
        {"c1", IR_KIND_ACTIVATION},     {"b1.saved_mean", IR_KIND_ACTIVATION},
        {"p1", IR_KIND_ACTIVATION},     {"y", IR_KIND_ACTIVATION},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (fx_tensor(g, want[i].name)->kind != want[i].kind)
            fail_msg("tensor '%s' is %s, expected %s", want[i].name,
                     ir_kind_name(fx_tensor(g, want[i].name)->kind), ir_kind_name(want[i].kind));
    assert_shape(g, "p1", "[2, 4, 4, 4]");
    assert_shape(g, "f1", "[2, 64]");
    assert_shape(g, "y", "[2, 10]");
    /* 4*3*3*3 + 4 + 4 + 4 + 10*64 + 10 parameters, float32 */
    assert_int_equal(ir_graph_bytes_of_kind(g, IR_KIND_PARAMETER), 4 * (108 + 12 + 640 + 10));
}

/* Plan-time values (Reshape's shape, Clip's bounds, Constant outputs) are constants. */
static void test_constant_kinds(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3,4");
    mb_init_int64s(m, "shape", MB_DIMS(2), MB_INTS(2, 12));
    mb_init_floats(m, "lo", MB_SCALAR, MB_FLOATS(0.0f));
    mb_init_floats(m, "hi", MB_SCALAR, MB_FLOATS(6.0f));
    mb_node(m, "Reshape", "r", "x,shape", "xr");
    mb_node(m, "Clip", "clip", "xr,lo,hi", "y");
    Onnx__NodeProto *n = mb_node(m, "Constant", "k", "", "kval");
    mb_attr_ints(m, n, "value_ints", MB_INTS(1, 2));
    mb_output(m, "y");
    assert_int_equal(fx_infer(f, 0), OC_OK);
    assert_int_equal(fx_tensor(f->g, "shape")->kind, IR_KIND_CONSTANT);
    assert_int_equal(fx_tensor(f->g, "lo")->kind, IR_KIND_CONSTANT);
    assert_int_equal(fx_tensor(f->g, "hi")->kind, IR_KIND_CONSTANT);
    assert_int_equal(fx_tensor(f->g, "kval")->kind, IR_KIND_CONSTANT);
    assert_int_equal(fx_tensor(f->g, "xr")->kind, IR_KIND_ACTIVATION);
    assert_shape(f->g, "y", "[2, 12]");
}

/* ---- initializer data ---- */

static void test_structure_only_initializer(void **state) {
    fixture *f = *state;
    build_tiny(f->m = mb_new(13));
    assert_int_equal(fx_import(f), OC_OK);
    ir_tensor *w = fx_tensor(f->g, "conv.w");
    assert_int_equal(w->data_src, IR_DATA_NONE);
    assert_null(w->data);
    assert_int_equal(w->dtype, IR_DTYPE_FLOAT);
    assert_shape(f->g, "conv.w", "[4, 3, 3, 3]");
    int64_t bytes;
    assert_true(ir_tensor_bytes(w, &bytes));
    assert_int_equal(bytes, 432);
}

static void test_raw_data_initializer(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    const float v[4] = {1.0f, -2.0f, 3.5f, 4.0f};
    mb_init_raw(m, "w", MB_FLOAT, MB_DIMS(2, 2), v, sizeof v);
    build_add(m, "w");
    assert_int_equal(fx_import(f), OC_OK);
    ir_tensor *w = fx_tensor(f->g, "w");
    assert_int_equal(w->data_src, IR_DATA_INLINE);
    assert_int_equal(w->data_bytes, sizeof v);
    assert_memory_equal(w->data, v, sizeof v);
    assert_shape(f->g, "w", "[2, 2]");
}

static void test_typed_data_initializers(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    const float fv[4] = {0.5f, -1.0f, 2.0f, 8.0f};
    const int64_t iv[2] = {7, -9};
    mb_init_floats(m, "w", MB_DIMS(2, 2), 4, fv);
    mb_init_int64s(m, "shape", MB_DIMS(2), 2, iv);
    build_add(m, "w");
    mb_node(m, "Reshape", "r", "y,shape", "z"); /* only consumes "shape" */
    assert_int_equal(fx_import(f), OC_OK);
    ir_tensor *w = fx_tensor(f->g, "w"), *s = fx_tensor(f->g, "shape");
    assert_int_equal(w->data_src, IR_DATA_INLINE);
    assert_int_equal(w->data_bytes, sizeof fv);
    assert_memory_equal(w->data, fv, sizeof fv);
    assert_int_equal(s->dtype, IR_DTYPE_INT64);
    assert_int_equal(s->data_bytes, sizeof iv);
    assert_memory_equal(s->data, iv, sizeof iv);
}

static void test_data_size_mismatch(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    const float v[3] = {1, 2, 3};
    mb_init_raw(m, "short_raw", MB_FLOAT, MB_DIMS(2, 2), v, sizeof v);
    build_add(m, "short_raw");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_null(f->g);
    assert_contains(f->err.msg, "short_raw");
    assert_contains(f->err.msg, FX_PATH);

    mb_free(f->m);
    m = f->m = mb_new(13);
    mb_init_floats(m, "short_floats", MB_DIMS(2, 2), 3, v);
    build_add(m, "short_floats");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_contains(f->err.msg, "short_floats");
}

/* ---- external data ---- */

/* Writes n bytes with values 0, 1, 2, ... to dir/name. */
static void write_pattern(const char *dir, const char *name, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    for (size_t i = 0; i < n; i++) fputc((int)(i & 0xff), fp);
    assert_int_equal(fclose(fp), 0);
}

/* Imports f->m as if it were the file dir/model.onnx. */
static int import_in(fixture *f, const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    return fx_import_as(f, path);
}

static void test_external_data(void **state) {
    fixture *f = *state;
    const char *dir = fx_tmpdir(f);
    write_pattern(dir, "weights.bin", 64);
    mb_model *m = f->m = mb_new(13);
    mb_init_external(m, "ext_weight", MB_FLOAT, MB_DIMS(2, 2), "weights.bin", 16, 16);
    build_add(m, "ext_weight");
    assert_int_equal(import_in(f, dir), OC_OK);
    ir_tensor *w = fx_tensor(f->g, "ext_weight");
    assert_int_equal(w->data_src, IR_DATA_EXTERNAL);
    assert_string_equal(w->ext_location, "weights.bin");
    assert_int_equal(w->ext_offset, 16);
    assert_int_equal(w->ext_length, 16);
    assert_null(w->data);

    assert_int_equal(onnx_load_external(f->g, w, &f->err), OC_OK);
    assert_int_equal(w->data_src, IR_DATA_INLINE);
    assert_int_equal(w->data_bytes, 16);
    const uint8_t *b = w->data;
    for (int i = 0; i < 16; i++) assert_int_equal(b[i], 16 + i);
}

static void test_external_data_too_short(void **state) {
    fixture *f = *state;
    const char *dir = fx_tmpdir(f);
    write_pattern(dir, "weights.bin", 20); /* needs 16 + 16 */
    mb_model *m = f->m = mb_new(13);
    mb_init_external(m, "ext_weight", MB_FLOAT, MB_DIMS(2, 2), "weights.bin", 16, 16);
    build_add(m, "ext_weight");
    assert_int_equal(import_in(f, dir), OC_ERR);
    assert_null(f->g);
    assert_contains(f->err.msg, "ext_weight");
    assert_contains(f->err.msg, "weights.bin");
    assert_contains(f->err.msg, "too short");
}

static void test_external_data_bad_location(void **state) {
    fixture *f = *state;
    const char *dir = fx_tmpdir(f);
    mb_model *m = f->m = mb_new(13);
    mb_init_external(m, "missing_w", MB_FLOAT, MB_DIMS(2, 2), "nowhere.bin", -1, -1);
    build_add(m, "missing_w");
    assert_int_equal(import_in(f, dir), OC_ERR);
    assert_contains(f->err.msg, "missing_w");
    assert_contains(f->err.msg, "nowhere.bin");

    mb_free(f->m);
    m = f->m = mb_new(13);
    mb_init_external(m, "escaping_w", MB_FLOAT, MB_DIMS(2, 2), "../etc/passwd", -1, -1);
    build_add(m, "escaping_w");
    assert_int_equal(import_in(f, dir), OC_ERR);
    assert_contains(f->err.msg, "escaping_w");
    assert_contains(f->err.msg, "leaves the model directory");
}

/* An offset near INT64_MAX must be an error, not an overflow (UBSan catches it). */
static void test_external_data_offset_overflow(void **state) {
    fixture *f = *state;
    const char *dir = fx_tmpdir(f);
    write_pattern(dir, "weights.bin", 64);
    mb_model *m = f->m = mb_new(13);
    mb_init_external(m, "far_weight", MB_FLOAT, MB_DIMS(2, 2), "weights.bin", INT64_MAX, 16);
    build_add(m, "far_weight");
    assert_int_equal(import_in(f, dir), OC_ERR);
    assert_contains(f->err.msg, "far_weight");
}

/* A location that stays in the folder by name but leaves it through a link,
 * a FIFO as the data file, and a number that is not one: refused, named. */
static void test_external_data_escapes_and_junk(void **state) {
    fixture *f = *state;
    const char *dir = fx_tmpdir(f);
    char outside[] = "/tmp/outcore_outside_XXXXXX", link[300], fifo[300];
    int fd = mkstemp(outside);
    assert_true(fd >= 0);
    for (int i = 0; i < 64; i++) assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
    snprintf(link, sizeof link, "%s/link.bin", dir);
    assert_int_equal(symlink(outside, link), 0);
    mb_model *m = f->m = mb_new(13);
    mb_init_external(m, "linked_w", MB_FLOAT, MB_DIMS(2, 2), "link.bin", 0, 16);
    build_add(m, "linked_w");
    assert_int_equal(import_in(f, dir), OC_ERR);
    assert_contains(f->err.msg, "linked_w");
    assert_contains(f->err.msg, "outside the model's folder");
    unlink(link);
    unlink(outside);

    snprintf(fifo, sizeof fifo, "%s/fifo.bin", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    mb_free(f->m);
    m = f->m = mb_new(13);
    mb_init_external(m, "fifo_w", MB_FLOAT, MB_DIMS(2, 2), "fifo.bin", 0, 16);
    build_add(m, "fifo_w");
    assert_int_equal(import_in(f, dir), OC_ERR);
    assert_contains(f->err.msg, "not a regular file");
    unlink(fifo);

    write_pattern(dir, "weights.bin", 64);
    mb_free(f->m);
    m = f->m = mb_new(13);
    Onnx__TensorProto *t =
        mb_init_external(m, "junk_w", MB_FLOAT, MB_DIMS(2, 2), "weights.bin", -1, 16);
    mb_ext_entry(m, t, "offset", "16abc");
    build_add(m, "junk_w");
    assert_int_equal(import_in(f, dir), OC_ERR);
    assert_contains(f->err.msg, "junk_w");
    assert_contains(f->err.msg, "'16abc' is not a byte count");
}

/* ---- unreadable bytes ---- */

static void test_truncated_buffer(void **state) {
    fixture *f = *state;
    build_tiny(f->m = mb_new(13));
    size_t len;
    const uint8_t *buf = mb_pack(f->m, &len);
    assert_true(len > 100);
    assert_int_equal(onnx_import_buffer(buf, len / 2, FX_PATH, &f->g, &f->err), OC_ERR);
    assert_null(f->g);
    assert_contains(f->err.msg, FX_PATH);
}

static void test_random_bytes(void **state) {
    fixture *f = *state;
    uint8_t buf[4096];
    uint32_t x = 2463534242u; /* xorshift32: the same bytes every run */
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
    assert_int_equal(onnx_import_buffer(buf, sizeof buf, FX_PATH, &f->g, &f->err), OC_ERR);
    assert_null(f->g);
    assert_contains(f->err.msg, FX_PATH);
}

static void test_empty_buffer(void **state) {
    fixture *f = *state;
    static const uint8_t none[1] = {0};
    assert_int_equal(onnx_import_buffer(none, 0, FX_PATH, &f->g, &f->err), OC_ERR);
    assert_null(f->g);
    assert_contains(f->err.msg, FX_PATH);
    assert_contains(f->err.msg, "empty");
}

static void test_missing_file(void **state) {
    fixture *f = *state;
    const char *path = "/nonexistent/outcore/missing_model.onnx";
    assert_int_equal(onnx_import_file(path, &f->g, &f->err), OC_ERR);
    assert_null(f->g);
    assert_contains(f->err.msg, path);
}

/* ---- invalid graphs ---- */

static void test_unsupported_op(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    mb_node(m, "Relu", "relu0", "x", "r");
    mb_node(m, "Hardmax", "my_hardmax", "r", "y");
    mb_output(m, "y");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_null(f->g);
    const char *msg = f->err.msg;
    assert_contains(msg, FX_PATH);
    assert_contains(msg, "'my_hardmax'");
    assert_contains(msg, "'Hardmax'");
    assert_contains(msg, "opset 13");
    assert_contains(msg, "supported ops:");
    assert_contains(msg, "Conv");
    assert_contains(msg, "BatchNormalization");
    assert_contains(msg, "Unsqueeze");
}

static void test_unsupported_opset(void **state) {
    fixture *f = *state;
    build_tiny(f->m = mb_new(7));
    assert_int_equal(fx_import(f), OC_ERR);
    assert_contains(f->err.msg, "opset 7");
}

static void test_input_not_produced(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    mb_node(m, "Relu", "relu_a", "ghost", "y");
    mb_output(m, "y");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_contains(f->err.msg, "'relu_a'");
    assert_contains(f->err.msg, "'ghost'");
}

/* A node listed before the producer of its input: not topologically sorted. */
static void test_input_produced_later(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    mb_node(m, "Relu", "second", "t1", "y");
    mb_node(m, "Relu", "first", "x", "t1");
    mb_output(m, "y");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_contains(f->err.msg, "'second'");
    assert_contains(f->err.msg, "'t1'");
}

static void test_duplicate_output(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    mb_node(m, "Relu", "relu_a", "x", "y");
    mb_node(m, "Relu", "relu_b", "x", "y");
    mb_output(m, "y");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_contains(f->err.msg, "'relu_b'");
    assert_contains(f->err.msg, "'y'");
    assert_contains(f->err.msg, "already defined");

    /* Overwriting a graph input is the same error. */
    mb_free(f->m);
    m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    mb_node(m, "Relu", "relu_x", "x", "x");
    mb_output(m, "x");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_contains(f->err.msg, "'relu_x'");
}

static void test_graph_output_not_produced(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    mb_node(m, "Relu", "relu", "x", "y");
    mb_output(m, "nothing_makes_me");
    assert_int_equal(fx_import(f), OC_ERR);
    assert_contains(f->err.msg, "nothing_makes_me");
}

/* Unnamed nodes get non-empty names unique in the graph, even when an explicit
 * name already looks like a generated one. */
static void test_generated_node_names(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    mb_node(m, "Relu", "", "x", "a");
    mb_node(m, "Relu", "Relu_2", "a", "b");
    mb_node(m, "Relu", NULL, "b", "c");
    mb_node(m, "Relu", "", "c", "y");
    mb_output(m, "y");
    assert_int_equal(fx_import(f), OC_OK);
    ir_graph *g = f->g;
    assert_int_equal(g->n_nodes, 4);
    assert_string_equal(g->nodes[1].name, "Relu_2");
    for (int i = 0; i < g->n_nodes; i++) {
        assert_true(strlen(g->nodes[i].name) > 0);
        assert_contains(g->nodes[i].name, "Relu");
        for (int j = 0; j < i; j++) assert_string_not_equal(g->nodes[i].name, g->nodes[j].name);
    }
}

/* Duplicate names get "#k" suffixes, the first free k per name, also when a
 * later node's explicit name is one a suffix already took. */
static void test_duplicate_node_names(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,4");
    const char *names[] = {"a", "a", "a#2", "a", "a#1", "a"};
    const char *want[] = {"a", "a#1", "a#2", "a#3", "a#1#1", "a#4"};
    char in[8] = "x", out[8];
    for (int i = 0; i < 6; i++) {
        snprintf(out, sizeof out, i == 5 ? "y" : "t%d", i);
        mb_node(m, "Relu", names[i], in, out);
        snprintf(in, sizeof in, "%s", out);
    }
    mb_output(m, "y");
    assert_int_equal(fx_import(f), OC_OK);
    for (int i = 0; i < 6; i++) assert_string_equal(f->g->nodes[i].name, want[i]);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_tiny_structure),
        T(test_tiny_attributes),
        T(test_tensor_attribute),
        T(test_tiny_kinds),
        T(test_constant_kinds),
        T(test_structure_only_initializer),
        T(test_raw_data_initializer),
        T(test_typed_data_initializers),
        T(test_data_size_mismatch),
        T(test_external_data),
        T(test_external_data_too_short),
        T(test_external_data_bad_location),
        T(test_external_data_offset_overflow),
        T(test_external_data_escapes_and_junk),
        T(test_truncated_buffer),
        T(test_random_bytes),
        T(test_empty_buffer),
        T(test_missing_file),
        T(test_unsupported_op),
        T(test_unsupported_opset),
        T(test_input_not_produced),
        T(test_input_produced_later),
        T(test_duplicate_output),
        T(test_duplicate_node_names),
        T(test_graph_output_not_produced),
        T(test_generated_node_names),
    };
    return cmocka_run_group_tests_name("import", tests, NULL, NULL);
}
