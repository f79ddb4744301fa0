/* emu_cublas.c — the cuBLAS emulator (see include/cublas_v2.h): Sgemm on the
 * handle's stream through OpenBLAS; GemmEx's half operands widened first. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cublas_v2.h"
#define OC_HALF_NO_IR
#include "ir/half.h"

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

static size_t type_bytes(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

/* Elements a column-major rows x cols matrix with leading dimension ld spans. */
static size_t matrix_span(int rows, int cols, int ld) {
    return rows <= 0 || cols <= 0 ? 0 : (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
}

static bool typed_matrix_ok(const void *p, cudaDataType t, int rows, int cols, int ld) {
    size_t n = matrix_span(rows, cols, ld);
    return n == 0 || emu_is_device_range(p, n * type_bytes(t));
}

/* The checks cublasSgemm and cublasGemmEx share: arguments, leading dimensions,
 * and A, B, C each inside one device block for the extent they span.
 * *empty: nothing to compute (m or n is 0). */
/* The stored extents of A (ar x ac) and B (br x bc) of a product op(A) op(B)
 * (m x k, k x n). */
typedef struct gemm_shape {
    int ar, ac, br, bc;
} gemm_shape;

/* The argument checks every product shares: sizes, operations, scalars and
 * leading dimensions; *empty: nothing to compute (m or n is 0). */
static cublasStatus_t gemm_shape_of(cublasOperation_t transa, cublasOperation_t transb, int m,
                                    int n, int k, const void *alpha, const void *beta, int lda,
                                    int ldb, int ldc, gemm_shape *s, bool *empty) {
    *empty = false;
    if (m < 0 || n < 0 || k < 0 || !alpha || !beta || (unsigned)transa > CUBLAS_OP_C ||
        (unsigned)transb > CUBLAS_OP_C)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) {
        *empty = true;
        return CUBLAS_STATUS_SUCCESS;
    }
    s->ar = transa == CUBLAS_OP_N ? m : k, s->ac = transa == CUBLAS_OP_N ? k : m;
    s->br = transb == CUBLAS_OP_N ? k : n, s->bc = transb == CUBLAS_OP_N ? n : k;
    if (lda < (s->ar > 1 ? s->ar : 1) || ldb < (s->br > 1 ? s->br : 1) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t gemm_args(cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                                int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                const void *B, cudaDataType bt, int ldb, const void *beta,
                                const void *C, cudaDataType ct, int ldc, gemm_shape *sh,
                                bool *empty) {
    gemm_shape s = {0, 0, 0, 0};
    cublasStatus_t st =
        gemm_shape_of(transa, transb, m, n, k, alpha, beta, lda, ldb, ldc, &s, empty);
    if (sh) *sh = s;
    if (st != CUBLAS_STATUS_SUCCESS || *empty) return st;
    if ((k > 0 &&
         (!typed_matrix_ok(A, at, s.ar, s.ac, lda) || !typed_matrix_ok(B, bt, s.br, s.bc, ldb))) ||
        !typed_matrix_ok(C, ct, m, n, ldc))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                           int m, int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    bool empty;
    cublasStatus_t st = gemm_args(transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F,
                                  ldb, beta, C, CUDA_R_32F, ldc, NULL, &empty);
    if (st != CUBLAS_STATUS_SUCCESS || empty) return st;
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

/* As cuBLAS: the pointer arrays are device memory, read when the stream runs
 * the product (a kernel before it on the stream may write them); each product
 * checked then (a pointer outside a device block aborts: there is no status
 * to return by then). */
typedef struct sgemm_batched_job {
    sgemm_job one; /* A, B, C unset */
    gemm_shape s;
    int nb;
    const float *const *A, *const *B;
    float *const *C;
} sgemm_batched_job;

static void sgemm_batched_run(void *p) {
    sgemm_batched_job *j = p;
    sgemm_job o = j->one;
    for (int b = 0; b < j->nb; b++) {
        if ((o.k > 0 && (!typed_matrix_ok(j->A[b], CUDA_R_32F, j->s.ar, j->s.ac, o.lda) ||
                         !typed_matrix_ok(j->B[b], CUDA_R_32F, j->s.br, j->s.bc, o.ldb))) ||
            !typed_matrix_ok(j->C[b], CUDA_R_32F, o.m, o.n, o.ldc)) {
            fprintf(stderr, "emu cublasSgemmBatched: product %d's A, B or C is not device memory\n",
                    b);
            abort();
        }
        cblas_sgemm(CblasColMajor, o.ta, o.tb, o.m, o.n, o.k, o.alpha, j->A[b], o.lda, j->B[b],
                    o.ldb, o.beta, j->C[b], o.ldc);
    }
    free(j);
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t h, cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n, int k, const float *alpha,
                                  const float *const Aarray[], int lda, const float *const Barray[],
                                  int ldb, const float *beta, float *const Carray[], int ldc,
                                  int batchCount) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    gemm_shape sh;
    bool empty;
    cublasStatus_t st =
        gemm_shape_of(transa, transb, m, n, k, alpha, beta, lda, ldb, ldc, &sh, &empty);
    if (batchCount < 0) st = CUBLAS_STATUS_INVALID_VALUE;
    if (st != CUBLAS_STATUS_SUCCESS || empty || batchCount == 0) return st;
    size_t arr = (size_t)batchCount * sizeof(void *);
    if (!emu_is_device_range(Aarray, arr) || !emu_is_device_range(Barray, arr) ||
        !emu_is_device_range(Carray, arr))
        return CUBLAS_STATUS_INVALID_VALUE;
    sgemm_batched_job *j = malloc(sizeof *j);
    if (!j) return CUBLAS_STATUS_ALLOC_FAILED;
    *j = (sgemm_batched_job){.one = {transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                                     transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k,
                                     lda, ldb, ldc, *alpha, *beta, NULL, NULL, NULL},
                             .s = sh,
                             .nb = batchCount,
                             .A = Aarray,
                             .B = Barray,
                             .C = Carray};
    emu_stream_enqueue(h->stream, sgemm_batched_run, j, sizeof *j);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- cublasGemmEx: half operands, float compute ---- */

static float elem_load(const void *p, cudaDataType t, size_t i) {
    if (t == CUDA_R_32F) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == CUDA_R_16BF ? bf16_to_f32(h) : f16_to_f32(h);
}

static void elem_store(void *p, cudaDataType t, size_t i, float v) {
    if (t == CUDA_R_32F) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = t == CUDA_R_16BF ? bf16_from_f32(v) : f16_from_f32(v);
}

typedef struct gemm_ex_job {
    enum CBLAS_TRANSPOSE ta, tb;
    int m, n, k, lda, ldb, ldc, ar, ac, br, bc;
    float alpha, beta;
    const void *A, *B;
    void *C;
    cudaDataType at, ct;
} gemm_ex_job;

static float *widened(const void *p, cudaDataType t, size_t count) {
    float *w = malloc((count ? count : 1) * sizeof *w);
    if (!w) abort();
    for (size_t i = 0; i < count; i++) w[i] = elem_load(p, t, i);
    return w;
}

static void gemm_ex_run(void *p) {
    gemm_ex_job *j = p;
    size_t na = j->k > 0 ? matrix_span(j->ar, j->ac, j->lda) : 0,
           nb = j->k > 0 ? matrix_span(j->br, j->bc, j->ldb) : 0,
           nc = matrix_span(j->m, j->n, j->ldc);
    float *a = widened(j->A, j->at, na), *b = widened(j->B, j->at, nb),
          *c = j->beta != 0.0f ? widened(j->C, j->ct, nc) : calloc(nc ? nc : 1, sizeof(float));
    if (!c) abort();
    if (j->k > 0)
        cblas_sgemm(CblasColMajor, j->ta, j->tb, j->m, j->n, j->k, j->alpha, a, j->lda, b, j->ldb,
                    j->beta, c, j->ldc);
    else
        for (size_t i = 0; i < nc; i++) c[i] *= j->beta;
    for (int col = 0; col < j->n; col++) /* only the m x n entries: the gaps stay */
        for (int r = 0; r < j->m; r++) {
            size_t i = (size_t)col * (size_t)j->ldc + (size_t)r;
            elem_store(j->C, j->ct, i, c[i]);
        }
    free(a);
    free(b);
    free(c);
    free(j);
}

static bool float_compute(cublasComputeType_t c) {
    return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC ||
           c == CUBLAS_COMPUTE_32F_FAST_TF32;
}

static bool known_type(cudaDataType t) {
    return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const void *alpha, const void *A,
                            cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb,
                            const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    (void)algo;
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!float_compute(computeType) || !known_type(Atype) || Btype != Atype ||
        (Ctype != Atype && Ctype != CUDA_R_32F) ||
        (computeType == CUBLAS_COMPUTE_32F_FAST_TF32 && Atype != CUDA_R_32F))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    bool empty;
    gemm_shape sh;
    cublasStatus_t st = gemm_args(transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
                                  beta, C, Ctype, ldc, &sh, &empty);
    if (st != CUBLAS_STATUS_SUCCESS || empty) return st;
    gemm_ex_job *j = malloc(sizeof *j);
    if (!j) return CUBLAS_STATUS_ALLOC_FAILED;
    *j = (gemm_ex_job){.ta = transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                       .tb = transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                       .m = m,
                       .n = n,
                       .k = k,
                       .lda = lda,
                       .ldb = ldb,
                       .ldc = ldc,
                       .ar = sh.ar,
                       .ac = sh.ac,
                       .br = sh.br,
                       .bc = sh.bc,
                       .alpha = *(const float *)alpha,
                       .beta = *(const float *)beta,
                       .A = A,
                       .B = B,
                       .C = C,
                       .at = Atype,
                       .ct = Ctype};
    emu_stream_enqueue(h->stream, gemm_ex_run, j, sizeof *j);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long strideA, const void *B,
                                          cudaDataType Btype, int ldb, long long strideB,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    if (batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (!known_type(Atype) || !known_type(Btype) || !known_type(Ctype))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    for (int b = 0; b < batchCount; b++) {
        cublasStatus_t st = cublasGemmEx(
            h, transa, transb, m, n, k, alpha, (const char *)A + b * strideA * type_bytes(Atype),
            Atype, lda, (const char *)B + b * strideB * type_bytes(Btype), Btype, ldb, beta,
            (char *)C + b * strideC * type_bytes(Ctype), Ctype, ldc, computeType, algo);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}
