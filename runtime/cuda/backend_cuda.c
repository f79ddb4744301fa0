/* backend_cuda.c — the cuda backend's rt_backend table (see backend_cuda.h):
 * memory, the three streams, events, copies, host functions, sync. Kernels
 * are cuda_kernels.c's; the profiler's sample gathering lives here because it
 * hooks run_node and sync (cuda_profile.c writes the file). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

int cuda_fail_call(oc_err *err, const char *call, const char *what, const char *file, int line,
                   const char *node) {
    return oc_fail(err, "%s failed: %s (%s:%d, node '%s')", call, what, file, line, node);
}

static void cuda_error_record(cuda_impl *im, const oc_err *err) {
    pthread_mutex_lock(&im->mu);
    if (!im->err_set) {
        im->err_set = true;
        im->err = *err;
    }
    pthread_mutex_unlock(&im->mu);
}

static cuda_impl *impl_of(rt_backend *b) { return b->impl; }

/* A failure of a call that has no error return (enqueueing): recorded for sync. */
#define CU_ENQ(im, call, node)                                                                     \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess) {                                                                  \
            oc_err e_;                                                                             \
            cuda_fail_call(&e_, #call, cudaGetErrorString(rc_), __FILE__, __LINE__, node);         \
            cuda_error_record(im, &e_);                                                            \
        }                                                                                          \
    } while (0)

static int cuda_be_dev_alloc(rt_backend *b, size_t bytes, void **p, oc_err *err) {
    cuda_impl *im = impl_of(b);
    *p = NULL;
    cudaError_t rc = cudaMalloc(p, bytes ? bytes : 256);
    if (rc != cudaSuccess) {
        size_t fr = 0, tot = 0;
        (void)cudaGetLastError();
        (void)cudaMemGetInfo(&fr, &tot);
        return oc_fail(err, "cudaMalloc(%zu) failed: %s (%zu bytes free of %zu) (%s:%d)", bytes,
                       cudaGetErrorString(rc), fr, tot, __FILE__, __LINE__);
    }
    im->device_bytes += bytes;
    return OC_OK;
}

static void cuda_be_dev_free(rt_backend *b, void *p) {
    (void)b;
    if (p) (void)cudaFree(p);
}

static int cuda_be_host_alloc(rt_backend *b, size_t bytes, void **p, oc_err *err) {
    cuda_impl *im = impl_of(b);
    *p = NULL;
    cudaError_t rc = cudaHostAlloc(p, bytes ? bytes : 64, cudaHostAllocDefault);
    if (rc != cudaSuccess)
        return oc_fail(err, "cudaHostAlloc(%zu) failed: %s (%s:%d)", bytes, cudaGetErrorString(rc),
                       __FILE__, __LINE__);
    im->pinned_bytes += bytes;
    fprintf(stderr, "cuda: pinned host memory %zu bytes (cudaHostAlloc, allocated once)\n", bytes);
    return OC_OK;
}

static void cuda_be_host_free(rt_backend *b, void *p) {
    (void)b;
    if (p) (void)cudaFreeHost(p);
}

static void cuda_be_copy(rt_backend *b, rt_stream_id s, void *dst, const void *src, size_t bytes) {
    cuda_impl *im = impl_of(b);
    if (!bytes) return;
    CU_ENQ(im, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, im->s[s]), "(copy)");
}

static void prof_push(cuda_impl *im, int node, cudaEvent_t e0, cudaEvent_t e1) {
    if (im->n_pending == im->cap_pending) {
        im->cap_pending = im->cap_pending ? 2 * im->cap_pending : 256;
        im->pending = oc_realloc(im->pending, (size_t)im->cap_pending * sizeof *im->pending);
    }
    im->pending[im->n_pending++] = (cuda_prof_pair){node, e0, e1};
}

