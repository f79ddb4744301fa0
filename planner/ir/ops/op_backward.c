/* op_backward.c — the project-domain ops that backward and update nodes use:
 * shape functions and costs. The forward ops' gradient rules (in their own
 * files) emit these. Every op here is in OC_DOMAIN. Shapes in comments. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* Output 0 takes the shape of the ints attribute "input_shape" (dims >= 0,
 * element count within int64). */
static int shape_from_attr(ir_graph *g, ir_node *n, int out, const char *attr, ir_dtype dt,
                           oc_err *err) {
    const int64_t *dims;
    int r = ir_attr_ints(n, attr, &dims);
    if (r < 0 || r > IR_MAX_RANK) return oc_fail(err, "attribute '%s' is required", attr);
    int64_t numel = 1;
    for (int i = 0; i < r; i++)
        if (dims[i] < 0 || !oc_mul_i64(numel, dims[i], &numel))
            return oc_fail(err, "attribute '%s': dim %d (%" PRId64 ") is negative or too large",
                           attr, i, dims[i]);
    op_set_out(g, n, out, dt, r, dims);
    return OC_OK;
}

static bool same_shape(const ir_tensor *a, const ir_tensor *b) {
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

static ir_dtype dtype_in(ir_graph *g, ir_node *n, int i) {
    ir_tensor *t = ir_node_in(g, n, i);
    return t ? t->dtype : IR_DTYPE_FLOAT;
}

/* dY, W -> dX (input_shape); ConvBackwardData and ConvTransposeBackwardData. */
static int backward_data_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    return shape_from_attr(g, n, 0, "input_shape", dtype_in(g, n, 0), err);
}

/* Filter gradient shapes from dY (N, M, O..) and X (N, C, D..): a Conv's dW is
 * (M, C/group, k..), a ConvTranspose's (C, M/group, k..); dB is (M) for both. */
static int filter_grad_infer(ir_graph *g, ir_node *n, bool transposed, oc_err *err) {
    ir_tensor *dy, *x;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &x, err)) return OC_ERR;
    const int64_t *k;
    int nk = ir_attr_ints(n, "kernel_shape", &k);
    if (x->rank < 3 || nk != x->rank - 2)
        return oc_fail(err, "needs an input of rank >= 3 and its 'kernel_shape'");
    int64_t group = ir_attr_int(n, "group", 1);
    if (dy->rank != x->rank || group < 1 || x->dims[1] % group || dy->dims[1] % group)
        return oc_fail(err, "group %" PRId64 " does not divide the channels of '%s' and '%s'",
                       group, dy->name, x->name);
    int64_t w[IR_MAX_RANK] = {transposed ? x->dims[1] : dy->dims[1],
                              transposed ? dy->dims[1] / group : x->dims[1] / group};
    memcpy(w + 2, k, (size_t)nk * sizeof *k);
    op_set_out(g, n, 0, x->dtype, x->rank, w);
    op_set_out(g, n, 1, x->dtype, 1, &dy->dims[1]);
    return OC_OK;
}

static int conv_filter_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    return filter_grad_infer(g, n, false, err);
}

static int conv_transpose_filter_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    return filter_grad_infer(g, n, true, err);
}

/* dY, Y / X / mask (same shape) -> dX like dY: ReluGrad, ClipGrad, DropoutGrad. */
static int out0_like_in0(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *y;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &y, err)) return OC_ERR;
    if (!same_shape(x, y)) return oc_fail(err, "'%s' and '%s' differ in shape", x->name, y->name);
    op_set_out_like(g, n, 0, x);
    return OC_OK;
}

/* ReluGrad(dY, Y [, dY2]) -> dX = (dY + dY2) where Y > 0, else 0: dY2, a
 * second partial of Y's gradient (train/fuse_grad_sum.c folds their Sum in),
 * like dY. */
static int relu_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    if (out0_like_in0(g, n, opset, err)) return OC_ERR;
    ir_tensor *dy = ir_node_in(g, n, 0), *dy2;
    if (n->n_inputs < 3 || n->inputs[2] < 0) return OC_OK;
    if (op_in_shaped(g, n, 2, &dy2, err)) return OC_ERR;
    if (!same_shape(dy, dy2) || dy2->dtype != dy->dtype)
        return oc_fail(err, "'%s' and '%s' differ in shape or type", dy->name, dy2->name);
    return OC_OK;
}

