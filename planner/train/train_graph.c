/* train_graph.c — builds the training step (see train_graph.h): loss, reverse
 * walk over the forward nodes calling each op's gradient rule, gradient
 * summation, SGD updates, tensor classes and in-core liveness. */
#include <fnmatch.h>
#include <inttypes.h>
#include <string.h>

#include "ir/ops/op_args.h"
#include "train/autocast.h"
#include "train/autodiff_internal.h"
#include "train/fuse_attention.h"
#include "train/fuse_gelu.h"
#include "train/fuse_linear.h"
#include "train/skip_dropout.h"
#include "train/fuse_grad_sum.h"
#include "train/fuse_norm_act.h"
#include "train/channels_last.h"

const char *train_phase_name(train_phase p) {
    switch (p) {
    case TRAIN_PHASE_FORWARD: return "forward";
    case TRAIN_PHASE_LOSS: return "loss";
    case TRAIN_PHASE_BACKWARD: return "backward";
    case TRAIN_PHASE_UPDATE: return "update";
    }
    return "?";
}

train_opts train_opts_default(void) {
    return (train_opts){.loss = TRAIN_LOSS_SOFTMAX_CE,
                        .lr = 0.1f,
                        .momentum = 0.9f,
                        .weight_decay = 1e-4f,
                        .ignore_index = -100,
                        .beta1 = 0.9f,
                        .beta2 = 0.999f,
                        .epsilon = 1e-8f,
                        .fuse = TRAIN_FUSE_ALL,
                        .loss_scale = -1.0f,
                        .loss_scale_interval = 2000};
}

int train_data_inputs(const train_graph *tg, int *idx, int cap) {
    const ir_graph *g = tg->g;
    int n = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] != tg->label_tensor && !g->tensors[g->inputs[i]].is_host_input) {
            if (n < cap) idx[n] = i;
            n++;
        }
    return n;
}

int train_label_input(const train_graph *tg) {
    for (int i = 0; i < tg->g->n_inputs; i++)
        if (tg->g->inputs[i] == tg->label_tensor) return i;
    return -1;
}

void train_graph_free(train_graph *tg) {
    if (!tg) return;
    ir_graph_free(tg->g);
    oc_free(tg->phase);
    oc_free(tg->fwd_of);
    oc_free(tg->alias_of);
    oc_free(tg->saved);
    oc_free(tg->grad_of);
    oc_free(tg);
}

/* Whether node i only computes integers or masks nobody reads (no reader but removed
 * nodes, no graph output): index glue a load-time rewrite left behind (the Concat of
 * coordinates a device GatherND read, a Max read only for its shape). */
static bool unread_integer_node(const ir_graph *g, int i, const bool *remove, const bool *output) {
    const ir_node *n = &g->nodes[i];
    for (int o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] < 0) continue;
        const ir_tensor *y = &g->tensors[n->outputs[o]];
        if (ir_dtype_is_float(y->dtype) || output[n->outputs[o]]) return false;
        for (int c = 0; c < y->n_consumers; c++)
            if (!remove[y->consumers[c]]) return false;
    }
    return n->n_outputs > 0 && !op_def_of(n)->aliases && !op_def_of(n)->alias;
}

/* Drops nodes whose outputs were all folded to plan-time values (Constant and
 * shape subgraphs): their outputs become constant initializers. The model's
 * own initializers only they read stay, unread (a module's buffer, e.g. Swin's
 * relative-position index folded into a Gather's indices): --save writes them
 * back under their names, so the saved model still loads as a state dict. Then
 * integer glue nobody reads (unread_integer_node), to a fixed point. */
static void drop_folded_nodes(ir_graph *g) {
    bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    bool *output = oc_calloc((size_t)g->n_tensors + 1, sizeof(bool));
    for (int o = 0; o < g->n_outputs; o++) output[g->outputs[o]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        bool folded = n->n_outputs > 0;
        for (int o = 0; o < n->n_outputs; o++) {
            const ir_tensor *y = ir_node_out(g, n, o);
            if (y && (y->kind != IR_KIND_CONSTANT || y->data_src != IR_DATA_INLINE)) folded = false;
        }
        remove[i] = folded;
    }
    for (bool more = true; more;) {
        more = false;
        for (int i = g->n_nodes - 1; i >= 0; i--)
            if (!remove[i] && unread_integer_node(g, i, remove, output)) remove[i] = more = true;
    }
    oc_free(output);
    ir_keep_folded_initializers(g, remove);
    ir_graph_remove_nodes(g, remove);
    oc_free(remove);
}

/* A node of the forward phase: op(x, const int64 vals) -> a new tensor "name". */
static int add_fwd_node(train_builder *b, const char *name, op_kind op, int x, const char *cname,
                        int nv, const int64_t *vals, const char *attr) {
    ir_graph *g = b->g;
    int node = tb_add_node(b, name, op, TRAIN_PHASE_FORWARD, -1);
    ir_node_add_input(g, node, x);
    if (cname) {
        ir_node_add_input(g, node, ir_const_int64s(g, cname, nv, vals));
    } else {
        ir_attr a = {.name = (char *)attr, .type = IR_ATTR_INTS, .ints = (int64_t *)vals, .n = nv};
        ir_node_add_attr(g, node, &a);
    }
    char *oname = oc_sprintf("%s/out", name);
    int y = ir_tensor_add(g, oname, g->tensors[x].dtype);
    oc_free(oname);
    ir_node_add_output(g, node, y);
    if (op_infer(g, &g->nodes[node], b->err)) return -1;
    return y;
}

/* Scores [N, C, d1, ..] and labels [N, d1, ..] as the loss reads them: one row
 * per position, scores Transpose'd to [N, d1, .., C] and both flattened (the
 * mean over every position, as PyTorch's cross_entropy on such a tensor). */
static int add_spatial_flatten(train_builder *b, int out, int labels, int64_t C, int *scores,
                               int *targets) {
    int rank = b->g->tensors[out].rank;
    int64_t perm[IR_MAX_RANK], shape[2] = {-1, C}, flat = -1;
    perm[0] = 0;
    for (int d = 2; d < rank; d++) perm[d - 1] = d;
    perm[rank - 1] = 1;
    int t =
        add_fwd_node(b, "outcore/loss_channels_last", OP_TRANSPOSE, out, NULL, rank, perm, "perm");
    if (t < 0) return OC_ERR;
    *scores = add_fwd_node(b, "outcore/loss_rows", OP_RESHAPE, t, "outcore/loss_rows_shape", 2,
                           shape, NULL);
    *targets = add_fwd_node(b, "outcore/labels_rows", OP_RESHAPE, labels,
                            "outcore/labels_rows_shape", 1, &flat, NULL);
    return *scores < 0 || *targets < 0 ? OC_ERR : OC_OK;
}

