/* main.c — outcore-plan: dispatches to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    void (*usage)(FILE *f);
    const char *summary;
} command;

static const command commands[] = {
    {"inspect", cmd_inspect, cmd_inspect_usage,
     "tensors, shapes, sizes and kinds; --training: the training step"},
    {"dot", cmd_dot, cmd_dot_usage,
     "Graphviz of the forward graph or (--training) the training step"},
    {"profile", cmd_profile, cmd_profile_usage,
     "analytic per-node profile of the training step on a device"},
    {"simulate", cmd_simulate, cmd_simulate_usage,
     "simulated iteration time, peak and stalls of a plan"},
    {"plan", cmd_plan, cmd_plan_usage,
     "plans keep/swap/recompute per saved tensor with one strategy"},
    {"emit", cmd_emit, cmd_emit_usage, "writes the in-core training step as ONNX for outcore-run"},
    {"show", cmd_show, cmd_show_usage,
     "prints a plan.onnx's schedule; --trace/--svg of its predicted timeline"},
    {"compare", cmd_compare, cmd_compare_usage,
     "runs every strategy: time, slowdown, images/s, peak, swaps"},
};

static void usage(FILE *f) {
    fprintf(f,
            "outcore-plan %s — plans out-of-core training of an ONNX model\n\n"
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
        if (strcmp(argv[1], commands[i].name) == 0) {
            /* COMMAND --help / -h anywhere: its usage, exit 0, nothing else runs. */
            for (int a = 2; a < argc; a++)
                if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
                    commands[i].usage(stdout);
                    return 0;
                }
            return commands[i].run(argc - 1, argv + 1);
        }
    fputs("outcore-plan: error: unknown command '", stderr);
    oc_fputs_escaped(argv[1], stderr);
    fputs("' (see outcore-plan --help)\n", stderr);
    return 2;
}
