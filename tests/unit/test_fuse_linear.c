/* test_fuse_linear.c — the exporters' Linear layer as one node
 * (train/fuse_linear.h): MatMul(X, Transpose(W)) -> Add(., B) as Linear(X, W, B)
 * trans_w 1, with the bias on either side of the Add and on X of rank 3; without
 * a bias; MatMul(X, W) -> Add as trans_w 0; and what stays: a MatMul of a plain W
 * without a bias, a transposed W another node reads too, a W computed at run time,
 * a bias that is not a vector of the output's last dim, a MatMul output read twice.
 * A saved model writes the chain back under its own names (onnx_export unfuse). */
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
#include "train/fuse_linear.h"

static int tensor(ir_graph *g, const char *name, int rank, const int64_t *d, bool init) {
    int t = ir_tensor_add(g, name, IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[t], rank, d);
    if (init) {
        static const float zeros[64];
        int64_t n = 1;
        for (int i = 0; i < rank; i++) n *= d[i];
        ir_tensor_set_data(&g->tensors[t], zeros, (size_t)n * sizeof(float));
        g->tensors[t].is_initializer = true;
        g->tensors[t].kind = IR_KIND_PARAMETER;
    } else {
        g->tensors[t].kind = IR_KIND_INPUT;
        ir_graph_add_input(g, t);
    }
    return t;
}

/* X [2, 3, 8] (rank 3: a sequence's rows), W [6, 8] as nn.Linear stores it, B [6]. */
static ir_graph *graph(int *x, int *w, int *b) {
    ir_graph *g = ir_graph_new();
    g->opset = 17;
    g->model_path = oc_strdup("test");
    int64_t dx[] = {2, 3, 8}, dw[] = {6, 8}, db[] = {6};
    *x = tensor(g, "x", 3, dx, false);
    *w = tensor(g, "w", 2, dw, true);
    *b = tensor(g, "b", 1, db, true);
    return g;
}

static int fuse(ir_graph *g, int y) {
    ir_graph_add_output(g, y);
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("infer: %s", err.msg);
    int n;
    if (fuse_linear(g, &n, &err)) fail_msg("fuse_linear: %s", err.msg);
    return n;
}

static void test_transposed_weight_and_bias(void **state) {
    (void)state;
    for (int first = 0; first < 2; first++) {
        int x, w, b;
        ir_graph *g = graph(&x, &w, &b);
        int wt = op(g, "fc/Transpose", "Transpose", w, END);
        int64_t perm[] = {1, 0};
        ir_attr pa = {.name = "perm", .type = IR_ATTR_INTS, .n = 2, .ints = perm};
        ir_node_add_attr(g, g->tensors[wt].producer, &pa);
        int m = op(g, "fc/MatMul", "MatMul", x, wt, END);
        int y = first ? op(g, "fc/Add", "Add", b, m, END) : op(g, "fc/Add", "Add", m, b, END);
        assert_int_equal(fuse(g, y), 1);
        assert_int_equal(g->n_nodes, 1);
        const ir_node *n = find(g, OP_LINEAR);
        assert_non_null(n);
        assert_string_equal(n->name, "fc/MatMul/linear");
        assert_string_equal(n->domain, OC_DOMAIN);
        assert_int_equal(ir_attr_int(n, "trans_w", 0), 1);
        assert_int_equal(ir_attr_int(n, "bias_first", 0), first);
        assert_int_equal(ir_attr_find(n, "members")->n, 3);
        assert_string_equal(ir_attr_string(n, "transpose_output", ""), "fc/Transpose_y");
        assert_string_equal(ir_attr_string(n, "matmul_output", ""), "fc/MatMul_y");
        assert_string_equal(g->tensors[n->inputs[1]].name, "w");
        assert_string_equal(g->tensors[n->inputs[2]].name, "b");
        const ir_tensor *yt = &g->tensors[n->outputs[0]];
        assert_string_equal(yt->name, "fc/Add_y");
        assert_int_equal(yt->rank, 3);
        assert_int_equal(yt->dims[2], 6);
        /* saved: the chain again, under its names */
        ir_graph *back = saved_and_reloaded(g);
        assert_int_equal(back->n_nodes, 3);
        assert_int_equal(count(back, OP_TRANSPOSE), 1);
        assert_int_equal(count(back, OP_MATMUL), 1);
        assert_int_equal(count(back, OP_ADD), 1);
        const ir_node *add = find(back, OP_ADD);
        assert_string_equal(back->tensors[add->inputs[first ? 0 : 1]].name, "b");
        assert_string_equal(back->tensors[add->outputs[0]].name, "fc/Add_y");
        ir_graph_free(back);
        ir_graph_free(g);
    }
}

