/* fuse_attention.c — see fuse_attention.h. */
#include "train/fuse_attention.h"

#include <math.h>
#include <string.h>

#include "ir/host_inputs.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* Input k of node n when it is a float scalar plan-time value. */
static bool scalar_value(ir_graph *g, const ir_node *n, int k, double *v) {
    const ir_tensor *t = ir_node_in(g, n, k);
    return t && op_is_value(t) && op_in_scalar_f(g, (ir_node *)n, k, v);
}

/* What Kᵀ = Transpose(X, perm) becomes when the fused node reads K instead:
 * K = Transpose(X, perm with its last two entries swapped). KT_GONE: that is
 * the identity (the Transpose goes, K is X); KT_REPERM: it keeps X's last dim
 * last (the exporters' Transpose(X [b, T, h, d], perm 0 2 3 1) becomes the
 * head split 0 2 1 3, a copy of d-float rows instead of a transpose of the
 * last dim: in ViT-B/16's step on the H200 0.28 ms a layer, forward and
 * backward each, ~1.1 TB/s); KT_KEEP: neither (Kᵀ stays). */
enum { KT_KEEP, KT_GONE, KT_REPERM };
static int k_transpose_fate(const ir_graph *g, const ir_node *n, int64_t perm[IR_MAX_RANK]) {
    const op_perm_args *p = &op_args_of(n)->perm;
    const ir_tensor *x = &g->tensors[n->inputs[0]];
    int r = p->rank;
    if (r != x->rank || r < 2) return KT_KEEP;
    memcpy(perm, p->perm, (size_t)r * sizeof(int64_t));
    perm[r - 2] = p->perm[r - 1], perm[r - 1] = p->perm[r - 2];
    bool identity = true;
    for (int i = 0; i < r; i++) identity = identity && perm[i] == i;
    return identity ? KT_GONE : perm[r - 1] == r - 1 ? KT_REPERM : KT_KEEP;
}

typedef struct match {
    int nodes[24], n_nodes; /* the pattern's nodes, to be removed */
    int q, k, v, cond, y;   /* tensors */
    bool k_transposed;
    int k_reperm;                /* a Transpose node to give perm k_perm, or -1 */
    int64_t k_perm[IR_MAX_RANK]; /* (k_transpose_fate) */
    int mask;
    int bias;      /* an additive plan-time mask (0 or fill) the cond is made from, or -1 */
    int host_cond; /* a padding mask computed on the host: its condition in g->host, or -1 */
    float scale, fill, ratio;
    const char *dropout; /* the Dropout node's name, or NULL */
    int at;              /* the final MatMul: the fused node takes its place */
    int qk, kt;          /* the first MatMul; the Transpose removed from K (or -1) */
    int q_by, k_by;      /* the pattern's nodes reading Q and K (qk, or the scales' Muls) */
    bool seq_first;      /* the head-split Transposes absorbed (match_seq_first) */
    int64_t qkv_heads;   /* > 0: Q, K and V the thirds of one tensor (match_qkv_split) */
    int y_tr;            /* then: the Transpose that wrote Y back to [N, T, H, d] */
    int tq, tk, tv;      /* then: the head splits Q, K and V came from */
} match;

/* Whether plan-time float tensor t holds only 0 and one other value *fill (at least once),
 * at or below OP_ATTENTION_CAUSAL_FILL: an additive mask (scaled_dot_product_attention's
 * causal bias, -inf or float's lowest above the diagonal). Then score + fill is fill itself
 * in float32 for any score below about 1e22 (fill's half ulp), so the fused node's "fill
 * where masked" is the sum; a milder bias (BERT's -10000) is not a mask. */
