/* test_streams.c — the cpu backend's streams and events (streams.h) and the
 * executor's cross-stream dependencies (executor.h): events order tasks across
 * the three threads; the write-after-read rule (a writer of arena bytes waits
 * for every earlier reader of them, pending D2H copies included); copies land;
 * an error on one stream neither deadlocks the others nor is lost. Each
 * ordering test has a control run without the dependency that must show the
 * other order, so the test can fail. Gates are condvars, never sleeps. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "backend.h"
#include "executor.h"
#include "streams.h"

/* ---- a log of task names, and gates ---- */

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    char log[16];
    int n;
} gate;
static gate G;

static void gate_reset(void) {
    pthread_mutex_lock(&G.mu);
    G.open = false;
    G.n = 0;
    memset(G.log, 0, sizeof G.log);
    pthread_mutex_unlock(&G.mu);
}

static void gate_open(void) {
    pthread_mutex_lock(&G.mu);
    G.open = true;
    pthread_cond_broadcast(&G.cv);
    pthread_mutex_unlock(&G.mu);
}

static void log_put(char c) {
    pthread_mutex_lock(&G.mu);
    G.log[G.n++] = c;
    pthread_cond_broadcast(&G.cv);
    pthread_mutex_unlock(&G.mu);
}

static int log_len(void) {
    pthread_mutex_lock(&G.mu);
    int n = G.n;
    pthread_mutex_unlock(&G.mu);
    return n;
}

static void wait_log_len(int n) {
    pthread_mutex_lock(&G.mu);
    while (G.n < n) pthread_cond_wait(&G.cv, &G.mu);
    pthread_mutex_unlock(&G.mu);
}

/* Waits for the gate, then logs (char)arg. */
static int gated(void *ctx, int64_t arg, oc_err *err) {
    (void)ctx, (void)err;
    pthread_mutex_lock(&G.mu);
    while (!G.open) pthread_cond_wait(&G.cv, &G.mu);
    pthread_mutex_unlock(&G.mu);
    log_put((char)arg);
    return OC_OK;
}

static int logger(void *ctx, int64_t arg, oc_err *err) {
    (void)ctx, (void)err;
    log_put((char)arg);
    return OC_OK;
}

static void events_order_three_threads(void **state) {
    (void)state;
    for (int control = 0; control < 2; control++) {
        rt_stream *a = rt_stream_new("a"), *b = rt_stream_new("b"), *c = rt_stream_new("c");
        rt_event *e1 = rt_event_new(), *e2 = rt_event_new();
        gate_reset();
        rt_stream_push(a, gated, NULL, 'A');
        rt_stream_record(a, e1);
        if (!control) rt_stream_wait(b, e1);
        rt_stream_push(b, logger, NULL, 'B');
        rt_stream_record(b, e2);
        if (!control) rt_stream_wait(c, e2);
        rt_stream_push(c, logger, NULL, 'C');
        if (control) wait_log_len(2);        /* B and C ran while A is held */
        else assert_int_equal(log_len(), 0); /* B and C are blocked behind A */
        gate_open();
        oc_err err;
        assert_int_equal(rt_stream_sync(a, &err), OC_OK);
        assert_int_equal(rt_stream_sync(b, &err), OC_OK);
        assert_int_equal(rt_stream_sync(c, &err), OC_OK);
        assert_true(rt_event_query(e1) && rt_event_query(e2));
        if (control) assert_int_equal(G.log[2], 'A');
        else assert_string_equal(G.log, "ABC");
        rt_event_free(e1), rt_event_free(e2);
        rt_stream_free(a), rt_stream_free(b), rt_stream_free(c);
    }
}

/* ---- executor programs on the cpu backend ---- */

static float DEV[64], HOST[64], SEEN[64];

/* Reads DEV[0..16) into SEEN after the gate (a compute node reading arena bytes). */
static int gated_reader(void *ctx, int64_t arg, oc_err *err) {
    gated(ctx, 'R', err);
    (void)arg;
    memcpy(SEEN, DEV, 16 * sizeof(float));
    return OC_OK;
}

static int writer(void *ctx, int64_t arg, oc_err *err) {
    (void)ctx, (void)arg, (void)err;
    for (int i = 0; i < 16; i++) DEV[i] = -1.0f;
    log_put('W');
    return OC_OK;
}