static void cuda_be_run_node(rt_backend *b, rt_stream_id s, const kernel_args *args, int64_t step) {
    cuda_impl *im = impl_of(b);
    kernel_args a = *args;
    a.step = step;
    cuda_ctx c = {im, im->s[s], NULL};
    if (step != im->cur_step) { /* the step's first node: its value to the device first */
        *im->step_host = step;
        CU_ENQ(im,
               cudaMemcpyAsync(im->step_dev, im->step_host, sizeof(int64_t), cudaMemcpyHostToDevice,
                               im->s[RT_STREAM_COMPUTE]),
               a.n->name);
        im->cur_step = step;
    }
    cudaEvent_t e0 = NULL, e1 = NULL;
    int node = -1;
    if (im->prof_g && a.g == im->prof_g) {
        node = (int)(a.n - a.g->nodes);
        CU_ENQ(im, cudaEventCreate(&e0), a.n->name);
        CU_ENQ(im, cudaEventCreate(&e1), a.n->name);
        if (e0) CU_ENQ(im, cudaEventRecord(e0, c.stream), a.n->name);
    }
    oc_err e;
    if (cuda_kernel_run(&c, &a, &e)) cuda_error_record(im, &e); /* its message names the node */
    if (e1) {
        CU_ENQ(im, cudaEventRecord(e1, c.stream), a.n->name);
        prof_push(im, node, e0, e1);
    }
}

typedef struct host_task {
    cuda_impl *im;
    rt_task_fn fn;
    void *ctx;
    int64_t arg;
} host_task;

static void CUDART_CB host_task_run(void *p) {
    host_task *t = p;
    oc_err e;
    if (t->fn(t->ctx, t->arg, &e)) cuda_error_record(t->im, &e);
    oc_free(t);
}

static void cuda_be_host_fn(rt_backend *b, rt_stream_id s, rt_task_fn fn, void *ctx, int64_t arg) {
    cuda_impl *im = impl_of(b);
    host_task *t = oc_malloc(sizeof *t);
    *t = (host_task){im, fn, ctx, arg};
    cudaError_t rc = cudaLaunchHostFunc(im->s[s], host_task_run, t);
    if (rc != cudaSuccess) {
        oc_free(t);
        CU_ENQ(im, rc, "(host function)");
    }
}

static void *cuda_be_event_new(rt_backend *b) {
    cudaEvent_t ev = NULL;
    CU_ENQ(impl_of(b), cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "(event)");
    return ev;
}

static void cuda_be_event_free(rt_backend *b, void *ev) {
    (void)b;
    if (ev) (void)cudaEventDestroy((cudaEvent_t)ev);
}

static void cuda_be_record(rt_backend *b, rt_stream_id s, void *ev) {
    cuda_impl *im = impl_of(b);
    CU_ENQ(im, cudaEventRecord((cudaEvent_t)ev, im->s[s]), "(event record)");
}

static void cuda_be_wait(rt_backend *b, rt_stream_id s, void *ev) {
    cuda_impl *im = impl_of(b);
    CU_ENQ(im, cudaStreamWaitEvent(im->s[s], (cudaEvent_t)ev, 0), "(event wait)");
}

static void stamps_free(cuda_impl *im) {
    for (int i = 0; i < im->n_stamps; i++)
        if (im->stamps[i]) (void)cudaEventDestroy(im->stamps[i]);
    oc_free(im->stamps);
    oc_free(im->stamped);
    im->stamps = NULL;
    im->stamped = NULL;
    im->n_stamps = 0;
}

static int cuda_be_stamp_reset(rt_backend *b, int n, oc_err *err) {
    cuda_impl *im = impl_of(b);
    const ir_node *no_node = NULL;
    if (n != im->n_stamps) {
        stamps_free(im);
        im->stamps = oc_calloc((size_t)n + 1, sizeof *im->stamps);
        im->stamped = oc_calloc((size_t)n + 1, sizeof *im->stamped);
        im->n_stamps = n;
        for (int i = 0; i < n; i++) CU_CHECK_N(cudaEventCreate(&im->stamps[i]), no_node);
    }
    memset(im->stamped, 0, (size_t)n * sizeof *im->stamped);
    return OC_OK;
}

