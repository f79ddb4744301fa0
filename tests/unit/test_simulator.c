/* test_simulator.c — the simulator on hand-built training graphs whose
 * timelines are worked out by hand, and the in-core equivalence on ResNet-18.
 *
 * The hand graph (hand units of HAND_UNIT bytes in brackets, hand_graph.h; every node takes
 * 1 s; copies 1000 units/s):
 *   x[4] -F1-> a[1000] -F2-> b[40] -F3-> c[100] -L-> l[100]
 *   backward: B3(l) -> gc[100]; B2(gc, b) -> gb[100]; B1(gb, a) -> ga[100]
 * saved = {a, b}: a is read by B1, b by B2. Every step starts with x copied to
 * the device (IN = 4 B / bandwidth), which F1 waits for: times below are the
 * worked-out ones plus IN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ir/shape_infer.h"
#include "sim/simulator.h"
#include "unit/hand_graph.h"

static double h_bw; /* the hand graph's copy bandwidth (IN) */

typedef struct hand {
    train_graph *tg;
    profile *prof;
    sim_context *ctx;
    sim_plan *plan;
    sim_timeline *tl;
    int a, b;
} hand;

/* The hand graph, with a profile of 1 s per node and copy bandwidth bw, and
 * contention factors kh, kd, kx (profile_device: compute beside H2D / D2H,
 * copies beside each other). */
static hand *hand_new_contended(double bw, double kh, double kd, double kx) {
    hand *h = calloc(1, sizeof *h);
    h_bw = bw;
    train_graph *tg = h->tg = hand_graph_new(40, &h->a, &h->b);
    h->prof = hand_profile_new(tg, bw, 1.0);
    h->prof->device.compute_slowdown_h2d = kh;
    h->prof->device.compute_slowdown_d2h = kd;
    h->prof->device.copy_slowdown_duplex = kx;
    oc_err err;
    if (sim_context_new(tg, h->prof, "hand", &h->ctx, &err)) fail_msg("%s", err.msg);
    h->plan = sim_plan_new(tg);
    h->tl = sim_timeline_new();
    return h;
}

static hand *hand_new(double bw) { return hand_new_contended(bw, 0, 0, 0); }

static void hand_free(hand *h) {
    sim_timeline_free(h->tl);
    sim_plan_free(h->plan);
    sim_context_free(h->ctx);
    profile_free(h->prof);
    train_graph_free(h->tg);
    free(h);
}

static int teardown(void **state) {
    if (*state) hand_free(*state);
    return 0;
}

static sim_result run(hand *h, int64_t budget) {
    sim_options o = {.budget_bytes = budget};
    sim_result r;
    oc_err err;
    if (sim_run(h->ctx, h->plan, &o, &r, h->tl, &err)) fail_msg("%s", err.msg);
    return r;
}

#define EPS 1e-9
/* Every hand timeline starts with the step's input batch x (4 bytes) copied to
 * the device, which F1 waits for: IN seconds at the hand graph's bandwidth. */
#define IN (4.0 / h_bw)
/* Times compared in double (cmocka's assert_float_equal compares floats). */
#define assert_time(a, b)                                                                          \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (fabs(a_ - b_) > EPS) fail_msg("%s = %.9f, expected %.9f", #a, a_, b_);                 \
    } while (0)

/* SwapIn(a) issued at B3 (t=4) takes 1 s, done at 5; B1 starts at 6: no stall. */
static void test_swap_hidden(void **state) {
    hand *h = *state = hand_new(1000);
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, B3);
    sim_result r = run(h, 0);
    assert_true(r.feasible);
    assert_time(r.swap_out_start[h->a], IN + 1.0);
    assert_time(r.swap_out_end[h->a], IN + 2.0);
    assert_time(r.swap_in_start[h->a], IN + 4.0);
    assert_time(r.swap_in_end[h->a], IN + 5.0);
    assert_time(r.node_start[B1], IN + 6.0);
    assert_time(r.stall_s, IN + 0.0);
    assert_time(r.time_s, IN + 7.0);
    assert_time(r.ideal_s, 7.0);
    assert_time(r.input_s, IN); /* x's copy, first on the H2D queue */
    assert_time(r.node_start[F1], IN);
    assert_int_equal(r.d2h_bytes, 1000 * HAND_UNIT);
    assert_int_equal(r.h2d_bytes, 1000 * HAND_UNIT);
    /* a leaves the device after F2 (its copy is done at 2); the peak is during B3,
     * with a back: b + l + gc + a = 1240 (in forward at most a + b = 1040). */
    assert_int_equal(r.peak_bytes, 1240 * HAND_UNIT);
}

