/* test_train.c — the training graph: per gradient rule, the saved tensors it
 * reads equal what the op's table entry declares, every gradient has its
 * forward tensor's shape, parameters get exactly one SGD update right after
 * their gradient is final, multi-consumer gradients are summed, BN running
 * statistics are updated in place once, names are deterministic, and the
 * in-core peak equals an independent brute-force liveness count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_update.h"
#include "ir/shape_infer.h"
#include "train/eval_graph.h"
#include "train/train_graph.h"

/* ---- a tiny graph builder over the IR ---- */

static int tensor(ir_graph *g, const char *name, ir_kind kind, int rank, const int64_t *dims) {
    int t = ir_tensor_add(g, name, IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[t], rank, dims);
    g->tensors[t].kind = kind;
    if (kind == IR_KIND_PARAMETER || kind == IR_KIND_STATE) g->tensors[t].is_initializer = true;
    return t;
}

static int param(ir_graph *g, const char *name, int rank, const int64_t *dims) {
    return tensor(g, name, IR_KIND_PARAMETER, rank, dims);
}

static int const_scalar_f(ir_graph *g, const char *name, float v) {
    int t = tensor(g, name, IR_KIND_CONSTANT, 0, NULL);
    g->tensors[t].is_initializer = true;
    ir_tensor_set_data(&g->tensors[t], &v, sizeof v);
    return t;
}

static int const_i64(ir_graph *g, const char *name, int n, const int64_t *v) {
    int64_t len = n;
    int t = ir_tensor_add(g, name, IR_DTYPE_INT64);
    ir_tensor_set_shape(&g->tensors[t], 1, &len);
    ir_tensor_set_data(&g->tensors[t], v, (size_t)n * sizeof *v);
    g->tensors[t].is_initializer = true;
    g->tensors[t].kind = IR_KIND_CONSTANT;
    return t;
}

/* Node with inputs (a -1-terminated list) and n_out fresh outputs named "<name>_y<k>". */
static int node(ir_graph *g, const char *name, const char *op, int n_out, ...) {
    int n = ir_node_add(g, name, op, "");
    g->nodes[n].op = op_lookup("", op);
    va_list ap;
    va_start(ap, n_out);
    for (int t; (t = va_arg(ap, int)) != -2;) ir_node_add_input(g, n, t);
    va_end(ap);
    for (int k = 0; k < n_out; k++) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s_y%d", name, k);
        ir_node_add_output(g, n, ir_tensor_add(g, buf, IR_DTYPE_UNDEFINED));
    }
    return n;
}
#define END (-2)

static void attr_ints(ir_graph *g, int n, const char *name, int k, const int64_t *v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INTS, .ints = (int64_t *)v, .n = k};
    ir_node_add_attr(g, n, &a);
}
static void attr_int(ir_graph *g, int n, const char *name, int64_t v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INT, .i = v};
    ir_node_add_attr(g, n, &a);
}

static int out0(ir_graph *g, int n) { return g->nodes[n].outputs[0]; }

/* X (2, 3, 8, 8) -> Conv 1x1 (3 -> 4) = A, so A needs a gradient. */
static ir_graph *graph_with_stem(int64_t opset, int *a) {
    ir_graph *g = ir_graph_new();
    g->opset = opset;
    g->model_path = oc_strdup("test");
    int64_t xd[] = {2, 3, 8, 8}, wd[] = {4, 3, 1, 1};
    int x = tensor(g, "x", IR_KIND_INPUT, 4, xd);
    ir_graph_add_input(g, x);
    int stem = node(g, "stem", "Conv", 1, x, param(g, "stem.w", 4, wd), END);
    *a = out0(g, stem);
    return g;
}

/* Appends GlobalAveragePool + Flatten (unless y is already [N, C]), marks the
 * graph output, infers shapes and builds the training graph. */
static train_graph *finish_head(ir_graph *g, int y, bool head) {
    if (head) {
        int gap = node(g, "head_gap", "GlobalAveragePool", 1, y, END);
        y = out0(g, node(g, "head_flatten", "Flatten", 1, out0(g, gap), END));
    }
    ir_graph_add_output(g, y);
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("infer: %s", err.msg);
    train_opts o = train_opts_default();
    train_graph *tg;
    if (train_build(g, &o, &tg, &err)) fail_msg("train_build: %s", err.msg);
    return tg;
}

static train_graph *finish(ir_graph *g, int y) { return finish_head(g, y, true); }

static int node_named(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return i;
    return -1;
}

/* The rule's reads of forward node f's own tensors equal the declared masks;
 * every input that needs a gradient has one of its shape. */
static void check_rule(const train_graph *tg, const char *fwd_name) {
    const ir_graph *g = tg->g;
    int f = node_named(g, fwd_name);
    assert_true(f >= 0);
    const ir_node *fn = &g->nodes[f];
    const op_def *d = op_def_of(fn);
    uint32_t in_read = 0, out_read = 0;
    int emitted = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (tg->fwd_of[i] != f) continue;
        emitted++;
        const ir_node *b = &g->nodes[i];
        for (int k = 0; k < b->n_inputs; k++) {
            for (int j = 0; j < fn->n_inputs; j++)
                if (b->inputs[k] >= 0 && b->inputs[k] == fn->inputs[j]) in_read |= 1u << j;
            for (int j = 0; j < fn->n_outputs; j++)
                if (b->inputs[k] >= 0 && b->inputs[k] == fn->outputs[j]) out_read |= 1u << j;
        }
    }
    /* Reads never exceed the declaration; they equal it when every input
     * needs a gradient (the stem conv, whose image needs none, reads less). */
    bool all_wanted = true;
    for (int j = 0; j < fn->n_inputs; j++) {
        int t = fn->inputs[j];
        if (t >= 0 && g->tensors[t].kind != IR_KIND_CONSTANT && tg->grad_of[t] < 0)
            all_wanted = false;
    }
    bool ok = all_wanted ? in_read == d->saved_inputs && out_read == d->saved_outputs
                         : (in_read & ~d->saved_inputs) == 0 && (out_read & ~d->saved_outputs) == 0;
    if (!ok)
        fail_msg("%s (%s): reads inputs 0x%x outputs 0x%x, declares 0x%x 0x%x", fwd_name,
                 fn->op_type, in_read, out_read, d->saved_inputs, d->saved_outputs);
    for (int j = 0; j < fn->n_inputs; j++) {
        int t = fn->inputs[j];
        if (t < 0) continue;
        const ir_tensor *x = &g->tensors[t];
        bool needs = x->kind == IR_KIND_PARAMETER || x->kind == IR_KIND_SAVED ||
                     x->kind == IR_KIND_ACTIVATION;
        if (!needs || x->kind == IR_KIND_CONSTANT) continue;
        int dx = tg->grad_of[t];
        if (dx < 0) fail_msg("%s: input '%s' has no gradient", fwd_name, x->name);
        const ir_tensor *gx = &g->tensors[dx];
        assert_int_equal(gx->rank, x->rank);
        for (int r = 0; r < x->rank; r++) assert_int_equal(gx->dims[r], x->dims[r]);
    }
    (void)emitted;
}

