/* test_ilp.c — the MILP oracle (ilp_oracle.h):
 *  - its memory model equals the simulator's, node by node, for the all-keep
 *    plan (AlexNet, a small U-Net, random DAGs);
 *  - it is never worse than any heuristic under its own cost model: every
 *    registered strategy's plan that the model accepts costs at least the
 *    oracle's optimum, at budgets that bind (the optimum is above the in-core
 *    time in some cases);
 *  - the oracle's own plan costs at most its objective under the model and
 *    simulates feasibly under the same budget.
 * Graphs: AlexNet @ 128 (72 nodes), a small U-Net built here (Conv /
 * MaxPool / ConvTranspose / Concat), ResNet-style blocks, seeded random
 * Conv/Relu/Add DAGs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/ilp_oracle.h"
#include "ir/onnx_import.h"
#include "ir/shape_infer.h"
#include "unit/model_builder.c"

typedef struct tally {
    int solved, binding, compared, sim_feasible;
} tally;

typedef struct case_ctx {
    train_graph *tg;
    profile *prof;
    sim_context *ctx;
} case_ctx;

static void case_open_graph(ir_graph *g, int64_t batch, case_ctx *c) {
    oc_err err;
    train_opts to = train_opts_default();
    if (train_build(g, &to, &c->tg, &err)) fail_msg("%s", err.msg);
    profile_device dev;
    assert_int_equal(device_preset_find("v100", &dev, &err), OC_OK);
    c->prof = profile_analytic(c->tg, &dev, batch);
    assert_int_equal(sim_context_new(c->tg, c->prof, "v100", &c->ctx, &err), OC_OK);
}

static void case_open_buffer(mb_model *mb, int64_t batch, case_ctx *c) {
    oc_err err;
    size_t len;
    const uint8_t *buf = mb_pack(mb, &len);
    ir_graph *g;
    if (onnx_import_buffer(buf, len, "test.onnx", &g, &err)) fail_msg("%s", err.msg);
    ir_bind_opts bo = {.batch = batch};
    if (ir_bind_dims(g, &bo, &err) || ir_infer_shapes(g, &err)) {
        ir_graph_free(g);
        fail_msg("%s", err.msg);
    }
    case_open_graph(g, batch, c);
}

static void case_close(case_ctx *c) {
    sim_context_free(c->ctx);
    profile_free(c->prof);
    train_graph_free(c->tg);
}

/* Per-node memory of plan by the simulator (unlimited budget): live bytes
 * when each node starts, after its allocation. NAN for a node that takes no
 * time (an in-place view: the analytic profile times it 0): the next node
 * starts at the same instant, and the timeline's samples give the live bytes
 * from an instant on, not per node; returns how many. */
static int sim_node_memory(case_ctx *c, const sim_plan *plan, double *mem) {
    oc_err err;
    sim_timeline *tl = sim_timeline_new();
    sim_options o = {0};
    sim_result r;
    assert_int_equal(sim_run(c->ctx, plan, &o, &r, tl, &err), OC_OK);
    assert_true(r.feasible);
    int n = c->tg->g->n_nodes, instant = 0;
    for (int i = 0; i < n; i++) {
        double st = r.node_start[i];
        if (r.node_end[i] == st) {
            mem[i] = NAN;
            instant++;
            continue;
        }
        int best = -1;
        for (int s = 0; s < tl->n_samples && tl->samples[s].t <= st; s++) best = s;
        assert_true(best >= 0);
        mem[i] = (double)tl->samples[best].bytes;
    }
    sim_timeline_free(tl);
    return instant;
}