/* Copies take 2.5 s. SwapIn(a) issued at B2 (t=5), done at 7.5; B2 overlaps
 * 1 s of it, so B1 stalls 2.5 - 1 = 1.5 s. Default issue point: all 2.5 s exposed. */
static void test_swap_exposed(void **state) {
    hand *h = *state = hand_new(400);
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, B2);
    sim_result r = run(h, 0);
    assert_true(r.feasible);
    assert_time(r.swap_in_start[h->a], IN + 5.0);
    assert_time(r.swap_in_end[h->a], IN + 7.5);
    assert_time(r.node_start[B1], IN + 7.5);
    assert_time(r.stall_s, IN + 1.5);
    assert_time(r.time_s, IN + 8.5);
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, -1);
    r = run(h, 0);
    assert_time(r.swap_in_start[h->a], IN + 6.0);
    assert_time(r.stall_s, IN + 2.5);
    assert_time(r.time_s, IN + 9.5);
}

/* test_swap_hidden's plan with kernels 1.5x slower beside a D2H copy and 1.25x
 * beside an H2D copy. F2 starts with SwapOut(a) at 1; at 2 the copy ends with
 * F2 2/3 done (1 s at 1/1.5 speed), its last third runs alone: F2 ends at
 * 2 + 1/3. B3 starts with SwapIn(a) at 4 + 1/3; at 5 + 1/3 it is 0.8 done and
 * ends at 5 + 1/3 + 0.2. The step ends 0.5333 s later than without contention;
 * the slowed kernels are busy time, not stall. The timeline's events end where
 * the results say. */
static void test_contention_compute(void **state) {
    hand *h = *state = hand_new_contended(1000, 0.25, 0.5, 0);
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, B3);
    sim_result r = run(h, 0);
    assert_true(r.feasible);
    assert_time(r.swap_out_end[h->a], IN + 2.0);
    assert_time(r.node_end[F2], IN + 2.0 + 1.0 / 3);
    assert_time(r.node_start[B3], IN + 4.0 + 1.0 / 3);
    assert_time(r.swap_in_start[h->a], IN + 4.0 + 1.0 / 3);
    assert_time(r.swap_in_end[h->a], IN + 5.0 + 1.0 / 3);
    assert_time(r.node_end[B3], IN + 5.0 + 1.0 / 3 + 0.2);
    assert_time(r.time_s, IN + 7.0 + 1.0 / 3 + 0.2);
    assert_time(r.stall_s, IN);
    for (int i = 0; i < h->tl->n_events; i++) {
        const sim_event *e = &h->tl->events[i];
        if (e->kind == SIM_EVENT_NODE) assert_time(e->end, r.node_end[e->index]);
    }
}

/* Copies 400 B/s (a: 2.5 s, b: 0.1 s), both swapped, SwapIn(a) issued at F3:
 * it starts when SwapOut(a) ends (1 + 2.5), beside SwapOut(b) (queued behind a
 * on D2H). Both copies run at half speed while together (duplex slowdown 1):
 * SwapOut(b) ends at 3.5 + 0.2, SwapIn(a) has then done 0.1 s of its 2.5 and
 * ends at 3.7 + 2.4 = 6.1 instead of 6.0. */
static void swap_a_early_and_b(hand *h) {
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, F3);
    sim_plan_set(h->plan, h->b, SIM_DECISION_SWAP, -1);
}

