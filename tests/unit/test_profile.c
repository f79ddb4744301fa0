/* test_profile.c — profile.json round trip (with alternatives), validation errors that
 * name the problem, merging profiles of several workspace caps and choosing under a cap,
 * mapping onto a training graph, batch scaling, analytic roofline. */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ir/ops/op_table.h"
#include "plan/profile.h"
#include "plan/profile_workspace.h"

/* A two-node "training graph": names are all the profile needs. */
static train_graph *tiny_graph(void) {
    train_graph *tg = oc_calloc(1, sizeof *tg);
    ir_graph *g = tg->g = ir_graph_new();
    int x = ir_tensor_add(g, "x", IR_DTYPE_FLOAT), y = ir_tensor_add(g, "y", IR_DTYPE_FLOAT);
    int z = ir_tensor_add(g, "z", IR_DTYPE_FLOAT);
    int64_t n = 1000;
    for (int t = 0; t < 3; t++) ir_tensor_set_shape(&g->tensors[t], 1, &n);
    int a = op_node_add(g, "relu", OP_RELU);
    ir_node_add_input(g, a, x);
    ir_node_add_output(g, a, y);
    int b = op_node_add(g, "relu/grad", OP_RELU_GRAD);
    ir_node_add_input(g, b, y);
    ir_node_add_output(g, b, z);
    return tg;
}

static profile *tiny_profile(int64_t batch) {
    profile_device d;
    oc_err err;
    if (device_preset_find("h100", &d, &err)) fail_msg("%s", err.msg);
    profile *p = profile_new(&d, batch, PROFILE_SOURCE_MEASURED, 2);
    profile_node_set(p, 0, "relu", 0.25, 0);
    profile_node_set(p, 1, "relu/grad", 0.5, 4096);
    return p;
}

static void test_round_trip(void **state) {
    (void)state;
    profile *p = tiny_profile(32), *q = NULL;
    char path[] = "/tmp/outcore-profile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    oc_err err;
    assert_int_equal(profile_write_file(p, f, &err), OC_OK);
    fclose(f);
    int rc = profile_read(path, &q, &err);
    unlink(path);
    if (rc) fail_msg("%s", err.msg);
    assert_string_equal(q->device.name, "h100");
    assert_int_equal(q->device.memory_bytes, p->device.memory_bytes);
    assert_true(q->device.h2d_bytes_per_s == p->device.h2d_bytes_per_s);
    assert_true(q->device.peak_flops == p->device.peak_flops);
    assert_true(q->device.duplex == p->device.duplex);
    assert_true(q->device.launch_overhead_s == p->device.launch_overhead_s);
    /* the presets carry no contention; a profile without the fields reads 0 */
    assert_true(q->device.compute_slowdown_h2d == 0 && q->device.copy_slowdown_duplex == 0);
    assert_int_equal(q->batch, 32);
    assert_int_equal(q->source, PROFILE_SOURCE_MEASURED);
    assert_int_equal(q->n_nodes, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(q->nodes[i].name, p->nodes[i].name);
        assert_true(q->nodes[i].time_s == p->nodes[i].time_s);
        assert_int_equal(q->nodes[i].workspace_bytes, p->nodes[i].workspace_bytes);
    }
    profile_free(p);
    profile_free(q);
}

/* A device object's required fields; DEV the object itself. */
#define DEV_FIELDS                                                                                 \
    "\"name\": \"d\", \"memory_bytes\": 1e9, \"h2d_bytes_per_s\": 1e9, "                           \
    "\"d2h_bytes_per_s\": 1e9, \"duplex\": true, \"copy_latency_s\": 0, "                          \
    "\"peak_flops\": 1e12, \"mem_bandwidth_bytes_per_s\": 1e11, \"launch_overhead_s\": 0"
#define DEV "\"device\": {" DEV_FIELDS "}"

static void expect_parse_error(const char *text, const char *part1, const char *part2) {
    profile *p = NULL;
    oc_err err = {{0}};
    assert_int_equal(profile_parse(text, "bad.json", &p, &err), OC_ERR);
    assert_null(p);
    if (!strstr(err.msg, "bad.json") || !strstr(err.msg, part1) || !strstr(err.msg, part2))
        fail_msg("error should name bad.json, '%s', '%s': %s", part1, part2, err.msg);
}