static bool additive_mask(const ir_tensor *t, float *fill) {
    int64_t n;
    if (!op_is_value(t) || t->dtype != IR_DTYPE_FLOAT || !ir_tensor_numel(t, &n) ||
        t->data_bytes != (size_t)n * sizeof(float))
        return false;
    const float *v = t->data;
    bool seen = false;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] == 0.0f) continue;
        if (seen && v[i] != *fill) return false;
        *fill = v[i], seen = true;
    }
    return seen && *fill <= OP_ATTENTION_CAUSAL_FILL;
}

/* Whether plan-time float tensor t (an initializer) holds one value everywhere: *v. */
static bool uniform_value(const ir_tensor *t, double *v) {
    int64_t n;
    if (!t || !t->is_initializer || !op_is_value(t) || !ir_tensor_numel(t, &n) || n < 1 ||
        (t->dtype != IR_DTYPE_FLOAT && t->dtype != IR_DTYPE_DOUBLE))
        return false;
    for (int64_t i = 0; i < n; i++) {
        double x =
            t->dtype == IR_DTYPE_FLOAT ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
        if (i && x != *v) return false;
        *v = x;
    }
    return true;
}

/* Whether score bias t is a padding mask the host computes each step: Where(cond, fill, 0)
 * or Where(cond, 0, fill) of plan-time values, fill at or below OP_ATTENTION_CAUSAL_FILL (an
 * attention mask as Hugging Face's modeling code makes it, finfo.min where not attended).
 * Then m holds the mask (mode 1: masked where cond, 2: where not) and cond's tensor in
 * g->host (exported to g when the match is replaced). */
static bool host_mask(const ir_graph *g, int t, match *m) {
    const ir_node *w = host_inputs_producer(g, t);
    if (!w || w->op != OP_WHERE || w->n_inputs != 3) return false;
    const ir_graph *h = g->host;
    double a, b;
    if (!uniform_value(ir_node_in((ir_graph *)h, w, 1), &a) ||
        !uniform_value(ir_node_in((ir_graph *)h, w, 2), &b))
        return false;
    if (b == 0.0 && a <= OP_ATTENTION_CAUSAL_FILL) m->mask = 1, m->fill = (float)a;
    else if (a == 0.0 && b <= OP_ATTENTION_CAUSAL_FILL) m->mask = 2, m->fill = (float)b;
    else return false;
    /* an Expand's input broadcasts as its output does: the host computes the smaller one
     * ([N, 1, 1, S] rather than [N, 1, T, S]) */
    int c = w->inputs[0];
    for (int hops = 0; hops < 4 && h->tensors[c].producer >= 0; hops++) {
        const ir_node *e = &h->nodes[h->tensors[c].producer];
        if (e->op != OP_EXPAND || e->inputs[0] < 0) break;
        c = e->inputs[0];
    }
    m->host_cond = c;
    return true;
}

/* Whether tensor t, read by node `reader` alone, is X * c (a Mul, c a plan-time scalar on
 * either side): then *x = X and *c = c. */
static bool scaled_by(ir_graph *g, int t, int reader, int *x, double *c) {
    int p = g->tensors[t].producer;
    if (p < 0 || g->nodes[p].op != OP_MUL || ir_tensor_sole_consumer(g, t) != reader) return false;
    const ir_node *u = &g->nodes[p];
    int other = scalar_value(g, u, 1, c) ? 0 : scalar_value(g, u, 0, c) ? 1 : -1;
    if (other < 0) return false;
    *x = u->inputs[other];
    return true;
}

/* Node c, when it passes its input on unchanged: Identity (torch's clone), a Cast to
 * the type the input has (Hugging Face's softmax(dtype=float32).to(float32)). */
static bool is_copy(const ir_graph *g, int c) {
    const ir_node *n = &g->nodes[c];
    if (n->op == OP_IDENTITY) return true;
    return n->op == OP_CAST && n->outputs[0] >= 0 &&
           g->tensors[n->inputs[0]].dtype == g->tensors[n->outputs[0]].dtype;
}

/* Past the copies read by *c alone from *t on (at most 4): *t and *c the first tensor
 * and reader beyond them; the copies join the pattern. */
