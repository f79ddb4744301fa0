/* cmd_simulate.c — `outcore-plan simulate MODEL --batch N (--profile P | --device D)
 * --budget B [--plan keep|swap-all] [--trace FILE] [--svg FILE]`. */
#include <stdio.h>
#include <string.h>

#include "sim/sim_svg.h"
#include "sim/sim_trace.h"
#include "cli.h"

void cmd_simulate_usage(FILE *f) {
    fprintf(f,
            "usage: outcore-plan simulate MODEL.onnx [--batch N] (--profile P.json | --device D |\n"
            "                             --device-file F) [--budget BYTES] [--reserve BYTES]\n"
            "                             [--plan keep|swap-all] [--trace FILE] [--svg FILE]\n"
            "\n"
            "Simulates one training iteration (compute, D2H and H2D streams; live memory\n"
            "against the budget) and prints iteration time, ideal (in-core) time, peak,\n"
            "stall, bytes moved each way, and whether the plan fits.\n"
            "\n"
            "  --profile P     node times from a profile file (scaled, with a warning, when\n"
            "                  taken at another batch); or --device %s / --device-file F\n"
            "                  for an analytic profile\n"
            "  --budget B      device memory for the plan, e.g. 16GiB (default: the device's)\n"
            "  --reserve B     kept free for the runtime (default 0)\n"
            "  --plan P        keep (in-core, default) or swap-all (every saved tensor\n"
            "                  swapped, swap-in right before its first backward reader)\n"
            "  --trace FILE    Chrome trace-event JSON of the timeline (Perfetto)\n"
            "  --svg FILE      memory-over-time plot with the budget and stream activity\n",
            device_preset_names());
}

typedef struct sim_args {
    const char *profile, *device, *device_file, *plan, *trace, *svg, *budget, *reserve;
} sim_args;

static int load_profile(const sim_args *a, const train_graph *tg, int64_t batch, profile **p,
                        oc_err *err) {
    if ((a->profile != NULL) + (a->device != NULL) + (a->device_file != NULL) != 1)
        return oc_fail(err,
                       "give exactly one of --profile FILE, --device NAME (%s), "
                       "--device-file FILE",
                       device_preset_names());
    if (a->profile) {
        if (profile_read(a->profile, p, err)) return OC_ERR;
        if (batch > 0) profile_scale_to_batch(*p, batch, stderr);
        return OC_OK;
    }
    profile_device dev;
    if (a->device ? device_preset_find(a->device, &dev, err)
                  : device_read_file(a->device_file, &dev, err))
        return OC_ERR;
    *p = profile_analytic(tg, &dev, batch);
    return OC_OK;
}

static int write_outputs(const sim_args *a, const train_graph *tg, const sim_timeline *tl,
                         const sim_result *r, int64_t budget, const char *title, oc_err *err) {
    cli_output out;
    if (a->trace) {
        if (cli_open_output(&out, a->trace, err)) return OC_ERR;
        int w = sim_trace_write(tg, tl, out.f, err);
        if (cli_close_output(&out, w == OC_OK, err) || w) return OC_ERR;
    }
    if (a->svg) {
        if (cli_open_output(&out, a->svg, err)) return OC_ERR;
        int w = sim_svg_write(tl, r, budget, title, out.f, err);
        if (cli_close_output(&out, w == OC_OK, err) || w) return OC_ERR;
    }
    return OC_OK;
}

static void print_summary(const sim_result *r, int64_t budget, const char *plan_name) {
    char b1[32], b2[32], b3[32], b4[32];
    printf("plan            %s\n", plan_name);
    printf("feasible        %s%s%s\n", r->feasible ? "yes" : "no", r->feasible ? "" : ": ",
           r->feasible ? "" : r->reason);
    printf("iteration time  %.3f ms\n", r->time_s * 1e3);
    printf("ideal time      %.3f ms (in-core, infinite memory; overhead %+.1f%%)\n",
           r->ideal_s * 1e3, r->ideal_s > 0 ? (r->time_s / r->ideal_s - 1) * 100 : 0);
    printf("peak            %s of budget %s\n", oc_fmt_bytes(r->peak_bytes, b1, sizeof b1),
           budget > 0 ? oc_fmt_bytes(budget, b2, sizeof b2) : "unlimited");
    printf("stall           %.3f ms (compute waiting for swap-ins or memory)\n", r->stall_s * 1e3);
    printf("recompute       %.3f ms (%d ops)\n", r->recompute_s * 1e3, r->n_recompute);
    printf("D2H             %s in %d swap-outs\n", oc_fmt_bytes(r->d2h_bytes, b3, sizeof b3),
           r->n_swap_out);
    printf("H2D             %s in %d swap-ins\n", oc_fmt_bytes(r->h2d_bytes, b4, sizeof b4),
           r->n_swap_in);
}