/* Every parameter is updated by exactly one SGDMomentum node (its member, op_update.h),
 * placed after the node producing its final gradient with only that rule's nodes between;
 * a multi-tensor update (--fuse all) groups the parameters of one forward node. */
static void check_updates(const train_graph *tg) {
    const ir_graph *g = tg->g;
    for (int t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].kind != IR_KIND_PARAMETER || tg->alias_of[t] >= 0) continue;
        int updates = 0, at = -1, member = -1;
        op_update_layout l = {0};
        for (int i = 0; i < g->n_nodes; i++) {
            if (strcmp(g->nodes[i].op_type, "SGDMomentum") != 0) continue;
            assert_true(op_update_layout_of(&g->nodes[i], &l));
            for (int k = 0; k < l.members; k++)
                if (g->nodes[i].inputs[k * l.width] == t) updates++, at = i, member = k;
        }
        if (updates != 1) fail_msg("parameter '%s' has %d updates", g->tensors[t].name, updates);
        const ir_node *u = &g->nodes[at];
        assert_true(op_update_layout_of(u, &l));
        assert_int_equal(u->inputs[member * l.width + 1], tg->grad_of[t]);
        int prod = g->tensors[tg->grad_of[t]].producer;
        assert_true(prod < at);
        for (int i = prod + 1; i < at; i++)
            if (tg->phase[i] == TRAIN_PHASE_BACKWARD && tg->fwd_of[i] != tg->fwd_of[prod])
                fail_msg("update of '%s' is late: '%s' runs between", g->tensors[t].name,
                         g->nodes[i].name);
    }
}

static void test_conv(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t wd[] = {5, 4, 3, 3}, bd[] = {5}, pads[] = {1, 1, 1, 1}, st[] = {2, 2};
    int c = node(g, "conv", "Conv", 1, a, param(g, "w", 4, wd), param(g, "b", 1, bd), END);
    attr_ints(g, c, "pads", 4, pads);
    attr_ints(g, c, "strides", 2, st);
    train_graph *tg = finish(g, out0(g, c));
    check_rule(tg, "conv");
    check_rule(tg, "stem"); /* first conv: no dX, still dW from X */
    check_updates(tg);
    /* The stem's input needs no gradient: no ConvBackwardData for it. */
    assert_int_equal(node_named(tg->g, "stem/grad_data"), -1);
    assert_true(node_named(tg->g, "conv/grad_data") >= 0);
    train_graph_free(tg);
}

static void test_conv_transpose(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t wd[] = {4, 6, 2, 2}, st[] = {2, 2}, ks[] = {2, 2};
    int c = node(g, "up", "ConvTranspose", 1, a, param(g, "w", 4, wd), END);
    attr_ints(g, c, "strides", 2, st);
    attr_ints(g, c, "kernel_shape", 2, ks);
    train_graph *tg = finish(g, out0(g, c));
    assert_int_equal(tg->g->tensors[out0(tg->g, node_named(tg->g, "up"))].dims[2], 16);
    check_rule(tg, "up");
    check_updates(tg);
    train_graph_free(tg);
}

static int bn(ir_graph *g, const char *name, int x, int64_t c, int n_out) {
    int64_t d[] = {c};
    char buf[64];
    snprintf(buf, sizeof buf, "%s.scale", name);
    int s = param(g, buf, 1, d);
    snprintf(buf, sizeof buf, "%s.bias", name);
    int b = param(g, buf, 1, d);
    snprintf(buf, sizeof buf, "%s.mean", name);
    int m = tensor(g, buf, IR_KIND_STATE, 1, d);
    snprintf(buf, sizeof buf, "%s.var", name);
    int v = tensor(g, buf, IR_KIND_STATE, 1, d);
    return node(g, name, "BatchNormalization", n_out, x, s, b, m, v, END);
}

static void check_bn_state_in_place(const train_graph *tg, const char *name) {
    const ir_graph *g = tg->g;
    const ir_node *n = &g->nodes[node_named(g, name)];
    /* Outputs 1 and 2 are the running statistics, updated in place. */
    assert_int_equal(tg->alias_of[n->outputs[1]], n->inputs[3]);
    assert_int_equal(tg->alias_of[n->outputs[2]], n->inputs[4]);
    /* Exactly one node in the whole step writes each running statistic. */
    int writers = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int o = 0; o < g->nodes[i].n_outputs; o++)
            if (g->nodes[i].outputs[o] >= 0 && tg->alias_of[g->nodes[i].outputs[o]] == n->inputs[3])
                writers++;
    assert_int_equal(writers, 1);
}