/* A language model's output: logits [N, T, V] of a model whose input is
 * token ids [N, T] (an integer tensor): classes are the last dim. */
static bool is_sequence_output(const ir_graph *g, const ir_tensor *y) {
    if (y->rank != 3) return false;
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        if (t->kind == IR_KIND_INPUT && t->rank == 2 &&
            (t->dtype == IR_DTYPE_INT64 || t->dtype == IR_DTYPE_INT32) &&
            t->dims[0] == y->dims[0] && t->dims[1] == y->dims[1])
            return true;
    }
    return false;
}

/* Appends SoftmaxCrossEntropyLoss(output, labels) -> loss unless the model has one. */
static int add_loss(train_builder *b, const train_opts *o) {
    ir_graph *g = b->g;
    train_graph *tg = b->tg;
    tg->label_tensor = -1;
    if (g->n_outputs != 1)
        return oc_fail(b->err, "%s: the model has %d outputs; training needs exactly one",
                       g->model_path, g->n_outputs);
    int out = g->outputs[0];
    if (o->loss == TRAIN_LOSS_MODEL) {
        if (g->tensors[out].rank != 0)
            return oc_fail(b->err, "%s: --loss model needs a scalar output; '%s' has rank %d",
                           g->model_path, g->tensors[out].name, g->tensors[out].rank);
        /* The backward starts at the loss node: SoftmaxCrossEntropyLoss's rule takes
         * dL/dloss = 1 itself; any other (a loss the model writes out: F.nll_loss with class
         * weights, label smoothing, a focal loss) gets that seed as its output's gradient
         * (seed_loss_grad). */
        int p = g->tensors[out].producer;
        if (p < 0 || !ir_dtype_is_compute(g->tensors[out].dtype))
            return oc_fail(b->err,
                           "%s: --loss model: the output '%s' must be a float scalar computed "
                           "by the model",
                           g->model_path, g->tensors[out].name);
        if (p != g->n_nodes - 1)
            return oc_fail(b->err,
                           "%s: --loss model: the loss node '%s' must be the last node "
                           "(the forward ends with the loss)",
                           g->model_path, g->nodes[p].name);
        tg->phase[p] = TRAIN_PHASE_LOSS;
        tg->loss_tensor = out;
        return OC_OK;
    }
    const ir_tensor *y = &g->tensors[out];
    if (y->rank < 2 || !ir_dtype_is_compute(y->dtype))
        return oc_fail(b->err,
                       "%s: softmax cross-entropy needs an [N, C] or [N, C, d1, ..] float output; "
                       "'%s' has rank %d",
                       g->model_path, y->name, y->rank);
    /* Labels [N] or [N, d1, ..] (a class per position: segmentation), or
     * [N, T] for a sequence model's [N, T, V] (classes last). */
    int rank = y->rank;
    bool seq = is_sequence_output(g, y);
    int64_t ldims[IR_MAX_RANK], C = seq ? y->dims[2] : y->dims[1];
    ldims[0] = y->dims[0];
    if (seq) ldims[1] = y->dims[1];
    else
        for (int d = 2; d < rank; d++) ldims[d - 1] = y->dims[d];
    int labels = ir_tensor_add(g, "labels", IR_DTYPE_INT64);
    ir_tensor_set_shape(&g->tensors[labels], rank - 1, ldims);
    g->tensors[labels].kind = IR_KIND_LABEL;
    ir_graph_add_input(g, labels);
    int scores = out, targets = labels;
    if (seq) {
        int64_t shape[2] = {-1, C}, flat = -1;
        scores = add_fwd_node(b, "outcore/loss_rows", OP_RESHAPE, out, "outcore/loss_rows_shape", 2,
                              shape, NULL);
        targets = add_fwd_node(b, "outcore/labels_rows", OP_RESHAPE, labels,
                               "outcore/labels_rows_shape", 1, &flat, NULL);
        if (scores < 0 || targets < 0) return OC_ERR;
    } else if (rank > 2 && add_spatial_flatten(b, out, labels, C, &scores, &targets)) {
        return OC_ERR;
    }
    int node = tb_add_node(b, "outcore/loss", OP_SOFTMAX_CROSS_ENTROPY, TRAIN_PHASE_LOSS, -1);
    ir_node_add_input(g, node, scores);
    ir_node_add_input(g, node, targets);
    int loss = ir_tensor_add(g, "loss", IR_DTYPE_FLOAT);
    int logp = ir_tensor_add(g, "loss/log_prob", IR_DTYPE_FLOAT);
    ir_node_add_output(g, node, loss);
    ir_node_add_output(g, node, logp);
    ir_attr red = {.name = "reduction", .type = IR_ATTR_STRING, .s = "mean"};
    ir_node_add_attr(g, node, &red);
    ir_attr ign = {.name = "ignore_index", .type = IR_ATTR_INT, .i = o->ignore_index};
    ir_node_add_attr(g, node, &ign);
    if (op_infer(g, &g->nodes[node], b->err)) return OC_ERR;
    g->tensors[out].is_graph_output = false;
    g->outputs[0] = loss;
    g->tensors[loss].is_graph_output = true;
    tg->loss_tensor = loss;
    tg->label_tensor = labels;
    return OC_OK;
}

static void compute_requires_grad(train_builder *b) {
    ir_graph *g = b->g;
    for (int t = 0; t < g->n_tensors; t++)
        b->requires_grad[t] = g->tensors[t].kind == IR_KIND_PARAMETER;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        const op_def *d = op_def_of(n);
        bool any = false;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && op_input_role(d, k) != OP_IN_CONST &&
                b->requires_grad[n->inputs[k]])
                any = true;
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0)
                b->requires_grad[n->outputs[o]] =
                    any && ir_dtype_is_compute(g->tensors[n->outputs[o]].dtype);
    }
    for (int t = 0; t < g->n_tensors; t++) {
        b->pending[t] = g->tensors[t].n_consumers;
        b->n_grad_uses[t] = g->tensors[t].n_consumers;
    }
}

/* The Sum node_name of forward tensor t's partial gradients, written to a new tensor
 * out_name (t's dtype) and set in *sum; the partials stay listed (callers reset them). */
