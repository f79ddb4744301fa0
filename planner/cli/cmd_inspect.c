/* cmd_inspect.c — `outcore-plan inspect MODEL --batch N [--training] [--json]`. */
#include <stdio.h>
#include <string.h>

#include "ir/inspect.h"
#include "train/train_report.h"
#include "cli.h"

void cmd_inspect_usage(FILE *f) {
    fprintf(f,
            "usage: outcore-plan inspect MODEL.onnx [--batch N] [--dim NAME=V ...] [--training]\n"
            "                            [--json] [--loss softmax-ce|model]\n"
            "                            [--bn train|frozen]\n"
            "\n"
            "Imports MODEL, binds its dynamic dims and infers every tensor's shape; prints a\n"
            "table of tensors (name, shape, dtype, bytes, kind, producer node) and totals.\n"
            "\n"
            "  --batch N       leading dim of the data input (1..%lld)\n"
            "  --dim NAME=V    bind another symbolic input dim\n"
            "  --training      build the training step (forward, loss, backward, SGD update) and\n"
            "                  report bytes per tensor class, the in-core peak, and the saved\n"
            "                  tensors with the backward nodes that read them\n"
            "  --loss L        softmax-ce (default: appended on the [N, C] output, int64\n"
            "                  labels) or model (the model's scalar output is the loss)\n"
            "  --json          one JSON object: {model, opset, batch, tensors: [{name, shape,\n"
            "                  dtype, bytes, kind, producer}], totals: {parameter_bytes,\n"
            "                  parameter_count, state_bytes, input_bytes, constant_bytes,\n"
            "                  activation_bytes, nodes, tensors}}; with --training also\n"
            "                  training: {saved_activation_bytes, precision,\n"
            "                  saved_bytes_by_dtype: {float32, float16, bfloat16},\n"
            "                  saved_copy_bytes (autocast's half copies of parameters,\n"
            "                  inputs and of activations saved in float32 too),\n"
            "                  incore_peak_bytes,\n"
            "                  incore_peak_node, bytes_by_class, saved: [{name, bytes, dtype,\n"
            "                  kind, readers}]}\n"
            "  --precision P   fp32 (default), bf16 or fp16: the training step under autocast\n"
            "                  (half activations; parameters, gradients, optimizer float32)\n"
            "Kinds: input, label, parameter, state (BN running statistics), constant,\n"
            "activation (transient), saved_activation, gradient, activation_gradient,\n"
            "optimizer_state.\n",
            (long long)OC_MAX_BATCH);
}

int cmd_inspect(int argc, char **argv) {
    cli_model_opts mo = {0};
    train_opts to = train_opts_default();
    bool json = false, training = false;
    oc_err err;
    int rc = 1;
    ir_graph *g = NULL;
    train_graph *tg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
            continue;
        }
        if (strcmp(argv[i], "--training") == 0) {
            training = true;
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
    if (training) {
        if (cli_load_training(&mo, &to, &tg, &err)) goto fail;
    } else if (cli_load(&mo, &g, &err)) {
        goto fail;
    }
    const ir_graph *shown = tg ? tg->g : g;
    int64_t batch = shown->n_inputs && shown->tensors[shown->inputs[0]].rank > 0
                        ? shown->tensors[shown->inputs[0]].dims[0]
                        : 0;
    int werr;
    if (json) {
        json_t *extra = NULL;
        if (tg) {
            extra = json_object();
            json_object_set_new(extra, "training", train_report_json(tg));
        }
        werr = inspect_print_json(shown, tg ? tg->alias_of : NULL, batch, extra, stdout);
    } else {
        werr = inspect_print_text(shown, tg ? tg->alias_of : NULL, batch, stdout);
        if (!werr && tg) {
            fputc('\n', stdout);
            werr = train_report_text(tg, stdout);
        }
    }
    if (werr) {
        oc_fail(&err, "write error on standard output");
        goto fail;
    }
    rc = 0;
    goto done;
fail:
    rc = cli_report("inspect", &err);
done:
    ir_graph_free(g);
    train_graph_free(tg);
    cli_model_opts_free(&mo);
    return rc;
}
