/* cmd_emit.c — `outcore-plan emit MODEL --batch N [--lr --momentum --weight-decay]
 * -o train.onnx`: the in-core training step as an ONNX model (onnx_export.h)
 * that outcore-run executes. */
#include <stdio.h>
#include <string.h>

#include "train/train_export.h"
#include "cli.h"

void cmd_emit_usage(FILE *f) {
    fprintf(
        f, "usage: outcore-plan emit MODEL.onnx [--batch N] [--dim NAME=V] [--lr X]\n"
           "                         [--momentum X] [--weight-decay X] [--loss softmax-ce|model]\n"
           "                         [--bn train|frozen] [--optimizer sgd|adamw] [--betas B1,B2]\n"
           "                         [--eps E] [--clip-grad-norm MAX] [--ignore-index K]\n"
           "                         [--attention fused|unfused] [--no-fuse] [--layout nchw|nhwc]\n"
           "                         [--precision fp32|bf16|fp16] [--loss-scale S|auto|none]\n"
           "                         [--loss-scale-interval N] [--freeze P[,P..]] -o TRAIN.onnx\n\n"
           "Writes the in-core training step (forward, loss, backward, SGD-momentum updates,\n"
           "in schedule order) as an ONNX model: backward/update nodes in domain ai.outcore,\n"
           "inputs data and labels, outputs the loss and every updated parameter and state.\n"
           "BatchNormalization [+ residual Add] + Relu chains are one BatchNormRelu node\n"
           "(ai.outcore), a decomposed GELU one Gelu (ai.outcore below opset 20); --no-fuse\n"
           "keeps them apart. --layout nhwc: convolutions, BatchNorm and pooling channels-last,\n"
           "with Transposes where the layout changes (the nodes listed in metadata\n"
           "outcore.channels_last).\n"
           "Run it with: outcore-run TRAIN.onnx --backend cpu --steps K\n");
}

int cmd_emit(int argc, char **argv) {
    cli_model_opts mo = {0};
    train_opts to = train_opts_default();
    const char *out_path = NULL;
    oc_err err;
    int rc = 1;
    train_graph *tg = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0) {
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
    if (!out_path) {
        oc_fail(&err, "no output given: -o TRAIN.onnx");
        goto fail;
    }
    if (cli_load_training(&mo, &to, &tg, &err)) goto fail;
    if (!mo.batch) { /* a scalar first input: no batch dim to take */
        oc_fail(&err, "--batch N is required (the training graph has static shapes)");
        goto fail;
    }
    onnx_export_meta m = {.source_model = mo.model, .batch = mo.batch, .tool_version = OC_VERSION};
    if (onnx_export_training(tg, &m, out_path, &err)) goto fail;
    printf("%s: %d nodes (%d forward incl. loss), batch %lld, lr %g momentum %g weight decay %g\n",
           out_path, tg->g->n_nodes, tg->n_forward, (long long)mo.batch, (double)to.lr,
           (double)to.momentum, (double)to.weight_decay);
    rc = 0;
    goto done;
fail:
    rc = cli_report("emit", &err);
done:
    train_graph_free(tg);
    cli_model_opts_free(&mo);
    return rc;
}
