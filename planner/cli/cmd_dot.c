/* cmd_dot.c — `outcore-plan dot MODEL --batch N [--training] [-o FILE]`: Graphviz. */
#include <stdio.h>
#include <string.h>

#include "train/train_report.h"
#include "cli.h"

void cmd_dot_usage(FILE *f) {
    fprintf(f, "usage: outcore-plan dot MODEL.onnx [--batch N] [--dim NAME=V] [--training]\n"
               "                        [-o FILE.dot]\n\n"
               "Writes the forward graph (or with --training the whole training step, coloured\n"
               "by phase, saved-tensor reads in red) as Graphviz to FILE (default stdout).\n"
               "Render with: dot -Tsvg FILE.dot -o graph.svg\n");
}

int cmd_dot(int argc, char **argv) {
    cli_model_opts mo = {0};
    train_opts to = train_opts_default();
    bool training = false;
    const char *out_path = "-";
    oc_err err;
    int rc = 1;
    ir_graph *g = NULL;
    train_graph *tg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--training") == 0) {
            training = true;
            continue;
        }
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--dot") == 0) {
            if (cli_value(argc, argv, &i, &out_path, &err)) goto fail;
            continue;
        }
        int used = cli_model_opt(&mo, argc, argv, &i, &err);
        if (used == 0) used = cli_train_opt(&to, argc, argv, &i, &err);
        if (used < 0) goto fail;
        if (used == 0) {
            oc_fail(&err, "unknown argument '%s' (see --help)", argv[i]);
            goto fail;
        }
    }
    if (training ? cli_load_training(&mo, &to, &tg, &err) : cli_load(&mo, &g, &err)) goto fail;
    cli_output out;
    if (cli_open_output(&out, out_path, &err)) goto fail;
    int werr = tg ? ir_write_dot(tg->g, tg->phase, out.f) : ir_write_dot(g, NULL, out.f);
    if (cli_close_output(&out, werr == OC_OK, &err) || werr) {
        if (werr) oc_fail(&err, "%s: write error", out_path);
        goto fail;
    }
    rc = 0;
    goto done;
fail:
    rc = cli_report("dot", &err);
done:
    ir_graph_free(g);
    train_graph_free(tg);
    cli_model_opts_free(&mo);
    return rc;
}
