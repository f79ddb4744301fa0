/* test_structure.c — the training structure record (train_structure.h): what
 * train_build derives is written once and read back field for field (phases,
 * forward partners, loss, label, every tensor kind, gradients, the saved list,
 * aliases, the in-core peak), names with tabs, newlines and backslashes
 * survive, and every malformed or disagreeing record is refused naming the
 * line and what is wrong, leaving the structure unset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ir/ops/op_table.h"
#include "loader.h"
#include "train/train_structure.h"

static train_graph *resnet18(void) {
    rt_load_opts lo = {.batch = 2, .train = train_opts_default()};
    train_graph *tg;
    rt_model_info info;
    oc_err err;
    if (rt_load("graphs/resnet18_op13.onnx", &lo, &tg, &info, &err)) fail_msg("%s", err.msg);
    return tg;
}

/* A second train_graph over the same ir_graph, filled from text. */
static int parse_into(const train_graph *tg, const char *text, train_graph *out, oc_err *err) {
    memset(out, 0, sizeof *out);
    out->g = tg->g;
    return train_structure_parse(out, text, "x.onnx", err);
}

static void release(train_graph *t) {
    oc_free(t->phase), oc_free(t->fwd_of), oc_free(t->alias_of), oc_free(t->grad_of);
    oc_free(t->saved);
}

static void round_trip_resnet18(void **state) {
    (void)state;
    train_graph *tg = resnet18();
    const ir_graph *g = tg->g;
    ir_kind *kinds = oc_malloc((size_t)g->n_tensors * sizeof *kinds);
    for (int t = 0; t < g->n_tensors; t++) kinds[t] = g->tensors[t].kind;
    char *text = train_structure_format(tg);
    train_graph b;
    oc_err err;
    if (parse_into(tg, text, &b, &err)) fail_msg("%s", err.msg);
    assert_int_equal(b.n_forward, tg->n_forward);
    assert_int_equal(b.loss_tensor, tg->loss_tensor);
    assert_int_equal(b.label_tensor, tg->label_tensor);
    assert_memory_equal(b.phase, tg->phase, (size_t)g->n_nodes * sizeof *b.phase);
    assert_memory_equal(b.fwd_of, tg->fwd_of, (size_t)g->n_nodes * sizeof(int));
    assert_memory_equal(b.alias_of, tg->alias_of, (size_t)g->n_tensors * sizeof(int));
    assert_memory_equal(b.grad_of, tg->grad_of, (size_t)g->n_tensors * sizeof(int));
    assert_int_equal(b.n_saved, tg->n_saved);
    assert_memory_equal(b.saved, tg->saved, (size_t)tg->n_saved * sizeof(int));
    for (int t = 0; t < g->n_tensors; t++) assert_int_equal(g->tensors[t].kind, kinds[t]);
    assert_int_equal(b.incore_peak_bytes, tg->incore_peak_bytes);
    int n_fwd_of = 0;
    for (int i = 0; i < g->n_nodes; i++) n_fwd_of += tg->fwd_of[i] >= 0;
    assert_true(n_fwd_of > 0 && tg->n_saved > 0); /* the record carries something */
    release(&b);
    oc_free(text), oc_free(kinds);
    train_graph_free(tg);
}

/* A one-node step (loss = Relu(x)) whose tensor names need escaping. */
static void odd_names(void **state) {
    (void)state;
    ir_graph *g = ir_graph_new();
    int64_t d[2] = {2, 3};
    int x = ir_tensor_add(g, "x\tin", IR_DTYPE_FLOAT);
    int y = ir_tensor_add(g, "y\nout\\", IR_DTYPE_FLOAT);
    int lab = ir_tensor_add(g, "lab\\tel", IR_DTYPE_INT64);
    ir_tensor_set_shape(&g->tensors[x], 2, d);
    ir_tensor_set_shape(&g->tensors[y], 2, d);
    ir_tensor_set_shape(&g->tensors[lab], 1, d);
    ir_graph_add_input(g, x);
    ir_graph_add_input(g, lab);
    int n = op_node_add(g, "loss\tnode", OP_RELU);
    ir_node_add_input(g, n, x);
    ir_node_add_output(g, n, y);
    ir_graph_add_output(g, y);
    g->tensors[x].kind = IR_KIND_INPUT;
    g->tensors[lab].kind = IR_KIND_LABEL;
    train_graph tg = {.g = g, .n_forward = 1, .loss_tensor = y, .label_tensor = lab};
    train_phase ph[1] = {TRAIN_PHASE_LOSS};
    int fwd_of[1] = {-1}, grad_of[3] = {-1, -1, -1}, saved[1] = {x};
    tg.phase = ph, tg.fwd_of = fwd_of, tg.grad_of = grad_of, tg.saved = saved, tg.n_saved = 1;
    char *text = train_structure_format(&tg);
    assert_null(strstr(text, "x\tin")); /* escaped */
    train_graph b;
    oc_err err;
    if (parse_into(&tg, text, &b, &err)) fail_msg("%s\n%s", err.msg, text);
    assert_int_equal(b.loss_tensor, y);
    assert_int_equal(b.label_tensor, lab);
    assert_int_equal(b.n_saved, 1);
    assert_int_equal(b.saved[0], x);
    assert_int_equal(g->tensors[lab].kind, IR_KIND_LABEL);
    assert_int_equal(g->tensors[x].kind, IR_KIND_INPUT);
    release(&b);
    oc_free(text);
    ir_graph_free(g);
}

