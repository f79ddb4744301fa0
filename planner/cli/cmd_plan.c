/* cmd_plan.c — `outcore-plan plan MODEL --batch N --budget B (--profile P |
 * --device D) --strategy S [--json] [--trace F] [--svg F]`: one strategy's
 * decision per saved tensor and its predicted figures. Also the option
 * handling shared with `compare` (cli_plan_env). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/plan_write.h"
#include "plan/profile_workspace.h"
#include "sim/sim_bound.h"
#include "sim/sim_svg.h"
#include "sim/sim_trace.h"
#include "search/strategy.h"
#include "cli.h"

int cli_plan_env_opt(cli_plan_env *e, int argc, char **argv, int *i, oc_err *err) {
    static const char *names[] = {"--profile", "--device", "--device-file", "--budget",
                                  "--reserve"};
    const char **dst[] = {&e->profile, &e->device, &e->device_file, &e->budget, &e->reserve};
    for (int k = 0; k < 5; k++)
        if (strcmp(argv[*i], names[k]) == 0)
            return cli_value(argc, argv, i, dst[k], err) ? OC_ERR : 1;
    if (strcmp(argv[*i], "--max-leaves") == 0) {
        const char *v;
        int64_t n;
        if (cli_value(argc, argv, i, &v, err) ||
            oc_parse_int(v, 1, 1L << 40, "--max-leaves", &n, err))
            return OC_ERR;
        e->max_leaves = (long)n;
        return 1;
    }
    if (strcmp(argv[*i], "--workspace") == 0) {
        const char *v;
        if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
        e->workspace_capped = true;
        if (strcmp(v, "fastest") == 0) e->workspace_cap = INT64_MAX;
        else if (strcmp(v, "smallest") == 0) e->workspace_cap = 0;
        else if (oc_parse_bytes(v, &e->workspace_cap, err) || e->workspace_cap < 0)
            return oc_fail(err,
                           "--workspace: '%s' is not fastest, smallest or a byte count (or, for "
                           "plan, auto)",
                           v);
        return 1;
    }
    if (strcmp(argv[*i], "--max-seconds") == 0) {
        const char *v;
        char *end;
        if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
        e->max_seconds = strtod(v, &end);
        if (end == v || *end || !(e->max_seconds > 0) || isinf(e->max_seconds))
            return oc_fail(err, "--max-seconds: '%s' is not a positive number", v);
        return 1;
    }
    int used = cli_model_opt(&e->mo, argc, argv, i, err);
    if (used == 0) used = cli_train_opt(&e->to, argc, argv, i, err);
    return used;
}

int cli_plan_env_load(cli_plan_env *e, oc_err *err) {
    if (!e->mo.model) return oc_fail(err, "no MODEL given (see --help)");
    if ((e->profile != NULL) + (e->device != NULL) + (e->device_file != NULL) != 1)
        return oc_fail(err,
                       "give exactly one of --profile FILE, --device NAME (%s), "
                       "--device-file FILE",
                       device_preset_names());
    if (e->budget && oc_parse_bytes(e->budget, &e->budget_bytes, err))
        return oc_fail_prefix(err, "--budget");
    if (e->budget && e->budget_bytes <= 0)
        return oc_fail(err, "--budget: '%s' is not a positive byte count", e->budget);
    if (e->reserve && oc_parse_bytes(e->reserve, &e->reserve_bytes, err))
        return oc_fail_prefix(err, "--reserve");
    ir_graph *g;
    cli_model_opts quiet_mo = e->mo; /* a second load: its notices were said by the first */
    quiet_mo.quiet = true;
    if (e->quiet ? cli_load(&quiet_mo, &g, err) || train_build(g, &e->to, &e->tg, err)
                 : cli_load_training(&e->mo, &e->to, &e->tg, err))
        return OC_ERR;
    if (e->quiet) e->mo.batch = quiet_mo.batch; /* the model's own, where none was given */
    if (e->profile) {
        if (profile_read(e->profile, &e->prof, err)) return OC_ERR;
        if (e->mo.batch > 0) profile_scale_to_batch(e->prof, e->mo.batch, e->quiet ? NULL : stderr);
        if (e->workspace_capped) {
            profile *q = profile_capped(e->prof, e->workspace_cap, NULL);
            profile_free(e->prof);
            e->prof = q;
        }
    } else {
        profile_device dev;
        if (e->device ? device_preset_find(e->device, &dev, err)
                      : device_read_file(e->device_file, &dev, err))
            return OC_ERR;
        e->prof = profile_analytic(e->tg, &dev, e->mo.batch);
    }
    if (!e->budget) e->budget_bytes = e->prof->device.memory_bytes;
    return sim_context_new(e->tg, e->prof, e->profile ? e->profile : e->prof->device.name, &e->ctx,
                           err);
}