int cmd_simulate(int argc, char **argv) {
    cli_model_opts mo = {0};
    train_opts to = train_opts_default();
    sim_args a = {.plan = "keep"};
    oc_err err;
    int rc = 1;
    train_graph *tg = NULL;
    profile *prof = NULL;
    sim_context *ctx = NULL;
    sim_plan *plan = NULL;
    sim_timeline *tl = NULL;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        static const char *names[] = {"--profile", "--device", "--device-file", "--plan",
                                      "--trace",   "--svg",    "--budget",      "--reserve"};
        const char **dst[] = {&a.profile, &a.device, &a.device_file, &a.plan,
                              &a.trace,   &a.svg,    &a.budget,      &a.reserve};
        int k = 0;
        while (k < 8 && strcmp(s, names[k]) != 0) k++;
        if (k < 8) {
            if (cli_value(argc, argv, &i, dst[k], &err)) goto fail;
            continue;
        }
        int used = cli_model_opt(&mo, argc, argv, &i, &err);
        if (used == 0) used = cli_train_opt(&to, argc, argv, &i, &err);
        if (used < 0) goto fail;
        if (used == 0) {
            oc_fail(&err, "unknown argument '%s' (see --help)", s);
            goto fail;
        }
    }
    if (strcmp(a.plan, "keep") && strcmp(a.plan, "swap-all")) {
        oc_fail(&err, "--plan: '%s' is not one of keep, swap-all", a.plan);
        goto fail;
    }
    sim_options so = {0};
    if ((a.budget && oc_parse_bytes(a.budget, &so.budget_bytes, &err)) ||
        (a.reserve && oc_parse_bytes(a.reserve, &so.reserve_bytes, &err)))
        goto fail;
    if (a.budget && so.budget_bytes <= 0) {
        oc_fail(&err, "--budget: '%s' is not a positive byte count", a.budget);
        goto fail;
    }
    if (cli_load_training(&mo, &to, &tg, &err)) goto fail;
    if (load_profile(&a, tg, mo.batch, &prof, &err)) goto fail;
    if (!a.budget) so.budget_bytes = prof->device.memory_bytes;
    if (sim_context_new(tg, prof, a.profile ? a.profile : prof->device.name, &ctx, &err)) goto fail;
    plan = sim_plan_new(tg);
    if (strcmp(a.plan, "swap-all") == 0) sim_plan_swap_all(plan);
    if (a.trace || a.svg) tl = sim_timeline_new();
    sim_result r;
    if (sim_run(ctx, plan, &so, &r, tl, &err)) goto fail;
    print_summary(&r, so.budget_bytes, a.plan);
    char title[512];
    const char *base = strrchr(mo.model, '/');
    snprintf(title, sizeof title, "%s, batch %lld, plan %s, %s", base ? base + 1 : mo.model,
             (long long)mo.batch, a.plan, prof->device.name);
    if (tl && write_outputs(&a, tg, tl, &r, so.budget_bytes, title, &err)) goto fail;
    rc = r.feasible ? 0 : 3;
    if (!r.feasible) fprintf(stderr, "outcore-plan simulate: plan infeasible: %s\n", r.reason);
    goto done;
fail:
    rc = cli_report("simulate", &err);
done:
    sim_timeline_free(tl);
    sim_plan_free(plan);
    sim_context_free(ctx);
    profile_free(prof);
    train_graph_free(tg);
    cli_model_opts_free(&mo);
    return rc;
}
