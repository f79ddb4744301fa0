/* bench_dp.c — recomputation DP planning time and the heuristics' gap to the
 * ILP oracle (issue 7). Prints, for DenseNet-121's training graph at batch 640
 * (v100 analytic profile, 16 GiB budget), the wall time of `dp`, `dp-min` and
 * `chen` (which lower-set family ran is in the notes); then, on small graphs
 * (≤ 100 training-graph nodes), the simulated time of dp / hybrid / auto beside
 * the ILP optimum under the oracle's cost model, at budgets that bind.
 *   make bench            (or: build/bench_dp [DENSENET_MODEL] [BATCH]) */
#include <stdio.h>
#include <stdlib.h>

#include "search/ilp_oracle.h"
#include "ir/shape_infer.h"

typedef struct bench_model {
    train_graph *tg;
    profile *prof;
    sim_context *ctx;
} bench_model;

static int model_open(const char *path, int64_t batch, bench_model *m) {
    oc_err err;
    ir_graph *g;
    train_opts to = train_opts_default();
    ir_bind_opts b = {.batch = batch};
    profile_device dev;
    if (ir_load_model(path, &b, &g, &err) || train_build(g, &to, &m->tg, &err) ||
        device_preset_find("v100", &dev, &err)) {
        fprintf(stderr, "bench_dp: %s\n", err.msg);
        return 1;
    }
    m->prof = profile_analytic(m->tg, &dev, batch);
    if (sim_context_new(m->tg, m->prof, "v100", &m->ctx, &err)) {
        fprintf(stderr, "bench_dp: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static void model_close(bench_model *m) {
    sim_context_free(m->ctx);
    profile_free(m->prof);
    train_graph_free(m->tg);
}

static int planning_time(const char *path, int64_t batch) {
    bench_model m;
    if (model_open(path, batch, &m)) return 1;
    printf("DP planning time: %s, batch %lld, %d training-graph nodes, 16 GiB budget\n", path,
           (long long)batch, m.tg->g->n_nodes);
    const char *names[] = {"dp", "dp-min", "chen"};
    for (int i = 0; i < 3; i++) {
        oc_err err;
        strategy_input in = {.tg = m.tg,
                             .prof = m.prof,
                             .ctx = m.ctx,
                             .sim = {.budget_bytes = 16LL << 30},
                             .opts = strategy_options_default()};
        sim_plan *p = sim_plan_new(m.tg);
        strategy_stats st;
        if (strategy_run(strategy_find(names[i]), &in, p, &st, &err)) {
            fprintf(stderr, "bench_dp: %s\n", err.msg);
            return 1;
        }
        printf("  %-7s %7.3f s  %s  %.2f ms  peak %.2f GiB  [%s]\n", names[i], st.plan_seconds,
               st.feasible ? "feasible  " : "infeasible", st.result.time_s * 1e3,
               (double)st.result.peak_bytes / (1 << 30), st.notes);
        sim_plan_free(p);
    }
    model_close(&m);
    return 0;
}

/* dp / hybrid / auto against the ILP optimum on a small graph at budget
 * fractions of the in-core peak. */
static int oracle_gap(const char *path, int64_t batch) {
    bench_model m;
    if (model_open(path, batch, &m)) return 1;
    printf("gap to the ILP oracle: %s, batch %lld, %d nodes (model time / simulated time, ms)\n",
           path, (long long)batch, m.tg->g->n_nodes);
    double frac[] = {0.6, 0.75, 0.8, 0.9, 0.95};
    for (int f = 0; f < 5; f++) {
        oc_err err;
        strategy_input in = {
            .tg = m.tg,
            .prof = m.prof,
            .ctx = m.ctx,
            .sim = {.budget_bytes = (int64_t)((double)m.tg->incore_peak_bytes * frac[f])},
            .opts = strategy_options_default()};
        ilp_model *im;
        ilp_result r;
        if (ilp_model_new(&in, &im, &err) || ilp_solve(im, 60, NULL, &r, &err)) {
            fprintf(stderr, "bench_dp: %s\n", err.msg);
            return 1;
        }
        printf("  budget %.2f x in-core: ILP %s", frac[f],
               r.feasible ? (r.optimal ? "optimal" : "feasible") : "infeasible");
        if (r.feasible) {
            sim_plan *op = sim_plan_new(m.tg);
            sim_result sr;
            ilp_plan(im, &r, op);
            if (sim_run(m.ctx, op, &in.sim, &sr, NULL, &err)) sr.feasible = false;
            printf(" %.3f / %s %.3f [%.2f s]", r.objective_s * 1e3,
                   sr.feasible ? "sim" : "sim infeasible", sr.feasible ? sr.time_s * 1e3 : 0,
                   r.solve_s);
            sim_plan_free(op);
        }
        const char *names[] = {"dp", "hybrid", "auto"};
        for (int i = 0; i < 3; i++) {
            sim_plan *p = sim_plan_new(m.tg);
            strategy_stats st;
            if (strategy_run(strategy_find(names[i]), &in, p, &st, &err)) {
                fprintf(stderr, "bench_dp: %s\n", err.msg);
                return 1;
            }
            double t;
            bool fits = ilp_model_cost(im, p, &t);
            printf(" | %s ", names[i]);
            if (fits) printf("%.3f", t * 1e3);
            else printf("-");
            if (st.feasible) printf(" / %.3f", st.result.time_s * 1e3);
            else printf(" / infeasible");
            if (fits && r.feasible) printf(" (gap %+.1f%%)", (t / r.objective_s - 1) * 100);
            sim_plan_free(p);
        }
        printf("\n");
        ilp_result_free(&r);
        ilp_model_free(im);
    }
    model_close(&m);
    return 0;
}

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : "graphs/densenet121_op13.onnx";
    int64_t batch = argc > 2 ? atoll(argv[2]) : 640;
    if (planning_time(model, batch)) return 1;
    if (oracle_gap("graphs/alexnet_op13.onnx", 512)) return 1;
    if (oracle_gap("graphs/alexnet_op13.onnx", 128)) return 1;
    return 0;
}