void cli_plan_env_free(cli_plan_env *e) {
    sim_context_free(e->ctx);
    profile_free(e->prof);
    train_graph_free(e->tg);
    cli_model_opts_free(&e->mo);
}

int cli_plan_env_strategy(const char *option, const char *name, const strategy **out, oc_err *err) {
    *out = strategy_find(name);
    if (*out) return OC_OK;
    char names[256];
    strategy_list(names, sizeof names);
    return oc_fail(err, "%s: '%s' is not one of %s", option, name, names);
}

void cli_plan_env_input(const cli_plan_env *e, strategy_input *in) {
    *in = (strategy_input){
        .tg = e->tg,
        .prof = e->prof,
        .ctx = e->ctx,
        .sim = {.budget_bytes = e->budget_bytes, .reserve_bytes = e->reserve_bytes},
        .opts = strategy_options_default()};
    in->opts.max_leaves = e->max_leaves;
    in->opts.max_seconds = e->max_seconds;
}

void cmd_plan_usage(FILE *f) {
    char names[256];
    strategy_list(names, sizeof names);
    fprintf(
        f,
        "usage: outcore-plan plan MODEL.onnx [--batch N] (--profile P.json | --device D |\n"
        "                         --device-file F) [--budget B] [--reserve B]\n"
        "                         [--strategy S] [--json] [--trace FILE] [--svg FILE]\n"
        "                         [--max-leaves N] [--max-seconds S]\n"
        "\n"
        "Plans keep / swap / recompute for every saved tensor of the training step\n"
        "with one strategy, scores the plan with the simulator and prints each\n"
        "decision (with the swap-in issue node) and the predicted figures.\n"
        "\n"
        "  --batch N       leading dim of the first input (default: the model's own, where\n"
        "                  the file fixes it, as torch.export's does)\n"
        "  --strategy S    one of: %s (default auto: every\n"
        "                  strategy, then the local search from the best)\n"
        "  --budget B      device memory for the plan, e.g. 16GiB (default: the device's)\n"
        "  --max-leaves N  cap on leaves of exhaustive searches (hybrid default 1024)\n"
        "  --max-seconds S wall-clock cap per strategy (best plan so far is kept)\n"
        "  --json          machine-readable output\n"
        "  --trace FILE    Chrome trace-event JSON of the plan's timeline\n"
        "  --svg FILE      memory-over-time plot of the plan\n"
        "  -o PLAN.onnx    the rewritten step (SwapOut/SwapIn, recomputes, static layout)\n"
        "                  for outcore-run; see `outcore-plan show`\n"
        "  --attention A   auto (default), fused or unfused: auto plans the step twice when\n"
        "                  the model has scaled dot-product attention, with FusedAttention\n"
        "                  nodes and without, and keeps the faster feasible plan\n"
        "  --fuse F        auto (default), all, forward or none (--no-fuse): BatchNormalization\n"
        "                  [+ residual Add] + Relu as one BatchNormRelu node; all also fuses\n"
        "                  their backward where no residual needs it (one write less, one\n"
        "                  tensor more live); auto plans all and forward, keeps the faster;\n"
        "                  a decomposed GELU is one Gelu unless none\n"
        "  --workspace W   auto (default), fastest, smallest or a byte count: with a profile\n"
        "                  whose nodes hold alternatives (profile --merge of profiles\n"
        "                  measured under several workspace caps), each node runs its\n"
        "                  fastest kernel within the cap; auto plans each cap the\n"
        "                  profile offers and keeps the faster feasible plan\n"
        "  --layout L      auto (default), nchw or nhwc: auto plans the step with 2-d\n"
        "                  convolutions channels-last too (layout Transposes as nodes) and\n"
        "                  keeps the faster feasible plan; a measured profile holds one\n"
        "                  layout's nodes, and that layout is planned, unless a second\n"
        "                  --profile measured with the other layout is given\n"
        "Training options as `emit` takes them (--lr, --momentum, --weight-decay, --loss,\n"
        "--bn, --optimizer sgd|adamw, --betas, --eps, --clip-grad-norm, --ignore-index,\n"
        "--precision fp32|bf16|fp16, --loss-scale, --loss-scale-interval, --freeze).\n"
        "Exit status: 0 feasible plan, 3 no feasible plan (nothing written), 1 error.\n",
        names);
}

