/* test_emu_cudnn.c — the CUDA emulator's cuDNN (tests/emu/emu_cudnn.c) against
 * independent expectations: a hand-computed convolution; convolutions of
 * every geometry (stride 2, padding, dilation, groups, 1-d/2-d/3-d, true
 * convolution mode) against a naive reference written here, and backward
 * data / filter against the adjoint identity
 *     <conv(x, w), dy> = <x, bwd_data(dy, w)> = <w, bwd_filter(x, dy)>;
 * BatchNormalization forward (training: batch statistics, running statistics,
 * saved mean / inverse std; inference) against the direct formulas, backward
 * against central finite differences of a double-precision forward; alpha /
 * beta blending (beta = 0 never reads NaN garbage); max pooling forward /
 * backward by hand (argmax routing, NaN propagation); the fake heuristics'
 * list; bad arguments rejected; half data (cuDNN's bfloat16 / float16
 * configurations, cuBLAS's GemmEx) by hand: float accumulation, one rounding
 * to nearest even, the configurations cuDNN refuses refused. Built only with
 * `make CUDA=emu` (OC_CUDA_EMU);
 * other builds compile a main that skips. */
#ifndef OC_CUDA_EMU
#include <stdio.h>
int main(void) {
    puts("SKIP test_emu_cudnn: needs CUDA=emu");
    return 0;
}
#else
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

static cudnnHandle_t H;
static cudaStream_t S;

/* ---- helpers ---- */

static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *dev_new(size_t n) {
    void *p = NULL;
    assert_int_equal(cudaMalloc(&p, n * sizeof(float)), cudaSuccess);
    return p;
}
static void up(float *d, const float *h, size_t n) {
    assert_int_equal(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, S),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
}
static void down(float *h, const float *d, size_t n) {
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, S),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
}
static void fill(float *d, size_t n, float v) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = v;
    up(d, h, n);
    free(h);
}
static float *host_rand(size_t n) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = frand();
    return h;
}
static void near(double got, double want, double rel, const char *what, int i) {
    double tol = rel * (1.0 + fabs(want));
    if (!(fabs(got - want) <= tol)) fail_msg("%s[%d]: got %.9g, want %.9g", what, i, got, want);
}

static cudnnTensorDescriptor_t tdesc(int nb, const int *dim) {
    cudnnTensorDescriptor_t d;
    int str[8];
    str[nb - 1] = 1;
    for (int i = nb - 2; i >= 0; i--) str[i] = str[i + 1] * dim[i + 1];
    assert_int_equal(cudnnCreateTensorDescriptor(&d), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, nb, dim, str),
                     CUDNN_STATUS_SUCCESS);
    return d;
}

/* ---- convolution geometry of a case ---- */

typedef struct ccase {
    int nsp; /* 2 or 3 (a 1-d case is 2-d with a trailing extent 1, as the backend does) */
    int N, C, K, G;
    int in[3], k[3], pad[3], str[3], dil[3];
    cudnnConvolutionMode_t mode;
} ccase;

typedef struct cset {
    ccase c;
    int nb, xd[5], yd[5], wd[5];
    size_t nx, ny, nw;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} cset;

static size_t prod(const int *d, int n) {
    size_t p = 1;
    for (int i = 0; i < n; i++) p *= (size_t)d[i];
    return p;
}

