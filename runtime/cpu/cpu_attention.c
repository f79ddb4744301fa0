/* cpu_attention.c — FusedAttention and its gradient (op_attention.c), one
 * batch at a time: the batch's [T, S] scores in scratch (two [T, S] buffers),
 * GEMMs for Q Kᵀ, P V and the gradient products, row loops for the softmax
 * (sums in double). Dropout's keep decision is Dropout's own (cpu_rng.h, the
 * element's index in [b.., T, S]), so a fused step draws the unfused step's
 * masks. seq_first nodes read and write [N, T, H, d] tensors: head h of image
 * n is a block of rows H d floats apart (boff, pitch). */
#include <math.h>
#include <string.h>

#include "cpu/cpu_rng.h"
#include "cpu_internal.h"

/* The geometry of a node whose Q is input `at`: the op's (op_attention_geometry)
 * and its mask. */
typedef struct att_geom {
    op_attention_geom a;
    const uint8_t *cond;     /* NULL: no mask */
    int64_t cs[IR_MAX_RANK]; /* the condition's strides broadcast to [b.., T, S] */
} att_geom;

static void geom(const kernel_args *a, int at, att_geom *g) {
    const ir_tensor *c = kernel_in(a, at + 3);
    op_attention_geometry(a->g, a->n, &g->a);
    g->cond = op_args_of(a->n)->attention.mask && c ? a->in[at + 3] : NULL;
    if (g->cond) {
        int64_t od[IR_MAX_RANK];
        memcpy(od, g->a.bdims, sizeof od);
        od[g->a.rank - 2] = g->a.T, od[g->a.rank - 1] = g->a.S;
        cpu_bcast_strides(c->rank, c->dims, g->a.rank, od, g->cs);
    }
}

/* Where batch b's [rows, d] block of Q, K, V, Y or a gradient starts, and
 * its row pitch: contiguous blocks, or (seq_first) head h of image n, rows w
 * elements apart (g->a.wq for Q, K and their gradients, g->a.wv for V, dV, g->a.wy
 * for Y, dY). */
static int64_t boff(const att_geom *g, int64_t b, int64_t rows, int64_t d, int64_t w) {
    return g->a.H ? (b / g->a.H) * rows * w + (b % g->a.H) * d : b * rows * d;
}
static int64_t pitch(const att_geom *g, int64_t d, int64_t w) { return g->a.H ? w : d; }

/* The condition's offset of batch b's element (0, 0). */
static int64_t cond_base(const att_geom *g, int64_t b) {
    int64_t off = 0;
    for (int i = g->a.rank - 3; i >= 0; i--) {
        off += (b % g->a.bdims[i]) * g->cs[i];
        b /= g->a.bdims[i];
    }
    return off;
}

/* Whether score (t, j) of batch b is replaced by the fill value. */
static bool masked(const att_geom *g, int mode, int64_t base, int64_t t, int64_t j) {
    if (!g->cond) return false;
    bool c = g->cond[base + t * g->cs[g->a.rank - 2] + j * g->cs[g->a.rank - 1]] != 0;
    return mode == 1 ? c : !c;
}

/* s (T x S) = scale Q Kᵀ of batch b, masked; with lse NULL: also each row's
 * log-sum-exp into lse_out; then P = exp(s - lse) in place. */
static void scores_to_p(const kernel_args *a, const att_geom *g, int64_t b, const float *Q,
                        const float *K, float *s, const float *lse_in, float *lse_out) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    int64_t T = g->a.T, S = g->a.S, dh = g->a.dh;
    const float *Qb = Q + boff(g, b, T, dh, g->a.wq),
                *Kb = K + g->a.koff + boff(g, b, S, dh, g->a.wq);
    if (p->k_transposed) cpu_sgemm(false, false, T, S, dh, p->scale, Qb, dh, Kb, S, 0.0f, s, S);
    else
        cpu_sgemm(false, true, T, S, dh, p->scale, Qb, pitch(g, dh, g->a.wq), Kb,
                  pitch(g, dh, g->a.wq), 0.0f, s, S);
    int64_t base = g->cond ? cond_base(g, b) : 0;
    for (int64_t t = 0; t < T; t++) {
        float *row = s + t * S;
        for (int64_t j = 0; g->cond && j < S; j++)
            if (masked(g, p->mask, base, t, j)) row[j] = p->fill;
        double lse;
        if (lse_in) {
            lse = lse_in[b * T + t];
        } else {
            float m = -INFINITY;
            for (int64_t j = 0; j < S; j++) m = fmaxf(m, row[j]);
            double sum = 0;
            for (int64_t j = 0; j < S; j++) sum += exp((double)row[j] - m);
            lse = m == -INFINITY ? -INFINITY : m + log(sum);
            lse_out[b * T + t] = (float)lse;
        }
        for (int64_t j = 0; j < S; j++) row[j] = (float)exp((double)row[j] - lse);
    }
}

/* P (T x S) of batch b -> P with Dropout applied (kept / (1 - ratio), else 0). */
static void dropout_p(const kernel_args *a, const att_geom *g, int64_t b, float *P) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    if (p->dropout_ratio <= 0.0f) return;
    uint64_t key = cpu_rng_key(a->seed, a->step, p->dropout_key_hash);
    float scale = 1.0f / (1.0f - p->dropout_ratio);
    int64_t n = g->a.T * g->a.S, first = b * n;
    for (int64_t i = 0; i < n; i++)
        P[i] =
            cpu_rng_uniform(key, (uint64_t)(first + i)) >= p->dropout_ratio ? P[i] * scale : 0.0f;
}

