/* op_fold_math.c — more of the glue exporters write around a network, evaluated at
 * plan time: CumSum of plan-time values (op_fold_cum_sum; of an activation it runs,
 * op_cum_sum.c), Tile (of run-time data rewritten as an Expand), and Pow of plan-time
 * values (op_fold_pow; Pow of an activation runs as a pointwise op). Hugging Face's models compute position ids, masks,
 * relative-position buckets and ALiBi slopes so, from shapes and buffers. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_rewrite.h"

int op_fold_cum_sum(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *x, *ax;
    int64_t nax, axis;
    if (op_fold_need_value(g, n, 0, &x, err) || op_fold_need_value(g, n, 1, &ax, err))
        return OC_ERR;
    if ((ax->dtype != IR_DTYPE_INT64 && ax->dtype != IR_DTYPE_INT32) ||
        !ir_tensor_numel(ax, &nax) || nax != 1)
        return oc_fail(err, "axis '%s' must be one int64 or int32 value", ax->name);
    if (x->rank < 1) return oc_fail(err, "input '%s' is a scalar", x->name);
    if (op_axis(op_fold_num_get(ax, 0).i, x->rank, "axis", &axis, err)) return OC_ERR;
    bool exclusive = ir_attr_int(n, "exclusive", 0) != 0,
         reverse = ir_attr_int(n, "reverse", 0) != 0;
    op_set_out_like(g, n, 0, x);
    int64_t numel, len = x->dims[axis], inner = 1;
    for (int d = (int)axis + 1; d < x->rank; d++) inner *= x->dims[d];
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    bool fl = op_fold_is_float(x->dtype);
    for (int64_t o = 0; len > 0 && o < numel / len; o++) { /* each line along the axis */
        int64_t base = (o / inner) * len * inner + o % inner;
        double f = 0.0; /* float sums in double, rounded once a store */
        uint64_t i = 0; /* integer sums wrap as int64's do in two's complement */
        for (int64_t k = 0; k < len; k++) {
            int64_t at = base + (reverse ? len - 1 - k : k) * inner;
            num v = op_fold_num_get(x, at);
            if (!exclusive) f += v.f, i += (uint64_t)v.i;
            num sum = {fl ? f : (double)(int64_t)i, (int64_t)i};
            op_fold_num_put(buf, x->dtype, at, sum, x->dtype);
            if (exclusive) f += v.f, i += (uint64_t)v.i;
        }
    }
    return op_fold_set(g, n, buf, numel);
}

/* Tile: x repeated repeats[d] times along each dim d. */
static int tile_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    const int64_t *rep;
    int64_t nrep;
    if (op_fold_need_value(g, n, 0, &x, err) || op_in_int64s(g, n, 1, &rep, &nrep, err))
        return OC_ERR;
    if (nrep != x->rank)
        return oc_fail(err, "repeats has %" PRId64 " values, input '%s' rank %d", nrep, x->name,
                       x->rank);
    int64_t y[IR_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        if (rep[d] < 0) return oc_fail(err, "repeats[%d] is negative (%" PRId64 ")", d, rep[d]);
        if (rep[d] > 0 && x->dims[d] > INT64_MAX / rep[d])
            return oc_fail(err, "repeats[%d] makes dim %d too large", d, d);
        y[d] = x->dims[d] * rep[d];
    }
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    size_t es = (size_t)ir_dtype_size(x->dtype);
    for (int64_t o = 0; o < numel; o++) {
        int64_t rest = o, off = 0, stride = 1;
        for (int d = x->rank - 1; d >= 0; d--) { /* o's coordinates, each mod x's dim */
            off += (rest % y[d]) % x->dims[d] * stride;
            rest /= y[d];
            stride *= x->dims[d];
        }
        memcpy(buf + (size_t)o * es, (const uint8_t *)x->data + (size_t)off * es, es);
    }
    return op_fold_set(g, n, buf, numel);
}

