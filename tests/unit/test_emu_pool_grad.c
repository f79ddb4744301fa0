/* test_emu_pool_grad.c — the cuda backend's MaxPoolGrad (cuda_kernels.c:
 * k_max_pool_grad; the 2-D fast path and the generic path of cuda_pad_pool.cu),
 * run on the CUDA emulator, equals the cpu kernel bit for bit: the gradient
 * goes to each window's first maximum (NaN wins), and a cell covered by
 * several windows sums their gradients in ascending output order. Inputs come
 * from a 5-value alphabet (ties everywhere) with a few NaNs. Cases: 3x3 s2 p1
 * (ResNet's stem), 2x2 s2 (VGG), 3x3 s1 p1, dilation 2, 1-D and 3-D windows,
 * each with the argmax scratch and without it. Built only with CUDA=emu;
 * other builds compile a main that skips. */
#ifndef OC_CUDA_EMU
#include <stdio.h>
int main(void) {
    puts("SKIP test_emu_pool_grad: needs CUDA=emu");
    return 0;
}
#else
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda/backend_cuda.h"
#include "ir/ops/op_table.h"

typedef struct pool_case {
    int rank; /* 3, 4 or 5 */
    int64_t x[5];
    int64_t k[3], s[3], p[3], d[3];
} pool_case;

static void attr_ints(ir_graph *g, int n, const char *name, int cnt, const int64_t *v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INTS, .ints = (int64_t *)v, .n = cnt};
    ir_node_add_attr(g, n, &a);
}

/* The emulator has cudaMemcpyAsync (legacy default stream) only. */
static void copy_sync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    assert_int_equal(cudaMemcpyAsync(dst, src, n, kind, NULL), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
}

static int64_t numel_of(const ir_graph *g, int t) {
    int64_t n = 0;
    assert_true(ir_tensor_numel(&g->tensors[t], &n));
    return n;
}

/* Runs MaxPoolGrad of case c on cpu and on the emulated cuda backend (with the
 * argmax scratch or without) and compares bitwise. */
