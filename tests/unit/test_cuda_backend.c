/* test_cuda_backend.c — the cuda backend without a GPU (CI has the toolkit,
 * no GPU; the GPU checks are tools/gpu-check):
 *   - rt_backend_new("cuda") either works (a GPU is present) or fails with one
 *     clear line ("no CUDA GPU" / "not built"): skip message, not a failure;
 *   - the cuda op table matches the cpu backend's: every cuda op has a cpu
 *     kernel, every default-domain op the importer supports that the cpu runs
 *     has a cuda kernel, and every node of the training graphs of the bundled
 *     models (what the planner emits) is supported by both;
 *   - the device Dropout RNG (cu_device.h, compiled for host and device) is
 *     bit for bit runtime/cpu/cpu_rng.c's, in CUDA builds;
 *   - under --precision bf16 / fp16, every convolution, GEMM, BatchNorm[Relu],
 *     Relu, pooling, Add / Sum / Sub / Mul / Div, Where, Dropout and ReduceSumTo node of
 *     ResNet-50's, the U-Net's, GPT-2's and ViT-B/16's training graphs that
 *     computes in half runs on its half tensors natively (cuda_native_half);
 *   - on the emulator: the fused BatchNorm + Relu gradient's float16 mask is
 *     Y > 0 as Y was stored (test_kernels.c's case, both layouts); the BN
 *     kernels moving 4 elements a thread agree with their one-element form
 *     (channels-last bit for bit; float32, float16, bfloat16; forward,
 *     gradient, with the forward's statistics and without); ReluGrad with a second
 *     partial of dY is bit for bit the Sum then ReluGrad. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef OC_CUDA_EMU
#include <cuda_runtime.h>
#endif

#include "backend.h"
#include "cpu/cpu_rng.h"
#include "cuda/backend_cuda.h"
#include "cuda/cuda_launch.h"
#include "ir/half.h"
#include "ir/ops/op_table.h"
#include "ir/shape_infer.h"
#include "kernels.h"
#include "train/train_graph.h"

static void test_backend_new_or_skip(void **state) {
    (void)state;
    rt_backend *b = NULL;
    oc_err err;
    if (rt_backend_new("cuda", NULL, &b, &err) == OC_OK) {
        assert_non_null(b);
        assert_string_equal(b->name, "cuda");
        assert_true(b->supported(b, OP_CONV));
        rt_backend_free(b);
        printf("# cuda GPU present: backend created\n");
        return;
    }
    assert_null(b);
    assert_null(strchr(err.msg, '\n'));
    if (rt_backend_cuda_built()) assert_non_null(strstr(err.msg, "no CUDA GPU"));
    else assert_non_null(strstr(err.msg, "not built"));
    printf("# SKIP GPU checks: %s\n", err.msg);
}

static void test_cuda_ops_have_cpu_kernels(void **state) {
    (void)state;
    int n = 0;
    for (int k = 0; k < OP__COUNT; k++)
        if (cuda_kernel_supported(k)) {
            if (!cpu_kernel_supported(k))
                fail_msg("cuda op %s has no cpu kernel", op_name((op_kind)k));
            n++;
        }
    assert_true(n >= 30);
    assert_false(cuda_kernel_supported(OP_UNKNOWN));
    assert_false(cuda_kernel_supported(OP_SWAP_OUT));
}

static void test_default_domain_ops_complete(void **state) {
    (void)state;
    int checked = 0;
    for (int k = 0; k < OP__COUNT; k++) {
        if (!cpu_kernel_supported(k)) continue;
        if (!cuda_kernel_supported(k))
            fail_msg("op %s has a cpu kernel but no cuda kernel", op_name((op_kind)k));
        checked++;
    }
    assert_true(checked >= 35);
}

static void test_training_graphs_supported(void **state) {
    (void)state;
    const char *models[] = {"resnet18", "resnet50",    "googlenet",    "alexnet",
                            "vgg16",    "densenet121", "mobilenet_v2", "unet"};
    const char *opsets[] = {"13", "15"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        for (int o = 0; o < 2; o++) {
            char path[256];
            snprintf(path, sizeof path, "graphs/%s_op%s.onnx", models[m], opsets[o]);
            ir_graph *g = NULL;
            train_graph *tg = NULL;
            oc_err err;
            ir_bind_opts bo = {.batch = 2};
            if (ir_load_model(path, &bo, &g, &err)) fail_msg("%s", err.msg);
            train_opts to = train_opts_default();
            if (train_build(g, &to, &tg, &err)) fail_msg("%s: %s", path, err.msg);
            for (int i = 0; i < tg->g->n_nodes; i++) {
                const ir_node *n = &tg->g->nodes[i];
                if (!cuda_kernel_supported(n->op))
                    fail_msg("%s: node '%s' op %s.%s has no cuda kernel", path, n->name, n->domain,
                             n->op_type);
                assert_true(cpu_kernel_supported(n->op));
            }
            train_graph_free(tg);
        }
}

/* Ops whose half nodes must run natively on cuda. */
static bool native_expected(int op) {
    switch (op) {
    case OP_CONV:
    case OP_CONV_TRANSPOSE:
    case OP_CONV_BACKWARD_DATA:
    case OP_CONV_BACKWARD_FILTER:
    case OP_CONV_TRANSPOSE_BACKWARD_DATA:
    case OP_CONV_TRANSPOSE_BACKWARD_FILTER:
    case OP_GEMM:
    case OP_MATMUL:
    case OP_MATMUL_GRAD_A:
    case OP_MATMUL_GRAD_B:
    case OP_RELU:
    case OP_RELU_GRAD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_DROPOUT:
    case OP_DROPOUT_GRAD:
    case OP_REDUCE_SUM_TO:
    case OP_WHERE:
    case OP_WHERE_GRAD:
    case OP_SUM:
    case OP_MAX_POOL:
    case OP_MAX_POOL_GRAD:
    case OP_AVERAGE_POOL:
    case OP_AVERAGE_POOL_GRAD:
    case OP_GLOBAL_AVERAGE_POOL:
    case OP_GLOBAL_AVERAGE_POOL_GRAD:
    case OP_BATCH_NORM:
    case OP_BATCH_NORM_GRAD:
    case OP_BATCH_NORM_RELU:
    case OP_BATCH_NORM_RELU_GRAD: return true;
    default: return false;
    }
}

