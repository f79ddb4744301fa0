/* test_shapes.c — every op's shape function against hand-computed shapes
 * (window sizes checked against PyTorch's nn modules), plus folding of the
 * int64 shape subgraphs exporters emit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "ir/ops/op_util.h"
#include "unit/fixture.h"

/* Infers f->m with its own dims; fails the test (with the message) on error. */
static ir_graph *infer_ok(fixture *f) {
    if (fx_infer(f, 0)) fail_msg("inference failed: %s", f->err.msg);
    return f->g;
}

/* Fails unless inferring f->m errors with a message containing part. */
static void infer_fails(fixture *f, const char *part) {
    if (fx_infer(f, 0) == OC_OK) fail_msg("inference succeeded; expected \"%s\"", part);
    assert_contains(f->err.msg, part);
}

/* Fails unless tensor name holds the plan-time int64 values want[0..n). */
static void assert_values(ir_graph *g, const char *name, size_t n, const int64_t *want) {
    const int64_t *v;
    int64_t count;
    if (!ir_tensor_int64_values(fx_tensor(g, name), &v, &count))
        fail_msg("tensor '%s' has no plan-time int64 values", name);
    assert_int_equal(count, n);
    for (size_t i = 0; i < n; i++)
        if (v[i] != want[i])
            fail_msg("tensor '%s'[%zu] = %lld, expected %lld", name, i, (long long)v[i],
                     (long long)want[i]);
}

/* ---- Conv ---- */

static void test_conv_pads_strides(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,3,224,224");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(64, 3, 7, 7));
    Onnx__NodeProto *n = mb_node(m, "Conv", "conv", "x,w", "y");
    mb_attr_ints(m, n, "strides", MB_INTS(2, 2));
    mb_attr_ints(m, n, "pads", MB_INTS(3, 3, 3, 3));
    mb_output(m, "y");
    assert_shape(infer_ok(f), "y", "[1, 64, 112, 112]"); /* (224 + 6 - 7) / 2 + 1 */
}

static void test_conv_dilations(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,4,10,10");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(8, 4, 3, 3));
    mb_init(m, "b", MB_FLOAT, MB_DIMS(8));
    Onnx__NodeProto *n = mb_node(m, "Conv", "conv", "x,w,b", "y");
    mb_attr_ints(m, n, "dilations", MB_INTS(2, 2));
    mb_output(m, "y");
    assert_shape(infer_ok(f), "y", "[1, 8, 6, 6]"); /* span 5: 10 - 5 + 1 */
}

static void test_conv_group(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,8,9,10");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(16, 4, 3, 3));
    Onnx__NodeProto *n = mb_node(m, "Conv", "grouped", "x,w", "y");
    mb_attr_int(m, n, "group", 2);
    mb_attr_ints(m, n, "strides", MB_INTS(2, 1));
    mb_attr_ints(m, n, "pads", MB_INTS(1, 0, 1, 0));
    mb_init(m, "dw", MB_FLOAT, MB_DIMS(16, 1, 3, 3));
    n = mb_node(m, "Conv", "depthwise", "y,dw", "z");
    mb_attr_int(m, n, "group", 16);
    mb_attr_ints(m, n, "pads", MB_INTS(1, 1, 1, 1));
    mb_output(m, "z");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[1, 16, 5, 8]"); /* (9 + 2 - 3) / 2 + 1, 10 - 3 + 1 */
    assert_shape(g, "z", "[1, 16, 5, 8]");
}

static void test_conv_auto_pad(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x7", MB_FLOAT, "1,2,7,7");
    mb_input(m, "x8", MB_FLOAT, "1,2,8,8");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(4, 2, 3, 3));
    static const struct {
        const char *name, *in, *out, *mode;
    } convs[] = {
        {"same7", "x7,w", "s7", "SAME_UPPER"},
        {"same8", "x8,w", "s8", "SAME_UPPER"},
        {"lower8", "x8,w", "l8", "SAME_LOWER"},
        {"valid7", "x7,w", "v7", "VALID"},
    };
    for (int i = 0; i < 4; i++) {
        Onnx__NodeProto *n = mb_node(m, "Conv", convs[i].name, convs[i].in, convs[i].out);
        mb_attr_ints(m, n, "strides", MB_INTS(2, 2));
        mb_attr_string(m, n, "auto_pad", convs[i].mode);
        mb_output(m, convs[i].out);
    }
    ir_graph *g = infer_ok(f);
    assert_shape(g, "s7", "[1, 4, 4, 4]"); /* SAME: ceil(7 / 2) */
    assert_shape(g, "s8", "[1, 4, 4, 4]");
    assert_shape(g, "l8", "[1, 4, 4, 4]");
    assert_shape(g, "v7", "[1, 4, 3, 3]"); /* VALID: (7 - 3) / 2 + 1 */

    /* 8 with k3 s2 needs one pad: SAME_UPPER puts it at the end, SAME_LOWER at the start.
     * cuDNN pads both ends alike: the Conv keeps none, a Pad before it adds the one
     * (begins then ends, every dim); 7 needs two, one at each end, and stays as it is. */
    static const struct {
        const char *conv, *padded;
        int64_t pads[8];
    } lowered[] = {
        {"same8", "same8/padded", {0, 0, 0, 0, 0, 0, 1, 1}},
        {"lower8", "lower8/padded", {0, 0, 1, 1, 0, 0, 0, 0}},
    };
    for (int i = 0; i < 2; i++) {
        int pt = ir_tensor_find(g, lowered[i].padded);
        assert_true(pt >= 0);
        assert_shape(g, lowered[i].padded, "[1, 2, 9, 9]");
        const ir_node *pad = &g->nodes[g->tensors[pt].producer];
        assert_int_equal(pad->op, OP_PAD);
        const ir_tensor *pv = &g->tensors[pad->inputs[1]];
        assert_int_equal(pv->data_bytes, sizeof lowered[i].pads);
        assert_memory_equal(pv->data, lowered[i].pads, sizeof lowered[i].pads);
        const ir_node *conv = &g->nodes[g->tensors[pt].consumers[0]];
        assert_string_equal(conv->name, lowered[i].conv);
        assert_string_equal(ir_attr_string(conv, "auto_pad", "NOTSET"), "NOTSET");
        const int64_t *cp;
        assert_int_equal(ir_attr_ints(conv, "pads", &cp), 4);
        for (int k = 0; k < 4; k++) assert_int_equal(cp[k], 0);
    }
    assert_int_equal(ir_tensor_find(g, "same7/padded"), -1);
}