static void test_batch_norm_opset13(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int n = bn(g, "bn", a, 4, 5);
    train_graph *tg = finish(g, out0(g, n));
    check_rule(tg, "bn");
    check_updates(tg);
    check_bn_state_in_place(tg, "bn");
    train_graph_free(tg);
}

static void test_batch_norm_opset15(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(15, &a);
    int n = bn(g, "bn", a, 4, 3);
    attr_int(g, n, "training_mode", 1);
    train_graph *tg = finish(g, out0(g, n));
    check_rule(tg, "bn");
    check_bn_state_in_place(tg, "bn");
    train_graph_free(tg);
}

/* An inference-form BN (eval-mode export; torch 2.x's exporter writes all BN so)
 * trains as model.train() does: the training form, running statistics updated
 * in place, and a notice says so. Both opset families. */
static void test_batch_norm_inference_form_trains(void **state) {
    (void)state;
    for (int opset = 9; opset <= 15; opset += 6) {
        int a;
        ir_graph *g = graph_with_stem(opset, &a);
        int n = bn(g, "bn_eval", a, 4, 1);
        int gap = node(g, "gap", "GlobalAveragePool", 1, out0(g, n), END);
        int y = out0(g, node(g, "flat", "Flatten", 1, out0(g, gap), END));
        ir_graph_add_output(g, y);
        oc_err err;
        assert_int_equal(ir_infer_shapes(g, &err), OC_OK);
        train_opts o = train_opts_default();
        train_graph *tg;
        if (train_build(g, &o, &tg, &err)) fail_msg("opset %d: %s", opset, err.msg);
        const ir_node *b = &tg->g->nodes[node_named(tg->g, "bn_eval")];
        assert_int_equal(b->n_outputs, 3);
        assert_true(op_args_of(b)->bn.training);
        assert_int_equal(tg->g->n_notes, 1);
        assert_non_null(strstr(tg->g->notes[0], "inference form"));
        check_rule(tg, "bn_eval");
        check_bn_state_in_place(tg, "bn_eval");
        train_graph_free(tg);
    }
}

/* The inference form outcore-run evaluates on (train/eval_graph.h): training
 * BN on its running statistics, Dropout and the exporters' random dropout
 * pattern gone, the same output. */
static void test_eval_graph(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(15, &a);
    int n = bn(g, "bn", a, 4, 3);
    attr_int(g, n, "training_mode", 1);
    bool yes = true;
    int tm = tensor(g, "tm", IR_KIND_CONSTANT, 0, NULL);
    g->tensors[tm].dtype = IR_DTYPE_BOOL;
    g->tensors[tm].is_initializer = true;
    ir_tensor_set_data(&g->tensors[tm], &yes, 1);
    int d = node(g, "drop", "Dropout", 2, out0(g, n), const_scalar_f(g, "ratio", 0.25f), tm, END);
    int r = node(g, "rand", "RandomUniformLike", 1, out0(g, d), END);
    int keep = const_scalar_f(g, "keep", 0.8f);
    int l = node(g, "less", "Less", 1, out0(g, r), keep, END);
    int c = node(g, "cast", "Cast", 1, out0(g, l), END);
    attr_int(g, c, "to", IR_DTYPE_FLOAT);
    int dv = node(g, "div", "Div", 1, out0(g, c), keep, END);
    int m = node(g, "mul", "Mul", 1, out0(g, d), out0(g, dv), END);
    int gap = node(g, "gap", "GlobalAveragePool", 1, out0(g, m), END);
    int y = out0(g, node(g, "flat", "Flatten", 1, out0(g, gap), END));
    ir_graph_add_output(g, y);
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("%s", err.msg);
    assert_true(op_args_of(&g->nodes[node_named(g, "bn")])->bn.training);
    if (eval_graph_make(g, &err)) fail_msg("%s", err.msg);
    const ir_node *b = &g->nodes[node_named(g, "bn")];
    assert_int_equal(b->n_outputs, 1);
    assert_false(op_args_of(b)->bn.training);
    assert_int_equal(g->nodes[node_named(g, "drop")].op, OP_IDENTITY);
    assert_int_equal(g->nodes[node_named(g, "mul")].op, OP_IDENTITY);
    assert_int_equal(g->nodes[node_named(g, "mul")].n_inputs, 1);
    const char *gone[] = {"rand", "less", "cast", "div"};
    for (int i = 0; i < 4; i++) assert_int_equal(node_named(g, gone[i]), -1);
    assert_int_equal(g->n_outputs, 1);
    ir_graph_free(g);
}

static void test_relu_clip(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    /* the stem Conv -> relu is fused as ConvRelu "relu/fused" (saves X, W and Y) */
    int r = node(g, "relu", "Relu", 1, a, END);
    int c = node(g, "clip", "Clip", 1, out0(g, r), const_scalar_f(g, "lo", 0.0f),
                 const_scalar_f(g, "hi", 6.0f), END);
    int r2 = node(g, "relu2", "Relu", 1, out0(g, c), END);
    train_graph *tg = finish(g, out0(g, r2));
    assert_int_equal(node_named(tg->g, "relu"), -1);
    assert_int_equal(node_named(tg->g, "stem"), -1);
    assert_int_equal(tg->g->nodes[node_named(tg->g, "relu/fused")].op, OP_CONV_RELU);
    check_rule(tg, "relu/fused");
    check_rule(tg, "clip");
    check_rule(tg, "relu2");
    train_graph_free(tg);
}

