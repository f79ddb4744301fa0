/* op_slice.c — Slice and Split (ShuffleNet's channel split, as the legacy
 * exporter writes it with Slice and the default one with Split), their
 * gradient rules and the backward op SliceGrad beside them. Split runs on the
 * ConcatGrad kernels (one slab per output along the axis). */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* The full-rank start/step of Slice node n over x (and the output dims). */
static int slice_geometry(ir_graph *g, ir_node *n, const ir_tensor *x, op_slice_args *p,
                          int64_t *out, oc_err *err) {
    const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
    int64_t ns, ne, na = -1, nst = -1;
    if (g->opset >= 10) {
        if (op_in_int64s(g, n, 1, &starts, &ns, err) || op_in_int64s(g, n, 2, &ends, &ne, err))
            return OC_ERR;
        if (ir_node_in(g, n, 3) && op_in_int64s(g, n, 3, &axes, &na, err)) return OC_ERR;
        if (ir_node_in(g, n, 4) && op_in_int64s(g, n, 4, &steps, &nst, err)) return OC_ERR;
    } else {
        int a = ir_attr_ints(n, "starts", &starts), b = ir_attr_ints(n, "ends", &ends);
        if (a < 0 || b < 0) return oc_fail(err, "attributes 'starts' and 'ends' are required");
        ns = a, ne = b;
        int c = ir_attr_ints(n, "axes", &axes);
        na = c;
    }
    if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns) || ns > x->rank)
        return oc_fail(err, "starts, ends, axes and steps differ in length");
    p->rank = x->rank;
    bool seen[IR_MAX_RANK] = {false};
    for (int d = 0; d < x->rank; d++) p->start[d] = 0, p->step[d] = 1, out[d] = x->dims[d];
    for (int64_t i = 0; i < ns; i++) {
        int64_t a = i;
        if (axes && op_axis(axes[i], x->rank, "axis", &a, err)) return OC_ERR;
        if (seen[a]) return oc_fail(err, "axis %" PRId64 " repeated", a);
        seen[a] = true;
        int64_t dim = x->dims[a], st = steps ? steps[i] : 1, s = starts[i], e = ends[i];
        if (st == 0) return oc_fail(err, "step 0 on axis %" PRId64, a);
        /* INT64 extremes mean "to the end"; keep the arithmetic in range. */
        if (s < -dim) s = -dim;
        if (e < -dim - 1) e = -dim - 1;
        if (s > dim) s = dim;
        if (e > dim) e = dim;
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (st > 0) {
            s = s < 0 ? 0 : s;
            e = e < 0 ? 0 : e;
        } else {
            s = s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        int64_t len = st > 0 ? (e - s + st - 1) / st : (s - e + (-st) - 1) / (-st);
        out[a] = len > 0 ? len : 0;
        p->start[a] = s, p->step[a] = st;
    }
    return OC_OK;
}

static int slice_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    op_slice_args p;
    int64_t y[IR_MAX_RANK];
    if (op_in_shaped(g, n, 0, &x, err) || slice_geometry(g, n, x, &p, y, err)) return OC_ERR;
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    if (!op_is_value(x)) return OC_OK;
    /* Fold a plan-time value (shape arithmetic). */
    int64_t numel, es = ir_dtype_size(x->dtype), st[IR_MAX_RANK], acc = 1;
    ir_tensor_numel(ir_node_out(g, n, 0), &numel);
    if (numel * es > OP_FOLD_MAX_BYTES) return oc_fail(err, "too large to fold");
    for (int d = x->rank - 1; d >= 0; d--) st[d] = acc, acc *= x->dims[d];
    uint8_t *buf = oc_malloc((size_t)(numel * es) + 1);
    for (int64_t o = 0; o < numel; o++) {
        int64_t rem = o, off = 0;
        for (int d = x->rank - 1; d >= 0; d--) {
            off += (p.start[d] + (rem % y[d]) * p.step[d]) * st[d];
            rem /= y[d];
        }
        memcpy(buf + o * es, (const uint8_t *)x->data + off * es, (size_t)es);
    }
    ir_tensor_set_data(ir_node_out(g, n, 0), buf, (size_t)(numel * es));
    oc_free(buf);
    return OC_OK;
}

static int slice_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    int64_t y[IR_MAX_RANK];
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    return slice_geometry((ir_graph *)g, n, x, &op_args_new(n)->slice, y, err);
}