static void skip_copies(const ir_graph *g, int *t, int *c, match *m) {
    for (int k = 0; k < 4 && *c >= 0 && is_copy(g, *c); k++) {
        m->nodes[m->n_nodes++] = *c;
        *t = g->nodes[*c].outputs[0];
        *c = ir_tensor_sole_consumer(g, *t);
    }
}

/* The pattern ending at Softmax node s, or false. */
static bool match_at(ir_graph *g, int s, match *m) {
    memset(m, 0, sizeof *m);
    m->cond = -1, m->bias = -1, m->host_cond = -1, m->k_reperm = -1, m->kt = -1, m->y_tr = -1;
    m->scale = 1.0f;
    const ir_node *sm = &g->nodes[s];
    const ir_tensor *sx = ir_node_in(g, sm, 0);
    const op_softmax_args *sa = &op_args_of(sm)->softmax;
    if (sx->rank < 3 || sa->flatten || sa->axis != sx->rank - 1) return false;
    m->nodes[m->n_nodes++] = s;
    /* backwards: [Where] <- [Mul | Div by a scalar] <- MatMul(Q, Kᵀ) */
    int t = sm->inputs[0], p = g->tensors[t].producer;
    if (p >= 0 && g->nodes[p].op == OP_WHERE && ir_tensor_sole_consumer(g, t) == s) {
        const ir_node *w = &g->nodes[p];
        double f;
        int fill_at = scalar_value(g, w, 1, &f) ? 1 : scalar_value(g, w, 2, &f) ? 2 : 0;
        if (!fill_at) return false;
        m->mask = fill_at, m->fill = (float)f, m->cond = w->inputs[0];
        m->nodes[m->n_nodes++] = p;
        t = w->inputs[3 - fill_at], p = g->tensors[t].producer;
    } else if (p >= 0 && g->nodes[p].op == OP_ADD && ir_tensor_sole_consumer(g, t) == s) {
        /* scaled_dot_product_attention's mask: scores + bias, bias 0 or fill (plan-time) */
        const ir_node *a = &g->nodes[p];
        int b = additive_mask(ir_node_in(g, a, 1), &m->fill)   ? 1
                : additive_mask(ir_node_in(g, a, 0), &m->fill) ? 0
                                                               : -1;
        /* or all zeros (BERT without a padding mask): no mask */
        int zero = op_rewrite_all(ir_node_in(g, a, 1), 0.0f)   ? 1
                   : op_rewrite_all(ir_node_in(g, a, 0), 0.0f) ? 0
                                                               : -1;
        /* or a padding mask the host computes each step (ir/host_inputs.h) */
        int hb = b < 0 && zero < 0 ? (host_mask(g, a->inputs[1], m)   ? 1
                                      : host_mask(g, a->inputs[0], m) ? 0
                                                                      : -1)
                                   : -1;
        if (b < 0 && zero < 0 && hb < 0) return false;
        if (b >= 0) m->mask = 1, m->bias = a->inputs[b];
        else b = hb >= 0 ? hb : zero; /* a host mask (m set), or adds nothing: no mask */
        m->nodes[m->n_nodes++] = p;
        t = a->inputs[1 - b], p = g->tensors[t].producer;
    }
    if (p >= 0 && (g->nodes[p].op == OP_MUL || g->nodes[p].op == OP_DIV) &&
        ir_tensor_sole_consumer(g, t) == m->nodes[m->n_nodes - 1]) {
        const ir_node *u = &g->nodes[p];
        double c;
        int other = scalar_value(g, u, 1, &c)                        ? 0
                    : (u->op == OP_MUL && scalar_value(g, u, 0, &c)) ? 1
                                                                     : -1;
        if (other < 0 || c == 0) return false;
        m->scale = (float)(u->op == OP_DIV ? 1.0 / c : c);
        m->nodes[m->n_nodes++] = p;
        t = u->inputs[other], p = g->tensors[t].producer;
    }
    if (p < 0 || g->nodes[p].op != OP_MATMUL || !op_args_of(&g->nodes[p])->matmul.batched ||
        ir_tensor_sole_consumer(g, t) != m->nodes[m->n_nodes - 1])
        return false;
    const ir_node *qk = &g->nodes[p];
    m->qk = p;
    m->nodes[m->n_nodes++] = p;
    m->q = qk->inputs[0], m->k = qk->inputs[1], m->k_transposed = true;
    m->q_by = m->k_by = p;
    /* scaled_dot_product_attention's scale, its square root on each side: (Q c1)(Kᵀ c2) */
    int q0, k0;
    double c1, c2;
    if (scaled_by(g, m->q, p, &q0, &c1) && scaled_by(g, m->k, p, &k0, &c2) && c1 * c2 != 0) {
        m->q_by = g->tensors[m->q].producer, m->k_by = g->tensors[m->k].producer;
        m->nodes[m->n_nodes++] = m->q_by;
        m->nodes[m->n_nodes++] = m->k_by;
        m->scale = (float)((double)m->scale * c1 * c2);
        m->q = q0, m->k = k0;
    }
    int tr = g->tensors[m->k].producer;
    if (tr >= 0 && g->nodes[tr].op == OP_TRANSPOSE && ir_tensor_sole_consumer(g, m->k) == m->k_by) {
        int fate = k_transpose_fate(g, &g->nodes[tr], m->k_perm);
        if (fate == KT_GONE) {
            m->k = g->nodes[tr].inputs[0], m->k_transposed = false, m->kt = tr;
            m->nodes[m->n_nodes++] = tr;
        } else if (fate == KT_REPERM) {
            m->k_reperm = tr, m->k_transposed = false;
        }
    }
    /* forwards: [copies] [Dropout] [copies] -> MatMul(P, V) */
    t = sm->outputs[0];
    int c = ir_tensor_sole_consumer(g, t);
    skip_copies(g, &t, &c, m);
    if (c >= 0 && g->nodes[c].op == OP_DROPOUT) {
        const ir_node *d = &g->nodes[c];
        const op_dropout_args *da = &op_args_of(d)->dropout;
        if (d->n_outputs > 1 && d->outputs[1] >= 0 &&
            (g->tensors[d->outputs[1]].n_consumers || g->tensors[d->outputs[1]].is_graph_output))
            return false; /* its mask is read elsewhere */
        m->ratio = da->training ? da->ratio : 0.0f;
        m->dropout = d->name;
        m->nodes[m->n_nodes++] = c;
        t = d->outputs[0], c = ir_tensor_sole_consumer(g, t);
        skip_copies(g, &t, &c, m);
    }
    if (c < 0 || g->nodes[c].op != OP_MATMUL || g->nodes[c].inputs[0] != t ||
        !op_args_of(&g->nodes[c])->matmul.batched)
        return false;
    m->v = g->nodes[c].inputs[1], m->y = g->nodes[c].outputs[0];
    m->at = c;
    m->nodes[m->n_nodes++] = c;
    return true;
}