/* op0 (compute) reads DEV bytes [0, 64); op1 (H2D copy) overwrites [32, 96):
 * the copy must wait for the reader (write-after-read). */
static void war_compute_then_h2d(void **state) {
    (void)state;
    rt_backend *b = NULL;
    oc_err berr;
    if (rt_backend_new("cpu", NULL, &b, &berr)) fail_msg("%s", berr.msg);
    for (int control = 0; control < 2; control++) {
        gate_reset();
        for (int i = 0; i < 64; i++) DEV[i] = 1.0f, HOST[i] = 2.0f, SEEN[i] = 0;
        rt_region r0 = {RT_SPACE_DEVICE, 0, 64}, w1 = {RT_SPACE_DEVICE, 32, 64},
                  h1 = {RT_SPACE_HOST, 0, 64};
        rt_op ops[3] = {
            {.kind = RT_OP_HOST_FN,
             .stream = RT_STREAM_COMPUTE,
             .reads = &r0,
             .n_reads = 1,
             .fn = gated_reader},
            {.kind = RT_OP_COPY,
             .stream = RT_STREAM_H2D,
             .reads = &h1,
             .n_reads = 1,
             .writes = &w1,
             .n_writes = 1,
             .dst = (uint8_t *)DEV + 32,
             .src = HOST,
             .bytes = 64},
            {.kind = RT_OP_HOST_FN, .stream = RT_STREAM_H2D, .fn = logger, .ctx = NULL},
        };
        int n = rt_program_deps(ops, 3);
        assert_int_equal(n, 1);
        assert_int_equal(ops[1].waits[RT_STREAM_COMPUTE], 0);
        if (control) ops[1].waits[RT_STREAM_COMPUTE] = -1; /* drop the rule */
        void *ev[3] = {0};
        rt_program_run(b, ops, 3, ev, 'C', false); /* op2 logs 'C' after the copy */
        if (control) wait_log_len(1);              /* the copy overtook the held reader */
        else assert_int_equal(log_len(), 0);
        gate_open();
        oc_err err;
        assert_int_equal(b->sync(b, &err), OC_OK);
        /* The reader saw the old bytes exactly when the rule held. */
        assert_true(control ? SEEN[8] == 2.0f : SEEN[8] == 1.0f);
        assert_true(DEV[8] == 2.0f && DEV[7] == 1.0f && DEV[23] == 2.0f &&
                    DEV[24] == 1.0f); /* the copy landed */
        rt_program_events_free(b, ev, 3);
    }
    rt_backend_free(b);
}

/* op0 (D2H, held by a gated op before it) reads DEV into HOST; op1 (compute)
 * overwrites DEV: the writer waits for the pending D2H copy. */
static void war_pending_d2h(void **state) {
    (void)state;
    rt_backend *b = NULL;
    oc_err berr;
    if (rt_backend_new("cpu", NULL, &b, &berr)) fail_msg("%s", berr.msg);
    gate_reset();
    for (int i = 0; i < 64; i++) DEV[i] = 3.0f, HOST[i] = 0;
    rt_region d = {RT_SPACE_DEVICE, 0, 64}, h = {RT_SPACE_HOST, 0, 64};
    rt_op ops[3] = {
        {.kind = RT_OP_HOST_FN, .stream = RT_STREAM_D2H, .fn = gated},
        {.kind = RT_OP_COPY,
         .stream = RT_STREAM_D2H,
         .reads = &d,
         .n_reads = 1,
         .writes = &h,
         .n_writes = 1,
         .dst = HOST,
         .src = DEV,
         .bytes = 64},
        {.kind = RT_OP_HOST_FN,
         .stream = RT_STREAM_COMPUTE,
         .writes = &d,
         .n_writes = 1,
         .fn = writer},
    };
    rt_program_deps(ops, 3);
    assert_int_equal(ops[2].waits[RT_STREAM_D2H], 1);
    void *ev[3] = {0};
    rt_program_run(b, ops, 3, ev, 'G', false);
    assert_int_equal(log_len(), 0); /* the writer is blocked behind the pending copy */
    gate_open();
    oc_err err;
    assert_int_equal(b->sync(b, &err), OC_OK);
    assert_string_equal(G.log, "GW");
    assert_true(HOST[0] == 3.0f && HOST[15] == 3.0f); /* the copy saw the old bytes */
    assert_true(DEV[0] == -1.0f);
    rt_program_events_free(b, ev, 3);
    rt_backend_free(b);
}