/* dX = zeros with dY written at the sliced positions (SliceGrad). */
static int slice_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const op_slice_args *p = &op_args_of(grad_fwd(c))->slice;
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int rank = p->rank;
    int64_t start[IR_MAX_RANK], step[IR_MAX_RANK], dims[IR_MAX_RANK];
    memcpy(start, p->start, sizeof start);
    memcpy(step, p->step, sizeof step);
    memcpy(dims, x->dims, sizeof dims);
    int b = grad_node(c, "grad", OP_SLICE_GRAD);
    grad_in(c, b, dy);
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "input_shape", rank, dims);
    grad_attr_ints(c, b, "starts", rank, start);
    grad_attr_ints(c, b, "steps", rank, step);
    return grad_finish(c, b);
}

/* SliceGrad(dY) -> dX (input_shape); dY must be the slice's shape. */
static int slice_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy;
    if (op_in_shaped(g, n, 0, &dy, err)) return OC_ERR;
    const int64_t *dims, *start, *step;
    int r = ir_attr_ints(n, "input_shape", &dims);
    if (r < 0 || r != dy->rank || ir_attr_ints(n, "starts", &start) != r ||
        ir_attr_ints(n, "steps", &step) != r)
        return oc_fail(err, "input_shape, starts and steps must have dY's rank");
    for (int d = 0; d < r; d++) {
        if (dims[d] < 0 || step[d] == 0 || start[d] < 0 || start[d] >= (dims[d] ? dims[d] : 1))
            return oc_fail(err, "dim %d: start %" PRId64 " or step %" PRId64 " outside %" PRId64, d,
                           start[d], step[d], dims[d]);
        if (dy->dims[d] > 0) { /* the last index written stays inside */
            int64_t last = start[d] + (dy->dims[d] - 1) * step[d];
            if (last < 0 || last >= dims[d] || dy->dims[d] > dims[d])
                return oc_fail(err, "dim %d: '%s' does not fit input_shape", d, dy->name);
        }
    }
    op_set_out(g, n, 0, dy->dtype, r, dims);
    return OC_OK;
}

static int slice_grad_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g, (void)err;
    op_slice_args *p = &op_args_new(n)->slice;
    const int64_t *v;
    p->rank = ir_attr_ints(n, "starts", &v);
    memcpy(p->start, v, (size_t)p->rank * sizeof *v);
    ir_attr_ints(n, "steps", &v);
    memcpy(p->step, v, (size_t)p->rank * sizeof *v);
    return OC_OK;
}

/* Split's sizes: the split input (opset >= 13) or attribute, num_outputs
 * (opset 18: ceil-sized chunks, the last smaller), or equal parts. */
static int split_sizes(ir_graph *g, ir_node *n, const ir_tensor *x, op_split_args *p, oc_err *err) {
    if (op_axis(ir_attr_int(n, "axis", 0), x->rank, "axis", &p->axis, err)) return OC_ERR;
    int64_t dim = x->dims[p->axis];
    const int64_t *split = NULL;
    int64_t ns = -1;
    if (g->opset >= 13) {
        if (ir_node_in(g, n, 1) && op_in_int64s(g, n, 1, &split, &ns, err)) return OC_ERR;
    } else {
        int k = ir_attr_ints(n, "split", &split);
        ns = k;
    }
    p->n = n->n_outputs;
    if (p->n > OP_MAX_SPLIT) return oc_fail(err, "more than %d outputs", OP_MAX_SPLIT);
    const ir_tensor *st = g->opset >= 13 ? ir_node_in(g, n, 1) : NULL;
    if (st && st->rank == 0 && ns == 1) {
        /* A chunk size: the SplitToSequence -> SequenceAt form the importer turns
         * into Split (onnx_import.c); every chunk must be one output. */
        int64_t s = split[0];
        if (s <= 0) return oc_fail(err, "chunk size %" PRId64 " is not positive", s);
        if ((dim + s - 1) / s != p->n)
            return oc_fail(
                err, "dim %" PRId64 " makes %" PRId64 " chunks of %" PRId64 ", the graph uses %d",
                dim, (dim + s - 1) / s, s, p->n);
        for (int i = 0; i < p->n; i++) p->sizes[i] = dim - s * i < s ? dim - s * i : s;
        return OC_OK;
    }
    if (ns >= 0) {
        if (ns != p->n) return oc_fail(err, "split has %" PRId64 " sizes for %d outputs", ns, p->n);
        int64_t sum = 0;
        for (int i = 0; i < p->n; i++) {
            if (split[i] < 0) return oc_fail(err, "split size %" PRId64 " is negative", split[i]);
            p->sizes[i] = split[i];
            sum += split[i];
        }
        if (sum != dim)
            return oc_fail(err, "split sizes add up to %" PRId64 ", not %" PRId64, sum, dim);
        return OC_OK;
    }
    int64_t k = ir_attr_int(n, "num_outputs", p->n);
    if (k != p->n) return oc_fail(err, "num_outputs %" PRId64 " but %d outputs", k, p->n);
    int64_t chunk = (dim + p->n - 1) / p->n;
    if (g->opset < 18 && dim % p->n)
        return oc_fail(err, "dim %" PRId64 " does not split into %d equal parts", dim, p->n);
    for (int i = 0; i < p->n; i++) {
        int64_t left = dim - chunk * i;
        p->sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
    }
    return OC_OK;
}