static int sum_partials(train_builder *b, int t, const char *node_name, const char *out_name,
                        train_phase phase, int fwd_of, int *sum) {
    ir_graph *g = b->g;
    int n = tb_add_node(b, node_name, OP_SUM, phase, fwd_of);
    for (int i = 0; i < b->n_partials[t]; i++) ir_node_add_input(g, n, b->partials[t][i]);
    *sum = ir_tensor_add(g, out_name, g->tensors[t].dtype);
    ir_node_add_output(g, n, *sum);
    if (op_infer(g, &g->nodes[n], b->err))
        return oc_fail_prefix(b->err, "node '%s'", g->nodes[n].name);
    return OC_OK;
}

/* Makes the gradient of forward tensor t final: its one partial, or a Sum of all. */
static int finalize_grad(train_builder *b, int t, train_phase phase, int fwd_of) {
    ir_graph *g = b->g;
    int np = b->n_partials[t];
    if (np == 0) return OC_OK;
    if (np == 1) {
        b->tg->grad_of[t] = b->partials[t][0];
        return OC_OK;
    }
    char *node_name = oc_sprintf("%s/grad_sum", g->tensors[t].name);
    char *out_name = oc_sprintf("%s/grad", g->tensors[t].name);
    int rc = sum_partials(b, t, node_name, out_name, phase, fwd_of, &b->tg->grad_of[t]);
    oc_free(node_name);
    oc_free(out_name);
    return rc;
}

/* Partial gradients of one tensor kept apart at most: past this many, they are summed as
 * they come (PyTorch's autograd adds each into a buffer as it arrives). A tensor read by
 * many (a DenseNet layer's features, by every later layer of its block; an unrolled RNN's
 * weights, by every step) then holds GRAD_FAN_IN + 1 partials at once, not one each;
 * the sums add in the same order as one Sum of all, so the bits are the same. */
#define GRAD_FAN_IN 16

/* Forward tensor t's partial gradients summed into one now (a Sum "<t>/grad_acc<k>", in the
 * backward of forward node fwd_of) when more than GRAD_FAN_IN have come and more may. */
static int accumulate_grad(train_builder *b, int t, int fwd_of) {
    if (b->n_partials[t] <= GRAD_FAN_IN || b->pending[t] <= 1) return OC_OK;
    char *name = oc_sprintf("%s/grad_acc%d", b->g->tensors[t].name, b->n_accumulated[t]);
    int s = -1;
    int rc = sum_partials(b, t, name, name, TRAIN_PHASE_BACKWARD, fwd_of, &s);
    oc_free(name);
    b->n_accumulated[t]++;
    b->partials[t][0] = s;
    b->n_partials[t] = 1;
    return rc;
}

/* A new optimizer-state tensor "<W>/<what>" shaped like W, zero at start. */
static int add_state(ir_graph *g, int w, const char *what) {
    char *name = oc_sprintf("%s/%s", g->tensors[w].name, what);
    int m = ir_tensor_add(g, name, g->tensors[w].dtype);
    oc_free(name);
    ir_tensor_set_shape(&g->tensors[m], g->tensors[w].rank, g->tensors[w].dims);
    g->tensors[m].kind = IR_KIND_OPT_STATE;
    g->tensors[m].is_initializer = true;
    return m;
}

/* A one-element float32 optimizer state "name" holding v (GradScaler's, AdamW's step count). */
static int add_scalar_state(ir_graph *g, const char *name, float v) {
    int t = ir_tensor_add(g, name, IR_DTYPE_FLOAT);
    int64_t one = 1;
    ir_tensor_set_shape(&g->tensors[t], 1, &one);
    ir_tensor_set_data(&g->tensors[t], &v, sizeof v);
    g->tensors[t].kind = IR_KIND_OPT_STATE;
    g->tensors[t].is_initializer = true;
    return t;
}

/* An output "<W>/<what>" of update node n. */
static int add_updated(ir_graph *g, int n, int w, const char *what) {
    char *name = oc_sprintf("%s/%s", g->tensors[w].name, what);
    int t = ir_tensor_add(g, name, g->tensors[w].dtype);
    oc_free(name);
    ir_node_add_output(g, n, t);
    return t;
}

static void add_float_attr(ir_graph *g, int n, const char *name, float v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_FLOAT, .f = v};
    ir_node_add_attr(g, n, &a);
}

/* The update of the k parameters ws (those a gradient reaches), in place, their
 * state new optimizer-state tensors; one node (op_update.h):
 *   SGDMomentum(W, dW, M [, scale]) -> (W', M')
 *   AdamW(W, dW, M, V [, scale [, K]]) -> (W', M', V' [, K'])
 * per parameter, or over k of them (multi-tensor; attribute "members": the k
 * per-parameter nodes' names). scale: ClipGradNorm's or GradScaler's output, or
 * -1; K, AdamW's count of the updates made (PyTorch's state['step']), with loss
 * scaling only: its skipped steps do not count. */
