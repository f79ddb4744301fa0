/* test_export.c — onnx_export: the in-core training graph written as ONNX and
 * read back by the runtime loader is the same graph: nodes (order, names, ops,
 * domains, attributes, inputs, outputs), tensor shapes/dtypes, initializer
 * data, phases, forward partners, tensor kinds, saved tensors, in-place
 * aliases, parameter gradients, optimizer settings;
 * structure-only initializers survive as data-less initializers; fused nodes
 * written back as their chains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "init.h"
#include "ir/onnx_export.h"
#include "ir/ops/op_table.h"
#include "loader.h"
#include "onnx.pb-c.h"
#include "train/train_export.h"

static train_graph *build(const char *path, int64_t batch) {
    rt_load_opts lo = {.batch = batch, .train = train_opts_default()};
    lo.train.lr = 0.05f, lo.train.momentum = 0.8f, lo.train.weight_decay = 5e-4f;
    train_graph *tg;
    rt_model_info info;
    oc_err err;
    if (rt_load(path, &lo, &tg, &info, &err)) fail_msg("%s", err.msg);
    assert_false(info.is_training_graph);
    return tg;
}

static void assert_same_attr(const ir_attr *a, const ir_attr *b) {
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->i, b->i);
    assert_true(a->f == b->f);
    assert_int_equal(a->n, b->n);
    if (a->type == IR_ATTR_STRING) assert_string_equal(a->s, b->s);
    if (a->type == IR_ATTR_INTS) assert_memory_equal(a->ints, b->ints, (size_t)a->n * 8);
    if (a->type == IR_ATTR_FLOATS) assert_memory_equal(a->floats, b->floats, (size_t)a->n * 4);
}

static const char *tname(const ir_graph *g, int t) { return t >= 0 ? g->tensors[t].name : ""; }

static void assert_same_training_graph(const train_graph *a, const train_graph *b, bool data) {
    const ir_graph *ga = a->g, *gb = b->g;
    assert_int_equal(ga->n_nodes, gb->n_nodes);
    assert_int_equal(a->n_forward, b->n_forward);
    for (int i = 0; i < ga->n_nodes; i++) {
        const ir_node *x = &ga->nodes[i], *y = &gb->nodes[i];
        assert_string_equal(x->name, y->name);
        assert_string_equal(x->op_type, y->op_type);
        assert_string_equal(x->domain, y->domain);
        assert_int_equal(a->phase[i], b->phase[i]);
        assert_int_equal(a->fwd_of[i], b->fwd_of[i]);
        assert_int_equal(x->n_inputs, y->n_inputs);
        for (int k = 0; k < x->n_inputs; k++)
            assert_string_equal(tname(ga, x->inputs[k]), tname(gb, y->inputs[k]));
        int nx = x->n_outputs, ny = y->n_outputs; /* trailing omitted outputs are dropped */
        while (nx > 1 && x->outputs[nx - 1] < 0) nx--;
        assert_int_equal(nx, ny);
        for (int k = 0; k < nx; k++)
            assert_string_equal(tname(ga, x->outputs[k]), tname(gb, y->outputs[k]));
        assert_int_equal(x->n_attrs, y->n_attrs);
        for (int k = 0; k < x->n_attrs; k++) assert_same_attr(&x->attrs[k], &y->attrs[k]);
    }
    int n_init = 0;
    for (int t = 0; t < ga->n_tensors; t++) {
        const ir_tensor *x = &ga->tensors[t];
        if (x->n_consumers == 0 && x->producer < 0) continue;
        int u = ir_tensor_find(gb, x->name);
        if (u < 0) fail_msg("tensor '%s' lost in the round trip", x->name);
        const ir_tensor *y = &gb->tensors[u];
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->rank, y->rank);
        assert_memory_equal(x->dims, y->dims,
                            sizeof(int64_t) * (size_t)(x->rank > 0 ? x->rank : 0));
        assert_int_equal(x->is_initializer, y->is_initializer);
        assert_int_equal(x->kind, y->kind); /* read back from outcore.structure */
        assert_int_equal(a->alias_of[t] >= 0, b->alias_of[u] >= 0);
        if (a->alias_of[t] >= 0)
            assert_string_equal(tname(ga, a->alias_of[t]), tname(gb, b->alias_of[u]));
        assert_string_equal(tname(ga, a->grad_of[t]), tname(gb, b->grad_of[u]));
        if (x->is_initializer) {
            n_init++;
            assert_int_equal(x->data_src == IR_DATA_INLINE, y->data_src == IR_DATA_INLINE);
            if (data && x->data_src == IR_DATA_INLINE) {
                assert_int_equal(x->data_bytes, y->data_bytes);
                assert_memory_equal(x->data, y->data, x->data_bytes);
            }
        }
    }
    assert_true(n_init > 0);
    assert_int_equal(a->n_saved, b->n_saved);
    for (int i = 0; i < a->n_saved; i++)
        assert_string_equal(tname(ga, a->saved[i]), tname(gb, b->saved[i]));
    assert_string_equal(tname(ga, a->loss_tensor), tname(gb, b->loss_tensor));
    assert_string_equal(tname(ga, a->label_tensor), tname(gb, b->label_tensor));
    assert_true(a->opts.lr == b->opts.lr && a->opts.momentum == b->opts.momentum &&
                a->opts.weight_decay == b->opts.weight_decay);
    assert_int_equal(a->incore_peak_bytes, b->incore_peak_bytes);
}

