/* op_lowered.c — ops rewritten at load into others whose kernels and gradients run them
 * (op_def.lower), none of them a kernel of its own:
 * - DepthToSpace (nn.PixelShuffle's legacy export: super-resolution, GAN generators) and
 *   SpaceToDepth (PixelUnshuffle, YOLOv5's Focus): Reshape, Transpose, Reshape;
 * - Mean of several inputs: their Sum, scaled by 1/n;
 * - Celu: alpha Elu(x / alpha);
 * - LRN (AlexNet's and GoogLeNet v1's local response normalization, Caffe models): the
 *   squares' sum over a window of channels as an AveragePool, then Add, Pow, Div;
 * - NegativeLogLikelihoodLoss (F.nll_loss in a model that computes its own loss): the
 *   picked log-probabilities a GatherElements at the targets, weighted, reduced;
 * - ReduceL1, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp (torch.logsumexp, norm(p=1)):
 *   ReduceSum with Abs, Mul, Log, or the max-shifted Exp / Log around it;
 * - OneHot (F.one_hot's legacy export): Equal to the classes, Where. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* Node `node` rewritten as Reshape(x, a) -> Transpose(perm) -> Reshape(.., y), the node
 * itself the last Reshape (its output kept). */
static void reshape_transpose_reshape(ir_graph *g, int node, int xt, int ra, const int64_t *a,
                                      const int64_t *perm, int ry, const int64_t *y) {
    char *base = oc_strdup(g->nodes[node].name);
    int t = op_rewrite_reshape(g, node, base, "blocks", xt, ra, a);
    t = op_rewrite_insert(g, node + 1, base, "moved", OP_TRANSPOSE, t, -1, -1);
    op_rewrite_attr_ints(g, node + 1, "perm", ra, perm);
    int ys = op_rewrite_ints(g, base, "shape", ry, y);
    op_rewrite_become(g, node + 2, OP_RESHAPE);
    ir_node_add_input(g, node + 2, t);
    ir_node_add_input(g, node + 2, ys);
    oc_free(base);
}

/* DepthToSpace(x [N, C, H, W]; blocksize b, mode DCR or CRD) -> [N, C / b², H b, W b]:
 * DCR reads the channels as (b, b, C / b²), CRD as (C / b², b, b). SpaceToDepth(x; b) ->
 * [N, C b², H / b, W / b], the inverse of DCR. */
static int space_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (x->rank != 4)
        return oc_fail(err, "input '%s' has rank %d; it takes [N, C, H, W]", x->name, x->rank);
    int64_t b = ir_attr_int(n, "blocksize", 0), N = x->dims[0], C = x->dims[1], H = x->dims[2],
            W = x->dims[3];
    if (b < 1 || b > 4096) return oc_fail(err, "blocksize %" PRId64 " is not in 1..4096", b);
    int xt = n->inputs[0];
    if (n->op == OP_SPACE_TO_DEPTH) {
        if (H % b || W % b)
            return oc_fail(err,
                           "input '%s' is %" PRId64 " x %" PRId64 ", not a multiple of "
                           "blocksize %" PRId64,
                           x->name, H, W, b);
        int64_t a[6] = {N, C, H / b, b, W / b, b}, perm[6] = {0, 3, 5, 1, 2, 4},
                y[4] = {N, C * b * b, H / b, W / b};
        reshape_transpose_reshape(g, node, xt, 6, a, perm, 4, y);
    } else {
        const char *mode = ir_attr_string(n, "mode", "DCR");
        bool crd = strcmp(mode, "CRD") == 0;
        if (!crd && strcmp(mode, "DCR") != 0)
            return oc_fail(err, "mode '%s' is not DCR or CRD", mode);
        if (C % (b * b))
            return oc_fail(err,
                           "input '%s' has %" PRId64 " channels, not a multiple of "
                           "blocksize² %" PRId64,
                           x->name, C, b * b);
        int64_t c = C / (b * b), y[4] = {N, c, H * b, W * b};
        int64_t dcr[6] = {N, b, b, c, H, W}, dcr_perm[6] = {0, 3, 4, 1, 5, 2};
        int64_t crd_a[6] = {N, c, b, b, H, W}, crd_perm[6] = {0, 1, 4, 2, 5, 3};
        reshape_transpose_reshape(g, node, xt, 6, crd ? crd_a : dcr, crd ? crd_perm : dcr_perm, 4,
                                  y);
    }
    *changed = true;
    return OC_OK;
}

