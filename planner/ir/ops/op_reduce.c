/* op_reduce.c — ReduceMean and ReduceSum (squeeze-excitation, global pooling
 * as today's exporters write it), their gradient rule and the backward op
 * BroadcastTo beside it. Both reductions run on the ReduceSumTo kernels:
 * Y = scale * X summed to the kept shape (op_reduce_args). */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* The reduced dims of X: axes from an input (ReduceMean, ReduceMax, ReduceMin from
 * opset 18, ReduceSum from 13) or the attribute before; none given reduces every dim
 * unless noop_with_empty_axes. *noop: the node is an identity. */
static int reduce_axes(ir_graph *g, ir_node *n, const ir_tensor *x, bool *red, bool *noop,
                       oc_err *err) {
    int64_t axes_from_input = n->op == OP_REDUCE_SUM ? 13 : 18; /* Mean, Max, Min: 18 */
    const int64_t *axes = NULL;
    int64_t naxes = 0;
    if (g->opset >= axes_from_input) {
        if (ir_node_in(g, n, 1) && op_in_int64s(g, n, 1, &axes, &naxes, err)) return OC_ERR;
    } else {
        if (ir_node_in(g, n, 1)) return oc_fail(err, "takes its axes as an attribute here");
        int k = ir_attr_ints(n, "axes", &axes);
        naxes = k < 0 ? 0 : k;
    }
    memset(red, 0, IR_MAX_RANK * sizeof *red);
    *noop = false;
    if (naxes == 0) {
        *noop = ir_attr_int(n, "noop_with_empty_axes", 0) != 0;
        for (int d = 0; d < x->rank; d++) red[d] = !*noop;
        return OC_OK;
    }
    for (int64_t i = 0; i < naxes; i++) {
        int64_t a;
        if (op_axis(axes[i], x->rank, "axis", &a, err)) return OC_ERR;
        if (red[a]) return oc_fail(err, "axis %" PRId64 " repeated", axes[i]);
        red[a] = true;
    }
    return OC_OK;
}

/* ReduceSum of a plan-time value of any number type (the host's integer glue: a padding
 * mask's count, `(ids != 0).sum(-1)`), ReduceMean of a float one: in double or int64 (which
 * wraps as int64 does). */
static int reduce_fold(ir_graph *g, ir_node *n, const ir_tensor *x, const bool *red, oc_err *err) {
    int64_t numel, xn;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    ir_tensor_numel(x, &xn);
    double *f = oc_calloc((size_t)(numel ? numel : 1), sizeof *f);
    uint64_t *i = oc_calloc((size_t)(numel ? numel : 1), sizeof *i);
    for (int64_t k = 0; k < xn; k++) {
        int64_t o = op_fold_reduced_at(x, red, k);
        num v = op_fold_num_get(x, k);
        f[o] += v.f, i[o] += (uint64_t)v.i;
    }
    double scale = n->op == OP_REDUCE_MEAN && numel ? (double)numel / (double)xn : 1.0;
    for (int64_t o = 0; o < numel; o++) {
        num v = {f[o] * scale, (int64_t)i[o]};
        op_fold_num_put(buf, x->dtype, o, v, x->dtype);
    }
    oc_free(f), oc_free(i);
    return op_fold_set(g, n, buf, numel);
}

static int reduce_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    bool red[IR_MAX_RANK], noop;
    if (op_in_shaped(g, n, 0, &x, err) || reduce_axes(g, n, x, red, &noop, err)) return OC_ERR;
    bool fold = op_is_value(x) && op_fold_dtype(x->dtype) && x->dtype != IR_DTYPE_BOOL &&
                (n->op == OP_REDUCE_SUM || op_fold_is_float(x->dtype));
    if (!fold && !ir_dtype_is_compute(x->dtype))
        return oc_fail(err, "input '%s' is not float (plan-time integers fold: ReduceSum)",
                       x->name);
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    int64_t y[IR_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!red[d]) y[r++] = x->dims[d];
        else if (keep) y[r++] = 1;
    }
    op_set_out(g, n, 0, x->dtype, r, y);
    return fold ? reduce_fold(g, n, x, red, err) : OC_OK;
}

