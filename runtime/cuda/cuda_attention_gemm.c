/* cuda_attention_gemm.c — FusedAttention and its gradient by batched cuBLAS GEMMs (the
 * scores in scratch) or by rows (cuda_attention.cu); see the section below. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_rng.h"
#include "cuda_internal.h"

/* ---- FusedAttention (cpu_attention.c): batched cuBLAS GEMMs over chunks of
 * batches whose [T, S] scores fit the scratch, row kernels for the softmax.
 * A causal node (op_attention_args.causal) runs by blocks of B rows: row block
 * i's scores against columns [0, (i + 1) B) alone, the blocks above the
 * diagonal (masked, their probabilities exactly 0) neither computed nor read;
 * the gradients' column blocks sum over the rows at and below them. ---- */

/* The scores' scratch by default: room for ATT_CHUNK_WANT batches a chunk,
 * within [ATT_SCRATCH_MIN_MIB, ATT_SCRATCH_MAX_MIB]. A chunk's GEMMs fill the
 * GPU only with many batches (a causal block's row products are one
 * [128, 64] tile a batch): on an H200, GPT-2 small b16 ran FusedAttention and
 * its gradient in 112.6 ms a step in chunks of 32 (256 MiB), in 65.1 ms in
 * one chunk of all 192 (1.5 GiB); ViT-B/16 b256's, 93.8 ms in chunks of 864
 * (256 MiB), 91.6 ms in one of 3072 (1 GiB): left at 256 MiB. */
#define ATT_CHUNK_WANT 192
#define ATT_SCRATCH_MIN_MIB 256
#define ATT_SCRATCH_MAX_MIB 1536

/* A positive integer from the environment, or 0: OC_ATTENTION_CHUNK=K forces
 * K batches a chunk, OC_ATTENTION_BLOCK=B causal blocks of B rows (the tests'
 * way to run several chunks and blocks on small models; 0: whole rows, the
 * blocks above the diagonal computed too, gpu-check's comparison),
 * OC_ATTENTION_SCRATCH_MIB=M the scores' scratch (default: see ATT_CHUNK_WANT),
 * OC_ATTENTION_DKV_ROWS=1 or 0 a causal dV and dK by row blocks or by column
 * blocks (default: rows when a chunk holds fewer than ATT_CHUNK_WANT; gpu-check's
 * attention sweep compares them on the GPU). */
static int64_t env_count(const char *name) {
    const char *e = getenv(name);
    long long k = e ? strtoll(e, NULL, 10) : 0;
    return k > 0 ? (int64_t)k : 0;
}

/* The op's geometry (op_attention_geometry), the batches a chunk holds and
 * the blocks its rows run by. A chunk fits `limit` bytes of scratch (a plan's
 * workspace for the node, SIZE_MAX without one) where one batch does: a plan
 * made with a profile of a smaller scratch (another version, another
 * OC_ATTENTION_SCRATCH_MIB) runs in smaller chunks inside its workspace. */
typedef struct att_dims {
    op_attention_geom a;
    int64_t chunk;
    int64_t blk;        /* causal: rows a block; 0: whole rows */
    int64_t nblk;       /* blocks of rows (1 unless causal) */
    int64_t bt;         /* what the GEMMs' dims are cut by: blk, or max(T, S) */
    bool dkv_rows;      /* blocked dV, dK: by row blocks, each adding to the columns up to
                           its end (else by column blocks, over the rows from the diagonal) */
    const float **ptrs; /* blocked seq_first GEMMs' pointer arrays (scratch), 3 nblk chunk */
} att_dims;