/* Mean(x1, .., xn): Sum of them (broadcast), then Mul by 1/n (one input: the Sum of one, a
 * copy). */
static int mean_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    (void)err;
    ir_node *n = &g->nodes[node];
    int k = n->n_inputs, *ins = oc_malloc((size_t)k * sizeof *ins);
    memcpy(ins, n->inputs, (size_t)k * sizeof *ins);
    char *base = oc_strdup(n->name);
    int s = op_rewrite_insert(g, node, base, "sum", OP_SUM, ins[0], -1, -1);
    for (int i = 1; i < k; i++) ir_node_add_input(g, node, ins[i]);
    int64_t one = 1;
    int inv = op_rewrite_fill(g, base, "inverse_count", 0, &one, 1.0f / (float)k);
    op_rewrite_become(g, node + 1, OP_MUL);
    ir_node_add_input(g, node + 1, s);
    ir_node_add_input(g, node + 1, inv);
    oc_free(ins), oc_free(base);
    *changed = true;
    return OC_OK;
}

/* Celu(x; alpha) = max(0, x) + min(0, alpha (exp(x / alpha) - 1)) = alpha Elu(x / alpha). */
static int celu_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    float alpha = ir_attr_float(n, "alpha", 1.0f);
    if (!(alpha > 0.0f)) return oc_fail(err, "alpha %g is not positive", (double)alpha);
    int xt = n->inputs[0];
    char *base = oc_strdup(n->name);
    int64_t one = 1;
    int inv = op_rewrite_fill(g, base, "inverse_alpha", 0, &one, 1.0f / alpha);
    int sc = op_rewrite_fill(g, base, "alpha", 0, &one, alpha);
    int t = op_rewrite_insert(g, node, base, "scaled", OP_MUL, xt, inv, -1);
    t = op_rewrite_insert(g, node + 1, base, "elu", OP_ELU, t, -1, -1);
    op_rewrite_become(g, node + 2, OP_MUL);
    ir_node_add_input(g, node + 2, t);
    ir_node_add_input(g, node + 2, sc);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* A plan-time constant "<base>/<what>" of type dt and the given shape, element k vals[k]
 * (read as numbers of type from). */
static int typed_constant(ir_graph *g, const char *base, const char *what, ir_dtype dt, int rank,
                          const int64_t *dims, const num *vals, ir_dtype from) {
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) numel *= dims[d];
    uint8_t *buf = oc_malloc((size_t)numel * (size_t)ir_dtype_size(dt) + 1);
    for (int64_t k = 0; k < numel; k++) op_fold_num_put(buf, dt, k, vals[k], from);
    int c = op_rewrite_constant(g, base, what, dt, rank, dims, buf);
    oc_free(buf);
    return c;
}

/* Size(x): x's element count, an int64 scalar known from its shape at load (torch.export's
 * nn.EmbeddingBag: the ids' count): a constant "<node>/count". */
static int size_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_tensor *x;
    int64_t numel;
    if (op_in_shaped(g, &g->nodes[node], 0, &x, err)) return OC_ERR;
    if (!ir_tensor_numel(x, &numel))
        return oc_fail(err, "input '%s' has too many elements", x->name);
    char *base = oc_strdup(g->nodes[node].name);
    int c = op_rewrite_constant(g, base, "count", IR_DTYPE_INT64, 0, NULL, &numel);
    oc_free(base);
    op_rewrite_become(g, node, OP_IDENTITY);
    ir_node_add_input(g, node, c);
    *changed = true;
    return OC_OK;
}

/* OneHot(indices, depth, values [off, on]; axis) (F.one_hot's legacy export, label
 * smoothing's targets): a new axis of depth classes at `axis`, `on` where the index is the
 * class (a negative index counting from the end), `off` elsewhere. Rewritten as the indices
 * reshaped with a 1 at the axis, Equal to the classes c and to c - depth laid along it, Or,
 * Where(mask, on, off): indices the host computes (labels) fold there, device ones (an
 * ArgMax of activations) run. */
