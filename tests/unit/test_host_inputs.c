/* test_host_inputs.c — integer glue run on the host (ir/host_inputs.h): RoBERTa's
 * position ids from its token ids move out of the graph at load (the graph keeps the
 * embedding Gathers and reads the ids as an input), evaluate exactly on a padded batch,
 * survive a copy and both ways of writing them (the training graph's function and a saved
 * model's inline nodes); a shape that depends on the ids' values and changes with the
 * batch is refused when evaluated, named; a node folding cannot run stays in the graph;
 * token ids only the host reads still have storage for their copy (one step's loss is the
 * model's without the host's Reshape, bitwise). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit/fixture.h"

#include "backend.h"
#include "executor.h"
#include "init.h"
#include "ir/host_inputs.h"
#include "ir/onnx_export.h"
#include "loader.h"

/* ids [2, 5] -> RoBERTa's create_position_ids_from_input_ids (pad 1) -> Gather of a
 * position table, plus the word embedding of the ids. */
static void roberta(mb_model *m) {
    mb_input(m, "ids", MB_INT64, "2,5");
    mb_init(m, "emb", MB_FLOAT, MB_DIMS(8, 3));
    mb_init(m, "pos", MB_FLOAT, MB_DIMS(8, 3));
    mb_init_int64s(m, "pad", MB_SCALAR, 1, (const int64_t[]){1});
    mb_init_int64s(m, "axis", MB_SCALAR, 1, (const int64_t[]){1});
    mb_node(m, "Equal", "eq", "ids,pad", "is_pad");
    mb_node(m, "Not", "not", "is_pad", "keep");
    mb_attr_int(m, mb_node(m, "Cast", "cast", "keep", "mask"), "to", MB_INT64);
    mb_node(m, "CumSum", "cumsum", "mask,axis", "count");
    mb_node(m, "Mul", "mul", "count,mask", "counted");
    mb_node(m, "Add", "add", "counted,pad", "position_ids");
    mb_node(m, "Gather", "word", "emb,ids", "e_word");
    mb_node(m, "Gather", "position", "pos,position_ids", "e_pos");
    mb_node(m, "Add", "sum", "e_word,e_pos", "y");
    mb_output(m, "y");
}

static const int64_t IDS[10] = {5, 7, 1, 1, 1, 1, 4, 1, 6, 1};
/* mask 1 1 0 0 0 / 0 1 0 1 0: cumsum 1 2 2 2 2 / 0 1 1 2 2, times the mask, plus 1 */
static const int64_t POSITIONS[10] = {2, 3, 1, 1, 1, 1, 2, 1, 3, 1};

/* f->m packed and loaded as a user's model (host inputs moved out); fails the test on error. */
static ir_graph *load(fixture *f) {
    ir_bind_opts b = {0};
    size_t len;
    const uint8_t *buf = mb_pack(f->m, &len);
    if (ir_load_model_buffer(buf, len, FX_PATH, &b, &f->g, &f->err)) fail_msg("%s", f->err.msg);
    return f->g;
}

static void eval_positions(ir_graph *h, const int64_t *ids, int64_t *got) {
    oc_err err;
    const void *in[] = {ids};
    void *out[] = {got};
    if (host_inputs_eval(h, in, out, &err)) fail_msg("eval: %s", err.msg);
}

static void test_position_ids_move_to_the_host(void **state) {
    fixture *f = *state;
    roberta(f->m = mb_new(17));
    ir_graph *g = load(f), *h = g->host;
    assert_non_null(h);
    assert_int_equal(h->n_nodes, 6); /* Equal, Not, Cast, CumSum, Mul, Add */
    assert_int_equal(h->n_inputs, 1);
    assert_string_equal(h->tensors[h->inputs[0]].name, "ids");
    assert_int_equal(h->n_outputs, 1);
    assert_string_equal(h->tensors[h->outputs[0]].name, "position_ids");
    assert_int_equal(g->n_nodes, 3); /* the Gathers and their sum */
    ir_tensor *p = fx_tensor(g, "position_ids");
    assert_true(p->is_graph_input && p->is_host_input);
    assert_int_equal(p->kind, IR_KIND_INPUT);
    assert_int_equal(p->producer, -1);
    assert_shape(g, "position_ids", "[2, 5]");
    assert_int_equal(ir_tensor_find(g, "mask"), -1);
    assert_int_equal(g->n_notes, 1);
    assert_contains(g->notes[0], "6 nodes run on the host each step");
    assert_contains(g->notes[0], "computing 'position_ids' from the model's integer input 'ids';");
    int64_t got[10] = {0};
    eval_positions(h, IDS, got);
    assert_memory_equal(got, POSITIONS, sizeof got);
    ir_graph *c = host_inputs_clone(h); /* a plan's rewrite carries a copy */
    memset(got, 0, sizeof got);
    eval_positions(c, IDS, got);
    assert_memory_equal(got, POSITIONS, sizeof got);
    ir_graph_free(c);
}