static att_dims att_dims_of(const ir_graph *g, const ir_node *n, size_t limit) {
    att_dims d = {0};
    op_attention_geometry(g, n, &d.a);
    size_t per = 2 * (size_t)d.a.T * (size_t)d.a.S * sizeof(float);
    size_t want = per * (size_t)(d.a.nb < ATT_CHUNK_WANT ? d.a.nb : ATT_CHUNK_WANT),
           lo = (size_t)ATT_SCRATCH_MIN_MIB << 20, hi = (size_t)ATT_SCRATCH_MAX_MIB << 20;
    size_t bytes = want < lo ? lo : want > hi ? hi : want;
    if (env_count("OC_ATTENTION_SCRATCH_MIB"))
        bytes = (size_t)env_count("OC_ATTENTION_SCRATCH_MIB") << 20;
    d.chunk = per ? (int64_t)(bytes / per) : d.a.nb;
    if (env_count("OC_ATTENTION_CHUNK")) d.chunk = env_count("OC_ATTENTION_CHUNK");
    if (d.chunk < 1) d.chunk = 1;
    if (d.chunk > d.a.nb) d.chunk = d.a.nb;
    if (op_args_of(n)->attention.causal && d.a.dh > 0 && d.a.dv > 0) { /* no empty products */
        d.blk = getenv("OC_ATTENTION_BLOCK") ? env_count("OC_ATTENTION_BLOCK") : OP_ATTENTION_BLOCK;
        d.nblk = d.blk ? (d.a.T + d.blk - 1) / d.blk : 1;
    }
    if (d.nblk < 1) d.nblk = 1;
    size_t ptrs = d.a.H || d.nblk > 1 ? 3 * (size_t)d.nblk * sizeof(float *) : 0;
    if (per && limit < (per + ptrs) * (size_t)d.chunk && limit / (per + ptrs) >= 1)
        d.chunk = (int64_t)(limit / (per + ptrs));
    if (d.blk) {
        /* column blocks hold one [blk, dv] tile a batch: with few batches a
         * chunk, rows (H200, GPT-2 in chunks of 32: FusedAttentionGrad 65.4
         * ms a step by rows, 79.0 by columns; in one chunk of 192: 45.2, 43.3) */
        const char *e = getenv("OC_ATTENTION_DKV_ROWS");
        d.dkv_rows = e ? env_count("OC_ATTENTION_DKV_ROWS") > 0
                       : d.chunk < ATT_CHUNK_WANT && d.chunk < d.a.nb;
    }
    d.bt = d.blk ? d.blk : d.a.T > d.a.S ? d.a.T : d.a.S;
    return d;
}

/* Bytes of the scores' two buffers, then (blocked) the pointer arrays. */
static size_t att_ptrs_at(const att_dims *d) {
    return 2 * (size_t)(d->chunk * d->a.T * d->a.S) * sizeof(float);
}

/* Through the batched GEMMs over chunks of scores (below) by default; by rows
 * (cuda_attention.cu: no [T, S] scratch, the gradient's rowsum(dY Y) alone) only with
 * OC_ATTENTION_KERNEL=rows and heads that fit its registers (OP_ATTENTION_ROWS_DMAX): on an
 * H200 (docs/gpu-check-2026-11-28-h200.txt) GPT-2's FusedAttentionGrad took 281.2 ms a step
 * by rows, 43.2 ms through the GEMMs (ViT-B/16: 355.7, 60.8). */
static bool att_by_rows(const op_attention_geom *a) {
    const char *e = getenv("OC_ATTENTION_KERNEL");
    return e && strcmp(e, "rows") == 0 && a->dh > 0 && a->dv > 0 &&
           a->dh <= OP_ATTENTION_ROWS_DMAX && a->dv <= OP_ATTENTION_ROWS_DMAX;
}

/* The row kernels' gradient workspace: rowsum(dY Y), a float a row. */
static size_t att_rows_dsum_bytes(const op_attention_geom *a) {
    return (size_t)(a->nb * a->T) * sizeof(float);
}

size_t cuda_attention_scratch(const ir_graph *g, const ir_node *n, size_t limit) {
    op_attention_geom a;
    op_attention_geometry(g, n, &a);
    if (att_by_rows(&a)) return n->op == OP_FUSED_ATTENTION_GRAD ? att_rows_dsum_bytes(&a) : 0;
    att_dims d = att_dims_of(g, n, limit);
    size_t ptrs = d.a.H || d.nblk > 1 ? 3 * (size_t)(d.nblk * d.chunk) * sizeof(float *) : 0;
    return att_ptrs_at(&d) + ptrs;
}

