/* test_fuse_gelu.c — decomposed GELUs fused as one Gelu (train/fuse_gelu.h):
 * the tanh form in GPT-2's order and in others (0.5 x first, Pow(x, 3),
 * x (0.5 + 0.5 t)), the erf form (Div or Mul by 1/sqrt(2)); not a wrong
 * constant, an intermediate read outside, or a lone Tanh. Through
 * train_build: Gelu + GeluGrad, the notice, --no-fuse keeping the chain;
 * the domain by opset; a saved model (unfuse) below opset 20 written back
 * decomposed, fusing again to the same node on reload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ir/onnx_export.h"
#include "ir/ops/op_table.h"
#include "ir/shape_infer.h"
#include "fuse_graph.h"
#include "train/fuse_gelu.h"
#include "train/train_graph.h"

/* A scalar as exporters write it: a Constant node. */
static int k(ir_graph *g, const char *name, float v) {
    int n = ir_node_add(g, name, "Constant", "");
    g->nodes[n].op = op_lookup("", "Constant");
    ir_attr a = {.name = "value_float", .type = IR_ATTR_FLOAT, .f = v};
    ir_node_add_attr(g, n, &a);
    char buf[128];
    snprintf(buf, sizeof buf, "%s_y", name);
    int y = ir_tensor_add(g, buf, IR_DTYPE_UNDEFINED);
    ir_node_add_output(g, n, y);
    return y;
}

/* input [4, 8] + bias [8] = x, the GELU's input (it has a gradient). */
static ir_graph *graph_x(int64_t opset, int *x) {
    ir_graph *g = ir_graph_new();
    g->opset = opset;
    g->model_path = oc_strdup("test");
    int64_t d[] = {4, 8}, bd = 8;
    int in = ir_tensor_add(g, "input", IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[in], 2, d);
    g->tensors[in].kind = IR_KIND_INPUT;
    ir_graph_add_input(g, in);
    int b = ir_tensor_add(g, "bias", IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[b], 1, &bd);
    float zeros[8] = {0};
    ir_tensor_set_data(&g->tensors[b], zeros, sizeof zeros);
    g->tensors[b].is_initializer = true;
    *x = op(g, "fc", "Add", in, b, END);
    return g;
}

/* torch.onnx (opset < 20), GELU(approximate="tanh"): GPT-2's order; c3 the
 * cube's coefficient; *t the Tanh's output. */
static int gelu_gpt2(ir_graph *g, int x, float c3, int *t) {
    int m = op(g, "act/Mul", "Mul", x, x, END);
    int m1 = op(g, "act/Mul_1", "Mul", x, m, END);
    int m2 = op(g, "act/Mul_2", "Mul", k(g, "act/c0", c3), m1, END);
    int a = op(g, "act/Add", "Add", x, m2, END);
    int m3 = op(g, "act/Mul_3", "Mul", k(g, "act/c1", 0.7978846f), a, END);
    *t = op(g, "act/Tanh", "Tanh", m3, END);
    int a1 = op(g, "act/Add_1", "Add", k(g, "act/c2", 1.0f), *t, END);
    int m4 = op(g, "act/Mul_4", "Mul", x, a1, END);
    return op(g, "act/Mul_5", "Mul", k(g, "act/c3", 0.5f), m4, END);
}

/* 0.5 x first, Pow(x, 3), x + c x^3 the other way round. */
static int gelu_pow(ir_graph *g, int x) {
    int h = op(g, "g/half", "Mul", k(g, "g/c0", 0.5f), x, END);
    int p = op(g, "g/Pow", "Pow", x, k(g, "g/c1", 3.0f), END);
    int m = op(g, "g/Mul", "Mul", p, k(g, "g/c2", 0.044715f), END);
    int s = op(g, "g/Add", "Add", m, x, END);
    int u = op(g, "g/Mul_1", "Mul", s, k(g, "g/c3", 0.7978846f), END);
    int t = op(g, "g/Tanh", "Tanh", u, END);
    int v = op(g, "g/Add_1", "Add", k(g, "g/c4", 1.0f), t, END);
    return op(g, "g/Mul_2", "Mul", h, v, END);
}

/* x (0.5 + 0.5 tanh(sqrt(2/pi) (x + 0.044715 x^3))), the cube as x*x*x. */
static int gelu_half_t(ir_graph *g, int x) {
    int x2 = op(g, "h/Mul", "Mul", x, x, END);
    int x3 = op(g, "h/Mul_1", "Mul", x2, x, END);
    int s =
        op(g, "h/Add", "Add", x, op(g, "h/Mul_2", "Mul", x3, k(g, "h/c0", 0.044715f), END), END);
    int t = op(g, "h/Tanh", "Tanh", op(g, "h/Mul_3", "Mul", s, k(g, "h/c1", 0.7978846f), END), END);
    int v = op(g, "h/Add_1", "Add", op(g, "h/Mul_4", "Mul", t, k(g, "h/c2", 0.5f), END),
               k(g, "h/c3", 0.5f), END);
    return op(g, "h/Mul_5", "Mul", x, v, END);
}