static void test_conv_channel_mismatch(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,3,8,8");
    mb_init(m, "w4", MB_FLOAT, MB_DIMS(8, 4, 3, 3));
    mb_node(m, "Conv", "bad_conv", "x,w4", "y");
    mb_output(m, "y");
    infer_fails(f, "channels do not match");
    assert_contains(f->err.msg, "'bad_conv'");
    assert_contains(f->err.msg, "'w4'");
}

/* The default exporter's conv3d writes a missing bias as zeros of shape [M, 2]
 * (Expand(CastLike(0, x), [M, 2])): taken as none, said once; a nonzero one of
 * that shape is refused. */
static void conv_bias_model(fixture *f, float fill) {
    mb_model *m = f->m = mb_new(18);
    mb_input(m, "x", MB_FLOAT, "1,2,4,6,6");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(3, 2, 1, 3, 3));
    Onnx__NodeProto *k = mb_node(m, "Constant", "zero", "", "z");
    mb_attr_float(m, k, "value_float", fill);
    mb_node(m, "CastLike", "cast", "z,x", "zc");
    mb_init_int64s(m, "bshape", MB_DIMS(2), 2, (const int64_t[]){3, 2});
    mb_node(m, "Expand", "expand", "zc,bshape", "b");
    mb_node(m, "Conv", "conv3d", "x,w,b", "y");
    mb_node(m, "Conv", "conv3d_b", "x,w,b", "y2");
    mb_output(m, "y");
    mb_output(m, "y2");
}

static void test_conv_zero_bias_of_other_shape(void **state) {
    fixture *f = *state;
    conv_bias_model(f, 0.0f);
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[1, 3, 4, 4, 4]");
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == OP_CONV) assert_int_equal(g->nodes[i].inputs[2], -1);
    assert_int_equal(fx_tensor(g, "b")->n_consumers, 0);
    assert_int_equal(g->n_notes, 1);
    assert_contains(g->notes[0], "taken as none");
    assert_contains(g->notes[0], "[3, 2]");
}

static void test_conv_nonzero_bias_of_other_shape(void **state) {
    fixture *f = *state;
    conv_bias_model(f, 0.5f);
    infer_fails(f, "bias 'b' must have shape [3]");
}

/* ---- ConvTranspose: O = s (D - 1) + output_padding + (k - 1) d + 1 - pads ---- */

static void test_conv_transpose(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,16,8,8");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(16, 8, 2, 2));
    Onnx__NodeProto *n = mb_node(m, "ConvTranspose", "up", "x,w", "y");
    mb_attr_ints(m, n, "strides", MB_INTS(2, 2));
    mb_init(m, "wg", MB_FLOAT, MB_DIMS(16, 4, 3, 3));
    n = mb_node(m, "ConvTranspose", "up_grouped", "x,wg", "yg");
    mb_attr_ints(m, n, "strides", MB_INTS(2, 2));
    mb_attr_int(m, n, "group", 2);
    mb_output(m, "y");
    mb_output(m, "yg");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[1, 8, 16, 16]");  /* 2 * 7 + 1 + 1 */
    assert_shape(g, "yg", "[1, 8, 17, 17]"); /* 2 * 7 + 2 + 1, channels 4 * 2 */
}

static void test_conv_transpose_output_padding(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,4,5,5");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(4, 2, 3, 3));
    Onnx__NodeProto *n = mb_node(m, "ConvTranspose", "up", "x,w", "y");
    mb_attr_ints(m, n, "strides", MB_INTS(2, 2));
    mb_attr_ints(m, n, "pads", MB_INTS(1, 1, 1, 1));
    mb_attr_ints(m, n, "output_padding", MB_INTS(1, 1));
    mb_output(m, "y");
    assert_shape(infer_ok(f), "y", "[1, 2, 10, 10]"); /* 2 * 4 + 1 + 3 - 2 */
}

/* ---- BatchNormalization ---- */

static void add_bn_params(mb_model *m) {
    mb_input(m, "x", MB_FLOAT, "2,4,3,3");
    mb_init(m, "scale", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "bias", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "mean", MB_FLOAT, MB_DIMS(4));
    mb_init(m, "var", MB_FLOAT, MB_DIMS(4));
}

static void test_bn_opset13_five_outputs(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    add_bn_params(m);
    mb_node(m, "BatchNormalization", "bn", "x,scale,bias,mean,var", "y,rm,rv,sm,sv");
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[2, 4, 3, 3]");
    static const char *stats[] = {"rm", "rv", "sm", "sv"};
    for (int i = 0; i < 4; i++) {
        assert_shape(g, stats[i], "[4]");
        assert_int_equal(fx_tensor(g, stats[i])->dtype, IR_DTYPE_FLOAT);
    }
    assert_int_equal(fx_tensor(g, "mean")->kind, IR_KIND_STATE);
    assert_int_equal(fx_tensor(g, "scale")->kind, IR_KIND_PARAMETER);
}

static void test_bn_opset15_training_mode(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(15);
    add_bn_params(m);
    Onnx__NodeProto *n = mb_node(m, "BatchNormalization", "bn", "x,scale,bias,mean,var", "y,rm,rv");
    mb_attr_int(m, n, "training_mode", 1);
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[2, 4, 3, 3]");
    assert_shape(g, "rm", "[4]");
    assert_shape(g, "rv", "[4]");
}

static void test_bn_opset15_five_outputs_error(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(15);
    add_bn_params(m);
    Onnx__NodeProto *n =
        mb_node(m, "BatchNormalization", "bn15", "x,scale,bias,mean,var", "y,rm,rv,sm,sv");
    mb_attr_int(m, n, "training_mode", 1);
    mb_output(m, "y");
    infer_fails(f, "5 outputs");
    assert_contains(f->err.msg, "opset 15");
    assert_contains(f->err.msg, "'bn15'");
}

static void test_bn_opset15_stats_without_training_mode(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(15);
    add_bn_params(m);
    mb_node(m, "BatchNormalization", "bn", "x,scale,bias,mean,var", "y,rm,rv");
    mb_output(m, "y");
    infer_fails(f, "training_mode");
}

/* ---- pooling ---- */

/* One MaxPool (or AveragePool) per case on an input of extent in x in. */
typedef struct pool_case {
    const char *op;
    int64_t in, k, s, p;
    int ceil;
    const char *want; /* output shape */
} pool_case;