static void test_dropout_mask(void **state) {
    (void)state;
    for (int with_mask = 0; with_mask < 2; with_mask++) {
        int a;
        ir_graph *g = graph_with_stem(13, &a);
        int tm = ir_tensor_add(g, "train_mode", IR_DTYPE_BOOL);
        uint8_t one = 1;
        ir_tensor_set_shape(&g->tensors[tm], 0, NULL);
        ir_tensor_set_data(&g->tensors[tm], &one, 1);
        g->tensors[tm].is_initializer = true;
        g->tensors[tm].kind = IR_KIND_CONSTANT;
        int d = node(g, "drop", "Dropout", 1 + with_mask, a, const_scalar_f(g, "ratio", 0.25f), tm,
                     END);
        train_graph *tg = finish(g, out0(g, d));
        const ir_node *dn = &tg->g->nodes[node_named(tg->g, "drop")];
        assert_int_equal(dn->n_outputs, 2); /* mask added when the model had none */
        assert_int_equal(tg->g->tensors[dn->outputs[1]].kind, IR_KIND_SAVED);
        assert_int_equal(tg->g->tensors[dn->outputs[1]].dtype, IR_DTYPE_BOOL);
        check_rule(tg, "drop");
        const ir_node *gn = &tg->g->nodes[node_named(tg->g, "drop/grad")];
        assert_float_equal(ir_attr_float(gn, "ratio", 0), 0.25f, 1e-7);
        train_graph_free(tg);
    }
}

static void test_add_same_and_broadcast(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t bd[] = {1, 4, 1, 1};
    int r = node(g, "relu", "Relu", 1, a, END);
    int s = node(g, "add", "Add", 1, a, out0(g, r), END); /* a has two consumers */
    int b = node(g, "bias", "Add", 1, out0(g, s), param(g, "bias.p", 4, bd), END);
    train_graph *tg = finish(g, out0(g, b));
    check_rule(tg, "add");
    check_rule(tg, "bias");
    check_updates(tg);
    /* a is read by relu and add: its two partial gradients are summed. */
    int sum = node_named(tg->g, "stem_y0/grad_sum");
    assert_true(sum >= 0);
    assert_string_equal(tg->g->nodes[sum].op_type, "Sum");
    assert_int_equal(tg->g->nodes[sum].n_inputs, 2);
    assert_true(node_named(tg->g, "bias/grad_b") >= 0); /* ReduceSumTo to (1, 4, 1, 1) */
    train_graph_free(tg);
}

static void test_pools(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t k[] = {2, 2}, s[] = {2, 2}, k3[] = {3, 3}, p1[] = {1, 1, 1, 1};
    int m = node(g, "maxpool", "MaxPool", 1, a, END);
    attr_ints(g, m, "kernel_shape", 2, k3);
    attr_ints(g, m, "strides", 2, s);
    attr_ints(g, m, "pads", 4, p1);
    attr_int(g, m, "ceil_mode", 1);
    int av = node(g, "avgpool", "AveragePool", 1, out0(g, m), END);
    attr_ints(g, av, "kernel_shape", 2, k);
    attr_ints(g, av, "strides", 2, s);
    train_graph *tg = finish(g, out0(g, av));
    check_rule(tg, "maxpool");
    check_rule(tg, "avgpool");
    check_rule(tg, "head_gap");
    train_graph_free(tg);
}

static void test_gemm_flatten_reshape(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t shape[] = {2, 256}, wd[] = {10, 256}, bd[] = {10};
    int f = node(g, "flatten", "Flatten", 1, a, END);
    int r = node(g, "reshape", "Reshape", 1, out0(g, f), const_i64(g, "shape", 2, shape), END);
    int gm =
        node(g, "fc", "Gemm", 1, out0(g, r), param(g, "fc.w", 2, wd), param(g, "fc.b", 1, bd), END);
    attr_int(g, gm, "transB", 1);
    train_graph *tg = finish_head(g, out0(g, gm), false);
    check_rule(tg, "fc");
    check_rule(tg, "flatten");
    check_rule(tg, "reshape");
    check_updates(tg);
    train_graph_free(tg);
}

static void test_concat_pad(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t pads[] = {0, 0, 1, 1, 0, 0, 1, 1};
    int r = node(g, "relu", "Relu", 1, a, END);
    int c = node(g, "cat", "Concat", 1, a, out0(g, r), END);
    attr_int(g, c, "axis", 1);
    int p = node(g, "pad", "Pad", 1, out0(g, c), const_i64(g, "pads", 8, pads), END);
    train_graph *tg = finish(g, out0(g, p));
    check_rule(tg, "cat");
    check_rule(tg, "pad");
    train_graph_free(tg);
}

static void test_loss_saved(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    train_graph *tg = finish(g, a);
    check_rule(tg, "outcore/loss");
    assert_int_equal(tg->g->tensors[tg->label_tensor].kind, IR_KIND_LABEL);
    assert_int_equal(tg->g->tensors[tg->loss_tensor].rank, 0);
    train_graph_free(tg);
}

static void test_missing_rule_names_node(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    /* Pad with an axes input has no gradient rule (Pad of every dim has). */
    int64_t pads[] = {1, 1, 1, 1}, axes[] = {2, 3};
    int pd = node(g, "pick", "Pad", 1, a, const_i64(g, "pads", 4, pads), -1,
                  const_i64(g, "axes", 2, axes), END);
    int gap = node(g, "gap", "GlobalAveragePool", 1, out0(g, pd), END);
    ir_graph_add_output(g, out0(g, node(g, "flat", "Flatten", 1, out0(g, gap), END)));
    oc_err err;
    assert_int_equal(ir_infer_shapes(g, &err), OC_OK);
    train_opts o = train_opts_default();
    train_graph *tg;
    assert_int_equal(train_build(g, &o, &tg, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "'pick'"));
    assert_non_null(strstr(err.msg, "Pad"));
    assert_non_null(strstr(err.msg, "no gradient rule"));
}

/* --loss model: the model's own SoftmaxCrossEntropyLoss is the loss node and
 * the backward starts there (gradients reach the parameters); a float scalar another
 * node computes (a loss the model writes out) gets the seed 1 as its gradient; an
 * integer scalar is refused, naming it. */