/* dY, X, scale -> dX (like X), dScale (C), dBias (C) */
static int bn_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *x, *s;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &x, err) ||
        op_in_shaped(g, n, 2, &s, err))
        return OC_ERR;
    if (!same_shape(dy, x) || x->rank < 2 || s->rank != 1 || s->dims[0] != x->dims[1])
        return oc_fail(err, "gradient '%s', input '%s' and scale '%s' do not agree in shape",
                       dy->name, x->name, s->name);
    if (n->n_inputs == 4) return oc_fail(err, "frozen statistics need both mean and var");
    for (int i = 3; i < n->n_inputs; i++) {
        ir_tensor *m;
        if (op_in_shaped(g, n, i, &m, err)) return OC_ERR;
        if (m->rank != 1 || m->dims[0] != x->dims[1])
            return oc_fail(err, "statistic '%s' is not of shape [%" PRId64 "]", m->name,
                           x->dims[1]);
    }
    op_set_out_like(g, n, 0, x);
    op_set_out_like(g, n, 1, s);
    op_set_out_like(g, n, 2, s);
    return OC_OK;
}

/* dY -> dX (input_shape): pooling grads (op_decode_pool checks the window),
 * PadGrad (op_decode_pad checks the pads). */
static int pool_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    return shape_from_attr(g, n, 0, "input_shape", dtype_in(g, n, 0), err);
}

/* dY (N, C, 1..) -> dX (input_shape: N, C, D..) */
static int global_pool_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *dy;
    if (op_in_shaped(g, n, 0, &dy, err) || pool_grad_infer(g, n, opset, err)) return OC_ERR;
    const ir_tensor *dx = ir_node_out(g, n, 0);
    bool ok = dy->rank == dx->rank && dy->rank >= 3 && dy->dims[0] == dx->dims[0] &&
              dy->dims[1] == dx->dims[1];
    for (int i = 2; ok && i < dy->rank; i++) ok = dy->dims[i] == 1;
    return ok ? OC_OK : oc_fail(err, "input_shape does not pool to the shape of '%s'", dy->name);
}

/* dY -> dX (input_shape), summing dY over the dims input_shape broadcasts. */
static int reduce_sum_to_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    ir_tensor *dy;
    if (op_in_shaped(g, n, 0, &dy, err) || pool_grad_infer(g, n, opset, err)) return OC_ERR;
    const ir_tensor *dx = ir_node_out(g, n, 0);
    bool ok = dx->rank <= dy->rank;
    for (int i = 0; ok && i < dx->rank; i++) {
        int64_t d = dx->dims[dx->rank - 1 - i], e = dy->dims[dy->rank - 1 - i];
        ok = d == e || d == 1;
    }
    return ok ? OC_OK
              : oc_fail(err, "input_shape does not broadcast to the shape of '%s'", dy->name);
}

/* ConcatGrad's outputs, one per split size: a file omits the trailing ones no gradient is
 * wanted of (an input of the Concat that needs none), as ONNX omits trailing optional
 * outputs; they come back absent (-1). */
static void concat_grad_pad_outputs(ir_graph *g, ir_node *n) {
    const int64_t *split;
    int k = ir_attr_ints(n, "split", &split);
    while (n->n_outputs >= 1 && n->n_outputs < k && k <= OP_MAX_SPLIT)
        ir_node_add_output(g, (int)(n - g->nodes), -1);
}

/* dY -> dX_1..dX_k split along axis by sizes "split" */
static int concat_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy;
    if (op_in_shaped(g, n, 0, &dy, err)) return OC_ERR;
    concat_grad_pad_outputs(g, n);
    const int64_t *split;
    int k = ir_attr_ints(n, "split", &split);
    int64_t axis;
    if (k != n->n_outputs || op_axis(ir_attr_int(n, "axis", 0), dy->rank, "axis", &axis, err))
        return oc_fail(err, "attributes 'axis' and 'split' (one size per output) are required");
    int64_t total = 0;
    for (int i = 0; i < k; i++) {
        int64_t d[IR_MAX_RANK];
        memcpy(d, dy->dims, sizeof d);
        d[axis] = split[i];
        if (split[i] < 0 || !oc_add_i64(total, split[i], &total))
            return oc_fail(err, "split sizes do not add up to the axis");
        op_set_out(g, n, i, dy->dtype, dy->rank, d);
    }
    if (total != dy->dims[axis]) return oc_fail(err, "split sizes do not add up to the axis");
    return OC_OK;
}