static void test_half_nodes_native(void **state) {
    (void)state;
    const char *models[] = {"graphs/resnet50_op13.onnx", "graphs/unet_op15.onnx",
                            "graphs/gpt2_small.onnx", "graphs/vit_b16.onnx"};
    const train_precision precs[] = {TRAIN_PRECISION_BF16, TRAIN_PRECISION_FP16};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        for (int p = 0; p < 2; p++) {
            ir_graph *g = NULL;
            train_graph *tg = NULL;
            oc_err err;
            ir_bind_opts bo = {.batch = 2};
            if (ir_load_model(models[m], &bo, &g, &err)) fail_msg("%s", err.msg);
            train_opts to = train_opts_default();
            to.precision = precs[p];
            if (train_build(g, &to, &tg, &err)) fail_msg("%s: %s", models[m], err.msg);
            int native = 0, widened = 0, bnr = 0, by_op[OP__COUNT] = {0};
            for (int i = 0; i < tg->g->n_nodes; i++) {
                const ir_node *n = &tg->g->nodes[i];
                if (!kernel_touches_half(tg->g, n)) continue;
                if (cuda_native_half(tg->g, n)) {
                    native++;
                    bnr += n->op == OP_BATCH_NORM_RELU || n->op == OP_BATCH_NORM_RELU_GRAD ||
                           n->op == OP_BATCH_NORM || n->op == OP_BATCH_NORM_GRAD;
                } else if (native_expected(n->op)) {
                    fail_msg("%s (%s): node '%s' (%s) runs widened", models[m],
                             train_precision_name(precs[p]), n->name, n->op_type);
                } else {
                    widened++;
                    by_op[n->op]++;
                }
            }
            char list[512] = "";
            for (int o = 0, at = 0; o < OP__COUNT; o++)
                if (by_op[o] && at < (int)sizeof list)
                    at += snprintf(list + at, sizeof list - (size_t)at, " %s %d",
                                   op_name((op_kind)o), by_op[o]);
            printf("ok - %s %s: %d half nodes native (%d BatchNorm[Relu][Grad]), %d widened:%s\n",
                   models[m], train_precision_name(precs[p]), native, bnr, widened, list);
            assert_true(native > 0 && (bnr > 0 || strstr(models[m], "resnet") == NULL));
            train_graph_free(tg);
        }
}

