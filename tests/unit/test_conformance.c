/* test_conformance.c — ONNX node conformance of the cpu kernels against the
 * official backend test data (Debian libonnx-testdata, data/node/test_*).
 *
 * For every case whose ops all have cpu kernels: import model.onnx (the
 * planner's importer), give the graph inputs the shapes and values of
 * test_data_set_*\/input_*.pb, run shape inference, run every node with
 * cpu_kernel_run, and compare each graph output with output_*.pb:
 * floats within |got - want| <= atol + rtol * |want| (rtol 1e-3, atol 1e-7,
 * the ONNX backend tests' defaults), integers and bools exactly.
 * One line per case:
 *   PASS        numbers agree
 *   FAIL        numbers differ (the suite fails)
 *   UNSUPPORTED a kernel rejected an attribute value or dtype (named)
 *   REJECTED    the importer / shape inference rejected the model (named)
 *   SKIP        the model mixes our ops with ops we have no kernel for
 * Checks that differ from a plain comparison, by design (docs/conformance.md):
 *   - training-mode Dropout with ratio > 0: the mask comes from our RNG, so
 *     the output is checked structurally (each element 0 or x / (1 - ratio),
 *     consistent with the mask output);
 *   - training-mode BatchNormalization's running_var: ONNX's reference uses
 *     the biased batch variance, PyTorch (which we match) the unbiased one;
 *     the expected value is converted: want' = m*v + (1-m)*(want - m*v)/(1-m) * n/(n-1).
 * A case with plan-time ops (OC_OPS_FOLD: Equal, Not, Mod, Trilu, Range, ..;
 * ScatterND with a reduction; Max and Min of integers)
 * gets its inputs as constants: shape inference folds it, and the folded
 * outputs are compared the same way.
 * Cases are counted; the suite also fails when fewer than MIN_PASS pass
 * (e.g. the data is missing). OC_CONFORMANCE_DIR overrides the data dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels.h"
#include "onnx.pb-c.h"
#include "ir/half.h"
#include "ir/onnx_import.h"
#include "ir/shape_infer.h"

#define DATA_DIR "/usr/share/libonnx-testdata/data/node"
#define PROJECT_CASES_DIR "tests/data/node"
#define RTOL 1e-3
#define ATOL 1e-7
#define MIN_PASS 684

typedef enum verdict {
    V_PASS,
    V_FAIL,
    V_UNSUPPORTED,
    V_REJECTED,
    V_SKIP,
    V_NONE,
    V__COUNT
} verdict;
static const char *verdict_name[] = {"PASS", "FAIL", "UNSUPPORTED", "REJECTED", "SKIP", "NONE"};

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An op evaluated at plan time only (OC_OPS_FOLD: no kernel). */
static bool is_fold_op(int k) {
#define FOLD_KIND(kind, name, domain, def, kern)                                                   \
    if (k == OP_##kind) return true;
    OC_OPS_FOLD(FOLD_KIND)
#undef FOLD_KIND
    return false;
}

/* An op the importer rewrites into others (OC_OPS_LOWERED: Einsum); what it becomes runs. */
static bool is_lowered_op(int k) {
#define LOWERED_KIND(kind, name, domain, def, kern)                                                \
    if (k == OP_##kind) return true;
    OC_OPS_LOWERED(LOWERED_KIND)
#undef LOWERED_KIND
    return false;
}

/* Op types of the model's nodes: all supported -> V_PASS placeholder;
 * some supported -> V_SKIP with the missing list; none -> V_NONE. */
static verdict classify_ops(const char *model, char *missing, size_t cap) {
    uint8_t *buf;
    size_t len;
    oc_err err;
    missing[0] = '\0';
    if (oc_read_file(model, &buf, &len, &err)) return V_NONE;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    oc_free(buf);
    if (!m || !m->graph) {
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        return V_NONE;
    }
    int have = 0, lack = 0;
    for (size_t i = 0; i < m->graph->n_node; i++) {
        const Onnx__NodeProto *n = m->graph->node[i];
        int k = op_lookup(n->domain ? n->domain : "", n->op_type);
        /* the sequence ops the importer fuses into a Split (onnx_import.c) */
        bool fused = (!n->domain || !*n->domain) && (strcmp(n->op_type, "SplitToSequence") == 0 ||
                                                     strcmp(n->op_type, "SequenceAt") == 0);
        if (cpu_kernel_supported(k) || is_fold_op(k) || is_lowered_op(k) || fused) {
            have++;
        } else {
            lack++;
            if (!strstr(missing, n->op_type)) {
                size_t l = strlen(missing);
                snprintf(missing + l, cap - l, "%s%s", l ? " " : "", n->op_type);
            }
        }
    }
    onnx__model_proto__free_unpacked(m, NULL);
    if (lack == 0 && have > 0) return V_PASS;
    return have > 0 ? V_SKIP : V_NONE;
}

typedef struct run_state {
    ir_graph *g;
    void **buf; /* per tensor */
} run_state;

static void run_state_free(run_state *r) {
    if (r->g) {
        for (int i = 0; r->buf && i < r->g->n_tensors; i++) free(r->buf[i]);
        ir_graph_free(r->g);
    }
    free(r->buf);
}

static bool is_float(ir_dtype d) { return ir_dtype_is_float(d); }

static double load(const void *p, ir_dtype d, int64_t i) {
    switch (d) {
    case IR_DTYPE_FLOAT: return ((const float *)p)[i];
    case IR_DTYPE_DOUBLE: return ((const double *)p)[i];
    case IR_DTYPE_FLOAT16:
    case IR_DTYPE_BFLOAT16: return half_to_f32(d, ((const uint16_t *)p)[i]);
    case IR_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case IR_DTYPE_INT32: return ((const int32_t *)p)[i];
    case IR_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case IR_DTYPE_INT16: return ((const int16_t *)p)[i];
    case IR_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case IR_DTYPE_INT8: return ((const int8_t *)p)[i];
    case IR_DTYPE_UINT8:
    case IR_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    default: return NAN;
    }
}

/* Node producing tensor t, or NULL. */
static const ir_node *producer(const ir_graph *g, int t) {
    return g->tensors[t].producer >= 0 ? &g->nodes[g->tensors[t].producer] : NULL;
}

static bool dropout_random(const run_state *r, const ir_node *n) {
    if (!n || strcmp(n->op_type, "Dropout") != 0 || r->g->opset < 12 || n->n_inputs < 3 ||
        n->inputs[2] < 0)
        return false;
    bool train = ((uint8_t *)r->buf[n->inputs[2]])[0] != 0;
    float ratio = 0.5f;
    if (n->n_inputs > 1 && n->inputs[1] >= 0)
        ratio = (float)load(r->buf[n->inputs[1]], r->g->tensors[n->inputs[1]].dtype, 0);
    return train && ratio > 0.0f;
}

/* Compares graph output k with want; msg on mismatch. */
static bool compare_output(const run_state *r, int k, const ir_tensor *want, char *msg, size_t cap,
                           const char **note) {
    const ir_graph *g = r->g;
    int t = g->outputs[k];
    const ir_tensor *got = &g->tensors[t];
    const void *gp = r->buf[t];
    /* ONNX 1.12's bfloat16 expectations are stored as their uint16 bits */
    ir_dtype want_dt =
        ir_dtype_is_half(got->dtype) && want->dtype == IR_DTYPE_UINT16 ? got->dtype : want->dtype;
    if (got->dtype != want_dt || got->rank != want->rank ||
        memcmp(got->dims, want->dims, (size_t)got->rank * sizeof(int64_t)) != 0) {
        char a[128], b[128];
        snprintf(msg, cap, "output '%s': got %s %s, want %s %s", got->name,
                 ir_dtype_name(got->dtype), ir_shape_str(got, a, sizeof a),
                 ir_dtype_name(want->dtype), ir_shape_str(want, b, sizeof b));
        return false;
    }
    int64_t n = 0;
    ir_tensor_numel(got, &n);
    const ir_node *p = producer(g, t);
    /* Random Dropout: structure only. */
    if (dropout_random(r, p)) {
        *note = "random dropout: structure checked";
        const float *xv = r->buf[p->inputs[0]];
        float ratio = (float)load(r->buf[p->inputs[1]], g->tensors[p->inputs[1]].dtype, 0);
        float scale = 1.0f / (1.0f - ratio);
        const float *y = r->buf[p->outputs[0]];
        const uint8_t *mask = p->n_outputs > 1 && p->outputs[1] >= 0 ? r->buf[p->outputs[1]] : NULL;
        for (int64_t i = 0; i < n; i++) {
            bool kept = y[i] == xv[i] * scale, dropped = y[i] == 0.0f;
            bool ok = mask ? (mask[i] ? kept : dropped) : (kept || dropped);
            if (!ok) {
                snprintf(msg, cap, "dropout element %lld is %g (x=%g, scale=%g, mask=%d)",
                         (long long)i, (double)y[i], (double)xv[i], (double)scale,
                         mask ? mask[i] : -1);
                return false;
            }
        }
        return true;
    }
    /* A float32 -> bfloat16 Cast: ONNX 1.12's reference truncates; outcore rounds to
     * nearest even as PyTorch and CUDA do. Both checked bit for bit. */
    if (p && (p->op == OP_CAST || p->op == OP_CAST_LIKE) && got->dtype == IR_DTYPE_BFLOAT16 &&
        g->tensors[p->inputs[0]].dtype == IR_DTYPE_FLOAT) {
        *note = "bfloat16: ours rounds to nearest even, ONNX 1.12's reference truncates";
        const float *x = r->buf[p->inputs[0]];
        const uint16_t *gb = gp, *wb = want->data;
        for (int64_t i = 0; i < n; i++)
            if (gb[i] != bf16_from_f32(x[i]) || wb[i] != (uint16_t)(half_f32_bits(x[i]) >> 16)) {
                snprintf(msg, cap, "bfloat16 element %lld of %.9g: got %#x, want %#x (rounded)",
                         (long long)i, (double)x[i], gb[i], bf16_from_f32(x[i]));
                return false;
            }
        return true;
    }
    /* BN training running_var: convert ONNX's biased expectation to PyTorch's unbiased. */
    bool bn_var = p && strcmp(p->op_type, "BatchNormalization") == 0 && p->n_outputs > 2 &&
                  p->outputs[2] == t;
    double m = 0.9, cnt = 1;
    const float *v_in = NULL;
    if (bn_var) {
        *note = "running_var with unbiased batch variance (PyTorch)";
        m = ir_attr_float(p, "momentum", 0.9f);
        const ir_tensor *x = &g->tensors[p->inputs[0]];
        int64_t xn = 0;
        ir_tensor_numel(x, &xn);
        cnt = (double)xn / (double)x->dims[1];
        v_in = r->buf[p->inputs[4]];
    }
    for (int64_t i = 0; i < n; i++) {
        double a = load(gp, got->dtype, i), b = load(want->data, want_dt, i);
        if (bn_var) {
            double batch = (b - m * v_in[i]) / (1 - m);
            b = m * v_in[i] + (1 - m) * batch * cnt / (cnt - 1);
        }
        bool ok = is_float(got->dtype)
                      ? ((isnan(a) && isnan(b)) || (a == b) || fabs(a - b) <= ATOL + RTOL * fabs(b))
                      : a == b;
        if (!ok) {
            snprintf(msg, cap, "output '%s' element %lld: got %.9g, want %.9g", got->name,
                     (long long)i, a, b);
            return false;
        }
    }
    return true;
}

/* True when a node reads tensor t at an input of role OP_IN_CONST. */
static bool takes_as_constant(const ir_graph *g, int t) {
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i].n_inputs; j++)
            if (g->nodes[i].inputs[j] == t &&
                op_input_role(op_def_of(&g->nodes[i]), j) == OP_IN_CONST)
                return true;
    return false;
}

