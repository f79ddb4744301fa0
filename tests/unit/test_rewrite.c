/* test_rewrite.c — planner/rewrite.c: recompute clones, rewiring, BN state,
 * Dropout masks of clones (runtime/cpu kernel keyed by outcore_recompute_of). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernels.h"
#include "ir/ops/op_table.h"
#include "emit/plan_write.h"
#include "unit/plan_fixture.h"

/* The plan both tests rewrite: relu's output recomputed, conv1's swapped. */
static sim_plan *recompute_relu_swap_conv(train_graph *tg, rewrite_result *rw) {
    sim_plan *p = sim_plan_new(tg);
    sim_plan_set(p, pf_tensor(tg->g, "/relu/Relu_output_0"), SIM_DECISION_RECOMPUTE, -1);
    sim_plan_set(p, pf_tensor(tg->g, "/conv1/Conv_output_0"), SIM_DECISION_SWAP, -1);
    oc_err err;
    if (rewrite_plan(tg, p, NULL, rw, &err)) fail_msg("%s", err.msg);
    return p;
}

/* How many nodes of the rewritten step write bn1's running mean (in place). */
static int running_mean_writers(const rewrite_result *rw) {
    const ir_graph *ng = rw->tg->g;
    int n = 0;
    for (int i = 0; i < ng->n_nodes; i++)
        for (int k = 0; k < ng->nodes[i].n_outputs; k++) {
            int o = ng->nodes[i].outputs[k];
            n += o >= 0 && rw->tg->alias_of[o] >= 0 &&
                 strcmp(ng->tensors[rw->tg->alias_of[o]].name, "bn1.running_mean") == 0;
        }
    return n;
}

/* relu output RECOMPUTE (chain: bn1 output is not saved, so bn1 re-runs too),
 * conv1 output (bn1's input) SWAP: the recompute starts from a swapped-in tensor.
 * (--no-fuse: BN and Relu as the model has them.) */
static void test_recompute_from_swapped(void **state) {
    (void)state;
    train_graph *tg = pf_resnet18_fuse(TRAIN_FUSE_NONE);
    const ir_graph *g = tg->g;
    int relu = pf_tensor(g, "/relu/Relu_output_0"), conv = pf_tensor(g, "/conv1/Conv_output_0");
    rewrite_result rw;
    oc_err err;
    sim_plan *p = recompute_relu_swap_conv(tg, &rw);
    const ir_graph *ng = rw.tg->g;
    assert_int_equal(rw.n_swap_out, 1);
    assert_int_equal(rw.n_swap_in, 1);
    assert_int_equal(rw.n_recompute, 2); /* bn1, relu */
    /* BN clone: reads the swapped-in conv1 output, no running-stat outputs. */
    int bn = pf_node(ng, "/bn1/BatchNormalization/recompute1");
    const ir_node *b = &ng->nodes[bn];
    assert_string_equal(ir_attr_string(b, PLAN_ATTR_RECOMPUTE_OF, ""), "/bn1/BatchNormalization");
    assert_string_equal(ng->tensors[b->inputs[0]].name, "/conv1/Conv_output_0/swapin");
    assert_true(b->n_outputs >= 1);
    for (int k = 1; k < 3 && k < b->n_outputs; k++) assert_int_equal(b->outputs[k], -1);
    for (int k = 0; k < b->n_outputs; k++)
        if (b->outputs[k] >= 0) assert_int_equal(rw.tg->alias_of[b->outputs[k]], -1);
    /* The original BN still updates the running statistics, exactly once. */
    assert_int_equal(running_mean_writers(&rw), 1);
    /* The SwapIn precedes the clone, which precedes the relu clone. */
    int si = pf_node(ng, "/conv1/Conv_output_0/swap_in");
    int rc = pf_node(ng, "/relu/Relu/recompute1");
    assert_true(si < bn && bn < rc);
    assert_int_equal(ng->nodes[rc].inputs[0], b->outputs[0]);
    /* Every backward reader reads the rewired names, never the originals. */
    int rc_out = ng->nodes[rc].outputs[0], si_out = ng->nodes[si].outputs[0], n_readers = 0;
    for (int i = rw.tg->n_forward - 1; i < ng->n_nodes; i++) {
        const ir_node *n = &ng->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            assert_int_not_equal(n->inputs[k], relu);
            if (!op_is_swap_out(n)) assert_int_not_equal(n->inputs[k], conv);
            n_readers += n->inputs[k] == rc_out || n->inputs[k] == si_out;
        }
    }
    /* relu: MaxPool grad + Relu grad; conv1 output: BN grad + the BN clone. */
    assert_int_equal(n_readers, 4);
    /* Readers in the source graph map one to one. */
    int src_readers =
        train_saved_readers(tg, relu, NULL, 0) + train_saved_readers(tg, conv, NULL, 0);
    assert_int_equal(src_readers + 1, n_readers);
    /* The whole plan lays out and verifies. */
    layout_result l;
    layout_plan(rw.tg, NULL, NULL, &l);
    layout_apply(rw.tg, &l);
    if (plan_verify(rw.tg, l.offset, l.arena_bytes, 0, &err)) fail_msg("%s", err.msg);
    assert_true(l.arena_bytes >= l.peak_bytes);
    layout_result_free(&l);
    rewrite_result_free(&rw);
    sim_plan_free(p);
    train_graph_free(tg);
}