/* [N, T, H, d] <-> [N, H, T, d]: the head split and its inverse. */
static const int64_t head_split[4] = {0, 2, 1, 3};
static bool is_head_split(const int64_t *perm, int rank) {
    return rank == 4 && memcmp(perm, head_split, sizeof head_split) == 0;
}

/* The Transpose (the head split) writing t and read by node `by` alone, or -1. */
static int head_split_of(const ir_graph *g, int t, int by) {
    int p = g->tensors[t].producer;
    if (p < 0 || g->nodes[p].op != OP_TRANSPOSE || ir_tensor_sole_consumer(g, t) != by) return -1;
    const op_perm_args *a = &op_args_of(&g->nodes[p])->perm;
    return is_head_split(a->perm, a->rank) ? p : -1;
}

/* Q, K and V each the head split of a [N, T, H, d] tensor and Y read only by
 * the Transpose back: the fused node reads and writes [N, T, H, d] itself
 * (seq_first) and the four Transposes go, forward and (their gradients)
 * backward. */
static void match_seq_first(ir_graph *g, match *m) {
    if (m->k_transposed) return; /* K read as Kᵀ: no Transpose to absorb */
    int tq = head_split_of(g, m->q, m->q_by);
    int tk = m->kt >= 0 ? head_split_of(g, m->k, m->kt) : -1;
    if (m->k_reperm >= 0 && is_head_split(m->k_perm, op_args_of(&g->nodes[m->k_reperm])->perm.rank))
        tk = m->k_reperm; /* Transpose(X, 0 2 3 1): X's head split once rewritten */
    int tv = head_split_of(g, m->v, m->at);
    int c = ir_tensor_sole_consumer(g, m->y);
    if (tq < 0 || tk < 0 || tv < 0 || c < 0) return;
    const ir_node *back = &g->nodes[c];
    const op_perm_args *a = back->op == OP_TRANSPOSE ? &op_args_of(back)->perm : NULL;
    if (!a || !is_head_split(a->perm, a->rank)) return;
    m->q = g->nodes[tq].inputs[0], m->k = g->nodes[tk].inputs[0], m->v = g->nodes[tv].inputs[0];
    m->nodes[m->n_nodes++] = tq, m->nodes[m->n_nodes++] = tk, m->nodes[m->n_nodes++] = tv;
    m->tq = tq, m->tk = tk, m->tv = tv;
    m->nodes[m->n_nodes++] = c;
    m->y = back->outputs[0], m->y_tr = c;
    m->k_reperm = -1, m->k_transposed = false, m->seq_first = true;
}