/* torch.onnx (opset < 20), GELU(): x * 0.5 * (1 + erf(x / sqrt(2))) as BERT's. */
static int gelu_erf_div(ir_graph *g, int x) {
    int d = op(g, "e/Div", "Div", x, k(g, "e/c0", 1.4142135f), END);
    int e = op(g, "e/Erf", "Erf", d, END);
    int a = op(g, "e/Add", "Add", e, k(g, "e/c1", 1.0f), END);
    int m = op(g, "e/Mul", "Mul", x, a, END);
    return op(g, "e/Mul_1", "Mul", m, k(g, "e/c2", 0.5f), END);
}

/* 0.5 x (1 + erf(x * 0.70710678)), 0.5 x first. */
static int gelu_erf_mul(ir_graph *g, int x) {
    int h = op(g, "f/Mul", "Mul", x, k(g, "f/c0", 0.5f), END);
    int e = op(g, "f/Erf", "Erf", op(g, "f/Mul_1", "Mul", k(g, "f/c1", 0.70710678f), x, END), END);
    return op(g, "f/Mul_2", "Mul", op(g, "f/Add", "Add", k(g, "f/c2", 1.0f), e, END), h, END);
}

static int fuse(ir_graph *g, int y) {
    ir_graph_add_output(g, y);
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("infer: %s", err.msg);
    int n;
    if (fuse_gelu(g, &n, &err)) fail_msg("fuse_gelu: %s", err.msg);
    return n;
}

/* One Gelu of this form reading x, writing the graph output, nothing else left. */
static void assert_fused(const ir_graph *g, const char *approximate, int members) {
    const ir_node *n = find(g, OP_GELU);
    assert_non_null(n);
    assert_int_equal(count(g, OP_GELU), 1);
    assert_string_equal(ir_attr_string(n, "approximate", ""), approximate);
    assert_int_equal(ir_attr_find(n, "members")->n, members);
    assert_string_equal(g->tensors[n->inputs[0]].name, "fc_y");
    assert_int_equal(n->outputs[0], g->outputs[0]);
    static const int gone[] = {OP_MUL, OP_TANH, OP_ERF, OP_POW, OP_DIV};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) assert_int_equal(count(g, gone[i]), 0);
    assert_int_equal(count(g, OP_ADD), 1); /* fc */
}

static void test_gpt2_order(void **state) {
    (void)state;
    int x, t;
    ir_graph *g = graph_x(13, &x);
    int y = gelu_gpt2(g, x, 0.044715f, &t);
    char *yname = oc_strdup(g->tensors[y].name);
    assert_int_equal(fuse(g, y), 1);
    assert_fused(g, "tanh", 9);
    const ir_node *n = find(g, OP_GELU);
    assert_string_equal(n->name, "act/Tanh" OP_GELU_FUSED_SUFFIX);
    assert_string_equal(n->domain, OC_DOMAIN); /* opset 13 has no Gelu */
    assert_string_equal(g->tensors[n->outputs[0]].name, yname);
    assert_string_equal(ir_attr_find(n, "members")->strings[0], "act/Mul");
    oc_free(yname);
    ir_graph_free(g);
}

static void test_other_orders(void **state) {
    (void)state;
    int x;
    ir_graph *g = graph_x(17, &x);
    assert_int_equal(fuse(g, gelu_pow(g, x)), 1);
    assert_fused(g, "tanh", 8);
    ir_graph_free(g);
    g = graph_x(17, &x);
    assert_int_equal(fuse(g, gelu_half_t(g, x)), 1);
    assert_fused(g, "tanh", 9);
    ir_graph_free(g);
}

static void test_erf(void **state) {
    (void)state;
    int x;
    ir_graph *g = graph_x(13, &x);
    assert_int_equal(fuse(g, gelu_erf_div(g, x)), 1);
    assert_fused(g, "none", 5);
    assert_string_equal(find(g, OP_GELU)->name, "e/Erf" OP_GELU_FUSED_SUFFIX);
    ir_graph_free(g);
    g = graph_x(20, &x);
    assert_int_equal(fuse(g, gelu_erf_mul(g, x)), 1);
    assert_fused(g, "none", 5);
    assert_string_equal(find(g, OP_GELU)->domain, ""); /* ONNX's Gelu from opset 20 */
    ir_graph_free(g);
}

