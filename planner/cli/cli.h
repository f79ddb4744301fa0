/* cli.h — shared pieces of the outcore-plan subcommands. */
#ifndef OC_CLI_H
#define OC_CLI_H

#include <stdio.h>

#include "../shape_infer.h"
#include "../train_graph.h"

#define OC_VERSION "0.1.0"

/* Options every model-reading command takes: MODEL --batch N --dim NAME=V. */
typedef struct cli_model_opts {
    const char *model;
    int64_t batch;
    ir_dim_binding *dims; /* owned (names point into argv) */
    int n_dims;
} cli_model_opts;

/* Training options: --loss softmax-ce|model, --lr, --momentum, --weight-decay.
 * Same contract as cli_model_opt. */

int cli_train_opt(train_opts *o, int argc, char **argv, int *i, oc_err *err);
/* Loads the model and builds its training graph. */
int cli_load_training(const cli_model_opts *mo, const train_opts *to, train_graph **tg,
                      oc_err *err);
/* Opens path for writing ("-" = stdout); the file is written to a temporary
 * name and renamed by cli_close_output on success, removed on failure. */
typedef struct cli_output {
    FILE *f;
    char *path, *tmp;
} cli_output;
int cli_open_output(cli_output *o, const char *path, oc_err *err);
int cli_close_output(cli_output *o, bool ok, oc_err *err);

/* Tries to consume argv[*i] (and its value) as a model option. Returns 1 if
 * consumed, 0 if the argument is not a model option, OC_ERR on a bad value. */
int cli_model_opt(cli_model_opts *o, int argc, char **argv, int *i, oc_err *err);
/* The value after option argv[*i]; OC_ERR if missing. */
int cli_value(int argc, char **argv, int *i, const char **val, oc_err *err);
/* Loads, binds and infers the model named by o. */
int cli_load(const cli_model_opts *o, ir_graph **g, oc_err *err);
void cli_model_opts_free(cli_model_opts *o);
/* Prints "outcore-plan: error: msg" and returns the exit status for errors. */
int cli_report(const char *cmd, const oc_err *err);

int cmd_inspect(int argc, char **argv);
int cmd_dot(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_simulate(int argc, char **argv);

#endif