static void test_contention_duplex(void **state) {
    hand *h = *state = hand_new_contended(400, 0, 0, 1.0);
    swap_a_early_and_b(h);
    sim_result r = run(h, 0);
    assert_true(r.feasible);
    assert_time(r.swap_out_start[h->b], IN + 3.5);
    assert_time(r.swap_out_end[h->b], IN + 3.7);
    assert_time(r.swap_in_start[h->a], IN + 3.5);
    assert_time(r.swap_in_end[h->a], IN + 6.1);
    /* without contention, the same plan: 6.0 */
    hand_free(h);
    h = *state = hand_new(400);
    swap_a_early_and_b(h);
    r = run(h, 0);
    assert_time(r.swap_in_end[h->a], IN + 6.0);
}

/* Budget 1200: at t=4 b+l+gc (240) are live, a (1000) does not fit; at t=5 B2
 * allocates gb first (compute has priority), so the swap-in starts at 6, when
 * B2 has freed gc and b: live 100 + 1000 <= 1200. B1 waits 6..7: stall 1. */
static void test_swap_waits_for_memory(void **state) {
    hand *h = *state = hand_new(1000);
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, B3);
    sim_result r = run(h, 1200 * HAND_UNIT);
    assert_true(r.feasible);
    assert_time(r.swap_in_start[h->a], IN + 6.0);
    assert_time(r.node_start[B1], IN + 7.0);
    assert_time(r.stall_s, IN + 1.0);
    assert_time(r.time_s, IN + 8.0);
    assert_int_equal(r.peak_bytes, 1200 * HAND_UNIT);
    /* The timeline has every op and copy, and memory samples within budget. */
    assert_int_equal(h->tl->n_events, N_NODES + 3); /* + SwapOut, SwapIn, the input copy */
    for (int i = 0; i < h->tl->n_samples; i++)
        assert_true(h->tl->samples[i].bytes <= 1200 * HAND_UNIT);
}

/* Budget 1050: forward fits (at most a + b = 1040), but B1 needs a back, which
 * needs 1000 bytes besides gb (100): never. */
static void test_deadlock_infeasible(void **state) {
    hand *h = *state = hand_new(1000);
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, -1);
    sim_result r = run(h, 1050 * HAND_UNIT);
    assert_false(r.feasible);
    if (!strstr(r.reason, "deadlock") || !strstr(r.reason, "'B1'") || !strstr(r.reason, "'a'"))
        fail_msg("reason should name the deadlock, node B1 and tensor a: %s", r.reason);
    /* Keeping everything does not fit either: F3 needs a + b + c = 1140. */
    sim_plan_keep_all(h->plan);
    r = run(h, 1050 * HAND_UNIT);
    assert_false(r.feasible);
    assert_non_null(strstr(r.reason, "'F3'"));
}

/* b recomputed from a, which is swapped: the recompute of F2 (before B2) waits
 * for SwapIn(a) issued at the recompute (t=5, done 6); F2 re-runs 6..7, B2 7..8,
 * B1 8..9. */
static void test_recompute_from_swapped_input(void **state) {
    hand *h = *state = hand_new(1000);
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, -1);
    sim_plan_set(h->plan, h->b, SIM_DECISION_RECOMPUTE, -1);
    sim_result r = run(h, 0);
    assert_true(r.feasible);
    assert_int_equal(r.n_recompute, 1);
    assert_time(r.swap_in_start[h->a], IN + 5.0);
    assert_time(r.recompute_start[F2], IN + 6.0);
    assert_time(r.recompute_end[F2], IN + 7.0);
    assert_time(r.node_start[B2], IN + 7.0);
    assert_time(r.node_start[B1], IN + 8.0);
    assert_time(r.recompute_s, 1.0);
    assert_time(r.stall_s, IN + 1.0);
    assert_time(r.time_s, IN + 9.0);
    /* A swap-in issued after the recompute that needs it is a malformed plan. */
    sim_plan_set(h->plan, h->a, SIM_DECISION_SWAP, B1);
    sim_options o = {0};
    oc_err err;
    assert_int_equal(sim_run(h->ctx, h->plan, &o, &r, NULL, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "'a'"));
}