#define ONE_HOT_MAX_DEPTH (1 << 20)
static int one_hot_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *ix, *dt, *vt;
    if (op_in_shaped(g, n, 0, &ix, err) || op_fold_need_value(g, n, 1, &dt, err) ||
        op_fold_need_value(g, n, 2, &vt, err))
        return OC_ERR;
    int64_t nd, nv, axis;
    if (!ir_tensor_numel(dt, &nd) || nd != 1)
        return oc_fail(err, "depth '%s' must be one value", dt->name);
    num dv = op_fold_num_get(dt, 0);
    double depth_f = op_fold_is_float(dt->dtype) ? dv.f : (double)dv.i;
    if (!(depth_f >= 1 && depth_f <= ONE_HOT_MAX_DEPTH))
        return oc_fail(err, "depth %g is not in 1..%d", depth_f, ONE_HOT_MAX_DEPTH);
    int64_t depth = (int64_t)depth_f;
    if (!ir_tensor_numel(vt, &nv) || nv != 2)
        return oc_fail(err, "values '%s' must hold two elements, [off, on]", vt->name);
    if (ix->dtype != IR_DTYPE_INT64 && ix->dtype != IR_DTYPE_INT32 && ix->dtype != IR_DTYPE_FLOAT)
        return oc_fail(err, "indices '%s' are %s (int64, int32 or float32 taken)", ix->name,
                       ir_dtype_name(ix->dtype));
    int r = ix->rank;
    if (r + 1 > IR_MAX_RANK) return oc_fail(err, "indices '%s' have rank %d", ix->name, r);
    if (op_axis(ir_attr_int(n, "axis", -1), r + 1, "axis", &axis, err)) return OC_ERR;
    int64_t u[IR_MAX_RANK], cd[IR_MAX_RANK];
    for (int d = 0, k = 0; d <= r; d++) {
        u[d] = d == axis ? 1 : ix->dims[k++];
        cd[d] = d == axis ? depth : 1;
    }
    num *cls = oc_malloc((size_t)depth * sizeof *cls);
    char *base = oc_strdup(n->name);
    int xt = n->inputs[0], vals = n->inputs[2], at = node, c[2];
    for (int side = 0; side < 2; side++) { /* c, then c - depth */
        for (int64_t k = 0; k < depth; k++) {
            int64_t v = side ? k - depth : k;
            cls[k] = (num){(double)v, v};
        }
        c[side] = typed_constant(g, base, side ? "classes_from_end" : "classes", ix->dtype, r + 1,
                                 cd, cls, IR_DTYPE_INT64);
    }
    num lim[2] = {op_fold_num_get(&g->tensors[vals], 0), op_fold_num_get(&g->tensors[vals], 1)};
    ir_dtype vdt = g->tensors[vals].dtype;
    oc_free(cls);
    int t = op_rewrite_reshape(g, at++, base, "column", xt, r + 1, u);
    int e0 = op_rewrite_insert(g, at++, base, "is_class", OP_EQUAL, t, c[0], -1);
    int e1 = op_rewrite_insert(g, at++, base, "is_class_from_end", OP_EQUAL, t, c[1], -1);
    int m = op_rewrite_insert(g, at++, base, "mask", OP_OR, e0, e1, -1);
    if (lim[0].f == 0 && lim[1].f == 1) { /* [0, 1], the default: the mask cast (any type) */
        op_rewrite_become(g, at, OP_CAST);
        ir_node_add_input(g, at, m);
        op_rewrite_attr_int(g, at, "to", vdt);
    } else {
        int off = typed_constant(g, base, "off", vdt, 0, NULL, &lim[0], vdt);
        int on = typed_constant(g, base, "on", vdt, 0, NULL, &lim[1], vdt);
        op_rewrite_become(g, at, OP_WHERE);
        ir_node_add_input(g, at, m);
        ir_node_add_input(g, at, on);
        ir_node_add_input(g, at, off);
    }
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* LRN(x [N, C, d..]; size, alpha, beta, bias): y = x / (bias + alpha / size * s)^beta, s the
 * sum of x² over channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) inside [0, C):
 * Mul(x, x) viewed as [N, 1, C, D] (D the spatial size), AveragePool over [size, 1] with those
 * pads, the pads counted (so it is s / size), back to x's dims, then alpha, bias, Pow, Div. */
