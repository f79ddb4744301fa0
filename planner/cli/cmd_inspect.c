/* cmd_inspect.c — `outcore-plan inspect MODEL --batch N [--json]`. */
#include <stdio.h>
#include <string.h>

#include "../inspect.h"
#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: outcore-plan inspect MODEL.onnx [--batch N] [--dim NAME=V ...] [--json]\n"
            "\n"
            "Imports MODEL, binds its dynamic dims and infers every tensor's shape; prints a\n"
            "table of tensors (name, shape, dtype, bytes, kind, producer node) and totals.\n"
            "\n"
            "  --batch N       leading dim of the data input (1..%lld)\n"
            "  --dim NAME=V    bind another symbolic input dim\n"
            "  --json          one JSON object: {model, opset, batch, tensors: [{name, shape,\n"
            "                  dtype, bytes, kind, producer}], totals: {parameter_bytes,\n"
            "                  parameter_count, state_bytes, input_bytes, constant_bytes,\n"
            "                  activation_bytes, nodes, tensors}}\n"
            "Kinds: input, parameter, state (BN running statistics), constant, activation.\n",
            (long long)OC_MAX_BATCH);
}

int cmd_inspect(int argc, char **argv) {
    cli_model_opts mo = {0};
    bool json = false;
    oc_err err;
    int rc = 1;
    ir_graph *g = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
            continue;
        }
        int used = cli_model_opt(&mo, argc, argv, &i, &err);
        if (used < 0) goto fail;
        if (used == 0) {
            oc_fail(&err, "unknown argument '%s' (see --help)", argv[i]);
            goto fail;
        }
    }
    if (cli_load(&mo, &g, &err)) goto fail;
    int64_t batch = g->n_inputs && g->tensors[g->inputs[0]].rank > 0
                        ? g->tensors[g->inputs[0]].dims[0]
                        : 0;
    if ((json ? inspect_print_json(g, batch, stdout) : inspect_print_text(g, batch, stdout))) {
        oc_fail(&err, "write error on standard output");
        goto fail;
    }
    rc = 0;
    goto done;
fail:
    rc = cli_report("inspect", &err);
done:
    ir_graph_free(g);
    cli_model_opts_free(&mo);
    return rc;
}