static void test_parse_errors(void **state) {
    (void)state;
    expect_parse_error("{\"device\": ", "bad JSON", "");
    expect_parse_error("{" DEV ", \"batch\": 4, \"source\": \"analytic\", \"nodes\": "
                       "[{\"name\": \"relu\", \"time_s\": -1, \"workspace_bytes\": 0}]}",
                       "relu", "time_s");
    expect_parse_error("{" DEV ", \"batch\": 4, \"source\": \"analytic\", \"nodes\": "
                       "[{\"name\": \"relu\", \"time_s\": 1}]}",
                       "relu", "workspace_bytes");
    expect_parse_error("{\"device\": {\"name\": \"d\", \"duplex\": true}, \"batch\": 4, "
                       "\"source\": \"analytic\", \"nodes\": []}",
                       "device", "memory_bytes");
    expect_parse_error("{" DEV ", \"source\": \"analytic\", \"nodes\": []}", "batch", "");
}

/* p written as JSON and parsed back (what names it in messages); the caller frees it. */
static profile *written_and_read(const profile *p, const char *what) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    oc_err err;
    assert_int_equal(profile_write_file(p, f, &err), OC_OK);
    fclose(f);
    profile *q = NULL;
    if (profile_parse(text, what, &q, &err)) fail_msg("%s", err.msg);
    free(text);
    return q;
}

/* Alternatives survive a write and a read; a bad one is named. */
static void test_alternatives_round_trip(void **state) {
    (void)state;
    profile *p = tiny_profile(8), *q = NULL;
    p->nodes[1].alts = oc_malloc(2 * sizeof *p->nodes[1].alts);
    p->nodes[1].alts[0] = (profile_alt){0.75, 1024};
    p->nodes[1].alts[1] = (profile_alt){1.5, 0};
    p->nodes[1].n_alts = 2;
    q = written_and_read(p, "mem.json");
    assert_int_equal(q->nodes[0].n_alts, 0);
    assert_int_equal(q->nodes[1].n_alts, 2);
    assert_true(q->nodes[1].alts[0].time_s == 0.75 && q->nodes[1].alts[0].workspace_bytes == 1024);
    assert_true(q->nodes[1].alts[1].time_s == 1.5 && q->nodes[1].alts[1].workspace_bytes == 0);
    profile_scale_to_batch(q, 16, NULL); /* the alternatives' times scale too */
    assert_true(q->nodes[1].alts[1].time_s == 3.0);
    profile_free(p), profile_free(q);
    expect_parse_error("{" DEV ", \"batch\": 4, \"source\": \"measured\", \"nodes\": "
                       "[{\"name\": \"conv\", \"time_s\": 1, \"workspace_bytes\": 8, "
                       "\"alternatives\": [{\"time_s\": 2}]}]}",
                       "conv", "alternatives[0]");
    expect_parse_error("{" DEV ", \"batch\": 4, \"source\": \"measured\", \"nodes\": "
                       "[{\"name\": \"conv\", \"time_s\": 1, \"workspace_bytes\": 8, "
                       "\"alternatives\": 3}]}",
                       "conv", "alternatives");
}

/* Three profiles of one step under workspace caps: per node the pairs no other beats, the
 * times of one workspace averaged, the fastest the record; a cap picks the fastest pair
 * within it (else the smallest), and the levels are the distinct workspaces. */