static int lrn_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (x->rank < 3)
        return oc_fail(err, "input '%s' has rank %d; it takes [N, C, d..]", x->name, x->rank);
    int64_t size = ir_attr_int(n, "size", 0);
    float alpha = ir_attr_float(n, "alpha", 1e-4f), beta = ir_attr_float(n, "beta", 0.75f),
          bias = ir_attr_float(n, "bias", 1.0f);
    if (size < 1 || size > x->dims[1] + 4096)
        return oc_fail(err, "size %" PRId64 " is not a window of channels", size);
    int64_t dims[IR_MAX_RANK], D = 1, one = 1;
    memcpy(dims, x->dims, sizeof dims);
    int rank = x->rank, xt = n->inputs[0], at = node;
    for (int d = 2; d < rank; d++) D *= dims[d];
    char *base = oc_strdup(n->name);
    int t = op_rewrite_insert(g, at++, base, "squares", OP_MUL, xt, xt, -1);
    int64_t rows[4] = {dims[0], 1, dims[1], D};
    t = op_rewrite_reshape(g, at++, base, "rows", t, 4, rows);
    t = op_rewrite_insert(g, at, base, "window_mean", OP_AVERAGE_POOL, t, -1, -1);
    int64_t kernel[2] = {size, 1}, pads[4] = {(size - 1) / 2, 0, size / 2, 0};
    op_rewrite_attr_ints(g, at, "kernel_shape", 2, kernel);
    op_rewrite_attr_ints(g, at, "pads", 4, pads);
    op_rewrite_attr_int(g, at++, "count_include_pad", 1);
    t = op_rewrite_reshape(g, at++, base, "window", t, rank, dims);
    int ca = op_rewrite_fill(g, base, "alpha", 0, &one, alpha);
    int cb = op_rewrite_fill(g, base, "bias", 0, &one, bias);
    int ce = op_rewrite_fill(g, base, "beta", 0, &one, beta);
    t = op_rewrite_insert(g, at++, base, "scaled", OP_MUL, t, ca, -1);
    t = op_rewrite_insert(g, at++, base, "shifted", OP_ADD, t, cb, -1);
    t = op_rewrite_insert(g, at++, base, "denominator", OP_POW, t, ce, -1);
    op_rewrite_become(g, at, OP_DIV);
    ir_node_add_input(g, at, xt);
    ir_node_add_input(g, at, t);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* NegativeLogLikelihoodLoss(x [N, C, d..], target [N, d..] (int), weight [C]; reduction,
 * ignore_index): l = -x[n, t, d..] w[t] (0 where t is ignore_index); none: l, sum: its sum,
 * mean: its sum over the weights' (PyTorch's). The targets are plan-time values or integer
 * glue of the model's inputs (the host's), and so is everything computed from them: the
 * safe targets Where(t == ignore, 0, t), the weights gathered at them and masked, their sum.
 * x's side: GatherElements(x, Unsqueeze(t, 1), axis 1) (a Gather of x at offsets),
 * Squeeze, Mul, Neg, ReduceSum, Div: ops with gradients. */