/* Only saved tensors can be swapped or recomputed. */
static void test_plan_rejects_unsaved(void **state) {
    hand *h = *state = hand_new(1000);
    int c = ir_tensor_find(h->tg->g, "c");
    sim_plan_set(h->plan, c, SIM_DECISION_SWAP, -1);
    sim_result r;
    sim_options o = {0};
    oc_err err;
    assert_int_equal(sim_run(h->ctx, h->plan, &o, &r, NULL, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "'c'"));
}

/* ResNet-18 at batch 8 on the a100 analytic profile, with its simulator context. */
typedef struct r18 {
    train_graph *tg;
    profile *p;
    sim_context *ctx;
} r18;

static r18 r18_open(void) {
    r18 m;
    ir_graph *g;
    oc_err err;
    ir_bind_opts bo = {.batch = 8};
    train_opts to = train_opts_default();
    if (ir_load_model("graphs/resnet18_op13.onnx", &bo, &g, &err) ||
        train_build(g, &to, &m.tg, &err))
        fail_msg("%s", err.msg);
    profile_device d;
    assert_int_equal(device_preset_find("a100", &d, &err), OC_OK);
    m.p = profile_analytic(m.tg, &d, 8);
    assert_int_equal(sim_context_new(m.tg, m.p, "a100", &m.ctx, &err), OC_OK);
    return m;
}

static void r18_close(r18 *m) {
    sim_context_free(m->ctx);
    profile_free(m->p);
    train_graph_free(m->tg);
}

/* All-keep with no budget on ResNet-18: peak = train_liveness_peak, time = sum of nodes. */
static void test_keep_equals_liveness(void **state) {
    (void)state;
    r18 m = r18_open();
    train_graph *tg = m.tg;
    profile *p = m.p;
    sim_context *ctx = m.ctx;
    oc_err err;
    sim_plan *plan = sim_plan_new(tg);
    sim_options o = {0};
    sim_result r;
    assert_int_equal(sim_run(ctx, plan, &o, &r, NULL, &err), OC_OK);
    double sum = 0;
    for (int i = 0; i < p->n_nodes; i++) sum += p->nodes[i].time_s;
    assert_true(r.feasible);
    assert_int_equal(r.peak_bytes, train_liveness_peak(tg, NULL));
    /* The first node waits for the batch's copy (the labels' copy overlaps compute). */
    double wait = r.node_start[0];
    assert_true(wait > 0 && wait < r.input_s);
    assert_true(fabs(r.time_s - (sum + wait)) < 1e-12);
    assert_true(fabs(r.stall_s - wait) < 1e-12);
    /* All-swap with no budget still finishes, moving every saved byte both ways. */
    sim_plan_swap_all(plan);
    assert_int_equal(sim_run(ctx, plan, &o, &r, NULL, &err), OC_OK);
    assert_true(r.feasible);
    assert_int_equal(r.d2h_bytes, r.h2d_bytes);
    assert_true(r.d2h_bytes > 0);
    assert_true(r.time_s >= sum);
    sim_plan_free(plan);
    r18_close(&m);
}

/* CHECKPOINT (sim_plan.h) on ResNet-18: a recomputed saved tensor whose
 * producer reads an unsaved forward activation u re-runs u's producer too,
 * unless u is a checkpoint: then the recompute reads u in place (less
 * recompute time, u resident longer). A checkpoint on a saved tensor is a
 * malformed plan; on the hand graph's unsaved c (no recompute reads it) it
 * changes nothing. */