int op_fold_pow(ir_graph *g, ir_node *n, oc_err *err) {
    ir_tensor *a, *b;
    int r;
    int64_t od[IR_MAX_RANK];
    if (op_fold_binary(g, n, IR_DTYPE_UNDEFINED, &a, &b, &r, od, err)) return OC_ERR;
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    bool fl = op_fold_is_float(a->dtype), wide = a->dtype == IR_DTYPE_DOUBLE;
    for (int64_t o = 0; o < numel; o++) {
        double x = op_fold_num_get(a, op_fold_bcast_at(a, r, od, o)).f;
        double e = op_fold_num_get(b, op_fold_bcast_at(b, r, od, o)).f;
        double p = wide || !fl ? pow(x, e) : (double)powf((float)x, (float)e);
        /* an integer base: the power truncated (NaN and out of range: 0 and the limits) */
        num v = {p, isnan(p) ? 0 : p >= 9.2e18 ? INT64_MAX : p <= -9.2e18 ? INT64_MIN : (int64_t)p};
        op_fold_num_put(buf, a->dtype, o, v, a->dtype);
    }
    return op_fold_set(g, n, buf, numel);
}

/* op_def.lower: Tile of run-time data (an activation, a parameter: XCiT's positional
 * encoding repeated over the batch) by plan-time repeats is a broadcast: x reshaped with a
 * 1 before each repeated dim, Expanded to the repeats there, then reshaped to the tiled
 * shape ("<node>/split", "<node>/copies", the node itself the last Reshape). Expand's
 * gradient, a sum over the copies, is Tile's. */
static int tile_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    const int64_t *rep;
    int64_t nrep;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    const ir_tensor *rt = ir_node_in(g, n, 1);
    if (op_is_value(x) || !rt || !op_is_value(rt)) return OC_OK; /* folds, or infer refuses */
    if (op_in_int64s(g, n, 1, &rep, &nrep, err)) return OC_ERR;
    if (nrep != x->rank) return OC_OK; /* infer names the mismatch */
    int64_t split[2 * IR_MAX_RANK], wide[2 * IR_MAX_RANK], y[IR_MAX_RANK];
    int rank = x->rank, r2 = 0;
    for (int d = 0; d < rank; d++) {
        if (rep[d] < 0) return oc_fail(err, "repeats[%d] is negative (%" PRId64 ")", d, rep[d]);
        if (rep[d] > 0 && x->dims[d] > INT64_MAX / rep[d])
            return oc_fail(err, "repeats[%d] makes dim %d too large", d, d);
        if (rep[d] != 1) {
            split[r2] = 1;
            wide[r2++] = rep[d];
        }
        split[r2] = wide[r2] = x->dims[d];
        r2++;
        y[d] = x->dims[d] * rep[d];
    }
    if (r2 > IR_MAX_RANK)
        return oc_fail(err,
                       "Tile of run-time data '%s' repeats %d dims of %d: the broadcast it "
                       "becomes would have rank %d, more than %d",
                       x->name, r2 - rank, rank, r2, IR_MAX_RANK);
    int xt = n->inputs[0];
    char *base = oc_strdup(n->name);
    if (r2 == rank) { /* every repeat 1: a copy */
        op_rewrite_become(g, node, OP_IDENTITY);
        ir_node_add_input(g, node, xt);
    } else {
        int wt = op_rewrite_ints(g, base, "copies_shape", r2, wide);
        int yt = op_rewrite_ints(g, base, "shape", rank, y);
        int sp = op_rewrite_reshape(g, node, base, "split", xt, r2, split);
        int cp = op_rewrite_insert(g, node + 1, base, "copies", OP_EXPAND, sp, wt, -1);
        op_rewrite_become(g, node + 2, OP_RESHAPE);
        ir_node_add_input(g, node + 2, cp);
        ir_node_add_input(g, node + 2, yt);
    }
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* Data differentiable (the broadcast's), repeats plan-time. */
static const op_role tile_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_tile = {.min_inputs = 2,
                            .max_inputs = 2,
                            .min_outputs = 1,
                            .max_outputs = 1,
                            .roles = tile_roles,
                            .n_roles = 2,
                            .infer = tile_infer,
                            .lower = tile_lower};