/* log_prob (N, C, ..), labels (N, ..) -> dScores like log_prob */
static int sce_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *lp, *lab;
    if (op_in_shaped(g, n, 0, &lp, err) || op_in_shaped(g, n, 1, &lab, err)) return OC_ERR;
    bool ok = lp->rank >= 2 && lab->rank == lp->rank - 1 && lab->dims[0] == lp->dims[0];
    for (int i = 1; ok && i < lab->rank; i++) ok = lab->dims[i] == lp->dims[i + 1];
    if (!ok)
        return oc_fail(err, "log-probabilities '%s' (N, C, ..) and labels '%s' (N, ..) disagree",
                       lp->name, lab->name);
    ir_tensor *s = ir_node_in(g, n, 2); /* the loss scale (GradScaler), optional */
    int64_t numel = 0;
    if (s && (s->dtype != IR_DTYPE_FLOAT || !ir_tensor_numel(s, &numel) || numel != 1))
        return oc_fail(err, "the loss scale '%s' must be one float", s->name);
    op_set_out_like(g, n, 0, lp);
    return OC_OK;
}

/* ---- costs ---- */

/* 2 * N * M * prod(out spatial) * C/group * prod(kernel), from the shapes of
 * the "output side" y (N, M, O..) and the "input side" x (N, C, D..). */
double op_conv_flops(const ir_tensor *x, const ir_tensor *y, const ir_node *n) {
    const int64_t *k;
    int nk = ir_attr_ints(n, "kernel_shape", &k);
    double f = 2.0 * (double)y->dims[0] * (double)y->dims[1] * (double)x->dims[1] /
               (double)ir_attr_int(n, "group", 1);
    for (int i = 2; i < y->rank; i++) f *= (double)y->dims[i];
    for (int i = 0; i < nk; i++) f *= (double)k[i];
    return f;
}

/* ConvBackwardData: the forward conv's flops (x = dX, y = dY). */
static void backward_data_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    c->flops = op_conv_flops(&g->tensors[n->outputs[0]], &g->tensors[n->inputs[0]], n);
}

static void conv_filter_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    c->flops = op_conv_flops(&g->tensors[n->inputs[1]], &g->tensors[n->inputs[0]], n);
}

/* ConvTranspose's data side is the conv's output side: swap roles. */
static void conv_transpose_data_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    c->flops = op_conv_flops(&g->tensors[n->inputs[0]], &g->tensors[n->outputs[0]], n);
}

static void conv_transpose_filter_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    c->flops = op_conv_flops(&g->tensors[n->inputs[0]], &g->tensors[n->inputs[1]], n);
}

/* ReduceSumTo's scale (Gemm's beta for its bias gradient; default 1) and
 * dX's shape right-aligned in dY's rank (checked by reduce_sum_to_infer). */
static int reduce_sum_to_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)err;
    const ir_tensor *dy = ir_node_in((ir_graph *)g, n, 0), *dx = ir_node_out((ir_graph *)g, n, 0);
    op_reduce_args *p = &op_args_new(n)->reduce;
    p->scale = ir_attr_float(n, "scale", 1.0f);
    p->rank = dy->rank;
    for (int d = 0; d < dy->rank; d++) {
        int j = d - (dy->rank - dx->rank);
        p->dims[d] = j >= 0 ? dx->dims[j] : 1;
    }
    return OC_OK;
}

/* ConcatGrad: axis and split sizes (checked by concat_grad_infer). */
static int concat_grad_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *dy = ir_node_in((ir_graph *)g, n, 0);
    concat_grad_pad_outputs((ir_graph *)g, n);
    op_split_args *p = &op_args_new(n)->split;
    const int64_t *split;
    p->n = ir_attr_ints(n, "split", &split);
    if (p->n != n->n_outputs || p->n > OP_MAX_SPLIT)
        return oc_fail(err, "attribute 'split' needs one size per output (at most %d)",
                       OP_MAX_SPLIT);
    memcpy(p->sizes, split, (size_t)p->n * sizeof *split);
    return op_axis(ir_attr_int(n, "axis", 0), dy->rank, "axis", &p->axis, err);
}

/* ReluGradBias(dY, Y) -> dZ, dB: ReluGrad, and the sum of dZ over every axis
 * but the channels (1) — a ConvRelu's bias gradient (grad_conv.c), in the pass
 * that writes dZ instead of one more read of it. dB (C) of dZ's type. */
