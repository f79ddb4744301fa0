/* bench_plan.c — planning time of a strategy (default hybrid) on ResNet-50
 * training at batch 640, v100 analytic profile, 16 GiB budget (issue 6 target:
 * hybrid under 10 s on the 2-core development machine). Prints the plan's
 * predicted figures, leaves explored and whether a search bound was hit.
 *   make bench   (or: build/bench_plan [MODEL] [BATCH] [STRATEGY] [BUDGET_GIB]) */
#include <stdio.h>
#include <stdlib.h>

#include "ir/shape_infer.h"
#include "search/strategy.h"

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : "graphs/resnet50_op13.onnx";
    int64_t batch = argc > 2 ? atoll(argv[2]) : 640;
    const char *name = argc > 3 ? argv[3] : "hybrid";
    double gib = argc > 4 ? atof(argv[4]) : 16.0;
    const strategy *s = strategy_find(name);
    if (!s || batch <= 0 || gib <= 0) {
        char names[256];
        strategy_list(names, sizeof names);
        fprintf(stderr, "bench_plan: usage: bench_plan [MODEL] [BATCH>0] [STRATEGY: %s] [GIB>0]\n",
                names);
        return 1;
    }
    oc_err err;
    ir_graph *g;
    train_graph *tg;
    train_opts to = train_opts_default();
    ir_bind_opts b = {.batch = batch};
    if (ir_load_model(model, &b, &g, &err) || train_build(g, &to, &tg, &err)) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
        return 1;
    }
    profile_device dev;
    if (device_preset_find("v100", &dev, &err)) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
        return 1;
    }
    profile *p = profile_analytic(tg, &dev, batch);
    sim_context *ctx;
    if (sim_context_new(tg, p, "v100", &ctx, &err)) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
        return 1;
    }
    strategy_input in = {.tg = tg,
                         .prof = p,
                         .ctx = ctx,
                         .sim = {.budget_bytes = (int64_t)(gib * (double)(1LL << 30))},
                         .opts = strategy_options_default()};
    sim_plan *plan = sim_plan_new(tg);
    strategy_stats st;
    int rc = strategy_run(s, &in, plan, &st, &err);
    if (rc) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
    } else {
        printf("plan: %s on %s, batch %lld, budget %.1f GiB, v100 analytic profile\n", s->name,
               model, (long long)batch, gib);
        printf("plan: planning %.2f s (target < 10 s), %ld simulations (%.0f sims/s), "
               "%ld leaves explored, bound %s\n",
               st.plan_seconds, st.sims,
               st.plan_seconds > 0 ? (double)st.sims / st.plan_seconds : 0, st.leaves_explored,
               st.bound_hit ? "hit" : "not hit");
        if (st.feasible)
            printf("plan: predicted %.2f ms (ideal %.2f ms, slowdown %.3fx), %.1f images/s, "
                   "peak %.2f GiB\n",
                   st.result.time_s * 1e3, st.result.ideal_s * 1e3,
                   st.result.time_s / st.result.ideal_s, (double)batch / st.result.time_s,
                   (double)st.result.peak_bytes / (double)(1LL << 30));
        else printf("plan: no feasible plan: %s\n", st.notes);
        printf("plan: notes: %s\n", st.notes);
    }
    sim_plan_free(plan);
    sim_context_free(ctx);
    profile_free(p);
    train_graph_free(tg);
    return rc ? 1 : 0;
}