/* Whether a plan-time op runs here on run-time data through its lowering (GatherElements,
 * Tile): it has one, and its plan-time inputs are the case's inputs or Constants (not
 * computed: the expanded NLL cases' indices, which only fold). */
static bool lowers(const ir_graph *g, const ir_node *n) {
    const op_def *d = op_def_of(n);
    if (!d->lower) return false;
    for (int j = 0; j < n->n_inputs; j++) {
        int t = n->inputs[j];
        if (t < 0 || op_input_role(d, j) != OP_IN_CONST) continue;
        int p = g->tensors[t].producer;
        if (p >= 0 && g->nodes[p].op != OP_CONSTANT) return false;
    }
    return true;
}

/* Runs one data set of one case. */
static verdict run_set(const char *dir, const char *set, char *msg, size_t cap, const char **note) {
    char path[1024];
    oc_err err;
    run_state r = {0};
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (onnx_import_file(path, &r.g, &err)) {
        snprintf(msg, cap, "%s", err.msg);
        return V_REJECTED;
    }
    verdict v = V_PASS;
    /* A case of plan-time ops (Not, Mod, Trilu, ..): its inputs are constants, so the
     * importer's shape inference folds every node; the folded outputs are compared. */
    bool folds = false;
    for (int i = 0; i < r.g->n_nodes; i++)
        folds = folds || (is_fold_op(r.g->nodes[i].op) && !lowers(r.g, &r.g->nodes[i]));
    /* ScatterND with reduction mul is evaluated at plan time only (op_fold_index.c; add on
     * run-time data is a scatter-add, max and min a gather and reduction, lowered at load) */
    for (int i = 0; i < r.g->n_nodes; i++) {
        const ir_attr *red = ir_attr_find(&r.g->nodes[i], "reduction");
        folds = folds || (r.g->nodes[i].op == OP_SCATTER_ND && red && red->type == IR_ATTR_STRING &&
                          strcmp(red->s, "mul") == 0);
    }
    /* so are Max and Min of integers (op_binary.c) */
    for (int i = 0; i < r.g->n_nodes; i++) {
        const ir_node *n = &r.g->nodes[i];
        if (n->op != OP_MAX && n->op != OP_MIN) continue;
        folds = folds || !ir_dtype_is_compute(r.g->tensors[n->inputs[0]].dtype);
    }
    /* a project case named *_device_* computes its indices on the device from its float
     * inputs (an ArgMax of an activation before a GatherND): never folded */
    if (strstr(dir, "_device_")) folds = false;
    /* Inputs: shapes and values (plan-time values for Reshape shapes etc.). */
    for (int i = 0; i < r.g->n_inputs; i++) {
        ir_tensor in;
        snprintf(path, sizeof path, "%s/%s/input_%d.pb", dir, set, i);
        if (onnx_read_tensor_file(path, &in, &err)) {
            snprintf(msg, cap, "%s", err.msg);
            v = V_FAIL;
            goto out;
        }
        ir_tensor *t = &r.g->tensors[r.g->inputs[i]];
        for (int d = 0; d < IR_MAX_RANK; d++) {
            oc_free(t->dim_params[d]);
            t->dim_params[d] = NULL;
        }
        ir_tensor_set_shape(t, in.rank, in.dims);
        t->dtype = in.dtype;
        ir_tensor_set_data(t, in.data, in.data_bytes);
        /* an input some node takes as a plan-time value (ScatterND's indices) is one, and so
         * is an integer input, as outcore-run's host computes integer glue from the model's
         * integer inputs before each step (host_inputs.h: a loss's labels masked), and a
         * float64 one (no kernel computes in float64: it can only fold) */
        if (folds || takes_as_constant(r.g, r.g->inputs[i]) ||
            (!ir_dtype_is_compute(t->dtype) && t->dtype != IR_DTYPE_BOOL))
            t->kind = IR_KIND_CONSTANT;
        ir_tensor_free_fields(&in);
    }
    if (ir_infer_shapes(r.g, &err)) {
        snprintf(msg, cap, "%s", err.msg);
        v = V_REJECTED;
        goto out;
    }
    r.buf = calloc((size_t)r.g->n_tensors, sizeof *r.buf);
    for (int i = 0; i < r.g->n_tensors; i++) {
        ir_tensor *t = &r.g->tensors[i];
        int64_t bytes = 0;
        if (!ir_tensor_bytes(t, &bytes)) continue;
        r.buf[i] = calloc(1, (size_t)bytes + 1);
        if (t->data_src == IR_DATA_INLINE &&
            (t->producer < 0 || folds || t->kind == IR_KIND_CONSTANT) &&
            t->data_bytes == (size_t)bytes)
            memcpy(r.buf[i], t->data, (size_t)bytes);
    }
    for (int ni = 0; ni < r.g->n_nodes; ni++) {
        const ir_node *n = &r.g->nodes[ni];
        /* folded by shape inference (buffers above): a plan-time op, or any op whose
         * outputs all became plan-time values (a lowered Einsum's shape arithmetic) */
        bool folded = true;
        for (int i = 0; i < n->n_outputs; i++) {
            const ir_tensor *t = n->outputs[i] >= 0 ? &r.g->tensors[n->outputs[i]] : NULL;
            folded = folded && t && t->kind == IR_KIND_CONSTANT && t->data_src == IR_DATA_INLINE;
        }
        if (is_fold_op(n->op) || (folded && n->n_outputs > 0)) continue;
        void *in[64] = {0}, *outp[64] = {0};
        assert_true(n->n_inputs <= 64 && n->n_outputs <= 64);
        for (int i = 0; i < n->n_inputs; i++)
            in[i] = n->inputs[i] >= 0 ? r.buf[n->inputs[i]] : NULL;
        for (int i = 0; i < n->n_outputs; i++)
            outp[i] = n->outputs[i] >= 0 ? r.buf[n->outputs[i]] : NULL;
        size_t sb = cpu_kernel_scratch_bytes(r.g, n);
        void *scratch = sb ? malloc(sb) : NULL;
        kernel_args a = {.g = r.g,
                         .n = n,
                         .in = in,
                         .out = outp,
                         .seed = 1,
                         .step = 0,
                         .scratch = scratch,
                         .scratch_bytes = sb};
        int rc = cpu_kernel_run(&a, &err);
        free(scratch);
        if (rc) {
            snprintf(msg, cap, "%s", err.msg);
            v = V_UNSUPPORTED;
            goto out;
        }
    }
    for (int k = 0; k < r.g->n_outputs; k++) {
        ir_tensor want;
        snprintf(path, sizeof path, "%s/%s/output_%d.pb", dir, set, k);
        if (onnx_read_tensor_file(path, &want, &err)) {
            snprintf(msg, cap, "%s", err.msg);
            v = V_FAIL;
            goto out;
        }
        bool ok = compare_output(&r, k, &want, msg, cap, note);
        ir_tensor_free_fields(&want);
        if (!ok) {
            v = V_FAIL;
            goto out;
        }
    }
out:
    run_state_free(&r);
    return v;
}