static json_t *stats_json(const strategy *s, const strategy_stats *st, int64_t batch) {
    const sim_result *r = &st->result;
    double ideal = r->ideal_s;
    json_t *o = json_object();
    json_object_set_new(o, "strategy", json_string(s->name));
    json_object_set_new(o, "feasible", json_boolean(st->feasible));
    json_object_set_new(o, "iteration_time_s", st->feasible ? json_real(r->time_s) : json_null());
    json_object_set_new(o, "ideal_time_s", json_real(ideal));
    json_object_set_new(o, "slowdown",
                        st->feasible && ideal > 0 ? json_real(r->time_s / ideal) : json_null());
    json_object_set_new(o, "images_per_s",
                        st->feasible && r->time_s > 0 ? json_real((double)batch / r->time_s)
                                                      : json_null());
    json_object_set_new(o, "peak_bytes", json_integer(r->peak_bytes));
    json_object_set_new(o, "swap_out_bytes", json_integer(r->d2h_bytes));
    json_object_set_new(o, "swap_in_bytes", json_integer(r->h2d_bytes));
    json_object_set_new(o, "recompute_time_s", json_real(r->recompute_s));
    json_object_set_new(o, "stall_s", json_real(r->stall_s));
    json_object_set_new(o, "plan_seconds", json_real(st->plan_seconds));
    json_object_set_new(o, "leaves_explored", json_integer(st->leaves_explored));
    json_object_set_new(o, "bound_hit", json_boolean(st->bound_hit));
    json_object_set_new(o, "sims", json_integer(st->sims));
    json_object_set_new(o, "notes", json_string(st->notes));
    return o;
}

void cli_print_bound(const sim_bound *lb, double plan_s, const char *who, FILE *f) {
    if (!lb->feasible) {
        fprintf(f, "lower bound     none: no plan fits this budget\n");
        return;
    }
    fprintf(f, "lower bound     %.3f ms at this budget", lb->time_s * 1e3);
    if (plan_s > 0) fprintf(f, " (%s takes %.3fx of it)", who, plan_s / lb->time_s);
    fprintf(f, "\n");
}

json_t *cli_strategy_stats_json(const strategy *s, const strategy_stats *st, int64_t batch) {
    return stats_json(s, st, batch);
}

