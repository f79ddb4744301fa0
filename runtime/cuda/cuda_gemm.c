/* cuda_gemm.c — the cuda backend's GEMMs by cuBLAS: Gemm, MatMul (and its gradients),
 * Linear; fp32 math, TF32 per --tf32-matmul. Half tensors (--precision;
 * cuda_native_half): cublasGemmEx with CUBLAS_COMPUTE_32F. */
#include <limits.h>

#include "cuda_internal.h"

/* ---- Gemm (cuBLAS) ---- */

static cudaDataType blas_type(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT16 ? CUDA_R_16F : dt == IR_DTYPE_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Row-major C_b (m, n) = alpha op(A_b) op(B_b) + beta C_b for b < nb (strides
 * sa, sb, sc elements; beta 0 or 1), as the column-major C^T = op(B)^T op(A)^T.
 * float: cublasSgemm (TF32 per the handle's math mode), batched or not; half
 * (A, B, C all of type dt): cublasGemmEx with float compute — tensor cores,
 * float accumulation, C rounded once. */
static int gemm_typed(const cuda_ctx *c, ir_dtype dt, bool batched, bool ta, bool tb, int64_t m,
                      int64_t n, int64_t k, float alpha, const void *A, int64_t lda, int64_t sa,
                      const void *B, int64_t ldb, int64_t sb, float beta, void *C, int64_t ldc,
                      int64_t sc, int64_t nb, const kernel_args *a, oc_err *err) {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || nb > INT_MAX)
        return kernel_fail(a, err, "dims exceed cuBLAS's int range");
    if (m == 0 || n == 0 || nb == 0) return OC_OK;
    if (k == 0) { /* C = beta C */
        size_t es = dt == IR_DTYPE_FLOAT ? sizeof(float) : sizeof(uint16_t);
        if (beta == 0.0f) CU_CHECK(cudaMemsetAsync(C, 0, (size_t)(nb * m * n) * es, c->stream));
        return OC_OK;
    }
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasSetStream(c->im->blas, c->stream));
    if (dt == IR_DTYPE_FLOAT && batched)
        CUBLAS_CHECK(cublasSgemmStridedBatched(c->im->blas, opb, opa, (int)n, (int)m, (int)k,
                                               &alpha, B, (int)ldb, sb, A, (int)lda, sa, &beta, C,
                                               (int)ldc, sc, (int)nb));
    else if (dt == IR_DTYPE_FLOAT)
        CUBLAS_CHECK(cublasSgemm(c->im->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, B, (int)ldb,
                                 A, (int)lda, &beta, C, (int)ldc));
    else if (batched)
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            c->im->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, B, blas_type(dt), (int)ldb, sb,
            A, blas_type(dt), (int)lda, sa, &beta, C, blas_type(dt), (int)ldc, sc, (int)nb,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        CUBLAS_CHECK(cublasGemmEx(c->im->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, B,
                                  blas_type(dt), (int)ldb, A, blas_type(dt), (int)lda, &beta, C,
                                  blas_type(dt), (int)ldc, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
    return OC_OK;
}

/* Row-major C (m, n) = op(A) op(B), one product. */
static int gemm_rm(const cuda_ctx *c, ir_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                   int64_t k, const void *A, int64_t lda, const void *B, int64_t ldb, void *C,
                   int64_t ldc, const kernel_args *a, oc_err *err) {
    return gemm_typed(c, dt, false, ta, tb, m, n, k, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, C, ldc, 0, 1,
                      a, err);
}

/* See cuda_internal.h. */
int cuda_gemm_rm_batched(const cuda_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *A, int64_t lda, int64_t sa, const float *B,
                         int64_t ldb, int64_t sb, float beta, float *C, int64_t ldc, int64_t sc,
                         int64_t nb, const kernel_args *a, oc_err *err) {
    return gemm_typed(c, IR_DTYPE_FLOAT, true, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta,
                      C, ldc, sc, nb, a, err);
}

/* Row-major C_b = op(A_b) op(B_b), MatMul's batches (any float type). */
static int mm_batched(const cuda_ctx *c, ir_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                      int64_t k, const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb,
                      int64_t sb, void *C, int64_t ldc, int64_t sc, int64_t nb,
                      const kernel_args *a, oc_err *err) {
    return gemm_typed(c, dt, true, ta, tb, m, n, k, 1.0f, A, lda, sa, B, ldb, sb, 0.0f, C, ldc, sc,
                      nb, a, err);
}

/* MatMul and its gradients: see cpu_matmul. Float, or all three tensors of
 * one half type (cuda_native_half). */
int cuda_matmul(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *l = kernel_in(a, 0), *r = kernel_in(a, 1);
    ir_dtype dt = l->dtype;
    if ((dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(dt)) || r->dtype != dt ||
        kernel_out(a, 0)->dtype != dt)
        return kernel_fail(a, err, "takes float, float16 or bfloat16 tensors, all of one type");
    int64_t last = l->dims[l->rank - 1], rows = kernel_numel(l) / (last ? last : 1);
    if (op_args_of(a->n)->matmul.batched) {
        int64_t M = l->dims[l->rank - 2], Kl = last, Kr = r->dims[r->rank - 2],
                Nr = r->dims[r->rank - 1], nb = M * Kl != 0 ? kernel_numel(l) / (M * Kl) : 0;
        if (a->n->op == OP_MATMUL)
            return mm_batched(c, dt, false, false, M, Nr, Kl, a->in[0], Kl, M * Kl, a->in[1], Nr,
                              Kr * Nr, a->out[0], Nr, M * Nr, nb, a, err);
        if (a->n->op == OP_MATMUL_GRAD_A)
            return mm_batched(c, dt, false, true, M, Kr, Nr, a->in[0], Kl, M * Kl, a->in[1], Nr,
                              Kr * Nr, a->out[0], Kr, M * Kr, nb, a, err);
        return mm_batched(c, dt, true, false, Kl, Nr, M, a->in[0], Kl, M * Kl, a->in[1], Nr, M * Nr,
                          a->out[0], Nr, Kl * Nr, nb, a, err);
    }
    if (a->n->op == OP_MATMUL)
        return gemm_rm(c, dt, false, false, rows, r->dims[1], r->dims[0], a->in[0], r->dims[0],
                       a->in[1], r->dims[1], a->out[0], r->dims[1], a, err);
    if (a->n->op == OP_MATMUL_GRAD_A)
        return gemm_rm(c, dt, false, true, rows, r->dims[0], r->dims[1], a->in[0], r->dims[1],
                       a->in[1], r->dims[1], a->out[0], r->dims[0], a, err);
    int64_t K = last, N = r->dims[r->rank - 1];
    return gemm_rm(c, dt, true, false, K, N, rows, a->in[0], K, a->in[1], N, a->out[0], N, a, err);
}

/* Linear (cpu_linear): one GEMM reading W in place (transposed when trans_w);
 * a bias is written to Y first (cu_rows_fill) and added by the GEMM (beta 1),
 * so no pass over Y follows. Float, or every tensor of one half type. */
int cuda_linear(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *w = kernel_in(a, 1), *b = kernel_in(a, 2);
    ir_dtype dt = x->dtype;
    if ((dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(dt)) || w->dtype != dt ||
        kernel_out(a, 0)->dtype != dt || (b && b->dtype != dt))
        return kernel_fail(a, err, "takes float, float16 or bfloat16 tensors, all of one type");
    const op_linear_args *p = &op_args_of(a->n)->linear;
    int64_t K = x->dims[x->rank - 1], N = p->trans_w ? w->dims[0] : w->dims[1], rows = 1;
    for (int d = 0; d + 1 < x->rank; d++) rows *= x->dims[d];
    if (p->bias && rows > 0 && N > 0)
        CU_LAUNCH(cu_rows_fill(c->stream, a->in[2], cuda_float_kind(dt), a->out[0], rows, N));
    return gemm_typed(c, dt, false, false, p->trans_w, rows, N, K, 1.0f, a->in[0], K, 0, a->in[1],
                      p->trans_w ? K : N, 0, p->bias ? 1.0f : 0.0f, a->out[0], N, 0, 1, a, err);
}

int cuda_gemm(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *ta_ = kernel_in(a, 0), *tb_ = kernel_in(a, 1), *tc = kernel_in(a, 2),
                    *ty = kernel_out(a, 0);
    ir_dtype dt = ta_->dtype;
    if ((dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(dt)) || tb_->dtype != dt || ty->dtype != dt ||
        (tc && tc->dtype != dt))
        return kernel_fail(a, err, "takes float, float16 or bfloat16 tensors, all of one type");
    const op_gemm_args *p = &op_args_of(a->n)->gemm;
    bool ta = p->trans_a, tb = p->trans_b;
    int64_t M = ty->dims[0], N = ty->dims[1], K = ta ? ta_->dims[0] : ta_->dims[1];
    bool bias = tc && a->in[2] && p->beta != 0.0f;
    if (bias && dt != IR_DTYPE_FLOAT && p->beta != 1.0f) /* cuda_native_half: widened */
        return kernel_fail(a, err, "a half Gemm scales its C by beta %g (1 only)", p->beta);
    if (bias) {
        int64_t s[2] = {0, 0}, own1 = tc->rank == 2 ? tc->dims[1] : tc->rank == 1 ? tc->dims[0] : 1;
        /* numpy broadcast of C (rank <= 2) to (M, N) */
        if (tc->rank == 2) {
            s[0] = tc->dims[0] == 1 ? 0 : own1;
            s[1] = tc->dims[1] == 1 ? 0 : 1;
        } else if (tc->rank == 1) {
            s[1] = tc->dims[0] == 1 ? 0 : 1;
        }
        CU_LAUNCH(cu_gemm_bias(c->stream, a->in[2], cuda_float_kind(dt), s[0], s[1], p->beta,
                               a->out[0], M, N));
    }
    return gemm_typed(c, dt, false, ta, tb, M, N, K, p->alpha, a->in[0], ta_->dims[1], 0, a->in[1],
                      tb_->dims[1], 0, bias ? 1.0f : 0.0f, a->out[0], N, 0, 1, a, err);
}