static void check_pool(fixture *f, const pool_case *c) {
    char dims[64];
    mb_free(f->m);
    ir_graph_free(f->g);
    f->g = NULL;
    mb_model *m = f->m = mb_new(13);
    snprintf(dims, sizeof dims, "1,2,%lld,%lld", (long long)c->in, (long long)c->in);
    mb_input(m, "x", MB_FLOAT, dims);
    Onnx__NodeProto *n = mb_node(m, c->op, "pool", "x", "y");
    mb_attr_ints(m, n, "kernel_shape", MB_INTS(c->k, c->k));
    mb_attr_ints(m, n, "strides", MB_INTS(c->s, c->s));
    mb_attr_ints(m, n, "pads", MB_INTS(c->p, c->p, c->p, c->p));
    if (c->ceil) mb_attr_int(m, n, "ceil_mode", 1);
    mb_output(m, "y");
    assert_shape(infer_ok(f), "y", c->want);
}

/* Expected extents are PyTorch's nn.MaxPool2d / nn.AvgPool2d outputs. */
static void test_max_pool(void **state) {
    static const pool_case cases[] = {
        {"MaxPool", 112, 3, 2, 1, 0, "[1, 2, 56, 56]"}, /* ResNet stem: floor(111/2)+1 */
        {"MaxPool", 112, 3, 2, 0, 1, "[1, 2, 56, 56]"}, /* GoogLeNet: ceil(109/2)+1 */
        {"MaxPool", 112, 3, 2, 1, 1, "[1, 2, 57, 57]"}, /* ceil(111/2)+1 */
        {"MaxPool", 6, 3, 2, 0, 1, "[1, 2, 3, 3]"},     /* ceil 3, floor 2 */
        {"MaxPool", 6, 3, 2, 0, 0, "[1, 2, 2, 2]"},
        {"MaxPool", 55, 3, 2, 0, 1, "[1, 2, 27, 27]"},
        /* ceil gives 4 windows, but the 4th would start at 6 >= 5 + 1 (outside
         * input + left pad): PyTorch drops it. */
        {"MaxPool", 5, 2, 2, 1, 1, "[1, 2, 3, 3]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_pool(*state, &cases[i]);
}

static void test_max_pool_indices(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3,8,8");
    Onnx__NodeProto *n = mb_node(m, "MaxPool", "pool", "x", "y,idx");
    mb_attr_ints(m, n, "kernel_shape", MB_INTS(2, 2));
    mb_attr_ints(m, n, "strides", MB_INTS(2, 2));
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[2, 3, 4, 4]");
    assert_shape(g, "idx", "[2, 3, 4, 4]");
    assert_int_equal(fx_tensor(g, "idx")->dtype, IR_DTYPE_INT64);
}

static void test_average_pool(void **state) {
    static const pool_case cases[] = {
        {"AveragePool", 9, 3, 2, 1, 0, "[1, 2, 5, 5]"},
        {"AveragePool", 8, 2, 2, 0, 0, "[1, 2, 4, 4]"},
        {"AveragePool", 6, 3, 2, 0, 1, "[1, 2, 3, 3]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_pool(*state, &cases[i]);
}

static void test_pool_window_too_large(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,2,2,2");
    Onnx__NodeProto *n = mb_node(m, "MaxPool", "big_pool", "x", "y");
    mb_attr_ints(m, n, "kernel_shape", MB_INTS(3, 3));
    mb_output(m, "y");
    infer_fails(f, "does not fit");
    assert_contains(f->err.msg, "'big_pool'");
}

static void test_global_average_pool(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,512,7,5");
    mb_node(m, "GlobalAveragePool", "gap", "x", "y");
    mb_output(m, "y");
    assert_shape(infer_ok(f), "y", "[2, 512, 1, 1]");
}

/* ---- Gemm ---- */

static void test_gemm_trans_b_bias(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "a", MB_FLOAT, "2,512");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(1000, 512));
    mb_init(m, "b", MB_FLOAT, MB_DIMS(1000));
    Onnx__NodeProto *n = mb_node(m, "Gemm", "fc", "a,w,b", "y");
    mb_attr_int(m, n, "transB", 1);
    /* transA: (512, 3)' x (512, 7) + (1, 7) -> (3, 7) */
    mb_input(m, "at", MB_FLOAT, "512,3");
    mb_init(m, "w2", MB_FLOAT, MB_DIMS(512, 7));
    mb_init(m, "b2", MB_FLOAT, MB_DIMS(1, 7));
    n = mb_node(m, "Gemm", "fc2", "at,w2,b2", "y2");
    mb_attr_int(m, n, "transA", 1);
    mb_output(m, "y");
    mb_output(m, "y2");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[2, 1000]");
    assert_shape(g, "y2", "[3, 7]");
}

static void test_gemm_errors(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "a", MB_FLOAT, "2,512");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(1000, 512));
    mb_init(m, "bad_bias", MB_FLOAT, MB_DIMS(999));
    Onnx__NodeProto *n = mb_node(m, "Gemm", "fc", "a,w,bad_bias", "y");
    mb_attr_int(m, n, "transB", 1);
    mb_output(m, "y");
    infer_fails(f, "'bad_bias'");

    mb_free(f->m);
    ir_graph_free(f->g);
    f->g = NULL;
    m = f->m = mb_new(13);
    mb_input(m, "a", MB_FLOAT, "2,512");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(1000, 512)); /* needs transB */
    mb_node(m, "Gemm", "fc", "a,w", "y");
    mb_output(m, "y");
    infer_fails(f, "inner dims differ");
}

/* ---- Flatten ---- */

static void test_flatten(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3,4,5");
    static const struct {
        const char *name, *out;
        int64_t axis;
    } cases[] = {
        {"flat1", "f1", 1},
        {"flat0", "f0", 0},
        {"flat_last", "fl", -1},
        {"flat4", "f4", 4},
    };
    for (int i = 0; i < 4; i++) {
        Onnx__NodeProto *n = mb_node(m, "Flatten", cases[i].name, "x", cases[i].out);
        mb_attr_int(m, n, "axis", cases[i].axis);
        mb_output(m, cases[i].out);
    }
    ir_graph *g = infer_ok(f);
    assert_shape(g, "f1", "[2, 60]");
    assert_shape(g, "f0", "[1, 120]");
    assert_shape(g, "fl", "[24, 5]");
    assert_shape(g, "f4", "[120, 1]");
}

/* ---- elementwise ---- */

static void test_add_broadcast(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "a", MB_FLOAT, "2,3,4,5");
    mb_init(m, "b", MB_FLOAT, MB_DIMS(4, 1));
    mb_input(m, "col", MB_FLOAT, "3,1");
    mb_input(m, "row", MB_FLOAT, "1,4");
    mb_init_floats(m, "one", MB_SCALAR, MB_FLOATS(1.0f));
    mb_node(m, "Add", "add1", "a,b", "y1");
    mb_node(m, "Add", "add2", "col,row", "y2");
    mb_node(m, "Add", "add3", "one,col", "y3");
    mb_output(m, "y1");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y1", "[2, 3, 4, 5]");
    assert_shape(g, "y2", "[3, 4]");
    assert_shape(g, "y3", "[3, 1]");
}