static void test_rng_matches_cpu(void **state) {
    (void)state;
    if (!rt_backend_cuda_built()) {
        printf("# SKIP rng check: built without CUDA\n");
        return;
    }
#ifdef OC_HAVE_CUDA
    uint64_t key = cpu_rng_key(42, 3, op_name_hash("dropout/node"));
    for (uint64_t i = 0; i < 100000; i += 7)
        assert_true(cu_rng_u64_host(key, i) == cpu_rng_u64(key, i));
    assert_true(cu_rng_u64_host(key, 1) != cpu_rng_u64(key, 2));
#endif
}

/* cu_bn_relu_grad on float16 data, X = (1, 3, 5, 3), bias 1e-8: BN(3) = 1e-8
 * is a 0 in a float16 Y, so only x = 5 passes the mask (dBias 1, not 3). */
static void test_bn_relu_grad_half_mask(void **state) {
    (void)state;
#ifdef OC_CUDA_EMU
    const float xs[] = {1, 3, 5, 3};
    cudaStream_t st;
    assert_int_equal(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    /* host (pinned) and device: x, dy (float16), then scale, bias, dScale, dBias */
    uint8_t *h, *d;
    double *ws;
    const size_t bytes = 2 * 8 + 4 * sizeof(float);
    assert_int_equal(cudaHostAlloc((void **)&h, bytes, 0), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&d, bytes), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&ws, 6 * sizeof(double)), cudaSuccess);
    uint16_t *hx = (uint16_t *)h, *hdy = hx + 4;
    float *hp = (float *)(h + 16), *dp = (float *)(d + 16);
    for (int i = 0; i < 4; i++)
        hx[i] = half_from_f32(IR_DTYPE_FLOAT16, xs[i]), hdy[i] = half_from_f32(IR_DTYPE_FLOAT16, 1);
    hp[0] = 1.0f, hp[1] = 1e-8f; /* scale, bias */
    for (int nhwc = 0; nhwc < 2; nhwc++) {
        void *dx;
        assert_int_equal(cudaMalloc(&dx, 8), cudaSuccess);
        assert_int_equal(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, st), cudaSuccess);
        /* nchw: N 2, C 1, S 2; channels-last: the same 4 rows of one channel */
        assert_int_equal(cu_bn_relu_grad(st, 1, 1, d + 8, d, dp, dp + 1, NULL, NULL, 1e-5f, 1, dx,
                                         dp + 2, dp + 3, 2, 1, 2, nhwc, 1, ws, NULL),
                         0);
        assert_int_equal(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, st), cudaSuccess);
        assert_int_equal(cudaStreamSynchronize(st), cudaSuccess);
        if (hp[3] != 1.0f) fail_msg("nhwc %d: dBias %g, want 1 (the float16 mask)", nhwc, hp[3]);
        assert_true(fabs(hp[2] - 2.0 / sqrt(2.0 + 1e-5)) < 1e-6);
        cudaFree(dx);
    }
    cudaFree(ws), cudaFree(d), cudaFreeHost(h);
    cudaStreamDestroy(st);
    printf("ok - emulated cuda: BatchNormReluGrad's float16 mask is Y > 0 as stored\n");
#else
    printf("# SKIP half-mask check: not the emulator\n");
#endif
}

#ifdef OC_CUDA_EMU
/* One channels-last BN forward + gradient on rows x C (C 8) of kind (0 float32,
 * 1 float16, 2 bfloat16) placed off elements past 256-byte alignment (off 1:
 * the kernels' one-channel form; 0: 4-channel vectors); every output's bytes
 * into out (pinned), laid out as the device block. */
enum { BNV_N = 3, BNV_S = 8, BNV_ROWS = BNV_N * BNV_S, BNV_C = 8, BNV_P = 3 };
/* A data tensor's bytes with room for the offset, whole 16-byte units (so every tensor of a
 * half kind is aligned for OC_BN_V8's 8-element vectors at off 0) */
