/* cli_workspace.c — `plan --workspace auto`: a convolution's workspace as a planning choice
 * (profile_workspace.h), for the profile's caps and then per node. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emit/plan_write.h"
#include "plan/profile_workspace.h"
#include "search/strategy.h"
#include "cli.h"

#define WORKSPACE_ROUNDS 3 /* per-node rounds after the cap */

/* After cli_choose_workspace's cap: a node the cap slowed takes a faster pair of its own where
 * the plan found still runs in the budget and no slower (the simulator's verdict on the same
 * decisions: a convolution early in the forward pass, or late in the backward, has memory to
 * spare that one cap for all cannot give it). Nodes by the time the cap cost them, most
 * first; each its fastest pair that passes. Returns the profile with those pairs, NULL when
 * no node changed; *upgraded: how many. e->ctx ends with e->prof's costs again. */
static profile *upgrade_nodes(const cli_plan_env *e, const sim_plan *plan, double best,
                              int *upgraded, oc_err *err) {
    const ir_graph *g = e->tg->g;
    profile *q = profile_copy(e->prof);
    sim_options so = {.budget_bytes = e->budget_bytes, .reserve_bytes = e->reserve_bytes};
    typedef struct cand {
        int rec, node;
        double gain;
    } cand;
    cand *c = oc_malloc(((size_t)q->n_nodes + 1) * sizeof *c);
    int nc = 0;
    for (int r = 0; r < q->n_nodes; r++) {
        const profile_node *pn = &q->nodes[r];
        double fastest = pn->time_s;
        for (int k = 0; k < pn->n_alts; k++)
            if (pn->alts[k].time_s < fastest) fastest = pn->alts[k].time_s;
        int node = -1;
        for (int i = 0; i < g->n_nodes && fastest < pn->time_s && node < 0; i++)
            if (strcmp(g->nodes[i].name, pn->name) == 0) node = i;
        if (node >= 0) c[nc++] = (cand){r, node, pn->time_s - fastest};
    }
    for (int a = 1; a < nc; a++) /* most gain first (insertion sort: few candidates) */
        for (int b = a; b > 0 && c[b].gain > c[b - 1].gain; b--) {
            cand t = c[b];
            c[b] = c[b - 1], c[b - 1] = t;
        }
    *upgraded = 0;
    int rc = OC_OK;
    for (int k = 0; k < nc && rc == OC_OK; k++) {
        profile_node *pn = &q->nodes[c[k].rec];
        /* its pairs faster than the record, fastest first; the first that passes */
        int order[PROFILE_MAX_ALTS], no = 0;
        for (int a = 0; a < pn->n_alts; a++)
            if (pn->alts[a].time_s < pn->time_s) order[no++] = a;
        for (int x = 1; x < no; x++)
            for (int y = x; y > 0 && pn->alts[order[y]].time_s < pn->alts[order[y - 1]].time_s;
                 y--) {
                int t = order[y];
                order[y] = order[y - 1], order[y - 1] = t;
            }
        for (int x = 0; x < no && rc == OC_OK; x++) {
            profile_alt *alt = &pn->alts[order[x]], own = {pn->time_s, pn->workspace_bytes};
            sim_context_set_node_cost(e->ctx, c[k].node, alt->time_s, alt->workspace_bytes);
            sim_result r;
            rc = sim_run(e->ctx, plan, &so, &r, NULL, err);
            if (rc == OC_OK && r.feasible && r.time_s <= best) { /* taken: swapped in q */
                best = r.time_s;
                pn->time_s = alt->time_s, pn->workspace_bytes = alt->workspace_bytes;
                *alt = own;
                c[(*upgraded)++] = c[k]; /* (k >= *upgraded: the taken ones first) */
                break;
            }
            sim_context_set_node_cost(e->ctx, c[k].node, own.time_s, own.workspace_bytes);
        }
    }
    /* e->ctx back to e->prof's costs */
    for (int k = 0; k < *upgraded; k++) {
        const profile_node *pn = &e->prof->nodes[c[k].rec];
        sim_context_set_node_cost(e->ctx, c[k].node, pn->time_s, pn->workspace_bytes);
    }
    oc_free(c);
    if (rc || *upgraded == 0) {
        profile_free(q);
        return NULL;
    }
    return q;
}

/* --workspace auto (plan's default) on a profile with alternatives (profile --merge): the
 * step planned again under each cap profile_workspace_levels offers, every node with
 * alternatives running its fastest pair within the cap; e keeps the fastest feasible plan (a
 * tie keeps the fastest kernels). Caps whose kernels alone take as long as the best plan so
 * far are not planned. When none is feasible e takes the smallest workspaces,
 * so that `why` and `what would fit` speak of the least the step needs. */
