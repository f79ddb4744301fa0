/* compare_oracle.c — see compare_oracle.h. */
#include "compare_oracle.h"

#include <string.h>

#include "search/ilp_oracle.h"

typedef struct oracle_row {
    const char *name;
    bool model_fits, sim_feasible;
    double model_s, sim_s;
} oracle_row;

struct compare_oracle {
    ilp_model *m;
    ilp_result r;
    sim_plan *warm; /* the added plan with the least model time (NULL: none fits) */
    const char *warm_name;
    double warm_model_s;
    bool sim_feasible;
    double sim_s, ideal_s;
    oracle_row *rows;
    int n_rows;
    size_t cap_rows;
};

int compare_oracle_new(const strategy_input *in, compare_oracle **out, oc_err *err) {
    *out = NULL;
    int n = in->tg->g->n_nodes;
    if (n > COMPARE_ORACLE_MAX_NODES)
        return oc_fail(err,
                       "--oracle: the training graph has %d nodes; the ILP oracle is "
                       "limited to graphs of at most %d nodes",
                       n, COMPARE_ORACLE_MAX_NODES);
    compare_oracle *o = oc_calloc(1, sizeof *o);
    if (ilp_model_new(in, &o->m, err)) {
        compare_oracle_free(o);
        return OC_ERR;
    }
    *out = o;
    return OC_OK;
}

int compare_oracle_solve(compare_oracle *o, const strategy_input *in, double time_limit_s,
                         oc_err *err) {
    if (ilp_solve(o->m, time_limit_s, o->warm, &o->r, err)) return OC_ERR;
    sim_plan *p = sim_plan_new(in->tg);
    ilp_plan(o->m, &o->r, p);
    sim_result sr;
    if (o->r.feasible) {
        if (sim_run(in->ctx, p, &in->sim, &sr, NULL, err)) {
            sim_plan_free(p);
            return OC_ERR;
        }
        o->sim_feasible = sr.feasible;
        o->sim_s = sr.time_s;
        o->ideal_s = sr.ideal_s;
    }
    sim_plan_free(p);
    return OC_OK;
}

void compare_oracle_free(compare_oracle *o) {
    if (!o) return;
    ilp_result_free(&o->r);
    ilp_model_free(o->m);
    sim_plan_free(o->warm);
    oc_free(o->rows);
    oc_free(o);
}

void compare_oracle_add(compare_oracle *o, const char *name, const sim_plan *plan,
                        const strategy_stats *st) {
    oc_grow((void **)&o->rows, &o->cap_rows, (size_t)o->n_rows + 1, sizeof *o->rows);
    oracle_row *w = &o->rows[o->n_rows++];
    w->name = name;
    w->model_fits = ilp_model_cost(o->m, plan, &w->model_s);
    if (w->model_fits && (!o->warm || w->model_s < o->warm_model_s)) {
        if (!o->warm) o->warm = sim_plan_new(plan->tg);
        sim_plan_copy(o->warm, plan);
        o->warm_name = name;
        o->warm_model_s = w->model_s;
    }
    w->sim_feasible = st->feasible;
    w->sim_s = st->result.time_s;
    if (o->ideal_s <= 0) o->ideal_s = st->result.ideal_s;
}

void compare_oracle_print(const compare_oracle *o, FILE *f) {
    const ilp_result *r = &o->r;
    fprintf(f, "%-18s %s", "ilp-oracle", r->feasible ? "" : "infeasible under its model");
    if (r->feasible) {
        fprintf(f, "objective %.3f ms (", r->objective_s * 1e3);
        if (r->optimal) fprintf(f, "optimal");
        else
            fprintf(f, "time limit: proven bound %.3f ms, gap %.2f%%", r->bound_s * 1e3,
                    (r->objective_s / r->bound_s - 1) * 100);
        fprintf(f, "), its plan simulated: ");
        if (o->sim_feasible) fprintf(f, "%.3f ms", o->sim_s * 1e3);
        else fprintf(f, "infeasible");
    } else if (!r->infeasible) {
        fprintf(f, " (no solution in the time limit; proven bound %.3f ms)", r->bound_s * 1e3);
    } else {
        fprintf(f, " (proven)");
    }
    fprintf(f, "  [%d vars, %d integer, %d rows, %.2f s]\n", r->n_vars, r->n_int_vars, r->n_rows,
            r->solve_s);
    if (o->warm_name)
        fprintf(f, "  warm start: %s (model %.3f ms%s)\n", o->warm_name, o->warm_model_s * 1e3,
                r->warm_feasible ? "" : "; not completed within its time");
    fprintf(f, "gap to the oracle (model: the plan's cost under the oracle's model vs its "
               "objective; sim: simulated time vs the oracle plan's simulated time):\n");
    for (int i = 0; i < o->n_rows; i++) {
        const oracle_row *w = &o->rows[i];
        fprintf(f, "  %-18s model ", w->name);
        if (w->model_fits && r->feasible)
            fprintf(f, "%9.3f ms %+7.2f%%", w->model_s * 1e3,
                    (w->model_s / r->objective_s - 1) * 100);
        else fprintf(f, "%9s    %7s ", "-", w->model_fits ? "" : "(over)");
        fprintf(f, "   sim ");
        if (w->sim_feasible && o->sim_feasible)
            fprintf(f, "%9.3f ms %+7.2f%%\n", w->sim_s * 1e3, (w->sim_s / o->sim_s - 1) * 100);
        else if (w->sim_feasible) fprintf(f, "%9.3f ms\n", w->sim_s * 1e3);
        else fprintf(f, "%9s\n", "infeasible");
    }
}

json_t *compare_oracle_json(const compare_oracle *o) {
    const ilp_result *r = &o->r;
    json_t *gaps = json_array();
    for (int i = 0; i < o->n_rows; i++) {
        const oracle_row *w = &o->rows[i];
        json_t *g = json_pack("{s:s, s:b, s:b}", "strategy", w->name, "fits_model", w->model_fits,
                              "sim_feasible", w->sim_feasible);
        if (w->model_fits) json_object_set_new(g, "model_time_s", json_real(w->model_s));
        if (w->model_fits && r->feasible)
            json_object_set_new(g, "model_gap", json_real(w->model_s / r->objective_s - 1));
        if (w->sim_feasible) json_object_set_new(g, "sim_time_s", json_real(w->sim_s));
        if (w->sim_feasible && o->sim_feasible)
            json_object_set_new(g, "sim_gap", json_real(w->sim_s / o->sim_s - 1));
        json_array_append_new(gaps, g);
    }
    json_t *j = json_pack("{s:s, s:b, s:b, s:i, s:i, s:f, s:o}", "strategy", "ilp-oracle",
                          "feasible", r->feasible, "optimal", r->optimal, "n_vars", r->n_vars,
                          "n_rows", r->n_rows, "solve_s", r->solve_s, "gaps", gaps);
    json_object_set_new(j, "proven_infeasible", json_boolean(r->infeasible));
    if (!r->infeasible) json_object_set_new(j, "bound_s", json_real(r->bound_s));
    if (o->warm_name) {
        json_object_set_new(j, "warm_start", json_string(o->warm_name));
        json_object_set_new(j, "warm_start_model_s", json_real(o->warm_model_s));
    }
    if (r->feasible) {
        json_object_set_new(j, "objective_s", json_real(r->objective_s));
        json_object_set_new(j, "gap", json_real(r->objective_s / r->bound_s - 1));
        json_object_set_new(j, "sim_feasible", json_boolean(o->sim_feasible));
        if (o->sim_feasible) json_object_set_new(j, "sim_time_s", json_real(o->sim_s));
    }
    return j;
}