static size_t bnv_bytes(size_t es) { return ((BNV_ROWS * BNV_C + 4) * es + 15) / 16 * 16; }
static size_t bnv_run(int kind, int nhwc, int off, int relu, int residual, int saved,
                      uint8_t *out) {
    const size_t es = kind ? 2 : 4, n = BNV_ROWS * BNV_C, tb = bnv_bytes(es), cb = BNV_C * 4;
    const size_t ws_b = (4 * BNV_C + 2 * BNV_C * BNV_P) * 8,
                 bytes = 5 * tb + 8 * cb + ws_b + 3 * cb * 2;
    uint8_t *d, *h;
    cudaStream_t st;
    assert_int_equal(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&d, bytes), cudaSuccess);
    assert_int_equal(cudaHostAlloc((void **)&h, bytes, 0), cudaSuccess);
    memset(h, 0, bytes);
    uint64_t rng = 99;
    for (int t = 0; t < 5; t++) /* x, r, y, dy, dx: data at element off */
        for (size_t i = 0; i < n; i++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            float v = (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
            uint8_t *e = h + t * tb + (off + i) * es;
            if (kind == 0) memcpy(e, &v, 4);
            else {
                uint16_t b = half_from_f32(kind == 1 ? IR_DTYPE_FLOAT16 : IR_DTYPE_BFLOAT16, v);
                memcpy(e, &b, 2);
            }
        }
    float *hc = (float *)(h + 5 * tb); /* scale, bias, rm, rv, om, ov, ds, db */
    for (int c = 0; c < BNV_C; c++)
        hc[c] = 0.5f + 0.1f * (float)c, hc[BNV_C + c] = 0.2f - 0.05f * (float)c,
        hc[2 * BNV_C + c] = 0.1f, hc[3 * BNV_C + c] = 1.0f;
    assert_int_equal(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, st), cudaSuccess);
    uint8_t *x = d + off * es, *r = x + tb, *y = r + tb, *dy = y + tb, *dx = dy + tb;
    float *c = (float *)(d + 5 * tb);
    double *ws = (double *)(d + 5 * tb + 8 * cb), *keep = (double *)((uint8_t *)ws + ws_b);
    float *keepf = (float *)(keep + 2 * BNV_C);
    assert_int_equal(cu_bn_relu(st, kind, relu, x, residual ? r : NULL, c, c + BNV_C, c + 2 * BNV_C,
                                c + 3 * BNV_C, 0.9f, 1e-5f, 1, c + 4 * BNV_C, c + 5 * BNV_C, y,
                                BNV_N, BNV_C, BNV_S, nhwc, BNV_P, ws, keep, keepf),
                     0);
    assert_int_equal(cu_bn_relu_grad(st, kind, relu, dy, x, c, c + BNV_C, NULL, NULL, 1e-5f, 1, dx,
                                     c + 6 * BNV_C, c + 7 * BNV_C, BNV_N, BNV_C, BNV_S, nhwc, BNV_P,
                                     ws, saved ? keep : NULL),
                     0);
    assert_int_equal(cudaMemcpyAsync(out, d, bytes, cudaMemcpyDeviceToHost, st), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(st), cudaSuccess);
    cudaFree(d), cudaFreeHost(h);
    cudaStreamDestroy(st);
    return bytes;
}
#endif

#ifdef OC_CUDA_EMU
/* Element i of a data tensor of kind k (0 float32, 1 float16, 2 bfloat16) as a float. */
static float bnv_at(const uint8_t *p, int kind, size_t i) {
    if (kind == 0) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return half_to_f32(kind == 1 ? IR_DTYPE_FLOAT16 : IR_DTYPE_BFLOAT16, h);
}

/* n elements of a and b (kinds as bnv_at) agree: bit for bit (tol 0), or each within tol of
 * the largest magnitude. */
static bool bnv_same(const uint8_t *a, const uint8_t *b, int kind, size_t n, double tol) {
    if (tol == 0) return memcmp(a, b, n * (kind ? 2 : 4)) == 0;
    double big = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(bnv_at(a, kind, i)) > big) big = fabs(bnv_at(a, kind, i));
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)bnv_at(a, kind, i) - bnv_at(b, kind, i)) <= tol * big)) return false;
    return true;
}
#endif

/* The 4-elements-a-thread forms (8 for half data under OC_BN_V8=1) against the one-element
 * forms (a tensor one element off alignment takes those): channels-last bit for bit (each channel's arithmetic and order are
 * the same); (N, C, H, W) the elementwise passes are too, but the statistics' lanes add in
 * another order, so Y, dX and the channel outputs agree within float32's 1e-5 / a half's
 * rounding (2e-2) of their largest value. */
