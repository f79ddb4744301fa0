/* test_bind.c — binding symbolic input dims (--batch, --dim NAME=V) and the
 * errors for unbound symbols, unknown names, out-of-range and overflowing values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit/fixture.h"

/* Imports f->m, then binds with o and infers shapes. */
static int bind_infer(fixture *f, const ir_bind_opts *o) {
    if (fx_import(f)) fail_msg("import failed: %s", f->err.msg);
    return ir_bind_dims(f->g, o, &f->err) || ir_infer_shapes(f->g, &f->err) ? OC_ERR : OC_OK;
}

/* x (N,3,8,8) and mask (N,1,8,8) share the symbol N; y = x + mask. */
static void build_two_inputs(mb_model *m, const char *xdims) {
    mb_input(m, "x", MB_FLOAT, xdims);
    mb_input(m, "mask", MB_FLOAT, "N,1,8,8");
    mb_node(m, "Add", "add", "x,mask", "y");
    mb_output(m, "y");
}

static void test_batch_binds_symbol_everywhere(void **state) {
    fixture *f = *state;
    build_two_inputs(f->m = mb_new(13), "N,3,8,8");
    ir_bind_opts o = {.batch = 5};
    assert_int_equal(bind_infer(f, &o), OC_OK);
    assert_shape(f->g, "x", "[5, 3, 8, 8]");
    assert_shape(f->g, "mask", "[5, 1, 8, 8]");
    assert_shape(f->g, "y", "[5, 3, 8, 8]");
}

static void test_batch_overrides_static_dim(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3,8,8");
    mb_node(m, "Relu", "relu", "x", "y");
    mb_output(m, "y");
    ir_bind_opts o = {.batch = 7};
    assert_int_equal(bind_infer(f, &o), OC_OK);
    assert_shape(f->g, "x", "[7, 3, 8, 8]");
    assert_shape(f->g, "y", "[7, 3, 8, 8]");
}

/* Without --batch a static model keeps its own leading dim. */
static void test_no_batch_keeps_static_dim(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3,8,8");
    mb_node(m, "Relu", "relu", "x", "y");
    mb_output(m, "y");
    ir_bind_opts o = {0};
    assert_int_equal(bind_infer(f, &o), OC_OK);
    assert_shape(f->g, "y", "[2, 3, 8, 8]");
}

static void test_dim_binds_named_symbols(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "N,3,height,width");
    mb_input(m, "bias", MB_FLOAT, "1,1,height,1");
    mb_node(m, "Add", "add", "x,bias", "y");
    mb_output(m, "y");
    const ir_dim_binding dims[] = {{"height", 32}, {"width", 24}};
    ir_bind_opts o = {.batch = 4, .dims = dims, .n_dims = 2};
    assert_int_equal(bind_infer(f, &o), OC_OK);
    assert_shape(f->g, "x", "[4, 3, 32, 24]");
    assert_shape(f->g, "bias", "[1, 1, 32, 1]");
    assert_shape(f->g, "y", "[4, 3, 32, 24]");
}

/* A dim with neither value nor name is called "<input>:<index>". */
static void test_dim_binds_unnamed_dim(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "N,?");
    mb_node(m, "Relu", "relu", "x", "y");
    mb_output(m, "y");
    const ir_dim_binding dims[] = {{"x:1", 9}};
    ir_bind_opts o = {.batch = 3, .dims = dims, .n_dims = 1};
    assert_int_equal(bind_infer(f, &o), OC_OK);
    assert_shape(f->g, "y", "[3, 9]");
}

static void test_unbound_symbol_errors(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "image", MB_FLOAT, "N,3,height,8");
    mb_node(m, "Relu", "relu", "image", "y");
    mb_output(m, "y");
    ir_bind_opts o = {.batch = 2};
    assert_int_equal(bind_infer(f, &o), OC_ERR);
    assert_contains(f->err.msg, "'image'");
    assert_contains(f->err.msg, "dim 2");
    assert_contains(f->err.msg, "'height'");
    assert_contains(f->err.msg, "--dim");
}

/* batch 0 means "keep the model's": a symbolic batch is then unbound. */
static void test_unbound_batch_errors(void **state) {
    fixture *f = *state;
    build_two_inputs(f->m = mb_new(13), "N,3,8,8");
    ir_bind_opts o = {.batch = 0};
    assert_int_equal(bind_infer(f, &o), OC_ERR);
    assert_contains(f->err.msg, "'x'");
    assert_contains(f->err.msg, "dim 0");
    assert_contains(f->err.msg, "'N'");
    assert_contains(f->err.msg, "--batch");
}