static int add_update(train_builder *b, const int *ws, int k, int scale) {
    ir_graph *g = b->g;
    train_graph *tg = b->tg;
    bool adam = tg->opts.optimizer == TRAIN_OPT_ADAMW, counted = adam && b->loss_scale >= 0;
    const char *opt = adam ? "adamw" : "sgd";
    int *w = oc_malloc((size_t)(k ? k : 1) * sizeof(int)), n_w = 0;
    for (int i = 0; i < k; i++)
        if (tg->grad_of[ws[i]] >= 0) w[n_w++] = ws[i]; /* else no gradient reaches it */
    if (n_w == 0) {
        oc_free(w);
        return OC_OK;
    }
    char *name = n_w == 1 ? oc_sprintf("%s/%s", g->tensors[w[0]].name, opt)
                          : oc_sprintf("%s/%s+%d", g->tensors[w[0]].name, opt, n_w - 1);
    int n = tb_add_node(b, name, adam ? OP_ADAMW : OP_SGD_MOMENTUM, TRAIN_PHASE_UPDATE, -1);
    oc_free(name);
    int *outs = oc_malloc((size_t)n_w * 4 * sizeof(int)), *counts = outs + 3 * n_w;
    for (int i = 0; i < n_w; i++) {
        int m = add_state(g, w[i], adam ? "exp_avg" : "momentum");
        int v = adam ? add_state(g, w[i], "exp_avg_sq") : -1;
        ir_node_add_input(g, n, w[i]);
        ir_node_add_input(g, n, tg->grad_of[w[i]]);
        ir_node_add_input(g, n, m);
        if (adam) ir_node_add_input(g, n, v);
        if (counted) {
            char *kname = oc_sprintf("%s/step", g->tensors[w[i]].name);
            counts[i] = add_scalar_state(g, kname, 0.0f);
            oc_free(kname);
        }
    }
    if (scale >= 0) ir_node_add_input(g, n, scale);
    for (int i = 0; counted && i < n_w; i++) ir_node_add_input(g, n, counts[i]);
    for (int i = 0; i < n_w; i++) {
        outs[3 * i] = add_updated(g, n, w[i], "updated");
        outs[3 * i + 1] = add_updated(g, n, w[i], adam ? "exp_avg/updated" : "momentum/updated");
        outs[3 * i + 2] = adam ? add_updated(g, n, w[i], "exp_avg_sq/updated") : -1;
    }
    for (int i = 0; counted && i < n_w; i++) counts[i] = add_updated(g, n, w[i], "step/updated");
    add_float_attr(g, n, "lr", tg->opts.lr);
    if (adam) {
        add_float_attr(g, n, "beta1", tg->opts.beta1);
        add_float_attr(g, n, "beta2", tg->opts.beta2);
        add_float_attr(g, n, "epsilon", tg->opts.epsilon);
    } else {
        add_float_attr(g, n, "momentum", tg->opts.momentum);
    }
    add_float_attr(g, n, "weight_decay", tg->opts.weight_decay);
    if (n_w > 1) {
        char **members = oc_malloc((size_t)n_w * sizeof(char *));
        for (int i = 0; i < n_w; i++) members[i] = oc_sprintf("%s/%s", g->tensors[w[i]].name, opt);
        ir_node_add_attr(
            g, n,
            &(ir_attr){.name = "members", .type = IR_ATTR_STRINGS, .n = n_w, .strings = members});
        for (int i = 0; i < n_w; i++) oc_free(members[i]);
        oc_free(members);
    }
    int rc = op_infer(g, &g->nodes[n], b->err);
    for (int i = 0; rc == OC_OK && i < n_w; i++) {
        g->tensors[outs[3 * i]].kind = IR_KIND_PARAMETER;
        g->tensors[outs[3 * i + 1]].kind = IR_KIND_OPT_STATE;
        if (adam) g->tensors[outs[3 * i + 2]].kind = IR_KIND_OPT_STATE;
        if (counted) g->tensors[counts[i]].kind = IR_KIND_OPT_STATE;
    }
    oc_free(w), oc_free(outs);
    return rc ? oc_fail_prefix(b->err, "node '%s'", g->nodes[n].name) : OC_OK;
}

/* A node reading [first,] every deferred parameter's final gradient. */
static int add_over_gradients(train_builder *b, const char *name, op_kind op, int first) {
    ir_graph *g = b->g;
    int n = tb_add_node(b, name, op, TRAIN_PHASE_UPDATE, -1);
    if (first >= 0) ir_node_add_input(g, n, first);
    for (int i = 0; i < b->n_deferred; i++)
        if (b->tg->grad_of[b->deferred[i]] >= 0)
            ir_node_add_input(g, n, b->tg->grad_of[b->deferred[i]]);
    return n;
}

static int new_output(ir_graph *g, int n, const char *name) {
    int t = ir_tensor_add(g, name, IR_DTYPE_FLOAT);
    ir_node_add_output(g, n, t);
    return t;
}

/* After the last gradient: --loss-scale's GradScaler (coef: 1/S or 0 to
 * skip), --clip-grad-norm's ClipGradNorm (of the unscaled gradients), then
 * each deferred update reading the resulting factor. */
static int add_deferred_updates(train_builder *b) {
    ir_graph *g = b->g;
    train_graph *tg = b->tg;
    int k = 0;
    for (int i = 0; i < b->n_deferred; i++)
        if (tg->grad_of[b->deferred[i]] >= 0) k++;
    if (k == 0) return OC_OK;
    int factor = -1;
    if (b->loss_scale >= 0) {
        int n = add_over_gradients(b, "outcore/grad_scaler", OP_GRAD_SCALER, -1);
        /* S and T first: the node reads and updates them in place */
        ir_node *sn = &g->nodes[n];
        int nin = sn->n_inputs;
        sn->inputs = oc_realloc(sn->inputs, (size_t)(nin + 2) * sizeof(int));
        memmove(sn->inputs + 2, sn->inputs, (size_t)nin * sizeof(int));
        sn->inputs[0] = b->loss_scale, sn->inputs[1] = b->scale_tracker;
        sn->n_inputs = nin + 2;
        for (int i = 0; i < 2; i++) { /* record the two reads */
            ir_tensor *x = &g->tensors[sn->inputs[i]];
            oc_grow((void **)&x->consumers, &x->cap_consumers, (size_t)x->n_consumers + 1,
                    sizeof(int));
            x->consumers[x->n_consumers++] = n;
        }
        factor = new_output(g, n, "outcore/grad_scaler/coef");
        new_output(g, n, "outcore/grad_scaler/scale/updated");
        new_output(g, n, "outcore/grad_scaler/growth_tracker/updated");
        ir_node_add_attr(g, n,
                         &(ir_attr){.name = "growth_interval",
                                    .type = IR_ATTR_INT,
                                    .i = tg->opts.loss_scale_interval});
        if (op_infer(g, &g->nodes[n], b->err))
            return oc_fail_prefix(b->err, "node '%s'", g->nodes[n].name);
    }
    if (tg->opts.clip_grad_norm > 0.0f) {
        int n = add_over_gradients(b, "outcore/clip_grad_norm", OP_CLIP_GRAD_NORM, factor);
        if (factor >= 0)
            ir_node_add_attr(g, n, &(ir_attr){.name = "prescaled", .type = IR_ATTR_INT, .i = 1});
        factor = new_output(g, n, "outcore/clip_grad_norm/scale");
        add_float_attr(g, n, "max_norm", tg->opts.clip_grad_norm);
        if (op_infer(g, &g->nodes[n], b->err))
            return oc_fail_prefix(b->err, "node '%s'", g->nodes[n].name);
    }
    if (tg->opts.fuse == TRAIN_FUSE_ALL) /* one multi-tensor update after the factor */
        return add_update(b, b->deferred, b->n_deferred, factor);
    for (int i = 0; i < b->n_deferred; i++)
        if (add_update(b, &b->deferred[i], 1, factor)) return OC_ERR;
    return OC_OK;
}

/* --loss model with a loss other than SoftmaxCrossEntropyLoss: the loss's gradient is the
 * seed, 1 ("outcore/loss_grad", a constant), or with --loss-scale the scale S as a scalar
 * (GradScaler's scaler.scale(loss)). */