size_t cpu_attention_scratch(const ir_graph *g, const ir_node *n) {
    op_attention_geom a;
    op_attention_geometry(g, n, &a);
    return 2 * (size_t)a.T * (size_t)a.S * sizeof(float);
}

int cpu_fused_attention(const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    att_geom g;
    geom(a, 0, &g);
    float *s = a->scratch;
    const float *Q = a->in[0], *K = a->in[1], *V = a->in[2];
    float *Y = a->out[0], *lse = a->out[1];
    for (int64_t b = 0; b < g.a.nb; b++) {
        scores_to_p(a, &g, b, Q, K, s, NULL, lse);
        dropout_p(a, &g, b, s);
        cpu_sgemm(false, false, g.a.T, g.a.dv, g.a.S, 1.0f, s, g.a.S,
                  V + g.a.voff + boff(&g, b, g.a.S, g.a.dv, g.a.wv), pitch(&g, g.a.dv, g.a.wv),
                  0.0f, Y + boff(&g, b, g.a.T, g.a.dv, g.a.wy), pitch(&g, g.a.dv, g.a.wy));
    }
    return OC_OK;
}

/* dY, Q, K, V, cond, Y, LSE -> dQ, dK, dV (each may be omitted). */
int cpu_fused_attention_grad(const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 4; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_attention_args *p = &op_args_of(a->n)->attention;
    att_geom g;
    geom(a, 1, &g);
    int64_t T = g.a.T, S = g.a.S, dh = g.a.dh, dv = g.a.dv;
    float *P = a->scratch, *dS = P + T * S;
    const float *dY = a->in[0], *Q = a->in[1], *K = a->in[2], *V = a->in[3], *Y = a->in[5],
                *lse = a->in[6];
    float *dQ = a->n->n_outputs > 0 ? a->out[0] : NULL;
    float *dK = a->n->n_outputs > 1 ? a->out[1] : NULL;
    float *dV = a->n->n_outputs > 2 ? a->out[2] : NULL;
    if (p->qkv_heads && dQ) /* one gradient, its column thirds */
        dK = dQ + g.a.koff, dV = dQ + g.a.voff;
    float keep_scale = p->dropout_ratio > 0.0f ? 1.0f / (1.0f - p->dropout_ratio) : 1.0f;
    uint64_t key = cpu_rng_key(a->seed, a->step, p->dropout_key_hash);
    for (int64_t b = 0; b < g.a.nb; b++) {
        /* row pitches: of Q, K and their gradients; of V, dV; of Y, dY */
        int64_t lh = pitch(&g, dh, g.a.wq), lvq = pitch(&g, dv, g.a.wv), lv = pitch(&g, dv, g.a.wy);
        const float *dYb = dY + boff(&g, b, T, dv, g.a.wy), *Qb = Q + boff(&g, b, T, dh, g.a.wq),
                    *Kb = K + g.a.koff + boff(&g, b, S, dh, g.a.wq),
                    *Vb = V + g.a.voff + boff(&g, b, S, dv, g.a.wv),
                    *Yb = Y + boff(&g, b, T, dv, g.a.wy);
        scores_to_p(a, &g, b, Q, K, P, lse, NULL);
        if (dV) { /* dV = (P with dropout)ᵀ dY */
            memcpy(dS, P, (size_t)(T * S) * sizeof(float));
            dropout_p(a, &g, b, dS);
            cpu_sgemm(true, false, S, dv, T, 1.0f, dS, S, dYb, lv, 0.0f,
                      dV + boff(&g, b, S, dv, g.a.wv), lvq);
        }
        if (!dQ && !dK) continue;
        /* dP = (dY Vᵀ) with the dropout mask; dS = P (dP - rowsum(dY Y)), 0 where masked */
        cpu_sgemm(false, true, T, S, dv, 1.0f, dYb, lv, Vb, lvq, 0.0f, dS, S);
        int64_t base = g.cond ? cond_base(&g, b) : 0;
        for (int64_t t = 0; t < T; t++) {
            double D = 0;
            for (int64_t i = 0; i < dv; i++) D += (double)dYb[t * lv + i] * Yb[t * lv + i];
            for (int64_t j = 0; j < S; j++) {
                int64_t k = t * S + j;
                float dp = dS[k];
                if (p->dropout_ratio > 0.0f)
                    dp = cpu_rng_uniform(key, (uint64_t)(b * T * S + k)) >= p->dropout_ratio
                             ? dp * keep_scale
                             : 0.0f;
                dS[k] = masked(&g, p->mask, base, t, j) ? 0.0f : (float)(P[k] * (dp - D));
            }
        }
        if (dQ) { /* dQ = scale dS K */
            if (p->k_transposed)
                cpu_sgemm(false, true, T, dh, S, p->scale, dS, S, Kb, S, 0.0f, dQ + b * T * dh, dh);
            else
                cpu_sgemm(false, false, T, dh, S, p->scale, dS, S, Kb, lh, 0.0f,
                          dQ + boff(&g, b, T, dh, g.a.wq), lh);
        }
        if (dK) { /* dK = scale dSᵀ Q, or dKᵀ = scale Qᵀ dS */
            if (p->k_transposed)
                cpu_sgemm(true, false, dh, S, T, p->scale, Qb, dh, dS, S, 0.0f, dK + b * dh * S, S);
            else
                cpu_sgemm(true, false, S, dh, T, p->scale, dS, S, Qb, lh, 0.0f,
                          dK + boff(&g, b, S, dh, g.a.wq), lh);
        }
    }
    return OC_OK;
}