static void print_text(const cli_plan_env *e, const strategy *s, const sim_plan *p,
                       const strategy_stats *st, const sim_bound *lb) {
    const ir_graph *g = e->tg->g;
    const sim_result *r = &st->result;
    char b1[32], b2[32], b3[32];
    printf("strategy        %s\n", s->name);
    printf("%-48s %12s  %-9s %s\n", "saved tensor", "bytes", "decision", "swap-in issued at");
    for (int i = 0; i < e->tg->n_saved; i++) {
        int t = e->tg->saved[i];
        int64_t b = 0;
        ir_tensor_bytes(&g->tensors[t], &b);
        int d = p->decision[t], at = p->swap_in_at[t];
        printf("%-48s %12s  %-9s %s\n", g->tensors[t].name, oc_fmt_bytes(b, b1, sizeof b1),
               sim_decision_name((sim_decision)d),
               d == SIM_DECISION_SWAP ? (at >= 0 ? g->nodes[at].name : "(first reader)") : "");
    }
    int nk, ns, nr, nc = 0;
    for (int t = 0; t < g->n_tensors; t++) { /* unsaved tensors kept for recomputes */
        if (p->decision[t] != SIM_DECISION_CHECKPOINT) continue;
        int64_t b = 0;
        ir_tensor_bytes(&g->tensors[t], &b);
        printf("%-48s %12s  %-9s\n", g->tensors[t].name, oc_fmt_bytes(b, b1, sizeof b1),
               "checkpoint");
        nc++;
    }
    sim_plan_counts(p, &nk, &ns, &nr);
    printf("decisions       %d keep, %d swap, %d recompute", nk, ns, nr);
    if (nc) printf(", %d checkpoint (unsaved, kept for recomputes)", nc);
    printf("\n");
    printf("feasible        %s%s%s\n", st->feasible ? "yes" : "no", st->feasible ? "" : ": ",
           st->feasible ? "" : r->reason);
    if (st->feasible) {
        printf("iteration time  %.3f ms\n", r->time_s * 1e3);
        printf("ideal time      %.3f ms (slowdown %.3fx)\n", r->ideal_s * 1e3,
               r->ideal_s > 0 ? r->time_s / r->ideal_s : 0);
        printf("images/s        %.1f\n", (double)e->mo.batch / r->time_s);
    }
    cli_print_bound(lb, st->feasible ? r->time_s : 0, "the plan", stdout);
    printf("peak            %s of budget %s\n", oc_fmt_bytes(r->peak_bytes, b1, sizeof b1),
           e->budget_bytes > 0 ? oc_fmt_bytes(e->budget_bytes, b2, sizeof b2) : "unlimited");
    printf("swapped         %s out, %s in\n", oc_fmt_bytes(r->d2h_bytes, b2, sizeof b2),
           oc_fmt_bytes(r->h2d_bytes, b3, sizeof b3));
    printf("recompute       %.3f ms (%d ops)\n", r->recompute_s * 1e3, r->n_recompute);
    printf("stall           %.3f ms\n", r->stall_s * 1e3);
    printf("planning        %.3f s, %ld simulations, %ld leaves%s\n", st->plan_seconds, st->sims,
           st->leaves_explored, st->bound_hit ? " (bound hit)" : "");
    if (st->notes[0]) printf("notes           %s\n", st->notes);
}

static int write_outputs(const cli_plan_env *e, const char *trace, const char *svg,
                         const sim_plan *p, const char *title, oc_err *err) {
    sim_timeline *tl = sim_timeline_new();
    sim_options so = {.budget_bytes = e->budget_bytes, .reserve_bytes = e->reserve_bytes};
    sim_result r;
    int rc = sim_run(e->ctx, p, &so, &r, tl, err);
    cli_output out;
    if (rc == OC_OK && trace) {
        if ((rc = cli_open_output(&out, trace, err)) == OC_OK) {
            int w = sim_trace_write(e->tg, tl, out.f, err);
            rc = cli_close_output(&out, w == OC_OK, err) || w ? OC_ERR : OC_OK;
        }
    }
    if (rc == OC_OK && svg) {
        if ((rc = cli_open_output(&out, svg, err)) == OC_OK) {
            int w = sim_svg_write(tl, &r, e->budget_bytes, title, out.f, err);
            rc = cli_close_output(&out, w == OC_OK, err) || w ? OC_ERR : OC_OK;
        }
    }
    sim_timeline_free(tl);
    return rc;
}

int cli_plan_write_outputs(const cli_plan_env *e, const char *trace, const char *svg,
                           const sim_plan *p, const char *strategy_name, oc_err *err) {
    char title[512];
    const char *base = strrchr(e->mo.model, '/');
    snprintf(title, sizeof title, "%s, batch %lld, strategy %s, %s", base ? base + 1 : e->mo.model,
             (long long)e->mo.batch, strategy_name, e->prof->device.name);
    return write_outputs(e, trace, svg, p, title, err);
}

int cli_plan_once(cli_plan_env *e, const strategy *st, bool made, plan_made *pm, sim_plan **p,
                  strategy_stats *stats, oc_err *err) {
    strategy_input in;
    cli_plan_env_input(e, &in);
    *p = sim_plan_new(e->tg);
    if (made) {
        if (plan_make(st, &in, pm, err)) return OC_ERR;
        *stats = pm->stats;
        return OC_OK;
    }
    return strategy_run(st, &in, *p, stats, err);
}

double cli_plan_time(const strategy_stats *s, bool made, const plan_made *pm) {
    if (!s->feasible || (made && !pm->feasible)) return INFINITY;
    return s->result.time_s;
}