static cu_att_mask att_mask(const kernel_args *a, int at, const att_dims *d) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    const ir_tensor *c = kernel_in(a, at + 3);
    cu_att_mask m = {.cond = p->mask && c ? a->in[at + 3] : NULL,
                     .mode = p->mask,
                     .causal = p->causal,
                     .blk = d->blk,
                     .fill = p->fill,
                     .rank = d->a.rank};
    int64_t od[IR_MAX_RANK]; /* the logical scores [b.., T, S] */
    memcpy(od, d->a.bdims, sizeof od);
    od[m.rank - 2] = d->a.T, od[m.rank - 1] = d->a.S;
    for (int i = 0; i + 2 < m.rank; i++) m.bdims[i] = od[i];
    if (m.cond) { /* the condition's strides, right-aligned, 0 where it broadcasts */
        int64_t acc = 1;
        for (int i = m.rank - 1; i >= 0; i--) {
            int ci = i - (m.rank - c->rank);
            int64_t dim = ci >= 0 ? c->dims[ci] : 1;
            m.cs[i] = ci >= 0 && dim == od[i] && dim != 1 ? acc : 0;
            if (ci >= 0) acc *= dim;
        }
    }
    return m;
}

/* A GEMM operand of batch b: a tensor's [rows, cols] block (contiguous blocks,
 * or seq_first: head h of image n, rows `width` elements apart) or the chunk's
 * scratch (scratch: blocks from the chunk's first batch, contiguous); for
 * block i of a blocked GEMM it starts i bt rows down (rs) and i bt columns
 * right (cs). */
typedef struct att_opnd {
    const float *base;
    int64_t rows, cols, width;
    bool scratch;
    int rs, cs;
} att_opnd;

static int64_t opnd_ld(const att_dims *d, const att_opnd *o) {
    return o->scratch || !d->a.H ? o->cols : o->width;
}
static int64_t opnd_step(const att_dims *d, const att_opnd *o) {
    return d->bt * (o->rs * opnd_ld(d, o) + o->cs);
}

static const float *opnd_at(const att_dims *d, const att_opnd *o, int64_t b, int64_t b0,
                            int64_t *ld, int64_t *stride) {
    *ld = opnd_ld(d, o);
    if (o->scratch || !d->a.H) {
        *stride = o->rows * o->cols;
        return o->base + (o->scratch ? b - b0 : b) * o->rows * o->cols;
    }
    *stride = o->cols;
    return o->base + (b / d->a.H) * o->rows * o->width + (b % d->a.H) * o->cols;
}

/* A GEMM's M, N or K: a count, or what block i of the rows cuts it to. */
enum {
    ATT_ROWS = -1, /* the block's rows */
    ATT_COLS = -2, /* the block's columns (of S) */
    ATT_UPTO = -3, /* the columns up to the block's end */
    ATT_FROM = -4, /* the rows from the block's start */
};
static int64_t att_dim(const att_dims *d, int64_t v, int64_t i) {
    int64_t lo = i * d->bt, T = d->a.T, S = d->a.S;
    switch (v) {
    case ATT_ROWS: return T - lo < d->bt ? T - lo : d->bt;
    case ATT_COLS: return S - lo < d->bt ? S - lo : d->bt;
    case ATT_UPTO: return lo + d->bt < S ? lo + d->bt : S;
    case ATT_FROM: return T - lo;
    default: return v;
    }
}

/* Row-major C_b = alpha op(A_b) op(B_b) + beta C_b for the nb pointers of
 * each array (device memory). */
static int gemm_rm_ptrs(const cuda_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        float alpha, const float **A, int64_t lda, const float **B, int64_t ldb,
                        float beta, const float **C, int64_t ldc, int64_t nb, const kernel_args *a,
                        oc_err *err) {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX || nb > INT_MAX)
        return kernel_fail(a, err, "dims exceed cuBLAS's int range");
    if (m == 0 || n == 0 || nb == 0) return OC_OK;
    if (k == 0) return kernel_fail(a, err, "a blocked product of length 0"); /* att_dims_of: none */
    CUBLAS_CHECK(cublasSetStream(c->im->blas, c->stream));
    CUBLAS_CHECK(cublasSgemmBatched(
        c->im->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m,
        (int)k, &alpha, B, (int)ldb, A, (int)lda, &beta, (float *const *)C, (int)ldc, (int)nb));
    return OC_OK;
}

