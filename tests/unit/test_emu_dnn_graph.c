/* test_emu_dnn_graph.c — convolutions through cuDNN's graph API
 * (runtime/cuda/cuda_dnn_graph.c) on the emulator's backend API
 * (tests/emu/emu_cudnn_graph.c: fake engines 0 refused, 1 down-converting, 2
 * tensor cores and nondeterministic for backward kinds, 3 tensor cores, 4 no
 * notes):
 *   - a forward, a backward-data and a backward-filter plan give the legacy
 *     call's bits (the emulator's engines run its legacy algorithms);
 *   - the filters: the heuristics' order with the refused and converting
 *     engines passed over; TF32 off (float data) leaves engine 4;
 *     deterministic leaves 3 for the backward kinds; a workspace limit passes
 *     over the plans that need more;
 *   - a convolution + bias + relu graph gives the legacy fused call's bits; on
 *     bfloat16 data the emulator refuses it and the convolution alone builds;
 *   - a refused graph (y of the wrong size) builds nothing and says why;
 *   - the emulator refuses what cuDNN refuses: a tensor without its unique id,
 *     an attribute of the wrong type, a second finalize, a run without one of
 *     the graph's tensors.
 * Built only with CUDA=emu; other builds compile a main that skips. */
#ifndef OC_CUDA_EMU
#include <stdio.h>
int main(void) {
    puts("SKIP test_emu_dnn_graph: needs CUDA=emu");
    return 0;
}
#else
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "cuda/cuda_dnn_graph.h"

static cudnnHandle_t H;
static cudaStream_t S;

/* x (2, 4, 6, 6), w (3, 4, 3, 3), pad 1, stride 1 -> y (2, 3, 6, 6); packed NCHW. */
static dnn_conv_spec spec_of(int kind) {
    dnn_conv_spec s = {.kind = kind,
                       .dt = CUDNN_DATA_FLOAT,
                       .rank = 4,
                       .x_dim = {2, 4, 6, 6},
                       .w_dim = {3, 4, 3, 3},
                       .y_dim = {2, 3, 6, 6},
                       .pad = {1, 1},
                       .stride = {1, 1},
                       .dilation = {1, 1},
                       .tensor_ok = true,
                       .limit = SIZE_MAX};
    int64_t *d[3] = {s.x_dim, s.w_dim, s.y_dim}, *st[3] = {s.x_str, s.w_str, s.y_str};
    for (int k = 0; k < 3; k++) {
        int64_t acc = 1;
        for (int i = 3; i >= 0; i--) st[k][i] = acc, acc *= d[k][i];
    }
    return s;
}

static void *dev_fill(size_t n, unsigned seed) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        h[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
    }
    void *p = NULL;
    assert_int_equal(cudaMalloc(&p, n * sizeof *h), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(p, h, n * sizeof *h, cudaMemcpyHostToDevice, S), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
    free(h);
    return p;
}

static float *host_of(const void *p, size_t n) {
    float *h = malloc(n * sizeof *h);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(h, p, n * sizeof *h, cudaMemcpyDeviceToHost, S), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(S), cudaSuccess);
    return h;
}

static dnn_graph_conv *build(const dnn_conv_spec *s, int max_plans) {
    dnn_graph_conv *g = NULL;
    char why[512];
    if (dnn_graph_conv_build(H, s, max_plans, &g, why, sizeof why)) fail_msg("build: %s", why);
    return g;
}

