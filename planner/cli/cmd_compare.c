/* cmd_compare.c — `outcore-plan compare MODEL --batch N --budget B
 * (--profile P | --device D) [--json] [--trace F --svg F [--of S]]`: every
 * registered strategy (but auto) on the same graph, profile and budget, one
 * row each; the fastest feasible one is what `auto` would choose. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "search/local_search.h"
#include "search/strategy.h"
#include "sim/sim_bound.h"
#include "cli.h"
#include "compare_oracle.h"

void cmd_compare_usage(FILE *f) {
    fprintf(f,
            "usage: outcore-plan compare MODEL.onnx [--batch N] (--profile P.json | --device D |\n"
            "                            --device-file F) [--budget B] [--reserve B] [--json]\n"
            "                            [--max-leaves N] [--max-seconds S]\n"
            "                            [--trace FILE] [--svg FILE] [--of STRATEGY] [--oracle]\n"
            "\n"
            "Runs every strategy and prints one row each: feasible, predicted iteration\n"
            "time, slowdown vs the ideal (in-core, infinite memory) time, images/s, peak,\n"
            "bytes swapped out / in, recompute time, planning time, search leaves.\n"
            "  --json          {\"strategies\": [{strategy, feasible, iteration_time_s, ...}],\n"
            "                   \"best\": NAME|null, \"ideal_time_s\": T}\n"
            "  --trace/--svg   timeline / memory plot of one strategy's plan (--of, default\n"
            "                  hybrid; written only when that plan is feasible)\n"
            "  --oracle        add the ILP optimality oracle's row (graphs <= 100 nodes) and\n"
            "                  every strategy's gap to it (JSON: \"oracle\"); CBC, warm-started\n"
            "                  from the best plan, stops after --max-seconds (default 120) with\n"
            "                  the proven bound when it could not prove optimality\n"
            "Exit status: 0 some strategy is feasible, 3 none is, 1 error.\n");
}

int cmd_compare(int argc, char **argv) {
    cli_plan_env e = {.to = train_opts_default()};
    const char *trace = NULL, *svg = NULL, *of = "hybrid";
    bool json = false;
    oc_err err;
    int rc = 1;
    sim_plan *p = NULL, *chosen = NULL, *best_plan = NULL;
    strategy_shared *shared = NULL;
    json_t *rows = NULL;
    bool oracle = false;
    compare_oracle *orc = NULL;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--json") == 0 || strcmp(s, "--oracle") == 0) {
            *(s[2] == 'j' ? &json : &oracle) = true;
            continue;
        }
        if (strcmp(s, "--trace") == 0 || strcmp(s, "--svg") == 0 || strcmp(s, "--of") == 0) {
            const char **dst = s[2] == 't' ? &trace : s[2] == 's' ? &svg : &of;
            if (cli_value(argc, argv, &i, dst, &err)) goto fail;
            continue;
        }
        int used = cli_plan_env_opt(&e, argc, argv, &i, &err);
        if (used < 0) goto fail;
        if (used == 0) {
            oc_fail(&err, "unknown argument '%s' (see --help)", s);
            goto fail;
        }
    }
    const strategy *of_s;
    if (cli_plan_env_strategy("--of", of, &of_s, &err) || cli_plan_env_load(&e, &err)) goto fail;
    strategy_input in;
    cli_plan_env_input(&e, &in);
    in.shared = shared = strategy_shared_new(); /* the DP's chains, computed once */
    if (oracle && compare_oracle_new(&in, &orc, &err)) goto fail;
    p = sim_plan_new(e.tg);
    chosen = sim_plan_new(e.tg);
    rows = json_array();
    const char *best = NULL;
    double best_t = 0, ideal = 0;
    bool of_feasible = false;
    char b1[32], b2[32], b3[32];
    if (!json) {
        printf("%s, batch %lld, budget %s, %s\n", e.mo.model, (long long)e.mo.batch,
               e.budget_bytes > 0 ? oc_fmt_bytes(e.budget_bytes, b1, sizeof b1) : "unlimited",
               e.prof->device.name);
        printf("%-18s %-4s %11s %8s %9s %10s %10s %10s %9s %8s %7s\n", "strategy", "fits",
               "iter ms", "slowdown", "images/s", "peak", "swap out", "swap in", "recomp ms",
               "plan s", "leaves");
    }
    best_plan = sim_plan_new(e.tg);
    for (int i = 0; i <= strategy_count(); i++) {
        /* every strategy but auto, then "local": the joint search from the best plan */
        const strategy *s = i < strategy_count() ? strategy_at(i) : NULL;
        if (s == &strategy_auto || (!s && !best)) continue;
        strategy_stats st;
        if (s && strategy_run(s, &in, p, &st, &err)) goto fail;
        if (!s) {
            s = &strategy_local;
            sim_plan_copy(p, best_plan);
            if (local_run(&in, p, best, &st, &err)) goto fail;
        }
        const sim_result *r = &st.result;
        ideal = r->ideal_s;
        if (s == of_s) {
            sim_plan_copy(chosen, p);
            of_feasible = st.feasible;
        }
        if (st.feasible && (!best || r->time_s < best_t)) {
            best = s->name;
            best_t = r->time_s;
            sim_plan_copy(best_plan, p);
        }
        json_array_append_new(rows, cli_strategy_stats_json(s, &st, e.mo.batch));
        if (orc) compare_oracle_add(orc, s->name, p, &st);
        if (json) continue;
        if (st.feasible)
            printf("%-18s %-4s %11.2f %8.3f %9.1f %10s %10s %10s %9.2f %8.3f %6ld%s\n", s->name,
                   "yes", r->time_s * 1e3, r->time_s / r->ideal_s, (double)e.mo.batch / r->time_s,
                   oc_fmt_bytes(r->peak_bytes, b1, sizeof b1),
                   oc_fmt_bytes(r->d2h_bytes, b2, sizeof b2),
                   oc_fmt_bytes(r->h2d_bytes, b3, sizeof b3), r->recompute_s * 1e3, st.plan_seconds,
                   st.leaves_explored, st.bound_hit ? "*" : "");
        else
            printf("%-18s %-4s %11s %8s %9s %10s %10s %10s %9s %8.3f %6ld%s\n", s->name, "no", "-",
                   "-", "-", "-", "-", "-", "-", st.plan_seconds, st.leaves_explored,
                   st.bound_hit ? "*" : "");
    }
    if (orc && compare_oracle_solve(orc, &in, e.max_seconds > 0 ? e.max_seconds : 120.0, &err))
        goto fail;
    cli_fit fit;
    if (!best && cli_fit_explain(&e, &fit, &err)) goto fail;
    sim_bound lb;
    sim_options so = {.budget_bytes = e.budget_bytes, .reserve_bytes = e.reserve_bytes};
    if (sim_lower_bound(e.ctx, &so, &lb, &err)) goto fail;
    if (json) {
        /* Memory yardsticks: parameters and optimizer state, the least any plan
         * needs, and the bytes of the saved activations (budgets of experiments
         * are often "floor + f x saved"). */
        int64_t persistent, floor = sim_memory_floor(e.ctx, NULL, &persistent), saved = 0;
        for (int i = 0; i < e.tg->n_saved; i++) {
            int64_t b;
            if (ir_tensor_bytes(&e.tg->g->tensors[e.tg->saved[i]], &b)) saved += b;
        }
        json_t *o = json_pack(
            "{s:O, s:s?, s:f, s:I, s:i, s:I, s:I, s:I, s:I, s:o}", "strategies", rows, "best", best,
            "ideal_time_s", ideal, "batch", (json_int_t)e.mo.batch, "n_nodes", e.tg->g->n_nodes,
            "budget_bytes", (json_int_t)e.budget_bytes, "persistent_bytes", (json_int_t)persistent,
            "floor_bytes", (json_int_t)floor, "saved_bytes", (json_int_t)saved, "lower_bound_s",
            lb.feasible ? json_real(lb.time_s) : json_null());
        if (!best) json_object_set_new(o, "fit", cli_fit_json(&fit));
        if (orc) json_object_set_new(o, "oracle", compare_oracle_json(orc));
        json_dumpf(o, stdout, JSON_INDENT(1));
        printf("\n");
        json_decref(o);
    } else {
        printf("ideal (in-core, infinite memory): %.2f ms = %.1f images/s\n", ideal * 1e3,
               ideal > 0 ? (double)e.mo.batch / ideal : 0);
        cli_print_bound(&lb, best ? best_t : 0, "the best plan", stdout);
        if (orc) compare_oracle_print(orc, stdout);
        printf("best feasible (what auto chooses): %s\n", best ? best : "none");
        if (!best) cli_fit_print(&e, &fit, stdout);
        printf("(* = a search bound was hit; the best plan found so far is reported)\n");
    }
    /* Trace / plot only of a feasible plan (an infeasible one stops at its deadlock). */
    if ((trace || svg) && of_feasible &&
        cli_plan_write_outputs(&e, trace, svg, chosen, of_s->name, &err))
        goto fail;
    if (!best)
        fprintf(stderr,
                "outcore-plan compare: no strategy found a feasible plan under the "
                "budget%s\n",
                trace || svg ? " (no trace/plot written)" : "");
    else if ((trace || svg) && !of_feasible)
        fprintf(stderr, "outcore-plan compare: %s found no feasible plan: no trace/plot written\n",
                of_s->name);
    rc = best ? 0 : 3;
    goto done;
fail:
    rc = cli_report("compare", &err);
done:
    json_decref(rows);
    compare_oracle_free(orc);
    sim_plan_free(p);
    sim_plan_free(chosen);
    sim_plan_free(best_plan);
    strategy_shared_free(shared);
    cli_plan_env_free(&e);
    return rc;
}