/* The same with bn1 + relu fused (the default): one clone of the fused node,
 * from the swapped-in conv1 output, without the running-statistics outputs;
 * the original still updates them, once. */
static void test_recompute_fused_from_swapped(void **state) {
    (void)state;
    train_graph *tg = pf_resnet18();
    rewrite_result rw;
    oc_err err;
    sim_plan *p = recompute_relu_swap_conv(tg, &rw);
    const ir_graph *ng = rw.tg->g;
    assert_int_equal(rw.n_recompute, 1);
    int rc = pf_node(ng, "/relu/Relu/fused/recompute1");
    const ir_node *b = &ng->nodes[rc];
    assert_int_equal(b->op, OP_BATCH_NORM_RELU);
    assert_string_equal(ng->tensors[b->inputs[0]].name, "/conv1/Conv_output_0/swapin");
    for (int k = 1; k < b->n_outputs; k++) assert_int_equal(b->outputs[k], -1);
    assert_int_equal(running_mean_writers(&rw), 1);
    assert_true(pf_node(ng, "/conv1/Conv_output_0/swap_in") < rc);
    layout_result l;
    layout_plan(rw.tg, NULL, NULL, &l);
    layout_apply(rw.tg, &l);
    if (plan_verify(rw.tg, l.offset, l.arena_bytes, 0, &err)) fail_msg("%s", err.msg);
    layout_result_free(&l);
    rewrite_result_free(&rw);
    sim_plan_free(p);
    train_graph_free(tg);
}

/* The logits recomputed: the loss node reads them too, and the simulator
 * counts the loss as backward, so the clone comes right before the loss node;
 * it must be a forward-phase node there (the structure every loader checks:
 * forward nodes, the loss, then backward and update), the GPU run of
 * 2026-11-26 found a plan whose clone was marked backward and did not load. */
static void test_recompute_loss_input(void **state) {
    (void)state;
    train_graph *tg = pf_resnet18();
    const ir_graph *g = tg->g;
    int logits = g->nodes[tg->n_forward - 1].inputs[0];
    sim_plan *p = sim_plan_new(tg);
    sim_plan_set(p, logits, SIM_DECISION_RECOMPUTE, -1);
    rewrite_result rw;
    oc_err err;
    if (rewrite_plan(tg, p, NULL, &rw, &err)) fail_msg("%s", err.msg);
    const ir_graph *ng = rw.tg->g;
    int loss = rw.tg->n_forward - 1, clone = -1;
    assert_int_equal(rw.tg->phase[loss], TRAIN_PHASE_LOSS);
    for (int i = 0; i < ng->n_nodes; i++)
        if (ir_attr_find(&ng->nodes[i], PLAN_ATTR_RECOMPUTE_OF)) clone = i;
    assert_int_equal(clone, loss - 1);
    for (int i = 0; i < ng->n_nodes; i++)
        if (i < loss) assert_int_equal(rw.tg->phase[i], TRAIN_PHASE_FORWARD);
        else if (i > loss) assert_int_not_equal(rw.tg->phase[i], TRAIN_PHASE_FORWARD);
    /* the loss reads the clone's output */
    assert_int_equal(ng->nodes[loss].inputs[0], ng->nodes[clone].outputs[0]);
    rewrite_result_free(&rw);
    sim_plan_free(p);
    train_graph_free(tg);
}

