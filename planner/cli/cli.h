/* cli.h — shared pieces of the outcore-plan subcommands. */
#ifndef OC_CLI_H
#define OC_CLI_H

#include <stdio.h>

#include "ir/out_file.h"
#include "ir/shape_infer.h"
#include "train/train_graph.h"

#define OC_VERSION "0.1.0"

/* Options every model-reading command takes: MODEL --batch N --dim NAME=V. */
typedef struct cli_model_opts {
    const char *model;
    int64_t batch;
    ir_dim_binding *dims; /* owned (names point into argv) */
    int n_dims;
    bool quiet; /* cli_load prints no notices (a second load of the same model) */
} cli_model_opts;

/* Training options: --loss softmax-ce|model, --lr, --momentum, --weight-decay.
 * Same contract as cli_model_opt. */

int cli_train_opt(train_opts *o, int argc, char **argv, int *i, oc_err *err);
/* Loads the model (cli_load: mo->batch set where it was not given) and builds its
 * training graph. */
int cli_load_training(cli_model_opts *mo, const train_opts *to, train_graph **tg, oc_err *err);
/* Opens path for writing ("-" = stdout); the file is written to a temporary
 * name and renamed by cli_close_output on success, removed on failure. */
typedef struct cli_output {
    FILE *f;    /* stdout, or out.f */
    oc_out out; /* a file written whole or not at all (ir/out_file.h) */
} cli_output;
int cli_open_output(cli_output *o, const char *path, oc_err *err);
int cli_close_output(cli_output *o, bool ok, oc_err *err);

/* Tries to consume argv[*i] (and its value) as a model option. Returns 1 if
 * consumed, 0 if the argument is not a model option, OC_ERR on a bad value. */
int cli_model_opt(cli_model_opts *o, int argc, char **argv, int *i, oc_err *err);
/* The value after option argv[*i]; OC_ERR if missing. */
int cli_value(int argc, char **argv, int *i, const char **val, oc_err *err);
/* Loads, binds and infers the model named by o. Without --batch, o->batch becomes the
 * model's own: its first input's first dim, static in the file (a symbolic one must be
 * bound and is refused unbound). */
int cli_load(cli_model_opts *o, ir_graph **g, oc_err *err);
void cli_model_opts_free(cli_model_opts *o);
/* Prints "outcore-plan: error: msg" and returns the exit status for errors. */
int cli_report(const char *cmd, const oc_err *err);