/* What cli_plan_env_load made (the options, shared with a copy, stay). */
static void env_free_loaded(cli_plan_env *x) {
    sim_context_free(x->ctx);
    profile_free(x->prof);
    train_graph_free(x->tg);
    x->ctx = NULL, x->prof = NULL, x->tg = NULL;
}

/* One whole-step choice of `auto` options: the step built with the options
 * alt (and the profile alt_profile, if not NULL) is planned too, unless it is
 * the same graph (the model has no such pattern, or the profile has no
 * records for the other form); e becomes the
 * faster feasible of the two (a tie keeps e's). Prints the choice on stderr
 * when either is feasible:
 *   --attention auto: alt FusedAttention, e's unfused (PyTorch's own graph)
 *   --fuse auto: e's BatchNormReluGrad backward, alt ReluGrad + BNGrad (fewer
 *   tensors live at once) */
static int choose_variant(cli_plan_env *e, const strategy *st, bool made, plan_made *pm,
                          sim_plan **p, strategy_stats *stats, const train_opts *alt,
                          const char *alt_profile, const char *flag, const char *e_name,
                          const char *alt_name, oc_err *err) {
    cli_plan_env f = *e;
    f.tg = NULL, f.prof = NULL, f.ctx = NULL;
    f.to = *alt;
    if (alt_profile) f.profile = alt_profile;
    f.quiet = true;
    oc_err ferr;
    if (cli_plan_env_load(&f, &ferr) || f.tg->g->n_nodes == e->tg->g->n_nodes) {
        env_free_loaded(&f);
        return OC_OK;
    }
    plan_made fpm = {0};
    sim_plan *fp = NULL;
    strategy_stats fs;
    if (cli_plan_once(&f, st, made, &fpm, &fp, &fs, err)) {
        plan_made_free(&fpm), sim_plan_free(fp), env_free_loaded(&f);
        return OC_ERR;
    }
    double te = cli_plan_time(stats, made, pm), ta = cli_plan_time(&fs, made, &fpm);
    bool take = ta < te;
    if (isinf(ta) && isinf(te)) { /* neither fits: e's reports why */
        plan_made_free(&fpm), sim_plan_free(fp), env_free_loaded(&f);
        return OC_OK;
    }
    fprintf(stderr,
            "outcore-plan: notice: %s auto: %s (predicted step: %s %s%.1f ms, %s %s%.1f ms)\n",
            flag, take ? alt_name : e_name, alt_name, isinf(ta) ? "no plan, " : "",
            isinf(ta) ? 0.0 : ta * 1e3, e_name, isinf(te) ? "no plan, " : "",
            isinf(te) ? 0.0 : te * 1e3);
    if (take) { /* the other run replaces e's */
        plan_made_free(pm), sim_plan_free(*p), env_free_loaded(e);
        e->tg = f.tg, e->prof = f.prof, e->ctx = f.ctx, e->to = f.to, e->profile = f.profile;
        *pm = fpm, *p = fp, *stats = fs;
        ir_graph_print_notes(e->tg->g, "outcore-plan", stderr);
        return OC_OK;
    }
    plan_made_free(&fpm), sim_plan_free(fp), env_free_loaded(&f);
    return OC_OK;
}

/* A training option that plan also takes as `auto` (--attention, --fuse,
 * --layout): *is_auto, or the value parsed into *to. */
static int auto_or_value(int argc, char **argv, int *i, train_opts *to, bool *is_auto,
                         oc_err *err) {
    const char *flag = argv[*i], *v;
    if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
    *is_auto = strcmp(v, "auto") == 0;
    return !*is_auto && train_opts_parse(to, flag, v, err) < 0 ? OC_ERR : OC_OK;
}