static bool bytes_overlap(int64_t a, int64_t na, int64_t b, int64_t nb) {
    return a < b + nb && b < a + na;
}

/* The layout of a swap-all plan (plan_make, resnet18 b2, v100 profile: its copies run
 * long beside compute): no kernel that starts, in the predicted timeline, before a
 * SwapOut's copy ends writes an output or workspace over the bytes that copy reads
 * (the runtime would make it wait for the copy: 83 ms per step on the H200 before). */
static void test_layout_waits_for_no_copy(void **state) {
    (void)state;
    train_graph *tg = pf_resnet18();
    oc_err err;
    profile_device dev;
    assert_int_equal(device_preset_find("v100", &dev, &err), OC_OK);
    profile *prof = profile_analytic(tg, &dev, 2);
    for (int i = 0; i < prof->n_nodes; i++) /* workspaces: regions that must avoid copies too */
        prof->nodes[i].workspace_bytes = (i % 3 == 0) ? 1 << 20 : 0;
    sim_context *ctx;
    if (sim_context_new(tg, prof, "v100", &ctx, &err)) fail_msg("%s", err.msg);
    strategy_input in = {.tg = tg, .prof = prof, .ctx = ctx, .opts = strategy_options_default()};
    plan_made pm;
    if (plan_make(strategy_find("swap-all"), &in, &pm, &err)) fail_msg("%s", err.msg);
    assert_true(pm.feasible);
    const train_graph *ntg = pm.rw.tg;
    const ir_graph *g = ntg->g;
    int checked = 0, swaps = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const ir_node *so = &g->nodes[k];
        if (so->op != OP_SWAP_OUT) continue;
        swaps++;
        int x = so->inputs[0];
        int64_t xb = 0, xo = pm.layout.offset[x];
        ir_tensor_bytes(&g->tensors[x], &xb);
        for (int i = k + 1; i < g->n_nodes && pm.rw.start[i] < pm.rw.end[k]; i++) {
            if (rewrite_node_stream(&g->nodes[i]) != REWRITE_STREAM_COMPUTE || pm.rw.start[i] < 0)
                continue;
            const ir_node *n = &g->nodes[i];
            for (int o = 0; o < n->n_outputs; o++) {
                int t = n->outputs[o];
                int64_t tb = 0;
                if (t < 0 || pm.layout.offset[t] < 0 || !ir_tensor_bytes(&g->tensors[t], &tb))
                    continue;
                if (bytes_overlap(xo, xb, pm.layout.offset[t], tb))
                    fail_msg("'%s' writes '%s' over '%s' while its SwapOut runs (%.6f < %.6f)",
                             n->name, g->tensors[t].name, g->tensors[x].name, pm.rw.start[i],
                             pm.rw.end[k]);
                checked++;
            }
            if (pm.layout.ws_bytes[i] > 0 &&
                bytes_overlap(xo, xb, pm.layout.ws_offset[i], pm.layout.ws_bytes[i]))
                fail_msg("'%s''s workspace lies over '%s' while its SwapOut runs", n->name,
                         g->tensors[x].name);
        }
    }
    assert_true(swaps > 10);
    assert_true(checked > 10); /* kernels did run beside the copies */
    plan_made_free(&pm);
    sim_context_free(ctx);
    profile_free(prof);
    train_graph_free(tg);
}

/* Every saved tensor swapped: each backward reader of a saved tensor reads its
 * "/swapin" name; forward readers keep the originals. */
static void test_swap_all_rewired(void **state) {
    (void)state;
    train_graph *tg = pf_resnet18();
    sim_plan *p = sim_plan_new(tg);
    sim_plan_swap_all(p);
    rewrite_result rw;
    oc_err err;
    if (rewrite_plan(tg, p, NULL, &rw, &err)) fail_msg("%s", err.msg);
    const ir_graph *ng = rw.tg->g;
    assert_int_equal(rw.n_swap_in, tg->n_saved);
    bool *saved = calloc((size_t)ng->n_tensors, 1);
    for (int i = 0; i < tg->n_saved; i++) saved[tg->saved[i]] = true;
    int rewired = 0;
    for (int i = rw.tg->n_forward - 1; i < ng->n_nodes; i++) {
        const ir_node *n = &ng->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            if (t < tg->g->n_tensors && !op_is_swap_out(n)) assert_false(saved[t]);
            rewired += strstr(ng->tensors[t].name, "/swapin") != NULL;
        }
    }
    assert_true(rewired >= tg->n_saved);
    free(saved);
    rewrite_result_free(&rw);
    sim_plan_free(p);
    train_graph_free(tg);
}

