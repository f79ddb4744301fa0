/* op_loss.c — SoftmaxCrossEntropyLoss (the appended loss) and Sum (gradient
 * accumulation): shapes and costs. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* scores (N, C), labels (N) int64 -> loss () for mean/sum or (N) for none,
 * log_prob (N, C). Class weights and extra spatial dims: rewritten at load (sce_lower). */
static int sce_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *s, *l;
    if (op_in_shaped(g, n, 0, &s, err) || op_in_shaped(g, n, 1, &l, err)) return OC_ERR;
    if (s->rank != 2 || l->rank != 1 || l->dims[0] != s->dims[0])
        return oc_fail(err, "needs scores [N, C] and labels [N]; got '%s' rank %d, '%s' rank %d",
                       s->name, s->rank, l->name, l->rank);
    if (l->dtype != IR_DTYPE_INT64 && l->dtype != IR_DTYPE_INT32)
        return oc_fail(err, "labels '%s' must be int64 or int32", l->name);
    if (ir_node_in(g, n, 2)) return oc_fail(err, "class weights are not supported");
    const char *red = ir_attr_string(n, "reduction", "mean");
    if (strcmp(red, "mean") == 0 || strcmp(red, "sum") == 0) op_set_out(g, n, 0, s->dtype, 0, NULL);
    else if (strcmp(red, "none") == 0) op_set_out(g, n, 0, s->dtype, 1, s->dims);
    else return oc_fail(err, "reduction '%s' is not one of mean, sum, none", red);
    op_set_out_like(g, n, 1, s);
    return OC_OK;
}

/* x_1..x_k (one shape, or broadcastable) -> their sum */
static int sum_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *acc;
    if (op_in_shaped(g, n, 0, &acc, err)) return OC_ERR;
    ir_tensor shape = {.name = acc->name, .dtype = acc->dtype, .rank = acc->rank};
    memcpy(shape.dims, acc->dims, sizeof shape.dims);
    for (int i = 1; i < n->n_inputs; i++) {
        ir_tensor *x;
        if (op_in_shaped(g, n, i, &x, err)) return OC_ERR;
        if (x->dtype != acc->dtype) return oc_fail(err, "input '%s' differs in type", x->name);
        if (op_broadcast(&shape, x, &shape.rank, shape.dims, err)) return OC_ERR;
    }
    op_set_out(g, n, 0, acc->dtype, shape.rank, shape.dims);
    return OC_OK;
}

/* Reduction and ignore_index (the loss and its gradient). */
int op_decode_sce(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_sce_args *p = &op_args_new(n)->sce;
    const char *red = ir_attr_string(n, "reduction", "mean");
    if (strcmp(red, "mean") == 0) p->reduction = OP_REDUCTION_MEAN;
    else if (strcmp(red, "sum") == 0) p->reduction = OP_REDUCTION_SUM;
    else if (strcmp(red, "none") == 0) p->reduction = OP_REDUCTION_NONE;
    else return oc_fail(err, "reduction '%s' is not one of mean, sum, none", red);
    const ir_attr *ig = ir_attr_find(n, "ignore_index");
    p->has_ignore_index = ig != NULL;
    p->ignore_index = ig ? ig->i : 0;
    return OC_OK;
}

/* op_def.lower: a SoftmaxCrossEntropyLoss the kernels do not take -- scores [N, C, d..] of
 * rank above 2 (a per-pixel loss) or class weights -- becomes what it is defined as:
 * LogSoftmax(scores, axis 1) (the node's log_prob output, when it has one) then
 * NegativeLogLikelihoodLoss with the same reduction, ignore_index and weights (itself
 * rewritten into ops with gradients, op_lowered.c). */
/* Soft targets (F.cross_entropy of class probabilities: distillation, mixup, label
 * smoothing done by hand; torch 2.x's default exporter writes them as the labels, outside
 * ONNX's spec): -sum over classes of targets x LogSoftmax(scores) [x weights], then the
 * reduction over every remaining element (PyTorch's mean divides by their count, weights or
 * not). Nodes "<node>/log_prob", "/weighted", "/picked", the node the reduction (or Neg). */
