/* op_attention.c — FusedAttention (ai.outcore), scaled dot-product attention
 * as one node (planner/train/fuse_attention.c finds the exporters' pattern
 * MatMul(Q, Kᵀ) -> Mul(scale) -> [Where(mask, fill)] -> Softmax ->
 * [Dropout] -> MatMul(P, V) and replaces it):
 *   FusedAttention(Q [b.., T, dh], K [b.., S, dh] (or Kᵀ [b.., dh, S]),
 *                  V [b.., S, dv] [, cond]) -> Y [b.., T, dv], LSE [b.., T]
 *   scores s = scale Q Kᵀ; where the mask says so, s = fill (Where's value);
 *   P = softmax(s) by row, LSE = log-sum-exp of the row; with dropout, P's
 *   element i (its index in [b.., T, S]) kept as Dropout keyed by dropout_key
 *   would keep it; Y = P V.
 * It saves no [T, S] tensor: its gradient FusedAttentionGrad(dY, Q, K, V,
 * cond, Y, LSE) -> dQ, dK, dV recomputes the scores from Q, K and LSE (the
 * memory-efficient algorithm; D = rowsum(dY Y)). Attributes: scale,
 * k_transposed, mask (0 none, 1 masked where cond, 2 masked where not cond),
 * fill, dropout_ratio, dropout_key, seq_first, causal. causal 1: the mask is
 * a plan-time value masking exactly the scores above the diagonal (T == S)
 * with a fill at or below OP_ATTENTION_CAUSAL_FILL — checked here, so the
 * kernels may skip the blocks of scores above the diagonal (OP_ATTENTION_BLOCK;
 * fuse_attention proves it and sets it). seq_first 1: Q, K, V and Y
 * (and their gradients) are stored [N, T, H, d], the layout the exporters
 * split heads from, for the logical [N, H, T, d] (the head-split Transposes
 * around the pattern become strides of the kernels' GEMMs; K, not Kᵀ; LSE and
 * the mask stay logical, [N, H, T] and against [N, H, T, S]). qkv_heads H > 0
 * (with seq_first): Q, K and V are one tensor X [N, T, 3 H d], read as its
 * column thirds (the exporters' Split of the fused q/k/v projection, absorbed),
 * Y [N, T, H, d]; the gradient then writes dX alone (one output). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

static int attention_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_attention_args *p = &op_args_new(n)->attention;
    p->scale = ir_attr_float(n, "scale", 1.0f);
    p->k_transposed = ir_attr_int(n, "k_transposed", 0) != 0;
    p->seq_first = ir_attr_int(n, "seq_first", 0) != 0;
    p->qkv_heads = ir_attr_int(n, "qkv_heads", 0);
    if (p->seq_first && p->k_transposed) return oc_fail(err, "seq_first with k_transposed");
    if (p->qkv_heads < 0 || (p->qkv_heads && !p->seq_first))
        return oc_fail(err, "qkv_heads %" PRId64 " needs seq_first", p->qkv_heads);
    p->mask = (int)ir_attr_int(n, "mask", 0);
    p->fill = ir_attr_float(n, "fill", 0.0f);
    p->causal = ir_attr_int(n, "causal", 0) != 0;
    p->dropout_ratio = ir_attr_float(n, "dropout_ratio", 0.0f);
    const char *key = ir_attr_string(n, "dropout_key", "");
    p->dropout_key_hash = op_name_hash(key);
    if (p->mask < 0 || p->mask > 2) return oc_fail(err, "mask %d is not 0, 1 or 2", p->mask);
    if (!(p->dropout_ratio >= 0.0f && p->dropout_ratio < 1.0f))
        return oc_fail(err, "dropout_ratio %g is not in [0, 1)", (double)p->dropout_ratio);
    return OC_OK;
}

/* Q, K (or Kᵀ), V and the optional condition of a forward or backward node
 * (offset: where Q sits); the dims T, S, dh, dv; fails naming what disagrees. */
