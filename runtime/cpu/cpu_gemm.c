/* cpu_gemm.c — Gemm (Y = alpha * op(A) op(B) + beta * C) and the sgemm wrapper
 * the convolutions use.
 *
 * Determinism: OpenBLAS is set to one thread (once, on the first sgemm of the
 * process), so each product is computed by the same code path in the same
 * order every run: results are bitwise repeatable, and kernels may run on
 * several executor threads at once without OpenBLAS's thread pool in between. */
#include <cblas.h>
#include <pthread.h>

#include "cpu_internal.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_init(void) { openblas_set_num_threads(1); }

void cpu_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    pthread_once(&blas_once, blas_init);
    OC_ASSERT(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX);
    if (m == 0 || n == 0) return;
    if (k == 0) { /* BLAS would leave C untouched when beta == 1, scale otherwise */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* MatMul and its gradients, every leading dim of the left operand in the rows:
 *   MatMul      X (R, K) W (K, N)  -> Y (R, N)
 *   MatMulGradA dY (R, N) W (K, N) -> dX (R, K) = dY W^T
 *   MatMulGradB X (R, K) dY (R, N) -> dW (K, N) = X^T dY */
int cpu_matmul(const kernel_args *a, oc_err *err) {
    const ir_tensor *l = kernel_in(a, 0), *r = kernel_in(a, 1);
    if (kernel_want_dtype(a, l, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, r, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    const float *A = a->in[0], *B = a->in[1];
    float *Y = a->out[0];
    int64_t last = l->dims[l->rank - 1], rows = kernel_numel(l) / (last ? last : 1);
    if (!op_args_of(a->n)->matmul.batched) {
        if (a->n->op == OP_MATMUL) {
            int64_t K = r->dims[0], N = r->dims[1];
            cpu_sgemm(false, false, rows, N, K, 1.0f, A, K, B, N, 0.0f, Y, N);
        } else if (a->n->op == OP_MATMUL_GRAD_A) {
            int64_t K = r->dims[0], N = r->dims[1];
            cpu_sgemm(false, true, rows, K, N, 1.0f, A, N, B, N, 0.0f, Y, K);
        } else {
            int64_t K = last, N = r->dims[r->rank - 1];
            cpu_sgemm(true, false, K, N, rows, 1.0f, A, K, B, N, 0.0f, Y, N);
        }
        return OC_OK;
    }
    /* One GEMM per batch: l (b, M, Kl), r (b, Kr, Nr) (GradB: r = dY, Kr = M). */
    int64_t M = l->dims[l->rank - 2], Kl = last, Kr = r->dims[r->rank - 2],
            Nr = r->dims[r->rank - 1], nb = M * Kl != 0 ? kernel_numel(l) / (M * Kl) : 0;
    for (int64_t b = 0; b < nb; b++) {
        const float *Ab = A + b * M * Kl, *Bb = B + b * Kr * Nr;
        if (a->n->op == OP_MATMUL) /* (M, K) (K, N) */
            cpu_sgemm(false, false, M, Nr, Kl, 1.0f, Ab, Kl, Bb, Nr, 0.0f, Y + b * M * Nr, Nr);
        else if (a->n->op == OP_MATMUL_GRAD_A) /* dY (M, N) W^T: W (K, N) */
            cpu_sgemm(false, true, M, Kr, Nr, 1.0f, Ab, Kl, Bb, Nr, 0.0f, Y + b * M * Kr, Kr);
        else /* X^T (K, M) dY (M, N) */
            cpu_sgemm(true, false, Kl, Nr, M, 1.0f, Ab, Kl, Bb, Nr, 0.0f, Y + b * Kl * Nr, Nr);
    }
    return OC_OK;
}

/* Linear: Y (R, N) = X (R, K) W^T with W (N, K) (trans_w) or X W with W (K, N),
 * then + B row by row (the float operations of the MatMul -> Add it fused). */
int cpu_linear(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *w = kernel_in(a, 1), *b = kernel_in(a, 2);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, w, IR_DTYPE_FLOAT, err) ||
        (b && kernel_want_dtype(a, b, IR_DTYPE_FLOAT, err)))
        return OC_ERR;
    const op_linear_args *p = &op_args_of(a->n)->linear;
    int64_t K = x->dims[x->rank - 1], N = p->trans_w ? w->dims[0] : w->dims[1], rows = 1;
    for (int d = 0; d + 1 < x->rank; d++) rows *= x->dims[d];
    float *y = a->out[0];
    cpu_sgemm(false, p->trans_w, rows, N, K, 1.0f, a->in[0], K, a->in[1], p->trans_w ? K : N, 0.0f,
              y, N);
    if (p->bias) {
        const float *bias = a->in[2];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < N; j++) y[r * N + j] += bias[j];
    }
    return OC_OK;
}

/* A (M, K) or (K, M) with transA, B (K, N) or (N, K), C broadcast to (M, N). */
int cpu_gemm(const kernel_args *a, oc_err *err) {
    const ir_tensor *ta_ = kernel_in(a, 0), *tb_ = kernel_in(a, 1), *tc = kernel_in(a, 2),
                    *ty = kernel_out(a, 0);
    if (kernel_want_dtype(a, ta_, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, tb_, IR_DTYPE_FLOAT, err) ||
        (tc && kernel_want_dtype(a, tc, IR_DTYPE_FLOAT, err)))
        return OC_ERR;
    const op_gemm_args *p = &op_args_of(a->n)->gemm;
    bool ta = p->trans_a, tb = p->trans_b;
    float alpha = p->alpha, beta = p->beta;
    int64_t M = ty->dims[0], N = ty->dims[1];
    int64_t K = ta ? ta_->dims[0] : ta_->dims[1];
    float *y = a->out[0];
    const float *c = tc ? a->in[2] : NULL;
    if (c && beta != 0.0f) {
        int64_t s[2];
        cpu_bcast_strides(tc->rank, tc->dims, 2, ty->dims, s);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) y[i * N + j] = beta * c[i * s[0] + j * s[1]];
    }
    cpu_sgemm(ta, tb, M, N, K, alpha, a->in[0], ta_->dims[1], a->in[1], tb_->dims[1],
              (c && beta != 0.0f) ? 1.0f : 0.0f, y, N);
    return OC_OK;
}