static int seed_loss_grad(train_builder *b) {
    ir_graph *g = b->g;
    int loss = b->tg->loss_tensor, p = g->tensors[loss].producer;
    if (p < 0 || g->nodes[p].op == OP_SOFTMAX_CROSS_ENTROPY) return OC_OK;
    int seed;
    if (b->loss_scale >= 0) { /* S is [1]: squeezed to the loss's [] */
        int64_t zero = 0;
        int n = tb_add_node(b, "outcore/loss_grad", OP_SQUEEZE, TRAIN_PHASE_BACKWARD, p);
        ir_node_add_input(g, n, b->loss_scale);
        if (g->opset >= 13) {
            ir_node_add_input(g, n, ir_const_int64s(g, "outcore/loss_grad_axes", 1, &zero));
        } else {
            ir_attr a = {.name = "axes", .type = IR_ATTR_INTS, .n = 1, .ints = &zero};
            ir_node_add_attr(g, n, &a);
        }
        seed = ir_tensor_add(g, "outcore/loss_grad", IR_DTYPE_FLOAT);
        ir_node_add_output(g, n, seed);
        if (op_infer(g, &g->nodes[n], b->err)) return OC_ERR;
    } else {
        float one = 1.0f;
        /* written with the step */
        seed = ir_const_tensor(g, "outcore/loss_grad", IR_DTYPE_FLOAT, 0, NULL, &one);
    }
    if (g->tensors[loss].dtype != IR_DTYPE_FLOAT)
        return oc_fail(b->err, "%s: --loss model: the loss '%s' is %s, not float32", g->model_path,
                       g->tensors[loss].name, ir_dtype_name(g->tensors[loss].dtype));
    tb_add_partial(b, loss, seed);
    return OC_OK;
}

/* Walks the forward nodes in reverse, emitting each one's backward nodes and
 * each parameter's update as soon as its gradient is final (with gradient
 * clipping: every update after the last gradient). --fuse all: the parameters
 * whose gradients became final at one forward node (a BatchNorm's scale and
 * bias, a layer's weight and bias; a Linear's, a LayerNorm's) share one
 * multi-tensor update there: no gradient waits for another layer's (at most for
 * the Sum that finalizes a later member's, a parameter read twice). */
static int build_backward(train_builder *b, int n_fwd_nodes) {
    ir_graph *g = b->g;
    for (int i = n_fwd_nodes - 1; i >= 0; i--) {
        const ir_node *n = &g->nodes[i];
        const op_def *d = op_def_of(n);
        grad_ctx c = {.b = b, .fwd = i, .phase = TRAIN_PHASE_BACKWARD};
        bool wants = false;
        for (int k = 0; k < n->n_inputs; k++) wants = wants || grad_wants(&c, k);
        bool flows = b->tg->phase[i] == TRAIN_PHASE_LOSS;
        for (int o = 0; o < g->nodes[i].n_outputs; o++) {
            int y = g->nodes[i].outputs[o];
            if (y < 0) continue;
            /* may add nodes (a sum of partial gradients): g->nodes moves */
            if (finalize_grad(b, y, TRAIN_PHASE_BACKWARD, i)) return OC_ERR;
            flows = flows || b->tg->grad_of[y] >= 0;
        }
        if (wants && flows && !d->grad_zero) {
            if (!d->grad)
                return oc_fail(b->err,
                               "%s: node '%s': op '%s' has no gradient rule; it cannot "
                               "be trained",
                               g->model_path, g->nodes[i].name, g->nodes[i].op_type);
            if (d->grad(&c))
                return oc_fail_prefix(b->err, "%s: gradient of node '%s' (%s)", g->model_path,
                                      g->nodes[i].name, g->nodes[i].op_type);
            for (int k = 0; k < g->nodes[i].n_inputs; k++) /* (g->nodes moves) */
                if (g->nodes[i].inputs[k] >= 0 && accumulate_grad(b, g->nodes[i].inputs[k], i))
                    return OC_ERR;
        }
        n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0 || --b->pending[t] > 0) continue;
            if (g->tensors[t].kind != IR_KIND_PARAMETER) continue;
            if (finalize_grad(b, t, TRAIN_PHASE_BACKWARD, i)) return OC_ERR;
            if (b->tg->opts.clip_grad_norm > 0.0f || b->loss_scale >= 0) {
                b->deferred = oc_realloc(b->deferred, (size_t)(b->n_deferred + 1) * sizeof(int));
                b->deferred[b->n_deferred++] = t;
            } else if (b->tg->opts.fuse == TRAIN_FUSE_ALL) { /* one update after the loop */
                b->group = oc_realloc(b->group, (size_t)(b->n_group + 1) * sizeof(int));
                b->group[b->n_group++] = t;
            } else if (add_update(b, &t, 1, -1)) {
                return OC_ERR;
            }
            n = &g->nodes[i];
        }
        if (b->n_group && add_update(b, b->group, b->n_group, -1)) return OC_ERR;
        b->n_group = 0;
    }
    return add_deferred_updates(b);
}

void train_mark_aliases(train_graph *tg) {
    ir_graph *g = tg->g;
    oc_free(tg->alias_of);
    tg->alias_of = oc_malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof(int));
    for (int t = 0; t < g->n_tensors; t++) tg->alias_of[t] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int o = 0; o < n->n_outputs; o++) {
            int in = op_output_alias(n, o);
            if (in >= 0 && n->outputs[o] >= 0 && in < n->n_inputs && n->inputs[in] >= 0)
                tg->alias_of[n->outputs[o]] = n->inputs[in];
        }
    }
}

void train_alias_kinds(train_graph *tg) {
    ir_graph *g = tg->g;
    for (int t = 0; t < g->n_tensors; t++)
        if (tg->alias_of[t] >= 0) g->tensors[t].kind = g->tensors[tg->alias_of[t]].kind;
}

/* Classes: forward activations read in backward are saved; gradients of
 * parameters are gradients; other backward outputs are activation gradients. */