static int nll_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *t;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &t, err)) return OC_ERR;
    if (t->dtype != IR_DTYPE_INT64 && t->dtype != IR_DTYPE_INT32)
        return oc_fail(err, "target '%s' must be int64 or int32", t->name);
    if (x->rank < 2 || t->rank != x->rank - 1)
        return oc_fail(err,
                       "input '%s' (rank %d) and target '%s' (rank %d) do not fit [N, C, "
                       "d..] and [N, d..]",
                       x->name, x->rank, t->name, t->rank);
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] != x->dims[d ? d + 1 : 0])
            return oc_fail(err, "target '%s' dim %d is %" PRId64 ", input '%s' has %" PRId64,
                           t->name, d, t->dims[d], x->name, x->dims[d ? d + 1 : 0]);
    const char *red = ir_attr_string(n, "reduction", "mean");
    int mode = strcmp(red, "none") == 0   ? 0
               : strcmp(red, "sum") == 0  ? 1
               : strcmp(red, "mean") == 0 ? 2
                                          : -1;
    if (mode < 0) return oc_fail(err, "reduction '%s' is not none, sum or mean", red);
    const ir_attr *ig = ir_attr_find(n, "ignore_index");
    int xt = n->inputs[0], tt = n->inputs[1], wt = n->n_inputs > 2 ? n->inputs[2] : -1, at = node;
    int rank = t->rank; /* x and t move as tensors are added below */
    int64_t count = 1;
    for (int d = 0; d < rank; d++) count *= t->dims[d];
    int64_t zero = 0, one = 1, ax1 = 1;
    char *base = oc_strdup(n->name);
    int safe = tt, weights = -1;
    if (ig) { /* the ignored targets read class 0, weighted 0 */
        int64_t iv = ig->i;
        int ic = op_rewrite_ints(g, base, "ignore_index", 1, &iv);
        ir_tensor_set_shape(&g->tensors[ic], 0, NULL);
        int zc = op_rewrite_ints(g, base, "zero", 1, &zero);
        ir_tensor_set_shape(&g->tensors[zc], 0, NULL);
        if (g->tensors[tt].dtype == IR_DTYPE_INT32) { /* Equal and Where take one type */
            ic = op_rewrite_insert(g, at++, base, "ignore_index_i32", OP_CAST, ic, -1, -1);
            op_rewrite_attr_int(g, at - 1, "to", IR_DTYPE_INT32);
            zc = op_rewrite_insert(g, at++, base, "zero_i32", OP_CAST, zc, -1, -1);
            op_rewrite_attr_int(g, at - 1, "to", IR_DTYPE_INT32);
        }
        int eq = op_rewrite_insert(g, at++, base, "ignored", OP_EQUAL, tt, ic, -1);
        safe = op_rewrite_insert(g, at++, base, "safe_target", OP_WHERE, eq, zc, -1);
        ir_node_add_input(g, at - 1, tt);
        int keep = op_rewrite_insert(g, at++, base, "kept", OP_NOT, eq, -1, -1);
        weights = op_rewrite_insert(g, at++, base, "kept_weight", OP_CAST, keep, -1, -1);
        op_rewrite_attr_int(g, at - 1, "to", IR_DTYPE_FLOAT);
    }
    if (wt >= 0) {
        int gw = op_rewrite_insert(g, at++, base, "class_weight", OP_GATHER, wt, safe, -1);
        op_rewrite_attr_int(g, at - 1, "axis", 0);
        weights =
            weights < 0 ? gw : op_rewrite_insert(g, at++, base, "weight", OP_MUL, gw, weights, -1);
    }
    int ti = op_rewrite_axes(g, at++, base, "target_column", OP_UNSQUEEZE, safe, 1, &ax1, 13, -1);
    int pk = op_rewrite_insert(g, at++, base, "picked", OP_GATHER_ELEMENTS, xt, ti, -1);
    op_rewrite_attr_int(g, at - 1, "axis", 1);
    int l = op_rewrite_axes(g, at++, base, "picked_rows", OP_SQUEEZE, pk, 1, &ax1, 13, -1);
    if (weights >= 0) l = op_rewrite_insert(g, at++, base, "weighted", OP_MUL, l, weights, -1);
    int64_t all[IR_MAX_RANK];
    for (int d = 0; d < rank; d++) all[d] = d;
    if (mode == 0) {
        op_rewrite_become(g, at, OP_NEG);
        ir_node_add_input(g, at, l);
    } else {
        int neg = op_rewrite_insert(g, at++, base, "losses", OP_NEG, l, -1, -1);
        int s = op_rewrite_axes(g, at++, base, "sum", OP_REDUCE_SUM, neg, rank, all, 13, -1);
        op_rewrite_attr_int(g, at - 1, "keepdims", 0);
        int den = -1;
        if (mode == 2 && weights >= 0) {
            den = op_rewrite_axes(g, at++, base, "weight_sum", OP_REDUCE_SUM, weights, rank, all,
                                  13, -1);
            op_rewrite_attr_int(g, at - 1, "keepdims", 0);
        } else if (mode == 2) {
            den = op_rewrite_fill(g, base, "count", 0, &one, (float)count);
        }
        op_rewrite_become(g, at, den >= 0 ? OP_DIV : OP_IDENTITY);
        ir_node_add_input(g, at, s);
        if (den >= 0) ir_node_add_input(g, at, den);
    }
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* A reduce node's axes (attribute, or a plan-time input 1 from opset 18), normalised, in
 * axes[0..*na) -- every axis when none is given -- and keepdims. noop_with_empty_axes with no
 * axes: *na 0 (the input itself). */
static int reduce_args(ir_graph *g, ir_node *n, const ir_tensor *x, int64_t *axes, int *na,
                       bool *keep, oc_err *err) {
    const int64_t *v = NULL;
    int64_t count = 0;
    if (n->n_inputs > 1 && n->inputs[1] >= 0) {
        if (op_in_int64s(g, n, 1, &v, &count, err)) return OC_ERR;
    } else {
        count = ir_attr_ints(n, "axes", &v);
        if (count < 0) count = 0;
    }
    *keep = ir_attr_int(n, "keepdims", 1) != 0;
    if (count > x->rank) return oc_fail(err, "%" PRId64 " axes for rank %d", count, x->rank);
    if (count == 0) {
        *na = ir_attr_int(n, "noop_with_empty_axes", 0) ? 0 : x->rank;
        for (int d = 0; d < *na; d++) axes[d] = d;
        return OC_OK;
    }
    *na = (int)count;
    for (int i = 0; i < *na; i++)
        if (op_axis(v[i], x->rank, "axis", &axes[i], err)) return OC_ERR;
    return OC_OK;
}

