/* emu_cublas.c — the cuBLAS emulator (see include/cublas_v2.h): Sgemm on the
 * handle's stream through OpenBLAS. */
#include <cblas.h>
#include <stdint.h>
#include <stdlib.h>

#include "cublas_v2.h"

struct emu_cublas {
    unsigned magic;
    cudaStream_t stream;
    cublasMath_t math;
};

#define BLAS_MAGIC 0x424c4153u

static bool handle_ok(cublasHandle_t h) { return h && h->magic == BLAS_MAGIC; }

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    struct emu_cublas *h = calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->magic = BLAS_MAGIC;
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->magic = 0;
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t stream) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if ((unsigned)mode > CUBLAS_TF32_TENSOR_OP_MATH) return CUBLAS_STATUS_INVALID_VALUE;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *workspace, size_t bytes) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && !emu_is_device_range(workspace, bytes)) return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion(cublasHandle_t h, int *version) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!version) return CUBLAS_STATUS_INVALID_VALUE;
    *version = 0;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

typedef struct sgemm_job {
    enum CBLAS_TRANSPOSE ta, tb;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
} sgemm_job;

static void sgemm_run(void *p) {
    sgemm_job *j = p;
    cblas_sgemm(CblasColMajor, j->ta, j->tb, j->m, j->n, j->k, j->alpha, j->A, j->lda, j->B, j->ldb,
                j->beta, j->C, j->ldc);
    free(j);
}

/* A column-major matrix of `rows` x `cols` with leading dimension ld lies in
 * one device block (cols == 0 or rows == 0: nothing is read). */
static bool matrix_ok(const void *p, int rows, int cols, int ld) {
    if (rows <= 0 || cols <= 0) return true;
    if (ld < rows) return false;
    size_t bytes = ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * sizeof(float);
    return emu_is_device_range(p, bytes);
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                           int m, int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || !alpha || !beta || (unsigned)transa > CUBLAS_OP_C ||
        (unsigned)transb > CUBLAS_OP_C)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    int ar = transa == CUBLAS_OP_N ? m : k, ac = transa == CUBLAS_OP_N ? k : m;
    int br = transb == CUBLAS_OP_N ? k : n, bc = transb == CUBLAS_OP_N ? n : k;
    if (lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if ((k > 0 && (!matrix_ok(A, ar, ac, lda) || !matrix_ok(B, br, bc, ldb))) ||
        !matrix_ok(C, m, n, ldc))
        return CUBLAS_STATUS_INVALID_VALUE;
    sgemm_job *j = malloc(sizeof *j);
    if (!j) return CUBLAS_STATUS_ALLOC_FAILED;
    *j = (sgemm_job){transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                     transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                     m,
                     n,
                     k,
                     lda,
                     ldb,
                     ldc,
                     *alpha,
                     *beta,
                     A,
                     B,
                     C};
    emu_stream_enqueue(h->stream, sgemm_run, j, sizeof *j);
    return CUBLAS_STATUS_SUCCESS;
}

/* As cuBLAS: nb independent products, each checked and enqueued as cublasSgemm. */
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long strideA, const float *B, int ldb,
                                         long long strideB, const float *beta, float *C, int ldc,
                                         long long strideC, int batchCount) {
    if (batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (int b = 0; b < batchCount; b++) {
        cublasStatus_t st = cublasSgemm(h, transa, transb, m, n, k, alpha, A + b * strideA, lda,
                                        B + b * strideB, ldb, beta, C + b * strideC, ldc);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}