/* The model's all-keep memory equals the simulator's at every node. */
static void check_memory(case_ctx *c, const char *what) {
    oc_err err;
    int n = c->tg->g->n_nodes;
    strategy_input in = {
        .tg = c->tg, .prof = c->prof, .ctx = c->ctx, .opts = strategy_options_default()};
    ilp_model *m;
    assert_int_equal(ilp_model_new(&in, &m, &err), OC_OK);
    sim_plan *plan = sim_plan_new(c->tg);
    double *ms = calloc((size_t)n, sizeof *ms), *mi = calloc((size_t)n, sizeof *mi);
    int instant = sim_node_memory(c, plan, ms);
    ilp_eval ev;
    ilp_model_eval(m, plan, &ev, mi);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(ms[i])) continue;
        double d = mi[i] - ms[i];
        if (d < 0) d = -d;
        if (d > worst) worst = d;
        if (d > 1.0 + 1e-9 * ms[i])
            fail_msg("%s: node %d '%s': model counts %.0f bytes, simulator %.0f", what, i,
                     c->tg->g->nodes[i].name, mi[i], ms[i]);
    }
    /* Every saved tensor swapped, swap-ins at their readers: the D2H timing
     * decides when device copies die; the model follows it too. */
    sim_plan_swap_all(plan);
    sim_node_memory(c, plan, ms);
    ilp_model_eval(m, plan, &ev, mi);
    for (int i = 0; i < n; i++)
        if (!isnan(ms[i]) && fabs(mi[i] - ms[i]) > 1.0 + 1e-9 * ms[i])
            fail_msg("%s, swap-all: node %d '%s': model counts %.0f bytes, simulator %.0f", what, i,
                     c->tg->g->nodes[i].name, mi[i], ms[i]);
    printf("# %s: model memory = simulator memory at all %d nodes that take time (%d in-place "
           "views do not; all-keep, swap-all; worst all-keep difference %.0f bytes)\n",
           what, n - instant, instant, worst);
    free(ms);
    free(mi);
    sim_plan_free(plan);
    ilp_model_free(m);
}

/* The oracle against every registered strategy at budget fractions of the
 * in-core peak. */
static void check_oracle(case_ctx *c, const char *what, const double *frac, int n_frac, tally *ta) {
    oc_err err;
    for (int f = 0; f < n_frac; f++) {
        strategy_input in = {
            .tg = c->tg, .prof = c->prof, .ctx = c->ctx, .opts = strategy_options_default()};
        in.opts.max_leaves = 64;
        in.opts.max_sims = 2000;
        in.sim.budget_bytes = (int64_t)((double)c->tg->incore_peak_bytes * frac[f]);
        ilp_model *m;
        assert_int_equal(ilp_model_new(&in, &m, &err), OC_OK);
        ilp_result r;
        assert_int_equal(ilp_solve(m, 60, NULL, &r, &err), OC_OK);
        sim_plan *p = sim_plan_new(c->tg);
        double ideal = sim_context_node_times(c->ctx)[0] * 0;
        for (int i = 0; i < c->tg->g->n_nodes; i++) ideal += sim_context_node_times(c->ctx)[i];
        double sim_t = -1;
        if (r.feasible) {
            assert_true(r.optimal);
            ta->solved++;
            if (r.objective_s > ideal * (1 + 1e-6)) ta->binding++;
            ilp_plan(m, &r, p);
            ilp_eval ev;
            ilp_model_eval(m, p, &ev, NULL);
            if (!ev.fits || ev.time_s > r.objective_s * (1 + 1e-6) + 1e-12)
                fail_msg("%s @ %.2f: the oracle's plan %s under the model (%.6f ms vs %.6f ms; "
                         "node %d: %.0f bytes, budget %lld)",
                         what, frac[f], ev.fits ? "costs more" : "does not fit", ev.time_s * 1e3,
                         r.objective_s * 1e3, ev.worst_node, ev.worst_bytes,
                         (long long)in.sim.budget_bytes);
            sim_result sr;
            assert_int_equal(sim_run(c->ctx, p, &in.sim, &sr, NULL, &err), OC_OK);
            if (!sr.feasible)
                fail_msg("%s @ %.2f: the oracle's plan does not simulate: %s", what, frac[f],
                         sr.reason);
            ta->sim_feasible++;
            sim_t = sr.time_s;
        }
        double best_h = -1;
        const char *best_name = "-";
        for (int i = 0; i < strategy_count(); i++) {
            strategy_stats st;
            assert_int_equal(strategy_run(strategy_at(i), &in, p, &st, &err), OC_OK);
            if (st.feasible && (best_h < 0 || st.result.time_s < best_h)) {
                best_h = st.result.time_s;
                best_name = strategy_at(i)->name;
            }
            double t;
            if (!ilp_model_cost(m, p, &t)) continue;
            if (!r.feasible)
                fail_msg("%s @ %.2f: strategy %s fits the model but the MILP says infeasible", what,
                         frac[f], strategy_at(i)->name);
            if (t < r.objective_s * (1 - 1e-6) - 1e-12)
                fail_msg("%s @ %.2f: strategy %s costs %.9g s under the model, below the "
                         "oracle's %.9g",
                         what, frac[f], strategy_at(i)->name, t, r.objective_s);
            ta->compared++;
        }
        printf("# %s budget %.2f: oracle %s %.4f ms (ideal %.4f, simulated %.4f; %d vars, %d "
               "rows, %.2f s); best heuristic %s %.4f ms simulated\n",
               what, frac[f], r.feasible ? "optimal" : "infeasible", r.objective_s * 1e3,
               ideal * 1e3, sim_t * 1e3, r.n_vars, r.n_rows, r.solve_s, best_name, best_h * 1e3);
        sim_plan_free(p);
        ilp_result_free(&r);
        ilp_model_free(m);
    }
}