/* Replaces the first line starting with field (or appends when absent) by line. */
static char *with_line(const char *text, const char *field, const char *line) {
    size_t fl = strlen(field);
    const char *at = NULL;
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, field, fl) == 0) {
            at = p;
            break;
        }
    if (!at) return oc_sprintf("%s%s\n", text, line);
    const char *end = strchr(at, '\n');
    end = end ? end + 1 : at + strlen(at);
    return oc_sprintf("%.*s%s%s%s", (int)(at - text), text, line, *line ? "\n" : "", end);
}

static void refuses(const train_graph *tg, const char *text, const char *want) {
    train_graph b;
    oc_err err;
    if (parse_into(tg, text, &b, &err) == OC_OK) fail_msg("accepted a record (wanted '%s')", want);
    if (!strstr(err.msg, want)) fail_msg("error '%s' lacks '%s'", err.msg, want);
    assert_non_null(strstr(err.msg, "x.onnx: outcore.structure line"));
    assert_null(b.phase);
    assert_null(b.saved);
}

static void malformed_records(void **state) {
    (void)state;
    train_graph *tg = resnet18();
    const ir_graph *g = tg->g;
    char *text = train_structure_format(tg);
    const char *phases = strstr(text, "\nphases ") + 8;
    int nn = g->n_nodes;
    struct {
        const char *field, *line, *want;
    } cases[] = {
        {"outcore-structure", "outcore-structure 2", "not a version-1 structure record"},
        {"phases", "phases FL", "phases do not match the graph"},
        {"loss", "", "no loss line"},
        {"loss", "loss nope", "names a tensor the graph does not have"},
        {"label", "label nope", "names a tensor the graph does not have"},
        {"fwd_of", "fwd_of 1:x", "malformed pair"},
        {"fwd_of", "fwd_of 999999:0", "malformed pair"},
        {"fwd_of", "fwd_of 0:1", "not backward"},
        {"kind", "kind weird\tinput", "unknown tensor kind"},
        {"kind", "kind parameter", "expected 'kind <kind>"},
        {"grad", "grad a\\q\tb", "bad escape"},
        {"saved", "saved nope", "names a tensor the graph does not have"},
        {"bogus", "bogus 1", "unknown field"},
        {"bogus", "bogus", "expected '<field> <value>'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = with_line(text, cases[i].field, cases[i].line);
        refuses(tg, t, cases[i].want);
        oc_free(t);
    }
    /* Phase letters: an unknown one; a forward node after the loss; a second loss. */
    char *p = oc_sprintf("phases %.*s", nn, phases);
    char *q = oc_strdup(p);
    q[7] = 'X';
    char *t = with_line(text, "phases", q);
    refuses(tg, t, "phase letters are F, L, B, U");
    oc_free(t);
    strcpy(q, p);
    q[7 + nn - 1] = 'F';
    t = with_line(text, "phases", q);
    refuses(tg, t, "a forward node after the loss node");
    oc_free(t);
    strcpy(q, p);
    q[7 + nn - 1] = 'L';
    t = with_line(text, "phases", q);
    refuses(tg, t, "more than one loss node");
    oc_free(t);
    strcpy(q, p);
    q[7] = 'B';
    t = with_line(text, "phases", q);
    refuses(tg, t, "a backward or update node before the loss node");
    oc_free(t);
    /* A loss the loss node does not produce; a label that is not an int64 input. */
    char *line = oc_sprintf("loss %s", g->tensors[g->inputs[0]].name);
    t = with_line(text, "loss", line);
    refuses(tg, t, "not produced by the loss node");
    oc_free(t), oc_free(line);
    line = oc_sprintf("label %s", g->tensors[g->inputs[0]].name);
    t = with_line(text, "label", line);
    refuses(tg, t, "not an int64 graph input");
    oc_free(t), oc_free(line);
    /* The same tensor saved twice; phases after another field. */
    line = oc_sprintf("saved %s", g->tensors[tg->saved[0]].name);
    t = oc_sprintf("%s%s\n", text, line);
    refuses(tg, t, "saved twice");
    oc_free(t), oc_free(line);
    t = oc_sprintf("outcore-structure 1\nloss x\n%s", strstr(text, "phases"));
    refuses(tg, t, "the phases line must come first");
    oc_free(t);
    refuses(tg, "", "not a version-1"); /* empty: no header */
    oc_free(p), oc_free(q), oc_free(text);
    train_graph_free(tg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_resnet18),
        cmocka_unit_test(odd_names),
        cmocka_unit_test(malformed_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