/* Each kind's plan 0 against the legacy call (IMPLICIT_GEMM / ALGO_1, no workspace). */
static void test_bits_equal_legacy(void **state) {
    (void)state;
    const size_t nx = 2 * 4 * 36, nw = 3 * 4 * 9, ny = 2 * 3 * 36;
    void *x = dev_fill(nx, 1), *w = dev_fill(nw, 2), *y = dev_fill(ny, 3);
    void *out = NULL, *ws = NULL;
    assert_int_equal(cudaMalloc(&out, nx * sizeof(float)), cudaSuccess);
    assert_int_equal(cudaMalloc(&ws, 1 << 20), cudaSuccess);
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateTensorDescriptor(&xd), cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd), cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 6, 6);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 6, 6);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 4, 3, 3);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    const float one = 1.0f, zero = 0.0f;
    for (int kind = DNN_CONV_FWD; kind <= DNN_CONV_BWD_FILTER; kind++) {
        dnn_conv_spec s = spec_of(kind);
        dnn_graph_conv *g = build(&s, 1);
        size_t n = kind == DNN_CONV_FWD ? ny : kind == DNN_CONV_BWD_DATA ? nx : nw;
        /* the graph's output into out, the legacy call's into its own tensor */
        cudnnStatus_t st = kind == DNN_CONV_FWD ? dnn_graph_conv_run(H, g, 0, x, w, out, NULL, ws)
                           : kind == DNN_CONV_BWD_DATA
                               ? dnn_graph_conv_run(H, g, 0, out, w, y, NULL, ws)
                               : dnn_graph_conv_run(H, g, 0, x, out, y, NULL, ws);
        assert_int_equal(st, CUDNN_STATUS_SUCCESS);
        void *keep = NULL; /* the legacy call's output */
        assert_int_equal(cudaMalloc(&keep, n * sizeof(float)), cudaSuccess);
        if (kind == DNN_CONV_FWD)
            st = cudnnConvolutionForward(H, &one, xd, x, wd, w, cd,
                                         CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero,
                                         yd, keep);
        else if (kind == DNN_CONV_BWD_DATA)
            st = cudnnConvolutionBackwardData(H, &one, wd, w, yd, y, cd,
                                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, NULL, 0, &zero, xd,
                                              keep);
        else
            st = cudnnConvolutionBackwardFilter(H, &one, xd, x, yd, y, cd,
                                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, NULL, 0, &zero,
                                                wd, keep);
        assert_int_equal(st, CUDNN_STATUS_SUCCESS);
        float *a = host_of(out, n), *b = host_of(keep, n);
        assert_memory_equal(a, b, n * sizeof(float));
        bool nonzero = false;
        for (size_t i = 0; i < n; i++) nonzero = nonzero || a[i] != 0.0f;
        assert_true(nonzero);
        free(a), free(b);
        cudaFree(keep);
        dnn_graph_conv_free(g);
    }
    cudnnDestroyTensorDescriptor(xd), cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd), cudnnDestroyConvolutionDescriptor(cd);
    cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(out), cudaFree(ws);
}

static void test_filters(void **state) {
    (void)state;
    dnn_conv_spec s = spec_of(DNN_CONV_BWD_FILTER);
    dnn_graph_conv *g = build(&s, 4); /* 0 refused, 1 converts: 2, 3, 4 */
    assert_int_equal(dnn_graph_conv_plans(g), 3);
    for (int i = 0; i < 3; i++) assert_int_equal(dnn_graph_conv_engine(g, i), 2 + i);
    dnn_graph_conv_free(g);
    s.det_only = true; /* 2 is nondeterministic for the backward kinds */
    g = build(&s, 1);
    assert_int_equal(dnn_graph_conv_engine(g, 0), 3);
    size_t ws3 = dnn_graph_conv_workspace(g, 0);
    assert_true(ws3 > 0); /* tensor-op math: 256 bytes */
    dnn_graph_conv_free(g);
    s.limit = ws3 - 1; /* 3 no longer fits */
    g = build(&s, 1);
    assert_int_equal(dnn_graph_conv_engine(g, 0), 4);
    assert_true(dnn_graph_conv_workspace(g, 0) <= s.limit);
    dnn_graph_conv_free(g);
    s = spec_of(DNN_CONV_FWD); /* forward: 2 is deterministic */
    s.det_only = true;
    g = build(&s, 1);
    assert_int_equal(dnn_graph_conv_engine(g, 0), 2);
    dnn_graph_conv_free(g);
    s.tensor_ok = false; /* TF32 off on float data: no tensor-core engine */
    g = build(&s, 4);
    assert_int_equal(dnn_graph_conv_plans(g), 1);
    assert_int_equal(dnn_graph_conv_engine(g, 0), 4);
    dnn_graph_conv_free(g);
}

/* conv + bias + relu in one graph == the legacy fused call; on bfloat16 data the emulator
 * refuses the epilogue (NOT_SUPPORTED: the caller's fallback), the convolution alone builds. */