static void classify(train_graph *tg) {
    ir_graph *g = tg->g;
    bool *read_in_bwd = oc_calloc((size_t)g->n_tensors, sizeof(bool));
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (tg->phase[i] == TRAIN_PHASE_FORWARD) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) read_in_bwd[n->inputs[k]] = true;
    }
    for (int t = 0; t < g->n_tensors; t++) {
        ir_tensor *x = &g->tensors[t];
        bool fwd_made = x->producer >= 0 && tg->phase[x->producer] <= TRAIN_PHASE_LOSS;
        if (fwd_made && tg->alias_of[t] < 0)
            x->kind = read_in_bwd[t] && t != tg->loss_tensor ? IR_KIND_SAVED : IR_KIND_ACTIVATION;
        else if (x->producer >= 0 && tg->phase[x->producer] == TRAIN_PHASE_BACKWARD &&
                 tg->alias_of[t] < 0)
            x->kind = IR_KIND_ACT_GRADIENT;
    }
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == IR_KIND_PARAMETER && tg->alias_of[t] < 0 && tg->grad_of[t] >= 0)
            g->tensors[tg->grad_of[t]].kind = IR_KIND_GRADIENT;
    /* Saved list: saved activations and the inputs backward reads. */
    tg->n_saved = 0;
    tg->saved = oc_malloc((size_t)g->n_tensors * sizeof(int));
    for (int t = 0; t < g->n_tensors; t++) {
        ir_kind k = g->tensors[t].kind;
        if (k == IR_KIND_SAVED || ((k == IR_KIND_INPUT || k == IR_KIND_LABEL) && read_in_bwd[t]))
            tg->saved[tg->n_saved++] = t;
    }
    oc_free(read_in_bwd);
}

int train_view_source(const train_graph *tg, int node) {
    const ir_graph *g = tg->g;
    const ir_node *n = &g->nodes[node];
    switch (n->op) {
    case OP_RESHAPE:
    case OP_FLATTEN:
    case OP_SQUEEZE:
    case OP_UNSQUEEZE:
    case OP_IDENTITY: break;
    default: return -1;
    }
    if (n->n_inputs < 1 || n->n_outputs < 1) return -1;
    int t = n->inputs[0], o = n->outputs[0];
    if (t < 0 || o < 0 || t == o) return -1;
    const ir_tensor *x = &g->tensors[t], *y = &g->tensors[o];
    int p = x->producer;
    if (p < 0 || p >= node || op_is_swap_out(&g->nodes[p]) || y->producer != node) return -1;
    if (x->is_initializer || x->is_graph_input || x->is_graph_output || y->is_graph_output ||
        x->data || y->data)
        return -1;
    if (tg->alias_of[t] >= 0 || tg->alias_of[o] >= 0 || train_tensor_persistent(tg, t) ||
        train_tensor_persistent(tg, o))
        return -1;
    int64_t bx, by;
    if (x->dtype != y->dtype || !ir_tensor_bytes(x, &bx) || !ir_tensor_bytes(y, &by) || bx != by)
        return -1;
    return t;
}

bool train_tensor_persistent(const train_graph *tg, int t) {
    ir_kind k = tg->g->tensors[t].kind;
    return tg->alias_of[t] >= 0 || k == IR_KIND_PARAMETER || k == IR_KIND_STATE ||
           k == IR_KIND_OPT_STATE || k == IR_KIND_CONSTANT;
}

int64_t train_liveness_peak(const train_graph *tg, int *peak_node) {
    const ir_graph *g = tg->g;
    int *last = oc_malloc((size_t)g->n_tensors * sizeof(int));
    int *root = oc_malloc((size_t)g->n_tensors * sizeof(int)); /* in-place views: the source */
    int64_t persistent = 0, live = 0, peak = 0, b;
    int at = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        last[t] = x->producer;
        root[t] = t;
        if (x->is_graph_output) last[t] = g->n_nodes - 1;
        if (tg->alias_of[t] < 0 && train_tensor_persistent(tg, t) && ir_tensor_device_bytes(x, &b))
            persistent += b;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) last[g->nodes[i].inputs[k]] = i;
    for (int i = 0; i < g->n_nodes; i++) { /* a view's storage lives to its group's last use */
        int src = train_view_source(tg, i);
        if (src < 0) continue;
        int v = g->nodes[i].outputs[0];
        root[v] = root[src];
        if (last[v] > last[root[v]]) last[root[v]] = last[v];
    }
    /* Graph inputs (data, labels) are resident from the start. */
    for (int i = 0; i < g->n_inputs; i++)
        if (ir_tensor_device_bytes(&g->tensors[g->inputs[i]], &b)) live += b;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int o = 0; o < n->n_outputs; o++) {
            int t = n->outputs[o];
            if (t >= 0 && root[t] == t && !train_tensor_persistent(tg, t) &&
                ir_tensor_device_bytes(&g->tensors[t], &b))
                live += b;
        }
        if (live > peak) {
            peak = live;
            at = i;
        }
        /* Free what dies here: storage whose last use (any member's) is here. */
        for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
            int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (t < 0) continue;
            t = root[t];
            if (last[t] != i || train_tensor_persistent(tg, t)) continue;
            if (g->tensors[t].producer < 0 && !g->tensors[t].is_graph_input) continue;
            last[t] = -2; /* freed once even if listed twice */
            if (ir_tensor_device_bytes(&g->tensors[t], &b)) live -= b;
        }
    }
    oc_free(last);
    oc_free(root);
    if (peak_node) *peak_node = at;
    return persistent + peak;
}

int train_saved_readers(const train_graph *tg, int t, int *nodes, int cap) {
    const ir_tensor *x = &tg->g->tensors[t];
    int count = 0;
    for (int c = 0; c < x->n_consumers; c++) {
        int n = x->consumers[c];
        if (tg->phase[n] == TRAIN_PHASE_FORWARD) continue;
        bool dup = false;
        for (int k = 0; k < count && k < cap; k++) dup = dup || nodes[k] == n;
        if (dup) continue;
        if (count < cap) nodes[count] = n;
        count++;
    }
    return count;
}

/* An inference-form BatchNormalization (an eval-mode export; torch 2.x's
 * exporter writes every one so) trains as model.train() does: batch
 * statistics, with the exported running statistics as the initial state,
 * updated in place. The node gets its training form (opset >= 14
 * training_mode=1; before, the running statistics as outputs 1 and 2). */