static int sce_soft_targets(ir_graph *g, int node, const ir_tensor *s, oc_err *err) {
    ir_node *n = &g->nodes[node];
    int st = n->inputs[0], tt = n->inputs[1], wt = n->n_inputs > 2 ? n->inputs[2] : -1, r = s->rank;
    int lp = n->n_outputs > 1 ? n->outputs[1] : -1, at = node;
    const char *red = ir_attr_string(n, "reduction", "mean");
    bool none = strcmp(red, "none") == 0, sum = strcmp(red, "sum") == 0;
    if (!none && !sum && strcmp(red, "mean") != 0)
        return oc_fail(err, "reduction '%s' is not one of mean, sum, none", red);
    char *base = oc_strdup(n->name);
    if (lp >= 0) { /* log_prob: LogSoftmax's output */
        n->n_outputs = 1;
        g->tensors[lp].producer = -1;
    }
    lp = op_rewrite_insert(g, at, base, "log_prob", OP_LOG_SOFTMAX, st, -1, lp);
    op_rewrite_attr_int(g, at++, "axis", 1);
    int t = op_rewrite_insert(g, at++, base, "weighted", OP_MUL, lp, tt, -1);
    if (wt >= 0) { /* weights (C) as (C, 1, ..) against [N, C, d..] */
        int w = op_rewrite_per_channel(g, &at, base, "class_weight", wt, r, s->dims[1]);
        t = op_rewrite_insert(g, at++, base, "class_weighted", OP_MUL, t, w, -1);
    }
    int64_t one = 1, all[IR_MAX_RANK];
    t = op_rewrite_axes(g, at++, base, "picked", OP_REDUCE_SUM, t, 1, &one, 13, -1);
    op_rewrite_attr_int(g, at - 1, "keepdims", 0);
    if (!none) t = op_rewrite_insert(g, at++, base, "per_element", OP_NEG, t, -1, -1);
    for (int d = 0; d < r - 1; d++) all[d] = d;
    op_rewrite_become(g, at, none ? OP_NEG : sum ? OP_REDUCE_SUM : OP_REDUCE_MEAN);
    ir_node_add_input(g, at, t);
    if (!none) {
        int from = sum ? 13 : 18;
        if (g->opset >= from) {
            ir_node_add_input(g, at, op_rewrite_ints(g, base, "all_axes", r - 1, all));
        } else {
            op_rewrite_attr_ints(g, at, "axes", r - 1, all);
        }
        op_rewrite_attr_int(g, at, "keepdims", 0);
    }
    oc_free(base);
    return OC_OK;
}

static int sce_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *s, *l;
    if (op_in_shaped(g, n, 0, &s, err) || op_in_shaped(g, n, 1, &l, err)) return OC_ERR;
    if (ir_dtype_is_compute(l->dtype)) { /* class probabilities, [N, C, d..] as the scores */
        if (l->rank != s->rank || memcmp(l->dims, s->dims, (size_t)s->rank * sizeof s->dims[0]))
            return oc_fail(err, "float targets '%s' must be shaped as the scores '%s'", l->name,
                           s->name);
        if (s->rank < 2) return oc_fail(err, "scores '%s' must be [N, C, d..]", s->name);
        *changed = true;
        return sce_soft_targets(g, node, s, err);
    }
    if (s->rank == 2 && !ir_node_in(g, n, 2)) return OC_OK; /* the kernels' own form */
    int st = n->inputs[0], lt = n->inputs[1], wt = n->n_inputs > 2 ? n->inputs[2] : -1;
    int lp = n->n_outputs > 1 ? n->outputs[1] : -1;
    const ir_attr *ig = ir_attr_find(n, "ignore_index");
    bool has_ig = ig != NULL;
    int64_t ignore = ig ? ig->i : 0;
    char *red = oc_strdup(ir_attr_string(n, "reduction", "mean")), *base = oc_strdup(n->name);
    if (lp >= 0) { /* log_prob: LogSoftmax's output */
        n->n_outputs = 1;
        g->tensors[lp].producer = -1;
    }
    lp = op_rewrite_insert(g, node, base, "log_prob", OP_LOG_SOFTMAX, st, -1, lp);
    op_rewrite_attr_int(g, node, "axis", 1);
    op_rewrite_become(g, node + 1, OP_NEGATIVE_LOG_LIKELIHOOD_LOSS);
    ir_node_add_input(g, node + 1, lp);
    ir_node_add_input(g, node + 1, lt);
    if (wt >= 0) ir_node_add_input(g, node + 1, wt);
    ir_attr r = {.name = "reduction", .type = IR_ATTR_STRING, .s = red};
    ir_node_add_attr(g, node + 1, &r);
    if (has_ig) op_rewrite_attr_int(g, node + 1, "ignore_index", ignore);
    oc_free(red), oc_free(base);
    *changed = true;
    return OC_OK;
}

static const op_role sce_roles[] = {OP_IN_DATA, OP_IN_DATA, OP_IN_CONST};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_softmax_cross_entropy = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 2,
    .roles = sce_roles,
    .n_roles = 3,
    .infer = sce_infer,
    .lower = sce_lower,
    .grad = op_grad_softmax_cross_entropy,
    .saved_inputs = 0x2,
    .saved_outputs = 0x2,
    .decode = op_decode_sce,
    .autocast = OP_AUTOCAST_FP32,
};

const op_def op_def_sum = {
    .min_inputs = 1,
    .max_inputs = -1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = sum_infer,
};