static void test_dim_unknown_name_errors(void **state) {
    fixture *f = *state;
    build_two_inputs(f->m = mb_new(13), "N,3,8,8");
    const ir_dim_binding dims[] = {{"depth", 3}};
    ir_bind_opts o = {.batch = 2, .dims = dims, .n_dims = 1};
    assert_int_equal(bind_infer(f, &o), OC_ERR);
    assert_contains(f->err.msg, "'depth'");
    assert_contains(f->err.msg, FX_PATH);
}

static void test_dim_out_of_range_errors(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "N,3,height,8");
    mb_node(m, "Relu", "relu", "x", "y");
    mb_output(m, "y");
    const ir_dim_binding dims[] = {{"height", 0}};
    ir_bind_opts o = {.batch = 2, .dims = dims, .n_dims = 1};
    assert_int_equal(bind_infer(f, &o), OC_ERR);
    assert_contains(f->err.msg, "height");
    assert_contains(f->err.msg, "out of range");
}

static void test_batch_out_of_range_errors(void **state) {
    fixture *f = *state;
    build_two_inputs(f->m = mb_new(13), "N,3,8,8");
    assert_int_equal(fx_import(f), OC_OK);
    const int64_t bad[] = {-1, -3, OC_MAX_BATCH + 1, INT64_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ir_bind_opts o = {.batch = bad[i]};
        f->err.msg[0] = '\0';
        assert_int_equal(ir_bind_dims(f->g, &o, &f->err), OC_ERR);
        assert_contains(f->err.msg, "batch");
        assert_contains(f->err.msg, "out of range");
    }
    /* The largest allowed batch binds. */
    ir_bind_opts o = {.batch = OC_MAX_BATCH};
    assert_int_equal(ir_bind_dims(f->g, &o, &f->err), OC_OK);
    assert_int_equal(fx_tensor(f->g, "x")->dims[0], OC_MAX_BATCH);
}

/* An input whose byte size overflows int64 at this batch: 2^24 x 2^20 x 2^20 floats. */
static void test_batch_overflows_input(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "huge_input", MB_FLOAT, "N,1048576,1048576");
    mb_node(m, "Relu", "relu", "huge_input", "y");
    mb_output(m, "y");
    ir_bind_opts o = {.batch = OC_MAX_BATCH};
    assert_int_equal(bind_infer(f, &o), OC_ERR);
    assert_contains(f->err.msg, "'huge_input'");
    assert_contains(f->err.msg, "too large");
}

/* The input is at the one-tensor limit (2^46 elements, 2^48 bytes: IR_MAX_TENSOR_BYTES);
 * the concatenation doubles it past the limit. */
static void test_batch_overflows_activation(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "N,4096,1024");
    Onnx__NodeProto *n = mb_node(m, "Concat", "cat", "x,x", "doubled");
    mb_attr_int(m, n, "axis", 1);
    mb_output(m, "doubled");
    ir_bind_opts o = {.batch = OC_MAX_BATCH};
    assert_int_equal(bind_infer(f, &o), OC_ERR);
    assert_contains(f->err.msg, "'doubled'");
    assert_contains(f->err.msg, "'cat'");
    assert_contains(f->err.msg, "larger than 281474976710656 bytes");

    /* The same model at a small batch is fine. */
    ir_graph_free(f->g);
    f->g = NULL;
    o.batch = 2;
    assert_int_equal(bind_infer(f, &o), OC_OK);
    assert_shape(f->g, "doubled", "[2, 8192, 1024]");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_batch_binds_symbol_everywhere), T(test_batch_overrides_static_dim),
        T(test_no_batch_keeps_static_dim),     T(test_dim_binds_named_symbols),
        T(test_dim_binds_unnamed_dim),         T(test_unbound_symbol_errors),
        T(test_unbound_batch_errors),          T(test_dim_unknown_name_errors),
        T(test_dim_out_of_range_errors),       T(test_batch_out_of_range_errors),
        T(test_batch_overflows_input),         T(test_batch_overflows_activation),
    };
    return cmocka_run_group_tests_name("bind", tests, NULL, NULL);
}