/* The Reshape [N, T, H d] -> [N, T, H, d] writing t (read by node `by`
 * alone) of output `k` of a Split into thirds of X [N, T, 3 H d] along its
 * last dim, that output read by the Reshape alone; its node, or -1. */
static int qkv_third_of(const ir_graph *g, int t, int by, int k, int *split) {
    int r = g->tensors[t].producer;
    if (r < 0 || g->nodes[r].op != OP_RESHAPE || ir_tensor_sole_consumer(g, t) != by) return -1;
    int part = g->nodes[r].inputs[0], sp = g->tensors[part].producer;
    if (sp < 0 || g->nodes[sp].op != OP_SPLIT || g->nodes[sp].n_outputs != 3 ||
        g->nodes[sp].outputs[k] != part || ir_tensor_sole_consumer(g, part) != r)
        return -1;
    const ir_tensor *x = &g->tensors[g->nodes[sp].inputs[0]], *p = &g->tensors[part],
                    *y = &g->tensors[t];
    if (x->rank != 3 || p->rank != 3 || y->rank != 4 || x->dims[2] != 3 * p->dims[2] ||
        p->dims[0] != x->dims[0] || p->dims[1] != x->dims[1] || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1] || y->dims[2] * y->dims[3] != p->dims[2])
        return -1;
    *split = sp;
    return r;
}

/* After match_seq_first: Q, K and V the [N, T, H, d] views of the three
 * thirds of one Split of X [N, T, 3 H d] (the fused q/k/v projection): the
 * fused node reads X itself (qkv_heads H) and the Split and the three Reshapes
 * go; backward, its one gradient replaces the three and their Concat. */