static void test_add_broadcast_error(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "lhs", MB_FLOAT, "2,3");
    mb_input(m, "rhs", MB_FLOAT, "4");
    mb_node(m, "Add", "bad_add", "lhs,rhs", "y");
    mb_output(m, "y");
    infer_fails(f, "do not broadcast");
    assert_contains(f->err.msg, "'lhs'");
    assert_contains(f->err.msg, "'rhs'");
    assert_contains(f->err.msg, "'bad_add'");
}

static void test_dropout_mask(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,8");
    mb_init_floats(m, "ratio", MB_SCALAR, MB_FLOATS(0.5f));
    mb_node(m, "Dropout", "drop", "x,ratio", "y,mask");
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[2, 8]");
    assert_int_equal(fx_tensor(g, "y")->dtype, IR_DTYPE_FLOAT);
    assert_shape(g, "mask", "[2, 8]");
    assert_int_equal(fx_tensor(g, "mask")->dtype, IR_DTYPE_BOOL);
    assert_int_equal(fx_tensor(g, "ratio")->kind, IR_KIND_CONSTANT);
}

static void test_dropout_ratio_not_constant(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,8");
    mb_input(m, "r", MB_FLOAT, "");
    mb_node(m, "Dropout", "drop", "x,r", "y");
    mb_output(m, "y");
    infer_fails(f, "ratio");
}

static void test_clip_min_max_inputs(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,8,3");
    mb_init_floats(m, "lo", MB_SCALAR, MB_FLOATS(0.0f));
    mb_init_floats(m, "hi", MB_SCALAR, MB_FLOATS(6.0f));
    mb_node(m, "Clip", "relu6", "x,lo,hi", "y");
    mb_node(m, "Clip", "max_only", "y,,hi", "z"); /* min omitted */
    mb_output(m, "z");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[2, 8, 3]");
    assert_shape(g, "z", "[2, 8, 3]");
    assert_int_equal(g->nodes[1].inputs[1], -1);
    assert_int_equal(fx_tensor(g, "lo")->kind, IR_KIND_CONSTANT);
    assert_int_equal(fx_tensor(g, "hi")->kind, IR_KIND_CONSTANT);
}

/* ---- Pad ---- */

static void test_pad_input(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,2,5,5");
    /* begins (0, 0, 1, 2), ends (0, 0, 3, 4); negative pads crop */
    mb_init_int64s(m, "pads", MB_DIMS(8), MB_INTS(0, 0, 1, 2, 0, 0, 3, 4));
    mb_init_int64s(m, "crop", MB_DIMS(8), MB_INTS(0, 0, -1, 0, 0, 0, -1, -2));
    mb_init_floats(m, "value", MB_SCALAR, MB_FLOATS(0.25f));
    Onnx__NodeProto *n = mb_node(m, "Pad", "pad", "x,pads,value", "y");
    mb_attr_string(m, n, "mode", "constant");
    mb_node(m, "Pad", "crop", "x,crop", "z");
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[1, 2, 9, 11]");
    assert_shape(g, "z", "[1, 2, 3, 3]");
    assert_int_equal(fx_tensor(g, "pads")->kind, IR_KIND_CONSTANT);
}

static void test_pad_attribute_opset9(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(9);
    mb_input(m, "x", MB_FLOAT, "1,2,5,5");
    Onnx__NodeProto *n = mb_node(m, "Pad", "pad", "x", "y");
    mb_attr_ints(m, n, "pads", MB_INTS(0, 0, 2, 2, 0, 0, 2, 2));
    mb_attr_string(m, n, "mode", "reflect");
    mb_output(m, "y");
    assert_shape(infer_ok(f), "y", "[1, 2, 9, 9]");
}

static void test_pad_wrong_count(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,2,5,5");
    mb_init_int64s(m, "pads", MB_DIMS(4), MB_INTS(1, 1, 1, 1));
    mb_node(m, "Pad", "pad", "x,pads", "y");
    mb_output(m, "y");
    infer_fails(f, "pads has 4 values, expected 8");
}

/* ---- Constant and shape folding ---- */

static void test_constant(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    Onnx__NodeProto *n = mb_node(m, "Constant", "k_tensor", "", "kt");
    mb_attr_tensor(m, n, "value", mb_tensor_int64s(m, "v", MB_DIMS(3), MB_INTS(2, -1, 7)));
    n = mb_node(m, "Constant", "k_ints", "", "ki");
    mb_attr_ints(m, n, "value_ints", MB_INTS(4, 5));
    n = mb_node(m, "Constant", "k_float", "", "kf");
    mb_attr_float(m, n, "value_float", 2.5f);
    mb_output(m, "kt");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "kt", "[3]");
    assert_values(g, "kt", MB_INTS(2, -1, 7));
    assert_shape(g, "ki", "[2]");
    assert_values(g, "ki", MB_INTS(4, 5));
    assert_shape(g, "kf", "[]");
    assert_int_equal(fx_tensor(g, "kf")->dtype, IR_DTYPE_FLOAT);
    assert_true(*(const float *)fx_tensor(g, "kf")->data == 2.5f);
    assert_int_equal(fx_tensor(g, "kt")->kind, IR_KIND_CONSTANT);
}

/* x (N,3,4,4) -> Shape -> Gather(0) -> Unsqueeze -> Concat([-1]) -> Reshape:
 * the flatten exporters emit, folded to a static (N, 48) once N is bound. */
