/* test_arena.c — the static arena layout (arena.h): tensors live at a common
 * op never share a byte (checked pairwise on random lifetimes), offsets are
 * aligned, dead tensors' bytes are reused, the high-water mark is at least the
 * most bytes live at once, and an allocation past the capacity is an error
 * naming the tensor. Plus the executor's layout on a real training graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "arena.h"
#include "backend.h"
#include "executor.h"
#include "init.h"
#include "loader.h"

static uint64_t rng = 12345;
static uint64_t next(void) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng >> 33;
}

static void random_lifetimes_never_overlap(void **state) {
    (void)state;
    enum { N = 400, OPS = 120 };
    static arena_item it[N];
    static int64_t off[N];
    static char names[N][16];
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < N; i++) {
            snprintf(names[i], sizeof names[i], "t%d", i);
            int a = (int)(next() % OPS), b = a + (int)(next() % 30);
            it[i] = (arena_item){names[i], (int64_t)(next() % 5000), a, b};
            if (next() % 20 == 0) it[i].first = it[i].last = ARENA_FOREVER;
        }
        int64_t high;
        oc_err err;
        assert_int_equal(arena_plan(it, N, 0, off, &high, &err), OC_OK);
        int64_t peak = 0;
        for (int t = 0; t < OPS + 30; t++) {
            int64_t live = 0;
            for (int i = 0; i < N; i++)
                if (it[i].first == ARENA_FOREVER || (it[i].first <= t && t <= it[i].last))
                    live += it[i].bytes;
            if (live > peak) peak = live;
        }
        assert_true(high >= peak);
        for (int i = 0; i < N; i++) {
            assert_int_equal(off[i] % PLAN_ALIGN, 0);
            assert_true(off[i] + it[i].bytes <= high);
            for (int j = i + 1; j < N; j++) assert_false(arena_items_conflict(it, off, i, j));
        }
        /* The same layout under a capacity equal to its high water succeeds. */
        int64_t high2;
        assert_int_equal(arena_plan(it, N, high, off, &high2, &err), OC_OK);
        assert_int_equal(high2, high);
    }
}

static void dead_bytes_are_reused(void **state) {
    (void)state;
    arena_item it[] = {{"a", 1000, 0, 1}, {"b", 1000, 2, 3}, {"c", 1000, 1, 2}};
    int64_t off[3], high;
    oc_err err;
    assert_int_equal(arena_plan(it, 3, 0, off, &high, &err), OC_OK);
    assert_int_equal(off[1], off[0]); /* b reuses a's bytes */
    assert_int_equal(high, 2 * 1024); /* two 1000-byte tensors, aligned */
    assert_true(arena_items_conflict(it, off, 0, 2) == false);
    /* An op's inputs and outputs never share bytes: a dies at op 1 where c is born. */
    assert_true(off[2] != off[0]);
}

static void capacity_error_names_tensor(void **state) {
    (void)state;
    arena_item it[] = {{"weights", 1024, ARENA_FOREVER, ARENA_FOREVER},
                       {"conv1_out", 4096, 0, 2},
                       {"relu_out", 4096, 1, 3}};
    int64_t off[3], high;
    oc_err err;
    assert_int_equal(arena_plan(it, 3, 0, off, &high, &err), OC_OK);
    assert_int_equal(high, 1024 + 2 * 4096);
    assert_int_equal(arena_plan(it, 3, high - 1, off, &high, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "'relu_out'"));
    assert_non_null(strstr(err.msg, "4096 bytes"));
}

/* The executor lays out every device tensor of resnet18's step: the capacity is
 * exactly the high water, and a capacity one byte short is refused up front. */
static void executor_layout_of_training_graph(void **state) {
    (void)state;
    rt_load_opts lo = {.batch = 2, .train = train_opts_default()};
    train_graph *tg;
    rt_model_info info;
    oc_err err;
    assert_int_equal(rt_load("graphs/resnet18_op13.onnx", &lo, &tg, &info, &err), OC_OK);
    rt_backend *b = NULL;
    oc_err berr;
    if (rt_backend_new("cpu", NULL, &b, &berr)) fail_msg("%s", berr.msg);
    rt_exec_opts eo = {.backend = b};
    rt_exec *x;
    assert_int_equal(rt_exec_new(tg, &eo, &x, &err), OC_OK);
    int64_t high = rt_exec_high_water(x);
    assert_int_equal(rt_exec_capacity(x), high);
    /* persistent bytes alone: parameters, momentum, BN state */
    assert_true(high >= ir_graph_bytes_of_kind(tg->g, IR_KIND_PARAMETER));
    rt_exec_free(x);
    eo.capacity = high - 1;
    assert_int_equal(rt_exec_new(tg, &eo, &x, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "does not fit"));
    rt_backend_free(b);
    train_graph_free(tg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_lifetimes_never_overlap),
        cmocka_unit_test(dead_bytes_are_reused),
        cmocka_unit_test(capacity_error_names_tensor),
        cmocka_unit_test(executor_layout_of_training_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