/* ReduceProd of run-time data (torch.prod of an activation: box areas from their sides,
 * noisy-OR's product of complements) over at most REDUCE_PROD_MAX_FACTORS elements a
 * product: the reduced axes moved first (a Transpose, when they are not), x reshaped to
 * [K, kept dims..], Split into its K rows, their product a chain of Muls, reshaped to the
 * output (the node itself). Mul's gradient is the product of the other factors: exact where
 * a factor is zero, as torch.prod's. */
#define REDUCE_PROD_MAX_FACTORS 64
static int reduce_prod_lower(ir_graph *g, int node, const ir_tensor *x, const int64_t *axes, int na,
                             const int64_t *ydims, int yrank, oc_err *err) {
    int r = x->rank, np = 0;
    int64_t perm[IR_MAX_RANK], rows[IR_MAX_RANK + 1], K = 1;
    bool reduced[IR_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) reduced[axes[i]] = true;
    for (int d = 0; d < r; d++)
        if (reduced[d]) perm[np++] = d, K *= x->dims[d];
    if (K > REDUCE_PROD_MAX_FACTORS)
        return oc_fail(err,
                       "ReduceProd of '%s', computed at run time, over %" PRId64
                       " elements a product (at most %d: it runs as a chain of Muls)",
                       x->name, K, REDUCE_PROD_MAX_FACTORS);
    int nrows = 1;
    rows[0] = K;
    for (int d = 0; d < r; d++)
        if (!reduced[d]) perm[np++] = d, rows[nrows++] = x->dims[d];
    bool moved = false;
    for (int d = 0; d < r; d++) moved = moved || perm[d] != d;
    ir_node *n = &g->nodes[node];
    int at = node, t = n->inputs[0];
    char *base = oc_strdup(n->name);
    if (moved) {
        t = op_rewrite_insert(g, at, base, "reduced_first", OP_TRANSPOSE, t, -1, -1);
        op_rewrite_attr_ints(g, at++, "perm", r, perm);
    }
    t = op_rewrite_reshape(g, at++, base, "factor_rows", t, nrows, rows);
    if (K > 1) {
        int64_t ones[REDUCE_PROD_MAX_FACTORS];
        for (int64_t k = 0; k < K; k++) ones[k] = 1;
        int sizes = g->opset >= 13 ? op_rewrite_ints(g, base, "factor_sizes", (int)K, ones) : -1;
        int split = at, p = op_rewrite_insert(g, at++, base, "factor_0", OP_SPLIT, t, sizes, -1);
        op_rewrite_attr_int(g, split, "axis", 0);
        if (sizes < 0) op_rewrite_attr_ints(g, split, "split", (int)K, ones);
        for (int64_t k = 1; k < K; k++) {
            char *what = oc_sprintf("%s/factor_%" PRId64, base, k);
            int f = ir_tensor_add(g, what, IR_DTYPE_UNDEFINED);
            oc_free(what);
            ir_node_add_output(g, split, f);
            what = oc_sprintf("product_%" PRId64, k);
            p = op_rewrite_insert(g, at++, base, what, OP_MUL, p, f, -1);
            oc_free(what);
        }
        t = p;
    }
    op_rewrite_become(g, at, OP_RESHAPE);
    ir_node_add_input(g, at, t);
    ir_node_add_input(g, at, op_rewrite_ints(g, base, "output_shape", yrank, ydims));
    oc_free(base);
    return OC_OK;
}

/* ReduceL1 = ReduceSum(Abs(x)), ReduceSumSquare = ReduceSum(x x), ReduceLogSum =
 * Log(ReduceSum(x)), ReduceLogSumExp = Log(ReduceSum(Exp(x - m))) + m with m = ReduceMax(x)
 * over the same axes (kept, then reshaped to the output's dims): PyTorch's logsumexp, whose
 * gradient through m cancels (softmax's). Empty axes with noop_with_empty_axes: the input's
 * own transform (Abs, x x, Log, Log(Exp)). */
