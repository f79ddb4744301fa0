/* op_conv.c — Conv, ConvTranspose and ConvRelu: shapes, arguments, costs.
 *   ConvRelu(X, W [, B]) -> Y = Relu(Conv(X, W) + B)   (ai.outcore; Conv's attributes)
 * is a Conv and the Relu that alone reads it as one node (train/fuse_norm_act.c;
 * --no-fuse keeps them apart): Conv's output Z is never written — cuDNN's
 * fused convolution-bias-activation applies the bias and the Relu as it
 * stores Y. Its gradient is the chain's, dZ = ReluGrad(dY, Y), then Conv's on
 * dZ (grad_conv.c; with fused_backward 1 the bias gradient comes out of the
 * pass writing dZ, ReluGradBias). Saved: X and W (as Conv), Y (as Relu).
 * Attributes besides Conv's: members (the Conv's and the Relu's names) and
 * conv_output (Z's name), so a saved model writes the chain back
 * (onnx_export.c), and fused_backward. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* A plan-time value whose bytes are all zero. */
static bool zero_value(const ir_tensor *t) {
    if (!op_is_value(t)) return false;
    for (size_t i = 0; i < t->data_bytes; i++)
        if (((const uint8_t *)t->data)[i]) return false;
    return true;
}

/* X (N, C, D1..Dk), W (M, C/group, k1..kk), B (M) -> Y (N, M, O1..Ok) */
static int conv_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *w;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    if (x->rank < 3 || w->rank != x->rank)
        return oc_fail(err, "input '%s' rank %d and weight '%s' rank %d must match and be >= 3",
                       x->name, x->rank, w->name, w->rank);
    int64_t group = ir_attr_int(n, "group", 1), cin;
    if (group <= 0 || !oc_mul_i64(w->dims[1], group, &cin) || x->dims[1] != cin ||
        w->dims[0] % group != 0)
        return oc_fail(err,
                       "channels do not match: input '%s' has %" PRId64 ", weight '%s' "
                       "expects %" PRId64 " x group %" PRId64,
                       x->name, x->dims[1], w->name, w->dims[1], group);
    ir_tensor *b = ir_node_in(g, n, 2);
    if (b && (!ir_tensor_shape_known(b) || b->rank != 1 || b->dims[0] != w->dims[0])) {
        if (!zero_value(b))
            return oc_fail(err, "bias '%s' must have shape [%" PRId64 "]", b->name, w->dims[0]);
        /* onnxscript 0.7's conv3d writes a missing bias as zeros of shape [M, 2]: no bias
         * (said once a model) */
        static const char said[] = "zero biases of another shape than [M] are taken as none";
        bool noted = false;
        for (int i = 0; i < g->n_notes && !noted; i++)
            noted = strncmp(g->notes[i], said, sizeof said - 1) == 0;
        char shape[128];
        if (!noted)
            ir_graph_note(g,
                          "%s (the default exporter's conv3d writes a missing bias so), e.g. "
                          "'%s' of shape %s at '%s'",
                          said, b->name, ir_shape_str(b, shape, sizeof shape), n->name);
        ir_node_set_input(g, (int)(n - g->nodes), 2, -1);
        b = NULL;
    }
    int nsp = x->rank - 2;
    op_window win;
    if (op_window_read(n, nsp, x->dims + 2, w->dims + 2, &win, err)) return OC_ERR;
    for (int i = 0; i < nsp; i++)
        if (win.kernel[i] != w->dims[2 + i])
            return oc_fail(err, "kernel_shape disagrees with weight '%s'", w->name);
    int64_t y[IR_MAX_RANK] = {x->dims[0], w->dims[0]};
    for (int i = 0; i < nsp; i++)
        if (op_window_out(&win, i, x->dims[2 + i], &y[2 + i], err)) return OC_ERR;
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

/* X (N, C, D..), W (C, M/group, k..), B (M) -> Y (N, M, O..) with
 * O = stride*(D-1) + output_padding + (k-1)*dilation + 1 - pad_begin - pad_end */