static int bn_to_training(ir_graph *g, oc_err *err) {
    int count = 0;
    const char *first = NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->op != OP_BATCH_NORM || op_args_of(n)->bn.training) continue;
        if (n->n_outputs != 1)
            return oc_fail(err, "node '%s': an inference-form BatchNormalization with %d outputs",
                           n->name, n->n_outputs);
        for (int k = 3; k < 5; k++)
            if (!g->tensors[n->inputs[k]].is_initializer)
                return oc_fail(err,
                               "node '%s': running statistic '%s' is computed, not an "
                               "initializer; it cannot be trained as a state",
                               n->name, g->tensors[n->inputs[k]].name);
        if (g->opset >= 14) {
            ir_attr *a = (ir_attr *)ir_attr_find(n, "training_mode");
            if (a) a->i = 1;
            else
                ir_node_add_attr(g, i,
                                 &(ir_attr){.name = "training_mode", .type = IR_ATTR_INT, .i = 1});
        }
        for (int k = 1; k < 3; k++) {
            char *name =
                oc_sprintf("%s/%s", g->nodes[i].name, k == 1 ? "running_mean" : "running_var");
            int t = ir_tensor_add(g, name, IR_DTYPE_FLOAT);
            oc_free(name);
            ir_node_add_output(g, i, t);
        }
        if (op_infer(g, &g->nodes[i], err))
            return oc_fail_prefix(err, "node '%s' (BatchNormalization)", g->nodes[i].name);
        if (!first) first = g->nodes[i].name;
        count++;
    }
    if (count)
        ir_graph_note(
            g,
            "%d BatchNormalization nodes (first '%s') are in inference form (an eval-mode "
            "or torch 2.x export); they train with batch statistics as model.train() "
            "does, starting from the exported running statistics",
            count, first);
    return OC_OK;
}

/* --bn frozen (fine-tuning): every BatchNormalization in inference form, its
 * running statistics read, never updated; scale and bias still train. */
static int bn_freeze(ir_graph *g, oc_err *err) {
    int count = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        if (n->op != OP_BATCH_NORM) continue;
        count++;
        if (!op_args_of(n)->bn.training) continue;
        ir_attr *a = (ir_attr *)ir_attr_find(n, "training_mode");
        if (a) a->i = 0;
        for (int o = 1; o < n->n_outputs; o++) {
            int t = n->outputs[o];
            if (t >= 0 && g->tensors[t].n_consumers > 0)
                return oc_fail(err,
                               "node '%s': --bn frozen, but its statistics output '%s' is read",
                               n->name, g->tensors[t].name);
            if (t >= 0) g->tensors[t].producer = -1;
        }
        n->n_outputs = 1;
        if (op_infer(g, n, err))
            return oc_fail_prefix(err, "node '%s' (BatchNormalization)", n->name);
    }
    if (count)
        ir_graph_note(g,
                      "--bn frozen: %d BatchNormalization nodes use their running statistics "
                      "and do not update them (scale and bias train)",
                      count);
    return OC_OK;
}

/* --precision bf16|fp16 on the forward graph and its loss (train/autocast.h);
 * the phases follow the inserted Casts (forward; the loss node stays the loss). */
static int autocast_step(train_graph *tg, oc_err *err) {
    ir_graph *g = tg->g;
    ir_dtype half = train_precision_dtype(tg->opts.precision);
    int n_casts;
    if (autocast_graph(g, half, &n_casts, err))
        return oc_fail_prefix(err, "%s: --precision %s", g->model_path ? g->model_path : "model",
                              train_precision_name(tg->opts.precision));
    tg->phase = oc_realloc(tg->phase, ((size_t)g->n_nodes + 1) * sizeof *tg->phase);
    tg->fwd_of = oc_realloc(tg->fwd_of, ((size_t)g->n_nodes + 1) * sizeof *tg->fwd_of);
    int loss_node = g->tensors[tg->loss_tensor].producer, in_half = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        tg->phase[i] = i == loss_node ? TRAIN_PHASE_LOSS : TRAIN_PHASE_FORWARD;
        tg->fwd_of[i] = -1;
        const ir_node *n = &g->nodes[i];
        if (n->op != OP_CAST && n->n_outputs > 0 && n->outputs[0] >= 0 &&
            g->tensors[n->outputs[0]].dtype == half)
            in_half++;
    }
    ir_graph_note(g, "--precision %s: %d of %d forward nodes compute in %s; %d Cast nodes added",
                  train_precision_name(tg->opts.precision), in_half, g->n_nodes - n_casts,
                  ir_dtype_name(half), n_casts);
    return OC_OK;
}

/* --freeze: every parameter whose name matches one of the comma-separated patterns
 * becomes a constant (no gradient, no update: requires_grad False in PyTorch); a
 * BatchNormalization's running statistics still update. A pattern matching no
 * parameter is refused, naming it. */
static int freeze_parameters(ir_graph *g, const char *patterns, oc_err *err) {
    int frozen = 0, total = 0;
    int64_t elements = 0;
    for (const char *p = patterns; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *pat = oc_strndup(p, len);
        int matched = 0;
        total = 0;
        for (int t = 0; t < g->n_tensors; t++) {
            ir_tensor *x = &g->tensors[t];
            if (!x->is_initializer || (x->kind != IR_KIND_PARAMETER && !x->is_frozen)) continue;
            total++;
            if (fnmatch(pat, x->name, 0) != 0) continue;
            matched++;
            if (x->is_frozen) continue; /* an earlier pattern took it */
            int64_t n = 0;
            ir_tensor_numel(x, &n);
            x->kind = IR_KIND_CONSTANT, x->is_frozen = true;
            frozen++, elements += n;
        }
        if (!matched) {
            int rc = oc_fail(err, "--freeze: '%s' matches none of the model's %d parameters", pat,
                             total);
            oc_free(pat);
            return rc;
        }
        oc_free(pat);
        p += len + (end ? 1 : 0);
    }
    if (frozen == total)
        return oc_fail(err, "--freeze: '%s' freezes all %d parameters: nothing would train",
                       patterns, total);
    ir_graph_note(
        g, "--freeze: %d of %d parameters (%" PRId64 " elements) frozen: no gradient, no update",
        frozen, total, elements);
    return OC_OK;
}