static void test_near_misses(void **state) {
    (void)state;
    int x, t;
    /* 0.05 for 0.044715: not GELU (1e-3 off at x = 1) */
    ir_graph *g = graph_x(13, &x);
    assert_int_equal(fuse(g, gelu_gpt2(g, x, 0.05f, &t)), 0);
    assert_int_equal(count(g, OP_TANH), 1);
    assert_int_equal(count(g, OP_MUL), 6);
    assert_int_equal(count(g, OP_GELU), 0);
    ir_graph_free(g);
    /* the Tanh's output also read outside (a second graph output through an Add) */
    g = graph_x(13, &x);
    int y = gelu_gpt2(g, x, 0.044715f, &t);
    ir_graph_add_output(g, op(g, "other", "Add", t, x, END));
    assert_int_equal(fuse(g, y), 0);
    assert_int_equal(count(g, OP_TANH), 1);
    assert_int_equal(count(g, OP_GELU), 0);
    ir_graph_free(g);
    /* an intermediate that is itself a graph output */
    g = graph_x(13, &x);
    y = gelu_gpt2(g, x, 0.044715f, &t);
    ir_graph_add_output(g, t);
    assert_int_equal(fuse(g, y), 0);
    ir_graph_free(g);
    /* a lone Tanh; an Erf of x / 2 */
    g = graph_x(13, &x);
    int e = op(g, "e", "Erf", op(g, "d", "Div", x, k(g, "c", 2.0f), END), END);
    ir_graph_add_output(g, op(g, "t", "Tanh", x, END));
    assert_int_equal(
        fuse(g, op(g, "m", "Mul", x, op(g, "a", "Add", e, k(g, "one", 1.0f), END), END)), 0);
    assert_int_equal(count(g, OP_TANH) + count(g, OP_ERF), 2);
    ir_graph_free(g);
}

static train_graph *build(ir_graph *g, int y, train_fuse f) {
    ir_graph_add_output(g, y);
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("infer: %s", err.msg);
    train_opts o = train_opts_default();
    o.fuse = f;
    train_graph *tg;
    if (train_build(g, &o, &tg, &err)) fail_msg("train_build: %s", err.msg);
    return tg;
}

static bool noted(const ir_graph *g, const char *text) {
    for (int i = 0; i < g->n_notes; i++)
        if (strstr(g->notes[i], text)) return true;
    return false;
}

static void test_training_graph(void **state) {
    (void)state;
    int x, t;
    ir_graph *g = graph_x(13, &x);
    train_graph *tg = build(g, gelu_gpt2(g, x, 0.044715f, &t), TRAIN_FUSE_ALL);
    assert_int_equal(count(tg->g, OP_GELU), 1);
    assert_int_equal(count(tg->g, OP_GELU_GRAD), 1);
    assert_int_equal(count(tg->g, OP_TANH) + count(tg->g, OP_TANH_GRAD), 0);
    assert_true(noted(tg->g, "1 GELU chains fused (Gelu)"));
    train_graph_free(tg);
    g = graph_x(13, &x);
    tg = build(g, gelu_erf_div(g, x), TRAIN_FUSE_FORWARD);
    assert_int_equal(count(tg->g, OP_GELU_GRAD), 1);
    train_graph_free(tg);
    g = graph_x(13, &x); /* --no-fuse: the model's own nodes */
    tg = build(g, gelu_gpt2(g, x, 0.044715f, &t), TRAIN_FUSE_NONE);
    assert_int_equal(count(tg->g, OP_GELU) + count(tg->g, OP_GELU_GRAD), 0);
    assert_int_equal(count(tg->g, OP_TANH), 1);
    assert_false(noted(tg->g, "GELU"));
    train_graph_free(tg);
}

/* The fused graph saved (unfuse): below opset 20, the decomposition with
 * Constant nodes, y's name, the Tanh named back; reloaded, it fuses to the
 * same node. From opset 20: one standard Gelu without members. */
static void test_saved_model(void **state) {
    (void)state;
    for (int64_t opset = 13; opset <= 20; opset += 7) {
        int x, t;
        ir_graph *g = graph_x(opset, &x);
        int y = gelu_gpt2(g, x, 0.044715f, &t);
        assert_int_equal(fuse(g, y), 1);
        ir_graph *r = saved_and_reloaded(g);
        oc_err err;
        if (opset < OP_GELU_OPSET) {
            assert_int_equal(count(r, OP_GELU), 0);
            assert_int_equal(count(r, OP_TANH), 1);
            assert_int_equal(count(r, OP_MUL), 6);
            assert_string_equal(find(r, OP_TANH)->name, "act/Tanh");
            assert_string_equal(r->tensors[r->outputs[0]].name, g->tensors[g->outputs[0]].name);
            int n;
            if (fuse_gelu(r, &n, &err)) fail_msg("%s", err.msg);
            assert_int_equal(n, 1);
        } else {
            assert_int_equal(count(r, OP_TANH), 0);
            assert_null(ir_attr_find(find(r, OP_GELU), "members"));
        }
        assert_string_equal(find(r, OP_GELU)->name, "act/Tanh" OP_GELU_FUSED_SUFFIX);
        assert_string_equal(ir_attr_string(find(r, OP_GELU), "approximate", ""), "tanh");
        ir_graph_free(r);
        ir_graph_free(g);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt2_order),
        cmocka_unit_test(test_other_orders),
        cmocka_unit_test(test_erf),
        cmocka_unit_test(test_near_misses),
        cmocka_unit_test(test_training_graph),
        cmocka_unit_test(test_saved_model),
    };
    return cmocka_run_group_tests_name("GELU fusion", tests, NULL, NULL);
}
