/* test_verify.c — planner/plan_verify.c rejects hand-broken plans, naming the
 * node: overlapping offsets, a SwapIn without its SwapOut, a consumer before
 * its producer; and accepts the unbroken plan they start from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unit/plan_fixture.h"

typedef struct pv {
    train_graph *src;
    sim_plan *p;
    rewrite_result rw;
    layout_result l;
} pv;

/* resnet18, every saved tensor swapped, laid out; verified clean first. */
static int pv_setup(void **state) {
    pv *v = calloc(1, sizeof *v);
    v->src = pf_resnet18();
    v->p = sim_plan_new(v->src);
    sim_plan_swap_all(v->p);
    oc_err err;
    if (rewrite_plan(v->src, v->p, NULL, &v->rw, &err)) fail_msg("%s", err.msg);
    layout_plan(v->rw.tg, &v->l);
    layout_apply(v->rw.tg, &v->l);
    if (plan_verify(v->rw.tg, v->l.offset, v->l.arena_bytes, v->l.arena_bytes, &err))
        fail_msg("clean plan rejected: %s", err.msg);
    *state = v;
    return 0;
}

static int pv_teardown(void **state) {
    pv *v = *state;
    layout_result_free(&v->l);
    rewrite_result_free(&v->rw);
    sim_plan_free(v->p);
    train_graph_free(v->src);
    free(v);
    return 0;
}

static void expect_reject(pv *v, const char *node, const char *what) {
    oc_err err;
    assert_int_equal(plan_verify(v->rw.tg, v->l.offset, v->l.arena_bytes, 0, &err), OC_ERR);
    if (!strstr(err.msg, node)) fail_msg("message does not name node '%s': %s", node, err.msg);
    if (!strstr(err.msg, what)) fail_msg("message does not say '%s': %s", what, err.msg);
}

/* Two tensors live together: the second moved onto the first's bytes. */
static void test_overlapping_offsets(void **state) {
    pv *v = *state;
    const ir_graph *g = v->rw.tg->g;
    int bn = pf_node(g, "/bn1/BatchNormalization"), conv = pf_node(g, "/conv1/Conv");
    int a = g->nodes[conv].outputs[0], b = g->nodes[bn].outputs[0];
    v->l.offset[b] = v->l.offset[a]; /* bn1 reads conv1's output while writing its own */
    expect_reject(v, "/bn1/BatchNormalization", "overlaps");
}

/* The SwapIn reads the device tensor instead of the SwapOut's host copy. */
static void test_swap_in_without_swap_out(void **state) {
    pv *v = *state;
    ir_graph *g = v->rw.tg->g;
    int si = pf_node(g, "/relu/Relu_output_0/swap_in");
    g->nodes[si].inputs[0] = pf_tensor(g, "/relu/Relu_output_0");
    expect_reject(v, "/relu/Relu_output_0/swap_in", "no earlier SwapOut");
}

/* A consumer moved before its producer (the two nodes swap places). */
static void test_consumer_before_producer(void **state) {
    pv *v = *state;
    ir_graph *g = v->rw.tg->g;
    int c = pf_node(g, "/conv1/Conv"), r = pf_node(g, "/bn1/BatchNormalization");
    ir_node tmp = g->nodes[c];
    g->nodes[c] = g->nodes[r];
    g->nodes[r] = tmp;
    for (int k = 0; k < g->nodes[c].n_outputs; k++)
        if (g->nodes[c].outputs[k] >= 0) g->tensors[g->nodes[c].outputs[k]].producer = c;
    for (int k = 0; k < g->nodes[r].n_outputs; k++)
        if (g->nodes[r].outputs[k] >= 0) g->tensors[g->nodes[r].outputs[k]].producer = r;
    expect_reject(v, "/bn1/BatchNormalization", "produced later, by node '/conv1/Conv'");
}

/* Budget below the arena. */
static void test_over_budget(void **state) {
    pv *v = *state;
    oc_err err;
    assert_int_equal(plan_verify(v->rw.tg, v->l.offset, v->l.arena_bytes, v->l.arena_bytes - 1, &err),
                     OC_ERR);
    assert_non_null(strstr(err.msg, "over the budget"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_overlapping_offsets, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_swap_in_without_swap_out, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_consumer_before_producer, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_over_budget, pv_setup, pv_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
