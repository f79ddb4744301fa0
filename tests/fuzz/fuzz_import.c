/* fuzz_import.c — libFuzzer target: the ONNX importer and everything a model
 * goes through before planning (ir_load_model_buffer: decode, project-domain
 * refusal, dim binding, shape inference and argument decoding; train_build:
 * autodiff; liveness; the in-core layout and its verification). Inputs are
 * models; onnx_mutator.c mutates them decoded. Run from an empty folder
 * (tests/fuzz/run.sh): external data resolves beside "fuzz.onnx". */
#include <stdint.h>
#include <stdlib.h>

#include "emit/layout.h"
#include "ir/shape_infer.h"
#include "plan/plan_verify.h"
#include "train/train_graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    oc_err err;
    ir_graph *g;
    ir_bind_opts b = {.batch = 2};
    if (ir_load_model_buffer(data, size, "fuzz.onnx", &b, &g, &err)) return 0;
    train_graph *tg;
    train_opts o = train_opts_default();
    if (train_build(g, &o, &tg, &err)) return 0; /* g consumed */
    int peak_node;
    train_liveness_peak(tg, &peak_node);
    layout_result l;
    layout_plan(tg, NULL, NULL, &l);
    /* The planner's own layout must verify: a failure here is a bug. */
    if (plan_verify(tg, l.offset, l.arena_bytes, 0, &err)) {
        fprintf(stderr, "in-core layout fails its verifier: %s\n", err.msg);
        abort();
    }
    layout_result_free(&l);
    train_graph_free(tg);
    return 0;
}
