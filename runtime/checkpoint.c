/* checkpoint.c — see checkpoint.h. */
#include "checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dataset.h"
#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/out_file.h"
#include "ir/ops/op_table.h"
#include "plan/plan_file.h"
#include "train/autocast.h"
#include "train/channels_last.h"

static bool saved_kind(const train_graph *tg, int t, bool with_opt) {
    const ir_tensor *s = &tg->g->tensors[t];
    return s->is_initializer && tg->alias_of[t] < 0 &&
           (s->kind == IR_KIND_PARAMETER || s->kind == IR_KIND_STATE ||
            (with_opt && s->kind == IR_KIND_OPT_STATE));
}

/* Fills s (its arrays: the caller frees skip and extra) for the forward model
 * with x's current weights; ck non-NULL: with the optimizer state too. */
static int save_spec(rt_exec *x, train_graph *tg, const rt_checkpoint *ck, onnx_export_spec *spec,
                     char text[4][32], const char *meta[8], int *data_inputs, int *out,
                     oc_err *err) {
    ir_graph *g = tg->g;
    int *extra = oc_malloc((size_t)g->n_tensors * sizeof *extra), n_extra = 0, rc = OC_OK;
    for (int t = 0; t < g->n_tensors && rc == OC_OK; t++) {
        if (!saved_kind(tg, t, ck != NULL)) continue;
        ir_tensor *s = &g->tensors[t];
        int64_t bytes = 0;
        ir_tensor_bytes(s, &bytes);
        void *buf = oc_malloc((size_t)(bytes ? bytes : 1));
        rc = rt_exec_read(x, t, buf, err);
        if (rc == OC_OK) ir_tensor_set_data(s, buf, (size_t)bytes);
        oc_free(buf);
        if (s->kind == IR_KIND_OPT_STATE) extra[n_extra++] = t;
    }
    int loss_node = tg->n_forward - 1;
    /* The forward model only: a plan's SwapOut/SwapIn nodes and the nodes the
     * appended loss reads through (outcore/: the scores and labels as rows) stay
     * out; its output is what those read. The project-domain ops the forward
     * graph holds stay (the importer takes them back: FusedAttention, a lowered
     * ArgMax's TopKOffsets, a scatter-add's GatherGrad); BatchNormRelu, ConvRelu
     * and Linear are written as the chains they fused, a Gelu below opset 20 as
     * its decomposition. */
    bool *skip = oc_calloc((size_t)g->n_nodes, sizeof(bool));
    for (int i = 0; i < loss_node; i++)
        skip[i] = g->nodes[i].op == OP_SWAP_OUT || g->nodes[i].op == OP_SWAP_IN ||
                  strncmp(g->nodes[i].name, "outcore/", 8) == 0;
    /* --precision bf16|fp16: the float32 model, without autocast's Casts;
     * --layout nhwc: the model's own layout, without the layout Transposes */
    int *source = oc_malloc((size_t)g->n_tensors * sizeof *source);
    for (int t = 0; t < g->n_tensors; t++) source[t] = -1;
    for (int i = 0; i < loss_node; i++)
        if (autocast_is_cast(&g->nodes[i]) || channels_last_is_conversion(&g->nodes[i])) {
            skip[i] = true;
            source[g->nodes[i].outputs[0]] = g->nodes[i].inputs[0];
        }
    *out = g->nodes[loss_node].inputs[0];
    for (int p = g->tensors[*out].producer; p >= 0 && p < loss_node && skip[p];
         p = g->tensors[*out].producer)
        *out = g->nodes[p].inputs[0];
    int n_meta = 0;
    if (ck) {
        snprintf(text[0], 32, "%" PRId64, ck->step);
        snprintf(text[1], 32, "%" PRIu64, ck->seed);
        snprintf(text[2], 32, "%" PRId64, ck->samples);
        snprintf(text[3], 32, "%" PRId64, ck->batch);
        const char *kv[] = {
            "outcore.checkpoint.step",    text[0], "outcore.checkpoint.seed",  text[1],
            "outcore.checkpoint.samples", text[2], "outcore.checkpoint.batch", text[3]};
        memcpy(meta, kv, sizeof kv);
        n_meta = 4;
    }
    int n_data = train_data_inputs(tg, data_inputs, RT_DATA_MAX); /* the model's inputs */
    for (int i = 0; i < n_data && i < RT_DATA_MAX; i++) data_inputs[i] = g->inputs[data_inputs[i]];
    *spec = (onnx_export_spec){.node_begin = 0,
                               .node_end = loss_node,
                               .inputs = data_inputs,
                               .n_inputs = n_data < RT_DATA_MAX ? n_data : RT_DATA_MAX,
                               .outputs = out,
                               .n_outputs = 1,
                               .skip = skip,
                               .extra = extra,
                               .n_extra = n_extra,
                               .meta = meta,
                               .n_meta = n_meta,
                               .unfuse = true,
                               .source = source,
                               .half_io_as_float = tg->opts.precision != TRAIN_PRECISION_FP32,
                               .logical_layout = true,
                               .host_inline = true};
    return rc;
}

