/* op_transpose.c — Transpose (ShuffleNet's channel shuffle, ConvNeXt's
 * channels-last blocks): shape, folding of plan-time values, and its gradient,
 * the Transpose by the inverse permutation. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* perm: a permutation of [0, rank) (default: the dims reversed). */
static int read_perm(const ir_node *n, int rank, int64_t *perm, oc_err *err) {
    const int64_t *p;
    int k = ir_attr_ints(n, "perm", &p);
    bool seen[IR_MAX_RANK] = {false};
    if (k >= 0 && k != rank) return oc_fail(err, "perm has %d values for rank %d", k, rank);
    for (int i = 0; i < rank; i++) {
        perm[i] = k < 0 ? rank - 1 - i : p[i];
        if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
            return oc_fail(err, "perm is not a permutation of 0..%d", rank - 1);
        seen[perm[i]] = true;
    }
    return OC_OK;
}

static int transpose_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    int64_t perm[IR_MAX_RANK], y[IR_MAX_RANK];
    if (op_in_shaped(g, n, 0, &x, err) || read_perm(n, x->rank, perm, err)) return OC_ERR;
    for (int i = 0; i < x->rank; i++) y[i] = x->dims[perm[i]];
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    if (!op_is_value(x)) return OC_OK;
    /* Fold a plan-time value (small: shape arithmetic). */
    int64_t numel, es = ir_dtype_size(x->dtype), in_st[IR_MAX_RANK], acc = 1;
    ir_tensor_numel(x, &numel);
    if (numel * es > OP_FOLD_MAX_BYTES) return oc_fail(err, "too large to fold");
    for (int d = x->rank - 1; d >= 0; d--) in_st[d] = acc, acc *= x->dims[d];
    uint8_t *buf = oc_malloc((size_t)(numel * es) + 1);
    for (int64_t o = 0; o < numel; o++) {
        int64_t rem = o, off = 0;
        for (int d = x->rank - 1; d >= 0; d--) {
            off += (rem % y[d]) * in_st[perm[d]];
            rem /= y[d];
        }
        memcpy(buf + o * es, (const uint8_t *)x->data + off * es, (size_t)es);
    }
    ir_tensor_set_data(ir_node_out(g, n, 0), buf, (size_t)(numel * es));
    oc_free(buf);
    return OC_OK;
}

static int transpose_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = ir_node_in((ir_graph *)g, n, 0);
    op_perm_args *p = &op_args_new(n)->perm;
    p->rank = x->rank;
    return read_perm(n, x->rank, p->perm, err);
}

/* dX = Transpose(dY, inverse perm). Saves nothing. */
static int transpose_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const op_perm_args *p = &op_args_of(grad_fwd(c))->perm;
    int rank = p->rank;
    int64_t inv[IR_MAX_RANK];
    for (int i = 0; i < rank; i++) inv[p->perm[i]] = i;
    int b = grad_node(c, "grad", OP_TRANSPOSE);
    grad_in(c, b, dy);
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "perm", rank, inv);
    return grad_finish(c, b);
}

static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_transpose = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = transpose_infer,
    .decode = transpose_decode,
    .grad = transpose_grad,
};