static void match_qkv_split(ir_graph *g, match *m) {
    if (!m->seq_first) return;
    int sq = -1, sk = -1, sv = -1;
    int rq = qkv_third_of(g, m->q, m->tq, 0, &sq);
    int rk = qkv_third_of(g, m->k, m->tk, 1, &sk);
    int rv = qkv_third_of(g, m->v, m->tv, 2, &sv);
    if (rq < 0 || rk < 0 || rv < 0 || sq != sk || sq != sv) return;
    const ir_tensor *yq = &g->tensors[m->q];
    if (g->tensors[m->k].dims[2] != yq->dims[2] || g->tensors[m->v].dims[2] != yq->dims[2] ||
        g->tensors[m->k].dims[3] != yq->dims[3] || g->tensors[m->v].dims[3] != yq->dims[3])
        return; /* thirds split into heads alike */
    m->qkv_heads = yq->dims[2];
    m->q = m->k = m->v = g->nodes[sq].inputs[0];
    m->nodes[m->n_nodes++] = rq, m->nodes[m->n_nodes++] = rk, m->nodes[m->n_nodes++] = rv;
    m->nodes[m->n_nodes++] = sq;
}

static void add_attr_f(ir_graph *g, int n, const char *name, float v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_FLOAT, .f = v};
    ir_node_add_attr(g, n, &a);
}

static void add_attr_i(ir_graph *g, int n, const char *name, int64_t v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INT, .i = v};
    ir_node_add_attr(g, n, &a);
}

/* The Transpose producing Kᵀ now produces K: its perm attribute rewritten,
 * its output's shape inferred again (the node keeps its name and output). */
static int reperm_k(ir_graph *g, const match *m, oc_err *err) {
    ir_node *n = &g->nodes[m->k_reperm];
    int rank = op_args_of(n)->perm.rank;
    ir_attr *a = (ir_attr *)ir_attr_find(n, "perm");
    if (a) { /* decoding checked it: rank values */
        memcpy(a->ints, m->k_perm, (size_t)rank * sizeof(int64_t));
    } else { /* no perm: the dims reversed */
        ir_attr p = {.name = "perm", .type = IR_ATTR_INTS, .n = rank, .ints = (int64_t *)m->k_perm};
        ir_node_add_attr(g, m->k_reperm, &p);
        n = &g->nodes[m->k_reperm];
    }
    int rc = op_infer(g, n, err);
    return rc ? oc_fail_prefix(err, "node '%s'", n->name) : OC_OK;
}

/* Whether fused node n (shapes inferred) may skip the scores above the
 * diagonal: its mask a plan-time value that hides exactly them (the
 * exporters' causal Less or tril buffer, folded) and a fill that makes their
 * probabilities exactly 0. */
static bool causal(const ir_graph *g, const ir_node *n, const match *m) {
    if (!m->mask || m->cond < 0 || !(m->fill <= OP_ATTENTION_CAUSAL_FILL)) return false;
    const ir_tensor *c = &g->tensors[m->cond];
    op_attention_geom a;
    op_attention_geometry(g, n, &a);
    return op_is_value(c) && op_attention_causal_mask(c, m->mask, a.T, a.S);
}

/* The bool mask "<bias>/mask" (true where the additive bias is not 0, a plan-time
 * constant) the fused node reads in place of the bias; made once per bias. */
static int mask_of_bias(ir_graph *g, int b) {
    char *name = oc_sprintf("%s/mask", g->tensors[b].name);
    int c = ir_tensor_find(g, name);
    if (c < 0) {
        c = ir_tensor_add(g, name, IR_DTYPE_BOOL);
        const ir_tensor *bt = &g->tensors[b]; /* after the add: the array may have moved */
        ir_tensor *ct = &g->tensors[c];
        int64_t n = 0;
        ir_tensor_numel(bt, &n);
        uint8_t *v = oc_malloc((size_t)n + 1);
        for (int64_t i = 0; i < n; i++) v[i] = ((const float *)bt->data)[i] != 0.0f;
        ir_tensor_set_shape(ct, bt->rank, bt->dims);
        ir_tensor_set_data(ct, v, (size_t)n);
        ct->kind = IR_KIND_CONSTANT;
        oc_free(v);
    }
    oc_free(name);
    return c;
}

/* Replaces one match: the fused node takes the final MatMul's place and its
 * output; the pattern's nodes go. */