/* Q, K or V of node n as the logical [b.., T, d] (a copy): a seq_first tensor
 * [N, T, H, d] as [N, H, T, d]; a qkv_heads one [N, T, 3 H d] as one third of it,
 * [N, H, T, d] (rank 4; left as is when it does not divide: the checks fail). */
static ir_tensor logical(const ir_node *n, const ir_tensor *x) {
    ir_tensor l = *x;
    int64_t H = ir_attr_int(n, "qkv_heads", 0);
    if (H > 0 && x->rank == 3 && x->dims[2] % (3 * H) == 0) {
        l.rank = 4;
        l.dims[0] = x->dims[0], l.dims[1] = H, l.dims[2] = x->dims[1];
        l.dims[3] = x->dims[2] / (3 * H);
    } else if (ir_attr_int(n, "seq_first", 0) != 0 && x->rank == 4) {
        l.dims[1] = x->dims[2], l.dims[2] = x->dims[1];
    }
    return l;
}

bool op_attention_causal_mask(const ir_tensor *cond, int mode, int64_t T, int64_t S) {
    int r = cond->rank;
    int64_t n;
    if (T != S || (mode != 1 && mode != 2) || cond->dtype != IR_DTYPE_BOOL || r < 2 ||
        cond->data_src != IR_DATA_INLINE || !cond->data || cond->dims[r - 2] != T ||
        cond->dims[r - 1] != S || !ir_tensor_numel(cond, &n) || cond->data_bytes != (size_t)n)
        return false;
    const uint8_t *c = cond->data;
    for (int64_t k = 0; k < n; k++) {
        int64_t j = k % S, t = (k / S) % T;
        bool masked = mode == 1 ? c[k] != 0 : c[k] == 0;
        if (masked != (j > t)) return false;
    }
    return true;
}

void op_attention_geometry(const ir_graph *g, const ir_node *n, op_attention_geom *out) {
    int at = n->op == OP_FUSED_ATTENTION ? 0 : 1;
    const op_attention_args *p = &op_args_of(n)->attention;
    const ir_tensor *qs = &g->tensors[n->inputs[at]];
    ir_tensor q = logical(n, qs), v = logical(n, &g->tensors[n->inputs[at + 2]]);
    int r = q.rank;
    memset(out, 0, sizeof *out);
    out->rank = r;
    out->T = q.dims[r - 2], out->dh = q.dims[r - 1], out->S = v.dims[r - 2],
    out->dv = v.dims[r - 1];
    out->nb = 1;
    for (int i = 0; i + 2 < r; i++) out->nb *= q.dims[i], out->bdims[i] = q.dims[i];
    if (!p->seq_first) return;
    out->H = q.dims[1];
    out->wq = p->qkv_heads ? qs->dims[2] : out->H * out->dh;
    out->wv = p->qkv_heads ? out->wq : out->H * out->dv;
    out->wy = out->H * out->dv;
    if (p->qkv_heads) out->koff = out->H * out->dh, out->voff = 2 * out->H * out->dh;
}