int cli_choose_workspace(cli_plan_env *e, const strategy *st, bool made, plan_made *pm,
                         sim_plan **p, strategy_stats *stats, oc_err *err) {
    int64_t levels[8];
    int nl = profile_workspace_levels(e->prof, levels, 8);
    if (nl == 0) return OC_OK;
    profile *base = profile_copy(e->prof);
    double fastest = cli_plan_time(stats, made, pm), best = fastest;
    int64_t chose = -1;
    int chose_changed = 0, with_alts = 0, rc = OC_OK;
    for (int i = 0; i < base->n_nodes; i++) with_alts += base->nodes[i].n_alts > 0;
    for (int k = 0; k < nl && rc == OC_OK; k++) {
        int changed;
        cli_plan_env f = *e;
        f.prof = profile_capped(base, levels[k], &changed);
        f.ctx = NULL;
        plan_made fpm = {0};
        sim_plan *fp = NULL;
        strategy_stats fs;
        bool last = k == nl - 1;
        /* a plan runs every kernel once on the compute stream: never faster than their sum,
         * which only grows as the cap falls */
        if (!isinf(best) && profile_total_s(f.prof) >= best) {
            profile_free(f.prof);
            break;
        }
        if (changed == 0 ||
            (rc = sim_context_new(e->tg, f.prof, e->profile ? e->profile : "profile", &f.ctx,
                                  err)) != OC_OK ||
            (rc = cli_plan_once(&f, st, made, &fpm, &fp, &fs, err)) != OC_OK) {
            plan_made_free(&fpm), sim_plan_free(fp), sim_context_free(f.ctx), profile_free(f.prof);
            continue;
        }
        double t = cli_plan_time(&fs, made, &fpm);
        if (t < best || (isinf(best) && last)) { /* f replaces e's plan */
            plan_made_free(pm), sim_plan_free(*p), sim_context_free(e->ctx), profile_free(e->prof);
            e->prof = f.prof, e->ctx = f.ctx, *pm = fpm, *p = fp, *stats = fs;
            e->workspace_capped = true, e->workspace_cap = levels[k];
            best = t, chose = levels[k], chose_changed = changed;
        } else {
            plan_made_free(&fpm), sim_plan_free(fp), sim_context_free(f.ctx), profile_free(f.prof);
        }
    }
    profile_free(base);
    /* rounds: a re-planned step may leave room for more */
    int upgraded = 0;
    for (int round = 0; round < WORKSPACE_ROUNDS && rc == OC_OK && !isinf(best); round++) {
        int more = 0;
        profile *up = upgrade_nodes(e, made ? pm->plan : *p, best, &more, err);
        if (!up) break;
        cli_plan_env f = *e; /* re-planned with those pairs: kept when it is no slower */
        f.prof = up, f.ctx = NULL;
        plan_made fpm = {0};
        sim_plan *fp = NULL;
        strategy_stats fs;
        double t = INFINITY;
        if ((rc = sim_context_new(e->tg, up, e->profile ? e->profile : "profile", &f.ctx, err)) ==
                OC_OK &&
            (rc = cli_plan_once(&f, st, made, &fpm, &fp, &fs, err)) == OC_OK)
            t = cli_plan_time(&fs, made, &fpm);
        if (t > best) {
            plan_made_free(&fpm), sim_plan_free(fp), sim_context_free(f.ctx), profile_free(up);
            break;
        }
        plan_made_free(pm), sim_plan_free(*p), sim_context_free(e->ctx), profile_free(e->prof);
        e->prof = f.prof, e->ctx = f.ctx, *pm = fpm, *p = fp, *stats = fs;
        best = t, upgraded += more;
    }
    if (rc == OC_OK && isinf(best))
        fprintf(stderr,
                "outcore-plan: notice: --workspace auto: no plan under any of %d "
                "workspace caps; what follows is of the smallest workspaces\n",
                nl);
    if (rc == OC_OK && !isinf(best)) {
        char b1[32];
        if (chose < 0)
            fprintf(stderr,
                    "outcore-plan: notice: --workspace auto: the fastest kernels (%d nodes with "
                    "alternatives; predicted step %.1f ms, no smaller cap faster)\n",
                    with_alts, best * 1e3);
        else {
            char fast[48] = "no plan";
            if (!isinf(fastest)) snprintf(fast, sizeof fast, "%.1f ms", fastest * 1e3);
            fprintf(stderr,
                    "outcore-plan: notice: --workspace auto: cap %s: %d of %d nodes with "
                    "alternatives take less workspace, %d of them then a faster kernel the "
                    "plan has room for (predicted step %.1f ms; with the fastest kernels: %s)\n",
                    oc_fmt_bytes(chose, b1, sizeof b1), chose_changed, with_alts, upgraded,
                    best * 1e3, fast);
        }
    }
    return rc;
}