static void test_alexnet(void **state) {
    (void)state;
    oc_err err;
    ir_graph *g;
    ir_bind_opts bo = {.batch = 128};
    if (ir_load_model("graphs/alexnet_op13.onnx", &bo, &g, &err)) fail_msg("%s", err.msg);
    case_ctx c;
    case_open_graph(g, 128, &c);
    check_memory(&c, "alexnet");
    tally ta = {0};
    const double frac[] = {0.7, 0.75, 0.8, 0.95};
    check_oracle(&c, "alexnet", frac, 4, &ta);
    assert_true(ta.binding > 0);
    assert_true(ta.compared > 0);
    case_close(&c);
}

/* conv 3x3 (pad 1) + relu: in -> out, weights named after out. */
static void conv_relu(mb_model *mb, const char *in, const char *out, int64_t cin, int64_t cout) {
    char w[64], y[64];
    snprintf(w, sizeof w, "%s_w", out);
    snprintf(y, sizeof y, "%s_c", out);
    mb_init(mb, w, MB_FLOAT, MB_DIMS(cout, cin, 3, 3));
    char ins[160];
    snprintf(ins, sizeof ins, "%s,%s", in, w);
    Onnx__NodeProto *n = mb_node(mb, "Conv", y, ins, y);
    mb_attr_ints(mb, n, "pads", MB_INTS(1, 1, 1, 1));
    mb_attr_ints(mb, n, "kernel_shape", MB_INTS(3, 3));
    mb_node(mb, "Relu", out, y, out);
}

static void head(mb_model *mb, const char *in, int64_t c) {
    mb_node(mb, "GlobalAveragePool", "gap", in, "gap");
    Onnx__NodeProto *f = mb_node(mb, "Flatten", "flat", "gap", "flat");
    mb_attr_int(mb, f, "axis", 1);
    mb_init(mb, "fc_w", MB_FLOAT, MB_DIMS(10, c));
    mb_init(mb, "fc_b", MB_FLOAT, MB_DIMS(10));
    Onnx__NodeProto *gm = mb_node(mb, "Gemm", "fc", "flat,fc_w,fc_b", "logits");
    mb_attr_int(mb, gm, "transB", 1);
    mb_output(mb, "logits");
}