static verdict run_case(const char *dir, char *msg, size_t cap, const char **note) {
    DIR *d = opendir(dir);
    if (!d) return V_NONE;
    char *sets[64];
    int ns = 0;
    for (struct dirent *e; (e = readdir(d)) && ns < 64;)
        if (strncmp(e->d_name, "test_data_set_", 14) == 0) sets[ns++] = strdup(e->d_name);
    closedir(d);
    qsort(sets, (size_t)ns, sizeof *sets, cmp_str);
    verdict v = ns ? V_PASS : V_FAIL;
    if (!ns) snprintf(msg, cap, "no test_data_set_*");
    for (int i = 0; i < ns; i++) {
        if (v == V_PASS) v = run_set(dir, sets[i], msg, cap, note);
        free(sets[i]);
    }
    return v;
}

/* Runs every test_* case under root, one line each; counts by verdict. refused: the
 * cases whose names end in "_refused" (which must be REJECTED). */
static void run_root(const char *root, int count[V__COUNT], int *refused_ok, int *refused_bad) {
    DIR *d = opendir(root);
    if (!d) fail_msg("conformance data not found at %s", root);
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "test_", 5) != 0) continue;
        if (n == cap) names = realloc(names, (cap = cap ? 2 * cap : 256) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char dir[1024], model[1100], msg[1200] = "", missing[512];
        const char *note = NULL;
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        snprintf(model, sizeof model, "%s/model.onnx", dir);
        verdict v = classify_ops(model, missing, sizeof missing);
        if (v == V_SKIP) snprintf(msg, sizeof msg, "no cpu kernel for: %s", missing);
        else if (v == V_PASS) v = run_case(dir, msg, sizeof msg, &note);
        size_t len = strlen(names[i]);
        if (refused_ok && len > 8 && strcmp(names[i] + len - 8, "_refused") == 0) {
            bool ok = v == V_REJECTED && *msg;
            *(ok ? refused_ok : refused_bad) += 1;
            printf("%-11s %s: %s\n", ok ? "REFUSED" : "NOT-REFUSED", names[i], msg);
            free(names[i]);
            continue;
        }
        count[v]++;
        if (v != V_NONE)
            printf("%-11s %s%s%s%s%s%s\n", verdict_name[v], names[i], *msg ? ": " : "", msg,
                   note && v == V_PASS ? " (" : "", note && v == V_PASS ? note : "",
                   note && v == V_PASS ? ")" : "");
        free(names[i]);
    }
    free(names);
}