int train_build(ir_graph *fwd, const train_opts *o, train_graph **out, oc_err *err) {
    *out = NULL;
    ir_dtype stored;
    if (autocast_float_masters(fwd, &stored, err)) {
        ir_graph_free(fwd);
        return OC_ERR;
    }
    if (stored != IR_DTYPE_UNDEFINED)
        ir_graph_note(fwd,
                      "the model is stored in %s: it trains with float32 master weights "
                      "(inputs fed as float32), computing in %s%s",
                      ir_dtype_name(stored),
                      o->precision == TRAIN_PRECISION_FP32
                          ? "float32"
                          : ir_dtype_name(train_precision_dtype(o->precision)),
                      o->precision == TRAIN_PRECISION_FP32 ? " (--precision bf16|fp16 to compute "
                                                             "in half)"
                                                           : "");
    if (!o->forward_only && o->freeze && freeze_parameters(fwd, o->freeze, err)) {
        ir_graph_free(fwd);
        return OC_ERR;
    }
    if (!o->forward_only && (o->bn_frozen ? bn_freeze(fwd, err) : bn_to_training(fwd, err))) {
        ir_graph_free(fwd);
        return OC_ERR;
    }
    train_graph *tg = oc_calloc(1, sizeof *tg);
    tg->g = fwd;
    tg->opts = *o;
    drop_folded_nodes(fwd);
    int n_fused = 0;
    if (o->fuse_attention && fuse_attention(fwd, &n_fused, err)) {
        oc_fail_prefix(err, "%s: fusing attention", fwd->model_path ? fwd->model_path : "model");
        train_graph_free(tg); /* and fwd */
        return OC_ERR;
    }
    if (n_fused) ir_graph_note(fwd, "%d attention blocks fused (FusedAttention)", n_fused);
    int n_norm_act = 0;
    if (o->fuse != TRAIN_FUSE_NONE &&
        fuse_norm_act(fwd, o->fuse == TRAIN_FUSE_ALL, &n_norm_act, err)) {
        oc_fail_prefix(err, "%s: fusing BatchNormalization / Conv and Relu",
                       fwd->model_path ? fwd->model_path : "model");
        train_graph_free(tg);
        return OC_ERR;
    }
    int n_gelu = 0;
    if (o->fuse != TRAIN_FUSE_NONE && fuse_gelu(fwd, &n_gelu, err)) {
        oc_fail_prefix(err, "%s: fusing GELU", fwd->model_path ? fwd->model_path : "model");
        train_graph_free(tg);
        return OC_ERR;
    }
    if (n_gelu) ir_graph_note(fwd, "%d GELU chains fused (Gelu)", n_gelu);
    int n_linear = 0;
    if (o->fuse != TRAIN_FUSE_NONE && fuse_linear(fwd, &n_linear, err)) {
        oc_fail_prefix(err, "%s: fusing MatMul and bias",
                       fwd->model_path ? fwd->model_path : "model");
        train_graph_free(tg);
        return OC_ERR;
    }
    if (n_linear) ir_graph_note(fwd, "%d MatMul [Transpose, bias] chains fused (Linear)", n_linear);
    int n_skipped = 0;
    skip_identity_dropouts(fwd, &n_skipped);
    if (n_skipped)
        ir_graph_note(fwd, "%d Dropout nodes of ratio 0 skipped (the identity)", n_skipped);
    int n_nhwc = 0, n_conversions = 0;
    if (o->channels_last && channels_last_pass(fwd, &n_nhwc, &n_conversions, err)) {
        oc_fail_prefix(err, "%s: --layout nhwc", fwd->model_path ? fwd->model_path : "model");
        train_graph_free(tg);
        return OC_ERR;
    }
    if (o->channels_last)
        ir_graph_note(fwd, "--layout nhwc: %d nodes channels-last, %d layout conversions", n_nhwc,
                      n_conversions);
    tg->phase = oc_calloc((size_t)fwd->n_nodes + 1, sizeof *tg->phase);
    tg->fwd_of = oc_malloc(((size_t)fwd->n_nodes + 1) * sizeof *tg->fwd_of);
    for (int i = 0; i < fwd->n_nodes; i++) tg->fwd_of[i] = -1;
    train_builder b = {.g = fwd, .tg = tg, .err = err, .loss_scale = -1, .scale_tracker = -1};
    int rc = add_loss(&b, o);
    if (rc == OC_OK && o->precision != TRAIN_PRECISION_FP32) rc = autocast_step(tg, err);
    if (rc == OC_OK) {
        int nt = b.n_fwd_tensors = fwd->n_tensors;
        b.requires_grad = oc_calloc((size_t)nt, sizeof(bool));
        b.partials = oc_calloc((size_t)nt, sizeof(int *));
        b.n_partials = oc_calloc((size_t)nt, sizeof(int));
        b.n_accumulated = oc_calloc((size_t)nt, sizeof(int));
        b.n_partials_seen = oc_calloc((size_t)nt, sizeof(int));
        b.n_grad_uses = oc_calloc((size_t)nt, sizeof(int));
        b.pending = oc_calloc((size_t)nt, sizeof(int));
        tg->grad_of = oc_malloc((size_t)nt * sizeof(int));
        for (int t = 0; t < nt; t++) tg->grad_of[t] = -1;
        tg->n_forward = fwd->n_nodes;
        compute_requires_grad(&b);
        float s0 = train_loss_scale(o);
        if (s0 > 0.0f && !o->forward_only) {
            b.loss_scale = add_scalar_state(fwd, "outcore/grad_scaler/scale", s0);
            b.scale_tracker = add_scalar_state(fwd, "outcore/grad_scaler/growth_tracker", 0.0f);
        }
        if (!o->forward_only) rc = seed_loss_grad(&b);
        if (rc == OC_OK && !o->forward_only) rc = build_backward(&b, tg->n_forward);
        if (rc == OC_OK && b.loss_scale >= 0 && fwd->tensors[b.loss_scale].n_consumers < 2)
            rc = oc_fail(err, "%s: --loss-scale: the loss gradient does not read the scale",
                         fwd->model_path ? fwd->model_path : "model");
        for (int t = 0; t < nt; t++) oc_free(b.partials[t]);
        oc_free(b.partials);
        oc_free(b.n_partials);
        oc_free(b.n_accumulated);
        oc_free(b.n_partials_seen);
        oc_free(b.n_grad_uses);
        oc_free(b.pending);
        oc_free(b.requires_grad);
        oc_free(b.deferred), oc_free(b.group);
    }
    if (rc) {
        train_graph_free(tg);
        return OC_ERR;
    }
    /* grad_of grows to cover every tensor (-1 past the forward ones). */
    tg->grad_of = oc_realloc(tg->grad_of, (size_t)fwd->n_tensors * sizeof(int));
    for (int t = b.n_fwd_tensors; t < fwd->n_tensors; t++) tg->grad_of[t] = -1;
    int n_sums = 0;
    if (o->fuse == TRAIN_FUSE_ALL && !o->forward_only) fuse_grad_sum(tg, &n_sums);
    train_mark_aliases(tg);
    train_alias_kinds(tg);
    classify(tg);
    tg->incore_peak_bytes = train_liveness_peak(tg, &tg->incore_peak_node);
    *out = tg;
    return OC_OK;
}