/* The training graph's way (a function beside the declared input) and a saved model's
 * (the nodes inline, the input not declared) give back the same program. */
static void test_written_and_read_back(void **state) {
    fixture *f = *state;
    roberta(f->m = mb_new(17));
    ir_graph *g = load(f);
    int data = ir_tensor_find(g, "ids");
    for (int inline_nodes = 0; inline_nodes < 2; inline_nodes++) {
        onnx_export_spec s = {.node_end = g->n_nodes,
                              .inputs = inline_nodes ? &data : g->inputs,
                              .n_inputs = inline_nodes ? 1 : g->n_inputs,
                              .outputs = g->outputs,
                              .n_outputs = g->n_outputs,
                              .host_inline = inline_nodes != 0};
        uint8_t *out;
        size_t out_len;
        if (onnx_export_graph_buffer(g, &s, &out, &out_len, &f->err)) fail_msg("%s", f->err.msg);
        ir_graph *r = NULL;
        int rc;
        if (inline_nodes) {
            ir_bind_opts b = {0};
            rc = ir_load_model_buffer(out, out_len, "saved.onnx", &b, &r, &f->err);
        } else {
            rc = onnx_import_buffer(out, out_len, "train.onnx", &r, &f->err) ||
                 onnx_import_host_function(out, out_len, "train.onnx", r, &f->err) ||
                 (r->host && host_inputs_infer(r->host, &f->err));
        }
        oc_free(out);
        if (rc) fail_msg("%s: %s", inline_nodes ? "inline" : "function", f->err.msg);
        assert_non_null(r->host);
        assert_int_equal(r->host->n_nodes - (inline_nodes ? 0 : 2), 6); /* + pad, axis */
        int64_t got[10] = {0};
        eval_positions(r->host, IDS, got);
        assert_memory_equal(got, POSITIONS, sizeof got);
        ir_graph_free(r);
    }
}

/* Range(0, ids[0, 0] + 1): its length is the first id plus one, 1 at plan time (the ids as
 * zeros); a batch whose first id is 6 makes it 7, which the step cannot take. */
static void test_shape_from_values_refused(void **state) {
    fixture *f = *state;
    f->m = mb_new(17);
    mb_input(f->m, "ids", MB_INT64, "2,4");
    mb_init(f->m, "emb", MB_FLOAT, MB_DIMS(8, 3));
    mb_init_int64s(f->m, "zero", MB_SCALAR, 1, (const int64_t[]){0});
    mb_init_int64s(f->m, "one", MB_SCALAR, 1, (const int64_t[]){1});
    mb_init_int64s(f->m, "flat", MB_DIMS(1), 1, (const int64_t[]){-1});
    mb_node(f->m, "Reshape", "flatten", "ids,flat", "ids_flat");
    mb_node(f->m, "Gather", "first", "ids_flat,zero", "mx");
    mb_node(f->m, "Add", "limit", "mx,one", "lim");
    mb_node(f->m, "Range", "range", "zero,lim,one", "r");
    mb_node(f->m, "Gather", "g", "emb,r", "y");
    mb_output(f->m, "y");
    ir_graph *h = load(f)->host;
    assert_non_null(h);
    assert_shape(f->g, "r", "[1]");
    int64_t ids[8] = {6, 1, 0, 2, 0, 0, 3, 0}, r[8];
    const void *in[] = {ids};
    void *out[] = {r};
    assert_int_equal(host_inputs_eval(h, in, out, &f->err), OC_ERR);
    assert_contains(f->err.msg,
                    "host input node 'range' (Range): 'r' has shape [7] for this batch, "
                    "the step was planned with [1] (the shape depends on the values of the "
                    "integer inputs");
    memset(ids, 0, sizeof ids); /* a batch of the planned shape evaluates */
    assert_int_equal(host_inputs_eval(h, in, out, &f->err), OC_OK);
    assert_int_equal(r[0], 0);
}