static void test_shape_subgraph_folds(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "N,3,4,4");
    mb_init_int64s(m, "zero", MB_SCALAR, MB_INTS(0));
    mb_init_int64s(m, "axes", MB_DIMS(1), MB_INTS(0));
    mb_node(m, "Shape", "shape", "x", "s");
    mb_node(m, "Gather", "gather", "s,zero", "n");
    mb_node(m, "Unsqueeze", "unsq", "n,axes", "n1");
    Onnx__NodeProto *k = mb_node(m, "Constant", "minus1", "", "m1");
    mb_attr_ints(m, k, "value_ints", MB_INTS(-1));
    Onnx__NodeProto *c = mb_node(m, "Concat", "cat", "n1,m1", "target");
    mb_attr_int(m, c, "axis", 0);
    mb_node(m, "Reshape", "reshape", "x,target", "y");
    mb_output(m, "y");
    assert_int_equal(fx_infer(f, 6), OC_OK);
    ir_graph *g = f->g;
    assert_values(g, "s", MB_INTS(6, 3, 4, 4));
    assert_shape(g, "n", "[]");
    assert_values(g, "n", MB_INTS(6));
    assert_shape(g, "n1", "[1]");
    assert_values(g, "n1", MB_INTS(6));
    assert_values(g, "target", MB_INTS(6, -1));
    assert_shape(g, "y", "[6, 48]");
    static const char *consts[] = {"s", "n", "n1", "m1", "target"};
    for (int i = 0; i < 5; i++) assert_int_equal(fx_tensor(g, consts[i])->kind, IR_KIND_CONSTANT);
    assert_int_equal(fx_tensor(g, "y")->kind, IR_KIND_ACTIVATION);
}

static void test_unsqueeze_opset11_attribute(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(11);
    mb_input(m, "x", MB_FLOAT, "3,4");
    Onnx__NodeProto *n = mb_node(m, "Unsqueeze", "unsq", "x", "y");
    mb_attr_ints(m, n, "axes", MB_INTS(0, 3));
    n = mb_node(m, "Unsqueeze", "unsq_neg", "x", "z");
    mb_attr_ints(m, n, "axes", MB_INTS(-1));
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[1, 3, 4, 1]");
    assert_shape(g, "z", "[3, 4, 1]");
}

static void test_unsqueeze_opset13_input(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "3,4");
    mb_init_int64s(m, "axes", MB_DIMS(2), MB_INTS(1, -1));
    mb_node(m, "Unsqueeze", "unsq", "x,axes", "y");
    mb_output(m, "y");
    assert_shape(infer_ok(f), "y", "[3, 1, 4, 1]");
}

/* At opset 13 the axes are an input: an attribute alone is not enough. */
static void test_unsqueeze_opset13_needs_input(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "3,4");
    Onnx__NodeProto *n = mb_node(m, "Unsqueeze", "unsq", "x", "y");
    mb_attr_ints(m, n, "axes", MB_INTS(0));
    mb_output(m, "y");
    infer_fails(f, "'unsq'");
}

static void test_reshape_zero_and_minus_one(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3,4");
    mb_init_int64s(m, "s1", MB_DIMS(2), MB_INTS(0, -1));
    mb_init_int64s(m, "s2", MB_DIMS(2), MB_INTS(-1, 4));
    mb_init_int64s(m, "s3", MB_DIMS(4), MB_INTS(0, 0, 2, 2));
    mb_node(m, "Reshape", "r1", "x,s1", "y1");
    mb_node(m, "Reshape", "r2", "x,s2", "y2");
    mb_node(m, "Reshape", "r3", "x,s3", "y3");
    mb_output(m, "y1");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y1", "[2, 12]");
    assert_shape(g, "y2", "[6, 4]");
    assert_shape(g, "y3", "[2, 3, 2, 2]");
}

static void test_reshape_bad_count(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3,4");
    mb_init_int64s(m, "s", MB_DIMS(2), MB_INTS(5, 5));
    mb_node(m, "Reshape", "bad_reshape", "x,s", "y");
    mb_output(m, "y");
    infer_fails(f, "cannot reshape");
    assert_contains(f->err.msg, "'x'");
    assert_contains(f->err.msg, "24 elements");
    assert_contains(f->err.msg, "25 elements");
    assert_contains(f->err.msg, "'bad_reshape'");
}

static void test_gather_negative_index(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    Onnx__NodeProto *k = mb_node(m, "Constant", "k", "", "data");
    mb_attr_ints(m, k, "value_ints", MB_INTS(10, 20, 30));
    mb_init_int64s(m, "last", MB_SCALAR, MB_INTS(-1));
    mb_node(m, "Gather", "g_last", "data,last", "v");
    /* on an activation: indices (1) along axis 1 */
    mb_input(m, "x", MB_FLOAT, "2,3,4");
    mb_init_int64s(m, "idx", MB_DIMS(1), MB_INTS(-2));
    Onnx__NodeProto *n = mb_node(m, "Gather", "g_axis1", "x,idx", "y");
    mb_attr_int(m, n, "axis", 1);
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "v", "[]");
    assert_values(g, "v", MB_INTS(30));
    assert_shape(g, "y", "[2, 1, 4]");
}

static void test_gather_index_out_of_range(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    Onnx__NodeProto *k = mb_node(m, "Constant", "k", "", "data");
    mb_attr_ints(m, k, "value_ints", MB_INTS(10, 20, 30));
    mb_init_int64s(m, "far", MB_SCALAR, MB_INTS(-4));
    mb_node(m, "Gather", "g_far", "data,far", "v");
    mb_output(m, "v");
    infer_fails(f, "index -4 out of range");
}

/* ---- hostile attribute values: an error naming the node, never an overflow ---- */

static void test_pad_overflow(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,2,5,5");
    mb_init_int64s(m, "pads", MB_DIMS(8), MB_INTS(0, 0, INT64_MAX, 0, 0, 0, 5, 0));
    mb_node(m, "Pad", "huge_pad", "x,pads", "y");
    mb_output(m, "y");
    infer_fails(f, "'huge_pad'");
}

static void test_window_overflow(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,2,5,5");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(4, 2, 3, 3));
    Onnx__NodeProto *n = mb_node(m, "Conv", "huge_dilation", "x,w", "y");
    mb_attr_ints(m, n, "dilations", MB_INTS(INT64_MAX, 1));
    mb_output(m, "y");
    infer_fails(f, "'huge_dilation'");
}

static void test_conv_transpose_overflow(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,2,5,5");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(2, 2, 3, 3));
    Onnx__NodeProto *n = mb_node(m, "ConvTranspose", "huge_opad", "x,w", "y");
    mb_attr_ints(m, n, "output_padding", MB_INTS(INT64_MAX, 0));
    mb_output(m, "y");
    infer_fails(f, "'huge_opad'");
}

/* ---- Swin's and MaxViT's glue: GatherND, ScatterND, Max; Einsum lowered ---- */

/* GatherND of a parameter (a bias table) at plan-time one-coordinate indices is
 * the Gather it is: the node's op, its squeezed constant indices, the shape. */
