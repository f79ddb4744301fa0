/* test_ilp.c — the MILP oracle (ilp_oracle.h) is never worse than any heuristic
 * under its own cost model: on AlexNet's training graph (72 nodes) at several
 * budgets, every registered strategy's plan that the model accepts costs at
 * least the oracle's optimum, and the oracle's own plan costs exactly that. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ilp_oracle.h"
#include "shape_infer.h"

static void check_model(const char *path, int64_t batch) {
    oc_err err;
    ir_graph *g;
    ir_bind_opts bo = {.batch = batch};
    if (ir_load_model(path, &bo, &g, &err)) fail_msg("%s", err.msg);
    train_opts to = train_opts_default();
    train_graph *tg;
    assert_int_equal(train_build(g, &to, &tg, &err), OC_OK);
    profile_device dev;
    assert_int_equal(device_preset_find("v100", &dev, &err), OC_OK);
    profile *prof = profile_analytic(tg, &dev, batch);
    sim_context *ctx;
    assert_int_equal(sim_context_new(tg, prof, "v100", &ctx, &err), OC_OK);
    int compared = 0;
    for (int f = 0; f < 5; f++) {
        double frac[] = {0.93, 0.95, 0.97, 0.99, 1.2};
        strategy_input in = {.tg = tg, .prof = prof, .ctx = ctx,
                             .opts = strategy_options_default()};
        in.opts.max_leaves = 256;
        in.sim.budget_bytes = (int64_t)((double)tg->incore_peak_bytes * frac[f]);
        ilp_model *m;
        assert_int_equal(ilp_model_new(&in, &m, &err), OC_OK);
        ilp_result r;
        assert_int_equal(ilp_solve(m, 60, &r, &err), OC_OK);
        sim_plan *p = sim_plan_new(tg);
        if (r.feasible) {
            assert_true(r.optimal);
            ilp_plan(m, &r, p);
            double t;
            assert_true(ilp_model_cost(m, p, &t));
            assert_true(t <= r.objective_s * (1 + 1e-6) + 1e-9);
        }
        for (int i = 0; i < strategy_count(); i++) {
            strategy_stats st;
            assert_int_equal(strategy_run(strategy_at(i), &in, p, &st, &err), OC_OK);
            double t;
            if (!ilp_model_cost(m, p, &t)) continue;
            assert_true(r.feasible); /* a heuristic fits the model, so the MILP is feasible */
            if (t + 1e-9 < r.objective_s * (1 - 1e-6))
                fail_msg("%s: strategy %s costs %.9g s under the model, below the oracle's %.9g",
                         path, strategy_at(i)->name, t, r.objective_s);
            compared++;
        }
        printf("# %s budget %.2f x in-core: oracle %s %.4f ms (%d vars, %d rows)\n", path, frac[f],
               r.feasible ? "feasible" : "infeasible", r.objective_s * 1e3, r.n_vars, r.n_rows);
        sim_plan_free(p);
        ilp_result_free(&r);
        ilp_model_free(m);
    }
    assert_true(compared > 0);
    sim_context_free(ctx);
    profile_free(prof);
    train_graph_free(tg);
}

static void test_oracle_alexnet(void **state) {
    (void)state;
    check_model("graphs/alexnet_op13.onnx", 512);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oracle_alexnet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