/* The kept shape (X's rank) and scale: 1 / (elements summed) for the mean. */
static int reduce_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    bool red[IR_MAX_RANK], noop;
    if (reduce_axes((ir_graph *)g, n, x, red, &noop, err)) return OC_ERR;
    op_reduce_args *p = &op_args_new(n)->reduce;
    p->rank = x->rank;
    int64_t count = 1;
    for (int d = 0; d < x->rank; d++) {
        p->dims[d] = red[d] ? 1 : x->dims[d];
        if (red[d]) count *= x->dims[d];
    }
    p->scale = n->op == OP_REDUCE_MEAN && count > 0 ? (float)(1.0 / (double)count) : 1.0f;
    return OC_OK;
}

/* dX = scale * dY broadcast back over the reduced dims (dY first reshaped to
 * the kept shape when keepdims dropped them). Saves nothing. */
static int reduce_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_graph *g = grad_graph(c);
    const ir_node *f = grad_fwd(c);
    const op_reduce_args *p = &op_args_of(f)->reduce;
    const ir_tensor *x = &g->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    int64_t kept[IR_MAX_RANK], xd[IR_MAX_RANK];
    float scale = p->scale;
    memcpy(kept, p->dims, sizeof kept);
    memcpy(xd, x->dims, sizeof xd);
    int src = dy;
    if (g->tensors[dy].rank != rank) {
        int shape = grad_const_i64(c, "grad_kept_shape", rank, kept);
        int r = grad_node(c, "grad_kept", OP_RESHAPE);
        grad_in(c, r, dy);
        grad_in(c, r, shape);
        if ((src = grad_out_tmp(c, r, "grad_kept")) < 0 || grad_finish(c, r)) return OC_ERR;
    }
    int b = grad_node(c, "grad", OP_BROADCAST_TO);
    grad_in(c, b, src);
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "input_shape", rank, xd);
    grad_attr_float(c, b, "scale", scale);
    return grad_finish(c, b);
}

/* BroadcastTo(dY) -> dX (input_shape): dY broadcast (numpy, right-aligned). */
static int broadcast_to_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy;
    if (op_in_shaped(g, n, 0, &dy, err)) return OC_ERR;
    const int64_t *dims;
    int r = ir_attr_ints(n, "input_shape", &dims);
    if (r < 0 || r > IR_MAX_RANK) return oc_fail(err, "attribute 'input_shape' is required");
    int64_t numel = 1;
    for (int i = 0; i < r; i++)
        if (dims[i] < 0 || !oc_mul_i64(numel, dims[i], &numel))
            return oc_fail(err, "attribute 'input_shape': dim %d is negative or too large", i);
    bool ok = dy->rank <= r;
    for (int i = 0; ok && i < dy->rank; i++) {
        int64_t e = dy->dims[dy->rank - 1 - i], d = dims[r - 1 - i];
        ok = e == d || e == 1;
    }
    if (!ok) return oc_fail(err, "'%s' does not broadcast to input_shape", dy->name);
    op_set_out(g, n, 0, dy->dtype, r, dims);
    return OC_OK;
}

/* Scale, and dY's shape right-aligned in dX's rank. */
static int broadcast_to_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)err;
    const ir_tensor *dy = ir_node_in((ir_graph *)g, n, 0), *dx = ir_node_out((ir_graph *)g, n, 0);
    op_reduce_args *p = &op_args_new(n)->reduce;
    p->scale = ir_attr_float(n, "scale", 1.0f);
    p->rank = dx->rank;
    for (int d = 0; d < dx->rank; d++) {
        int j = d - (dx->rank - dy->rank);
        p->dims[d] = j >= 0 ? dy->dims[j] : 1;
    }
    return OC_OK;
}

/* Reads every input element once, writes every output element once. */
static void reduce_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    int64_t numel;
    const ir_tensor *x = &g->tensors[n->inputs[0]];
    c->flops = ir_tensor_numel(x, &numel) ? (double)numel : 0.0;
}

/* ReduceMax / ReduceMin's output dims (reduce_infer's rule), any dtype. */
static int extreme_shape(ir_graph *g, ir_node *n, const ir_tensor *x, bool *red, int *rank,
                         int64_t *y, oc_err *err) {
    bool noop;
    if (reduce_axes(g, n, x, red, &noop, err)) return OC_ERR;
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    *rank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (red[d] && x->dims[d] == 0)
            return oc_fail(err, "input '%s' has no elements along reduced dim %d", x->name, d);
        if (!red[d]) y[(*rank)++] = x->dims[d];
        else if (keep) y[(*rank)++] = 1;
    }
    return OC_OK;
}