static void test_merge_and_caps(void **state) {
    (void)state;
    profile *ps[3];
    const char *paths[3] = {"big.json", "mid.json", "none.json"};
    /* relu: 0.25 s at no workspace everywhere; relu/grad: 0.5 s @ 4096, 0.9 @ 1024 (mid),
     * 1.0 @ 0 (none) */
    ps[0] = tiny_profile(8), ps[1] = tiny_profile(8), ps[2] = tiny_profile(8);
    profile_node_set(ps[1], 1, "relu/grad", 0.9, 1024);
    profile_node_set(ps[2], 1, "relu/grad", 1.0, 0);
    profile_node_set(ps[2], 0, "relu", 0.35, 0); /* same workspace: averaged */
    profile *m;
    oc_err err;
    if (profile_merge(ps, paths, 3, &m, &err)) fail_msg("%s", err.msg);
    assert_int_equal(m->nodes[0].n_alts, 0);
    assert_true(fabs(m->nodes[0].time_s - (0.25 + 0.25 + 0.35) / 3) < 1e-12);
    assert_true(m->nodes[1].time_s == 0.5 && m->nodes[1].workspace_bytes == 4096);
    assert_int_equal(m->nodes[1].n_alts, 2);
    assert_int_equal(m->nodes[1].alts[0].workspace_bytes, 1024); /* largest first */
    assert_int_equal(m->nodes[1].alts[1].workspace_bytes, 0);
    int64_t lv[8];
    assert_int_equal(profile_workspace_levels(m, lv, 8), 3);
    assert_true(lv[0] == 4096 && lv[1] == 1024 && lv[2] == 0);
    assert_int_equal(profile_workspace_levels(m, lv, 2), 2); /* spread: largest, smallest */
    assert_true(lv[0] == 4096 && lv[1] == 0);
    int changed;
    profile *c = profile_capped(m, 2000, &changed);
    assert_int_equal(changed, 1);
    assert_true(c->nodes[1].time_s == 0.9 && c->nodes[1].workspace_bytes == 1024);
    assert_int_equal(c->nodes[1].n_alts, 2);             /* the pair given up kept */
    profile *d = profile_capped(c, INT64_MAX, &changed); /* back to the fastest */
    assert_true(d->nodes[1].time_s == 0.5 && changed == 1);
    profile_free(d), profile_free(c);
    c = profile_capped(m, 0, NULL);
    assert_true(c->nodes[1].time_s == 1.0 && c->nodes[1].workspace_bytes == 0);
    profile_free(c);
    /* a slower pair with more workspace is dominated: dropped */
    profile_node_set(ps[1], 1, "relu/grad", 2.0, 2048);
    profile_free(m);
    if (profile_merge(ps, paths, 3, &m, &err)) fail_msg("%s", err.msg);
    assert_int_equal(m->nodes[1].n_alts, 1);
    assert_int_equal(m->nodes[1].alts[0].workspace_bytes, 0);
    profile_free(m);
    /* profiles of another step: the node named */
    profile_node_set(ps[2], 1, "relu/grad2", 1.0, 0);
    assert_int_equal(profile_merge(ps, paths, 3, &m, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "none.json"));
    assert_non_null(strstr(err.msg, "relu/grad"));
    ps[2]->batch = 16;
    assert_int_equal(profile_merge(ps, paths, 3, &m, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "batch"));
    for (int k = 0; k < 3; k++) profile_free(ps[k]);
}

/* The contention fields (tools/calibrate writes them): optional, >= 0, kept
 * through a write and a read. */
static void test_contention_fields(void **state) {
    (void)state;
    profile *p = tiny_profile(32), *q = NULL;
    p->device.compute_slowdown_h2d = 0.125;
    p->device.compute_slowdown_d2h = 0.0625;
    p->device.copy_slowdown_duplex = 0.25;
    q = written_and_read(p, "cal.json");
    assert_true(q->device.compute_slowdown_h2d == 0.125);
    assert_true(q->device.compute_slowdown_d2h == 0.0625);
    assert_true(q->device.copy_slowdown_duplex == 0.25);
    profile_free(p);
    profile_free(q);
    expect_parse_error("{\"device\": {" DEV_FIELDS
                       ", \"compute_slowdown_d2h\": -0.5}, \"batch\": 4, "
                       "\"source\": \"measured\", \"nodes\": []}",
                       "device", "compute_slowdown_d2h");
}

static void test_node_mapping_errors(void **state) {
    (void)state;
    train_graph *tg = tiny_graph();
    double t[2];
    int64_t ws[2];
    oc_err err;
    profile *p = tiny_profile(4);
    assert_int_equal(profile_node_costs(p, tg, "p.json", t, ws, &err), OC_OK);
    assert_true(t[1] == 0.5 && ws[1] == 4096);
    /* A graph node without a record. */
    p->n_nodes = 1;
    assert_int_equal(profile_node_costs(p, tg, "p.json", t, ws, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "relu/grad"));
    assert_non_null(strstr(err.msg, "p.json"));
    p->n_nodes = 2;
    /* A record for a node the graph does not have. */
    profile_node_set(p, 1, "conv9", 1, 0);
    assert_int_equal(profile_node_costs(p, tg, "p.json", t, ws, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "conv9"));
    profile_free(p);
    train_graph_free(tg);
}

