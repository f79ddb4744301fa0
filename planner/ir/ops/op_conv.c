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
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

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
        if (!op_is_value(b) || !op_data_zero(b))
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

/* Node `node`'s window when its pads differ at some dim's two ends (explicit pads, or auto_pad
 * SAME_UPPER / SAME_LOWER with an even span: torch's padding="same" with an even kernel), which
 * cuDNN does not take: the pads both ends share (common, ONNX's begins-then-ends) and the rest
 * at each end (extra_begin, extra_end, per spatial dim). False when the pads are equal, or the
 * inputs or attributes are not right (the op's infer names what is wrong). */
static bool unequal_pads(ir_graph *g, int node, int *nsp, int64_t *common, int64_t *extra_begin,
                         int64_t *extra_end) {
    const ir_node *n = &g->nodes[node];
    ir_tensor *x = ir_node_in(g, n, 0), *w = ir_node_in(g, n, 1);
    if (!x || !w || !ir_tensor_shape_known(x) || !ir_tensor_shape_known(w) || x->rank < 3 ||
        w->rank != x->rank)
        return false;
    *nsp = x->rank - 2;
    op_window win;
    oc_err ignored;
    if (op_window_read(n, *nsp, x->dims + 2, w->dims + 2, &win, &ignored)) return false;
    bool unequal = false;
    for (int i = 0; i < *nsp; i++) {
        int64_t m = win.pad_begin[i] < win.pad_end[i] ? win.pad_begin[i] : win.pad_end[i];
        common[i] = common[*nsp + i] = m;
        extra_begin[i] = win.pad_begin[i] - m;
        extra_end[i] = win.pad_end[i] - m;
        unequal = unequal || extra_begin[i] || extra_end[i];
    }
    return unequal;
}

/* The window's explicit pads made `common` (auto_pad dropped). */
static void set_pads(ir_graph *g, int node, int nsp, const int64_t *common) {
    op_rewrite_attr_drop(g, node, "auto_pad");
    op_rewrite_attr_drop(g, node, "pads");
    op_rewrite_attr_ints(g, node, "pads", 2 * nsp, common);
}

/* Unequal pads (unequal_pads): the extra becomes a Pad of zeros before the Conv
 * ("<conv>/padded"; the planner counts its bytes, its gradient is PadGrad's), the Conv keeping
 * the common pads. Both backends run the pair (padded zeros add nothing to the sums). */
static int conv_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    (void)err;
    int nsp;
    int64_t common[2 * IR_MAX_RANK], eb[IR_MAX_RANK], ee[IR_MAX_RANK];
    if (!unequal_pads(g, node, &nsp, common, eb, ee)) return OC_OK;
    int r = nsp + 2, xt = g->nodes[node].inputs[0], padded;
    int64_t pads[2 * IR_MAX_RANK] = {0}; /* begins then ends, every dim */
    for (int i = 0; i < nsp; i++) pads[2 + i] = eb[i], pads[r + 2 + i] = ee[i];
    char *base = oc_strdup(g->nodes[node].name);
    if (g->opset >= 11) {
        int pt = op_rewrite_ints(g, base, "pads", 2 * r, pads);
        padded = op_rewrite_insert(g, node, base, "padded", OP_PAD, xt, pt, -1);
    } else {
        padded = op_rewrite_insert(g, node, base, "padded", OP_PAD, xt, -1, -1);
        op_rewrite_attr_ints(g, node, "pads", 2 * r, pads);
    }
    ir_node_set_input(g, node + 1, 0, padded);
    set_pads(g, node + 1, nsp, common);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* Unequal pads on a ConvTranspose crop its output unequally: it keeps the common pads,
 * writing "<node>/uncropped", and a Slice after it crops the extra at each end (its gradient
 * is SliceGrad's). */
static int conv_transpose_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    (void)err;
    const ir_node *n = &g->nodes[node];
    if (strcmp(ir_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") != 0 ||
        ir_attr_find(n, "output_shape"))
        return OC_OK; /* refused by conv_transpose_infer */
    int nsp;
    int64_t common[2 * IR_MAX_RANK], eb[IR_MAX_RANK], ee[IR_MAX_RANK];
    oc_err check; /* a crop past the output (extent <= 0): left for infer to refuse, named */
    if (!unequal_pads(g, node, &nsp, common, eb, ee) ||
        conv_transpose_infer(g, &g->nodes[node], g->opset, &check))
        return OC_OK;
    int64_t starts[IR_MAX_RANK], ends[IR_MAX_RANK], axes[IR_MAX_RANK];
    for (int i = 0; i < nsp; i++) {
        starts[i] = eb[i];
        ends[i] = ee[i] ? -ee[i] : INT64_MAX;
        axes[i] = 2 + i;
    }
    char *base = oc_strdup(g->nodes[node].name);
    int y = g->nodes[node].outputs[0];
    set_pads(g, node, nsp, common);
    int full = op_rewrite_redirect(g, node, base, "uncropped");
    if (g->opset >= 10) {
        int st = op_rewrite_ints(g, base, "crop_starts", nsp, starts);
        int en = op_rewrite_ints(g, base, "crop_ends", nsp, ends);
        int ax = op_rewrite_ints(g, base, "crop_axes", nsp, axes);
        op_rewrite_insert(g, node + 1, base, "crop", OP_SLICE, full, st, y);
        ir_node_add_input(g, node + 1, en);
        ir_node_add_input(g, node + 1, ax);
    } else {
        op_rewrite_insert(g, node + 1, base, "crop", OP_SLICE, full, -1, y);
        op_rewrite_attr_ints(g, node + 1, "starts", nsp, starts);
        op_rewrite_attr_ints(g, node + 1, "ends", nsp, ends);
        op_rewrite_attr_ints(g, node + 1, "axes", nsp, axes);
    }
    oc_free(base);
    *changed = true;
    return OC_OK;
}

const op_def op_def_conv = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = conv_roles,
    .n_roles = 3,
    .infer = conv_infer,
    .lower = conv_lower,
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
    .lower = conv_transpose_lower,
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