static void cuda_be_stamp(rt_backend *b, rt_stream_id s, int slot) {
    cuda_impl *im = impl_of(b);
    OC_ASSERT(slot >= 0 && slot < im->n_stamps);
    CU_ENQ(im, cudaEventRecord(im->stamps[slot], im->s[s]), "(stamp)");
    im->stamped[slot] = true;
}

static int cuda_be_stamp_read(rt_backend *b, double *secs, oc_err *err) {
    cuda_impl *im = impl_of(b);
    const ir_node *no_node = NULL;
    if (im->n_stamps == 0 || !im->stamped[0])
        return oc_fail(err, "cuda: stamp slot 0 was not stamped");
    for (int i = 0; i < im->n_stamps; i++) {
        float ms = 0;
        if (im->stamped[i])
            CU_CHECK_N(cudaEventElapsedTime(&ms, im->stamps[0], im->stamps[i]), no_node);
        secs[i] = im->stamped[i] ? (double)ms * 1e-3 : NAN;
        im->stamped[i] = false;
    }
    return OC_OK;
}

/* Moves the finished profiling pairs into per-node samples. */
static int prof_harvest(cuda_impl *im, oc_err *err) {
    for (int i = 0; i < im->n_pending; i++) {
        cuda_prof_pair *p = &im->pending[i];
        float ms = 0;
        cudaError_t rc = cudaEventElapsedTime(&ms, p->start, p->end);
        (void)cudaEventDestroy(p->start);
        (void)cudaEventDestroy(p->end);
        if (rc != cudaSuccess) {
            im->n_pending = 0;
            return cuda_fail_call(err, "cudaEventElapsedTime", cudaGetErrorString(rc), __FILE__,
                                  __LINE__, im->prof_g->nodes[p->node].name);
        }
        int n = p->node;
        if (im->n_samples[n] == im->cap_samples[n]) {
            im->cap_samples[n] = im->cap_samples[n] ? 2 * im->cap_samples[n] : 8;
            im->samples[n] =
                oc_realloc(im->samples[n], (size_t)im->cap_samples[n] * sizeof(double));
        }
        im->samples[n][im->n_samples[n]++] = (double)ms * 1e-3;
    }
    im->n_pending = 0;
    return OC_OK;
}

static int cuda_be_sync(rt_backend *b, oc_err *err) {
    cuda_impl *im = impl_of(b);
    int rc = OC_OK;
    for (int s = 0; s < RT_STREAM__COUNT; s++) {
        cudaError_t r = cudaStreamSynchronize(im->s[s]);
        if (r != cudaSuccess && rc == OC_OK) {
            rc = oc_fail(err, "cudaStreamSynchronize(%s) failed: %s (%s:%d)",
                         rt_stream_id_name((rt_stream_id)s), cudaGetErrorString(r), __FILE__,
                         __LINE__);
        }
    }
    pthread_mutex_lock(&im->mu);
    if (im->err_set) {
        if (rc == OC_OK && err) *err = im->err;
        rc = OC_ERR;
        im->err_set = false;
    }
    pthread_mutex_unlock(&im->mu);
    if (rc == OC_OK && im->n_pending) rc = prof_harvest(im, err);
    return rc;
}

static bool cuda_be_supported(rt_backend *b, int op) {
    (void)b;
    return cuda_kernel_supported(op);
}

static size_t cuda_be_scratch(rt_backend *b, const ir_graph *g, const ir_node *n, size_t limit) {
    return cuda_kernel_scratch(impl_of(b), g, n, limit);
}