static int replace(ir_graph *g, match *m, oc_err *err) {
    if (m->k_reperm >= 0 && reperm_k(g, m, err)) return OC_ERR;
    if (m->bias >= 0) m->cond = mask_of_bias(g, m->bias);
    if (m->host_cond >= 0) m->cond = host_inputs_export(g, m->host_cond);
    const ir_node *last = &g->nodes[m->at];
    char *name = oc_sprintf("%s/fused_attention", last->name);
    char *dummy = oc_sprintf("%s/unfused", g->tensors[m->y].name);
    /* the final MatMul lets go of Y (it writes a placeholder until removed) */
    int writer = m->y_tr >= 0 ? m->y_tr : m->at; /* Y's writer until now */
    int ph = ir_tensor_add(g, dummy, IR_DTYPE_FLOAT);
    g->nodes[writer].outputs[0] = ph;
    g->tensors[ph].producer = writer;
    g->tensors[m->y].producer = -1;
    int n = ir_node_insert(g, m->at, name, op_name(OP_FUSED_ATTENTION), OC_DOMAIN);
    g->nodes[n].op = OP_FUSED_ATTENTION;
    ir_node_add_input(g, n, m->q);
    ir_node_add_input(g, n, m->k);
    ir_node_add_input(g, n, m->v);
    if (m->cond >= 0) ir_node_add_input(g, n, m->cond);
    ir_node_add_output(g, n, m->y);
    char *lse = oc_sprintf("%s/lse", name);
    ir_node_add_output(g, n, ir_tensor_add(g, lse, IR_DTYPE_FLOAT));
    add_attr_f(g, n, "scale", m->scale);
    add_attr_i(g, n, "k_transposed", m->k_transposed);
    if (m->seq_first) add_attr_i(g, n, "seq_first", 1);
    if (m->qkv_heads) add_attr_i(g, n, "qkv_heads", m->qkv_heads);
    if (m->mask) {
        add_attr_i(g, n, "mask", m->mask);
        add_attr_f(g, n, "fill", m->fill);
    }
    if (m->ratio > 0.0f) {
        add_attr_f(g, n, "dropout_ratio", m->ratio);
        ir_attr a = {.name = "dropout_key", .type = IR_ATTR_STRING, .s = (char *)m->dropout};
        ir_node_add_attr(g, n, &a);
    }
    oc_free(name), oc_free(dummy), oc_free(lse);
    int rc = op_infer(g, &g->nodes[n], err);
    if (!rc && causal(g, &g->nodes[n], m)) {
        add_attr_i(g, n, "causal", 1);
        rc = op_infer(g, &g->nodes[n], err);
    }
    return rc ? oc_fail_prefix(err, "node '%s'", g->nodes[n].name) : OC_OK;
}

int fuse_attention(ir_graph *g, int *n_fused, oc_err *err) {
    *n_fused = 0;
    for (int s = 0; s < g->n_nodes; s++) {
        if (g->nodes[s].op != OP_SOFTMAX) continue;
        match m;
        if (!match_at(g, s, &m)) continue;
        match_seq_first(g, &m);
        match_qkv_split(g, &m);
        /* the Dropout's key name must outlive the removal: copy it */
        char *key = m.dropout ? oc_strdup(m.dropout) : NULL;
        m.dropout = key;
        int rc = replace(g, &m, err);
        oc_free(key);
        if (rc) return OC_ERR;
        /* the insert moved every node from m.at on up by one */
        bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
        for (int i = 0; i < m.n_nodes; i++)
            remove[m.nodes[i] >= m.at ? m.nodes[i] + 1 : m.nodes[i]] = true;
        ir_graph_remove_nodes(g, remove);
        oc_free(remove);
        (*n_fused)++;
        s = -1; /* indices changed: scan again (fused Softmaxes are gone) */
    }
    if (*n_fused) host_inputs_prune(g); /* a padding mask's bias no node reads now */
    return OC_OK;
}
