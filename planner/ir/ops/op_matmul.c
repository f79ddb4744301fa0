/* op_matmul.c — MatMul: X (.., M, K) times W (K, N) -> Y (.., M, N), every
 * leading dim of X batched into the rows (a Linear layer on channels-last
 * activations: ConvNeXt's blocks, a transformer's projections), or X (b.., M,
 * K) times Y (b.., K, N) with the same batch dims b.. (attention's Q K^T and
 * P V: one GEMM per batch). Its gradient rule and the backward ops
 * MatMulGradA (dX = dY W^T) and MatMulGradB (dW = X^T dY, summed over every
 * row when W is a matrix, per batch when batched: attribute `batched`) are
 * beside it; the three share one kernel per backend. The rest of numpy's
 * MatMul (a vector on either side, batch dims that broadcast) is rewritten
 * at load into that (matmul_lower). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* W batched: same rank as X, equal leading dims. */
static int batch_dims_agree(const ir_tensor *x, const ir_tensor *w, bool *batched, oc_err *err) {
    *batched = w->rank > 2;
    if (!*batched) return OC_OK;
    bool ok = w->rank == x->rank;
    for (int d = 0; ok && d + 2 < x->rank; d++) ok = x->dims[d] == w->dims[d];
    if (!ok)
        return oc_fail(err,
                       "'%s' and '%s': batch dims must be equal (broadcasting batch dims is "
                       "not supported)",
                       x->name, w->name);
    return OC_OK;
}

/* --- numpy's MatMul rewritten into the forms above (op_def.lower) --- */

typedef struct mm_rewrite {
    ir_graph *g;
    char *name; /* the MatMul's (owned): "<name>/<what>" names what is inserted */
    int node;   /* the MatMul's index, moved up by every insert before it */
} mm_rewrite;

/* op_rewrite_insert / op_rewrite_axes at `at`, keeping w->node on the MatMul. */
static int insert_at(mm_rewrite *w, int at, op_kind k, const char *what, int in0, int in1, int y) {
    y = op_rewrite_insert(w->g, at, w->name, what, k, in0, in1, y);
    if (at <= w->node) w->node++;
    return y;
}

static int axes_at(mm_rewrite *w, int at, op_kind k, const char *what, int x, int n,
                   const int64_t *axes, int y) {
    y = op_rewrite_axes(w->g, at, w->name, what, k, x, n, axes, 13, y);
    if (at <= w->node) w->node++;
    return y;
}

/* x (.., M, K) broadcast to the batch dims of `other` as well: Expand(x, Concat(other's
 * batch dims, [1, 1])), the batch dims read by Shape and Gather (folded at plan time, so
 * the graph keeps no batch size of its own). Expand's gradient sums back over them. */
static int expand_to(mm_rewrite *w, const char *what, int x, int other) {
    ir_graph *g = w->g;
    int64_t idx[IR_MAX_RANK], ones[2] = {1, 1};
    int r = g->tensors[other].rank;
    for (int d = 0; d + 2 < r; d++) idx[d] = d;
    char *s = oc_sprintf("%s_batch_at", what);
    int at = op_rewrite_ints(g, w->name, s, r - 2, idx);
    oc_free(s);
    s = oc_sprintf("%s_rows_cols", what);
    int tail = op_rewrite_ints(g, w->name, s, 2, ones);
    oc_free(s);
    char sub[96];
    snprintf(sub, sizeof sub, "%s_shape", what);
    int sh = insert_at(w, w->node, OP_SHAPE, sub, other, -1, -1);
    snprintf(sub, sizeof sub, "%s_batch", what);
    int batch = insert_at(w, w->node, OP_GATHER, sub, sh, at, -1);
    snprintf(sub, sizeof sub, "%s_to", what);
    int to = insert_at(w, w->node, OP_CONCAT, sub, batch, tail, -1);
    ir_attr axis = {.name = "axis", .type = IR_ATTR_INT, .i = 0};
    ir_node_add_attr(g, g->tensors[to].producer, &axis);
    return insert_at(w, w->node, OP_EXPAND, what, x, to, -1);
}

