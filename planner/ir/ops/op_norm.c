/* op_norm.c — BatchNormalization: shapes.
 * Training forms: opset <= 13 exports five outputs (Y, running_mean,
 * running_var, saved_mean, saved_var); opset >= 14 has training_mode=1 and
 * three outputs (Y, running_mean, running_var). Statistics are all (C). */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

static int bn_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (x->rank < 2) return oc_fail(err, "input '%s' must have rank >= 2", x->name);
    int64_t c = x->dims[1];
    for (int i = 1; i < 5; i++) {
        ir_tensor *p;
        if (op_in_shaped(g, n, i, &p, err)) return OC_ERR;
        if (p->rank != 1 || p->dims[0] != c)
            return oc_fail(err, "input '%s' must have shape [%" PRId64 "]", p->name, c);
    }
    int max_out = opset >= 14 ? 3 : 5;
    if (n->n_outputs > max_out)
        return oc_fail(err, "%d outputs; opset %" PRId64 " allows at most %d", n->n_outputs, opset,
                       max_out);
    if (opset >= 14 && n->n_outputs > 1 && ir_attr_int(n, "training_mode", 0) == 0)
        return oc_fail(err, "running statistics are outputs but training_mode is 0");
    /* statistics in the parameters' type (float32 when X is half: autocast) */
    op_set_out_like(g, n, 0, x);
    for (int i = 1; i < n->n_outputs; i++) op_set_out(g, n, i, ir_node_in(g, n, 3)->dtype, 1, &c);
    return OC_OK;
}

/* The tensor holding the same bits as t for the batch statistics: a swap's
 * source (a SwapIn's output is its SwapOut's input), a recompute clone's output
 * the original's (the same function of the same inputs). */
static int bn_stats_key(const ir_graph *g, int t) {
    for (int hops = 0; hops < 2 && t >= 0; hops++) {
        int p = g->tensors[t].producer;
        if (p < 0) break;
        const ir_node *n = &g->nodes[p];
        const char *of = ir_attr_string(n, "outcore_recompute_of", NULL);
        for (int i = 0; of && i < g->n_nodes; i++) {
            if (strcmp(g->nodes[i].name, of) != 0) continue;
            int k = 0;
            while (k < n->n_outputs && n->outputs[k] != t) k++;
            return k < g->nodes[i].n_outputs ? g->nodes[i].outputs[k] : t;
        }
        if ((n->op != OP_SWAP_IN && n->op != OP_SWAP_OUT) || n->n_inputs < 1) break;
        t = n->inputs[0];
    }
    return t;
}

/* epsilon, momentum, and whether batch statistics are used: opset >= 14
 * training_mode, before it the training export's extra outputs. Also the
 * gradient's (which carries epsilon) and the fused BatchNormRelu's and its
 * gradient's (op_bn_relu.c). */
int op_decode_batch_norm(const ir_graph *g, ir_node *n, oc_err *err) {
    op_bn_args *p = &op_args_new(n)->bn;
    p->epsilon = ir_attr_float(n, "epsilon", 1e-5f);
    p->momentum = ir_attr_float(n, "momentum", 0.9f);
    int x = 0;                         /* X's input slot */
    if (n->op == OP_BATCH_NORM_GRAD) { /* frozen: the running statistics are inputs 3 and 4 */
        p->training = n->n_inputs < 5;
        x = 1;
    } else if (n->op == OP_BATCH_NORM_RELU_GRAD) { /* (dY, X, scale, B [, mean, var]) */
        p->training = n->n_inputs < 6;
        x = 1;
    } else if (n->op == OP_BATCH_NORM_RELU) { /* ai.outcore: always the attribute */
        p->training = ir_attr_int(n, "training_mode", 0) != 0;
    } else {
        p->training = g->opset >= 14 ? ir_attr_int(n, "training_mode", 0) != 0 : n->n_outputs > 1;
    }
    p->stats_key = x < n->n_inputs ? bn_stats_key(g, n->inputs[x]) : -1;
    if (!(p->epsilon > 0.0f) || !(p->momentum >= 0.0f && p->momentum <= 1.0f))
        return oc_fail(err, "epsilon %g must be positive and momentum %g in [0, 1]",
                       (double)p->epsilon, (double)p->momentum);
    return OC_OK;
}

/* Mean, variance, normalise, scale: about 8 flops per element. */
static void bn_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    int64_t numel = 0;
    ir_tensor_numel(&g->tensors[n->inputs[0]], &numel);
    c->flops = 8.0 * (double)numel;
}

