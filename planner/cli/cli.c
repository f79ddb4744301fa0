/* cli.c — see cli.h. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

int cli_value(int argc, char **argv, int *i, const char **val, oc_err *err) {
    if (*i + 1 >= argc) return oc_fail(err, "option %s needs a value", argv[*i]);
    *val = argv[++*i];
    return OC_OK;
}

int cli_model_opt(cli_model_opts *o, int argc, char **argv, int *i, oc_err *err) {
    const char *a = argv[*i], *v = NULL;
    if (strcmp(a, "--batch") == 0) {
        if (cli_value(argc, argv, i, &v, err) ||
            oc_parse_int(v, 1, OC_MAX_BATCH, "--batch", &o->batch, err))
            return OC_ERR;
        return 1;
    }
    if (strcmp(a, "--dim") == 0) {
        if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
        const char *eq = strchr(v, '=');
        if (!eq || eq == v) return oc_fail(err, "--dim expects NAME=VALUE, got '%s'", v);
        int64_t val;
        if (oc_parse_int(eq + 1, 1, OC_MAX_BATCH, "--dim", &val, err)) return OC_ERR;
        o->dims = oc_realloc(o->dims, (size_t)(o->n_dims + 1) * sizeof *o->dims);
        /* The name is the part before '='; keep a copy the options own. */
        o->dims[o->n_dims].name = oc_strndup(v, (size_t)(eq - v));
        o->dims[o->n_dims++].value = val;
        return 1;
    }
    if (a[0] != '-' && !o->model) {
        o->model = a;
        return 1;
    }
    return 0;
}

int cli_load(cli_model_opts *o, ir_graph **g, oc_err *err) {
    if (!o->model) return oc_fail(err, "no MODEL given (see --help)");
    ir_bind_opts b = {.batch = o->batch, .dims = o->dims, .n_dims = o->n_dims};
    if (ir_load_model(o->model, &b, g, err)) return OC_ERR;
    const ir_tensor *x = (*g)->n_inputs ? &(*g)->tensors[(*g)->inputs[0]] : NULL;
    if (!o->batch && x && x->rank > 0) o->batch = x->dims[0]; /* bound: static */
    ir_graph_print_notes(*g, "outcore-plan", o->quiet ? NULL : stderr);
    return OC_OK;
}

void cli_model_opts_free(cli_model_opts *o) {
    for (int i = 0; i < o->n_dims; i++) oc_free((char *)o->dims[i].name);
    oc_free(o->dims);
}

int cli_report(const char *cmd, const oc_err *err) {
    fprintf(stderr, "outcore-plan %s: error: ", cmd);
    oc_fputs_escaped(err->msg, stderr);
    fputc('\n', stderr);
    return 1;
}

int cli_train_opt(train_opts *o, int argc, char **argv, int *i, oc_err *err) {
    const char *a = argv[*i], *v = NULL;
    float *target = NULL;
    if (strcmp(a, "--no-fuse") == 0) {
        o->fuse = TRAIN_FUSE_NONE;
        return 1;
    }
    if (strcmp(a, "--lr") == 0) target = &o->lr;
    else if (strcmp(a, "--momentum") == 0) target = &o->momentum;
    else if (strcmp(a, "--weight-decay") == 0) target = &o->weight_decay;
    if (target) {
        if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
        char *end;
        double d = strtod(v, &end);
        if (end == v || *end || !(d >= 0) || d > 1e6)
            return oc_fail(err, "%s: '%s' is not a non-negative number", a, v);
        *target = (float)d;
        return 1;
    }
    static const char *const shared[] = {TRAIN_OPTS_FLAGS};
    for (size_t k = 0; k < sizeof shared / sizeof shared[0]; k++)
        if (strcmp(a, shared[k]) == 0) {
            if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
            return train_opts_parse(o, a, v, err);
        }
    if (strcmp(a, "--bn") == 0) {
        if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
        if (strcmp(v, "train") == 0) o->bn_frozen = false;
        else if (strcmp(v, "frozen") == 0) o->bn_frozen = true;
        else return oc_fail(err, "--bn: '%s' is not one of train, frozen", v);
        return 1;
    }
    if (strcmp(a, "--loss") == 0) {
        if (cli_value(argc, argv, i, &v, err)) return OC_ERR;
        if (strcmp(v, "softmax-ce") == 0) o->loss = TRAIN_LOSS_SOFTMAX_CE;
        else if (strcmp(v, "model") == 0) o->loss = TRAIN_LOSS_MODEL;
        else return oc_fail(err, "--loss: '%s' is not one of softmax-ce, model", v);
        return 1;
    }
    return 0;
}

int cli_load_training(cli_model_opts *mo, const train_opts *to, train_graph **tg, oc_err *err) {
    ir_graph *g;
    if (cli_load(mo, &g, err) || train_build(g, to, tg, err)) return OC_ERR;
    ir_graph_print_notes((*tg)->g, "outcore-plan", stderr);
    return OC_OK;
}

int cli_open_output(cli_output *o, const char *path, oc_err *err) {
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return OC_OK;
    }
    if (oc_out_open(&o->out, path, err)) return OC_ERR;
    o->f = o->out.f;
    return OC_OK;
}

int cli_close_output(cli_output *o, bool ok, oc_err *err) {
    int rc = OC_OK;
    if (o->f == stdout) {
        if (fflush(stdout) != 0) rc = oc_fail(err, "write error on standard output");
    } else if (o->f) {
        rc = oc_out_close(&o->out, ok, err);
    }
    memset(o, 0, sizeof *o);
    return rc;
}