static void test_checkpoint(void **state) {
    (void)state;
    r18 m = r18_open();
    train_graph *tg = m.tg;
    const ir_graph *g = tg->g;
    profile *p = m.p;
    sim_context *ctx = m.ctx;
    oc_err err;
    bool *saved = calloc((size_t)g->n_tensors, 1);
    for (int i = 0; i < tg->n_saved; i++) saved[tg->saved[i]] = true;
    int t = -1, u = -1;
    for (int i = 0; i < tg->n_saved && t < 0; i++) { /* saved t <- producer reading unsaved u */
        int pr = g->tensors[tg->saved[i]].producer;
        if (pr < 0 || pr >= tg->n_forward) continue;
        for (int k = 0; k < g->nodes[pr].n_inputs && t < 0; k++) {
            int x = g->nodes[pr].inputs[k], q = x >= 0 ? g->tensors[x].producer : -1;
            if (q >= 0 && q < tg->n_forward && !saved[x] && !g->tensors[x].is_initializer)
                t = tg->saved[i], u = x;
        }
    }
    assert_true(t >= 0);
    sim_plan *plan = sim_plan_new(tg);
    sim_options o = {0};
    sim_result r1, r2;
    sim_plan_set(plan, t, SIM_DECISION_RECOMPUTE, -1);
    assert_int_equal(sim_run(ctx, plan, &o, &r1, NULL, &err), OC_OK);
    sim_plan_set(plan, u, SIM_DECISION_CHECKPOINT, -1);
    assert_int_equal(sim_run(ctx, plan, &o, &r2, NULL, &err), OC_OK);
    assert_true(r1.feasible && r2.feasible);
    double tu = p->nodes[g->tensors[u].producer].time_s;
    assert_true(tu > 0);
    if (fabs(r1.recompute_s - r2.recompute_s - tu) > 1e-12)
        fail_msg(
            "recompute %.9f s without the checkpoint, %.9f s with it; its producer takes %.9f s",
            r1.recompute_s, r2.recompute_s, tu);
    assert_int_equal(r2.n_recompute, r1.n_recompute - 1);
    assert_true(r2.peak_bytes >= r1.peak_bytes);
    sim_plan_set(plan, t, SIM_DECISION_CHECKPOINT, -1); /* saved: refused, named */
    assert_int_equal(sim_run(ctx, plan, &o, &r2, NULL, &err), OC_ERR);
    assert_non_null(strstr(err.msg, g->tensors[t].name));
    assert_non_null(strstr(err.msg, "checkpoint"));
    free(saved);
    sim_plan_free(plan);
    r18_close(&m);
    hand *h = hand_new(1000);
    sim_result k1 = run(h, 0);
    sim_plan_set(h->plan, ir_tensor_find(h->tg->g, "c"), SIM_DECISION_CHECKPOINT, -1);
    sim_result k2 = run(h, 0);
    assert_time(k1.time_s, k2.time_s);
    assert_int_equal(k1.peak_bytes, k2.peak_bytes);
    hand_free(h);
}

/* A node with K outputs is recomputed once per output a recompute reads
 * when those outputs are not saved (each recompute op re-produces the tensor
 * it was inserted for): the ops then outnumber nodes + forward nodes — GPT-2's
 * q/k/v Split under the DP overflowed the op arrays that bound sized.
 *   x -F1-> a -S-> s1..sK;  sk -Rk-> tk;  F3(t1..tK) -> c -L-> l
 *   B3(l) -> g0;  Bk(g(k-1), tk) -> gk       saved t1..tK, all recomputed */
enum { SPLIT_K = 6 };
static int hand_named(ir_graph *g, const char *fmt, int k, int64_t bytes, ir_kind kind) {
    char name[16];
    snprintf(name, sizeof name, fmt, k);
    return hand_tensor(g, name, bytes, kind);
}

/* The graph above; one_block: a single backward node B(l, t1..tK) -> g instead of the chain
 * Bk, so every recompute lands in one block. Returns the sim result with all tk recomputed. */
