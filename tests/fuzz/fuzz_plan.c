/* fuzz_plan.c — libFuzzer target: what outcore-run does with a file before and
 * during the first step. The input's outcore.seal is recomputed first (as an
 * attacker would: the seal is not a signature; the input's own seal is checked
 * first, which exercises the explanation of a mismatch), so mutations reach the reader
 * (plan_file_read: kind, structure, annotations, offsets, workspaces), the
 * verifier and the decoded-argument checks; a plan or training graph that
 * loads and fits a small arena then runs one step on the cpu backend, where a
 * wrong size would be a heap overflow under ASan. Plain models take the
 * in-process path (train_build). onnx_mutator.c mutates inputs decoded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "executor.h"
#include "init.h"
#include "ir/model_seal.h"
#include "loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ARENA_MAX ((int64_t)64 << 20) /* runs a step only below this */

static void run_one_step(train_graph *tg, const rt_model_info *info) {
    oc_err err;
    rt_backend_opts bo = {0};
    rt_backend *b;
    if (rt_backend_new("cpu", &bo, &b, &err)) abort();
    int n_init;
    rt_exec *x = NULL;
    rt_exec_opts eo = {.backend = b,
                       .capacity = FUZZ_ARENA_MAX,
                       .seed = 1,
                       .offsets = info->plan_offsets,
                       .planned_bytes = info->plan_arena_bytes};
    if (tg->label_tensor >= 0 && rt_init_missing(tg, 1, &n_init, &err) == OC_OK &&
        rt_exec_new(tg, &eo, &x, &err) == OC_OK && rt_exec_upload_initializers(x, &err) == OC_OK) {
        float loss;
        rt_exec_step(x, 0, &loss, &err);
    }
    rt_exec_free(x);
    rt_backend_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    oc_err err;
    /* The seal as the input has it: its check and the explanation of a mismatch. */
    Onnx__ModelProto *m = size ? onnx__model_proto__unpack(NULL, size, data) : NULL;
    if (m) {
        model_seal_check(m, "fuzz.onnx", &err);
        onnx__model_proto__free_unpacked(m, NULL);
    }
    uint8_t *sealed = NULL;
    size_t len = size;
    const uint8_t *buf = data;
    if (model_seal_rewrite(data, size, &sealed, &len) == OC_OK) buf = sealed;
    train_graph *tg;
    rt_model_info info;
    rt_load_opts o = {.train = train_opts_default()};
    if (rt_load_buffer(buf, len, "fuzz.onnx", &o, &tg, &info, &err) == OC_OK) {
        if (!info.is_plan || info.plan_arena_bytes <= FUZZ_ARENA_MAX) run_one_step(tg, &info);
        train_graph_free(tg);
        rt_model_info_free(&info);
    }
    oc_free(sealed);
    return 0;
}