/* ReduceMax / ReduceMin of a plan-time value (shape glue): folded. Reached for a run-time
 * input only when it is not float (a float one is lowered: extreme_lower). */
static int extreme_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    bool red[IR_MAX_RANK];
    int rank;
    int64_t y[IR_MAX_RANK], numel, xn;
    if (op_fold_need_value(g, n, 0, &x, err) || extreme_shape(g, n, x, red, &rank, y, err))
        return OC_ERR;
    op_set_out(g, n, 0, x->dtype, rank, y);
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    bool *seen = oc_calloc((size_t)(numel ? numel : 1), sizeof *seen),
         fl = op_fold_is_float(x->dtype);
    bool max = n->op == OP_REDUCE_MAX;
    num *best = oc_calloc((size_t)(numel ? numel : 1), sizeof *best);
    ir_tensor_numel(x, &xn);
    for (int64_t i = 0; i < xn; i++) {
        int64_t o = op_fold_reduced_at(x, red, i);
        num v = op_fold_num_get(x, i);
        bool better = fl ? (max ? v.f > best[o].f : v.f < best[o].f)
                         : (max ? v.i > best[o].i : v.i < best[o].i);
        bool nan = fl && best[o].f != best[o].f; /* a NaN stays, as ONNX's */
        if (!seen[o] || (fl && v.f != v.f) || (!nan && better)) best[o] = v;
        seen[o] = true;
    }
    for (int64_t o = 0; o < numel; o++) op_fold_num_put(buf, x->dtype, o, best[o], x->dtype);
    oc_free(seen), oc_free(best);
    return op_fold_set(g, n, buf, numel);
}

/* op_def.lower: ReduceMax / ReduceMin of run-time float data (torch.max(x, dim)[0], amax:
 * VOLO's class-token head) is a max pooling, whose kernels and gradient (to the first
 * maximum, as torch.max(dim)'s index) run it: X's reduced dims moved last ("<node>/moved"),
 * viewed as [M, 1, 1, R] ("<node>/rows"), MaxPool with kernel [1, R] ("<node>/max"), then
 * reshaped to the output (the node itself); ReduceMin negates before and after. */
static int extreme_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (op_is_value(x) || !ir_dtype_is_compute(x->dtype)) return OC_OK; /* folds, or refused */
    bool red[IR_MAX_RANK];
    int rank, r = x->rank, np = 0;
    int64_t y[IR_MAX_RANK], perm[IR_MAX_RANK], m = 1, rr = 1;
    if (extreme_shape(g, n, x, red, &rank, y, err)) return OC_ERR;
    for (int d = 0; d < r; d++)
        if (!red[d]) perm[np++] = d, m *= x->dims[d];
    for (int d = 0; d < r; d++)
        if (red[d]) perm[np++] = d, rr *= x->dims[d];
    bool moved = false, min = n->op == OP_REDUCE_MIN;
    for (int d = 0; d < r; d++) moved = moved || perm[d] != d;
    int t = n->inputs[0], at = node;
    char *base = oc_strdup(n->name);
    if (moved) {
        t = op_rewrite_insert(g, at, base, "moved", OP_TRANSPOSE, t, -1, -1);
        ir_attr a = {.name = "perm", .type = IR_ATTR_INTS, .n = r, .ints = perm};
        ir_node_add_attr(g, at++, &a);
    }
    int64_t rows[4] = {m, 1, 1, rr}, kernel[2] = {1, rr};
    t = op_rewrite_reshape(g, at++, base, "rows", t, 4, rows);
    if (min) t = op_rewrite_insert(g, at++, base, "negated", OP_NEG, t, -1, -1);
    t = op_rewrite_insert(g, at, base, "max", OP_MAX_POOL, t, -1, -1);
    ir_attr k = {.name = "kernel_shape", .type = IR_ATTR_INTS, .n = 2, .ints = kernel};
    ir_node_add_attr(g, at++, &k);
    if (min) t = op_rewrite_insert(g, at++, base, "min", OP_NEG, t, -1, -1);
    int ys = op_rewrite_ints(g, base, "shape", rank, y);
    op_rewrite_become(g, at, OP_RESHAPE);
    ir_node_add_input(g, at, t);
    ir_node_add_input(g, at, ys);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_reduce_mean = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = reduce_infer,
    .decode = reduce_decode,
    .cost = reduce_cost,
    .grad = reduce_grad,
};
/* Whether e (a plan-time value, right-aligned to rank r) is 1 where coordinates a < b agree
 * and 0 elsewhere, of dims da at a and db at b and 1 at every other dim. */