static void test_epilogue(void **state) {
    (void)state;
    const size_t nx = 2 * 4 * 36, nw = 3 * 4 * 9, ny = 2 * 3 * 36;
    void *x = dev_fill(nx, 1), *w = dev_fill(nw, 2), *b = dev_fill(3, 4), *y = dev_fill(ny, 5);
    void *ref = dev_fill(ny, 6), *ws = NULL;
    assert_int_equal(cudaMalloc(&ws, 1 << 20), cudaSuccess);
    dnn_conv_spec s = spec_of(DNN_CONV_FWD);
    s.bias = s.relu = true;
    s.b_dt = CUDNN_DATA_FLOAT;
    dnn_graph_conv *g = build(&s, 1);
    assert_int_equal(dnn_graph_conv_run(H, g, 0, x, w, y, b, ws), CUDNN_STATUS_SUCCESS);
    assert_int_equal(dnn_graph_conv_run(H, g, 0, x, w, y, NULL, ws), CUDNN_STATUS_BAD_PARAM);
    dnn_graph_conv_free(g);
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnActivationDescriptor_t ad;
    cudnnCreateTensorDescriptor(&xd), cudnnCreateTensorDescriptor(&yd);
    cudnnCreateTensorDescriptor(&bd), cudnnCreateActivationDescriptor(&ad);
    cudnnCreateFilterDescriptor(&wd), cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 6, 6);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 6, 6);
    cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 1, 1);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 4, 3, 3);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0);
    const float one = 1.0f, zero = 0.0f;
    assert_int_equal(cudnnConvolutionBiasActivationForward(
                         H, &one, xd, x, wd, w, cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL,
                         0, &zero, yd, ref, bd, b, ad, yd, ref),
                     CUDNN_STATUS_SUCCESS);
    float *a = host_of(y, ny), *r = host_of(ref, ny);
    assert_memory_equal(a, r, ny * sizeof(float));
    int zeros = 0, pos = 0;
    for (size_t i = 0; i < ny; i++) zeros += a[i] == 0.0f, pos += a[i] > 0.0f;
    assert_true(zeros > 0 && pos > 0); /* the Relu cut some, kept others */
    free(a), free(r);
    s.dt = CUDNN_DATA_BFLOAT16;
    char why[512];
    assert_int_not_equal(dnn_graph_conv_build(H, &s, 1, &g, why, sizeof why), 0);
    s.bias = s.relu = false;
    g = build(&s, 1);
    dnn_graph_conv_free(g);
    cudnnDestroyTensorDescriptor(xd), cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyTensorDescriptor(bd), cudnnDestroyActivationDescriptor(ad);
    cudnnDestroyFilterDescriptor(wd), cudnnDestroyConvolutionDescriptor(cd);
    cudaFree(x), cudaFree(w), cudaFree(b), cudaFree(y), cudaFree(ref), cudaFree(ws);
}

static void test_refused_graph_says_why(void **state) {
    (void)state;
    dnn_conv_spec s = spec_of(DNN_CONV_FWD);
    s.y_dim[2] = 5; /* the convolution gives 6 */
    dnn_graph_conv *g = (dnn_graph_conv *)&s;
    char why[512];
    assert_int_not_equal(dnn_graph_conv_build(H, &s, 1, &g, why, sizeof why), 0);
    assert_null(g);
    assert_non_null(strstr(why, "convolution operation"));
    assert_non_null(strstr(why, "BAD_PARAM"));
}

static void test_emulator_refusals(void **state) {
    (void)state;
    cudnnBackendDescriptor_t t;
    int64_t dim[4] = {1, 2, 3, 3}, str[4] = {18, 9, 3, 1}, al = 16, uid = 7;
    cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    assert_int_equal(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t), 0);
    assert_int_equal(
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt), 0);
    assert_int_equal(
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim), 0);
    assert_int_equal(
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str), 0);
    assert_int_equal(
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al), 0);
    /* no unique id yet */
    assert_int_equal(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM);
    /* the id as the wrong type */
    assert_int_equal(
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_FLOAT, 1, &uid),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(
        cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid), 0);
    assert_int_equal(cudnnBackendFinalize(t), 0);
    assert_int_equal(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnBackendDestroyDescriptor(t), 0);

    /* a variant pack without y's pointer */
    dnn_conv_spec s = spec_of(DNN_CONV_FWD);
    dnn_graph_conv *g = build(&s, 1);
    void *x = dev_fill(2 * 4 * 36, 1), *w = dev_fill(3 * 4 * 9, 2);
    assert_int_equal(dnn_graph_conv_run(H, g, 0, x, w, NULL, NULL, NULL), CUDNN_STATUS_BAD_PARAM);
    dnn_graph_conv_free(g);
    cudaFree(x), cudaFree(w);
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
        cmocka_unit_test(test_bits_equal_legacy), cmocka_unit_test(test_filters),
        cmocka_unit_test(test_epilogue),          cmocka_unit_test(test_refused_graph_says_why),
        cmocka_unit_test(test_emulator_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