/* Block j of a blocked GEMM's order: the blocks in order, or (acc) from the
 * last to the first, the last writing C and the others adding to it. */
static int64_t att_block(const att_dims *d, bool acc, int64_t j, float *beta) {
    *beta = acc && j > 0 ? 1.0f : 0.0f;
    return acc ? d->nblk - 1 - j : j;
}

/* A seq_first GEMM over a chunk of several images, or blocked: one kernel
 * writes every block's pointers, then one cublasSgemmBatched a block covers
 * the chunk's batches (a strided batch cannot: a batch's head and image
 * stride differently; one strided call per image was 72 calls a GEMM a chunk
 * for ViT-B/16's 864 batch-heads of 197 x 197 scores, launch-bound). */
static int att_gemm_ptrs(const cuda_ctx *c, const kernel_args *a, const att_dims *d, int64_t b0,
                         int64_t cb, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const att_opnd *o[3], bool acc, oc_err *err) {
    cu_att_ptrs p;
    for (int k = 0; k < 3; k++) {
        bool heads = !o[k]->scratch;
        p.base[k] = o[k]->base, p.first[k] = o[k]->scratch ? b0 : 0;
        p.h[k] = heads ? d->a.H : 1;
        p.s1[k] = heads ? o[k]->rows * o[k]->width : o[k]->rows * o[k]->cols;
        p.s2[k] = heads ? o[k]->cols : 0;
        p.step[k] = opnd_step(d, o[k]);
    }
    CU_LAUNCH(cu_att_ptrs_fill(c->stream, d->ptrs, d->nblk, cb, b0, p));
    for (int64_t j = 0; j < d->nblk; j++) {
        float beta;
        int64_t i = att_block(d, acc, j, &beta);
        const float **at = d->ptrs + i * 3 * cb;
        if (gemm_rm_ptrs(c, ta, tb, att_dim(d, M, i), att_dim(d, N, i), att_dim(d, K, i), alpha, at,
                         opnd_ld(d, o[0]), at + cb, opnd_ld(d, o[1]), beta, at + 2 * cb,
                         opnd_ld(d, o[2]), cb, a, err))
            return OC_ERR;
    }
    return OC_OK;
}

/* C_b = alpha op(A_b) op(B_b) for the chunk's batches [b0, b0 + cb), M, N
 * and K counts or ATT_* cuts, block by block (acc: see att_block): one
 * strided-batched GEMM, or (seq_first, within one image) one strided-batched
 * GEMM over its heads, or (seq_first, several images or blocked)
 * att_gemm_ptrs. */
static int att_gemm_blocks(const cuda_ctx *c, const kernel_args *a, const att_dims *d, int64_t b0,
                           int64_t cb, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                           float alpha, att_opnd A, att_opnd B, att_opnd C, bool acc, oc_err *err) {
    if (d->a.H && (d->nblk > 1 || b0 / d->a.H != (b0 + cb - 1) / d->a.H)) {
        const att_opnd *o[3] = {&A, &B, &C};
        return att_gemm_ptrs(c, a, d, b0, cb, ta, tb, M, N, K, alpha, o, acc, err);
    }
    for (int64_t j = 0; j < d->nblk; j++) {
        float beta;
        int64_t i = att_block(d, acc, j, &beta);
        int64_t m = att_dim(d, M, i), n = att_dim(d, N, i), k = att_dim(d, K, i);
        for (int64_t b = b0; b < b0 + cb;) {
            int64_t run = d->a.H ? (b / d->a.H + 1) * d->a.H - b : cb;
            if (run > b0 + cb - b) run = b0 + cb - b;
            int64_t la, sa, lb, sb, lc, sc;
            const float *pa = opnd_at(d, &A, b, b0, &la, &sa) + i * opnd_step(d, &A),
                        *pb = opnd_at(d, &B, b, b0, &lb, &sb) + i * opnd_step(d, &B);
            float *pc = (float *)opnd_at(d, &C, b, b0, &lc, &sc) + i * opnd_step(d, &C);
            if (cuda_gemm_rm_batched(c, ta, tb, m, n, k, alpha, pa, la, sa, pb, lb, sb, beta, pc,
                                     lc, sc, run, a, err))
                return OC_ERR;
            b += run;
        }
    }
    return OC_OK;
}
static int att_gemm(const cuda_ctx *c, const kernel_args *a, const att_dims *d, int64_t b0,
                    int64_t cb, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                    att_opnd A, att_opnd B, att_opnd C, oc_err *err) {
    return att_gemm_blocks(c, a, d, b0, cb, ta, tb, M, N, K, alpha, A, B, C, false, err);
}