static int reduce_family_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    int64_t axes[IR_MAX_RANK], ydims[IR_MAX_RANK], kdims[IR_MAX_RANK];
    int na = 0, yrank = 0;
    bool keep = true;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x) || !ir_dtype_is_compute(x->dtype))
        return OC_OK; /* folds (reduce_family_fold), on the host too */
    if (reduce_args(g, n, x, axes, &na, &keep, err)) return OC_ERR;
    int r = x->rank;
    for (int d = 0; d < r; d++) {
        bool red = false;
        for (int i = 0; i < na; i++) red = red || axes[i] == d;
        kdims[d] = red ? 1 : x->dims[d];
        if (!red || keep) ydims[yrank++] = kdims[d];
    }
    if (n->op == OP_REDUCE_PROD) {
        if (reduce_prod_lower(g, node, x, axes, na, ydims, yrank, err)) return OC_ERR;
        *changed = true;
        return OC_OK;
    }
    op_kind op = n->op;
    int xt = n->inputs[0], at = node, t = xt, m = -1;
    char *base = oc_strdup(n->name);
    if (op == OP_REDUCE_LOG_SUM_EXP && na > 0) {
        m = op_rewrite_axes(g, at++, base, "max", OP_REDUCE_MAX, xt, na, axes, 18, -1);
        op_rewrite_attr_int(g, at - 1, "keepdims", 1);
        t = op_rewrite_insert(g, at++, base, "shifted", OP_SUB, xt, m, -1);
    }
    if (op == OP_REDUCE_L1) t = op_rewrite_insert(g, at++, base, "abs", OP_ABS, t, -1, -1);
    if (op == OP_REDUCE_SUM_SQUARE)
        t = op_rewrite_insert(g, at++, base, "square", OP_MUL, t, t, -1);
    if (op == OP_REDUCE_LOG_SUM_EXP) t = op_rewrite_insert(g, at++, base, "exp", OP_EXP, t, -1, -1);
    if (na > 0) {
        t = op_rewrite_axes(g, at++, base, "sum", OP_REDUCE_SUM, t, na, axes, 13, -1);
        op_rewrite_attr_int(g, at - 1, "keepdims", keep);
    }
    bool logs = op == OP_REDUCE_LOG_SUM || op == OP_REDUCE_LOG_SUM_EXP;
    if (m >= 0) {
        t = op_rewrite_insert(g, at++, base, "log", OP_LOG, t, -1, -1);
        if (!keep) m = op_rewrite_reshape(g, at++, base, "max_out", m, yrank, ydims);
        op_rewrite_become(g, at, OP_ADD);
        ir_node_add_input(g, at, t);
        ir_node_add_input(g, at, m);
    } else {
        op_rewrite_become(g, at, logs ? OP_LOG : OP_IDENTITY);
        ir_node_add_input(g, at, t);
    }
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* The same ops, and ReduceProd, of a plan-time value (any float or integer type): folded in
 * double (an integer product in int64, wrapping as two's complement). */
static int reduce_family_fold(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    int64_t axes[IR_MAX_RANK], ydims[IR_MAX_RANK], numel, xn;
    int na = 0, yrank = 0;
    bool keep = true, red[IR_MAX_RANK] = {false};
    if (op_fold_need_value(g, n, 0, &x, err) || reduce_args(g, n, x, axes, &na, &keep, err))
        return OC_ERR;
    for (int i = 0; i < na; i++) red[axes[i]] = true;
    for (int d = 0; d < x->rank; d++)
        if (!red[d] || keep) ydims[yrank++] = red[d] ? 1 : x->dims[d];
    op_set_out(g, n, 0, x->dtype, yrank, ydims);
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    double *acc = oc_calloc((size_t)(numel ? numel : 1), sizeof *acc),
           *mx = oc_malloc((size_t)(numel ? numel : 1) * sizeof *mx);
    bool prod = n->op == OP_REDUCE_PROD, fl = op_fold_is_float(x->dtype);
    int64_t *iacc = oc_malloc((size_t)(numel ? numel : 1) * sizeof *iacc); /* integer product */
    for (int64_t o = 0; o < numel; o++) mx[o] = -INFINITY, acc[o] = prod, iacc[o] = 1;
    ir_tensor_numel(x, &xn);
    for (int pass = n->op == OP_REDUCE_LOG_SUM_EXP ? 0 : 1; pass < 2; pass++)
        for (int64_t i = 0; i < xn; i++) {
            int64_t o = op_fold_reduced_at(x, red, i);
            double v = op_fold_num_get(x, i).f;
            if (pass == 0) mx[o] = v > mx[o] ? v : mx[o];
            else if (prod)
                acc[o] *= v,
                    iacc[o] = (int64_t)((uint64_t)iacc[o] * (uint64_t)op_fold_num_get(x, i).i);
            else
                acc[o] += n->op == OP_REDUCE_L1           ? fabs(v)
                          : n->op == OP_REDUCE_SUM_SQUARE ? v * v
                          : n->op == OP_REDUCE_LOG_SUM    ? v
                                                          : exp(v - mx[o]);
        }
    for (int64_t o = 0; o < numel; o++) {
        double v = n->op == OP_REDUCE_LOG_SUM       ? log(acc[o])
                   : n->op == OP_REDUCE_LOG_SUM_EXP ? log(acc[o]) + mx[o]
                                                    : acc[o];
        /* an integer result: the product as int64 wraps it; a sum, log or NaN saturates */
        int64_t iv = prod && !fl    ? iacc[o]
                     : v != v       ? 0
                     : v >= 9.2e18  ? INT64_MAX
                     : v <= -9.2e18 ? INT64_MIN
                                    : (int64_t)v;
        num nv = {v, iv};
        op_fold_num_put(buf, x->dtype, o, nv, fl ? IR_DTYPE_DOUBLE : x->dtype);
    }
    oc_free(acc), oc_free(mx), oc_free(iacc);
    return op_fold_set(g, n, buf, numel);
}

/* Never reached: the nodes are rewritten before their shapes are inferred. */
static int lowered_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)opset;
    return oc_fail(err, "%s reached shape inference unrewritten", n->op_type);
}