static int conv_transpose_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *w;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    if (x->rank < 3 || w->rank != x->rank)
        return oc_fail(err, "input rank %d and weight rank %d must match and be >= 3", x->rank,
                       w->rank);
    int64_t group = ir_attr_int(n, "group", 1);
    if (group <= 0 || x->dims[1] != w->dims[0])
        return oc_fail(err,
                       "channels do not match: input '%s' has %" PRId64 ", weight '%s' %" PRId64,
                       x->name, x->dims[1], w->name, w->dims[0]);
    if (ir_attr_find(n, "output_shape"))
        return oc_fail(err, "attribute 'output_shape' is not supported; use pads/output_padding");
    if (strcmp(ir_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") != 0)
        return oc_fail(err, "auto_pad is not supported for ConvTranspose");
    int nsp = x->rank - 2;
    op_window win;
    int64_t opad[IR_MAX_RANK];
    if (op_window_read(n, nsp, x->dims + 2, w->dims + 2, &win, err) ||
        op_attr_ints_n(n, "output_padding", nsp, 0, opad, err))
        return OC_ERR;
    int64_t y[IR_MAX_RANK] = {x->dims[0], 0};
    if (!oc_mul_i64(w->dims[1], group, &y[1]))
        return oc_fail(err, "group %" PRId64 " x %" PRId64 " output channels overflow", group,
                       w->dims[1]);
    for (int i = 0; i < nsp; i++) {
        int64_t span = (win.kernel[i] - 1) * win.dilation[i] + 1; /* bounded by op_window_read */
        if (!oc_mul_i64(win.stride[i], x->dims[2 + i] - 1, &y[2 + i]) ||
            !oc_add_i64(y[2 + i], opad[i], &y[2 + i]) ||
            !oc_add_i64(y[2 + i], span - win.pad_begin[i] - win.pad_end[i], &y[2 + i]))
            return oc_fail(err, "output extent %d overflows", i);
        if (y[2 + i] <= 0) return oc_fail(err, "output extent %d is not positive", i);
    }
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

/* The conv family's arguments: group and the window against the image side
 * (the forward input's spatial dims; the output's for ConvTranspose), with the
 * kernel taken from (and checked against) the weight or filter gradient. */
int op_decode_conv(const ir_graph *g, ir_node *n, oc_err *err) {
    int k = n->op;
    bool data = k == OP_CONV_BACKWARD_DATA || k == OP_CONV_TRANSPOSE_BACKWARD_DATA;
    bool filter = k == OP_CONV_BACKWARD_FILTER || k == OP_CONV_TRANSPOSE_BACKWARD_FILTER;
    bool transpose = k == OP_CONV_TRANSPOSE || k == OP_CONV_TRANSPOSE_BACKWARD_DATA ||
                     k == OP_CONV_TRANSPOSE_BACKWARD_FILTER;
    const ir_tensor *x = data     ? ir_node_out((ir_graph *)g, n, 0)
                         : filter ? ir_node_in((ir_graph *)g, n, 1)
                                  : ir_node_in((ir_graph *)g, n, 0);
    const ir_tensor *y =
        data || filter ? ir_node_in((ir_graph *)g, n, 0) : ir_node_out((ir_graph *)g, n, 0);
    const ir_tensor *w =
        filter ? ir_node_out((ir_graph *)g, n, 0) : ir_node_in((ir_graph *)g, n, 1);
    if (!x || !y || !w || x->rank < 3 || y->rank != x->rank || w->rank != x->rank)
        return oc_fail(err, "needs input, output and weight of one rank >= 3");
    op_conv_args *p = &op_args_new(n)->conv;
    p->group = ir_attr_int(n, "group", 1);
    if (p->group < 1 || p->group > x->dims[1] || x->dims[1] % p->group || y->dims[1] % p->group)
        return oc_fail(
            err, "group %" PRId64 " does not divide the channels (%" PRId64 " and %" PRId64 ")",
            p->group, x->dims[1], y->dims[1]);
    const int64_t *img = transpose ? y->dims + 2 : x->dims + 2;
    if (op_window_read(n, x->rank - 2, img, w->dims + 2, &p->win, err)) return OC_ERR;
    for (int i = 0; i < p->win.nsp; i++)
        if (p->win.kernel[i] != w->dims[2 + i])
            return oc_fail(err, "kernel_shape disagrees with weight '%s'", w->name);
    /* The two sides agree: batch, channels, and the window over the image side
     * gives the other side's extents (a plan's attributes are checked here). */
    int64_t wg; /* group <= x's channels (checked above): no overflow unless w is huge */
    bool ok = oc_mul_i64(w->dims[1], p->group, &wg);
    int64_t cx = transpose ? w->dims[0] : wg, cy = transpose ? wg : w->dims[0];
    if (!ok || x->dims[0] != y->dims[0] || x->dims[1] != cx || y->dims[1] != cy)
        return oc_fail(err, "'%s', '%s' and weight '%s' disagree in batch or channels", x->name,
                       y->name, w->name);
    const int64_t *other = transpose ? x->dims + 2 : y->dims + 2;
    for (int i = 0; i < p->win.nsp; i++) {
        int64_t o;
        if (op_window_out(&p->win, i, img[i], &o, err)) return OC_ERR;
        if (o != other[i])
            return oc_fail(
                err, "spatial dim %d: the window over %" PRId64 " gives %" PRId64 ", not %" PRId64,
                i, img[i], o, other[i]);
    }
    return OC_OK;
}

static void conv_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    c->flops = op_conv_flops(&g->tensors[n->inputs[0]], &g->tensors[n->outputs[0]], n);
}

/* Conv's, and a max per output element. */
static void conv_relu_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    conv_cost(g, n, c);
    int64_t numel = 0;
    ir_tensor_numel(&g->tensors[n->outputs[0]], &numel);
    c->flops += (double)numel;
}

/* A transposed conv does the work of the conv from its output to its input. */
static void conv_transpose_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    c->flops = op_conv_flops(&g->tensors[n->outputs[0]], &g->tensors[n->inputs[0]], n);
}

static const op_role conv_roles[] = {OP_IN_DATA, OP_IN_PARAM, OP_IN_PARAM};

const op_def op_def_conv = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = conv_roles,
    .n_roles = 3,
    .infer = conv_infer,
    .cost = conv_cost,
    .grad = op_grad_conv,
    .saved_inputs = 0x3,
    .decode = op_decode_conv,
    .autocast = OP_AUTOCAST_LOWER,
};

const op_def op_def_conv_transpose = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = conv_roles,
    .n_roles = 3,
    .infer = conv_transpose_infer,
    .cost = conv_transpose_cost,
    .grad = op_grad_conv_transpose,
    .saved_inputs = 0x3,
    .decode = op_decode_conv,
    .autocast = OP_AUTOCAST_LOWER,
};

const op_def op_def_conv_relu = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = conv_roles,
    .n_roles = 3,
    .infer = conv_infer,
    .cost = conv_relu_cost,
    .grad = op_grad_conv_relu,
    .saved_inputs = 0x3,  /* X, W */
    .saved_outputs = 0x1, /* Y: the Relu's mask */
    .decode = op_decode_conv,
    .autocast = OP_AUTOCAST_LOWER,
};

bool op_conv_relu_own_attr(const char *name) {
    return strcmp(name, "members") == 0 || strcmp(name, "conv_output") == 0 ||
           strcmp(name, "fused_backward") == 0;
}