static void cset_make(const ccase *c, cset *s) {
    memset(s, 0, sizeof *s);
    s->c = *c;
    s->nb = c->nsp + 2;
    s->xd[0] = s->yd[0] = c->N;
    s->xd[1] = c->C;
    s->yd[1] = s->wd[0] = c->K;
    s->wd[1] = c->C / c->G;
    for (int i = 0; i < c->nsp; i++) {
        s->xd[2 + i] = c->in[i];
        s->wd[2 + i] = c->k[i];
        s->yd[2 + i] = (c->in[i] + 2 * c->pad[i] - (c->k[i] - 1) * c->dil[i] - 1) / c->str[i] + 1;
    }
    s->nx = prod(s->xd, s->nb), s->ny = prod(s->yd, s->nb), s->nw = prod(s->wd, s->nb);
    s->x = tdesc(s->nb, s->xd);
    s->y = tdesc(s->nb, s->yd);
    assert_int_equal(cudnnCreateFilterDescriptor(&s->w), CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnSetFilterNdDescriptor(s->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s->nb, s->wd),
        CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnCreateConvolutionDescriptor(&s->conv), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetConvolutionNdDescriptor(s->conv, c->nsp, c->pad, c->str, c->dil,
                                                     c->mode, CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetConvolutionGroupCount(s->conv, c->G), CUDNN_STATUS_SUCCESS);
    int od[5];
    assert_int_equal(cudnnGetConvolutionNdForwardOutputDim(s->conv, s->x, s->w, s->nb, od),
                     CUDNN_STATUS_SUCCESS);
    for (int i = 0; i < s->nb; i++) assert_int_equal(od[i], s->yd[i]);
}

static void cset_free(cset *s) {
    cudnnDestroyTensorDescriptor(s->x);
    cudnnDestroyTensorDescriptor(s->y);
    cudnnDestroyFilterDescriptor(s->w);
    cudnnDestroyConvolutionDescriptor(s->conv);
}

/* Naive forward: every (output, filter tap) with explicit bounds checks. */
static void ref_conv(const cset *s, const float *x, const float *w, double *y) {
    const ccase *c = &s->c;
    int nsp = c->nsp, cg = c->C / c->G, kg = c->K / c->G;
    size_t osp = prod(s->yd + 2, nsp), ksp = prod(s->wd + 2, nsp), isp = prod(s->xd + 2, nsp);
    for (int n = 0; n < c->N; n++)
        for (int k = 0; k < c->K; k++)
            for (size_t o = 0; o < osp; o++) {
                double acc = 0;
                for (int ci = 0; ci < cg; ci++)
                    for (size_t t = 0; t < ksp; t++) {
                        size_t oo = o, tt = t, xi = 0, ok = 1, tf = 0;
                        for (int d = nsp - 1, mul = 1, kmul = 1; d >= 0; d--) {
                            int od = (int)(oo % (size_t)s->yd[2 + d]),
                                td = (int)(tt % (size_t)c->k[d]);
                            oo /= (size_t)s->yd[2 + d], tt /= (size_t)c->k[d];
                            int id = od * c->str[d] - c->pad[d] + td * c->dil[d];
                            if (id < 0 || id >= c->in[d]) ok = 0;
                            xi += (size_t)(id * mul);
                            int tdf = c->mode == CUDNN_CONVOLUTION ? c->k[d] - 1 - td : td;
                            tf += (size_t)(tdf * kmul);
                            mul *= c->in[d], kmul *= c->k[d];
                        }
                        if (!ok) continue;
                        int cin = (k / kg) * cg + ci;
                        acc += (double)w[((size_t)k * (size_t)cg + (size_t)ci) * ksp + tf] *
                               x[((size_t)n * (size_t)c->C + (size_t)cin) * isp + xi];
                    }
                y[((size_t)n * (size_t)c->K + (size_t)k) * osp + o] = acc;
            }
}

/* ---- tests: convolution ---- */

static void test_conv_forward_hand(void **state) {
    (void)state;
    /* x = 1..9 (3x3), w = [[1,2],[3,4]]: valid, stride 1 -> [[37,47],[67,77]];
     * pad 1, stride 2 -> [[4,18],[36,77]] (worked by hand). */
    ccase c1 = {2, 1, 1, 1, 1, {3, 3}, {2, 2}, {0, 0}, {1, 1}, {1, 1}, CUDNN_CROSS_CORRELATION};
    ccase c2 = {2, 1, 1, 1, 1, {3, 3}, {2, 2}, {1, 1}, {2, 2}, {1, 1}, CUDNN_CROSS_CORRELATION};
    const float want1[4] = {37, 47, 67, 77}, want2[4] = {4, 18, 36, 77};
    const ccase *cs[2] = {&c1, &c2};
    const float *wants[2] = {want1, want2};
    float hx[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, hw[4] = {1, 2, 3, 4}, hy[4];
    for (int t = 0; t < 2; t++) {
        cset s;
        cset_make(cs[t], &s);
        assert_int_equal(s.ny, 4);
        float *x = dev_new(9), *w = dev_new(4), *y = dev_new(4);
        up(x, hx, 9), up(w, hw, 4);
        fill(y, 4, NAN); /* beta = 0: y never read */
        const float one = 1, zero = 0, two = 2;
        assert_int_equal(cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0,
                                                 &zero, s.y, y),
                         CUDNN_STATUS_SUCCESS);
        down(hy, y, 4);
        for (int i = 0; i < 4; i++) near(hy[i], wants[t][i], 1e-6, "y", i);
        fill(y, 4, 1.0f); /* y = 2 * conv + 1 * y */
        assert_int_equal(cudnnConvolutionForward(H, &two, s.x, x, s.w, w, s.conv,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0,
                                                 &one, s.y, y),
                         CUDNN_STATUS_SUCCESS);
        down(hy, y, 4);
        for (int i = 0; i < 4; i++) near(hy[i], 2 * wants[t][i] + 1, 1e-6, "y blended", i);
        cudaFree(x), cudaFree(w), cudaFree(y);
        cset_free(&s);
    }
}

/* Half data, worked by hand: x = 1..9, w = [[1,2],[3,4]] * 65/64 (both exact
 * in bfloat16): y = [37, 47, 67, 77] * 65/64 = 37.578125, 47.734375,
 * 68.046875, 78.203125, rounded once to bfloat16 (8 significant bits):
 * 37.5, 47.75, 68, 78. Half data with half compute is TRUE_HALF_CONFIG
 * for float16 only; bfloat16 with bfloat16 compute is no configuration. */
/* A synchronous copy on S. */
static void cp(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind) {
    assert_int_equal(cudaMemcpyAsync(dst, src, bytes, kind, S), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
}

static void test_conv_half_hand(void **state) {
    (void)state;
    uint16_t hx[9], hw[4], hy[4];
    for (int i = 0; i < 9; i++) { /* small integers: the top 16 bits of the float */
        float f = (float)(i + 1);
        uint32_t u;
        memcpy(&u, &f, 4);
        hx[i] = (uint16_t)(u >> 16);
    }
    const float wv[4] = {1 * 65.0f / 64, 2 * 65.0f / 64, 3 * 65.0f / 64, 4 * 65.0f / 64};
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, &wv[i], 4);
        assert_int_equal(u & 0xffffu, 0); /* exact in bfloat16 */
        hw[i] = (uint16_t)(u >> 16);
    }
    int xd[4] = {1, 1, 3, 3}, yd[4] = {1, 1, 2, 2}, wd[4] = {1, 1, 2, 2};
    int xs[4] = {9, 9, 3, 1}, ys[4] = {4, 4, 2, 1};
    int pad[2] = {0, 0}, str[2] = {1, 1}, dil[2] = {1, 1};
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    assert_int_equal(cudnnCreateTensorDescriptor(&x), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnCreateTensorDescriptor(&y), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnCreateFilterDescriptor(&w), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnCreateConvolutionDescriptor(&conv), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetTensorNdDescriptor(x, CUDNN_DATA_BFLOAT16, 4, xd, xs),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetTensorNdDescriptor(y, CUDNN_DATA_BFLOAT16, 4, yd, ys),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetFilterNdDescriptor(w, CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NCHW, 4, wd),
                     CUDNN_STATUS_SUCCESS);
    void *dx, *dw, *dy;
    assert_int_equal(cudaMalloc(&dx, sizeof hx), cudaSuccess);
    assert_int_equal(cudaMalloc(&dw, sizeof hw), cudaSuccess);
    assert_int_equal(cudaMalloc(&dy, sizeof hy), cudaSuccess);
    cp(dx, hx, sizeof hx, cudaMemcpyHostToDevice);
    cp(dw, hw, sizeof hw, cudaMemcpyHostToDevice);
    const float one = 1, zero = 0;
    /* bfloat16 data, bfloat16 compute: not a cuDNN configuration */
    assert_int_equal(cudnnSetConvolutionNdDescriptor(conv, 2, pad, str, dil,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_BFLOAT16),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnConvolutionForward(H, &one, x, dx, w, dw, conv,
                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0,
                                             &zero, y, dy),
                     CUDNN_STATUS_NOT_SUPPORTED);
    /* PSEUDO_BFLOAT16_CONFIG */
    assert_int_equal(cudnnSetConvolutionNdDescriptor(conv, 2, pad, str, dil,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnConvolutionForward(H, &one, x, dx, w, dw, conv,
                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0,
                                             &zero, y, dy),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
    cp(hy, dy, sizeof hy, cudaMemcpyDeviceToHost);
    const float want[4] = {37.5f, 47.75f, 68.0f, 78.0f};
    for (int i = 0; i < 4; i++) {
        uint32_t u = (uint32_t)hy[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        near(f, want[i], 0, "bf16 y", i);
    }
    /* a float y with bfloat16 x and w: the types differ */
    cudnnTensorDescriptor_t yf = tdesc(4, yd);
    assert_int_equal(cudnnConvolutionForward(H, &one, x, dx, w, dw, conv,
                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0,
                                             &zero, yf, dy),
                     CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(yf);
    cudnnDestroyTensorDescriptor(x), cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w), cudnnDestroyConvolutionDescriptor(conv);
    cudaFree(dx), cudaFree(dw), cudaFree(dy);
}

/* cublasGemmEx, bfloat16 operands, float compute, worked by hand: [1, 1] .
 * [1, 3 * 2^-9]^T = 1.005859375: C bfloat16 -> 1.0078125 (nearest of 1 and
 * 1 + 2^-7), C float -> exact; [1, 1] . [1, 2^-8]^T = 1 + 2^-8, a tie -> 1
 * (even). bfloat16 A with float16 B is not supported. */
static void test_gemm_ex_hand(void **state) {
    (void)state;
    cublasHandle_t bh;
    assert_int_equal(cublasCreate(&bh), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasSetStream(bh, S), CUBLAS_STATUS_SUCCESS);
    const uint16_t a[2] = {0x3f80, 0x3f80};  /* 1, 1 */
    const uint16_t b1[2] = {0x3f80, 0x3bc0}; /* 1, 3 * 2^-9 */
    const uint16_t b2[2] = {0x3f80, 0x3b80}; /* 1, 2^-8 */
    void *da, *db, *dc;
    assert_int_equal(cudaMalloc(&da, 4), cudaSuccess);
    assert_int_equal(cudaMalloc(&db, 4), cudaSuccess);
    assert_int_equal(cudaMalloc(&dc, 4), cudaSuccess);
    cp(da, a, 4, cudaMemcpyHostToDevice);
    const float one = 1, zero = 0;
    const uint16_t *bs[2] = {b1, b2};
    const uint16_t want_bf16[2] = {0x3f81, 0x3f80};
    const float want_f32[2] = {1.005859375f, 1.00390625f};
    for (int t = 0; t < 2; t++) {
        cp(db, bs[t], 4, cudaMemcpyHostToDevice);
        /* C (1 x 1) = A (1 x 2) B (2 x 1), column-major */
        assert_int_equal(cublasGemmEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, da, CUDA_R_16BF,
                                      1, db, CUDA_R_16BF, 2, &zero, dc, CUDA_R_16BF, 1,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         CUBLAS_STATUS_SUCCESS);
        uint16_t hc;
        assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
        cp(&hc, dc, 2, cudaMemcpyDeviceToHost);
        assert_int_equal(hc, want_bf16[t]);
        assert_int_equal(cublasGemmEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, da, CUDA_R_16BF,
                                      1, db, CUDA_R_16BF, 2, &zero, dc, CUDA_R_32F, 1,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         CUBLAS_STATUS_SUCCESS);
        float fc;
        assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
        cp(&fc, dc, 4, cudaMemcpyDeviceToHost);
        near(fc, want_f32[t], 0, "float C", t);
    }
    assert_int_equal(cublasGemmEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, da, CUDA_R_16BF, 1,
                                  db, CUDA_R_16F, 2, &zero, dc, CUDA_R_16BF, 1, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    cudaFree(da), cudaFree(db), cudaFree(dc);
    assert_int_equal(cublasDestroy(bh), CUBLAS_STATUS_SUCCESS);
}

static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* Forward vs the naive reference, then the adjoint identity, each direction
 * run with an algorithm from its heuristics list that needs workspace. */
static void conv_case_check(const ccase *c) {
    cset s;
    cset_make(c, &s);
    float *hx = host_rand(s.nx), *hw = host_rand(s.nw), *hdy = host_rand(s.ny);
    float *hy = malloc(s.ny * sizeof *hy), *hdx = malloc(s.nx * sizeof *hdx),
          *hdw = malloc(s.nw * sizeof *hdw);
    double *ry = malloc(s.ny * sizeof *ry);
    float *x = dev_new(s.nx), *w = dev_new(s.nw), *dy = dev_new(s.ny), *y = dev_new(s.ny),
          *dx = dev_new(s.nx), *dw = dev_new(s.nw);
    up(x, hx, s.nx), up(w, hw, s.nw), up(dy, hdy, s.ny);
    fill(y, s.ny, NAN), fill(dx, s.nx, NAN), fill(dw, s.nw, NAN);
    const float one = 1, zero = 0;
    size_t ws_bytes;
    void *ws = NULL;

    assert_int_equal(cudnnSetConvolutionMathType(s.conv, CUDNN_TENSOR_OP_MATH),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnGetConvolutionForwardWorkspaceSize(
            H, s.x, s.w, s.conv, s.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &ws_bytes),
        CUDNN_STATUS_SUCCESS);
    assert_true(ws_bytes > 0);
    assert_int_equal(cudaMalloc(&ws, ws_bytes), cudaSuccess);
    assert_int_equal(cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv,
                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, ws,
                                             ws_bytes, &zero, s.y, y),
                     CUDNN_STATUS_SUCCESS);
    down(hy, y, s.ny);
    ref_conv(&s, hx, hw, ry);
    for (size_t i = 0; i < s.ny; i++) near(hy[i], ry[i], 1e-5, "conv y", (int)i);
    cudaFree(ws);

    assert_int_equal(cudnnGetConvolutionBackwardDataWorkspaceSize(
                         H, s.w, s.y, s.conv, s.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &ws_bytes),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudaMalloc(&ws, ws_bytes ? ws_bytes : 1), cudaSuccess);
    assert_int_equal(cudnnConvolutionBackwardData(H, &one, s.w, w, s.y, dy, s.conv,
                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, ws, ws_bytes,
                                                  &zero, s.x, dx),
                     CUDNN_STATUS_SUCCESS);
    down(hdx, dx, s.nx);
    cudaFree(ws);

    assert_int_equal(cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                         H, s.x, s.y, s.conv, s.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, &ws_bytes),
                     CUDNN_STATUS_SUCCESS);
    assert_true(ws_bytes > 0);
    assert_int_equal(cudaMalloc(&ws, ws_bytes), cudaSuccess);
    assert_int_equal(cudnnConvolutionBackwardFilter(H, &one, s.x, x, s.y, dy, s.conv,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, ws,
                                                    ws_bytes, &zero, s.w, dw),
                     CUDNN_STATUS_SUCCESS);
    down(hdw, dw, s.nw);
    /* the algorithm's workspace holds the emulator's NaN scribble */
    unsigned char *hws = malloc(ws_bytes);
    assert_int_equal(cudaMemcpyAsync(hws, ws, ws_bytes, cudaMemcpyDeviceToHost, S), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
    assert_int_equal(hws[0], 0xff);
    assert_int_equal(hws[ws_bytes - 1], 0xff);
    free(hws);
    cudaFree(ws);

    double a = dot(hy, hdy, s.ny), b = dot(hx, hdx, s.nx), cc = dot(hw, hdw, s.nw);
    near(b, a, 1e-5, "<x, bwd_data(dy, w)> vs <conv(x, w), dy>", 0);
    near(cc, a, 1e-5, "<w, bwd_filter(x, dy)> vs <conv(x, w), dy>", 0);

    /* beta = 1 accumulates: dw' = dw + grad */
    assert_int_equal(cudnnConvolutionBackwardFilter(H, &one, s.x, x, s.y, dy, s.conv,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, NULL, 0,
                                                    &one, s.w, dw),
                     CUDNN_STATUS_SUCCESS);
    float *hdw2 = malloc(s.nw * sizeof *hdw2);
    down(hdw2, dw, s.nw);
    for (size_t i = 0; i < s.nw; i++) near(hdw2[i], 2.0 * hdw[i], 1e-5, "dw accumulated", (int)i);

    free(hdw2), free(hx), free(hw), free(hdy), free(hy), free(hdx), free(hdw), free(ry);
    cudaFree(x), cudaFree(w), cudaFree(dy), cudaFree(y), cudaFree(dx), cudaFree(dw);
    cset_free(&s);
}

static void test_conv_geometries(void **state) {
    (void)state;
    const ccase cases[] = {
        /* nsp N C K G  in         k          pad        stride     dilation */
        {2,
         2,
         3,
         4,
         1,
         {7, 6},
         {3, 3},
         {1, 1},
         {2, 2},
         {1, 1},
         CUDNN_CROSS_CORRELATION}, /* stride 2 + pad */
        {2,
         1,
         2,
         3,
         1,
         {9, 8},
         {3, 2},
         {2, 1},
         {1, 2},
         {2, 3},
         CUDNN_CROSS_CORRELATION}, /* dilation */
        {2,
         2,
         6,
         4,
         2,
         {5, 5},
         {3, 3},
         {1, 1},
         {1, 1},
         {1, 1},
         CUDNN_CROSS_CORRELATION}, /* groups */
        {2,
         1,
         4,
         4,
         4,
         {6, 5},
         {3, 3},
         {1, 1},
         {2, 2},
         {1, 1},
         CUDNN_CROSS_CORRELATION}, /* depthwise */
        {2,
         2,
         3,
         2,
         1,
         {11, 1},
         {3, 1},
         {1, 0},
         {2, 1},
         {2, 1},
         CUDNN_CROSS_CORRELATION}, /* 1-d as (L, 1) */
        {3,
         1,
         2,
         3,
         1,
         {4, 5, 3},
         {2, 3, 2},
         {1, 1, 0},
         {2, 1, 1},
         {1, 1, 2},
         CUDNN_CROSS_CORRELATION}, /* 3-d */
        {2,
         1,
         2,
         2,
         1,
         {5, 4},
         {3, 2},
         {1, 0},
         {1, 1},
         {1, 1},
         CUDNN_CONVOLUTION}, /* flipped kernel */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) conv_case_check(&cases[i]);
}

static void test_conv_bias(void **state) {
    (void)state;
    /* cudnnAddTensor broadcasts a (1, C, 1, 1) bias; BackwardBias sums dy over N, H, W */
    int yd[4] = {2, 3, 2, 2}, bd[4] = {1, 3, 1, 1};
    cudnnTensorDescriptor_t ydesc = tdesc(4, yd), bdesc = tdesc(4, bd);
    float *hy = host_rand(24), hb[3] = {1, -2, 0.5f}, out[24], db[3];
    float *y = dev_new(24), *b = dev_new(3), *d = dev_new(3);
    up(y, hy, 24), up(b, hb, 3);
    const float one = 1, zero = 0;
    assert_int_equal(cudnnAddTensor(H, &one, bdesc, b, &one, ydesc, y), CUDNN_STATUS_SUCCESS);
    down(out, y, 24);
    for (int i = 0; i < 24; i++) near(out[i], (double)hy[i] + hb[(i / 4) % 3], 1e-6, "y + b", i);
    fill(d, 3, NAN);
    assert_int_equal(cudnnConvolutionBackwardBias(H, &one, ydesc, y, &zero, bdesc, d),
                     CUDNN_STATUS_SUCCESS);
    down(db, d, 3);
    for (int c = 0; c < 3; c++) {
        double s = 0;
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 4; i++) s += out[(n * 3 + c) * 4 + i];
        near(db[c], s, 1e-6, "db", c);
    }
    free(hy);
    cudaFree(y), cudaFree(b), cudaFree(d);
    cudnnDestroyTensorDescriptor(ydesc), cudnnDestroyTensorDescriptor(bdesc);
}

static void test_relu(void **state) {
    (void)state;
    cudnnTensorDescriptor_t td;
    cudnnActivationDescriptor_t ad;
    assert_int_equal(cudnnCreateTensorDescriptor(&td), CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnSetTensor4dDescriptor(td, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 5),
        CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnCreateActivationDescriptor(&ad), CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
        CUDNN_STATUS_SUCCESS);
    float hx[5] = {-1, 0, 2.5f, NAN, -0.0f}, hy[5];
    float *x = dev_new(5), *y = dev_new(5);
    up(x, hx, 5);
    fill(y, 5, NAN);
    const float one = 1, zero = 0;
    assert_int_equal(cudnnActivationForward(H, ad, &one, td, x, &zero, td, y),
                     CUDNN_STATUS_SUCCESS);
    down(hy, y, 5);
    assert_true(hy[0] == 0 && hy[1] == 0 && hy[2] == 2.5f && isnan(hy[3]) && hy[4] == 0);
    assert_int_equal(
        cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
        CUDNN_STATUS_SUCCESS);
    fill(y, 5, 1.0f);
    assert_int_equal(cudnnActivationForward(H, ad, &one, td, x, &one, td, y), CUDNN_STATUS_SUCCESS);
    down(hy, y, 5);
    assert_true(hy[0] == 1 && hy[1] == 1 && hy[2] == 3.5f && hy[3] == 1 && hy[4] == 1);
    cudaFree(x), cudaFree(y);
    cudnnDestroyTensorDescriptor(td);
    cudnnDestroyActivationDescriptor(ad);
}

/* ---- tests: batch normalization ---- */

enum { BN_N = 3, BN_C = 2, BN_S = 5, BN_NX = BN_N * BN_C * BN_S };

typedef struct bnset {
    cudnnTensorDescriptor_t x, p;
} bnset;

static bnset bn_descs(void) {
    bnset b;
    assert_int_equal(cudnnCreateTensorDescriptor(&b.x), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnCreateTensorDescriptor(&b.p), CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnSetTensor4dDescriptor(b.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, BN_N, BN_C, BN_S, 1),
        CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnDeriveBNTensorDescriptor(b.p, b.x, CUDNN_BATCHNORM_SPATIAL),
                     CUDNN_STATUS_SUCCESS);
    cudnnDataType_t dt;
    int nb, dim[4], str[4];
    assert_int_equal(cudnnGetTensorNdDescriptor(b.p, 4, &dt, &nb, dim, str), CUDNN_STATUS_SUCCESS);
    assert_int_equal(nb, 4);
    assert_true(dt == CUDNN_DATA_FLOAT && dim[0] == 1 && dim[1] == BN_C && dim[2] == 1 &&
                dim[3] == 1);
    return b;
}

static void bn_free(bnset *b) {
    cudnnDestroyTensorDescriptor(b->x);
    cudnnDestroyTensorDescriptor(b->p);
}

/* Direct per-channel mean and biased variance. */
static void direct_stats(const double *x, int c, double *mean, double *var) {
    double s = 0, q = 0, m = BN_N * BN_S;
    for (int n = 0; n < BN_N; n++)
        for (int i = 0; i < BN_S; i++) s += x[(n * BN_C + c) * BN_S + i];
    *mean = s / m;
    for (int n = 0; n < BN_N; n++)
        for (int i = 0; i < BN_S; i++) q += pow(x[(n * BN_C + c) * BN_S + i] - *mean, 2);
    *var = q / m;
}

static void test_bn_forward(void **state) {
    (void)state;
    bnset b = bn_descs();
    float *hx = host_rand(BN_NX), hs[BN_C] = {1.5f, -0.5f}, hb[BN_C] = {0.25f, 2},
          hrm[BN_C] = {0.3f, -1}, hrv[BN_C] = {2, 0.5f};
    for (int i = 0; i < BN_NX; i++) hx[i] = hx[i] * 3 + 1; /* mean and variance far from 0 / 1 */
    float *x = dev_new(BN_NX), *y = dev_new(BN_NX), *sc = dev_new(BN_C), *bi = dev_new(BN_C),
          *rm = dev_new(BN_C), *rv = dev_new(BN_C), *sm = dev_new(BN_C), *si = dev_new(BN_C);
    up(x, hx, BN_NX), up(sc, hs, BN_C), up(bi, hb, BN_C), up(rm, hrm, BN_C), up(rv, hrv, BN_C);
    fill(y, BN_NX, NAN);
    const float one = 1, zero = 0;
    const double f = 0.1, eps = 1e-3;
    assert_int_equal(cudnnBatchNormalizationForwardTraining(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                            b.x, x, b.x, y, b.p, sc, bi, f, rm, rv,
                                                            eps, sm, si),
                     CUDNN_STATUS_SUCCESS);
    float hy[BN_NX], orm[BN_C], orv[BN_C], osm[BN_C], osi[BN_C];
    down(hy, y, BN_NX), down(orm, rm, BN_C), down(orv, rv, BN_C), down(osm, sm, BN_C),
        down(osi, si, BN_C);
    double dx[BN_NX];
    for (int i = 0; i < BN_NX; i++) dx[i] = hx[i];
    double m = BN_N * BN_S;
    for (int c = 0; c < BN_C; c++) {
        double mean, var;
        direct_stats(dx, c, &mean, &var);
        near(osm[c], mean, 1e-6, "saved mean", c);
        near(osi[c], 1 / sqrt(var + eps), 1e-6, "saved inv std", c);
        near(orm[c], (1 - f) * hrm[c] + f * mean, 1e-6, "running mean", c);
        near(orv[c], (1 - f) * hrv[c] + f * var * m / (m - 1), 1e-6, "running var (unbiased)", c);
        for (int n = 0; n < BN_N; n++)
            for (int i = 0; i < BN_S; i++) {
                int k = (n * BN_C + c) * BN_S + i;
                near(hy[k], hs[c] * (dx[k] - mean) / sqrt(var + eps) + hb[c], 1e-5, "bn y", k);
            }
    }
    /* no running / saved outputs (all NULL) is fine; one of a pair NULL is not */
    assert_int_equal(cudnnBatchNormalizationForwardTraining(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                            b.x, x, b.x, y, b.p, sc, bi, f, NULL,
                                                            NULL, eps, NULL, NULL),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnBatchNormalizationForwardTraining(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                            b.x, x, b.x, y, b.p, sc, bi, f, rm,
                                                            NULL, eps, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    /* inference with the running statistics */
    fill(y, BN_NX, NAN);
    assert_int_equal(cudnnBatchNormalizationForwardInference(H, CUDNN_BATCHNORM_SPATIAL, &one,
                                                             &zero, b.x, x, b.x, y, b.p, sc, bi, rm,
                                                             rv, eps),
                     CUDNN_STATUS_SUCCESS);
    down(hy, y, BN_NX);
    for (int k = 0; k < BN_NX; k++) {
        int c = (k / BN_S) % BN_C;
        near(hy[k], hs[c] * (dx[k] - orm[c]) / sqrt((double)orv[c] + eps) + hb[c], 1e-5,
             "bn inference y", k);
    }
    free(hx);
    cudaFree(x), cudaFree(y), cudaFree(sc), cudaFree(bi), cudaFree(rm), cudaFree(rv), cudaFree(sm),
        cudaFree(si);
    bn_free(&b);
}

/* L = sum(r * BN(x)) in double, written from the definition. */
static double bn_loss(const double *x, const double *s, const double *bias, const double *r,
                      double eps) {
    double L = 0;
    for (int c = 0; c < BN_C; c++) {
        double mean, var;
        direct_stats(x, c, &mean, &var);
        for (int n = 0; n < BN_N; n++)
            for (int i = 0; i < BN_S; i++) {
                int k = (n * BN_C + c) * BN_S + i;
                L += r[k] * (s[c] * (x[k] - mean) / sqrt(var + eps) + bias[c]);
            }
    }
    return L;
}

static void test_bn_backward(void **state) {
    (void)state;
    bnset b = bn_descs();
    float *hx = host_rand(BN_NX), *hr = host_rand(BN_NX), hs[BN_C] = {1.5f, -0.5f},
          hb[BN_C] = {0.25f, 2};
    const double eps = 1e-3;
    double x[BN_NX], r[BN_NX], s[BN_C], bias[BN_C], h = 1e-4;
    for (int i = 0; i < BN_NX; i++) x[i] = hx[i], r[i] = hr[i];
    for (int c = 0; c < BN_C; c++) s[c] = hs[c], bias[c] = hb[c];
    float *dx = dev_new(BN_NX), *dxv = dev_new(BN_NX), *dy = dev_new(BN_NX), *xd = dev_new(BN_NX),
          *sc = dev_new(BN_C), *ds = dev_new(BN_C), *db = dev_new(BN_C), *y = dev_new(BN_NX),
          *sm = dev_new(BN_C), *si = dev_new(BN_C);
    up(xd, hx, BN_NX), up(dy, hr, BN_NX), up(sc, hs, BN_C);
    fill(dx, BN_NX, NAN), fill(ds, BN_C, NAN), fill(db, BN_C, NAN);
    const float one = 1, zero = 0;
    assert_int_equal(cudnnBatchNormalizationBackward(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                                     &zero, b.x, xd, b.x, dy, b.x, dx, b.p, sc, ds,
                                                     db, eps, NULL, NULL),
                     CUDNN_STATUS_SUCCESS);
    float gdx[BN_NX], gds[BN_C], gdb[BN_C];
    down(gdx, dx, BN_NX), down(gds, ds, BN_C), down(gdb, db, BN_C);
    for (int i = 0; i < BN_NX; i++) {
        double xp[BN_NX], xm[BN_NX];
        memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
        xp[i] += h, xm[i] -= h;
        double fd = (bn_loss(xp, s, bias, r, eps) - bn_loss(xm, s, bias, r, eps)) / (2 * h);
        near(gdx[i], fd, 1e-4, "dx vs finite difference", i);
    }
    for (int c = 0; c < BN_C; c++) {
        double sp[BN_C], sn[BN_C], bp[BN_C], bn[BN_C];
        memcpy(sp, s, sizeof s), memcpy(sn, s, sizeof s), memcpy(bp, bias, sizeof bias),
            memcpy(bn, bias, sizeof bias);
        sp[c] += h, sn[c] -= h, bp[c] += h, bn[c] -= h;
        near(gds[c], (bn_loss(x, sp, bias, r, eps) - bn_loss(x, sn, bias, r, eps)) / (2 * h), 1e-4,
             "dscale", c);
        near(gdb[c], (bn_loss(x, s, bp, r, eps) - bn_loss(x, s, bn, r, eps)) / (2 * h), 1e-4,
             "dbias", c);
    }
    /* with the forward's saved mean / inverse std: the same gradients */
    float hbias[BN_C] = {0.25f, 2};
    float *bi = dev_new(BN_C);
    up(bi, hbias, BN_C);
    assert_int_equal(cudnnBatchNormalizationForwardTraining(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                            b.x, xd, b.x, y, b.p, sc, bi, 1.0, NULL,
                                                            NULL, eps, sm, si),
                     CUDNN_STATUS_SUCCESS);
    fill(dxv, BN_NX, 1.0f), fill(ds, BN_C, 1.0f), fill(db, BN_C, 1.0f);
    const float two = 2; /* dx' = 2 * dx + 1; dscale' = 1 * g + 1 (param beta = 1) */
    assert_int_equal(cudnnBatchNormalizationBackward(H, CUDNN_BATCHNORM_SPATIAL, &two, &one, &one,
                                                     &one, b.x, xd, b.x, dy, b.x, dxv, b.p, sc, ds,
                                                     db, eps, sm, si),
                     CUDNN_STATUS_SUCCESS);
    float g2[BN_NX], s2[BN_C], b2[BN_C];
    down(g2, dxv, BN_NX), down(s2, ds, BN_C), down(b2, db, BN_C);
    for (int i = 0; i < BN_NX; i++)
        near(g2[i], 2.0 * gdx[i] + 1, 1e-5, "blended dx (saved stats)", i);
    for (int c = 0; c < BN_C; c++) {
        near(s2[c], gds[c] + 1.0, 1e-5, "accumulated dscale", c);
        near(b2[c], gdb[c] + 1.0, 1e-5, "accumulated dbias", c);
    }
    /* given saved statistics are used, not recomputed: dscale = sum dy * (x - m') * inv' */
    float hm[BN_C] = {0.5f, -0.25f}, hi[BN_C] = {2, 0.75f};
    up(sm, hm, BN_C), up(si, hi, BN_C);
    assert_int_equal(cudnnBatchNormalizationBackward(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                                     &zero, b.x, xd, b.x, dy, b.x, dxv, b.p, sc, ds,
                                                     db, eps, sm, si),
                     CUDNN_STATUS_SUCCESS);
    down(s2, ds, BN_C);
    for (int c = 0; c < BN_C; c++) {
        double want = 0;
        for (int n = 0; n < BN_N; n++)
            for (int i = 0; i < BN_S; i++) {
                int k = (n * BN_C + c) * BN_S + i;
                want += r[k] * (x[k] - hm[c]) * hi[c];
            }
        near(s2[c], want, 1e-5, "dscale from saved statistics", c);
    }
    free(hx), free(hr);
    cudaFree(dx), cudaFree(dxv), cudaFree(dy), cudaFree(xd), cudaFree(sc), cudaFree(ds),
        cudaFree(db), cudaFree(y), cudaFree(sm), cudaFree(si), cudaFree(bi);
    bn_free(&b);
}

/* ---- tests: heuristics and bad arguments ---- */

static void test_algo_lists(void **state) {
    (void)state;
    ccase c = {2, 2, 4, 8, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, CUDNN_CROSS_CORRELATION};
    cset s;
    cset_make(&c, &s);
    cudnnConvolutionFwdAlgoPerf_t f[16];
    cudnnConvolutionBwdDataAlgoPerf_t d[16];
    cudnnConvolutionBwdFilterAlgoPerf_t w[16];
    int nf = 0, nd = 0, nw = 0;
    assert_int_equal(cudnnGetConvolutionForwardAlgorithm_v7(H, s.x, s.w, s.conv, s.y, 16, &nf, f),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnGetConvolutionBackwardDataAlgorithm_v7(H, s.w, s.y, s.conv, s.x, 16, &nd, d),
        CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnGetConvolutionBackwardFilterAlgorithm_v7(H, s.x, s.y, s.conv, s.w, 16, &nw, w),
        CUDNN_STATUS_SUCCESS);
    /* what a selecting caller must see: a conversion entry, zero and nonzero
     * workspace, non-deterministic backward entries; sizes agree with
     * GetWorkspaceSize under the entry's math type */
#define LIST_PROPS(arr, n, getws, ...)                                                             \
    do {                                                                                           \
        bool conv_ = false, zero_ = false, big_ = false, nondet_ = false;                          \
        for (int i = 0; i < n; i++) {                                                              \
            if (arr[i].status != CUDNN_STATUS_SUCCESS) continue;                                   \
            conv_ |= arr[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;                     \
            zero_ |= arr[i].memory == 0 && arr[i].determinism == CUDNN_DETERMINISTIC;              \
            big_ |= arr[i].memory > 0 && arr[i].determinism == CUDNN_DETERMINISTIC;                \
            nondet_ |= arr[i].determinism == CUDNN_NON_DETERMINISTIC;                              \
            size_t ws_ = 0;                                                                        \
            assert_int_equal(cudnnSetConvolutionMathType(s.conv, arr[i].mathType),                 \
                             CUDNN_STATUS_SUCCESS);                                                \
            assert_int_equal(getws(H, __VA_ARGS__, arr[i].algo, &ws_), CUDNN_STATUS_SUCCESS);      \
            assert_int_equal(ws_, arr[i].memory);                                                  \
        }                                                                                          \
        assert_true(conv_ &&zero_ &&big_);                                                         \
        nondet_all |= nondet_;                                                                     \
    } while (0)
    bool nondet_all = false;
    LIST_PROPS(f, nf, cudnnGetConvolutionForwardWorkspaceSize, s.x, s.w, s.conv, s.y);
    LIST_PROPS(d, nd, cudnnGetConvolutionBackwardDataWorkspaceSize, s.w, s.y, s.conv, s.x);
    LIST_PROPS(w, nw, cudnnGetConvolutionBackwardFilterWorkspaceSize, s.x, s.y, s.conv, s.w);
    assert_true(nondet_all);
    int one_n = 0;
    assert_int_equal(cudnnGetConvolutionForwardAlgorithm_v7(H, s.x, s.w, s.conv, s.y, 1, &one_n, f),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(one_n, 1);
    cset_free(&s);
}

/* Max pooling, window 3, stride 2, padding 1 on a 4x4 plane -> 2x2 (hand
 * computed): forward maxima, backward routes each window's dY to its argmax
 * (two windows share one), NaN propagated, a y of the wrong size rejected. */
static void test_pooling_hand(void **state) {
    (void)state;
    const float xh[16] = {1, 9, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3, 4, 5, 6};
    /* windows (rows/cols -1..1 and 1..3): {1,9,4,5} {9,2,3,5,6,7} {4,5,8,0,3,4} {5,6,7,0,1,2,4,5,6} */
    const float want_y[4] = {9, 9, 8, 7};
    const float dyh[4] = {1, 10, 100, 1000};
    float want_dx[16] = {0};
    want_dx[1] = 11, want_dx[8] = 100, want_dx[7] = 1000;
    int xd[4] = {1, 1, 4, 4}, yd[4] = {1, 1, 2, 2}, bad[4] = {1, 1, 3, 3};
    int win[2] = {3, 3}, pad[2] = {1, 1}, str[2] = {2, 2};
    cudnnTensorDescriptor_t tx = tdesc(4, xd), ty = tdesc(4, yd), tbad = tdesc(4, bad);
    cudnnPoolingDescriptor_t pd;
    assert_int_equal(cudnnCreatePoolingDescriptor(&pd), CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnSetPoolingNdDescriptor(pd, CUDNN_POOLING_MAX_DETERMINISTIC,
                                                 CUDNN_PROPAGATE_NAN, 2, win, pad, str),
                     CUDNN_STATUS_SUCCESS);
    float *x = dev_new(16), *y = dev_new(4), *dy = dev_new(4), *dx = dev_new(16), h[16];
    const float one = 1.0f, zero = 0.0f;
    up(x, xh, 16), up(dy, dyh, 4);
    fill(dx, 16, NAN); /* beta = 0: never read */
    assert_int_equal(cudnnPoolingForward(H, pd, &one, tx, x, &zero, ty, y), CUDNN_STATUS_SUCCESS);
    down(h, y, 4);
    for (int i = 0; i < 4; i++) near(h[i], want_y[i], 0, "y", i);
    assert_int_equal(cudnnPoolingBackward(H, pd, &one, ty, y, ty, dy, tx, x, &zero, tx, dx),
                     CUDNN_STATUS_SUCCESS);
    down(h, dx, 16);
    for (int i = 0; i < 16; i++) near(h[i], want_dx[i], 0, "dx", i);
    float xn[16];
    memcpy(xn, xh, sizeof xn);
    xn[15] = NAN; /* only the last window sees it */
    up(x, xn, 16);
    assert_int_equal(cudnnPoolingForward(H, pd, &one, tx, x, &zero, ty, y), CUDNN_STATUS_SUCCESS);
    down(h, y, 4);
    assert_true(!isnan(h[0]) && !isnan(h[1]) && !isnan(h[2]) && isnan(h[3]));
    assert_int_equal(cudnnPoolingForward(H, pd, &one, tx, x, &zero, tbad, y),
                     CUDNN_STATUS_BAD_PARAM);
    cudaFree(x), cudaFree(y), cudaFree(dy), cudaFree(dx);
    cudnnDestroyPoolingDescriptor(pd);
    cudnnDestroyTensorDescriptor(tx), cudnnDestroyTensorDescriptor(ty),
        cudnnDestroyTensorDescriptor(tbad);
}

static void test_bad_params(void **state) {
    (void)state;
    ccase c = {2, 1, 2, 2, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, CUDNN_CROSS_CORRELATION};
    cset s;
    cset_make(&c, &s);
    float *x = dev_new(s.nx), *w = dev_new(s.nw), *y = dev_new(s.ny), *small = dev_new(s.ny - 1);
    float *host = calloc(s.ny, sizeof *host);
    const float one = 1, zero = 0;
    const cudnnConvolutionFwdAlgo_t A = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
    size_t need;
    assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(H, s.x, s.w, s.conv, s.y, A, &need),
                     CUDNN_STATUS_SUCCESS);
    void *ws;
    assert_int_equal(cudaMalloc(&ws, need), cudaSuccess);
    /* control: the call is accepted */
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, ws, need, &zero, s.y, y),
        CUDNN_STATUS_SUCCESS);
    /* host pointer; device block shorter than the tensor; offset past the block */
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, ws, need, &zero, s.y, host),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, ws, need, &zero, s.y, small),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x + 1, s.w, w, s.conv, A, ws, need, &zero, s.y, y),
        CUDNN_STATUS_BAD_PARAM);
    /* workspace: too small, NULL */
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, ws, need - 1, &zero, s.y, y),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, NULL, 0, &zero, s.y, y),
        CUDNN_STATUS_BAD_PARAM);
    /* tensor-op math needs more workspace than the default-math query said */
    assert_int_equal(cudnnSetConvolutionMathType(s.conv, CUDNN_TENSOR_OP_MATH),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, ws, need, &zero, s.y, y),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolutionMathType(s.conv, CUDNN_DEFAULT_MATH), CUDNN_STATUS_SUCCESS);
    /* y dims not what GetConvolutionNdForwardOutputDim gives */
    int bad_y[4] = {1, 2, 4, 5};
    cudnnTensorDescriptor_t by = tdesc(4, bad_y);
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, ws, need, &zero, by, y),
        CUDNN_STATUS_BAD_PARAM);
    /* group count that does not divide the channels / does not match the filter */
    assert_int_equal(cudnnSetConvolutionGroupCount(s.conv, 2), CUDNN_STATUS_SUCCESS);
    assert_int_equal(
        cudnnConvolutionForward(H, &one, s.x, x, s.w, w, s.conv, A, ws, need, &zero, s.y, y),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolutionGroupCount(s.conv, 0), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetConvolutionGroupCount(s.conv, 1), CUDNN_STATUS_SUCCESS);
    /* descriptor setters */
    int neg[4] = {1, -2, 3, 3}, st4[4] = {18, 9, 3, 1};
    assert_int_equal(cudnnSetTensorNdDescriptor(by, CUDNN_DATA_FLOAT, 4, neg, st4),
                     CUDNN_STATUS_BAD_PARAM);
    int pad[2] = {-1, 0}, str[2] = {1, 1}, dil[2] = {1, 1};
    assert_int_equal(cudnnSetConvolutionNdDescriptor(s.conv, 2, pad, str, dil,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     CUDNN_STATUS_BAD_PARAM);
    /* BN: epsilon below CUDNN_BN_MIN_EPSILON; host parameter pointer */
    bnset b = bn_descs();
    float *bx = dev_new(BN_NX), *by2 = dev_new(BN_NX), *p1 = dev_new(BN_C), *p2 = dev_new(BN_C);
    float hostp[BN_C] = {0, 0};
    assert_int_equal(cudnnBatchNormalizationForwardTraining(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                            b.x, bx, b.x, by2, b.p, p1, p2, 1.0,
                                                            NULL, NULL, 1e-5, NULL, NULL),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnBatchNormalizationForwardTraining(
                         H, CUDNN_BATCHNORM_SPATIAL, &one, &zero, b.x, bx, b.x, by2, b.p, p1, p2,
                         1.0, NULL, NULL, CUDNN_BN_MIN_EPSILON - 1e-6, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnBatchNormalizationForwardTraining(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                            b.x, bx, b.x, by2, b.p, hostp, p2, 1.0,
                                                            NULL, NULL, 1e-5, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnBatchNormalizationBackward(H, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one,
                                                     &zero, b.x, bx, b.x, by2, b.x, by2, b.p, p1,
                                                     p1, p2, -1.0, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    bn_free(&b);
    cudnnDestroyTensorDescriptor(by);
    cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(small), cudaFree(ws), cudaFree(bx),
        cudaFree(by2), cudaFree(p1), cudaFree(p2);
    free(host);
    cset_free(&s);
}

static int setup(void **state) {
    (void)state;
    if (cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking) != cudaSuccess) return -1;
    if (cudnnCreate(&H) != CUDNN_STATUS_SUCCESS) return -1;
    return cudnnSetStream(H, S) == CUDNN_STATUS_SUCCESS ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    cudnnDestroy(H);
    return cudaStreamDestroy(S) == cudaSuccess ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_forward_hand), cmocka_unit_test(test_conv_geometries),
        cmocka_unit_test(test_conv_bias),         cmocka_unit_test(test_relu),
        cmocka_unit_test(test_bn_forward),        cmocka_unit_test(test_bn_backward),
        cmocka_unit_test(test_algo_lists),        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_pooling_hand),      cmocka_unit_test(test_conv_half_hand),
        cmocka_unit_test(test_gemm_ex_hand),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
