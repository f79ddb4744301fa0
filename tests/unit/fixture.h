/* fixture.h — shared pieces of the cmocka unit tests that build models in memory.
 * Include after <cmocka.h>. A fixture owns the builder and the imported graph;
 * its teardown frees both, so a failing assertion leaks nothing.
 *
 *   static void test_x(void **state) {
 *       fixture *f = *state;
 *       mb_model *m = f->m = mb_new(13);
 *       ...build...
 *       assert_int_equal(fx_infer(f, 2), OC_OK);
 *       assert_shape(f->g, "y", "[2, 4]");
 *   }
 *   cmocka_unit_test_setup_teardown(test_x, fx_setup, fx_teardown) */
#ifndef OC_TEST_FIXTURE_H
#define OC_TEST_FIXTURE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/onnx_import.h"
#include "ir/shape_infer.h"
#include "unit/model_builder.c"

#define FX_PATH "/tmp/outcore-test/model.onnx" /* only named in messages */

typedef struct fixture {
    mb_model *m;
    ir_graph *g;
    oc_err err;
    char tmpdir[64]; /* set by fx_tmpdir; removed with its files by teardown */
} fixture;

static inline int fx_setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    return 0;
}

/* Removes the files directly inside dir, then dir. */
static inline void fx_rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char path[512];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* A fresh temporary directory for this test (removed by teardown). */
static inline const char *fx_tmpdir(fixture *f) {
    snprintf(f->tmpdir, sizeof f->tmpdir, "/tmp/outcore-test-XXXXXX");
    if (!mkdtemp(f->tmpdir)) fail_msg("mkdtemp failed");
    return f->tmpdir;
}

static inline int fx_teardown(void **state) {
    fixture *f = *state;
    if (f->tmpdir[0]) fx_rm_dir(f->tmpdir);
    ir_graph_free(f->g);
    mb_free(f->m);
    free(f);
    return 0;
}

/* Packs f->m and imports it into f->g (path only used in messages). */
static inline int fx_import_as(fixture *f, const char *path) {
    size_t len;
    const uint8_t *buf = mb_pack(f->m, &len);
    f->err.msg[0] = '\0';
    return onnx_import_buffer(buf, len, path, &f->g, &f->err);
}

static inline int fx_import(fixture *f) { return fx_import_as(f, FX_PATH); }

/* Import, bind (batch; 0 keeps the model's) and infer shapes. */
static inline int fx_infer(fixture *f, int64_t batch) {
    ir_bind_opts b = {.batch = batch};
    if (fx_import(f)) return OC_ERR;
    return ir_bind_dims(f->g, &b, &f->err) || ir_infer_shapes(f->g, &f->err) ? OC_ERR : OC_OK;
}

/* Fails the test unless s contains part. */
#define assert_contains(s, part)                                                                   \
    do {                                                                                           \
        if (!strstr((s), (part))) fail_msg("expected \"%s\" in: %s", (part), (s));                 \
    } while (0)

/* The tensor called name in g; fails the test when it is missing. */
static inline ir_tensor *fx_tensor(ir_graph *g, const char *name) {
    int t = ir_tensor_find(g, name);
    if (t < 0) fail_msg("no tensor '%s'", name);
    return &g->tensors[t];
}

/* Fails unless tensor name has the shape written as "[d0, d1, ...]". */
static inline void assert_shape(ir_graph *g, const char *name, const char *want) {
    char buf[256];
    const char *got = ir_shape_str(fx_tensor(g, name), buf, sizeof buf);
    if (strcmp(got, want) != 0) fail_msg("tensor '%s': shape %s, expected %s", name, got, want);
}

#endif