/* op_def.lower: a Split from the importer's SplitToSequence (a chunk size, or sizes) whose
 * last chunks the model never reads gets them as outputs nothing reads ("<node>/chunk_k"),
 * so that the outputs cover the input (and its gradient, their Concat, has the input's
 * shape): timm's MixNet reads the first of two. */
static int split_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x, *st = g->opset >= 13 ? ir_node_in(g, n, 1) : NULL;
    const int64_t *split;
    int64_t ns, count = 0;
    if (!st || st->rank > 1) return OC_OK;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_int64s(g, n, 1, &split, &ns, err)) return OC_ERR;
    if (st->rank == 1) {
        count = ns;
    } else {
        int64_t axis;
        if (op_axis(ir_attr_int(n, "axis", 0), x->rank, "axis", &axis, err)) return OC_ERR;
        int64_t dim = x->dims[axis], s = split[0];
        if (s <= 0) return oc_fail(err, "chunk size %" PRId64 " is not positive", s);
        count = (dim + s - 1) / s;
    }
    if (count <= n->n_outputs || count > OP_MAX_SPLIT) return OC_OK; /* infer says which */
    ir_dtype dt = x->dtype;
    for (int k = n->n_outputs; k < count; k++) {
        char *name = oc_sprintf("%s/chunk_%d", g->nodes[node].name, k);
        int t = ir_tensor_add(g, name, dt);
        oc_free(name);
        ir_node_add_output(g, node, t);
    }
    *changed = true;
    return OC_OK;
}

static int split_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    op_split_args p;
    if (op_in_shaped(g, n, 0, &x, err) || split_sizes(g, n, x, &p, err)) return OC_ERR;
    for (int i = 0; i < p.n; i++) {
        int64_t y[IR_MAX_RANK];
        memcpy(y, x->dims, sizeof y);
        y[p.axis] = p.sizes[i];
        op_set_out(g, n, i, x->dtype, x->rank, y);
    }
    return OC_OK;
}

static int split_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    return split_sizes((ir_graph *)g, n, ir_node_in((ir_graph *)g, n, 0), &op_args_new(n)->split,
                       err);
}

/* dX = Concat(dY_1..dY_k) along the axis (zeros for an output no gradient reaches). */
static int split_grad(grad_ctx *c) {
    if (!grad_wants(c, 0)) return OC_OK;
    const ir_node *f = grad_fwd(c);
    const op_split_args *p = &op_args_of(f)->split;
    int k = p->n, any = 0;
    int64_t axis = p->axis, sizes[OP_MAX_SPLIT];
    memcpy(sizes, p->sizes, sizeof sizes);
    int dys[OP_MAX_SPLIT];
    for (int i = 0; i < k; i++) any += (dys[i] = grad_dy(c, i)) >= 0;
    if (!any) return OC_OK;
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank; /* x is not read below: adding tensors moves it */
    ir_dtype dt = x->dtype;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    for (int i = 0; i < k; i++)
        if (dys[i] < 0) {
            char suffix[32];
            snprintf(suffix, sizeof suffix, "grad_zero%d", i);
            dims[axis] = sizes[i];
            dys[i] = grad_const_zeros(c, suffix, dt, rank, dims);
        }
    int b = grad_node(c, "grad", OP_CONCAT);
    for (int i = 0; i < k; i++) grad_in(c, b, dys[i]);
    grad_out_dx(c, b, 0);
    grad_attr_int(c, b, "axis", axis);
    return grad_finish(c, b);
}

static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_slice = {
    .min_inputs = 1,
    .max_inputs = 5,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = slice_infer,
    .decode = slice_decode,
    .grad = slice_grad,
};
const op_def op_def_slice_grad = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = slice_grad_infer,
    .decode = slice_grad_decode,
};
const op_def op_def_split = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = OP_MAX_SPLIT,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = split_infer,
    .lower = split_lower,
    .decode = split_decode,
    .grad = split_grad,
};