static void test_model_loss(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int gap = node(g, "gap", "GlobalAveragePool", 1, a, END);
    int flat = node(g, "flat", "Flatten", 1, out0(g, gap), END);
    int64_t n = 2;
    int labels = ir_tensor_add(g, "labels", IR_DTYPE_INT64);
    ir_tensor_set_shape(&g->tensors[labels], 1, &n);
    ir_graph_add_input(g, labels);
    int sce = node(g, "sce", "SoftmaxCrossEntropyLoss", 1, out0(g, flat), labels, END);
    ir_graph_add_output(g, out0(g, sce));
    oc_err err;
    assert_int_equal(ir_infer_shapes(g, &err), OC_OK);
    train_opts o = train_opts_default();
    o.loss = TRAIN_LOSS_MODEL;
    train_graph *tg;
    if (train_build(g, &o, &tg, &err)) fail_msg("%s", err.msg);
    int w = ir_tensor_find(tg->g, "stem.w");
    assert_true(w >= 0);
    assert_true(tg->grad_of[w] >= 0);
    assert_int_equal(tg->phase[node_named(tg->g, "sce")], TRAIN_PHASE_LOSS);
    train_graph_free(tg);

    g = graph_with_stem(13, &a);
    int64_t none = 0, one = 1;
    int r = node(g, "scalar", "Reshape", 1, param(g, "s", 1, &one), const_i64(g, "shape", 0, &none),
                 END);
    ir_graph_add_output(g, out0(g, r));
    if (ir_infer_shapes(g, &err)) fail_msg("%s", err.msg);
    if (train_build(g, &o, &tg, &err)) fail_msg("%s", err.msg);
    int s = ir_tensor_find(tg->g, "s"), seed = ir_tensor_find(tg->g, "outcore/loss_grad");
    assert_true(s >= 0 && seed >= 0 && tg->grad_of[s] >= 0);
    float one_f = 0;
    assert_int_equal(tg->g->tensors[seed].data_bytes, sizeof one_f);
    memcpy(&one_f, tg->g->tensors[seed].data, sizeof one_f);
    assert_true(one_f == 1.0f);
    train_graph_free(tg);

    g = graph_with_stem(13, &a);
    int sh = node(g, "shape", "Shape", 1, a, END); /* the batch: [1] int64, then a scalar */
    ir_attr end = {.name = "end", .type = IR_ATTR_INT, .i = 1};
    ir_node_add_attr(g, sh, &end);
    int r2 = node(g, "batch", "Reshape", 1, out0(g, sh), const_i64(g, "shape", 0, &none), END);
    ir_graph_add_output(g, out0(g, r2));
    if (ir_infer_shapes(g, &err)) fail_msg("%s", err.msg);
    assert_int_equal(train_build(g, &o, &tg, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "float scalar"));
    printf("ok - --loss model: gradients from the model's SoftmaxCrossEntropyLoss, and from "
           "another float scalar seeded with 1; an integer one refused: %s\n",
           err.msg);
}

/* A parameter reshaped before use (exporters write weight.T, view()) keeps
 * its gradient: its weights are data but no plan-time constant to fold. */
static void test_reshaped_parameter_trains(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t wd[] = {16}, shape[] = {4, 4};
    int w = param(g, "w.flat", 1, wd);
    float vals[16] = {0};
    ir_tensor_set_data(&g->tensors[w], vals, sizeof vals);
    int rw = node(g, "w.view", "Reshape", 1, w, const_i64(g, "w.shape", 2, shape), END);
    int gap = node(g, "gap", "GlobalAveragePool", 1, a, END);
    int flat = node(g, "flat", "Flatten", 1, out0(g, gap), END);
    int mm = node(g, "fc", "Gemm", 1, out0(g, flat), out0(g, rw), END);
    ir_graph_add_output(g, out0(g, mm));
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("%s", err.msg);
    train_opts o = train_opts_default();
    train_graph *tg;
    if (train_build(g, &o, &tg, &err)) fail_msg("%s", err.msg);
    assert_true(node_named(tg->g, "w.view") >= 0);
    int wt = ir_tensor_find(tg->g, "w.flat");
    assert_true(tg->grad_of[wt] >= 0);
    train_graph_free(tg);
}

/* A deeper model, built twice: same node names in the same order. */
static train_graph *small_resnet_block(void) {
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t wd[] = {4, 4, 3, 3}, pads[] = {1, 1, 1, 1};
    int b1 = bn(g, "bn1", a, 4, 5);
    int r1 = node(g, "relu1", "Relu", 1, out0(g, b1), END);
    int c2 = node(g, "conv2", "Conv", 1, out0(g, r1), param(g, "conv2.w", 4, wd), END);
    attr_ints(g, c2, "pads", 4, pads);
    int b2 = bn(g, "bn2", out0(g, c2), 4, 5);
    int s = node(g, "add", "Add", 1, out0(g, b2), out0(g, r1), END);
    int r2 = node(g, "relu2", "Relu", 1, out0(g, s), END);
    return finish(g, out0(g, r2));
}

/* Two residual blocks: the first's end, Relu(BN(.) + stem), is read by the
 * second's convolution and its Add, so its gradient is a Sum of two partials;
 * the fused BN + Add + Relu's backward starts with ReluGrad on it. fuse_all:
 * the default (the Sum folded into the ReluGrad), else --fuse forward. */
static train_graph *two_residual_blocks(bool fuse_all) {
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int64_t wd[] = {4, 4, 3, 3}, pads[] = {1, 1, 1, 1};
    int y = a;
    for (int k = 0; k < 2; k++) {
        char cn[16], bname[16], an[16], rn[16], wn[16];
        snprintf(cn, sizeof cn, "conv%d", k), snprintf(bname, sizeof bname, "bn%d", k);
        snprintf(an, sizeof an, "add%d", k), snprintf(rn, sizeof rn, "relu%d", k);
        snprintf(wn, sizeof wn, "conv%d.w", k);
        int c = node(g, cn, "Conv", 1, y, param(g, wn, 4, wd), END);
        attr_ints(g, c, "pads", 4, pads);
        int b = bn(g, bname, out0(g, c), 4, 5);
        int s = node(g, an, "Add", 1, out0(g, b), y, END);
        y = out0(g, node(g, rn, "Relu", 1, out0(g, s), END));
    }
    ir_graph_add_output(g, y);
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("infer: %s", err.msg);
    train_opts o = train_opts_default();
    if (!fuse_all) o.fuse = TRAIN_FUSE_FORWARD;
    train_graph *tg;
    if (train_build(g, &o, &tg, &err)) fail_msg("train_build: %s", err.msg);
    return tg;
}