static void up(mb_model *mb, const char *in, const char *out, int64_t cin, int64_t cout) {
    char w[64], ins[160];
    snprintf(w, sizeof w, "%s_w", out);
    mb_init(mb, w, MB_FLOAT, MB_DIMS(cin, cout, 2, 2));
    snprintf(ins, sizeof ins, "%s,%s", in, w);
    Onnx__NodeProto *n = mb_node(mb, "ConvTranspose", out, ins, out);
    mb_attr_ints(mb, n, "strides", MB_INTS(2, 2));
    mb_attr_ints(mb, n, "kernel_shape", MB_INTS(2, 2));
}

static void pool(mb_model *mb, const char *in, const char *out) {
    Onnx__NodeProto *n = mb_node(mb, "MaxPool", out, in, out);
    mb_attr_ints(mb, n, "kernel_shape", MB_INTS(2, 2));
    mb_attr_ints(mb, n, "strides", MB_INTS(2, 2));
}

/* A two-level U-Net: e1 -> pool -> e2 -> pool -> b -> up ++ e2 -> d2 -> up ++ e1 -> d1. */
static void test_small_unet(void **state) {
    (void)state;
    mb_model *mb = mb_new(13);
    mb_input(mb, "x", MB_FLOAT, "N,3,32,32");
    conv_relu(mb, "x", "e1", 3, 8);
    pool(mb, "e1", "p1");
    conv_relu(mb, "p1", "e2", 8, 16);
    pool(mb, "e2", "p2");
    conv_relu(mb, "p2", "b", 16, 16);
    up(mb, "b", "u2", 16, 16);
    Onnx__NodeProto *c2 = mb_node(mb, "Concat", "cat2", "u2,e2", "cat2");
    mb_attr_int(mb, c2, "axis", 1);
    conv_relu(mb, "cat2", "d2", 32, 16);
    up(mb, "d2", "u1", 16, 8);
    Onnx__NodeProto *c1 = mb_node(mb, "Concat", "cat1", "u1,e1", "cat1");
    mb_attr_int(mb, c1, "axis", 1);
    conv_relu(mb, "cat1", "d1", 16, 8);
    head(mb, "d1", 8);
    case_ctx c;
    case_open_buffer(mb, 64, &c);
    mb_free(mb);
    assert_true(c.tg->g->n_nodes <= 100);
    check_memory(&c, "unet");
    tally ta = {0};
    const double frac[] = {0.6, 0.9}; /* 0.75 binds too, but GLPK needs ~40 s there */
    check_oracle(&c, "unet", frac, 2, &ta);
    assert_true(ta.binding > 0);
    case_close(&c);
}

/* Two ResNet basic blocks (conv-relu-conv + identity, relu). */
static void test_resnet_blocks(void **state) {
    (void)state;
    mb_model *mb = mb_new(13);
    mb_input(mb, "x", MB_FLOAT, "N,16,32,32");
    const char *prev = "x";
    char a[32], bb[32], s[32], o[32];
    static char keep[2][32];
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "r%d_a", i);
        snprintf(bb, sizeof bb, "r%d_b", i);
        snprintf(s, sizeof s, "r%d_s", i);
        snprintf(o, sizeof o, "r%d_o", i);
        conv_relu(mb, prev, a, 16, 16);
        conv_relu(mb, a, bb, 16, 16);
        char ins[80];
        snprintf(ins, sizeof ins, "%s,%s", bb, prev);
        mb_node(mb, "Add", s, ins, s);
        mb_node(mb, "Relu", o, s, o);
        snprintf(keep[i], sizeof keep[i], "%s", o);
        prev = keep[i];
    }
    head(mb, prev, 16);
    case_ctx c;
    case_open_buffer(mb, 64, &c);
    mb_free(mb);
    check_memory(&c, "resnet-blocks");
    tally ta = {0};
    const double frac[] = {0.6, 0.75, 0.9};
    check_oracle(&c, "resnet-blocks", frac, 3, &ta);
    assert_true(ta.binding > 0);
    case_close(&c);
}