static int relu_grad_bias_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    if (out0_like_in0(g, n, opset, err)) return OC_ERR;
    const ir_tensor *dy = ir_node_in(g, n, 0), *y = ir_node_in(g, n, 1);
    if (dy->rank < 2) return oc_fail(err, "'%s' has no channel axis", dy->name);
    if (!ir_dtype_is_compute(dy->dtype) || y->dtype != dy->dtype)
        return oc_fail(err, "'%s' and '%s' must be float tensors of one type", dy->name, y->name);
    op_set_out(g, n, 1, dy->dtype, 1, &dy->dims[1]);
    return OC_OK;
}

static const op_role data_role[] = {OP_IN_DATA};

/* A backward op's definition; BACKWARD_OP_OPT0 for ops whose output 0 may be
 * omitted: dX when the forward input needs no gradient (kernels skip it). */
#define BACKWARD_OP_DEF(ident, nin_min, nin_max, nout_min, nout_max, fn, costfn, decodefn, opt0)   \
    const op_def ident = {.min_inputs = nin_min,                                                   \
                          .max_inputs = nin_max,                                                   \
                          .min_outputs = nout_min,                                                 \
                          .max_outputs = nout_max,                                                 \
                          .roles = data_role,                                                      \
                          .n_roles = 1,                                                            \
                          .infer = fn,                                                             \
                          .cost = costfn,                                                          \
                          .decode = decodefn,                                                      \
                          .output0_optional = opt0}
#define BACKWARD_OP(ident, nin_min, nin_max, nout_min, nout_max, fn, costfn, decodefn)             \
    BACKWARD_OP_DEF(ident, nin_min, nin_max, nout_min, nout_max, fn, costfn, decodefn, false)
#define BACKWARD_OP_OPT0(ident, nin_min, nin_max, nout_min, nout_max, fn, costfn, decodefn)        \
    BACKWARD_OP_DEF(ident, nin_min, nin_max, nout_min, nout_max, fn, costfn, decodefn, true)

BACKWARD_OP(op_def_conv_backward_data, 2, 2, 1, 1, backward_data_infer, backward_data_cost,
            op_decode_conv);
BACKWARD_OP(op_def_conv_backward_filter, 2, 2, 1, 2, conv_filter_infer, conv_filter_cost,
            op_decode_conv);
BACKWARD_OP(op_def_conv_transpose_backward_data, 2, 2, 1, 1, backward_data_infer,
            conv_transpose_data_cost, op_decode_conv);
BACKWARD_OP(op_def_conv_transpose_backward_filter, 2, 2, 1, 2, conv_transpose_filter_infer,
            conv_transpose_filter_cost, op_decode_conv);
BACKWARD_OP_OPT0(op_def_batch_norm_grad, 3, 5, 1, 3, bn_grad_infer, NULL, op_decode_batch_norm);
BACKWARD_OP(op_def_relu_grad, 2, 3, 1, 1, relu_grad_infer, NULL, NULL);
BACKWARD_OP(op_def_relu_grad_bias, 2, 2, 2, 2, relu_grad_bias_infer, NULL, NULL);
BACKWARD_OP(op_def_clip_grad, 2, 4, 1, 1, out0_like_in0, NULL, op_decode_clip);
BACKWARD_OP(op_def_dropout_grad, 2, 2, 1, 1, out0_like_in0, NULL, op_decode_dropout);
BACKWARD_OP(op_def_max_pool_grad, 2, 2, 1, 1, pool_grad_infer, NULL, op_decode_pool);
BACKWARD_OP(op_def_average_pool_grad, 1, 1, 1, 1, pool_grad_infer, NULL, op_decode_pool);
BACKWARD_OP(op_def_global_average_pool_grad, 1, 1, 1, 1, global_pool_grad_infer, NULL, NULL);
BACKWARD_OP(op_def_reduce_sum_to, 1, 1, 1, 1, reduce_sum_to_infer, NULL, reduce_sum_to_decode);
BACKWARD_OP(op_def_pad_grad, 1, 1, 1, 1, pool_grad_infer, NULL, op_decode_pad);
BACKWARD_OP_OPT0(op_def_concat_grad, 1, 1, 1, OP_MAX_SPLIT, concat_grad_infer, NULL,
                 concat_grad_decode);
BACKWARD_OP(op_def_softmax_cross_entropy_grad, 2, 3, 1, 1, sce_grad_infer, NULL, op_decode_sce);
