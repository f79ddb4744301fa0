/* test_verify.c — planner/plan_verify.c rejects hand-broken plans, naming the
 * node: overlapping offsets, a SwapIn without its SwapOut, a consumer before
 * its producer, a workspace on a live tensor; and accepts the unbroken plan
 * they start from. Also: layout_plan places node workspaces in the arena, and
 * an in-place view (train_view_source) shares its input's storage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ir/ops/op_table.h"
#include "plan/plan_file.h"
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
    layout_plan(v->rw.tg, NULL, NULL, &v->l);
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
    int bn = pf_node(g, "/relu/Relu/fused"), conv = pf_node(g, "/conv1/Conv");
    int a = g->nodes[conv].outputs[0], b = g->nodes[bn].outputs[0];
    v->l.offset[b] =
        v->l.offset[a]; /* the fused bn1 + relu reads conv1's output while writing its own */
    expect_reject(v, "/relu/Relu/fused", "overlaps");
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
    int c = pf_node(g, "/conv1/Conv"), r = pf_node(g, "/relu/Relu/fused");
    ir_node tmp = g->nodes[c];
    g->nodes[c] = g->nodes[r];
    g->nodes[r] = tmp;
    for (int k = 0; k < g->nodes[c].n_outputs; k++)
        if (g->nodes[c].outputs[k] >= 0) g->tensors[g->nodes[c].outputs[k]].producer = c;
    for (int k = 0; k < g->nodes[r].n_outputs; k++)
        if (g->nodes[r].outputs[k] >= 0) g->tensors[g->nodes[r].outputs[k]].producer = r;
    expect_reject(v, "/relu/Relu/fused", "produced later, by node '/conv1/Conv'");
}

/* The Flatten before the classifier is an in-place view: its output shares
 * its input's storage (one root, one offset, no outcore_offsets of its own),
 * which lives until the output's last use (here its SwapOut, the plan swapping
 * every saved tensor); the verified plan above holds it. Not a view when its
 * output is a graph output, nor for a node that is no view op. */
static void test_view_in_place(void **state) {
    pv *v = *state;
    train_graph *tg = v->rw.tg;
    ir_graph *g = tg->g;
    int fl = pf_node(g, "/Flatten");
    int t = g->nodes[fl].inputs[0], o = g->nodes[fl].outputs[0];
    assert_int_equal(train_view_source(tg, fl), t);
    assert_int_equal(train_view_source(tg, pf_node(g, "/conv1/Conv")), -1);
    plan_lifetimes lt;
    plan_lifetimes_compute(tg, &lt);
    int r = lt.root[t];
    assert_int_equal(lt.root[o], r);
    assert_true(plan_lifetimes_device(&lt, r));
    assert_false(plan_lifetimes_device(&lt, o));
    int last_o = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] == o) last_o = i;
    assert_true(last_o > fl);
    assert_true(op_is_swap_out(&g->nodes[last_o]) || last_o > fl + 1);
    assert_int_equal(lt.last[r], last_o);
    plan_lifetimes_free(&lt);
    assert_int_equal(v->l.offset[o], v->l.offset[t]);
    const int64_t *offs;
    assert_int_equal(ir_attr_ints(&g->nodes[fl], PLAN_ATTR_OFFSETS, &offs), 1);
    assert_int_equal(offs[0], -1);
    g->tensors[o].is_graph_output = true;
    assert_int_equal(train_view_source(tg, fl), -1);
    g->tensors[o].is_graph_output = false;
}

/* Budget below the arena. */
/* Every convolution-family node given a workspace (as a measured cuDNN
 * profile would): each region lies in the arena, apart from every tensor live
 * at its node (the verifier, independently: by a brute-force check here), the
 * arena grows by at most the largest workspace, and the attributes say so. */
