/* test_emu_algo_choice.c — the cuda backend's convolution algorithm choice
 * (runtime/cuda/cuda_conv.c), run against the emulator's fake heuristics
 * (tests/emu/emu_cudnn.c: backward lists start with a NON_DETERMINISTIC entry
 * needing no workspace, then an fp16-converting one, then deterministic ones,
 * the tensor-op ALGO_1 needing 256 bytes). Built only with CUDA=emu.
 *   - default: the heuristics' first usable entry (PyTorch's choice), so a
 *     ConvBackwardData / ConvBackwardFilter node needs no workspace;
 *   - rt_backend_opts.deterministic: only deterministic entries, never the
 *     fp16-converting one: the tensor-op ALGO_1 with its 256 bytes;
 *   - the workspace limit: an entry needing more is passed over for the next
 *     (every emulated list ends in a 0-byte deterministic entry, so "nothing
 *     fits" cannot be produced here).
 * Other builds compile a main that skips. */
#ifndef OC_CUDA_EMU
#include <stdio.h>
int main(void) {
    puts("SKIP test_emu_algo_choice: needs CUDA=emu (the emulator's fixed heuristics)");
    return 0;
}
#else
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda/backend_cuda.h"
#include "ir/shape_infer.h"
#include "train/train_graph.h"

typedef struct fixture {
    ir_graph *g;
    train_graph *tg;
    const ir_node *bwd_data, *bwd_filter;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    oc_err err;
    ir_bind_opts bo = {.batch = 2};
    if (ir_load_model("graphs/resnet18_op13.onnx", &bo, &f->g, &err)) fail_msg("%s", err.msg);
    train_opts to = train_opts_default();
    if (train_build(f->g, &to, &f->tg, &err)) fail_msg("%s", err.msg);
    for (int i = 0; i < f->tg->g->n_nodes; i++) {
        const ir_node *n = &f->tg->g->nodes[i];
        if (!f->bwd_data && strcmp(n->op_type, "ConvBackwardData") == 0) f->bwd_data = n;
        if (!f->bwd_filter && strcmp(n->op_type, "ConvBackwardFilter") == 0) f->bwd_filter = n;
    }
    assert_non_null(f->bwd_data);
    assert_non_null(f->bwd_filter);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    train_graph_free(f->tg);
    free(f);
    return 0;
}

/* Scratch of node n on a fresh backend (the choice is cached per backend). */
static size_t scratch_of(const fixture *f, const ir_node *n, size_t limit, bool deterministic) {
    rt_backend *b = NULL;
    oc_err err;
    rt_backend_opts bo = {.deterministic = deterministic};
    if (rt_backend_new("cuda", &bo, &b, &err)) fail_msg("%s", err.msg);
    size_t s = b->scratch_bytes(b, f->tg->g, n, limit);
    rt_backend_free(b);
    return s;
}

static void test_default_takes_the_first_usable(void **state) {
    fixture *f = *state;
    assert_int_equal(scratch_of(f, f->bwd_data, SIZE_MAX, false), 0);
    assert_int_equal(scratch_of(f, f->bwd_filter, SIZE_MAX, false), 0);
}

static void test_deterministic_on_request(void **state) {
    fixture *f = *state;
    assert_int_equal(scratch_of(f, f->bwd_data, SIZE_MAX, true), 256);
    assert_int_equal(scratch_of(f, f->bwd_filter, SIZE_MAX, true), 256);
    assert_int_equal(scratch_of(f, f->bwd_data, SIZE_MAX, false), 0);
}

static void test_limit_is_respected(void **state) {
    fixture *f = *state;
    /* tensor-op ALGO_1 needs 256 B: under a 100-byte limit the FMA ALGO_1 (0 B) is taken */
    assert_int_equal(scratch_of(f, f->bwd_data, 100, true), 0);
    assert_int_equal(scratch_of(f, f->bwd_data, 256, true), 256);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_takes_the_first_usable),
        cmocka_unit_test(test_deterministic_on_request),
        cmocka_unit_test(test_limit_is_respected),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