static void run_case(const pool_case *c, bool scratch, unsigned seed) {
    ir_graph *g = ir_graph_new();
    g->opset = 13;
    int nsp = c->rank - 2;
    int x = ir_tensor_add(g, "X", IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[x], c->rank, c->x);
    int y = ir_tensor_add(g, "Y", IR_DTYPE_FLOAT);
    int f = op_node_add(g, "mp", OP_MAX_POOL);
    ir_node_add_input(g, f, x);
    ir_node_add_output(g, f, y);
    int64_t pads[6];
    for (int i = 0; i < nsp; i++) pads[i] = pads[nsp + i] = c->p[i];
    attr_ints(g, f, "kernel_shape", nsp, c->k);
    attr_ints(g, f, "strides", nsp, c->s);
    attr_ints(g, f, "pads", 2 * nsp, pads);
    attr_ints(g, f, "dilations", nsp, c->d);
    oc_err err;
    if (op_infer(g, &g->nodes[f], &err)) fail_msg("%s", err.msg);
    int dy = ir_tensor_add(g, "dY", IR_DTYPE_FLOAT);
    ir_tensor_set_shape(&g->tensors[dy], g->tensors[y].rank, g->tensors[y].dims);
    int dx = ir_tensor_add(g, "dX", IR_DTYPE_FLOAT);
    int b = op_node_add(g, "mp/grad", OP_MAX_POOL_GRAD);
    ir_node_add_input(g, b, dy);
    ir_node_add_input(g, b, x);
    ir_node_add_output(g, b, dx);
    for (int i = 0; i < g->nodes[f].n_attrs; i++) ir_node_add_attr(g, b, &g->nodes[f].attrs[i]);
    attr_ints(g, b, "input_shape", c->rank, c->x);
    if (op_infer(g, &g->nodes[b], &err)) fail_msg("%s", err.msg);

    int64_t nx = numel_of(g, x), ny = numel_of(g, dy);
    float *hx = malloc((size_t)nx * 4), *hdy = malloc((size_t)ny * 4);
    float *want = malloc((size_t)nx * 4), *got = malloc((size_t)nx * 4);
    srand(seed);
    for (int64_t i = 0; i < nx; i++) hx[i] = (rand() % 97 == 0) ? NAN : (float)(rand() % 5) - 2.0f;
    for (int64_t i = 0; i < ny; i++) hdy[i] = (float)rand() / (float)RAND_MAX - 0.5f;

    void *in[2] = {hdy, hx}, *out[1] = {want};
    kernel_args a = {.g = g, .n = &g->nodes[b], .in = in, .out = out};
    if (cpu_kernel_run(&a, &err)) fail_msg("cpu: %s", err.msg);

    rt_backend *be = NULL;
    if (rt_backend_new("cuda", NULL, &be, &err)) fail_msg("%s", err.msg);
    size_t sb = be->scratch_bytes(be, g, &g->nodes[b], SIZE_MAX);
    assert_int_equal(sb, (size_t)ny * sizeof(int32_t));
    void *dev_x, *dev_dy, *dev_dx, *dev_s = NULL;
    assert_int_equal(cudaMalloc(&dev_x, (size_t)nx * 4), cudaSuccess);
    assert_int_equal(cudaMalloc(&dev_dy, (size_t)ny * 4), cudaSuccess);
    assert_int_equal(cudaMalloc(&dev_dx, (size_t)nx * 4), cudaSuccess);
    if (scratch) assert_int_equal(cudaMalloc(&dev_s, sb), cudaSuccess);
    copy_sync(dev_x, hx, (size_t)nx * 4, cudaMemcpyHostToDevice);
    copy_sync(dev_dy, hdy, (size_t)ny * 4, cudaMemcpyHostToDevice);
    void *din[2] = {dev_dy, dev_x}, *dout[1] = {dev_dx};
    kernel_args da = {.g = g,
                      .n = &g->nodes[b],
                      .in = din,
                      .out = dout,
                      .scratch = dev_s,
                      .scratch_bytes = scratch ? sb : 0};
    be->run_node(be, RT_STREAM_COMPUTE, &da, 0);
    if (be->sync(be, &err)) fail_msg("cuda: %s", err.msg);
    copy_sync(got, dev_dx, (size_t)nx * 4, cudaMemcpyDeviceToHost);
    for (int64_t i = 0; i < nx; i++)
        if (memcmp(&got[i], &want[i], 4) != 0)
            fail_msg("rank %d, scratch %d: dX[%lld] cuda %a, cpu %a", c->rank, scratch,
                     (long long)i, (double)got[i], (double)want[i]);
    cudaFree(dev_x), cudaFree(dev_dy), cudaFree(dev_dx);
    if (dev_s) cudaFree(dev_s);
    rt_backend_free(be);
    free(hx), free(hdy), free(want), free(got);
    ir_graph_free(g);
}

static const pool_case CASES[] = {
    {4, {2, 3, 17, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}},              /* ResNet's stem window */
    {4, {2, 2, 12, 10}, {2, 2}, {2, 2}, {0, 0}, {1, 1}},              /* VGG's */
    {4, {1, 2, 9, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},               /* overlapping, stride 1 */
    {4, {1, 2, 13, 12}, {3, 2}, {2, 1}, {1, 0}, {2, 3}},              /* dilation */
    {3, {2, 3, 19}, {3}, {2}, {1}, {1}},                              /* 1-D: generic path */
    {5, {1, 2, 6, 7, 5}, {2, 3, 2}, {2, 2, 1}, {0, 1, 0}, {1, 1, 1}}, /* 3-D: generic path */
};

static void test_matches_cpu_bitwise(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
        for (int s = 0; s < 2; s++) run_case(&CASES[i], s == 1, 11u + (unsigned)i);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_matches_cpu_bitwise)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
