/* cmd_profile.c — `outcore-plan profile --device v100|a100|h100|h200|--device-file F
 * MODEL --batch N -o profile.json`: the analytic profile of the training step;
 * `outcore-plan profile --merge P1.json P2.json ... -o profile.json`: measured profiles of
 * one step under several workspace caps as one, each node's choices as alternatives. */
#include <stdio.h>
#include <string.h>

#include "plan/profile_workspace.h"
#include "cli.h"

void cmd_profile_usage(FILE *f) {
    fprintf(f,
            "usage: outcore-plan profile MODEL.onnx [--batch N] (--device NAME | --device-file F)\n"
            "                            -o PROFILE.json [--dim NAME=V ...] [--loss L]\n"
            "       outcore-plan profile --merge P1.json P2.json ... -o PROFILE.json\n"
            "\n"
            "Writes the analytic profile of MODEL's training step (forward, loss, backward,\n"
            "update): per node max(FLOPs / peak, bytes / memory bandwidth) + launch overhead,\n"
            "on a device preset (%s; vendor data-sheet figures) or a device file\n"
            "(JSON: the \"device\" object of a profile). Format: docs/profile.md.\n"
            "\n"
            "--merge: profiles of one step measured under different workspace caps\n"
            "(outcore-run --profile-out --workspace-limit W) as one: each node's time and\n"
            "workspace pairs that no other beats in both, the fastest the record, the others\n"
            "its \"alternatives\"; `plan --workspace auto` (its default) then chooses a cap.\n",
            device_preset_names());
}

/* profile --merge P1 P2 ... -o OUT. */
static int merge_profiles(int argc, char **argv, oc_err *err) {
    const char *out_path = NULL, *paths[64];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--merge") == 0) continue;
        if (strcmp(argv[i], "-o") == 0) {
            if (cli_value(argc, argv, &i, &out_path, err)) return OC_ERR;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return oc_fail(err, "--merge takes profile files and -o only, not '%s'", argv[i]);
        } else if (n == 64) {
            return oc_fail(err, "--merge: at most 64 profiles");
        } else {
            paths[n++] = argv[i];
        }
    }
    if (n < 2) return oc_fail(err, "--merge: give two or more profiles (%d given)", n);
    if (!out_path) return oc_fail(err, "no output: -o PROFILE.json (or -o - for standard output)");
    profile *ps[64] = {0}, *m = NULL;
    int rc = OC_OK;
    for (int k = 0; k < n && rc == OC_OK; k++) rc = profile_read(paths[k], &ps[k], err);
    if (rc == OC_OK) rc = profile_merge(ps, paths, n, &m, err);
    cli_output out;
    if (rc == OC_OK && (rc = cli_open_output(&out, out_path, err)) == OC_OK) {
        int werr = profile_write_file(m, out.f, err);
        rc = cli_close_output(&out, werr == OC_OK, err) || werr ? OC_ERR : OC_OK;
    }
    for (int k = 0; k < n; k++) profile_free(ps[k]);
    profile_free(m);
    return rc;
}

int cmd_profile(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--merge") == 0) {
            oc_err err;
            return merge_profiles(argc, argv, &err) ? cli_report("profile", &err) : 0;
        }
    cli_model_opts mo = {0};
    train_opts to = train_opts_default();
    const char *dev_name = NULL, *dev_file = NULL, *out_path = NULL;
    oc_err err;
    int rc = 1;
    train_graph *tg = NULL;
    profile *p = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = strcmp(a, "--device") == 0        ? &dev_name
                           : strcmp(a, "--device-file") == 0 ? &dev_file
                           : strcmp(a, "-o") == 0            ? &out_path
                                                             : NULL;
        if (dst) {
            if (cli_value(argc, argv, &i, dst, &err)) goto fail;
            continue;
        }
        int used = cli_model_opt(&mo, argc, argv, &i, &err);
        if (used == 0) used = cli_train_opt(&to, argc, argv, &i, &err);
        if (used < 0) goto fail;
        if (used == 0) {
            oc_fail(&err, "unknown argument '%s' (see --help)", a);
            goto fail;
        }
    }
    if (!dev_name == !dev_file) {
        oc_fail(&err, "give exactly one of --device NAME (%s) or --device-file FILE",
                device_preset_names());
        goto fail;
    }
    if (!out_path) {
        oc_fail(&err, "no output: -o PROFILE.json (or -o - for standard output)");
        goto fail;
    }
    profile_device dev;
    if (dev_name ? device_preset_find(dev_name, &dev, &err)
                 : device_read_file(dev_file, &dev, &err))
        goto fail;
    if (cli_load_training(&mo, &to, &tg, &err)) goto fail;
    int64_t batch = mo.batch;
    if (batch <= 0 && tg->g->n_inputs && tg->g->tensors[tg->g->inputs[0]].rank > 0)
        batch = tg->g->tensors[tg->g->inputs[0]].dims[0];
    p = profile_analytic(tg, &dev, batch > 0 ? batch : 1);
    cli_output out;
    if (cli_open_output(&out, out_path, &err)) goto fail;
    int werr = profile_write_file(p, out.f, &err);
    if (cli_close_output(&out, werr == OC_OK, &err) || werr) goto fail;
    rc = 0;
    goto done;
fail:
    rc = cli_report("profile", &err);
done:
    profile_free(p);
    train_graph_free(tg);
    cli_model_opts_free(&mo);
    return rc;
}