static void test_bn_vectors(void **state) {
    (void)state;
#ifdef OC_CUDA_EMU
    int cases = 0;
    uint8_t *a, *b;
    assert_int_equal(cudaHostAlloc((void **)&a, 1 << 16, 0), cudaSuccess);
    assert_int_equal(cudaHostAlloc((void **)&b, 1 << 16, 0), cudaSuccess);
    for (int kind = 0; kind < 3; kind++)
        for (int nhwc = 0; nhwc < 2; nhwc++)
            for (int relu = 0; relu < 2; relu++)
                for (int residual = 0; residual <= relu; residual++)
                    for (int saved = 0; saved < 2; saved++) {
                        const size_t es = kind ? 2 : 4, tb = bnv_bytes(es);
                        const double tol = nhwc ? 0 : kind ? 2e-2 : 1e-5;
                        size_t bytes = bnv_run(kind, nhwc, 0, relu, residual, saved, a);
                        assert_true(bytes <= 1 << 16);
                        bnv_run(kind, nhwc, 1, relu, residual, saved, b);
                        /* y and dx (the data tensors sit one element apart), then the channel
                         * outputs: running statistics, dScale, dBias */
                        for (int t = 2; t < 5; t += 2)
                            if (!bnv_same(a + t * tb, b + t * tb + es, kind, BNV_ROWS * BNV_C, tol))
                                fail_msg("kind %d nhwc %d relu %d residual %d saved %d: tensor %d "
                                         "differs",
                                         kind, nhwc, relu, residual, saved, t);
                        if (!bnv_same(a + 5 * tb + 4 * BNV_C * 4, b + 5 * tb + 4 * BNV_C * 4, 0,
                                      4 * BNV_C, nhwc ? 0 : 1e-5))
                            fail_msg("kind %d nhwc %d relu %d residual %d saved %d: channel "
                                     "outputs differ",
                                     kind, nhwc, relu, residual, saved);
                        cases++;
                    }
    cudaFreeHost(a), cudaFreeHost(b);
    printf("ok - emulated cuda: BN kernels, 4 elements a thread == one (channels-last bit for bit, "
           "(N, C, H, W) within rounding) (%d cases)\n",
           cases);
#else
    printf("# SKIP BN vector check: not the emulator\n");
#endif
}

/* ReluGrad with a second partial (fuse_grad_sum.h): dX = (dY + dY2) where Y > 0, rounded once
 * to the tensors' type — bit for bit what the unfused Sum then ReluGrad store (the Sum rounds
 * a + b, ReluGrad passes or zeroes it); float32, float16, bfloat16, 4 elements a thread (aligned)
 * and one (a tensor one element off), and without dY2 the old result. */
static void test_relu_grad_addend(void **state) {
    (void)state;
#ifdef OC_CUDA_EMU
    enum { N = 36 };
    int cases = 0;
    cudaStream_t st;
    assert_int_equal(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    uint8_t *h, *d;
    const size_t tb = (N + 4) * 4, bytes = 4 * tb;
    assert_int_equal(cudaHostAlloc((void **)&h, bytes, 0), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&d, bytes), cudaSuccess);
    for (int kind = 0; kind < 3; kind++)
        for (int off = 0; off < 2; off++)
            for (int two = 0; two < 2; two++) {
                const size_t es = kind ? 2 : 4;
                ir_dtype dt = kind == 1 ? IR_DTYPE_FLOAT16 : IR_DTYPE_BFLOAT16;
                uint64_t rng = 7;
                memset(h, 0, bytes);
                for (int t = 0; t < 3; t++) /* dy, dy2, y */
                    for (size_t i = 0; i < N; i++) {
                        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                        float v = (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1) * 3;
                        uint8_t *e = h + t * tb + (off + i) * es;
                        if (kind == 0) memcpy(e, &v, 4);
                        else {
                            uint16_t b = half_from_f32(dt, v);
                            memcpy(e, &b, 2);
                        }
                    }
                assert_int_equal(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, st),
                                 cudaSuccess);
                uint8_t *dy = d + off * es, *dy2 = dy + tb, *y = dy2 + tb, *dx = y + tb;
                assert_int_equal(cu_pointwise_grad(st, OP_RELU_GRAD, kind, dy, two ? dy2 : NULL, y,
                                                   dx, N, 0.0f, 0.0f),
                                 0);
                assert_int_equal(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, st),
                                 cudaSuccess);
                assert_int_equal(cudaStreamSynchronize(st), cudaSuccess);
                for (size_t i = 0; i < N; i++) {
                    const uint8_t *hd = h + 3 * tb + (off + i) * es;
                    float g = bnv_at(h + (off + i) * es, kind, 0), yv;
                    if (two) g += bnv_at(h + tb + (off + i) * es, kind, 0);
                    yv = bnv_at(h + 2 * tb + (off + i) * es, kind, 0);
                    float want = yv > 0.0f ? g : 0.0f;
                    uint8_t wb[4];
                    if (kind == 0) memcpy(wb, &want, 4);
                    else {
                        uint16_t b = half_from_f32(dt, want);
                        memcpy(wb, &b, 2);
                    }
                    if (memcmp(hd, wb, es) != 0)
                        fail_msg("kind %d off %d dY2 %d: element %zu is %g, want %g", kind, off,
                                 two, i, (double)bnv_at(hd, kind, 0), (double)want);
                }
                cases++;
            }
    cudaFree(d), cudaFreeHost(h);
    cudaStreamDestroy(st);
    printf(
        "ok - emulated cuda: ReluGrad(dY, Y, dY2) == Sum then ReluGrad, bit for bit (%d cases)\n",
        cases);