static void prof_reset(cuda_impl *im) {
    if (im->samples && im->prof_g)
        for (int i = 0; i < im->prof_g->n_nodes; i++) oc_free(im->samples[i]);
    oc_free(im->samples);
    oc_free(im->n_samples);
    oc_free(im->cap_samples);
    im->samples = NULL;
    im->n_samples = im->cap_samples = NULL;
    im->prof_g = NULL;
}

static void cuda_be_destroy(rt_backend *b) {
    cuda_impl *im = impl_of(b);
    for (int s = 0; s < RT_STREAM__COUNT; s++) (void)cudaStreamSynchronize(im->s[s]);
    for (int i = 0; i < im->n_pending; i++) {
        (void)cudaEventDestroy(im->pending[i].start);
        (void)cudaEventDestroy(im->pending[i].end);
    }
    oc_free(im->pending);
    prof_reset(im);
    stamps_free(im);
    cuda_capture_free(b);
    cuda_algo_cache_free(im->algos);
    cuda_bn_stash_free(im->bn_stash);
    if (im->dnn) (void)cudnnDestroy(im->dnn);
    if (im->blas) (void)cublasDestroy(im->blas);
    if (im->blas_ws) (void)cudaFree(im->blas_ws);
    if (im->step_dev) (void)cudaFree(im->step_dev);
    if (im->step_host) (void)cudaFreeHost(im->step_host);
    for (int s = 0; s < RT_STREAM__COUNT; s++)
        if (im->s[s]) (void)cudaStreamDestroy(im->s[s]);
    pthread_mutex_destroy(&im->mu);
    oc_free(im);
    oc_free(b);
}

static int64_t cuda_be_device_used(rt_backend *b) {
    (void)b;
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return -1;
    return (int64_t)(tot - fr);
}

bool rt_backend_cuda_built(void) { return true; }

static int impl_init(cuda_impl *im, const rt_backend_opts *opts, oc_err *err) {
    const ir_node *no_node = NULL;
    im->deterministic = opts->deterministic;
    im->verbose = opts->verbose;
    im->ws_limit = opts->workspace_limit ? opts->workspace_limit : (size_t)8 << 30;
    im->tf32_conv = !opts->no_tf32_conv;
    im->conv_measure = opts->conv_measure && !opts->deterministic; /* a timed choice varies */
    /* auto times its choice, which varies: with --deterministic the legacy calls instead */
    im->conv_auto = opts->conv_auto && !opts->deterministic;
    im->conv_graph = opts->conv_graph && (im->conv_auto || !opts->conv_auto);
    CU_CHECK_N(cudaSetDevice(im->device), no_node);
    for (int s = 0; s < RT_STREAM__COUNT; s++)
        CU_CHECK_N(cudaStreamCreateWithFlags(&im->s[s], cudaStreamNonBlocking), no_node);
    CUDNN_CHECK_N(cudnnCreate(&im->dnn), no_node);
    CUDNN_CHECK_N(cudnnSetStream(im->dnn, im->s[RT_STREAM_COMPUTE]), no_node);
    CUBLAS_CHECK_N(cublasCreate(&im->blas), no_node);
    CUBLAS_CHECK_N(cublasSetStream(im->blas, im->s[RT_STREAM_COMPUTE]), no_node);
    /* Gemm in plain fp32 (PyTorch's default allow_tf32=False for matmul), or on TF32
     * tensor cores (--tf32-matmul on: allow_tf32=True). */
    CUBLAS_CHECK_N(cublasSetMathMode(im->blas, opts->tf32_matmul ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                 : CUBLAS_DEFAULT_MATH),
                   no_node);
    im->cur_step = -1;
    CU_CHECK_N(cudaMalloc((void **)&im->step_dev, sizeof(int64_t)), no_node);
    CU_CHECK_N(cudaHostAlloc((void **)&im->step_host, sizeof(int64_t), cudaHostAllocDefault),
               no_node);
    if (opts->cuda_graph) { /* cuBLAS must not allocate inside a capture: its workspace, ours */
        size_t ws = (size_t)32 << 20;
        CU_CHECK_N(cudaMalloc(&im->blas_ws, ws), no_node);
        CUBLAS_CHECK_N(cublasSetWorkspace(im->blas, im->blas_ws, ws), no_node);
    }
    struct cudaDeviceProp prop;
    int blas_ver = 0;
    CU_CHECK_N(cudaGetDeviceProperties(&prop, im->device), no_node);
    snprintf(im->device_name, sizeof im->device_name, "%s", prop.name);
    CUBLAS_CHECK_N(cublasGetVersion(im->blas, &blas_ver), no_node);
    size_t dnn_ver = cudnnGetVersion();
    fprintf(stderr,
            "cuda: %s (sm_%d%d, %d SMs, %.1f GiB), cuDNN %zu.%zu.%zu, cuBLAS %d; TF32: "
            "convolutions %s, matmuls %s\n",
            prop.name, prop.major, prop.minor, prop.multiProcessorCount,
            (double)prop.totalGlobalMem / (double)(1 << 30), dnn_ver / 10000, dnn_ver / 100 % 100,
            dnn_ver % 100, blas_ver, im->tf32_conv ? "on" : "off",
            opts->tf32_matmul ? "on" : "off");
    return OC_OK;
}