/* A tensor operand (width: elements a row of it, when seq_first) or a scratch
 * one; moved(o, rs, cs): o as block i's moves it (rows down, columns right). */
static att_opnd tensor_opnd(const void *p, int64_t rows, int64_t cols, int64_t width) {
    return (att_opnd){(const float *)p, rows, cols, width, false, 0, 0};
}
static att_opnd scratch_opnd(const float *p, int64_t rows, int64_t cols) {
    return (att_opnd){p, rows, cols, cols, true, 0, 0};
}
static att_opnd moved(att_opnd o, int rs, int cs) {
    o.rs = rs, o.cs = cs;
    return o;
}

/* s = scale Q Kᵀ for batches [b0, b0 + cb), then the masked softmax. */
static int att_scores(const cuda_ctx *c, const kernel_args *a, int at, const att_dims *d,
                      int64_t b0, int64_t cb, float *s, const float *lse_in, float *lse_out,
                      oc_err *err) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    att_opnd Q = moved(tensor_opnd(a->in[at], d->a.T, d->a.dh, d->a.wq), 1, 0),
             S = moved(scratch_opnd(s, d->a.T, d->a.S), 1, 0);
    const float *K = (const float *)a->in[at + 1] + d->a.koff;
    int rc = p->k_transposed
                 ? att_gemm(c, a, d, b0, cb, false, false, ATT_ROWS, ATT_UPTO, d->a.dh, p->scale, Q,
                            tensor_opnd(K, d->a.dh, d->a.S, 0), S, err)
                 : att_gemm(c, a, d, b0, cb, false, true, ATT_ROWS, ATT_UPTO, d->a.dh, p->scale, Q,
                            tensor_opnd(K, d->a.S, d->a.dh, d->a.wq), S, err);
    if (rc) return rc;
    CU_LAUNCH(cu_att_softmax(c->stream, s, cb * d->a.T, d->a.T, d->a.S, b0, att_mask(a, at, d),
                             lse_in ? lse_in + b0 * d->a.T : NULL,
                             lse_out ? lse_out + b0 * d->a.T : NULL));
    return OC_OK;
}

/* The row kernels' arguments for a node of geometry ge whose Q sits at input `at`. */
static cu_att_rows att_rows_of(const cuda_ctx *c, const kernel_args *a, int at,
                               const op_attention_geom *ge) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    att_dims d = {.a = *ge}; /* blk 0: att_mask's rows are whole */
    return (cu_att_rows){.q = a->in[at],
                         .k = (const float *)a->in[at + 1] + d.a.koff,
                         .v = (const float *)a->in[at + 2] + d.a.voff,
                         .nb = d.a.nb,
                         .T = d.a.T,
                         .S = d.a.S,
                         .dh = d.a.dh,
                         .dv = d.a.dv,
                         .H = d.a.H,
                         .wq = d.a.wq,
                         .wv = d.a.wv,
                         .wy = d.a.wy,
                         .kt = p->k_transposed,
                         .scale = p->scale,
                         .ratio = p->dropout_ratio,
                         .m = att_mask(a, at, &d),
                         .key = {cpu_rng_seeded(a->seed), p->dropout_key_hash, c->im->step_dev}};
}

