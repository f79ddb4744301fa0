/* cuda_profile.c — writes the measured profile (see backend_cuda.h:
 * rt_cuda_profile_write): per-node medians of the CUDA-event samples gathered
 * by backend_cuda.c, copy bandwidth on pinned buffers, workspaces. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/out_file.h"
#include "cuda_internal.h"
#include "plan/profile.h"

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define COPY_BYTES ((size_t)256 << 20)
#define COPY_REPS 5

/* Seconds of one timed region (events on stream s0), median over COPY_REPS. */
static int time_copies(cuda_impl *im, int dirs, void *dev, void *host, size_t bytes, double *secs,
                       oc_err *err) {
    const ir_node *no_node = NULL;
    double t[COPY_REPS];
    cudaStream_t h2d = im->s[RT_STREAM_H2D], d2h = im->s[RT_STREAM_D2H];
    cudaEvent_t e0, e1, e2;
    CU_CHECK_N(cudaEventCreate(&e0), no_node);
    CU_CHECK_N(cudaEventCreate(&e1), no_node);
    CU_CHECK_N(cudaEventCreate(&e2), no_node);
    for (int r = 0; r < COPY_REPS; r++) {
        CU_CHECK_N(cudaDeviceSynchronize(), no_node);
        CU_CHECK_N(cudaEventRecord(e0, h2d), no_node);
        CU_CHECK_N(cudaStreamWaitEvent(d2h, e0, 0), no_node);
        if (dirs & 1)
            CU_CHECK_N(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, h2d), no_node);
        if (dirs & 2)
            CU_CHECK_N(cudaMemcpyAsync((char *)host + bytes, (char *)dev + bytes, bytes,
                                       cudaMemcpyDeviceToHost, d2h),
                       no_node);
        CU_CHECK_N(cudaEventRecord(e2, d2h), no_node);
        CU_CHECK_N(cudaStreamWaitEvent(h2d, e2, 0), no_node);
        CU_CHECK_N(cudaEventRecord(e1, h2d), no_node);
        CU_CHECK_N(cudaEventSynchronize(e1), no_node);
        float ms = 0;
        CU_CHECK_N(cudaEventElapsedTime(&ms, e0, e1), no_node);
        t[r] = (double)ms * 1e-3;
    }
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    (void)cudaEventDestroy(e2);
    *secs = median(t, COPY_REPS);
    return OC_OK;
}

/* Fills the copy fields of d from measurements (temporary buffers of 2 x 256 MiB
 * on each side, freed before returning). */
static int measure_copies(cuda_impl *im, profile_device *d, oc_err *err) {
    const ir_node *no_node = NULL;
    void *dev = NULL, *host = NULL;
    CU_CHECK_N(cudaMalloc(&dev, 2 * COPY_BYTES), no_node);
    cudaError_t rc = cudaHostAlloc(&host, 2 * COPY_BYTES, cudaHostAllocDefault);
    if (rc != cudaSuccess) {
        (void)cudaFree(dev);
        CU_CHECK_N(rc, no_node);
    }
    memset(host, 1, 2 * COPY_BYTES);
    double h2d = 0, d2h = 0, both = 0, lat = 0;
    int r = time_copies(im, 1, dev, host, COPY_BYTES, &h2d, err);
    if (!r) r = time_copies(im, 2, dev, host, COPY_BYTES, &d2h, err);
    if (!r) r = time_copies(im, 3, dev, host, COPY_BYTES, &both, err);
    if (!r) r = time_copies(im, 1, dev, host, 4, &lat, err);
    (void)cudaFreeHost(host);
    (void)cudaFree(dev);
    if (r) return OC_ERR;
    double b = (double)COPY_BYTES;
    d->h2d_bytes_per_s = b / h2d;
    d->d2h_bytes_per_s = b / d2h;
    /* Full duplex when both directions at once take clearly less than in turn. */
    d->duplex = both < 0.75 * (h2d + d2h);
    d->copy_latency_s = lat;
    /* Both at once: each copy as much slower than alone as the pair is than the
     * slower of the two (the simulator's copy_slowdown_duplex). */
    double solo = h2d > d2h ? h2d : d2h;
    d->copy_slowdown_duplex = d->duplex && both > solo ? both / solo - 1 : 0;
    printf("copy bandwidth (pinned, %zu MiB): H2D %.2f GB/s, D2H %.2f GB/s, both at once %.2f GB/s "
           "total (%s, each direction %.1f%% slower beside the other), latency %.1f us\n",
           COPY_BYTES >> 20, d->h2d_bytes_per_s / 1e9, d->d2h_bytes_per_s / 1e9, 2 * b / both / 1e9,
           d->duplex ? "duplex" : "not duplex", 100 * d->copy_slowdown_duplex, lat * 1e6);
    return OC_OK;
}

/* --conv-algo measure: a convolution's record holds the workspace of the algorithm it
 * took (not the largest candidate's), the other candidates as its alternatives (their
 * time: the node's plus how much longer each took), for `plan --workspace`
 * (profile_workspace.h). */
static void add_alternatives(cuda_impl *im, const ir_graph *g, int i, profile *p) {
    size_t own, ws[PROFILE_MAX_ALTS];
    double delta[PROFILE_MAX_ALTS];
    int k = cuda_conv_alternatives(im, g, &g->nodes[i], &own, delta, ws, PROFILE_MAX_ALTS);
    if (k <= 0) return;
    profile_node *r = &p->nodes[i];
    r->workspace_bytes = (int64_t)own;
    r->alts = oc_malloc((size_t)k * sizeof *r->alts);
    for (int a = 0; a < k; a++)
        r->alts[a] = (profile_alt){r->time_s + (delta[a] > 0 ? delta[a] : 0), (int64_t)ws[a]};
    r->n_alts = k;
}

int cuda_profile_write(rt_backend *b, const train_graph *tg, int64_t batch, const char *path,
                       oc_err *err) {
    cuda_impl *im = b->impl;
    const ir_graph *g = tg->g;
    if (im->prof_g != g)
        return oc_fail(err, "profile: profile_start was not called for this graph");
    profile_device d;
    if (device_preset_find("h100", &d, err))
        return OC_ERR; /* peak FLOP/s, bandwidth, launch cost */
    struct cudaDeviceProp prop;
    const ir_node *no_node = NULL;
    CU_CHECK_N(cudaGetDeviceProperties(&prop, im->device), no_node);
    snprintf(d.name, sizeof d.name, "%s (measured)", prop.name);
    d.memory_bytes = (int64_t)prop.totalGlobalMem;
    if (measure_copies(im, &d, err)) return OC_ERR;
    profile *p = profile_new(&d, batch, PROFILE_SOURCE_MEASURED, g->n_nodes);
    int missing = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        double t = im->n_samples[i] ? median(im->samples[i], im->n_samples[i]) : 0.0;
        missing += im->n_samples[i] == 0;
        profile_node_set(p, i, g->nodes[i].name, t,
                         (int64_t)cuda_kernel_scratch(im, g, &g->nodes[i], SIZE_MAX));
        add_alternatives(im, g, i, p);
    }
    if (missing)
        fprintf(stderr, "cuda: profile: %d of %d nodes were never run as kernels (time 0)\n",
                missing, g->n_nodes);
    oc_out out;
    int rc = oc_out_open(&out, path, err);
    if (rc == OC_OK) {
        rc = profile_write_file(p, out.f, err);
        if (oc_out_close(&out, rc == OC_OK, err)) rc = OC_ERR;
    }
    profile_free(p);
    return rc;
}
