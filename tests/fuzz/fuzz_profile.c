/* fuzz_profile.c — libFuzzer target: the profile reader (profile_parse: JSON,
 * device, node records, alternatives) and what the planner does with a profile it
 * accepted: mapping it onto a training graph (AlexNet's, built once), scaling it to
 * another batch, the workspace caps (profile_workspace.h: levels, a capped copy, a
 * merge with that copy). Inputs are profile JSON texts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape_infer.h"
#include "plan/profile_workspace.h"
#include "train/train_graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static train_graph *graph(void) {
    static train_graph *tg;
    if (tg) return tg;
    oc_err err;
    ir_graph *g;
    ir_bind_opts b = {.batch = 2};
    train_opts o = train_opts_default();
    if (ir_load_model(OC_FUZZ_MODEL, &b, &g, &err) || train_build(g, &o, &tg, &err)) {
        fprintf(stderr, "fuzz_profile: %s\n", err.msg);
        abort();
    }
    return tg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    train_graph *tg = graph();
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    oc_err err;
    profile *p;
    if (profile_parse(text, "fuzz.json", &p, &err) == OC_OK) {
        double *time = calloc((size_t)tg->g->n_nodes + 1, sizeof *time);
        int64_t *ws = calloc((size_t)tg->g->n_nodes + 1, sizeof *ws);
        profile_node_costs(p, tg, "fuzz.json", time, ws, &err);
        profile_scale_to_batch(p, 3, NULL);
        profile_node_costs(p, tg, "fuzz.json", time, ws, &err);
        free(time), free(ws);
        int64_t levels[4];
        int nl = profile_workspace_levels(p, levels, 4);
        profile *c = profile_capped(p, nl ? levels[nl - 1] : 0, NULL), *m = NULL;
        profile *both[2] = {p, c};
        const char *paths[2] = {"fuzz.json", "capped.json"};
        if (profile_merge(both, paths, 2, &m, &err) == OC_OK) profile_free(m);
        profile_free(c);
        profile_free(p);
    }
    free(text);
    return 0;
}