int cuda_fused_attention(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    op_attention_geom ge;
    op_attention_geometry(a->g, a->n, &ge);
    if (att_by_rows(&ge)) {
        cu_att_rows r = att_rows_of(c, a, 0, &ge);
        CU_LAUNCH(cu_att_rows_fwd(c->stream, &r, a->out[0], a->out[1]));
        return OC_OK;
    }
    const op_attention_args *p = &op_args_of(a->n)->attention;
    att_dims d = att_dims_of(a->g, a->n, a->scratch_bytes);
    OC_ASSERT(a->scratch_bytes >= cuda_attention_scratch(a->g, a->n, a->scratch_bytes));
    float *s = a->scratch;
    d.ptrs = (const float **)((uint8_t *)a->scratch + att_ptrs_at(&d));
    cu_rng key = {cpu_rng_seeded(a->seed), p->dropout_key_hash, c->im->step_dev};
    int64_t T = d.a.T, S = d.a.S;
    att_opnd V = tensor_opnd((const float *)a->in[2] + d.a.voff, S, d.a.dv, d.a.wv),
             Y = moved(tensor_opnd(a->out[0], T, d.a.dv, d.a.wy), 1, 0);
    for (int64_t b0 = 0; b0 < d.a.nb; b0 += d.chunk) {
        int64_t cb = d.a.nb - b0 < d.chunk ? d.a.nb - b0 : d.chunk;
        if (att_scores(c, a, 0, &d, b0, cb, s, NULL, a->out[1], err)) return OC_ERR;
        if (p->dropout_ratio > 0.0f)
            CU_LAUNCH(cu_att_dropout(c->stream, s, s, cb * T, T, S, d.blk, key, p->dropout_ratio,
                                     b0 * T * S));
        if (att_gemm(c, a, &d, b0, cb, false, false, ATT_ROWS, d.a.dv, ATT_UPTO, 1.0f,
                     moved(scratch_opnd(s, T, S), 1, 0), V, Y, err))
            return OC_ERR;
    }
    return OC_OK;
}