/* ReluGrad nodes reading a second partial (3 inputs), and ReluGrad nodes
 * whose dY is a Sum's output. */
static void count_relu_grads(const train_graph *tg, int *with_addend, int *after_sum) {
    const ir_graph *g = tg->g;
    *with_addend = *after_sum = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->op != OP_RELU_GRAD) continue;
        *with_addend += n->n_inputs == 3;
        int p = g->tensors[n->inputs[0]].producer;
        *after_sum += p >= 0 && g->nodes[p].op == OP_SUM;
    }
}

/* fuse_grad_sum: the first block's ReluGrad takes both partials, the Sum is
 * gone, and the graph is still consistent (every rule's reads, the updates,
 * the first block's gradient no tensor now); --fuse forward keeps the Sum. */
static void test_grad_sum_folded(void **state) {
    (void)state;
    int addend, after_sum;
    train_graph *tg = two_residual_blocks(true);
    count_relu_grads(tg, &addend, &after_sum);
    assert_int_equal(addend, 1);
    assert_int_equal(after_sum, 0);
    assert_int_equal(node_named(tg->g, "relu0_y0/grad_sum"), -1);
    assert_true(node_named(tg->g, "stem_y0/grad_sum") >= 0); /* read by a Conv's backward: kept */
    assert_int_equal(tg->grad_of[ir_tensor_find(tg->g, "relu0_y0")], -1);
    check_rule(tg, "conv0"); /* conv1's input is relu0_y0: no gradient tensor, as said */
    check_updates(tg);
    for (int i = 0; i < tg->g->n_nodes; i++) /* phases and forward links followed the removal */
        assert_true(i < tg->n_forward ? tg->fwd_of[i] == -1
                                      : tg->fwd_of[i] >= -1 && tg->fwd_of[i] < tg->n_forward);
    int64_t folded_peak = tg->incore_peak_bytes;
    train_graph_free(tg);
    tg = two_residual_blocks(false);
    count_relu_grads(tg, &addend, &after_sum);
    assert_int_equal(addend, 0);
    assert_int_equal(after_sum, 1);
    assert_true(node_named(tg->g, "relu0_y0/grad_sum") >= 0);
    assert_true(folded_peak <= tg->incore_peak_bytes);
    train_graph_free(tg);
}

/* A tensor read by 40 nodes: its 40 partial gradients are summed as they come, by Sums of
 * at most 17 (the running sum and 16 new), each partial in exactly one Sum. */
static void test_many_partials_summed_as_they_come(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int total = -1;
    for (int k = 0; k < 40; k++) { /* total = relu0 + relu1 + ... (Adds) */
        char name[16];
        snprintf(name, sizeof name, "relu%d", k);
        int r = out0(g, node(g, name, "Relu", 1, a, END));
        snprintf(name, sizeof name, "add%d", k);
        total = k == 0 ? r : out0(g, node(g, name, "Add", 1, total, r, END));
    }
    train_graph *tg = finish(g, total);
    const ir_graph *tgg = tg->g;
    int summed = 0, sums = 0, partial_inputs = 0;
    for (int i = 0; i < tgg->n_nodes; i++) {
        const ir_node *n = &tgg->nodes[i];
        if (strncmp(n->name, "stem_y0/grad", 12) != 0 || n->op != OP_SUM) continue;
        sums++;
        assert_true(n->n_inputs <= 17);
        for (int k = 0; k < n->n_inputs; k++) {
            const char *in = tgg->tensors[n->inputs[k]].name;
            if (strncmp(in, "stem_y0/grad.", 13) == 0) partial_inputs++;
            else if (strncmp(in, "stem_y0/grad_acc", 16) == 0) summed++;
            else fail_msg("%s reads '%s'", n->name, in);
        }
    }
    assert_int_equal(partial_inputs, 40);
    assert_int_equal(sums, 3);   /* 17 -> acc0, acc0 + 16 -> acc1, acc1 + 7 -> the gradient */
    assert_int_equal(summed, 2); /* each running sum read once */
    assert_true(node_named(tgg, "stem_y0/grad_acc0") >= 0);
    assert_true(tg->grad_of[ir_tensor_find(tgg, "stem_y0")] >= 0);
    check_rule(tg, "stem");
    train_graph_free(tg);
}

static void test_deterministic_names(void **state) {
    (void)state;
    train_graph *x = small_resnet_block(), *y = small_resnet_block();
    assert_int_equal(x->g->n_nodes, y->g->n_nodes);
    for (int i = 0; i < x->g->n_nodes; i++)
        assert_string_equal(x->g->nodes[i].name, y->g->nodes[i].name);
    check_updates(x);
    train_graph_free(x);
    train_graph_free(y);
}

static int const_bool(ir_graph *g, const char *name, bool v) {
    int t = ir_tensor_add(g, name, IR_DTYPE_BOOL);
    uint8_t b = v;
    ir_tensor_set_data(&g->tensors[t], &b, 1);
    g->tensors[t].is_initializer = true;
    g->tensors[t].kind = IR_KIND_CONSTANT;
    return t;
}

static int count_op(const ir_graph *g, int op) {
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) k += (int)g->nodes[i].op == op;
    return k;
}