static int attention_dims(ir_graph *g, ir_node *n, int at, bool k_transposed, int64_t d[4],
                          oc_err *err) {
    ir_tensor *qs, *ks, *vs;
    if (op_in_shaped(g, n, at, &qs, err) || op_in_shaped(g, n, at + 1, &ks, err) ||
        op_in_shaped(g, n, at + 2, &vs, err))
        return OC_ERR;
    bool sf = ir_attr_int(n, "seq_first", 0) != 0;
    int64_t H = ir_attr_int(n, "qkv_heads", 0);
    if (H > 0 && (n->inputs[at] != n->inputs[at + 1] || n->inputs[at] != n->inputs[at + 2] ||
                  qs->rank != 3 || qs->dims[2] % (3 * H) != 0))
        return oc_fail(err,
                       "qkv_heads %" PRId64 " reads Q, K and V from one tensor [N, T, 3 x %" PRId64
                       " x d]; '%s' is not",
                       H, H, qs->name);
    if (sf && !H && (qs->rank != 4 || ks->rank != 4 || vs->rank != 4 || k_transposed))
        return oc_fail(err, "seq_first takes '%s', '%s' and '%s' of rank 4, K not transposed",
                       qs->name, ks->name, vs->name);
    ir_tensor lq = logical(n, qs), lk = logical(n, ks), lv = logical(n, vs);
    ir_tensor *q = &lq, *k = &lk, *v = &lv;
    int r = q->rank;
    bool ok = r >= 3 && k->rank == r && v->rank == r && ir_dtype_is_compute(q->dtype) &&
              k->dtype == q->dtype && v->dtype == q->dtype;
    for (int i = 0; ok && i + 2 < r; i++) ok = q->dims[i] == k->dims[i] && q->dims[i] == v->dims[i];
    if (!ok)
        return oc_fail(
            err, "'%s', '%s' and '%s' must be float of one type, [b.., T, d] with equal batch dims",
            q->name, k->name, v->name);
    int64_t T = q->dims[r - 2], dh = q->dims[r - 1];
    int64_t S = k_transposed ? k->dims[r - 1] : k->dims[r - 2];
    int64_t kd = k_transposed ? k->dims[r - 2] : k->dims[r - 1];
    if (kd != dh || v->dims[r - 2] != S)
        return oc_fail(err, "'%s' %" PRId64 "-wide queries, '%s' and '%s' do not agree", q->name,
                       dh, k->name, v->name);
    ir_tensor *c = ir_node_in(g, n, at + 3);
    if (c) {
        ir_tensor st = {.name = "scores", .rank = r};
        memcpy(st.dims, q->dims, sizeof st.dims);
        st.dims[r - 1] = S;
        int rr;
        int64_t od[IR_MAX_RANK];
        if (c->dtype != IR_DTYPE_BOOL || op_broadcast(c, &st, &rr, od, err) || rr != r)
            return oc_fail(err, "the mask '%s' must be bool and broadcast to the scores", c->name);
        for (int i = 0; i < r; i++)
            if (od[i] != st.dims[i])
                return oc_fail(err, "the mask '%s' must broadcast to the scores", c->name);
    }
    if (ir_attr_int(n, "causal", 0) != 0) { /* the kernels skip what it masks: verify */
        int mode = (int)ir_attr_int(n, "mask", 0);
        bool causal = c && T == S && ir_attr_float(n, "fill", 0.0f) <= OP_ATTENTION_CAUSAL_FILL;
        /* a value: checked; else (a mask read from a planned model's file) the plan's digest vouches */
        if (causal && op_is_value(c)) causal = op_attention_causal_mask(c, mode, T, S);
        if (!causal)
            return oc_fail(err,
                           "causal needs T == S (%" PRId64 ", %" PRId64 "), a fill <= %g and a "
                           "mask that hides exactly the scores above the diagonal ('%s')",
                           T, S, (double)OP_ATTENTION_CAUSAL_FILL, c ? c->name : "none");
    }
    d[0] = T, d[1] = S, d[2] = dh, d[3] = v->dims[r - 1];
    return OC_OK;
}

static int attention_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    int64_t d[4];
    if (attention_dims(g, n, 0, ir_attr_int(n, "k_transposed", 0) != 0, d, err)) return OC_ERR;
    const ir_tensor *q = ir_node_in(g, n, 0);
    ir_tensor lq = logical(n, q);
    int64_t y[IR_MAX_RANK]; /* logical [b.., T, dv]; stored [N, T, H, dv] when seq_first */
    memcpy(y, lq.dims, sizeof y);
    y[lq.rank - 1] = d[3];
    if (ir_attr_int(n, "seq_first", 0) != 0) y[1] = lq.dims[2], y[2] = lq.dims[1];
    op_set_out(g, n, 0, q->dtype, lq.rank, y);
    op_set_out(g, n, 1, IR_DTYPE_FLOAT, lq.rank - 1, lq.dims); /* row statistics: float32 */
    return OC_OK;
}