static int doubler(void *ctx, int64_t arg, oc_err *err) {
    (void)arg, (void)err;
    float *v = ctx;
    for (int i = 0; i < 64; i++) v[i] *= 2;
    return OC_OK;
}

/* H2D -> compute -> D2H through events only (read-after-write deps). */
static void copies_land(void **state) {
    (void)state;
    rt_backend *b = NULL;
    oc_err berr;
    if (rt_backend_new("cpu", NULL, &b, &berr)) fail_msg("%s", berr.msg);
    static float host_in[64], dev[64], host_out[64];
    for (int i = 0; i < 64; i++) host_in[i] = (float)i, dev[i] = -5, host_out[i] = 0;
    rt_region hi = {RT_SPACE_HOST, 0, 256}, d = {RT_SPACE_DEVICE, 0, 256},
              ho = {RT_SPACE_HOST, 256, 256};
    rt_op ops[3] = {
        {.kind = RT_OP_COPY,
         .stream = RT_STREAM_H2D,
         .reads = &hi,
         .n_reads = 1,
         .writes = &d,
         .n_writes = 1,
         .dst = dev,
         .src = host_in,
         .bytes = sizeof dev},
        {.kind = RT_OP_HOST_FN,
         .stream = RT_STREAM_COMPUTE,
         .reads = &d,
         .n_reads = 1,
         .writes = &d,
         .n_writes = 1,
         .fn = doubler,
         .ctx = dev},
        {.kind = RT_OP_COPY,
         .stream = RT_STREAM_D2H,
         .reads = &d,
         .n_reads = 1,
         .writes = &ho,
         .n_writes = 1,
         .dst = host_out,
         .src = dev,
         .bytes = sizeof dev},
    };
    assert_int_equal(rt_program_deps(ops, 3), 3); /* D2H waits for both writers of d */
    void *ev[3] = {0};
    for (int rep = 0; rep < 50; rep++) {
        rt_program_run(b, ops, 3, ev, rep, false);
        oc_err err;
        assert_int_equal(b->sync(b, &err), OC_OK);
        for (int i = 0; i < 64; i++) assert_true(host_out[i] == 2.0f * (float)i);
        for (int i = 0; i < 64; i++) host_out[i] = 0;
    }
    rt_program_events_free(b, ev, 3);
    rt_backend_free(b);
}

static int failing(void *ctx, int64_t arg, oc_err *err) {
    (void)ctx, (void)arg;
    return oc_fail(err, "kernel exploded");
}

static void error_reported_without_deadlock(void **state) {
    (void)state;
    rt_stream *a = rt_stream_new("compute"), *b = rt_stream_new("d2h");
    rt_event *e = rt_event_new();
    gate_reset();
    rt_stream_push(a, failing, NULL, 0);
    rt_stream_push(a, logger, NULL, 'X'); /* skipped after the failure */
    rt_stream_record(a, e);               /* still reached */
    rt_stream_wait(b, e);
    rt_stream_push(b, logger, NULL, 'Y');
    oc_err err;
    assert_int_equal(rt_stream_sync(a, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "compute"));
    assert_non_null(strstr(err.msg, "kernel exploded"));
    assert_int_equal(rt_stream_sync(b, &err), OC_OK);
    assert_string_equal(G.log, "Y");
    assert_int_equal(rt_stream_sync(a, &err), OC_OK); /* cleared */
    rt_event_free(e);
    rt_stream_free(a), rt_stream_free(b);
}

int main(void) {
    pthread_mutex_init(&G.mu, NULL);
    pthread_cond_init(&G.cv, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(events_order_three_threads),
        cmocka_unit_test(war_compute_then_h2d),
        cmocka_unit_test(war_pending_d2h),
        cmocka_unit_test(copies_land),
        cmocka_unit_test(error_reported_without_deadlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
