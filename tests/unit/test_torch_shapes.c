/* test_torch_shapes.c — inferred shapes of the bundled models against the shapes
 * PyTorch recorded (graphs/<model>_op<N>.shapes.json, written by
 * tools/export_models.py: {"batch": B, "tensors": {name: [dims]}}).
 *
 * Each graphs/<model>_op13.onnx and _op15.onnx is loaded at batches 1, 32 and 640;
 * every recorded tensor must exist with the recorded shape, its leading dim
 * replaced by the test batch when it was the recorded batch. Run from the
 * repository root (tests/run_all.sh does). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <glob.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/shape_infer.h"

#define MIN_MODELS 18   /* 9 models x opsets 13 and 15 */
#define MIN_COMPARED 10 /* tensors per model, or the shapes file is suspect */

static const int64_t batches[] = {1, 32, 640};

typedef struct model_list {
    glob_t g13, g15;
    size_t n;
} model_list;

/* "graphs/resnet18_op13.onnx" -> "graphs/resnet18_op13.shapes.json" (caller frees). */
static char *shapes_path(const char *onnx) {
    size_t stem = strlen(onnx) - strlen(".onnx");
    char *p = malloc(stem + sizeof ".shapes.json");
    if (!p) abort();
    memcpy(p, onnx, stem);
    strcpy(p + stem, ".shapes.json");
    return p;
}

/* Formats a problem into why; returns ret. */
static int problem(int ret, char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int problem(int ret, char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return ret;
}

/* Compares one recorded tensor with the graph. Returns 0 when it matches, else
 * 1 with a description in why. */
static int compare_tensor(const ir_graph *g, const char *name, json_t *dims, int64_t rec_batch,
                          int64_t batch, char *why, size_t cap) {
    int t = ir_tensor_find(g, name);
    if (t < 0) return problem(1, why, cap, "tensor '%s' is missing", name);
    const ir_tensor *x = &g->tensors[t];
    size_t rank = json_array_size(dims);
    char got[256];
    ir_shape_str(x, got, sizeof got);
    if (!json_is_array(dims) || (int)rank != x->rank)
        return problem(1, why, cap, "tensor '%s': rank %d %s, recorded rank %zu", name, x->rank,
                       got, rank);
    for (size_t i = 0; i < rank; i++) {
        int64_t want = json_integer_value(json_array_get(dims, i));
        if (i == 0 && want == rec_batch) want = batch;
        if (x->dims[i] != want)
            return problem(1, why, cap, "tensor '%s': shape %s, dim %zu expected %" PRId64, name,
                           got, i, want);
    }
    return 0;
}

/* Loads model at batch and compares every tensor recorded in shapes. Returns
 * the number compared, or -1 with the first problem in why. */
static int compare_model(const char *model, json_t *shapes, int64_t batch, char *why, size_t cap) {
    json_t *jb = json_object_get(shapes, "batch"), *tensors = json_object_get(shapes, "tensors");
    if (!json_is_integer(jb) || !json_is_object(tensors))
        return problem(-1, why, cap, "shapes file lacks \"batch\" or \"tensors\"");
    ir_graph *g;
    oc_err err;
    ir_bind_opts o = {.batch = batch};
    if (ir_load_model(model, &o, &g, &err))
        return problem(-1, why, cap, "load failed: %s", err.msg);
    int compared = 0, bad = 0;
    const char *name;
    json_t *dims;
    json_object_foreach(tensors, name, dims) {
        bad = compare_tensor(g, name, dims, json_integer_value(jb), batch, why, cap);
        if (bad) break;
        compared++;
    }
    ir_graph_free(g);
    return bad ? -1 : compared;
}

/* State: the model path. One test per model file, covering every batch. */
static void test_model(void **state) {
    const char *model = *state;
    char *sp = shapes_path(model);
    json_error_t jerr;
    json_t *shapes = json_load_file(sp, 0, &jerr);
    char why[1536] = "";
    int failed = 0;
    if (!shapes) {
        snprintf(why, sizeof why, "%s: %s", sp, jerr.text);
        failed = 1;
    }
    for (size_t b = 0; !failed && b < sizeof batches / sizeof batches[0]; b++) {
        int n = compare_model(model, shapes, batches[b], why, sizeof why);
        if (n >= 0) printf("%s batch %" PRId64 ": %d tensors compared\n", model, batches[b], n);
        if (n >= 0 && n < MIN_COMPARED)
            snprintf(why, sizeof why, "only %d tensors compared (at least %d expected)", n,
                     MIN_COMPARED);
        if (n < MIN_COMPARED) {
            failed = 1;
            fprintf(stderr, "%s batch %" PRId64 ": %s\n", model, batches[b], why);
        }
    }
    json_decref(shapes);
    free(sp);
    if (failed) fail_msg("%s: %s", model, why);
}

/* State: the model count found by the glob. */
static void test_found_models(void **state) {
    size_t n = *(size_t *)*state;
    if (n < MIN_MODELS)
        fail_msg("found %zu graphs/*_op13.onnx + *_op15.onnx, need %d", n, MIN_MODELS);
}

static void list_models(model_list *l) {
    memset(l, 0, sizeof *l);
    int r13 = glob("graphs/*_op13.onnx", 0, NULL, &l->g13);
    int r15 = glob("graphs/*_op15.onnx", 0, NULL, &l->g15);
    l->n = (r13 == 0 ? l->g13.gl_pathc : 0) + (r15 == 0 ? l->g15.gl_pathc : 0);
}

int main(void) {
    model_list l;
    list_models(&l);
    struct CMUnitTest *tests = calloc(l.n + 1, sizeof *tests);
    if (!tests) abort();
    tests[0] = (struct CMUnitTest)cmocka_unit_test_prestate(test_found_models, &l.n);
    size_t k = 1;
    for (size_t i = 0; i < l.g13.gl_pathc; i++)
        tests[k++] = (struct CMUnitTest){
            .name = l.g13.gl_pathv[i], .test_func = test_model, .initial_state = l.g13.gl_pathv[i]};
    for (size_t i = 0; i < l.g15.gl_pathc; i++)
        tests[k++] = (struct CMUnitTest){
            .name = l.g15.gl_pathv[i], .test_func = test_model, .initial_state = l.g15.gl_pathv[i]};
    int rc = _cmocka_run_group_tests("torch_shapes", tests, k, NULL, NULL);
    free(tests);
    globfree(&l.g13);
    globfree(&l.g15);
    return rc;
}