static void test_conformance(void **state) {
    (void)state;
    const char *root = getenv("OC_CONFORMANCE_DIR");
    int count[V__COUNT] = {0};
    run_root(root ? root : DATA_DIR, count, NULL, NULL);
    printf("conformance: %d passed, %d failed, %d unsupported, %d rejected by the importer, "
           "%d skipped (other ops), %d cases without our ops\n",
           count[V_PASS], count[V_FAIL], count[V_UNSUPPORTED], count[V_REJECTED], count[V_SKIP],
           count[V_NONE]);
    assert_int_equal(count[V_FAIL], 0);
    assert_true(count[V_PASS] >= MIN_PASS);
}

/* outcore's own cases in the same layout (tools/node_cases.py: Einsum in float32 and with an
 * ellipsis, InstanceNormalization, numpy's
 * MatMul beyond equal batch dims, activations at opsets Debian's data lacks): every one
 * passes, and every *_refused one is rejected with a message. */
static void test_project_cases(void **state) {
    (void)state;
    const char *root = getenv("OC_PROJECT_CASES_DIR");
    int count[V__COUNT] = {0}, refused = 0, not_refused = 0;
    run_root(root ? root : PROJECT_CASES_DIR, count, &refused, &not_refused);
    int others =
        count[V_FAIL] + count[V_UNSUPPORTED] + count[V_REJECTED] + count[V_SKIP] + count[V_NONE];
    printf("project cases: %d passed, %d refused as they should be, %d otherwise\n", count[V_PASS],
           refused, others + not_refused);
    assert_int_equal(others + not_refused, 0);
    assert_true(count[V_PASS] >= 88 && refused >= 7);
}