/* The cpu Dropout kernel: a clone naming its original draws the same mask. */
static void test_dropout_clone_same_mask(void **state) {
    (void)state;
    ir_graph *g = ir_graph_new();
    g->opset = 13;
    int64_t n = 4096;
    int x = ir_tensor_add(g, "x", IR_DTYPE_FLOAT), r = ir_tensor_add(g, "ratio", IR_DTYPE_FLOAT);
    int tm = ir_tensor_add(g, "tm", IR_DTYPE_BOOL);
    ir_tensor_set_shape(&g->tensors[x], 1, &n);
    ir_tensor_set_shape(&g->tensors[r], 0, NULL);
    ir_tensor_set_shape(&g->tensors[tm], 0, NULL);
    float ratio = 0.5f;
    uint8_t train = 1;
    ir_tensor_set_data(&g->tensors[r], &ratio, sizeof ratio); /* plan-time values, as exported */
    ir_tensor_set_data(&g->tensors[tm], &train, 1);
    int ys[3], ms[3], nodes[3];
    const char *names[3] = {"drop", "drop/recompute1", "other"};
    for (int i = 0; i < 3; i++) {
        char b[32];
        snprintf(b, sizeof b, "y%d", i);
        ys[i] = ir_tensor_add(g, b, IR_DTYPE_FLOAT);
        snprintf(b, sizeof b, "m%d", i);
        ms[i] = ir_tensor_add(g, b, IR_DTYPE_BOOL);
        ir_tensor_set_shape(&g->tensors[ys[i]], 1, &n);
        ir_tensor_set_shape(&g->tensors[ms[i]], 1, &n);
        nodes[i] = op_node_add(g, names[i], OP_DROPOUT);
        ir_node_add_input(g, nodes[i], x);
        ir_node_add_input(g, nodes[i], r);
        ir_node_add_input(g, nodes[i], tm);
        ir_node_add_output(g, nodes[i], ys[i]);
        ir_node_add_output(g, nodes[i], ms[i]);
    }
    ir_attr a = {.name = PLAN_ATTR_RECOMPUTE_OF, .type = IR_ATTR_STRING, .s = "drop"};
    ir_node_add_attr(g, nodes[1], &a);
    for (int i = 0; i < 3; i++) {
        oc_err err;
        if (op_infer(g, &g->nodes[nodes[i]], &err)) fail_msg("%s", err.msg);
    }
    float *xv = malloc((size_t)n * sizeof(float));
    float *y[3];
    uint8_t *m[3];
    for (int64_t k = 0; k < n; k++) xv[k] = (float)k * 0.25f - 3.0f;
    for (int i = 0; i < 3; i++) {
        y[i] = malloc((size_t)n * sizeof(float));
        m[i] = malloc((size_t)n);
        void *in[3] = {xv, &ratio, &train}, *out[2] = {y[i], m[i]};
        kernel_args ka = {
            .g = g, .n = &g->nodes[nodes[i]], .in = in, .out = out, .seed = 7, .step = 3};
        oc_err err;
        if (cpu_kernel_run(&ka, &err)) fail_msg("%s", err.msg);
    }
    assert_memory_equal(y[0], y[1], (size_t)n * sizeof(float));
    assert_memory_equal(m[0], m[1], (size_t)n);
    assert_memory_not_equal(m[0], m[2], (size_t)n); /* another node: another mask */
    for (int i = 0; i < 3; i++) free(y[i]), free(m[i]);
    free(xv);
    ir_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recompute_from_swapped),
        cmocka_unit_test(test_recompute_fused_from_swapped),
        cmocka_unit_test(test_swap_all_rewired),
        cmocka_unit_test(test_recompute_loss_input),
        cmocka_unit_test(test_layout_waits_for_no_copy),
        cmocka_unit_test(test_dropout_clone_same_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