/* skip_identity_dropouts: a training Dropout of ratio 0 (its mask unread)
 * and one of ratio 0 not training leave the graph, their readers read their
 * inputs (r0's output twice: r1 and the Add), no DropoutGrad for them; a
 * ratio-0.25 Dropout stays with its DropoutGrad, and one not training of ratio
 * 0.5 stays (a copy; its gradient passes through). */
static void test_identity_dropouts_skipped(void **state) {
    (void)state;
    int a;
    ir_graph *g = graph_with_stem(13, &a);
    int yes = const_bool(g, "train_yes", true), no = const_bool(g, "train_no", false);
    int r0 = out0(g, node(g, "r0", "Relu", 1, a, END));
    int d0 = node(g, "d0", "Dropout", 2, r0, const_scalar_f(g, "p0", 0.0f), yes, END);
    int r1 = out0(g, node(g, "r1", "Relu", 1, out0(g, d0), END));
    int d1 = node(g, "d1", "Dropout", 2, r1, const_scalar_f(g, "p1", 0.25f), yes, END);
    int d2 = node(g, "d2", "Dropout", 1, out0(g, d1), const_scalar_f(g, "p2", 0.5f), no, END);
    int d3 = node(g, "d3", "Dropout", 1, out0(g, d2), const_scalar_f(g, "p3", 0.0f), no, END);
    int s = node(g, "add", "Add", 1, out0(g, d0), out0(g, d3), END);
    train_graph *tg = finish(g, out0(g, s));
    const ir_graph *t = tg->g;
    assert_int_equal(node_named(t, "d0"), -1);
    assert_int_equal(node_named(t, "d3"), -1);
    assert_true(node_named(t, "d1") >= 0 && node_named(t, "d2") >= 0);
    assert_int_equal(ir_tensor_find(t, "d0_y0"), -1);
    assert_int_equal(ir_tensor_find(t, "d0_y1"), -1); /* the unread mask went with it */
    assert_int_equal(count_op(t, OP_DROPOUT), 2);
    assert_int_equal(count_op(t, OP_DROPOUT_GRAD), 1);
    const ir_node *add = &t->nodes[node_named(t, "add")];
    assert_int_equal(add->inputs[0], ir_tensor_find(t, "r0_y0"));
    assert_int_equal(add->inputs[1], ir_tensor_find(t, "d2_y0"));
    assert_int_equal(t->nodes[node_named(t, "r1")].inputs[0], ir_tensor_find(t, "r0_y0"));
    const ir_tensor *x = &t->tensors[ir_tensor_find(t, "r0_y0")];
    bool by_r1 = false, by_add = false; /* the consumer lists followed */
    for (int c = 0; c < x->n_consumers; c++) {
        by_r1 |= x->consumers[c] == node_named(t, "r1");
        by_add |= x->consumers[c] == node_named(t, "add");
    }
    assert_true(by_r1 && by_add);
    check_rule(tg, "d1"); /* r0_y0's gradient Sum folds into r0's ReluGrad: no tensor */
    check_updates(tg);
    train_graph_free(tg);
}

/* Independent count: at node i, live = persistent + every non-persistent tensor
 * whose lifetime [first def, last use] contains i, each as the arena holds it
 * (its bytes rounded up to IR_DEVICE_ALIGN). */
static void test_incore_peak_brute_force(void **state) {
    (void)state;
    train_graph *tg = small_resnet_block();
    const ir_graph *g = tg->g;
    int64_t persistent = 0, best = 0, b;
    for (int t = 0; t < g->n_tensors; t++) {
        ir_kind k = g->tensors[t].kind;
        bool pers = tg->alias_of[t] >= 0 || k == IR_KIND_PARAMETER || k == IR_KIND_STATE ||
                    k == IR_KIND_OPT_STATE || k == IR_KIND_CONSTANT;
        if (pers && tg->alias_of[t] < 0 && ir_tensor_device_bytes(&g->tensors[t], &b))
            persistent += b;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        int64_t live = 0;
        for (int t = 0; t < g->n_tensors; t++) {
            const ir_tensor *x = &g->tensors[t];
            ir_kind k = x->kind;
            if (tg->alias_of[t] >= 0 || k == IR_KIND_PARAMETER || k == IR_KIND_STATE ||
                k == IR_KIND_OPT_STATE || k == IR_KIND_CONSTANT)
                continue;
            int first = x->is_graph_input ? -1 : x->producer, last = x->producer;
            for (int c = 0; c < x->n_consumers; c++)
                if (x->consumers[c] > last) last = x->consumers[c];
            if (x->is_graph_output) last = g->n_nodes - 1;
            if (first <= i && i <= last && ir_tensor_device_bytes(x, &b)) live += b;
        }
        if (live > best) best = live;
    }
    assert_int_equal(tg->incore_peak_bytes, persistent + best);
    train_graph_free(tg);
}

/* --precision bf16 on stem Conv -> BN -> Relu = r; r * 0.5 (a plan-time scalar);
 * + bias (a parameter); ReduceSum(r) (FP32) + r; each op's autocast rule. */