/* The MatMul writes a new tensor, and a Squeeze of the n axes after it writes its old
 * output: the dims a vector operand was given back out of the product. */
static void squeeze_product(mm_rewrite *w, int n, const int64_t *axes) {
    int out = w->g->nodes[w->node].outputs[0];
    int y = op_rewrite_redirect(w->g, w->node, w->name, "product");
    axes_at(w, w->node + 1, OP_SQUEEZE, "squeeze", y, n, axes, out);
}

/* The batch dims of x (all but the last two), right-aligned to rank r - 2 with 1s. */
static void batch_dims(const ir_tensor *x, int r, int64_t *b) {
    for (int d = 0; d + 2 < r; d++) {
        int s = d - (r - x->rank);
        b[d] = s >= 0 ? x->dims[s] : 1;
    }
}

static bool all_ones(const ir_tensor *x) {
    for (int d = 0; d + 2 < x->rank; d++)
        if (x->dims[d] != 1) return false;
    return true;
}

/* Two vectors: ReduceSum of their Mul. A vector operand (rank 1) is Unsqueezed to a
 * matrix, the product Squeezed back; then
 * batch dims that differ: W's all 1 under an X of at least its rank are Squeezed away
 * (W the matrix it is: no copy), otherwise each side whose batch dims are not the
 * broadcast ones is Expanded to them. The MatMul comes back here each time, and is left
 * as it is once its batch dims agree or W is a matrix. */
static int matmul_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    const ir_node *n = &g->nodes[node];
    const ir_tensor *a = ir_node_in(g, n, 0), *b = ir_node_in(g, n, 1);
    if (a->rank < 1 || b->rank < 1) return OC_OK; /* unshaped or scalars: infer says so */
    int ra = a->rank, rb = b->rank, r = ra > rb ? ra : rb;
    if (ra == 1 && rb == 1) { /* a dot product: ReduceSum(Mul(a, b)), the node the sum */
        if (a->dims[0] != b->dims[0])
            return oc_fail(err, "'%s' and '%s': inner dims differ: %" PRId64 " and %" PRId64,
                           a->name, b->name, a->dims[0], b->dims[0]);
        char *name = oc_strdup(n->name);
        int ia = n->inputs[0], ib = n->inputs[1];
        int64_t axis = 0;
        int prod = op_rewrite_insert(g, node, name, "products", OP_MUL, ia, ib, -1);
        op_rewrite_become(g, node + 1, OP_REDUCE_SUM);
        ir_node_add_input(g, node + 1, prod);
        if (g->opset >= 13)
            ir_node_add_input(g, node + 1, op_rewrite_ints(g, name, "axes", 1, &axis));
        else
            ir_node_add_attr(
                g, node + 1,
                &(ir_attr){.name = "axes", .type = IR_ATTR_INTS, .n = 1, .ints = &axis});
        ir_node_add_attr(g, node + 1, &(ir_attr){.name = "keepdims", .type = IR_ATTR_INT, .i = 0});
        oc_free(name);
        *changed = true;
        return OC_OK;
    }
    int64_t ba[IR_MAX_RANK], bb[IR_MAX_RANK];
    bool vector = ra == 1 || rb == 1, same = ra == rb;
    if (!vector && rb > 2) {
        batch_dims(a, r, ba);
        batch_dims(b, r, bb);
        for (int d = 0; d + 2 < r; d++) {
            same = same && ba[d] == bb[d];
            if (ba[d] != bb[d] && ba[d] != 1 && bb[d] != 1)
                return oc_fail(err,
                               "the batch dims of '%s' and '%s' do not broadcast (%" PRId64
                               " and %" PRId64 " at the product's dim %d)",
                               a->name, b->name, ba[d], bb[d], d);
        }
    }
    if (!vector && (rb == 2 || same)) return OC_OK;
    mm_rewrite w = {.g = g, .name = oc_strdup(n->name), .node = node};
    int ia = n->inputs[0], ib = n->inputs[1];
    if (vector) {
        /* (K) -> (1, K) on the left, (K, 1) on the right; the product's rank is then
         * max(2, the other's), and its dim of size 1 is the second last or the last */
        int64_t row = 0, col = 1, out = ra == 1 ? (rb > 2 ? rb : 2) - 2 : ra - 1;
        if (ra == 1) ia = axes_at(&w, w.node, OP_UNSQUEEZE, "row", ia, 1, &row, -1);
        else ib = axes_at(&w, w.node, OP_UNSQUEEZE, "column", ib, 1, &col, -1);
        ir_node_set_input(g, w.node, 0, ia);
        ir_node_set_input(g, w.node, 1, ib);
        squeeze_product(&w, 1, &out);
    } else if (ra >= rb && all_ones(b)) {
        int64_t axes[IR_MAX_RANK];
        for (int d = 0; d + 2 < rb; d++) axes[d] = d;
        /* the Squeeze goes in first: it moves the MatMul up (w.node) */
        int mat = axes_at(&w, w.node, OP_SQUEEZE, "matrix", ib, rb - 2, axes, -1);
        ir_node_set_input(g, w.node, 1, mat);
    } else {
        bool grow_a = ra < r, grow_b = rb < r;
        for (int d = 0; d + 2 < r; d++) {
            int64_t common = ba[d] > bb[d] ? ba[d] : bb[d];
            grow_a = grow_a || ba[d] != common;
            grow_b = grow_b || bb[d] != common;
        }
        int ea = grow_a ? expand_to(&w, "expand_a", ia, ib) : ia;
        int eb = grow_b ? expand_to(&w, "expand_b", ib, ia) : ib;
        ir_node_set_input(g, w.node, 0, ea);
        ir_node_set_input(g, w.node, 1, eb);
    }
    oc_free(w.name);
    *changed = true;
    return OC_OK;
}