static const op_role data_role[] = {OP_IN_DATA};

/* An op of data inputs lo..hi (hi -1: any number), one output, rewritten by fn. */
#define LOWERED_OP(ident, lo, hi, fn)                                                              \
    const op_def ident = {.min_inputs = lo,                                                        \
                          .max_inputs = hi,                                                        \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = data_role,                                                      \
                          .n_roles = 1,                                                            \
                          .infer = lowered_infer,                                                  \
                          .lower = fn}

LOWERED_OP(op_def_depth_to_space, 1, 1, space_lower);
LOWERED_OP(op_def_space_to_depth, 1, 1, space_lower);
LOWERED_OP(op_def_mean, 1, -1, mean_lower);
LOWERED_OP(op_def_size, 1, 1, size_lower);
LOWERED_OP(op_def_celu, 1, 1, celu_lower);
LOWERED_OP(op_def_lrn, 1, 1, lrn_lower);
static const op_role one_hot_roles[] = {OP_IN_DATA, OP_IN_CONST, OP_IN_CONST};
const op_def op_def_one_hot = {.min_inputs = 3,
                               .max_inputs = 3,
                               .min_outputs = 1,
                               .max_outputs = 1,
                               .roles = one_hot_roles,
                               .n_roles = 3,
                               .infer = lowered_infer,
                               .lower = one_hot_lower};
/* ReduceL1 and its kin: folded on plan-time values, rewritten on run-time ones */
#define REDUCE_FAMILY_OP(ident)                                                                    \
    const op_def ident = {.min_inputs = 1,                                                         \
                          .max_inputs = 2,                                                         \
                          .min_outputs = 1,                                                        \
                          .max_outputs = 1,                                                        \
                          .roles = data_then_const,                                                \
                          .n_roles = 2,                                                            \
                          .infer = reduce_family_fold,                                             \
                          .lower = reduce_family_lower}

static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
REDUCE_FAMILY_OP(op_def_reduce_l1);
REDUCE_FAMILY_OP(op_def_reduce_sum_square);
REDUCE_FAMILY_OP(op_def_reduce_log_sum);
REDUCE_FAMILY_OP(op_def_reduce_log_sum_exp);
REDUCE_FAMILY_OP(op_def_reduce_prod);

static const op_role nll_roles[] = {OP_IN_DATA, OP_IN_CONST, OP_IN_CONST};

const op_def op_def_negative_log_likelihood_loss = {.min_inputs = 2,
                                                    .max_inputs = 3,
                                                    .min_outputs = 1,
                                                    .max_outputs = 1,
                                                    .roles = nll_roles,
                                                    .n_roles = 3,
                                                    .infer = lowered_infer,
                                                    .lower = nll_lower};