static void test_gather_nd_param_becomes_gather(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "4,3");
    mb_init_floats(m, "table", MB_DIMS(5, 3), 15,
                   (const float[15]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
    mb_init_int64s(m, "index", MB_DIMS(4, 1), 4, (const int64_t[]){4, 0, -1, 2});
    mb_node(m, "GatherND", "bias", "table,index", "b");
    mb_node(m, "Add", "add", "x,b", "y");
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "b", "[4, 3]");
    const ir_node *n = &g->nodes[fx_tensor(g, "b")->producer];
    assert_int_equal(n->op, OP_GATHER);
    assert_string_equal(n->op_type, "Gather");
    assert_string_equal(g->tensors[n->inputs[0]].name, "table");
    assert_values(g, g->tensors[n->inputs[1]].name, 4, (const int64_t[]){4, 0, 4, 2});
    assert_int_equal(fx_tensor(g, "table")->kind, IR_KIND_PARAMETER);
}

/* Output ranks past IR_MAX_RANK are refused before anything is written. */
static void test_gather_nd_rank_too_large(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "1,1,1,1,1,1,1,1");
    mb_init(m, "table", MB_FLOAT, MB_DIMS(2, 1, 1, 1, 1, 1, 1, 1));
    mb_init_int64s(m, "index", MB_DIMS(1, 1, 1, 1, 1, 1, 1, 1), 1, (const int64_t[]){1});
    mb_node(m, "GatherND", "deep", "table,index", "b");
    mb_node(m, "Add", "add", "x,b", "y");
    mb_output(m, "y");
    infer_fails(f, "output rank 14 is too large");
}

/* ScatterND of constants folds (reduction none and add); run-time data is refused. */
static void test_scatter_nd_folds(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(16);
    mb_init_int64s(m, "zeros", MB_DIMS(2, 3), 6, (const int64_t[]){0, 0, 0, 1, 1, 1});
    mb_init_int64s(m, "rows", MB_DIMS(2, 1), 2, (const int64_t[]){1, -2});
    mb_init_int64s(m, "upd", MB_DIMS(2, 3), 6, (const int64_t[]){7, 8, 9, 4, 5, 6});
    mb_node(m, "ScatterND", "set", "zeros,rows,upd", "s");
    Onnx__NodeProto *a = mb_node(m, "ScatterND", "acc", "zeros,rows,upd", "t");
    mb_attr_string(m, a, "reduction", "add");
    mb_node(m, "Max", "max", "s,t", "u");
    mb_output(m, "u");
    ir_graph *g = infer_ok(f);
    assert_values(g, "s", 6, (const int64_t[]){4, 5, 6, 7, 8, 9});
    assert_values(g, "t", 6, (const int64_t[]){4, 5, 6, 8, 9, 10});
    assert_values(g, "u", 6, (const int64_t[]){4, 5, 6, 8, 9, 10});
}

/* A Sin without its input is refused by its arity, after the gradient-flow pass that
 * reads Sin's input first has skipped it (fuzz_import: crash-sin-without-input, an input
 * index -1 read from the flow table under ASan). */
static void test_sin_without_input(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3");
    mb_node(m, "Sin", "s", "", "y");
    mb_node(m, "Add", "a", "x,y", "z");
    mb_output(m, "z");
    infer_fails(f, "node 's' (Sin, opset 13): has 0 inputs");
}

/* Flatten of a plan-time value is one (BART's legacy export flattens its causal mask's
 * table, then gathers and compares it at plan time), and GatherElements, CumSum and
 * GreaterOrEqual fold on it. */
static void test_flatten_folds(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(17);
    mb_init_int64s(m, "table", MB_DIMS(2, 1, 3), 6, (const int64_t[]){1, 2, 3, 4, 5, 6});
    mb_init_int64s(m, "at", MB_DIMS(2, 2), 4, (const int64_t[]){2, 0, 1, -1});
    mb_init_int64s(m, "axis", MB_DIMS(1), 1, (const int64_t[]){1});
    mb_init_int64s(m, "three", MB_DIMS(1), 1, (const int64_t[]){3});
    Onnx__NodeProto *fl = mb_node(m, "Flatten", "flat", "table", "f");
    mb_attr_int(m, fl, "axis", 1);
    Onnx__NodeProto *ge = mb_node(m, "GatherElements", "pick", "f,at", "p");
    mb_attr_int(m, ge, "axis", 1);
    mb_node(m, "CumSum", "run", "p,axis", "c");
    mb_node(m, "GreaterOrEqual", "ge", "c,three", "y");
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_values(g, "f", 6, (const int64_t[]){1, 2, 3, 4, 5, 6});
    assert_values(g, "p", 4, (const int64_t[]){3, 1, 5, 6});
    assert_values(g, "c", 4, (const int64_t[]){3, 4, 5, 11});
    const ir_tensor *y = fx_tensor(g, "y");
    assert_true(op_is_value(y) && y->dtype == IR_DTYPE_BOOL);
    const uint8_t *b = y->data;
    assert_true(b[0] == 1 && b[1] == 1 && b[2] == 1 && b[3] == 1);
}

/* ScatterND of run-time data runs as a kernel (y like x, not a plan-time value)
 * when its indices are plan-time values, each row once, and reduction is none, or indices
 * computed at run time (unchecked) and reduction none; with plan-time indices and
 * reduction add it becomes a scatter-add (Add of GatherGrad: rows may repeat); otherwise it
 * is refused, named. `rows` holds the index rows, `red` the reduction. */
static int scatter_nd_run_time(fixture *f, int n_rows, const int64_t *rows, const char *red,
                               bool runtime_indices) {
    ir_graph_free(f->g), mb_free(f->m); /* the previous case's */
    f->g = NULL;
    mb_model *m = f->m = mb_new(16);
    mb_input(m, "x", MB_FLOAT, "3,2");
    if (runtime_indices) mb_input(m, "rows", MB_INT64, n_rows == 1 ? "1,1" : "2,1");
    else mb_init_int64s(m, "rows", MB_DIMS(n_rows, 1), n_rows, rows);
    mb_init_floats(m, "upd", MB_DIMS(n_rows, 2), 2 * n_rows, (const float[4]){1, 2, 3, 4});
    Onnx__NodeProto *n = mb_node(m, "ScatterND", "set", "x,rows,upd", "y");
    if (red) mb_attr_string(m, n, "reduction", red);
    mb_output(m, "y");
    return fx_infer(f, 0);
}