static void split_recompute(bool one_block, sim_result *r, int *n_nodes, int *n_forward) {
    train_graph *tg = oc_calloc(1, sizeof *tg);
    ir_graph *g = tg->g = ir_graph_new();
    int x = hand_tensor(g, "x", 4, IR_KIND_INPUT), a = hand_tensor(g, "a", 400, IR_KIND_ACTIVATION);
    ir_graph_add_input(g, x);
    int s[SPLIT_K], t[SPLIT_K], gk[SPLIT_K + 1];
    for (int k = 0; k < SPLIT_K; k++) {
        s[k] = hand_named(g, "s%d", k + 1, 100, IR_KIND_ACTIVATION);
        t[k] = hand_named(g, "t%d", k + 1, 100, IR_KIND_SAVED);
    }
    int c = hand_tensor(g, "c", 100, IR_KIND_ACTIVATION);
    int l = hand_tensor(g, "l", 100, IR_KIND_ACTIVATION);
    for (int k = 0; k <= SPLIT_K; k++) gk[k] = hand_named(g, "g%d", k, 100, IR_KIND_ACT_GRADIENT);
    ir_graph_add_output(g, gk[SPLIT_K]);
    hand_node(g, "F1", x, -1, a);
    int sp = op_node_add(g, "S", OP_SPLIT);
    ir_node_add_input(g, sp, a);
    for (int k = 0; k < SPLIT_K; k++) ir_node_add_output(g, sp, s[k]);
    char name[16];
    for (int k = 0; k < SPLIT_K; k++) {
        snprintf(name, sizeof name, "R%d", k + 1);
        hand_node(g, name, s[k], -1, t[k]);
    }
    int f3 = op_node_add(g, "F3", OP_SUM);
    for (int k = 0; k < SPLIT_K; k++) ir_node_add_input(g, f3, t[k]);
    ir_node_add_output(g, f3, c);
    int nf = g->n_nodes;
    hand_node(g, "L", c, -1, l);
    if (one_block) {
        int b = op_node_add(g, "B", OP_SUM);
        ir_node_add_input(g, b, l);
        for (int k = 0; k < SPLIT_K; k++) ir_node_add_input(g, b, t[k]);
        ir_node_add_output(g, b, gk[SPLIT_K]);
    } else {
        hand_node(g, "B0", l, -1, gk[0]);
        for (int k = 0; k < SPLIT_K; k++) {
            snprintf(name, sizeof name, "B%d", k + 1);
            hand_node(g, name, gk[k], t[k], gk[k + 1]);
        }
    }
    int nn = g->n_nodes;
    hand_train_finish(tg, nf, l, t, SPLIT_K);
    profile *p = hand_profile_flat(tg);
    sim_context *ctx;
    oc_err err;
    if (sim_context_new(tg, p, "hand", &ctx, &err)) fail_msg("%s", err.msg);
    sim_plan *plan = sim_plan_new(tg);
    for (int k = 0; k < SPLIT_K; k++) sim_plan_set(plan, t[k], SIM_DECISION_RECOMPUTE, -1);
    sim_options o = {0};
    if (sim_run(ctx, plan, &o, r, NULL, &err)) fail_msg("%s", err.msg);
    *n_nodes = nn, *n_forward = nf;
    sim_plan_free(plan);
    sim_context_free(ctx);
    profile_free(p);
    train_graph_free(tg);
}

static void test_multi_output_recompute(void **state) {
    (void)state;
    sim_result r;
    int nn, n_forward;
    split_recompute(false, &r, &nn, &n_forward);
    assert_true(r.feasible);
    /* F1 once (a is freed after the forward), S and Rk once per k (each Bk its own block):
     * 4K + 6 ops in all, more than the nodes + forward nodes (3K + 8) */
    assert_int_equal(r.n_recompute, 1 + 2 * SPLIT_K);
    assert_true(nn + r.n_recompute > nn + n_forward);
    assert_time(r.recompute_s, 1.0 + 2 * SPLIT_K);
}

/* One backward node reads every tk: S is recomputed once for all its outputs (a node's
 * recompute makes every output; rewrite.c emits one clone), F1 once, each Rk once. */
static void test_multi_output_recompute_one_block(void **state) {
    (void)state;
    sim_result r;
    int nn, n_forward;
    split_recompute(true, &r, &nn, &n_forward);
    assert_true(r.feasible);
    assert_int_equal(r.n_recompute, 2 + SPLIT_K);
    assert_time(r.recompute_s, 2.0 + SPLIT_K);
}