static void round_trip(const char *model, bool with_data) {
    train_graph *a = build(model, 2);
    oc_err err;
    int n;
    if (with_data && rt_init_missing(a, 7, &n, &err)) fail_msg("%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "/tmp/oc_test_export_%d.onnx", (int)getpid());
    onnx_export_meta m = {.source_model = model, .batch = 2};
    if (onnx_export_training(a, &m, path, &err)) fail_msg("%s", err.msg);
    rt_load_opts lo = {0};
    train_graph *b;
    rt_model_info info;
    if (rt_load(path, &lo, &b, &info, &err)) fail_msg("%s", err.msg);
    assert_true(info.is_training_graph);
    assert_int_equal(info.batch, 2);
    assert_string_equal(info.source_model, model);
    assert_same_training_graph(a, b, with_data);
    /* A different --batch is refused, naming the emitted one. */
    lo.batch = 4;
    train_graph *c;
    assert_int_equal(rt_load(path, &lo, &c, &info, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "batch 2"));
    unlink(path);
    train_graph_free(a);
    train_graph_free(b);
}

static void resnet18_structure_only(void **s) {
    (void)s;
    round_trip("graphs/resnet18_op13.onnx", false);
}
static void resnet18_with_data(void **s) {
    (void)s;
    round_trip("graphs/resnet18_op13.onnx", true);
}
static void googlenet_op15(void **s) {
    (void)s;
    round_trip("graphs/googlenet_op15.onnx", false);
}
static void alexnet_dropout(void **s) {
    (void)s;
    round_trip("graphs/alexnet_op13.onnx", false);
}

/* The forward nodes exported with unfuse (what --save writes): op types of
 * the written nodes counted; *n_opsets: the opsets declared. */
static int count_exported(const train_graph *tg, const char *op_type, size_t *n_opsets) {
    const ir_graph *g = tg->g;
    int loss = tg->n_forward - 1, in = g->inputs[0], out = g->nodes[loss].inputs[0];
    onnx_export_spec spec = {.node_begin = 0,
                             .node_end = loss,
                             .inputs = &in,
                             .n_inputs = 1,
                             .outputs = &out,
                             .n_outputs = 1,
                             .unfuse = true};
    uint8_t *buf;
    size_t len;
    oc_err err;
    if (onnx_export_graph_buffer(g, &spec, &buf, &len, &err)) fail_msg("%s", err.msg);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    assert_non_null(m);
    int k = 0;
    for (size_t i = 0; i < m->graph->n_node; i++)
        k += strcmp(m->graph->node[i]->op_type, op_type) == 0;
    *n_opsets = m->n_opset_import;
    onnx__model_proto__free_unpacked(m, NULL);
    oc_free(buf);
    return k;
}

/* AlexNet's Conv -> Relu chains are ConvRelu nodes, written back as Conv and
 * Relu (the standard opset alone); one without its chain recorded is written
 * as itself, and the ai.outcore opset is then declared. */
static void alexnet_conv_relu_unfused(void **s) {
    (void)s;
    train_graph *tg = build("graphs/alexnet_op13.onnx", 2);
    int fused = 0, first = -1;
    for (int i = 0; i < tg->n_forward; i++)
        if (tg->g->nodes[i].op == OP_CONV_RELU) fused++, first = first < 0 ? i : first;
    assert_int_equal(fused, 5);
    size_t n_opsets;
    assert_int_equal(count_exported(tg, "ConvRelu", &n_opsets), 0);
    assert_int_equal(count_exported(tg, "Conv", &n_opsets), 5);
    assert_int_equal(n_opsets, 1);
    ir_attr *a = (ir_attr *)ir_attr_find(&tg->g->nodes[first], "members");
    assert_non_null(a);
    a->name[0] = 'X'; /* the chain no longer recorded */
    assert_int_equal(count_exported(tg, "ConvRelu", &n_opsets), 1);
    assert_int_equal(n_opsets, 2);
    train_graph_free(tg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resnet18_structure_only),
        cmocka_unit_test(resnet18_with_data),
        cmocka_unit_test(googlenet_op15),
        cmocka_unit_test(alexnet_dropout),
        cmocka_unit_test(alexnet_conv_relu_unfused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