static train_graph *mixed_graph(train_precision p) {
    int a;
    ir_graph *g = graph_with_stem(15, &a);
    int64_t c[] = {4}, bd[] = {4, 1, 1}, axes[] = {1};
    int bn =
        node(g, "bn", "BatchNormalization", 3, a, param(g, "bn.s", 1, c), param(g, "bn.b", 1, c),
             tensor(g, "bn.m", IR_KIND_STATE, 1, c), tensor(g, "bn.v", IR_KIND_STATE, 1, c), END);
    attr_int(g, bn, "training_mode", 1);
    int r = out0(g, node(g, "relu", "Relu", 1, out0(g, bn), END));
    int half = out0(g, node(g, "half", "Mul", 1, r, const_scalar_f(g, "k", 0.5f), END));
    int biased = out0(g, node(g, "bias", "Add", 1, half, param(g, "bias.b", 3, bd), END));
    int sum = out0(g, node(g, "sum", "ReduceSum", 1, r, const_i64(g, "axes", 1, axes), END));
    int mix = out0(g, node(g, "mix", "Add", 1, biased, sum, END));
    int both = out0(g, node(g, "both", "Add", 1, mix, r, END));
    int gap = node(g, "head_gap", "GlobalAveragePool", 1, both, END);
    int y = out0(g, node(g, "head_flatten", "Flatten", 1, out0(g, gap), END));
    ir_graph_add_output(g, y);
    oc_err err;
    if (ir_infer_shapes(g, &err)) fail_msg("infer: %s", err.msg);
    /* k as a folded scalar is (a Constant node's output), not a trainable initializer */
    g->tensors[ir_tensor_find(g, "k")].kind = IR_KIND_CONSTANT;
    train_opts o = train_opts_default();
    o.precision = p;
    o.fuse = TRAIN_FUSE_NONE; /* the rules on the model's own nodes */
    train_graph *tg;
    if (train_build(g, &o, &tg, &err)) fail_msg("train_build: %s", err.msg);
    return tg;
}

static ir_dtype dtype_of(const ir_graph *g, const char *name) {
    int t = ir_tensor_find(g, name);
    if (t < 0) fail_msg("no tensor '%s'", name);
    return g->tensors[t].dtype;
}

/* The tensor node `name` reads as input k. */
static const char *input_name(const ir_graph *g, const char *name, int k) {
    int n = node_named(g, name);
    assert_true(n >= 0 && k < g->nodes[n].n_inputs);
    return g->tensors[g->nodes[n].inputs[k]].name;
}

static void test_autocast_rules(void **state) {
    (void)state;
    train_graph *tg = mixed_graph(TRAIN_PRECISION_BF16);
    const ir_graph *g = tg->g;
    /* LOWER: both Conv inputs through Casts; output bf16 */
    assert_string_equal(input_name(g, "stem", 0), "x/bf16");
    assert_string_equal(input_name(g, "stem", 1), "stem.w/bf16");
    assert_int_equal(dtype_of(g, "stem_y0"), IR_DTYPE_BFLOAT16);
    /* NORM: X as it comes, parameters and statistics float32 */
    assert_string_equal(input_name(g, "bn", 1), "bn.s");
    assert_int_equal(dtype_of(g, "bn_y0"), IR_DTYPE_BFLOAT16);
    assert_int_equal(dtype_of(g, "bn_y1"), IR_DTYPE_FLOAT);
    /* FOLLOW: a plan-time scalar stays float32; a parameter follows the activation */
    assert_string_equal(input_name(g, "half", 1), "k");
    assert_int_equal(dtype_of(g, "half_y0"), IR_DTYPE_BFLOAT16);
    assert_string_equal(input_name(g, "bias", 1), "bias.b/bf16");
    assert_int_equal(dtype_of(g, "bias_y0"), IR_DTYPE_BFLOAT16);
    /* FP32: ReduceSum reads r in float32; the sum of bf16 and float32 is float32, and r's
     * float32 copy is made once for both readers */
    assert_string_equal(input_name(g, "sum", 0), "relu_y0/fp32");
    assert_int_equal(dtype_of(g, "mix_y0"), IR_DTYPE_FLOAT);
    assert_string_equal(input_name(g, "mix", 0), "bias_y0/fp32");
    assert_string_equal(input_name(g, "both", 1), "relu_y0/fp32");
    int copies = 0;
    for (int i = 0; i < g->n_nodes; i++)
        copies += strcmp(g->nodes[i].name, "autocast/relu_y0/fp32") == 0;
    assert_int_equal(copies, 1);
    /* the loss reads float32; every parameter's gradient is float32 */
    assert_int_equal(g->tensors[g->nodes[tg->n_forward - 1].inputs[0]].dtype, IR_DTYPE_FLOAT);
    const char *params[] = {"stem.w", "bn.s", "bn.b", "bias.b"};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        int t = ir_tensor_find(g, params[i]);
        assert_true(t >= 0 && tg->grad_of[t] >= 0);
        assert_int_equal(g->tensors[t].dtype, IR_DTYPE_FLOAT);
        assert_int_equal(g->tensors[tg->grad_of[t]].dtype, IR_DTYPE_FLOAT);
    }
    check_rule(tg, "bias"); /* (stem's input x/bf16 is the data's copy: no gradient) */
    check_updates(tg);
    train_graph_free(tg);
    /* float32: no Cast at all, the same graph otherwise */
    tg = mixed_graph(TRAIN_PRECISION_FP32);
    for (int i = 0; i < tg->g->n_nodes; i++) assert_int_not_equal(tg->g->nodes[i].op, OP_CAST);
    assert_int_equal(dtype_of(tg->g, "stem_y0"), IR_DTYPE_FLOAT);
    train_graph_free(tg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_batch_norm_opset13),
        cmocka_unit_test(test_batch_norm_opset15),
        cmocka_unit_test(test_batch_norm_inference_form_trains),
        cmocka_unit_test(test_eval_graph),
        cmocka_unit_test(test_relu_clip),
        cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_add_same_and_broadcast),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_gemm_flatten_reshape),
        cmocka_unit_test(test_concat_pad),
        cmocka_unit_test(test_loss_saved),
        cmocka_unit_test(test_missing_rule_names_node),
        cmocka_unit_test(test_model_loss),
        cmocka_unit_test(test_reshaped_parameter_trains),
        cmocka_unit_test(test_grad_sum_folded),
        cmocka_unit_test(test_many_partials_summed_as_they_come),
        cmocka_unit_test(test_identity_dropouts_skipped),
        cmocka_unit_test(test_deterministic_names),
        cmocka_unit_test(test_incore_peak_brute_force),
        cmocka_unit_test(test_autocast_rules),
    };
    return cmocka_run_group_tests_name("training graph", tests, NULL, NULL);
}