int cmd_plan(int argc, char **argv) {
    cli_plan_env e = {.to = train_opts_default()};
    bool attention_auto = true;       /* unless --attention fused|unfused */
    bool fuse_auto = true;            /* unless --fuse all|forward|none or --no-fuse */
    bool layout_auto = true;          /* unless --layout nchw|nhwc */
    bool workspace_auto = true;       /* unless --workspace fastest|smallest|BYTES */
    const char *profile_other = NULL; /* a second --profile: the other layout's */
    const char *sname = "auto", *trace = NULL, *svg = NULL;
    const char *plan_out = NULL; /* -o: cmd_show.c writes it */
    bool json = false;
    oc_err err;
    int rc = 1;
    sim_plan *p = NULL;
    plan_made pm = {0};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--json") == 0) {
            json = true;
            continue;
        }
        if (strcmp(s, "-o") == 0) {
            if (cli_value(argc, argv, &i, &plan_out, &err)) goto fail;
            continue;
        }
        if (strcmp(s, "--attention") == 0 || strcmp(s, "--fuse") == 0 ||
            strcmp(s, "--layout") == 0) {
            bool *is_auto = s[2] == 'a' ? &attention_auto : s[2] == 'f' ? &fuse_auto : &layout_auto;
            if (auto_or_value(argc, argv, &i, &e.to, is_auto, &err)) goto fail;
            continue;
        }
        if (strcmp(s, "--workspace") == 0 && i + 1 < argc && strcmp(argv[i + 1], "auto") == 0) {
            i++;
            continue;
        }
        if (strcmp(s, "--no-fuse") == 0) {
            fuse_auto = false;
            train_opts_parse(&e.to, "--fuse", "none", &err);
            continue;
        }
        if (strcmp(s, "--profile") == 0 && e.profile) {
            if (profile_other) {
                oc_fail(&err, "--profile: at most two (one measured per --layout)");
                goto fail;
            }
            if (cli_value(argc, argv, &i, &profile_other, &err)) goto fail;
            continue;
        }
        if (strcmp(s, "--strategy") == 0 || strcmp(s, "--trace") == 0 || strcmp(s, "--svg") == 0) {
            const char **dst = s[2] == 's' && s[3] == 't' ? &sname : s[2] == 't' ? &trace : &svg;
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
    workspace_auto = !e.workspace_capped;
    const strategy *st;
    if (cli_plan_env_strategy("--strategy", sname, &st, &err)) goto fail;
    /* a measured profile holds one layout's nodes: plan in that one (a second
     * profile, the other layout's, is auto's alternative) */
    if (layout_auto && e.profile && profile_layout_nhwc(e.profile, &e.to.channels_last, &err))
        goto fail;
    if (profile_other) {
        bool other_nhwc;
        if (!layout_auto) {
            oc_fail(&err, "two --profile files need --layout auto (one per layout)");
            goto fail;
        }
        if (profile_layout_nhwc(profile_other, &other_nhwc, &err)) goto fail;
        if (other_nhwc == e.to.channels_last) {
            oc_fail(&err, "--profile %s and %s: both of %s steps (give one per layout)", e.profile,
                    profile_other, other_nhwc ? "channels-last" : "NCHW");
            goto fail;
        }
    }
    if (cli_plan_env_load(&e, &err)) goto fail;
    strategy_stats stats;
    /* the figures printed are those of the plan written (after any re-plan) */
    if (cli_plan_once(&e, st, plan_out != NULL, &pm, &p, &stats, &err)) goto fail;
    if (attention_auto) {
        train_opts alt = e.to;
        alt.fuse_attention = true;
        if (choose_variant(&e, st, plan_out != NULL, &pm, &p, &stats, &alt, NULL, "--attention",
                           "unfused", "fused", &err))
            goto fail;
    }
    /* the layout (1.2-1.5x on convolutions) before the fusion (a few percent): the plan
     * written is then the one --layout L (L the layout chosen) writes */
    if (layout_auto) {
        train_opts alt = e.to;
        alt.channels_last = !e.to.channels_last;
        if (choose_variant(&e, st, plan_out != NULL, &pm, &p, &stats, &alt, profile_other,
                           "--layout", e.to.channels_last ? "nhwc" : "nchw",
                           alt.channels_last ? "nhwc" : "nchw", &err))
            goto fail;
    }
    if (fuse_auto) {
        train_opts alt = e.to;
        alt.fuse = TRAIN_FUSE_FORWARD;
        if (choose_variant(&e, st, plan_out != NULL, &pm, &p, &stats, &alt, NULL, "--fuse", "all",
                           "forward", &err))
            goto fail;
    }
    /* last: the alternatives are the chosen layout's profile's */
    if (workspace_auto && cli_choose_workspace(&e, st, plan_out != NULL, &pm, &p, &stats, &err))
        goto fail;
    const sim_plan *shown = plan_out ? pm.plan : p;
    if (plan_out && stats.feasible && !pm.feasible) {
        oc_fail(&err, "%s not written: %s", plan_out, pm.reason);
        goto fail;
    }
    cli_fit fit;
    if (!stats.feasible && cli_fit_explain(&e, &fit, &err)) goto fail;
    sim_bound lb;
    sim_options so = {.budget_bytes = e.budget_bytes, .reserve_bytes = e.reserve_bytes};
    if (sim_lower_bound(e.ctx, &so, &lb, &err)) goto fail;
    if (json) {
        json_t *o = stats_json(st, &stats, e.mo.batch);
        /* the step's form (what the auto options chose) */
        static const char *const fuse_names[] = {
            [TRAIN_FUSE_ALL] = "all", [TRAIN_FUSE_FORWARD] = "forward", [TRAIN_FUSE_NONE] = "none"};
        json_object_set_new(o, "layout", json_string(e.to.channels_last ? "nhwc" : "nchw"));
        json_object_set_new(o, "fuse", json_string(fuse_names[e.to.fuse]));
        json_object_set_new(o, "attention", json_string(e.to.fuse_attention ? "fused" : "unfused"));
        json_object_set_new(o, "workspace_cap",
                            e.workspace_capped && e.workspace_cap < INT64_MAX
                                ? json_integer((json_int_t)e.workspace_cap)
                                : json_null());
        json_object_set_new(o, "lower_bound_s", lb.feasible ? json_real(lb.time_s) : json_null());
        if (!stats.feasible) json_object_set_new(o, "fit", cli_fit_json(&fit));
        json_t *dec = json_array();
        for (int i = 0; i < e.tg->n_saved; i++) {
            int t = e.tg->saved[i], at = shown->swap_in_at[t];
            int64_t b = 0;
            ir_tensor_bytes(&e.tg->g->tensors[t], &b);
            json_array_append_new(
                dec, json_pack("{s:s, s:I, s:s, s:o}", "tensor", e.tg->g->tensors[t].name, "bytes",
                               (json_int_t)b, "decision",
                               sim_decision_name((sim_decision)shown->decision[t]), "swap_in_at",
                               shown->decision[t] == SIM_DECISION_SWAP && at >= 0
                                   ? json_string(e.tg->g->nodes[at].name)
                                   : json_null()));
        }
        for (int t = 0; t < e.tg->g->n_tensors; t++) {
            if (shown->decision[t] != SIM_DECISION_CHECKPOINT) continue;
            int64_t b = 0;
            ir_tensor_bytes(&e.tg->g->tensors[t], &b);
            json_array_append_new(dec, json_pack("{s:s, s:I, s:s, s:n}", "tensor",
                                                 e.tg->g->tensors[t].name, "bytes", (json_int_t)b,
                                                 "decision", "checkpoint", "swap_in_at"));
        }
        json_object_set_new(o, "decisions", dec);
        json_dumpf(o, stdout, JSON_INDENT(1));
        printf("\n");
        json_decref(o);
    } else {
        print_text(&e, st, shown, &stats, &lb);
        if (!stats.feasible) cli_fit_print(&e, &fit, stdout);
    }
    /* Trace / plot only of a feasible plan: an infeasible timeline stops at the
     * deadlock, and a file left behind would look like a result. */
    if (stats.feasible && (trace || svg) &&
        cli_plan_write_outputs(&e, trace, svg, shown, st->name, &err))
        goto fail;
    if (stats.feasible && plan_out && cli_plan_write_made(&e, st, &pm, plan_out, &err)) goto fail;
    rc = stats.feasible ? 0 : 3;
    if (!stats.feasible && plan_out && pm.replans > 0) /* a plan, but its layouts never fit */
        fprintf(stderr,
                "outcore-plan plan: no plan written: the plan found under the budget needed a "
                "larger arena, and %d re-plans under lower budgets ended with: %s\n",
                pm.replans, pm.reason);
    else if (!stats.feasible)
        fprintf(stderr, "outcore-plan plan: no feasible plan%s: %s (%s)\n",
                trace || svg ? " (no trace/plot written)" : "", stats.result.reason, stats.notes);
    goto done;
fail:
    rc = cli_report("plan", &err);
done:
    plan_made_free(&pm);
    sim_plan_free(p);
    cli_plan_env_free(&e);
    return rc;
}
