/* compare_oracle.h — the "ilp-oracle" row of `outcore-plan compare --oracle`:
 * solves the MILP (ilp_oracle.h) once, warm-started from the heuristic plan
 * that costs least under its model, simulates its plan, and reports every
 * heuristic's gap to it, both under the oracle's model and in simulated time,
 * with the proven bound when the time limit stops the solver first.
 *
 *   compare_oracle *o;
 *   if (compare_oracle_new(&in, &o, &err)) ...        // refuses graphs > 100 nodes
 *   for each strategy: compare_oracle_add(o, name, plan, &stats);
 *   if (compare_oracle_solve(o, &in, 120.0, &err)) ...
 *   compare_oracle_print(o, stdout);  or  json_object_set_new(doc, "oracle", compare_oracle_json(o));
 *   compare_oracle_free(o);
 */
#ifndef OC_COMPARE_ORACLE_H
#define OC_COMPARE_ORACLE_H

#include <jansson.h>
#include <stdio.h>

#include "search/strategy.h"

#define COMPARE_ORACLE_MAX_NODES 100

typedef struct compare_oracle compare_oracle;

/* OC_ERR (message says why) when the training graph has more than
 * COMPARE_ORACLE_MAX_NODES nodes. */
int compare_oracle_new(const strategy_input *in, compare_oracle **out, oc_err *err);
/* Solves (time_limit_s) and simulates the oracle's plan; after every add. */
int compare_oracle_solve(compare_oracle *o, const strategy_input *in, double time_limit_s,
                         oc_err *err);
void compare_oracle_free(compare_oracle *o);
/* Records one heuristic: its plan's cost under the oracle's model and its
 * simulated time (st: the simulator's verdict on plan). */
void compare_oracle_add(compare_oracle *o, const char *name, const sim_plan *plan,
                        const strategy_stats *st);
void compare_oracle_print(const compare_oracle *o, FILE *f);
json_t *compare_oracle_json(const compare_oracle *o);

#endif