int rt_backend_cuda_new(const rt_backend_opts *opts, rt_backend **out, oc_err *err) {
    *out = NULL;
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return oc_fail(err, "backend 'cuda': no CUDA GPU available (cudaGetDeviceCount: %s)",
                       rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
    }
    rt_backend *b = oc_calloc(1, sizeof *b);
    cuda_impl *im = oc_calloc(1, sizeof *im);
    pthread_mutex_init(&im->mu, NULL);
    *b = (rt_backend){
        .name = "cuda",
        .impl = im,
        .dev_alloc = cuda_be_dev_alloc,
        .dev_free = cuda_be_dev_free,
        .host_alloc = cuda_be_host_alloc,
        .host_free = cuda_be_host_free,
        .copy = cuda_be_copy,
        .run_node = cuda_be_run_node,
        .host_fn = cuda_be_host_fn,
        .event_new = cuda_be_event_new,
        .event_free = cuda_be_event_free,
        .record = cuda_be_record,
        .wait = cuda_be_wait,
        .sync = cuda_be_sync,
        .supported = cuda_be_supported,
        .half = true,
        .half_note = "convolutions and GEMMs on half tensors run on cuDNN / cuBLAS's half "
                     "kernels (tensor cores, float32 accumulation); every other half node is "
                     "computed in float32, widened in its workspace (cuda_kernels.c)",
        .scratch_bytes = cuda_be_scratch,
        .destroy = cuda_be_destroy,
        .profile_start = cuda_profile_start,
        .profile_write = cuda_profile_write,
        .device_used = cuda_be_device_used,
        .stamp_reset = cuda_be_stamp_reset,
        .stamp = cuda_be_stamp,
        .stamp_read = cuda_be_stamp_read,
        .capture_begin = cuda_capture_begin,
        .capture_end = cuda_capture_end,
        .replay = cuda_replay,
        .capture_free = cuda_capture_free,
    };
    if (impl_init(im, opts, err)) {
        oc_fail_prefix(err, "backend 'cuda'");
        cuda_be_destroy(b);
        return OC_ERR;
    }
    snprintf(b->device_name, sizeof b->device_name, "%s", im->device_name);
    *out = b;
    return OC_OK;
}

int cuda_profile_start(rt_backend *b, const ir_graph *g, oc_err *err) {
    (void)err;
    cuda_impl *im = impl_of(b);
    prof_reset(im);
    im->prof_g = g;
    im->samples = oc_calloc((size_t)g->n_nodes, sizeof *im->samples);
    im->n_samples = oc_calloc((size_t)g->n_nodes, sizeof(int));
    im->cap_samples = oc_calloc((size_t)g->n_nodes, sizeof(int));
    return OC_OK;
}