int rt_save_buffer(rt_exec *x, train_graph *tg, const rt_checkpoint *ck, uint8_t **buf, size_t *len,
                   oc_err *err) {
    onnx_export_spec s;
    char text[4][32];
    const char *meta[8];
    int data_inputs[RT_DATA_MAX], out;
    int rc = save_spec(x, tg, ck, &s, text, meta, data_inputs, &out, err);
    if (rc == OC_OK) rc = onnx_export_graph_buffer(tg->g, &s, buf, len, err);
    oc_free((void *)s.skip);
    oc_free((void *)s.extra);
    oc_free((void *)s.source);
    return rc;
}

int rt_save(rt_exec *x, train_graph *tg, const char *path, const rt_checkpoint *ck, oc_err *err) {
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = rt_save_buffer(x, tg, ck, &buf, &len, err);
    if (rc == OC_OK) rc = oc_out_write_file(path, buf, len, err);
    oc_free(buf);
    return rc;
}

static int meta_i64(const uint8_t *buf, size_t len, const char *path, const char *key, int64_t *v,
                    oc_err *err) {
    char *s = plan_file_meta_get(buf, len, key);
    int rc = s && *s ? oc_parse_int(s, 0, INT64_MAX, key, v, err) : OC_ERR;
    if (!s || !*s) oc_fail(err, "%s: not a checkpoint of outcore-run (no %s)", path, key);
    oc_free(s);
    return rc ? oc_fail_prefix(err, "%s", path) : OC_OK;
}

int rt_resume(const char *path, train_graph *tg, rt_checkpoint *ck, oc_err *err) {
    uint8_t *buf;
    size_t len;
    if (oc_read_file(path, &buf, &len, err)) return OC_ERR;
    int64_t seed = 0;
    int rc = meta_i64(buf, len, path, "outcore.checkpoint.step", &ck->step, err) ||
                     meta_i64(buf, len, path, "outcore.checkpoint.seed", &seed, err) ||
                     meta_i64(buf, len, path, "outcore.checkpoint.samples", &ck->samples, err) ||
                     meta_i64(buf, len, path, "outcore.checkpoint.batch", &ck->batch, err)
                 ? OC_ERR
                 : OC_OK;
    ck->seed = (uint64_t)seed;
    ir_graph *f = NULL;
    if (rc == OC_OK) rc = onnx_import_buffer(buf, len, path, &f, err);
    oc_free(buf);
    ir_graph *g = tg->g;
    for (int t = 0; t < g->n_tensors && rc == OC_OK; t++) {
        if (!saved_kind(tg, t, true)) continue;
        ir_tensor *d = &g->tensors[t];
        int k = ir_tensor_find(f, d->name);
        const ir_tensor *s = k >= 0 ? &f->tensors[k] : NULL;
        int64_t bytes = 0;
        ir_tensor_bytes(d, &bytes);
        if (!s || !s->is_initializer || s->data_src != IR_DATA_INLINE)
            rc = oc_fail(err, "%s: the checkpoint has no data for '%s'", path, d->name);
        else if (s->dtype != d->dtype || s->data_bytes != (size_t)bytes)
            rc = oc_fail(err, "%s: '%s' has another type or size than the model's", path, d->name);
        else ir_tensor_set_data(d, s->data, s->data_bytes);
    }
    ir_graph_free(f);
    /* Read whole (inline data only): the run's next checkpoint may replace it,
     * so a restarted job resumes with its own command line. */
    if (rc == OC_OK) oc_out_forget_input(path);
    return rc;
}