/* An in-place view (train_view_source): x -F1-> a -V(Identity)-> v -F3-> c -L-> l;
 * B3(l) -> gc; B2(gc, v) -> gb; B1(gb, a) -> ga; saved {a, v}. Kept, a and v are one storage
 * (1000 units) from F1 to B1: the peak is 1200 units at L, B3, B2 and B1 (a/v + two of
 * c, l, gc, gb, ga), as the in-core peak counts it; the memory floor does not count V's output.
 * With v swapped the group is counted member by member: 2200 at B2 (a, the swapped-in v, gc,
 * gb), which is the rewritten step's own count (a SwapIn writes storage of its own). */
static void test_view_shares_storage(void **state) {
    (void)state;
    train_graph *tg = oc_calloc(1, sizeof *tg);
    ir_graph *g = tg->g = ir_graph_new();
    int x = hand_tensor(g, "x", 4, IR_KIND_INPUT), a = hand_tensor(g, "a", 1000, IR_KIND_SAVED);
    int v = hand_tensor(g, "v", 1000, IR_KIND_SAVED),
        c = hand_tensor(g, "c", 100, IR_KIND_ACTIVATION);
    int l = hand_tensor(g, "l", 100, IR_KIND_ACTIVATION);
    int gc = hand_tensor(g, "gc", 100, IR_KIND_ACT_GRADIENT);
    int gb = hand_tensor(g, "gb", 100, IR_KIND_ACT_GRADIENT);
    int ga = hand_tensor(g, "ga", 100, IR_KIND_ACT_GRADIENT);
    ir_graph_add_input(g, x);
    ir_graph_add_output(g, ga);
    hand_node(g, "F1", x, -1, a);
    int vn = op_node_add(g, "V", OP_IDENTITY);
    ir_node_add_input(g, vn, a);
    ir_node_add_output(g, vn, v);
    hand_node(g, "F3", v, -1, c);
    hand_node(g, "L", c, -1, l);
    hand_node(g, "B3", l, -1, gc);
    hand_node(g, "B2", gc, v, gb);
    hand_node(g, "B1", gb, a, ga);
    int saved[] = {a, v};
    hand_train_finish(tg, 3, l, saved, 2);
    assert_int_equal(train_view_source(tg, vn), a);
    profile *p = hand_profile_flat(tg);
    sim_context *ctx;
    oc_err err;
    if (sim_context_new(tg, p, "hand", &ctx, &err)) fail_msg("%s", err.msg);
    sim_plan *plan = sim_plan_new(tg);
    sim_options o = {0};
    sim_result r;
    if (sim_run(ctx, plan, &o, &r, NULL, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.peak_bytes, 1200 * HAND_UNIT);
    assert_int_equal(train_liveness_peak(tg, NULL), 1200 * HAND_UNIT);
    int at;
    /* B2 (gc, v, gb) or B1; V's own need is a alone (a + v would be 2000) */
    assert_int_equal(sim_memory_floor(ctx, &at, NULL), 1200 * HAND_UNIT);
    sim_plan_set(plan, v, SIM_DECISION_SWAP, -1); /* v leaves: a and v counted apart */
    if (sim_run(ctx, plan, &o, &r, NULL, &err)) fail_msg("%s", err.msg);
    assert_true(r.feasible);
    assert_int_equal(r.peak_bytes, 2200 * HAND_UNIT); /* at B2: a, v swapped in, gc, gb */
    sim_plan_free(plan);
    sim_context_free(ctx);
    profile_free(p);
    train_graph_free(tg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_swap_hidden, teardown),
        cmocka_unit_test_teardown(test_swap_exposed, teardown),
        cmocka_unit_test_teardown(test_swap_waits_for_memory, teardown),
        cmocka_unit_test_teardown(test_contention_compute, teardown),
        cmocka_unit_test_teardown(test_contention_duplex, teardown),
        cmocka_unit_test_teardown(test_deadlock_infeasible, teardown),
        cmocka_unit_test_teardown(test_recompute_from_swapped_input, teardown),
        cmocka_unit_test_teardown(test_plan_rejects_unsaved, teardown),
        cmocka_unit_test(test_keep_equals_liveness),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_multi_output_recompute),
        cmocka_unit_test(test_multi_output_recompute_one_block),
        cmocka_unit_test(test_view_shares_storage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