/* Whether a BatchNormalization statistic is made by the graph at run time (not a plan-time
 * value, an initializer, a graph input, or a plan's swapped-in copy of one). */
static bool bn_stat_computed(const ir_graph *g, int t) {
    if (t < 0) return false;
    const ir_tensor *s = &g->tensors[t];
    return s->producer >= 0 && g->nodes[s->producer].op != OP_SWAP_IN && !op_is_value(s);
}

/* op_def.lower: an inference-form BatchNormalization whose mean or variance the graph
 * computes -- torch 2.x's export of F.batch_norm(w, None, None, training=True), the weight
 * standardization of NFNets (timm's ScaledStdConv2d), its statistics made by ReduceMean --
 * is no layer with a state: it is its formula, (X - mean) / sqrt(var + epsilon) * scale + B
 * with the (C) tensors as (C, 1, ..), rewritten into those ops, whose gradients reach the
 * statistics as PyTorch's does. Nodes "<node>/<step>"; scale and B left out when plan-time
 * ones / zeros. */
static int bn_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    if (n->n_inputs != 5 || n->n_outputs != 1 ||
        (g->opset >= 14 && ir_attr_int(n, "training_mode", 0) != 0) ||
        (!bn_stat_computed(g, n->inputs[3]) && !bn_stat_computed(g, n->inputs[4])))
        return OC_OK;
    ir_tensor *in[5];
    for (int i = 0; i < 5; i++)
        if (op_in_shaped(g, n, i, &in[i], err)) return OC_ERR;
    if (in[0]->rank < 2) return oc_fail(err, "input '%s' must have rank >= 2", in[0]->name);
    int64_t c = in[0]->dims[1];
    for (int i = 0; i < 5; i++) {
        if (in[i]->dtype != IR_DTYPE_FLOAT)
            return oc_fail(err,
                           "input '%s' is %s; a BatchNormalization with computed statistics "
                           "takes float32",
                           in[i]->name, ir_dtype_name(in[i]->dtype));
        if (i > 0 && (in[i]->rank != 1 || in[i]->dims[0] != c))
            return oc_fail(err, "input '%s' must have shape [%" PRId64 "]", in[i]->name, c);
    }
    float eps = ir_attr_float(n, "epsilon", 1e-5f);
    if (!(eps > 0.0f)) return oc_fail(err, "epsilon %g must be positive", (double)eps);
    bool scale = !op_rewrite_all(in[1], 1.0f), shift = !op_rewrite_all(in[2], 0.0f);
    int r = in[0]->rank, t[5], at = node;
    memcpy(t, n->inputs, sizeof t);
    char *base = oc_strdup(n->name);
    int64_t one = 1;
    int mean = op_rewrite_per_channel(g, &at, base, "mean", t[3], r, c);
    int dev = op_rewrite_insert(g, at++, base, "centred", OP_SUB, t[0], mean, -1);
    int var = op_rewrite_per_channel(g, &at, base, "variance", t[4], r, c);
    int e = op_rewrite_fill(g, base, "epsilon", 1, &one, eps);
    int ve = op_rewrite_insert(g, at++, base, "variance_eps", OP_ADD, var, e, -1);
    int sd = op_rewrite_insert(g, at++, base, "std", OP_SQRT, ve, -1, -1);
    op_rewrite_become(g, at, OP_DIV); /* the node itself, moved up by the inserts */
    ir_node_add_input(g, at, dev);
    ir_node_add_input(g, at, sd);
    op_rewrite_affine(g, at, base, scale ? t[1] : -1, shift ? t[2] : -1, r, c);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* Running mean/var outputs update the state inputs in place. */
static const int8_t bn_aliases[] = {-1, 3, 4};

static const op_role bn_roles[] = {OP_IN_DATA, OP_IN_PARAM, OP_IN_PARAM, OP_IN_STATE, OP_IN_STATE};

const op_def op_def_batch_norm = {
    .min_inputs = 5,
    .max_inputs = 5,
    .min_outputs = 1,
    .max_outputs = 5,
    .roles = bn_roles,
    .n_roles = 5,
    .infer = bn_infer,
    .lower = bn_lower,
    .cost = bn_cost,
    .grad = op_grad_batch_norm,
    .saved_inputs = 0x1b, /* X, scale; frozen: also the running mean and var */
    .aliases = bn_aliases,
    .n_aliases = 3,
    .decode = op_decode_batch_norm,
    .autocast = OP_AUTOCAST_NORM,
};
