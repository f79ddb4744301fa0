/* cli_fit.c — `plan` and `compare` when no plan fits: why (the node that does
 * not fit on its own, or the all-swap plan's need), and what would (the
 * smallest budget, the largest batch under this one). */
#include <jansson.h>
#include <stdio.h>

#include "search/fit_advice.h"
#include "cli.h"

/* Does the all-swap plan fit e's budget at batch b? A fresh load of the model
 * bound at b (its dims borrowed from e: e is not changed). */
static int fits_at_batch(const cli_plan_env *e, int64_t b, bool *ok, oc_err *err) {
    cli_plan_env x = *e;
    x.tg = NULL, x.prof = NULL, x.ctx = NULL;
    x.mo.batch = b;
    x.quiet = true;
    int rc = cli_plan_env_load(&x, err);
    if (rc == OC_OK) {
        strategy_input in;
        cli_plan_env_input(&x, &in);
        rc = fit_swap_all_fits(&in, ok, err);
    }
    sim_context_free(x.ctx);
    profile_free(x.prof);
    train_graph_free(x.tg);
    return rc;
}

int cli_fit_explain(const cli_plan_env *e, cli_fit *f, oc_err *err) {
    strategy_input in;
    cli_plan_env_input(e, &in);
    fit_advice a;
    if (fit_advice_compute(&in, &a, err)) return OC_ERR;
    f->floor_bytes = a.floor_bytes;
    f->floor_node = a.floor_node >= 0 ? e->tg->g->nodes[a.floor_node].name : NULL;
    f->base_bytes = a.persistent_bytes;
    f->swap_all_budget = a.swap_all_budget;
    snprintf(f->reason, sizeof f->reason, "%s", a.swap_all_reason);
    f->max_batch = 0;
    /* The largest batch under this budget: the all-swap plan's need grows with it. */
    int64_t lo = 0, hi = e->mo.batch;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        bool ok = false;
        oc_err ignored;
        if (fits_at_batch(e, mid, &ok, &ignored)) { /* a batch fixed in the model's shapes */
            f->max_batch = -1;
            return OC_OK;
        }
        if (ok) lo = mid;
        else hi = mid;
    }
    f->max_batch = lo;
    return OC_OK;
}

void cli_fit_print(const cli_plan_env *e, const cli_fit *f, FILE *out) {
    char b1[32], b2[32], b3[32];
    const char *budget = oc_fmt_bytes(e->budget_bytes, b1, sizeof b1);
    if (f->floor_bytes > e->budget_bytes && f->floor_node)
        fprintf(out,
                "why             no plan fits %s: node '%s' alone needs %s (its inputs, outputs "
                "and workspace, with %s of parameters and optimizer state%s)\n",
                budget, f->floor_node, oc_fmt_bytes(f->floor_bytes, b2, sizeof b2),
                oc_fmt_bytes(f->base_bytes, b3, sizeof b3),
                e->reserve_bytes > 0 ? ", the reserve" : "");
    else if (f->floor_bytes > e->budget_bytes)
        fprintf(out, "why             parameters, state and the batch alone need %s, over %s\n",
                oc_fmt_bytes(f->floor_bytes, b2, sizeof b2), budget);
    else if (f->swap_all_budget >= 0 && f->swap_all_budget <= e->budget_bytes)
        fprintf(out,
                "why             this strategy found no plan under %s, but one exists: every "
                "saved tensor swapped out fits (--strategy swap-all, or auto)\n",
                budget);
    else
        fprintf(out,
                "why             every node fits on its own (the largest, '%s', needs %s), but "
                "not the step: with every saved tensor swapped out it needs %s (at %s: %s)\n",
                f->floor_node ? f->floor_node : "-", oc_fmt_bytes(f->floor_bytes, b2, sizeof b2),
                f->swap_all_budget >= 0 ? oc_fmt_bytes(f->swap_all_budget, b3, sizeof b3)
                                        : "more than 1 PiB",
                budget, f->reason);
    fprintf(out, "what would fit  every saved tensor swapped out: ");
    if (f->swap_all_budget >= 0)
        fprintf(out, "a budget of %s", oc_fmt_bytes(f->swap_all_budget, b2, sizeof b2));
    if (f->max_batch > 0)
        fprintf(out, "%sbatch %lld under %s", f->swap_all_budget >= 0 ? ", or " : "",
                (long long)f->max_batch, budget);
    else if (f->max_batch < 0)
        fprintf(out,
                "%s(no other batch: the model does not load at a smaller one, its batch is "
                "fixed in its shapes)",
                f->swap_all_budget >= 0 ? " " : "");
    else if (e->mo.batch > 1)
        fprintf(out, "%sno batch under %s", f->swap_all_budget >= 0 ? "; " : "", budget);
    fprintf(out, "\n");
}

json_t *cli_fit_json(const cli_fit *f) {
    return json_pack("{s:I, s:s?, s:I, s:o, s:s, s:I}", "floor_bytes", (json_int_t)f->floor_bytes,
                     "floor_node", f->floor_node, "base_bytes", (json_int_t)f->base_bytes,
                     "swap_all_budget_bytes",
                     f->swap_all_budget >= 0 ? json_integer(f->swap_all_budget) : json_null(),
                     "swap_all_reason", f->reason, "max_batch", (json_int_t)f->max_batch);
}