/* Seeded random DAGs of Conv+Relu / Relu / Add nodes over same-shape maps. */
static void test_random_dags(void **state) {
    (void)state;
    tally ta = {0};
    for (int seed = 1; seed <= 8; seed++) {
        srand((unsigned)seed);
        mb_model *mb = mb_new(13);
        mb_input(mb, "x", MB_FLOAT, "N,8,24,24");
        int n = 4 + rand() % 5;
        char names[16][16];
        bool used[16] = {0};
        snprintf(names[0], sizeof names[0], "x");
        for (int i = 1; i <= n; i++) {
            snprintf(names[i], sizeof names[i], "t%d", i);
            int a = rand() % i, kind = rand() % 3;
            used[a] = true;
            if (kind == 0 || i == 1) {
                conv_relu(mb, names[a], names[i], 8, 8);
            } else if (kind == 1) {
                char y[24];
                snprintf(y, sizeof y, "%s_c", names[i]);
                char w[24];
                snprintf(w, sizeof w, "%s_w", names[i]);
                mb_init(mb, w, MB_FLOAT, MB_DIMS(8, 8, 3, 3));
                char ins[48];
                snprintf(ins, sizeof ins, "%s,%s", names[a], w);
                Onnx__NodeProto *cv = mb_node(mb, "Conv", y, ins, names[i]);
                mb_attr_ints(mb, cv, "pads", MB_INTS(1, 1, 1, 1));
                mb_attr_ints(mb, cv, "kernel_shape", MB_INTS(3, 3));
            } else {
                int b2 = rand() % i;
                used[b2] = true;
                char ins[48];
                snprintf(ins, sizeof ins, "%s,%s", names[a], names[b2]);
                mb_node(mb, "Add", names[i], ins, names[i]);
            }
        }
        /* Sum every map nothing reads into the last one, so all reach the loss. */
        char last[32];
        snprintf(last, sizeof last, "%s", names[n]);
        for (int i = 1; i < n; i++) {
            if (used[i]) continue;
            char out[32], ins[80];
            snprintf(out, sizeof out, "sum%d", i);
            snprintf(ins, sizeof ins, "%s,%s", last, names[i]);
            mb_node(mb, "Add", out, ins, out);
            snprintf(last, sizeof last, "%s", out);
        }
        head(mb, last, 8);
        case_ctx c;
        case_open_buffer(mb, 64, &c);
        mb_free(mb);
        char what[32];
        snprintf(what, sizeof what, "random dag %d", seed);
        check_memory(&c, what);
        const double frac[] = {0.7, 0.85};
        check_oracle(&c, what, frac, 2, &ta);
        case_close(&c);
    }
    assert_true(ta.binding > 0);
    assert_true(ta.compared > 0);
}

/* The model rejects graphs over the node limit with a message. */
static void test_node_limit(void **state) {
    (void)state;
    oc_err err;
    ir_graph *g;
    ir_bind_opts bo = {.batch = 8};
    if (ir_load_model("graphs/alexnet_op13.onnx", &bo, &g, &err)) fail_msg("%s", err.msg);
    case_ctx c;
    case_open_graph(g, 8, &c);
    strategy_input in = {
        .tg = c.tg, .prof = c.prof, .ctx = c.ctx, .opts = strategy_options_default()};
    in.opts.max_nodes_exact = 10;
    ilp_model *m = NULL;
    assert_int_equal(ilp_model_new(&in, &m, &err), OC_ERR);
    assert_null(m);
    assert_non_null(strstr(err.msg, "limit of 10"));
    case_close(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_limit),    cmocka_unit_test(test_random_dags),
        cmocka_unit_test(test_resnet_blocks), cmocka_unit_test(test_small_unet),
        cmocka_unit_test(test_alexnet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