static void test_scatter_nd_run_time(void **state) {
    fixture *f = *state;
    if (scatter_nd_run_time(f, 2, (const int64_t[]){2, -3}, NULL, false))
        fail_msg("inference failed: %s", f->err.msg);
    assert_shape(f->g, "y", "[3, 2]");
    assert_true(fx_tensor(f->g, "y")->kind != IR_KIND_CONSTANT);
    /* reduction add, a row twice: x + the updates scatter-added, y written by the Add */
    if (scatter_nd_run_time(f, 2, (const int64_t[]){1, 1}, "add", false))
        fail_msg("inference failed: %s", f->err.msg);
    assert_shape(f->g, "y", "[3, 2]");
    const ir_tensor *y = fx_tensor(f->g, "y");
    assert_true(y->kind != IR_KIND_CONSTANT && y->producer >= 0);
    assert_int_equal(f->g->nodes[y->producer].op, OP_ADD);
    bool scattered = false;
    for (int i = 0; i < f->g->n_nodes; i++) scattered |= f->g->nodes[i].op == OP_GATHER_GRAD;
    assert_true(scattered);
    /* indices computed at run time (an integer input here), reduction none: the kernel */
    if (scatter_nd_run_time(f, 2, NULL, NULL, true)) fail_msg("inference failed: %s", f->err.msg);
    y = fx_tensor(f->g, "y");
    assert_true(y->kind != IR_KIND_CONSTANT && f->g->nodes[y->producer].op == OP_SCATTER_ND);
    static const struct {
        int n;
        int64_t rows[2];
        const char *red, *why;
        bool runtime_indices;
    } bad[] = {
        {2, {1, 1}, NULL, "row 1 repeats an earlier row", false},
        {2, {0, -3}, NULL, "row 1 repeats an earlier row", false}, /* -3: row 0 */
        {1, {3}, NULL, "coordinate 3 is outside data 'x'", false},
        {1, {0}, "mul", "with a reduction on run-time data", false},
        {1,
         {0},
         "add",
         "reduction add at indices computed at run time ('rows')",
         true}, /* host's */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (scatter_nd_run_time(f, bad[i].n, bad[i].rows, bad[i].red, bad[i].runtime_indices) ==
            OC_OK)
            fail_msg("case %zu: inference succeeded; expected \"%s\"", i, bad[i].why);
        assert_contains(f->err.msg, bad[i].why);
        assert_contains(f->err.msg, "'set'");
    }
}

/* Transpose's perm of the wrong length is refused before it is read. */
static void test_transpose_perm_length(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "x", MB_FLOAT, "2,3");
    Onnx__NodeProto *n = mb_node(m, "Transpose", "t", "x", "y");
    mb_attr_ints(m, n, "perm", 0, NULL);
    mb_output(m, "y");
    infer_fails(f, "perm has 0 values for rank 2");
}

/* Einsum is rewritten at load: MaxViT's q k^T is one MatMul after a Transpose; the
 * Einsum node itself becomes the MatMul (its name kept), the Transpose is named after it. */
static void test_einsum_lowered(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "q", MB_FLOAT, "2,3,4,5,8");
    mb_input(m, "k", MB_FLOAT, "2,3,4,6,8");
    Onnx__NodeProto *n = mb_node(m, "Einsum", "scores", "q,k", "y");
    mb_attr_string(m, n, "equation", "B G H I D, B G H J D -> B G H I J");
    mb_output(m, "y");
    ir_graph *g = infer_ok(f);
    assert_shape(g, "y", "[2, 3, 4, 5, 6]");
    int ops[OP__COUNT] = {0};
    for (int i = 0; i < g->n_nodes; i++) ops[g->nodes[i].op]++;
    assert_int_equal(g->n_nodes, 2);
    assert_int_equal(ops[OP_TRANSPOSE], 1);
    assert_int_equal(ops[OP_MATMUL], 1);
    assert_string_equal(g->nodes[fx_tensor(g, "y")->producer].name, "scores");
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == OP_TRANSPOSE)
            assert_true(strncmp(g->nodes[i].name, "scores/", 7) == 0);
}

/* Every tensor's producer and consumers are the nodes that write and read it, and every
 * node reads only what an earlier node (or no node) writes. */
static void assert_wired(const ir_graph *g) {
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) assert_int_equal(g->tensors[n->outputs[k]].producer, i);
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] < 0) continue;
            const ir_tensor *t = &g->tensors[n->inputs[k]];
            assert_true(t->producer < i);
            bool listed = false;
            for (int c = 0; c < t->n_consumers; c++) listed = listed || t->consumers[c] == i;
            assert_true(listed);
        }
    }
}

/* An LSTM is unrolled at load (op_rnn.c): between a node before it and one after, its
 * steps' nodes in order, the LSTM node itself writing its last present output (Y_h). With
 * no initial state the first step of each direction has no recurrent MatMul and no forget
 * gate: 2 directions x (1 projection + 2 recurrent) MatMuls, 2 x (2 + 3 + 3) Sigmoids. */
static void test_lstm_unrolled(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(14);
    mb_input(m, "x", MB_FLOAT, "3,2,4");
    mb_init(m, "w", MB_FLOAT, MB_DIMS(2, 20, 4));
    mb_init(m, "r", MB_FLOAT, MB_DIMS(2, 20, 5));
    mb_init(m, "b", MB_FLOAT, MB_DIMS(2, 40));
    mb_node(m, "Relu", "before", "x", "xr");
    Onnx__NodeProto *n = mb_node(m, "LSTM", "lstm", "xr,w,r,b", "y,y_h");
    mb_attr_int(m, n, "hidden_size", 5);
    mb_attr_string(m, n, "direction", "bidirectional");
    mb_node(m, "Relu", "after", "y_h", "z");
    mb_output(m, "y");
    mb_output(m, "z");
    if (fx_infer(f, 0)) fail_msg("%s", f->err.msg);
    ir_graph *g = f->g;
    assert_shape(g, "y", "[3, 2, 2, 5]");
    assert_shape(g, "z", "[2, 2, 5]");
    int ops[OP__COUNT] = {0};
    for (int i = 0; i < g->n_nodes; i++) ops[g->nodes[i].op]++;
    assert_int_equal(ops[OP_LSTM], 0);
    assert_int_equal(ops[OP_MATMUL], 6);
    assert_int_equal(ops[OP_SIGMOID], 16);
    assert_string_equal(g->nodes[0].name, "before");
    assert_string_equal(g->nodes[g->n_nodes - 1].name, "after");
    assert_int_equal(fx_tensor(g, "y_h")->producer, g->n_nodes - 2);
    assert_string_equal(g->nodes[g->n_nodes - 2].name, "lstm");
    assert_wired(g);
}

/* MViTv2's relative positions: four free indices beside a batch index are merged
 * into MatMul's rows by Reshapes whose shapes fold from the operands' (the batch a
 * symbol bound at load); every shape computation is a plan-time value. */