/* Random draws of the ids' shape: folding does not run them, so nothing moves. */
static void test_unfoldable_node_stays(void **state) {
    fixture *f = *state;
    f->m = mb_new(17);
    mb_input(f->m, "ids", MB_INT64, "2,4");
    mb_init(f->m, "w", MB_FLOAT, MB_DIMS(2, 4));
    mb_attr_int(f->m, mb_node(f->m, "RandomUniformLike", "draw", "ids", "u"), "dtype", MB_FLOAT);
    mb_node(f->m, "Mul", "mul", "u,w", "y");
    mb_output(f->m, "y");
    assert_null(load(f)->host);
    assert_int_equal(f->g->n_nodes, 2);
}

/* A language model over ids [2, 5] (Gather of a 8 x 3 table as the logits, 3 classes)
 * reading the ids directly, or through a Reshape only the host runs: the device then reads
 * nothing of the ids, but their copy still lands in storage of its own. */
static float lm_loss(bool reshaped) {
    mb_model *m = mb_new(17);
    mb_input(m, "ids", MB_INT64, "2,5");
    float table[24];
    for (int i = 0; i < 24; i++) table[i] = (float)((i * 7) % 11) / 10.0f;
    mb_init_floats(m, "emb", MB_DIMS(8, 3), 24, table);
    if (reshaped) {
        mb_init_int64s(m, "shape", MB_DIMS(2), 2, (const int64_t[]){2, 5});
        mb_node(m, "Reshape", "view", "ids,shape", "ids2");
    }
    mb_node(m, "Gather", "embed", reshaped ? "emb,ids2" : "emb,ids", "logits");
    mb_output(m, "logits");
    size_t len;
    const uint8_t *buf = mb_pack(m, &len);
    oc_err err;
    rt_load_opts o = {.batch = 2, .train = train_opts_default()};
    train_graph *tg;
    rt_model_info info = {0};
    rt_backend *b;
    rt_backend_opts bo = {0};
    rt_exec *x = NULL;
    rt_exec_opts eo = {.seed = 1};
    int n_init;
    float loss = -1;
    if (rt_load_buffer(buf, len, FX_PATH, &o, &tg, &info, &err)) fail_msg("%s", err.msg);
    assert_true(reshaped == (tg->g->host != NULL));
    if (rt_backend_new("cpu", &bo, &b, &err)) fail_msg("%s", err.msg);
    eo.backend = b;
    if (rt_init_missing(tg, 1, &n_init, &err) || rt_exec_new(tg, &eo, &x, &err) ||
        rt_exec_upload_initializers(x, &err))
        fail_msg("%s", err.msg);
    int64_t labels[10] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0};
    void *ids;
    assert_int_equal(rt_exec_data_buffers(x, &ids, 1), 1);
    memcpy(ids, IDS, sizeof IDS);
    memcpy(rt_exec_host_input(x, train_label_input(tg)), labels, sizeof labels);
    if (rt_exec_step(x, 0, &loss, &err)) fail_msg("%s", err.msg);
    rt_exec_free(x);
    rt_backend_free(b);
    train_graph_free(tg);
    rt_model_info_free(&info);
    mb_free(m);
    return loss;
}

static void test_ids_only_the_host_reads(void **state) {
    (void)state;
    float direct = lm_loss(false), reshaped = lm_loss(true);
    assert_true(direct > 0);
    assert_memory_equal(&direct, &reshaped, sizeof direct);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_position_ids_move_to_the_host, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_written_and_read_back, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_shape_from_values_refused, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_unfoldable_node_stays, fx_setup, fx_teardown),
        cmocka_unit_test(test_ids_only_the_host_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
