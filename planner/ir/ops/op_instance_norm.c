/* op_instance_norm.c — InstanceNormalization(X (N, C, D..), scale (C), B (C), epsilon):
 * each (n, c) plane normalised by its own mean and biased variance, then scaled and
 * shifted by c's. PyTorch's GroupNorm exports as one (X reshaped to (N, groups, ..), scale
 * ones and B zeros, its own affine after), InstanceNorm2d as one with its parameters.
 * Rewritten at load (op_def.lower) into what runs and differentiates already:
 * - from opset 17, LayerNormalization over the dims from 2 on (the node itself, a plan-time
 *   scale of ones, no shift);
 * - below it (no LayerNormalization in the file's opset), its decomposition: ReduceMean,
 *   Sub, Mul, ReduceMean, Add epsilon, Sqrt, Div;
 * then Mul by the scale and Add of B as (C, 1, ..) tensors, each left out when plan-time
 * ones / zeros. The new nodes are named <node>/<step>. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* Below opset 17, inserted before the node at *at: *dev = X - mean, *sd = sqrt(var + eps)
 * over the dims from 2 on (the node becomes the Div of the two). */
static void decompose(ir_graph *g, int *at, const char *base, int x, int r, float eps, int *dev,
                      int *sd) {
    int64_t axes[IR_MAX_RANK], one = 1;
    for (int d = 2; d < r; d++) axes[d - 2] = d;
    int mean = op_rewrite_axes(g, (*at)++, base, "mean", OP_REDUCE_MEAN, x, r - 2, axes, 18, -1);
    *dev = op_rewrite_insert(g, (*at)++, base, "centred", OP_SUB, x, mean, -1);
    int sq = op_rewrite_insert(g, (*at)++, base, "squares", OP_MUL, *dev, *dev, -1);
    int var =
        op_rewrite_axes(g, (*at)++, base, "variance", OP_REDUCE_MEAN, sq, r - 2, axes, 18, -1);
    int e = op_rewrite_fill(g, base, "epsilon", 1, &one, eps);
    int ve = op_rewrite_insert(g, (*at)++, base, "variance_eps", OP_ADD, var, e, -1);
    *sd = op_rewrite_insert(g, (*at)++, base, "std", OP_SQRT, ve, -1, -1);
}

/* Node `node` becomes an op of kind k reading in0 and in1. */
static void become(ir_graph *g, int node, op_kind k, int in0, int in1) {
    op_rewrite_become(g, node, k);
    ir_node_add_input(g, node, in0);
    ir_node_add_input(g, node, in1);
}

static int instance_norm_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *s, *b;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &s, err) ||
        op_in_shaped(g, n, 2, &b, err))
        return OC_ERR;
    if (x->rank < 3)
        return oc_fail(err, "input '%s' has rank %d; it takes rank >= 3", x->name, x->rank);
    if (x->dtype != IR_DTYPE_FLOAT) return oc_fail(err, "input '%s' is not float32", x->name);
    int64_t c = x->dims[1];
    for (int i = 1; i < 3; i++) {
        const ir_tensor *p = i == 1 ? s : b;
        if (p->rank != 1 || p->dims[0] != c || p->dtype != x->dtype)
            return oc_fail(err, "'%s' must be float32 of shape (%" PRId64 ")", p->name, c);
    }
    float eps = ir_attr_float(n, "epsilon", 1e-5f);
    if (!(eps > 0.0f)) return oc_fail(err, "epsilon %g must be positive", (double)eps);
    char *base = oc_strdup(n->name);
    int r = x->rank, xi = n->inputs[0], si = n->inputs[1], bi = n->inputs[2];
    bool scale = !op_rewrite_all(s, 1.0f), shift = !op_rewrite_all(b, 0.0f);
    int64_t rows[IR_MAX_RANK], plane = 1; /* x's dims from 2 on: x moves when tensors are added */
    memcpy(rows, x->dims + 2, (size_t)(r - 2) * sizeof *rows);
    for (int d = 0; d + 2 < r; d++) plane *= rows[d]; /* x's bytes are bounded: no overflow */
    if (g->opset >= 17 && plane > OP_FOLD_MAX_BYTES / (int64_t)sizeof(float)) {
        oc_free(base);
        return oc_fail(err,
                       "a plane of '%s' has %" PRId64 " elements, more than its constant "
                       "scale of ones may hold",
                       x->name, plane);
    }
    if (g->opset >= 17) { /* LayerNormalization over the dims from 2 on, scale ones */
        int ones = op_rewrite_fill(g, base, "ones", r - 2, rows, 1.0f);
        become(g, node, OP_LAYER_NORM, xi, ones);
        ir_attr a = {.name = "axis", .type = IR_ATTR_INT, .i = 2};
        ir_node_add_attr(g, node, &a);
        ir_attr e = {.name = "epsilon", .type = IR_ATTR_FLOAT, .f = eps};
        ir_node_add_attr(g, node, &e);
    } else {
        int at = node, dev, sd;
        decompose(g, &at, base, xi, r, eps, &dev, &sd);
        node = at; /* moved up by the inserts */
        become(g, node, OP_DIV, dev, sd);
    }
    op_rewrite_affine(g, node, base, scale ? si : -1, shift ? bi : -1, r, c);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* Never reached: the node is rewritten before its shapes are inferred. */
static int instance_norm_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)n, (void)opset;
    return oc_fail(err, "InstanceNormalization reached shape inference unrewritten");
}

static const op_role instance_norm_roles[] = {OP_IN_DATA, OP_IN_PARAM, OP_IN_PARAM};

const op_def op_def_instance_norm = {
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = instance_norm_roles,
    .n_roles = 3,
    .infer = instance_norm_infer,
    .lower = instance_norm_lower,
};