static void test_einsum_merged(void **state) {
    fixture *f = *state;
    mb_model *m = f->m = mb_new(13);
    mb_input(m, "q", MB_FLOAT, "N,2,3,4,5,8");
    mb_input(m, "rh", MB_FLOAT, "4,7,8");
    Onnx__NodeProto *n = mb_node(m, "Einsum", "rel_h", "q,rh", "y");
    mb_attr_string(m, n, "equation", "bythwc,hkc->bythwk");
    mb_output(m, "y");
    if (fx_infer(f, 2)) fail_msg("inference failed: %s", f->err.msg); /* N = 2 */
    ir_graph *g = f->g;
    assert_shape(g, "y", "[2, 2, 3, 4, 5, 7]");
    int ops[OP__COUNT] = {0}, runs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *k = &g->nodes[i];
        ops[k->op]++;
        bool folded = g->tensors[k->outputs[0]].kind == IR_KIND_CONSTANT;
        assert_true(folded == (k->op == OP_SHAPE || k->op == OP_GATHER || k->op == OP_MUL ||
                               k->op == OP_CONCAT));
        runs += !folded;
    }
    assert_int_equal(ops[OP_MATMUL], 1);
    assert_int_equal(ops[OP_RESHAPE], 3); /* both operands, the result */
    assert_int_equal(runs, 1 + 3 + 3);    /* and 3 Transposes: q, rh, the result */
}

/* ---- FusedAttention's causal attribute: verified against its mask ---- */

/* A FusedAttention over Q, K, V [1, 2, 6, 4] with a [6, 6] bool mask value
 * (masked where cond), fill and causal as given; the mask true above the
 * diagonal, except element (r, c) flipped when r >= 0. Returns op_infer's
 * result, the message in err. */
static int attention_infer(float fill, int causal, int r, int c, oc_err *err) {
    ir_graph *g = ir_graph_new();
    int64_t qd[4] = {1, 2, 6, 4}, md[2] = {6, 6};
    int n = op_node_add(g, "att", OP_FUSED_ATTENTION);
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        int t = ir_tensor_add(g, names[i], IR_DTYPE_FLOAT);
        ir_tensor_set_shape(&g->tensors[t], 4, qd);
        ir_node_add_input(g, n, t);
    }
    uint8_t mask[36];
    for (int i = 0; i < 36; i++) mask[i] = i % 6 > i / 6;
    if (r >= 0) mask[r * 6 + c] ^= 1;
    int m = ir_tensor_add(g, "cond", IR_DTYPE_BOOL);
    ir_tensor_set_shape(&g->tensors[m], 2, md);
    ir_tensor_set_data(&g->tensors[m], mask, sizeof mask);
    g->tensors[m].is_initializer = true, g->tensors[m].kind = IR_KIND_CONSTANT;
    ir_node_add_input(g, n, m);
    ir_node_add_output(g, n, ir_tensor_add(g, "y", IR_DTYPE_FLOAT));
    ir_node_add_output(g, n, ir_tensor_add(g, "lse", IR_DTYPE_FLOAT));
    ir_attr a[3] = {{.name = "mask", .type = IR_ATTR_INT, .i = 1},
                    {.name = "fill", .type = IR_ATTR_FLOAT, .f = fill},
                    {.name = "causal", .type = IR_ATTR_INT, .i = causal}};
    for (int i = 0; i < 3; i++) ir_node_add_attr(g, n, &a[i]);
    int rc = op_infer(g, &g->nodes[n], err);
    ir_graph_free(g);
    return rc;
}

static void test_attention_causal_verified(void **state) {
    (void)state;
    oc_err err = {0};
    assert_int_equal(attention_infer(-INFINITY, 1, -1, 0, &err), OC_OK);
    assert_int_equal(attention_infer(-3.4e38f, 1, -1, 0, &err), OC_OK);
    assert_int_equal(attention_infer(-1.0f, 0, 2, 1, &err), OC_OK); /* not claimed: any mask */
    /* claimed, but a masked score would not be 0, or the mask is not causal */
    assert_int_equal(attention_infer(-1e4f, 1, -1, 0, &err), OC_ERR);
    assert_contains(err.msg, "causal needs");
    assert_int_equal(attention_infer(-INFINITY, 1, 2, 1, &err), OC_ERR); /* (2, 1) masked */
    assert_contains(err.msg, "'cond'");
    assert_int_equal(attention_infer(-INFINITY, 1, 3, 5, &err), OC_ERR); /* (3, 5) kept */
    assert_contains(err.msg, "above the diagonal");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_conv_pads_strides),
        T(test_conv_dilations),
        T(test_conv_group),
        T(test_conv_auto_pad),
        T(test_conv_channel_mismatch),
        T(test_conv_zero_bias_of_other_shape),
        T(test_conv_nonzero_bias_of_other_shape),
        T(test_conv_transpose),
        T(test_conv_transpose_output_padding),
        T(test_bn_opset13_five_outputs),
        T(test_bn_opset15_training_mode),
        T(test_bn_opset15_five_outputs_error),
        T(test_bn_opset15_stats_without_training_mode),
        T(test_max_pool),
        T(test_max_pool_indices),
        T(test_average_pool),
        T(test_pool_window_too_large),
        T(test_global_average_pool),
        T(test_gemm_trans_b_bias),
        T(test_gemm_errors),
        T(test_flatten),
        T(test_add_broadcast),
        T(test_add_broadcast_error),
        T(test_dropout_mask),
        T(test_dropout_ratio_not_constant),
        T(test_clip_min_max_inputs),
        T(test_pad_input),
        T(test_pad_attribute_opset9),
        T(test_pad_wrong_count),
        T(test_constant),
        T(test_shape_subgraph_folds),
        T(test_unsqueeze_opset11_attribute),
        T(test_unsqueeze_opset13_input),
        T(test_unsqueeze_opset13_needs_input),
        T(test_reshape_zero_and_minus_one),
        T(test_reshape_bad_count),
        T(test_gather_negative_index),
        T(test_gather_index_out_of_range),
        T(test_pad_overflow),
        T(test_window_overflow),
        T(test_conv_transpose_overflow),
        T(test_gather_nd_param_becomes_gather),
        T(test_gather_nd_rank_too_large),
        T(test_sin_without_input),
        T(test_flatten_folds),
        T(test_scatter_nd_folds),
        T(test_scatter_nd_run_time),
        T(test_transpose_perm_length),
        T(test_einsum_lowered),
        T(test_einsum_merged),
        T(test_lstm_unrolled),
        cmocka_unit_test(test_attention_causal_verified),
    };
    return cmocka_run_group_tests_name("shapes", tests, NULL, NULL);
}