/* onnx_read_tensor_file: a known float input, an int64 one, and junk. */
static void test_read_tensor_file(void **state) {
    (void)state;
    const char *root = getenv("OC_CONFORMANCE_DIR");
    if (!root) root = DATA_DIR;
    char path[1024];
    ir_tensor t;
    oc_err err;
    snprintf(path, sizeof path, "%s/test_relu/test_data_set_0/input_0.pb", root);
    if (onnx_read_tensor_file(path, &t, &err)) fail_msg("%s", err.msg);
    assert_int_equal(t.dtype, IR_DTYPE_FLOAT);
    assert_int_equal(t.rank, 3);
    assert_true(t.dims[0] == 3 && t.dims[1] == 4 && t.dims[2] == 5);
    assert_int_equal(t.data_src, IR_DATA_INLINE);
    assert_int_equal(t.data_bytes, 3 * 4 * 5 * 4);
    ir_tensor_free_fields(&t);
    snprintf(path, sizeof path, "%s/test_reshape_reduced_dims/test_data_set_0/input_1.pb", root);
    if (onnx_read_tensor_file(path, &t, &err)) fail_msg("%s", err.msg);
    assert_int_equal(t.dtype, IR_DTYPE_INT64);
    const int64_t *v;
    int64_t nv;
    assert_true(ir_tensor_int64_values(&t, &v, &nv));
    assert_true(nv == 2 && v[0] == 2 && v[1] == 12);
    ir_tensor_free_fields(&t);
    FILE *f = fopen("/tmp/oc_junk_tensor.pb", "wb");
    assert_non_null(f);
    fputs("\xff\xff\xff junk", f);
    fclose(f);
    assert_int_equal(onnx_read_tensor_file("/tmp/oc_junk_tensor.pb", &t, &err), OC_ERR);
    assert_non_null(strstr(err.msg, "/tmp/oc_junk_tensor.pb"));
    assert_null(t.name);
    remove("/tmp/oc_junk_tensor.pb");
    assert_int_equal(onnx_read_tensor_file("/nonexistent/x.pb", &t, &err), OC_ERR);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_read_tensor_file),
                                       cmocka_unit_test(test_conformance),
                                       cmocka_unit_test(test_project_cases)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