static bool identity_mask(const ir_tensor *e, int r, int a, int b, int64_t da, int64_t db) {
    if (!ir_dtype_is_float(e->dtype) || e->rank > r) return false;
    for (int d = 0; d < r; d++) {
        int64_t ed = d < r - e->rank ? 1 : e->dims[d - (r - e->rank)];
        if (ed != (d == a ? da : d == b ? db : 1)) return false;
    }
    for (int64_t i = 0; i < da * db; i++)
        if (op_fold_num_get(e, i).f != (i / db == i % db ? 1.0 : 0.0)) return false;
    return true;
}

/* ReduceSum over one of two dims of Mul(X, E), E a plan-time identity mask over them
 * (torch.diagonal from both exporters: EyeLike, Mul, ReduceSum; einsum's diagonals), the
 * Mul read by nothing else: the diagonal gathered instead, O(n) where the product was
 * O(n^2) in time and memory (a Barlow Twins loss's 8192 x 8192 correlation: 256 MiB the
 * mask, 256 MiB the product). The Mul becomes a Transpose of X to (kept, summed, rest..),
 * then GatherND at the rows (i, i) and a Reshape (the node) to the output's dims. Where the
 * kept dim is longer than the summed one (no partner on the diagonal) nothing changes. */
static int diagonal_lower(ir_graph *g, int node, const ir_tensor *x, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    if (!ir_dtype_is_compute(x->dtype) || x->n_consumers != 1 || x->producer < 0) return OC_OK;
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o] == n->inputs[0]) return OC_OK;
    int mul = x->producer, r = x->rank;
    const ir_node *m = &g->nodes[mul];
    if (m->op != OP_MUL || m->n_inputs != 2 || m->inputs[0] < 0 || m->inputs[1] < 0) return OC_OK;
    const ir_tensor *e = &g->tensors[m->inputs[1]];
    int xt = m->inputs[0];
    if (!op_is_value(e)) e = &g->tensors[m->inputs[0]], xt = m->inputs[1];
    const ir_tensor *xin = &g->tensors[xt];
    if (!op_is_value(e) || op_is_value(xin) || xin->rank != r ||
        memcmp(xin->dims, x->dims, (size_t)r * sizeof x->dims[0]) != 0)
        return OC_OK;
    bool red[IR_MAX_RANK], noop;
    if (reduce_axes(g, n, x, red, &noop, err)) return OC_ERR;
    int s = -1, nred = 0;
    for (int d = 0; d < r; d++)
        if (red[d]) s = d, nred++;
    if (noop || nred != 1) return OC_OK;
    int k = -1; /* the mask's other dim */
    for (int d = 0; d < r; d++) {
        int64_t ed = d < r - e->rank ? 1 : e->dims[d - (r - e->rank)];
        if (d != s && ed > 1) {
            if (k >= 0) return OC_OK;
            k = d;
        }
    }
    if (k < 0 || x->dims[k] > x->dims[s]) return OC_OK;
    int a = k < s ? k : s, b = k < s ? s : k;
    if (!identity_mask(e, r, a, b, x->dims[a], x->dims[b])) return OC_OK;
    /* the Mul: X transposed to (k, s, rest..) */
    int64_t perm[IR_MAX_RANK], ydims[IR_MAX_RANK], diag = x->dims[k];
    int np = 0, yrank = 0;
    perm[np++] = k, perm[np++] = s;
    for (int d = 0; d < r; d++)
        if (d != k && d != s) perm[np++] = d;
    bool keep = ir_attr_int(n, "keepdims", 1) != 0;
    for (int d = 0; d < r; d++)
        if (d != s || keep) ydims[yrank++] = d == s ? 1 : x->dims[d];
    op_rewrite_become(g, mul, OP_TRANSPOSE);
    ir_node_add_input(g, mul, xt);
    op_rewrite_attr_ints(g, mul, "perm", r, perm);
    if (op_infer(g, &g->nodes[mul], err)) return OC_ERR;
    /* GatherND at (i, i): (k, rest..); its positions moved to the output's order by the
     * Reshape only when k is the output's first kept dim, else a Transpose first */
    int64_t *rows = oc_malloc((size_t)diag * 2 * sizeof *rows);
    for (int64_t i = 0; i < diag; i++) rows[2 * i] = rows[2 * i + 1] = i;
    char *base = oc_strdup(g->nodes[node].name);
    int idx = op_rewrite_constant(g, base, "diagonal_rows", IR_DTYPE_INT64, 2, (int64_t[]){diag, 2},
                                  rows);
    oc_free(rows);
    int at = node;
    int t = op_rewrite_insert(g, at++, base, "diagonal", OP_GATHER_ND, g->nodes[mul].outputs[0],
                              idx, -1);
    int kpos = k < s ? k : k - 1; /* k's place among the dims but s */
    if (kpos > 0) {
        int64_t back[IR_MAX_RANK];
        for (int j = 0; j < r - 1; j++) back[j] = j < kpos ? j + 1 : j == kpos ? 0 : j;
        t = op_rewrite_insert(g, at, base, "diagonal_in_place", OP_TRANSPOSE, t, -1, -1);
        op_rewrite_attr_ints(g, at++, "perm", r - 1, back);
    }
    op_rewrite_become(g, at, OP_RESHAPE);
    ir_node_add_input(g, at, t);
    ir_node_add_input(g, at, op_rewrite_ints(g, base, "output_shape", yrank, ydims));
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* op_def.lower: a diagonal (diagonal_lower); ReduceSum of a run-time mask cast to integers (`(x > 0).sum()`, a count of
 * what an activation's comparison picks, read as a float: masked means, accuracies) counts in
 * float32, exact below 2^24 elements, when every reader of the count casts it to float32:
 * the mask cast to float32 ("<node>/mask_as_float"), the ReduceSum's output float32 (its
 * readers' Casts copy it). Other counts of run-time masks stay refused. */
#define REDUCE_COUNT_MAX_ELEMENTS (INT64_C(1) << 24)
static int reduce_sum_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    int64_t numel;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (!op_is_value(x) && ir_dtype_is_compute(x->dtype))
        return diagonal_lower(g, node, x, changed, err);
    if (op_is_value(x) || (x->dtype != IR_DTYPE_INT64 && x->dtype != IR_DTYPE_INT32) ||
        x->producer < 0 || !ir_tensor_numel(x, &numel) || numel > REDUCE_COUNT_MAX_ELEMENTS)
        return OC_OK; /* folds, or infer names it */
    const ir_node *cast = &g->nodes[x->producer];
    if (cast->op != OP_CAST || cast->n_inputs != 1 || cast->inputs[0] < 0) return OC_OK;
    const ir_tensor *m = &g->tensors[cast->inputs[0]], *y = ir_node_out(g, n, 0);
    if (m->dtype != IR_DTYPE_BOOL || op_is_value(m) || !y) return OC_OK;
    for (int c = 0; c < y->n_consumers; c++) {
        const ir_node *r = &g->nodes[y->consumers[c]];
        if (r->op != OP_CAST || ir_attr_int(r, "to", 0) != IR_DTYPE_FLOAT) return OC_OK;
    }
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o] == n->outputs[0]) return OC_OK;
    char *base = oc_strdup(n->name);
    int f = op_rewrite_insert(g, node, base, "mask_as_float", OP_CAST, cast->inputs[0], -1, -1);
    op_rewrite_attr_int(g, node, "to", IR_DTYPE_FLOAT);
    ir_node_set_input(g, node + 1, 0, f);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

const op_def op_def_reduce_sum = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = reduce_infer,
    .lower = reduce_sum_lower,
    .decode = reduce_decode,
    .cost = reduce_cost,
    .grad = reduce_grad,
    .autocast = OP_AUTOCAST_FP32,
};
const op_def op_def_broadcast_to = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = broadcast_to_infer,
    .decode = broadcast_to_decode,
};
const op_def op_def_reduce_max = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = extreme_infer,
    .lower = extreme_lower,
};
const op_def op_def_reduce_min = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = extreme_infer,
    .lower = extreme_lower,
};