static int matmul_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *w;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    if (!ir_dtype_is_compute(x->dtype) || w->dtype != x->dtype)
        return oc_fail(err, "inputs '%s' and '%s' must be float of one type", x->name, w->name);
    if (x->rank < 2 || w->rank < 2)
        return oc_fail(err,
                       "'%s' (rank %d) times '%s' (rank %d): outcore's MatMul takes rank >= 2 "
                       "on both sides",
                       x->name, x->rank, w->name, w->rank);
    bool batched;
    if (batch_dims_agree(x, w, &batched, err)) return OC_ERR;
    int64_t K = w->dims[w->rank - 2], N = w->dims[w->rank - 1];
    if (x->dims[x->rank - 1] != K)
        return oc_fail(err, "inner dims differ: %" PRId64 " and %" PRId64, x->dims[x->rank - 1], K);
    int64_t y[IR_MAX_RANK];
    memcpy(y, x->dims, sizeof y);
    y[x->rank - 1] = N;
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

/* MatMul, MatMulGradA: batched when input 1 has rank > 2; MatMulGradB: its
 * attribute. */
static int matmul_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)err;
    op_matmul_args *p = &op_args_new(n)->matmul;
    if (n->op == OP_MATMUL_GRAD_B) p->batched = ir_attr_int(n, "batched", 0) != 0;
    else p->batched = g->tensors[n->inputs[1]].rank > 2;
    return OC_OK;
}

