/* main.c — outcore-plan: dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"inspect", cmd_inspect, "tensors, shapes, sizes and kinds; --training: the training step"},
    {"dot", cmd_dot, "Graphviz of the forward graph or (--training) the training step"},
    {"profile", cmd_profile, "analytic per-node profile of the training step on a device"},
    {"simulate", cmd_simulate, "simulated iteration time, peak and stalls of a plan"},
    {"plan", cmd_plan, "plans keep/swap/recompute per saved tensor with one strategy"},
    {"emit", cmd_emit, "writes the in-core training step as ONNX for outcore-run"},
    {"show", cmd_show, "prints a plan.onnx's schedule; --trace/--svg of its predicted timeline"},
    {"compare", cmd_compare, "runs every strategy: time, slowdown, images/s, peak, swaps"},
};

static void usage(FILE *f) {
    fprintf(f, "outcore-plan %s — plans out-of-core training of an ONNX model\n\n"
               "usage: outcore-plan COMMAND [ARGS]   (COMMAND --help for details)\n\ncommands:\n",
            OC_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("outcore-plan %s\n", OC_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "outcore-plan: error: unknown command '%s' (see outcore-plan --help)\n",
            argv[1]);
    return 2;
}