/* A profile of per-parameter updates maps onto a multi-tensor update (op_update.h): the
 * group takes its members' summed times and largest workspace; a member missing, or a
 * record of the group beside its members', is an error naming it. */
static void test_grouped_update_from_members(void **state) {
    (void)state;
    train_graph *tg = tiny_graph();
    ir_graph *g = tg->g;
    int64_t n = 10;
    int u = op_node_add(g, "a/sgd+1", OP_SGD_MOMENTUM);
    const char *names[] = {"a", "a/grad", "a/momentum", "b", "b/grad", "b/momentum"};
    for (int i = 0; i < 6; i++) {
        int t = ir_tensor_add(g, names[i], IR_DTYPE_FLOAT);
        ir_tensor_set_shape(&g->tensors[t], 1, &n);
        ir_node_add_input(g, u, t);
    }
    for (int i = 0; i < 4; i++)
        ir_node_add_output(g, u, ir_tensor_add(g, names[i], IR_DTYPE_FLOAT));
    char *members[] = {"a/sgd", "b/sgd"};
    ir_node_add_attr(
        g, u, &(ir_attr){.name = "members", .type = IR_ATTR_STRINGS, .n = 2, .strings = members});
    double t[3];
    int64_t ws[3];
    oc_err err;
    profile *p = tiny_profile(4);
    p->nodes = oc_realloc(p->nodes, 4 * sizeof *p->nodes);
    memset(p->nodes + 2, 0, 2 * sizeof *p->nodes);
    p->n_nodes = 4;
    profile_node_set(p, 2, "b/sgd", 2.0, 64);
    profile_node_set(p, 3, "a/sgd", 1.0, 0);
    assert_int_equal(profile_node_costs(p, tg, "p.json", t, ws, &err), OC_OK);
    assert_true(t[2] == 3.0 && ws[2] == 64);
    p->n_nodes = 3; /* a/sgd missing */
    assert_int_equal(profile_node_costs(p, tg, "p.json", t, ws, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "1 of the 2 members of node 'a/sgd+1'"));
    p->n_nodes = 4;
    profile_node_set(p, 3, "a/sgd+1", 1.0, 0); /* the group's own record beside b's */
    assert_int_equal(profile_node_costs(p, tg, "p.json", t, ws, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "a/sgd+1"));
    p->n_nodes = 3;
    profile_node_set(p, 2, "a/sgd+1", 1.5, 0); /* its own record alone */
    assert_int_equal(profile_node_costs(p, tg, "p.json", t, ws, &err), OC_OK);
    assert_true(t[2] == 1.5);
    p->n_nodes = 4; /* every name freed */
    profile_free(p);
    train_graph_free(tg);
}

static void test_batch_scaling_warns(void **state) {
    (void)state;
    profile *p = tiny_profile(32);
    FILE *warn = tmpfile();
    assert_non_null(warn);
    profile_scale_to_batch(p, 64, warn);
    assert_true(p->nodes[0].time_s == 0.5 && p->nodes[1].time_s == 1.0);
    assert_int_equal(p->batch, 64);
    assert_int_equal(p->nodes[1].workspace_bytes, 4096);
    char buf[512] = {0};
    rewind(warn);
    size_t n = fread(buf, 1, sizeof buf - 1, warn);
    assert_true(n > 0);
    assert_non_null(strstr(buf, "warning"));
    assert_non_null(strstr(buf, "32"));
    assert_non_null(strstr(buf, "64"));
    /* Same batch: no warning, no change. */
    rewind(warn);
    profile_scale_to_batch(p, 64, warn);
    assert_int_equal(ftell(warn), 0);
    fclose(warn);
    profile_free(p);
}