static void test_workspaces_laid_out(void **state) {
    pv *v = *state;
    train_graph *tg = v->rw.tg;
    const ir_graph *g = tg->g;
    int64_t *ws = calloc((size_t)g->n_nodes + 1, sizeof(int64_t)), wmax = 0;
    int with = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (strstr(g->nodes[i].op_type, "Conv")) {
            ws[i] = 1000 + 4096 * (int64_t)(i % 7); /* unaligned sizes on purpose */
            if (ws[i] > wmax) wmax = ws[i];
            with++;
        }
    assert_true(with > 20);
    layout_result l;
    layout_plan(tg, ws, NULL, &l);
    layout_apply(tg, &l);
    oc_err err;
    if (plan_verify(tg, l.offset, l.arena_bytes, l.arena_bytes, &err)) fail_msg("%s", err.msg);
    assert_true(l.arena_bytes >= v->l.arena_bytes);
    assert_true(l.arena_bytes <= v->l.arena_bytes + wmax + PLAN_ALIGN + v->l.arena_bytes / 20);
    plan_lifetimes lt;
    plan_lifetimes_compute(tg, &lt);
    for (int i = 0; i < g->n_nodes; i++) {
        const int64_t *attr;
        int na = ir_attr_ints(&g->nodes[i], PLAN_ATTR_WORKSPACE, &attr);
        if (!ws[i]) {
            assert_int_equal(na, -1);
            continue;
        }
        assert_int_equal(na, 2);
        assert_int_equal(attr[0], l.ws_offset[i]);
        assert_int_equal(attr[1], ws[i]);
        int64_t lo = l.ws_offset[i], hi = lo + ws[i];
        assert_true(lo >= 0 && lo % PLAN_ALIGN == 0 && hi <= l.arena_bytes);
        for (int t = 0; t < g->n_tensors; t++) {
            if (!plan_lifetimes_device(&lt, t) || lt.first[t] > i || lt.last[t] < i) continue;
            if (l.offset[t] < hi && lo < l.offset[t] + lt.bytes[t])
                fail_msg("node '%s': workspace [%lld, %lld) overlaps live tensor '%s'",
                         g->nodes[i].name, (long long)lo, (long long)hi, g->tensors[t].name);
        }
    }
    plan_lifetimes_free(&lt);
    /* Broken: the first conv's workspace moved onto its own input. */
    int c = pf_node(g, "/conv1/Conv");
    ir_node *n = &g->nodes[c];
    for (int a = 0; a < n->n_attrs; a++)
        if (strcmp(n->attrs[a].name, PLAN_ATTR_WORKSPACE) == 0)
            n->attrs[a].ints[0] = l.offset[n->inputs[0]];
    assert_int_equal(plan_verify(tg, l.offset, l.arena_bytes, 0, &err), OC_ERR);
    if (!strstr(err.msg, "/conv1/Conv") || !strstr(err.msg, "workspace"))
        fail_msg("message does not name the node and its workspace: %s", err.msg);
    layout_result_free(&l);
    free(ws);
}

static void test_over_budget(void **state) {
    pv *v = *state;
    oc_err err;
    assert_int_equal(
        plan_verify(v->rw.tg, v->l.offset, v->l.arena_bytes, v->l.arena_bytes - 1, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "over the budget"));
}

/* Brute force: some two device tensors live at a common position share a byte. */
static bool overlap_brute(const train_graph *tg, const int64_t *off) {
    plan_lifetimes lt;
    plan_lifetimes_compute(tg, &lt);
    bool found = false;
    for (int a = 0; a < lt.n && !found; a++) {
        if (!plan_lifetimes_device(&lt, a)) continue;
        for (int b = a + 1; b < lt.n && !found; b++)
            found = plan_lifetimes_device(&lt, b) && lt.first[a] <= lt.last[b] &&
                    lt.first[b] <= lt.last[a] && off[a] < off[b] + lt.bytes[b] &&
                    off[b] < off[a] + lt.bytes[a];
    }
    plan_lifetimes_free(&lt);
    return found;
}

/* The verifier's O(n log n) overlap sweep agrees with the pairwise check on
 * 300 layouts made by moving 1 to 3 random tensors to random aligned offsets or
 * by small shifts (some collide, some do not; a shift collides with one
 * address neighbour, below or above, born earlier or later). */
static void test_overlap_sweep_matches_brute_force(void **state) {
    pv *v = *state;
    const train_graph *tg = v->rw.tg;
    int nt = tg->g->n_tensors, rejected = 0, accepted = 0;
    int64_t *off = malloc((size_t)nt * sizeof(int64_t));
    uint64_t rng = 99;
    for (int trial = 0; trial < 300; trial++) {
        memcpy(off, v->l.offset, (size_t)nt * sizeof(int64_t));
        int moves = 1 + trial % 3;
        for (int k = 0; k < moves; k++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            int t = (int)((rng >> 33) % (uint64_t)nt);
            if (off[t] < 0) continue;
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            if (trial % 2) /* anywhere */
                off[t] = (int64_t)((rng >> 33) % (uint64_t)(v->l.arena_bytes / 2 / 256)) * 256;
            else /* a small shift up or down: collides with an address neighbour at most */
                off[t] += ((int64_t)((rng >> 33) % 17) - 8) * 256;
            if (off[t] < 0) off[t] = 0;
        }
        bool brute = overlap_brute(tg, off);
        oc_err err;
        int rc = plan_verify(tg, off, 4 * v->l.arena_bytes, 0, &err);
        if (brute != (rc == OC_ERR))
            fail_msg("trial %d: brute force says %s, plan_verify %s (%s)", trial,
                     brute ? "overlap" : "no overlap", rc ? "rejects" : "accepts",
                     rc ? err.msg : "");
        if (rc) assert_non_null(strstr(err.msg, "overlaps"));
        rejected += rc != OC_OK, accepted += rc == OC_OK;
    }
    free(off);
    printf("ok - overlap sweep == pairwise check on 300 layouts (%d rejected, %d accepted)\n",
           rejected, accepted);
    assert_true(rejected > 0 && accepted > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_overlapping_offsets, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_swap_in_without_swap_out, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_consumer_before_producer, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_over_budget, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_workspaces_laid_out, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_view_in_place, pv_setup, pv_teardown),
        cmocka_unit_test_setup_teardown(test_overlap_sweep_matches_brute_force, pv_setup,
                                        pv_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
