/* bench_sim.c — simulations per second: ResNet-50 training at batch 640, all-swap
 * plan, v100 analytic profile, 16 GiB budget (the searches call sim_run
 * thousands of times). Also prints in-core vs all-swap iteration time.
 *   make bench            (or: build/bench_sim [MODEL] [BATCH]) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ir/shape_infer.h"
#include "sim/simulator.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : "graphs/resnet50_op13.onnx";
    int64_t batch = argc > 2 ? atoll(argv[2]) : 640;
    oc_err err;
    ir_graph *g;
    train_graph *tg;
    train_opts to = train_opts_default();
    ir_bind_opts b = {.batch = batch};
    if (ir_load_model(model, &b, &g, &err) || train_build(g, &to, &tg, &err)) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    profile_device dev;
    device_preset_find("v100", &dev, &err);
    profile *p = profile_analytic(tg, &dev, batch);
    sim_context *ctx;
    if (sim_context_new(tg, p, "v100", &ctx, &err)) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    sim_plan *keep = sim_plan_new(tg), *swap = sim_plan_new(tg);
    sim_plan_swap_all(swap);
    sim_options o = {.budget_bytes = 16LL << 30};
    sim_options inf = {0};
    sim_result r;
    sim_run(ctx, keep, &inf, &r, NULL, &err);
    double t_keep = r.time_s;
    int64_t peak_keep = r.peak_bytes;
    if (sim_run(ctx, swap, &o, &r, NULL, &err)) {
        fprintf(stderr, "bench_sim: %s\n", err.msg);
        return 1;
    }
    printf("model %s, batch %lld, %d nodes, %d saved tensors, v100 analytic profile\n", model,
           (long long)batch, tg->g->n_nodes, tg->n_saved);
    printf("in-core (unlimited memory): %.2f ms, peak %.2f GiB\n", t_keep * 1e3,
           (double)peak_keep / (1 << 30));
    printf("all-swap (16 GiB budget):   %.2f ms, peak %.2f GiB, stall %.2f ms, feasible %s\n",
           r.time_s * 1e3, (double)r.peak_bytes / (1 << 30), r.stall_s * 1e3,
           r.feasible ? "yes" : "no");
    long n = 0;
    double t0 = now_s(), t1;
    do {
        for (int i = 0; i < 100; i++) sim_run(ctx, swap, &o, &r, NULL, &err);
        n += 100;
        t1 = now_s();
    } while (t1 - t0 < 2.0);
    printf("all-swap simulations: %ld in %.2f s = %.0f sims/s, %.1f us/sim\n", n, t1 - t0,
           (double)n / (t1 - t0), (t1 - t0) / (double)n * 1e6);
    sim_plan_free(keep);
    sim_plan_free(swap);
    sim_context_free(ctx);
    profile_free(p);
    train_graph_free(tg);
    return 0;
}