/* 2 M K N per output row block: Y's elements times the inner dim, twice. */
static void matmul_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    const ir_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
    int64_t out = 0;
    ir_tensor_numel(y, &out);
    int64_t inner = n->op == OP_MATMUL_GRAD_B ? x->dims[x->rank - 2] : x->dims[x->rank - 1];
    if (n->op == OP_MATMUL_GRAD_B && !op_args_of(n)->matmul.batched) {
        int64_t rows = 1;
        for (int d = 0; d + 1 < x->rank; d++) rows *= x->dims[d];
        inner = rows;
    }
    c->flops = 2.0 * (double)out * (double)inner;
}

/* dX = MatMulGradA(dY, W); dW = MatMulGradB(X, dY). Reads X and W. */
static int matmul_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    if (grad_wants(c, 0)) {
        int b = grad_node(c, "grad_a", OP_MATMUL_GRAD_A);
        grad_in(c, b, dy);
        grad_in(c, b, grad_fwd_in(c, 1));
        grad_out_dx(c, b, 0);
        if (grad_finish(c, b)) return OC_ERR;
    }
    if (grad_wants(c, 1)) {
        int b = grad_node(c, "grad_b", OP_MATMUL_GRAD_B);
        grad_in(c, b, grad_fwd_in(c, 0));
        grad_in(c, b, dy);
        grad_out_dx(c, b, 1);
        if (op_args_of(grad_fwd(c))->matmul.batched) grad_attr_int(c, b, "batched", 1);
        if (grad_finish(c, b)) return OC_ERR;
    }
    return OC_OK;
}

/* MatMulGradA(dY (.., M, N), W (K, N) or (b.., K, N)) -> dX (.., M, K). */
static int grad_a_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *w;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &w, err)) return OC_ERR;
    bool batched;
    if (dy->rank < 2 || w->rank < 2 || batch_dims_agree(dy, w, &batched, err) ||
        dy->dims[dy->rank - 1] != w->dims[w->rank - 1])
        return oc_fail(err, "'%s' and '%s' do not agree", dy->name, w->name);
    int64_t y[IR_MAX_RANK];
    memcpy(y, dy->dims, sizeof y);
    y[dy->rank - 1] = w->dims[w->rank - 2];
    op_set_out(g, n, 0, dy->dtype, dy->rank, y);
    return OC_OK;
}

/* MatMulGradB(X (.., M, K), dY (.., M, N)) -> dW (K, N), or (b.., K, N) batched. */
static int grad_b_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *dy;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_shaped(g, n, 1, &dy, err)) return OC_ERR;
    bool ok = x->rank >= 2 && dy->rank == x->rank;
    for (int d = 0; ok && d + 1 < x->rank; d++) ok = x->dims[d] == dy->dims[d];
    if (!ok) return oc_fail(err, "'%s' and '%s' do not agree", x->name, dy->name);
    if (ir_attr_int(n, "batched", 0)) {
        int64_t y[IR_MAX_RANK];
        memcpy(y, x->dims, sizeof y);
        y[x->rank - 2] = x->dims[x->rank - 1];
        y[x->rank - 1] = dy->dims[dy->rank - 1];
        op_set_out(g, n, 0, x->dtype, x->rank, y);
        return OC_OK;
    }
    int64_t y[2] = {x->dims[x->rank - 1], dy->dims[dy->rank - 1]};
    op_set_out(g, n, 0, x->dtype, 2, y);
    return OC_OK;
}

static const op_role matmul_roles[] = {OP_IN_DATA, OP_IN_PARAM};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_matmul = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = matmul_roles,
    .n_roles = 2,
    .infer = matmul_infer,
    .lower = matmul_lower,
    .decode = matmul_decode,
    .cost = matmul_cost,
    .grad = matmul_grad,
    .saved_inputs = 0x3,
    .autocast = OP_AUTOCAST_LOWER,
};
const op_def op_def_matmul_grad_a = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = grad_a_infer,
    .decode = matmul_decode,
    .cost = matmul_cost,
};
const op_def op_def_matmul_grad_b = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = grad_b_infer,
    .decode = matmul_decode,
    .cost = matmul_cost,
};