/* Relu over 1000 floats: 1000 flops, 8000 bytes; memory bound on every preset. */
static void test_analytic_roofline(void **state) {
    (void)state;
    train_graph *tg = tiny_graph();
    profile_device d;
    oc_err err;
    assert_int_equal(device_preset_find("v100", &d, &err), OC_OK);
    assert_int_equal(device_preset_find("tpu", &d, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "tpu"));
    device_preset_find("v100", &d, &err);
    profile *p = profile_analytic(tg, &d, 1);
    assert_int_equal(p->n_nodes, 2);
    assert_string_equal(p->nodes[0].name, "relu");
    double want = 8000.0 / d.mem_bandwidth_bytes_per_s + d.launch_overhead_s;
    assert_float_equal(p->nodes[0].time_s, want, 1e-15);
    profile_free(p);
    train_graph_free(tg);
}

/* A 2-d Conv x (2, 8, 16, 16) * w (8, 8, 3, 3) -> y (2, 8, 14, 14). */
static train_graph *conv_graph(void) {
    train_graph *tg = oc_calloc(1, sizeof *tg);
    ir_graph *g = tg->g = ir_graph_new();
    int64_t xd[] = {2, 8, 16, 16}, wd[] = {8, 8, 3, 3}, yd[] = {2, 8, 14, 14};
    int x = ir_tensor_add(g, "x", IR_DTYPE_FLOAT), w = ir_tensor_add(g, "w", IR_DTYPE_FLOAT);
    int y = ir_tensor_add(g, "y", IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[x], 4, xd);
    ir_tensor_set_shape(&g->tensors[w], 4, wd);
    ir_tensor_set_shape(&g->tensors[y], 4, yd);
    int n = op_node_add(g, "conv", OP_CONV);
    ir_node_add_input(g, n, x);
    ir_node_add_input(g, n, w);
    ir_node_add_output(g, n, y);
    return tg;
}

static double conv_time(const train_graph *tg, double slowdown, bool nhwc) {
    profile_device d;
    oc_err err;
    if (device_preset_find("v100", &d, &err)) fail_msg("%s", err.msg);
    d.conv_nchw_slowdown = slowdown;
    tg->g->nodes[0].channels_last = nhwc;
    profile *p = profile_analytic(tg, &d, 1);
    double t = p->nodes[0].time_s - d.launch_overhead_s;
    profile_free(p);
    return t;
}

/* conv_nchw_slowdown scales an NCHW convolution's analytic time, not a
 * channels-last one's; it survives a write and a read; h100's is measured. */
static void test_conv_nchw_slowdown(void **state) {
    (void)state;
    train_graph *tg = conv_graph();
    double base = conv_time(tg, 0, false);
    assert_true(base > 0);
    assert_true(fabs(conv_time(tg, 0.5, false) - 1.5 * base) <= 1e-12 * base);
    assert_true(conv_time(tg, 0.5, true) == conv_time(tg, 0, true));
    train_graph_free(tg);
    profile_device d;
    oc_err err;
    assert_int_equal(device_preset_find("h100", &d, &err), OC_OK);
    assert_true(d.conv_nchw_slowdown > 0);
    assert_int_equal(device_preset_find("h200", &d, &err), OC_OK);
    assert_true(d.conv_nchw_slowdown > 0 && d.memory_bytes > ((int64_t)140 << 30));
    assert_int_equal(device_preset_find("v100", &d, &err), OC_OK);
    assert_true(d.conv_nchw_slowdown == 0);
    profile *p = tiny_profile(4), *q = NULL;
    p->device.conv_nchw_slowdown = 0.75;
    q = written_and_read(p, "dev.json");
    assert_true(q->device.conv_nchw_slowdown == 0.75);
    profile_free(p);
    profile_free(q);
    expect_parse_error("{\"device\": {" DEV_FIELDS ", \"conv_nchw_slowdown\": -1}, \"batch\": 4, "
                       "\"source\": \"measured\", \"nodes\": []}",
                       "device", "conv_nchw_slowdown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_alternatives_round_trip),
        cmocka_unit_test(test_merge_and_caps),
        cmocka_unit_test(test_contention_fields),
        cmocka_unit_test(test_node_mapping_errors),
        cmocka_unit_test(test_batch_scaling_warns),
        cmocka_unit_test(test_analytic_roofline),
        cmocka_unit_test(test_conv_nchw_slowdown),
        cmocka_unit_test(test_grouped_update_from_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