/* FusedAttentionGrad(dY, Q, K, V, cond | -, Y, LSE) -> dQ, dK, dV. */
static int attention_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    int64_t d[4];
    if (attention_dims(g, n, 1, ir_attr_int(n, "k_transposed", 0) != 0, d, err)) return OC_ERR;
    if (ir_attr_int(n, "qkv_heads", 0) > 0 && n->n_outputs != 1)
        return oc_fail(err, "with qkv_heads the gradient is one tensor (%d outputs)", n->n_outputs);
    for (int i = 0; i < n->n_outputs && i < 3; i++)
        op_set_out_like(g, n, i, ir_node_in(g, n, 1 + i));
    return OC_OK;
}

/* As cuda runs it by default: two GEMMs forward and the row softmax, backward four GEMMs and
 * the recomputed scores' one, each batch's [T, S] scores passed through scratch — forward
 * written and read twice each (GEMM, softmax, GEMM), backward about three times that —
 * counted as bytes moved; causal: the blocks at and below the diagonal, (nb + 1) / (2 nb)
 * of it for nb blocks. (OC_ATTENTION_KERNEL=rows runs another kernel, 4-6x slower on an
 * H200: a profile measured with it times what ran.) */
static void attention_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    bool grad = n->op == OP_FUSED_ATTENTION_GRAD;
    ir_tensor lq = logical(n, &g->tensors[n->inputs[grad ? 1 : 0]]),
              lv = logical(n, &g->tensors[n->inputs[grad ? 3 : 2]]);
    const ir_tensor *q = &lq, *v = &lv;
    int64_t rows = 1;
    for (int i = 0; i + 1 < q->rank; i++) rows *= q->dims[i];
    double S = (double)v->dims[v->rank - 2], dh = (double)q->dims[q->rank - 1],
           dv = (double)v->dims[v->rank - 1];
    bool causal = op_args_of(n)->attention.causal;
    double part = 1.0;
    if (causal) {
        double nb = ceil(S / OP_ATTENTION_BLOCK);
        part = nb > 0 ? (nb + 1) / (2 * nb) : 1.0;
    }
    double fwd = part * (2.0 * (double)rows * S * (dh + dv) + 5.0 * (double)rows * S);
    c->flops = grad ? 2.5 * fwd : fwd;
    double scratch = part * 2.0 * (double)rows * S * sizeof(float) * (grad ? 3.0 : 1.0);
    c->bytes_read += scratch;
    c->bytes_written += scratch;
}

static int attention_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    if (!grad_wants(c, 0) && !grad_wants(c, 1) && !grad_wants(c, 2)) return OC_OK;
    int b = grad_node(c, "grad", OP_FUSED_ATTENTION_GRAD);
    grad_in(c, b, dy);
    for (int i = 0; i < 4; i++) grad_in(c, b, grad_fwd_in(c, i));
    grad_in(c, b, grad_fwd_out(c, 0));
    grad_in(c, b, grad_fwd_out(c, 1));
    /* qkv_heads: inputs 0-2 are one tensor, its gradient one output */
    int outs = op_args_of(grad_fwd(c))->attention.qkv_heads > 0 ? 1 : 3;
    for (int i = 0; i < outs; i++) grad_out_dx(c, b, i);
    grad_copy_attrs(c, b);
    return grad_finish(c, b);
}

static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_fused_attention = {
    .min_inputs = 3,
    .max_inputs = 4,
    .min_outputs = 2,
    .max_outputs = 2,
    .roles = data_role,
    .n_roles = 1,
    .infer = attention_infer,
    .decode = attention_decode,
    .cost = attention_cost,
    .grad = attention_grad,
    .saved_inputs = 0xf,
    .saved_outputs = 0x3,
    .autocast = OP_AUTOCAST_LOWER,
};
const op_def op_def_fused_attention_grad = {
    .min_inputs = 4, /* the condition (4) may be omitted; Y (5) and LSE (6) are read */
    .max_inputs = 7,
    .min_outputs = 1,
    .max_outputs = 3,
    .roles = data_role,
    .n_roles = 1,
    .infer = attention_grad_infer,
    .decode = attention_decode,
    .cost = attention_cost,
    .output0_optional = true,
};