int cuda_fused_attention_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 4; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_attention_args *p = &op_args_of(a->n)->attention;
    float *dQ = out_or_null(a, 0), *dK = out_or_null(a, 1), *dV = out_or_null(a, 2);
    op_attention_geom ge;
    op_attention_geometry(a->g, a->n, &ge);
    if (p->qkv_heads && dQ) /* one gradient, its column thirds */
        dK = dQ + ge.koff, dV = dQ + ge.voff;
    if (att_by_rows(&ge)) {
        OC_ASSERT(a->scratch_bytes >= att_rows_dsum_bytes(&ge));
        cu_att_rows r = att_rows_of(c, a, 1, &ge);
        CU_LAUNCH(
            cu_att_rows_grad(c->stream, &r, a->in[0], a->in[5], a->in[6], a->scratch, dQ, dK, dV));
        return OC_OK;
    }
    att_dims d = att_dims_of(a->g, a->n, a->scratch_bytes);
    OC_ASSERT(a->scratch_bytes >= cuda_attention_scratch(a->g, a->n, a->scratch_bytes));
    float *P = a->scratch, *dS = P + d.chunk * d.a.T * d.a.S;
    d.ptrs = (const float **)((uint8_t *)a->scratch + att_ptrs_at(&d));
    cu_rng key = {cpu_rng_seeded(a->seed), p->dropout_key_hash, c->im->step_dev};
    int64_t T = d.a.T, S = d.a.S, dh = d.a.dh, dv = d.a.dv;
    const float *K = (const float *)a->in[2] + d.a.koff;
    /* row block i: dY's and Q's rows, dS's rows; column block j: dS's rows
     * and columns from the diagonal, P's alike */
    att_opnd dY = moved(tensor_opnd(a->in[0], T, dv, d.a.wy), 1, 0),
             Q = moved(tensor_opnd(a->in[1], T, dh, d.a.wq), 1, 0),
             V = tensor_opnd((const float *)a->in[3] + d.a.voff, S, dv, d.a.wv),
             sP = scratch_opnd(P, T, S), sdS = scratch_opnd(dS, T, S);
    for (int64_t b0 = 0; b0 < d.a.nb; b0 += d.chunk) {
        int64_t cb = d.a.nb - b0 < d.chunk ? d.a.nb - b0 : d.chunk;
        if (att_scores(c, a, 1, &d, b0, cb, P, a->in[6], NULL, err)) return OC_ERR;
        if (dV) { /* dV = (P with dropout)ᵀ dY, by column blocks */
            att_opnd Pd = sP;
            if (p->dropout_ratio > 0.0f) {
                CU_LAUNCH(cu_att_dropout(c->stream, P, dS, cb * T, T, S, d.blk, key,
                                         p->dropout_ratio, b0 * T * S));
                Pd = sdS;
            }
            if (d.dkv_rows ? att_gemm_blocks(c, a, &d, b0, cb, true, false, ATT_UPTO, dv, ATT_ROWS,
                                             1.0f, moved(Pd, 1, 0), dY,
                                             tensor_opnd(dV, S, dv, d.a.wv), true, err)
                           : att_gemm(c, a, &d, b0, cb, true, false, ATT_COLS, dv, ATT_FROM, 1.0f,
                                      moved(Pd, 1, 1), dY,
                                      moved(tensor_opnd(dV, S, dv, d.a.wv), 1, 0), err))
                return OC_ERR;
        }
        if (!dQ && !dK) continue;
        if (att_gemm(c, a, &d, b0, cb, false, true, ATT_ROWS, ATT_UPTO, dv, 1.0f, dY, V,
                     moved(sdS, 1, 0), err))
            return OC_ERR;
        CU_LAUNCH(cu_att_ds(c->stream, dS, P, (const float *)a->in[0], (const float *)a->in[5],
                            cb * T, T, S, dv, d.a.H, b0, att_mask(a, 1, &d), key,
                            p->dropout_ratio));
        if (dQ &&
            (p->k_transposed ? att_gemm(c, a, &d, b0, cb, false, true, ATT_ROWS, dh, ATT_UPTO,
                                        p->scale, moved(sdS, 1, 0), tensor_opnd(K, dh, S, 0),
                                        moved(tensor_opnd(dQ, T, dh, 0), 1, 0), err)
                             : att_gemm(c, a, &d, b0, cb, false, false, ATT_ROWS, dh, ATT_UPTO,
                                        p->scale, moved(sdS, 1, 0), tensor_opnd(K, S, dh, d.a.wq),
                                        moved(tensor_opnd(dQ, T, dh, d.a.wq), 1, 0), err)))
            return OC_ERR;
        if (dK && d.dkv_rows &&
            (p->k_transposed
                 ? att_gemm_blocks(c, a, &d, b0, cb, true, false, dh, ATT_UPTO, ATT_ROWS, p->scale,
                                   Q, moved(sdS, 1, 0), tensor_opnd(dK, dh, S, 0), true, err)
                 : att_gemm_blocks(c, a, &d, b0, cb, true, false, ATT_UPTO, dh, ATT_ROWS, p->scale,
                                   moved(sdS, 1, 0), Q, tensor_opnd(dK, S, dh, d.a.wq), true, err)))
            return OC_ERR;
        if (dK && !d.dkv_rows &&
            (p->k_transposed
                 ? att_gemm(c, a, &d, b0, cb, true, false, dh, ATT_COLS, ATT_FROM, p->scale, Q,
                            moved(sdS, 1, 1), moved(tensor_opnd(dK, dh, S, 0), 0, 1), err)
                 : att_gemm(c, a, &d, b0, cb, true, false, ATT_COLS, dh, ATT_FROM, p->scale,
                            moved(sdS, 1, 1), Q, moved(tensor_opnd(dK, S, dh, d.a.wq), 1, 0), err)))
            return OC_ERR;
    }
    return OC_OK;
}