static void test_no_bias_and_plain_weight(void **state) {
    (void)state;
    int x, w, b;
    ir_graph *g = graph(&x, &w, &b); /* a tied head: the Transpose alone, no bias */
    int wt = op(g, "head/Transpose", "Transpose", w, END);
    assert_int_equal(fuse(g, op(g, "head/MatMul", "MatMul", x, wt, END)), 1);
    const ir_node *n = find(g, OP_LINEAR);
    assert_int_equal(n->n_inputs, 2);
    assert_null(ir_attr_find(n, "matmul_output"));
    assert_int_equal(ir_attr_find(n, "members")->n, 2);
    ir_graph_free(g);

    /* W (K, N) read directly, a bias after it: trans_w 0 */
    g = ir_graph_new();
    g->opset = 17;
    int64_t dx[] = {5, 8}, dw[] = {8, 6}, db[] = {6};
    x = tensor(g, "x", 2, dx, false), w = tensor(g, "w", 2, dw, true);
    b = tensor(g, "b", 1, db, true);
    int m = op(g, "fc/MatMul", "MatMul", x, w, END);
    assert_int_equal(fuse(g, op(g, "fc/Add", "Add", m, b, END)), 1);
    n = find(g, OP_LINEAR);
    assert_int_equal(ir_attr_int(n, "trans_w", 1), 0);
    assert_null(ir_attr_find(n, "transpose_output"));
    ir_graph_free(g);

    /* W (K, N) without a bias: nothing to gain, the MatMul stays */
    g = ir_graph_new();
    g->opset = 17;
    x = tensor(g, "x", 2, dx, false), w = tensor(g, "w", 2, dw, true);
    assert_int_equal(fuse(g, op(g, "fc/MatMul", "MatMul", x, w, END)), 0);
    assert_int_equal(count(g, OP_MATMUL), 1);
    ir_graph_free(g);
}

static void test_what_stays(void **state) {
    (void)state;
    int x, w, b;
    /* the transposed W read by another node too: the MatMul's W is then a computed tensor */
    ir_graph *g = graph(&x, &w, &b);
    int wt = op(g, "fc/Transpose", "Transpose", w, END);
    int m = op(g, "fc/MatMul", "MatMul", x, wt, END);
    ir_graph_add_output(g, op(g, "other", "Relu", wt, END));
    assert_int_equal(fuse(g, op(g, "fc/Add", "Add", m, b, END)), 0);
    assert_int_equal(count(g, OP_TRANSPOSE) + count(g, OP_MATMUL) + count(g, OP_ADD), 3);
    ir_graph_free(g);

    /* W computed at run time (an activation): not a Linear */
    g = graph(&x, &w, &b);
    int wr = op(g, "w/Relu", "Relu", w, END);
    wt = op(g, "fc/Transpose", "Transpose", wr, END);
    m = op(g, "fc/MatMul", "MatMul", x, wt, END);
    assert_int_equal(fuse(g, op(g, "fc/Add", "Add", m, b, END)), 0);
    ir_graph_free(g);

    /* a bias of the wrong length, and a MatMul output read twice: the Transpose alone */
    g = ir_graph_new();
    g->opset = 17;
    int64_t dx[] = {2, 3, 8}, dw[] = {6, 8}, d1[] = {1};
    x = tensor(g, "x", 3, dx, false), w = tensor(g, "w", 2, dw, true);
    int b1 = tensor(g, "b1", 1, d1, true);
    wt = op(g, "fc/Transpose", "Transpose", w, END);
    m = op(g, "fc/MatMul", "MatMul", x, wt, END);
    ir_graph_add_output(g, op(g, "fc/Add", "Add", m, b1, END));
    assert_int_equal(fuse(g, m), 1);
    const ir_node *n = find(g, OP_LINEAR);
    assert_int_equal(n->n_inputs, 2);
    assert_int_equal(count(g, OP_ADD), 1);
    ir_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transposed_weight_and_bias),
        cmocka_unit_test(test_no_bias_and_plain_weight),
        cmocka_unit_test(test_what_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
