/* cli.c — see cli.h. */
#include "cli.h"

#include <stdio.h>
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

int cli_load(const cli_model_opts *o, ir_graph **g, oc_err *err) {
    if (!o->model) return oc_fail(err, "no MODEL given (see --help)");
    ir_bind_opts b = {.batch = o->batch, .dims = o->dims, .n_dims = o->n_dims};
    return ir_load_model(o->model, &b, g, err);
}

void cli_model_opts_free(cli_model_opts *o) {
    for (int i = 0; i < o->n_dims; i++) oc_free((char *)o->dims[i].name);
    oc_free(o->dims);
}

int cli_report(const char *cmd, const oc_err *err) {
    fprintf(stderr, "outcore-plan %s: error: %s\n", cmd, err->msg);
    return 1;
}