/* Each command's --help text (main.c prints it for `COMMAND --help` / `-h`). */
void cmd_inspect_usage(FILE *f);
void cmd_dot_usage(FILE *f);
void cmd_profile_usage(FILE *f);
void cmd_simulate_usage(FILE *f);
void cmd_plan_usage(FILE *f);
void cmd_emit_usage(FILE *f);
void cmd_show_usage(FILE *f);
void cmd_compare_usage(FILE *f);
int cmd_inspect(int argc, char **argv);
int cmd_dot(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_emit(int argc, char **argv);
int cmd_show(int argc, char **argv);

/* Shared by plan and compare (defined in cmd_plan.c): the model, its training
 * graph, profile (--profile P | --device D | --device-file F), simulator
 * context and budget (--budget, --reserve; default the device's memory). */
typedef struct cli_plan_env {
    cli_model_opts mo;
    train_opts to;
    const char *profile, *device, *device_file, *budget, *reserve;
    long max_leaves;
    double max_seconds;
    train_graph *tg;
    struct profile *prof;
    struct sim_context *ctx;
    int64_t budget_bytes, reserve_bytes;
    /* --workspace fastest|smallest|BYTES: each profiled node's (time, workspace) pair under
     * this cap (profile_capped); unset: the profile's records as they are */
    bool workspace_capped;
    int64_t workspace_cap;
    bool quiet; /* no warnings on stderr (the probes of cli_fit_explain) */
} cli_plan_env;
/* "lower bound ..." line of sim_bound.h (plan_s > 0: who's ratio to it). */
struct sim_bound;
void cli_print_bound(const struct sim_bound *lb, double plan_s, const char *who, FILE *f);

/* When no plan fits (cli_fit.c): why, and what would. */
typedef struct cli_fit {
    int64_t floor_bytes;     /* no plan fits under it (fit_advice.h) */
    const char *floor_node;  /* the node that sets it (NULL: parameters, state, batch) */
    int64_t base_bytes;      /* parameters, state, optimizer state (and the reserve) */
    int64_t swap_all_budget; /* the smallest budget the all-swap plan fits; -1: none */
    int64_t max_batch;       /* the largest batch under the budget (0: none, or no --batch; -1: the
                          model loads at no other batch, its batch fixed in its shapes) */
    char reason[512];        /* the all-swap plan's failure under the budget */
} cli_fit;
struct cli_plan_env;
int cli_fit_explain(const struct cli_plan_env *e, cli_fit *f, oc_err *err);
/* The "why" and "what would fit" lines. */
void cli_fit_print(const struct cli_plan_env *e, const cli_fit *f, FILE *out);
struct json_t;
struct json_t *cli_fit_json(const cli_fit *f);

/* Consumes argv[*i] if it is a model, training, profile or budget option
 * (1), 0 if not, OC_ERR on a bad value. */
int cli_plan_env_opt(cli_plan_env *e, int argc, char **argv, int *i, oc_err *err);
/* Loads model, training graph, profile and simulator context. */
int cli_plan_env_load(cli_plan_env *e, oc_err *err);
void cli_plan_env_free(cli_plan_env *e);
/* The registered strategy called name; OC_ERR naming option and the known names. */
struct strategy;
int cli_plan_env_strategy(const char *option, const char *name, const struct strategy **out,
                          oc_err *err);
/* The strategy input of a loaded env: graph, profile, context, budget, search caps. */
struct strategy_input;
void cli_plan_env_input(const cli_plan_env *e, struct strategy_input *in);
/* Writes the Chrome trace / SVG memory plot (either may be NULL) of plan p. */
struct sim_plan;
int cli_plan_write_outputs(const cli_plan_env *e, const char *trace, const char *svg,
                           const struct sim_plan *p, const char *strategy_name, oc_err *err);
/* plan -o (cmd_show.c): writes the plan that plan_make made with s (it
 * re-plans tighter when the layout exceeds the budget; plan_file.h) to
 * plan.onnx and prints one summary line. OC_ERR when pm found no plan that
 * fits (naming why) or on I/O errors. */
struct strategy;
struct plan_made;
int cli_plan_write_made(const cli_plan_env *e, const struct strategy *s, struct plan_made *pm,
                        const char *path, oc_err *err);
/* One planning run of e: plan_make's (made: with -o) or the strategy's alone (cmd_plan.c). */
struct strategy_stats;
int cli_plan_once(cli_plan_env *e, const struct strategy *st, bool made, struct plan_made *pm,
                  struct sim_plan **p, struct strategy_stats *stats, oc_err *err);
/* Its predicted step, INFINITY when no plan fits (made: nor its layout). */
double cli_plan_time(const struct strategy_stats *s, bool made, const struct plan_made *pm);
/* --workspace auto (cli_workspace.c): on a profile with alternatives, e, its plan (*p, *pm)
 * and *stats become the fastest of the caps' plans and then of the per-node choices;
 * a notice on stderr says which. No-op without alternatives. */
int cli_choose_workspace(cli_plan_env *e, const struct strategy *st, bool made,
                         struct plan_made *pm, struct sim_plan **p, struct strategy_stats *stats,
                         oc_err *err);
/* One strategy's figures as a JSON object (jansson json_t *, new reference). */
struct json_t;
struct strategy;
struct strategy_stats;
struct json_t *cli_strategy_stats_json(const struct strategy *s, const struct strategy_stats *st,
                                       int64_t batch);

#endif