#else
    printf("# SKIP ReluGrad addend check: not the emulator\n");
#endif
}

/* GatherGrad on the emulator, bit for bit the sum of each index's dY rows in index order (the
 * cpu kernel's): 3000 positions into 7 rows, so a row's positions lie on many threads of the
 * grid-stride loop (the emulated grid is 2 blocks of 256 threads) and its slots are handed
 * out out of order: the per-bucket sort puts them back (without it, the sums' order differs). */
static void test_gather_grad_order(void **state) {
    (void)state;
#ifdef OC_CUDA_EMU
    enum { NI = 3000, EXTENT = 7, INNER = 3 };
    cudaStream_t st;
    assert_int_equal(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    static float dy[NI * INNER], dx[EXTENT * INNER];
    static int64_t idx[NI];
    uint64_t rng = 11;
    for (int j = 0; j < NI; j++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        idx[j] = (int64_t)((rng >> 33) % (EXTENT + 1)) - 1; /* -1: the last row, from the end */
        for (int i = 0; i < INNER; i++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            dy[j * INNER + i] = (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
        }
    }
    size_t ws_count = 2 * (EXTENT + 1) + NI;
    float *ddy, *ddx;
    int64_t *didx, *ws;
    assert_int_equal(cudaMalloc((void **)&ddy, sizeof dy), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&ddx, sizeof dx), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&didx, sizeof idx), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&ws, ws_count * sizeof *ws), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(ddy, dy, sizeof dy, cudaMemcpyHostToDevice, st), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(didx, idx, sizeof idx, cudaMemcpyHostToDevice, st),
                     cudaSuccess);
    for (int skip = -1; skip <= 2; skip += 3) { /* none; row 2 (a padding_idx) */
        assert_int_equal(cu_gather_grad(st, ddy, didx, 1, ddx, 1, EXTENT, NI, INNER, skip, ws), 0);
        assert_int_equal(cudaMemcpyAsync(dx, ddx, sizeof dx, cudaMemcpyDeviceToHost, st),
                         cudaSuccess);
        assert_int_equal(cudaStreamSynchronize(st), cudaSuccess);
        for (int e = 0; e < EXTENT; e++)
            for (int i = 0; i < INNER; i++) {
                float want = 0.0f;
                for (int j = 0; j < NI; j++)
                    if ((idx[j] < 0 ? idx[j] + EXTENT : idx[j]) == e && e != skip)
                        want += dy[j * INNER + i];
                if (memcmp(&dx[e * INNER + i], &want, 4) != 0)
                    fail_msg("skip %d, row %d, element %d: %.9g, want %.9g (index order)", skip, e,
                             i, (double)dx[e * INNER + i], (double)want);
            }
    }
    cudaFree(ddy), cudaFree(ddx), cudaFree(didx), cudaFree(ws);
    cudaStreamDestroy(st);
    printf("ok - emulated cuda: GatherGrad sums each row's %d positions in index order, bit for "
           "bit; a padding_idx row stays zero\n",
           NI / EXTENT);
#else
    printf("# SKIP GatherGrad order check: not the emulator\n");
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_new_or_skip),
        cmocka_unit_test(test_cuda_ops_have_cpu_kernels),
        cmocka_unit_test(test_default_domain_ops_complete),
        cmocka_unit_test(test_training_graphs_supported),
        cmocka_unit_test(test_rng_matches_cpu),
        cmocka_unit_test(test_half_nodes_native),
        cmocka_unit_test(test_bn_relu_grad_half_mask),
        cmocka_unit_test(test_bn_vectors),
        cmocka_unit_test(test_relu_grad_addend),
        cmocka_unit_test(test_gather_grad_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
