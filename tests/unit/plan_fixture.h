/* plan_fixture.h — shared by test_rewrite.c and test_verify.c: the training
 * step of a bundled model (structure-only) and a rewritten plan of it. */
#ifndef OC_TEST_PLAN_FIXTURE_H
#define OC_TEST_PLAN_FIXTURE_H

#include <string.h>

#include "emit/layout.h"
#include "plan/plan_verify.h"
#include "emit/rewrite.h"
#include "ir/shape_infer.h"

/* resnet18 at batch 2 (planner only: nothing runs, so 224x224 is cheap), its
 * BN + Relu chains fused as far as `fuse` says (the default: all). */
static train_graph *pf_resnet18_fuse(train_fuse fuse) {
    ir_graph *g;
    oc_err err;
    ir_bind_opts b = {.batch = 2};
    if (ir_load_model("graphs/resnet18_op13.onnx", &b, &g, &err)) fail_msg("%s", err.msg);
    train_opts o = train_opts_default();
    o.fuse = fuse;
    train_graph *tg;
    if (train_build(g, &o, &tg, &err)) fail_msg("%s", err.msg);
    return tg;
}

static train_graph *pf_resnet18(void) { return pf_resnet18_fuse(TRAIN_FUSE_ALL); }

static int pf_tensor(const ir_graph *g, const char *name) {
    int t = ir_tensor_find(g, name);
    if (t < 0) fail_msg("no tensor '%s'", name);
    return t;
}

static int pf_node(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return i;
    fail_msg("no node '%s'", name);
    return -1;
}

#endif
