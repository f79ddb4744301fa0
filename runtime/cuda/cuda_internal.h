/* cuda_internal.h — shared by the cuda backend's files (backend_cuda.c,
 * cuda_kernels.c, cuda_conv.c, cuda_norm.c, cuda_gemm.c, cuda_attention_gemm.c,
 * cuda_profile.c) and the launchers of
 * the cuda_*.cu kernel files. Not an interface for other modules (see backend_cuda.h).
 *
 * Errors: every CUDA / cuDNN / cuBLAS call goes through CU_CHECK, CUDNN_CHECK
 * or CUBLAS_CHECK, which turn a failure into an oc_err naming the call, the
 * file:line and the node (ctx->node, NULL outside kernels) and return OC_ERR
 * from the enclosing function. Kernel launches are followed by
 * CU_CHECK(cudaGetLastError()). */
#ifndef OC_CUDA_INTERNAL_H
#define OC_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <pthread.h>

#include "backend_cuda.h"
#include "cuda_launch.h"
#include "kernels.h"

typedef struct cuda_prof_pair {
    int node; /* index in the profiled graph */
    cudaEvent_t start, end;
} cuda_prof_pair;

typedef struct cuda_algo_cache cuda_algo_cache; /* cuda_conv.c */
typedef struct cuda_bn_stash
    cuda_bn_stash; /* cuda_bn_stash.c: BN statistics, forward -> backward */

typedef struct cuda_impl {
    int device;
    char device_name[128]; /* cudaDeviceProp.name */
    cudaStream_t s[RT_STREAM__COUNT];
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cuda_algo_cache *algos;
    cuda_bn_stash *bn_stash;
    /* from rt_backend_opts when the backend is made */
    bool deterministic; /* deterministic algorithms, no BN stash */
    bool verbose;       /* print each algorithm choice */
    size_t ws_limit;    /* a convolution's workspace cap */
    bool tf32_conv;     /* convolutions may use TF32 tensor cores (cuDNN's default math) */
    bool conv_measure;  /* time the first candidates of each convolution shape (cuda_conv.c) */
    bool conv_graph;    /* convolutions through cuDNN's graph API (cuda_dnn_graph.h) */
    bool conv_auto;     /* both APIs' candidates timed per shape (cuda_conv.c) */
    /* CUDA graphs (cuda_graph.c): the captured step, its fork / join events, and
     * cuBLAS's own workspace (set so that a capture allocates nothing) */
    cudaGraphExec_t graph;
    cudaEvent_t fork_ev, join_ev[RT_STREAM__COUNT];
    void *blas_ws;
    /* The training step in device memory, for kernels whose arguments depend on
     * it (Dropout keys, AdamW's bias correction): copied from the pinned
     * step_host on the compute stream when a step's first node is enqueued, so
     * a captured step carries the copy and a replay uploads the current step. */
    int64_t *step_dev, *step_host;
    int64_t cur_step;   /* the step the last copy uploaded (-1: none) */
    pthread_mutex_t mu; /* guards err_set/err (host functions run on CUDA's thread) */
    bool err_set;
    oc_err err; /* first asynchronous error */
    size_t pinned_bytes, device_bytes;
    /* profiler */
    const ir_graph *prof_g;
    cuda_prof_pair *pending;
    int n_pending, cap_pending;
    double **samples; /* per node of prof_g: times in s */
    int *n_samples, *cap_samples;
    /* stamps (backend.h stamp_*): timing events, reused step after step */
    cudaEvent_t *stamps;
    bool *stamped;
    int n_stamps;
} cuda_impl;

int cuda_fail_call(oc_err *err, const char *call, const char *what, const char *file, int line,
                   const char *node);

#define CU_NODE_NAME(node) ((node) ? (node)->name : "(no node)")
#define CU_CHECK_N(call, node)                                                                     \
    do {                                                                                           \
        cudaError_t cu_rc_ = (call);                                                               \
        if (cu_rc_ != cudaSuccess)                                                                 \
            return cuda_fail_call(err, #call, cudaGetErrorString(cu_rc_), __FILE__, __LINE__,      \
                                  CU_NODE_NAME(node));                                             \
    } while (0)
#define CUDNN_CHECK_N(call, node)                                                                  \
    do {                                                                                           \
        cudnnStatus_t dnn_rc_ = (call);                                                            \
        if (dnn_rc_ != CUDNN_STATUS_SUCCESS)                                                       \
            return cuda_fail_call(err, #call, cudnnGetErrorString(dnn_rc_), __FILE__, __LINE__,    \
                                  CU_NODE_NAME(node));                                             \
    } while (0)
#define CUBLAS_CHECK_N(call, node)                                                                 \
    do {                                                                                           \
        cublasStatus_t blas_rc_ = (call);                                                          \
        if (blas_rc_ != CUBLAS_STATUS_SUCCESS)                                                     \
            return cuda_fail_call(err, #call, cublasGetStatusString(blas_rc_), __FILE__, __LINE__, \
                                  CU_NODE_NAME(node));                                             \
    } while (0)
/* Inside a kernel function with `const kernel_args *a` and `oc_err *err` in scope. */
#define CU_CHECK(call) CU_CHECK_N(call, a->n)
#define CUDNN_CHECK(call) CUDNN_CHECK_N(call, a->n)
#define CUBLAS_CHECK(call) CUBLAS_CHECK_N(call, a->n)
/* After a launcher from cuda_launch.h (they return cudaGetLastError()). */
#define CU_LAUNCH(call) CU_CHECK(call)

/* The context a kernel function gets: args, the stream to enqueue on, handles. */
typedef struct cuda_ctx {
    cuda_impl *im;
    cudaStream_t stream;
    /* The graph the node belongs to (the BN statistics stash's key), when the
     * kernel runs on a float32 view of a half node (kernels.h kernel_view);
     * NULL: a->g itself. */
    const ir_graph *graph;
} cuda_ctx;

typedef int (*cuda_kernel_fn)(const cuda_ctx *c, const kernel_args *a, oc_err *err);

/* Enqueues node a->n on c->stream through its row of the dispatch table.
 * OC_ERR (naming the node) on unsupported dtypes and failed calls. cuda_kernels.c. */
int cuda_kernel_run(const cuda_ctx *c, const kernel_args *a, oc_err *err);
/* Workspace of the node's kernel given `limit` bytes (backend.h scratch_bytes):
 * cuDNN convolution algorithm workspace (chosen within limit and cached,
 * cuda_conv.c); fixed small needs for losses and BN grads. */
size_t cuda_kernel_scratch(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t limit);

/* Kernels: cuda_<kern> for every op of the list (ir/ops/op_list.h), defined in
 * cuda_kernels.c (small kernels over the cuda_*.cu files), cuda_conv.c (cuDNN: the conv
 * family), cuda_norm.c (cuDNN's BatchNormalization, Softmax, LayerNormalization), cuda_gemm.c
 * (cuBLAS: Gemm, MatMul, Linear) and cuda_attention_gemm.c (FusedAttention by GEMMs). */
#define CUDA_KERNEL_DECL(kind, name, domain, def, kern)                                            \
    int cuda_##kern(const cuda_ctx *c, const kernel_args *a, oc_err *err);
OC_OPS_COMPUTE(CUDA_KERNEL_DECL)
#undef CUDA_KERNEL_DECL

/* cu_float_convert's kind of a float type: 0 float32, 1 float16, 2 bfloat16. */
static inline int cuda_float_kind(ir_dtype dt) {
    return dt == IR_DTYPE_BFLOAT16 ? 2 : dt == IR_DTYPE_FLOAT16 ? 1 : 0;
}

/* cuda_conv.c: the conv family's cuDNN workspace (+ bias-gradient scratch). */
size_t cuda_conv_scratch(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t limit);
/* --conv-algo measure, after node n ran: the candidates its shape was timed with, as the
 * workspace the one taken needs (*own_ws) and, for up to max others, how much longer each
 * took (delta_s[k] seconds) and the workspace it needs (ws[k]; the bias gradient's scratch
 * included). Returns how many; 0 when n is not a convolution or nothing was timed. */
int cuda_conv_alternatives(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t *own_ws,
                           double *delta_s, size_t *ws, int max);

/* cuda_pool.c: MaxPool through cuDNN pooling, when cuda_pool_uses_cudnn says
 * cuDNN expresses the window exactly (else the own kernel of cuda_pad_pool.cu). */
bool cuda_pool_uses_cudnn(const ir_graph *g, const ir_node *n);
int cuda_max_pool_cudnn(const cuda_ctx *c, const kernel_args *a, oc_err *err);
/* MaxPoolGrad's scratch (cuda_kernels.c): one int32 argmax per output window. */
size_t cuda_max_pool_grad_scratch(const ir_graph *g, const ir_node *n);
size_t cuda_attention_scratch(const ir_graph *g, const ir_node *n,
                              size_t limit); /* FusedAttention */
size_t cuda_layer_norm_grad_scratch(const ir_graph *g, const ir_node *n);
size_t cuda_bn_relu_scratch(const ir_graph *g, const ir_node *n); /* cuda_norm_act.c */
/* BatchNormalization[Grad] on our kernels (cuda_norm_act.c), not cuDNN's: half
 * data (cuda_native_half) or channels-last (read in place). */
static inline bool cuda_bn_ours(const ir_graph *g, const ir_node *n) {
    return n->channels_last || cuda_native_half(g, n);
}
int cuda_batch_norm_half(const cuda_ctx *c, const kernel_args *a, oc_err *err);
int cuda_batch_norm_grad_half(const cuda_ctx *c, const kernel_args *a, oc_err *err);

void cuda_algo_cache_free(cuda_algo_cache *ac);
/* Row-major C_b = alpha op(A_b) op(B_b) + beta C_b for b < nb (strides sa, sb, sc
 * elements), float, by one strided-batched cuBLAS call (cuda_gemm.c; FusedAttention). */
int cuda_gemm_rm_batched(const cuda_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *A, int64_t lda, int64_t sa, const float *B,
                         int64_t ldb, int64_t sb, float beta, float *C, int64_t ldc, int64_t sc,
                         int64_t nb, const kernel_args *a, oc_err *err);
/* backend.h capture_begin / capture_end / replay / capture_free (cuda_graph.c). */
int cuda_capture_begin(rt_backend *b, oc_err *err);
int cuda_capture_end(rt_backend *b, oc_err *err);
void cuda_replay(rt_backend *b, int64_t step);
void cuda_capture_free(rt_backend *b);

/* The BN statistics stash (cuda_bn_stash.c: what it keeps and when a gradient
 * may read it). */
typedef struct cuda_bn_stats {
    const ir_graph *g;
    int key; /* op_bn_args.stats_key */
    double eps;
    int64_t channels;
    float *f;  /* mean[C], then 1 / sqrt(var + eps)[C] (cuDNN's form); owns the block */
    double *d; /* (mean, 1 / sqrt(var + eps)) per channel (ours: cu_bn_relu) */
    int64_t f_step, d_step; /* the step whose forward wrote each form; -1 before any */
    const void *x_ptr;      /* the forward's X then */
    struct cuda_bn_stats *next;
} cuda_bn_stats;
/* A BN forward's entry (made on first use); NULL + err when cudaMalloc fails. */
cuda_bn_stats *cuda_bn_stash_entry(const cuda_ctx *c, const kernel_args *a, int64_t C, oc_err *err);
/* The forward a (X at input 0) wrote form f and / or d this step. */
void cuda_bn_stash_wrote(cuda_bn_stats *e, const kernel_args *a, bool f, bool d);
/* For the gradient a (X at input 1, training): the entry whose form d (exact)
 * or f this step's forward wrote for this X; NULL when none (f: also when
 * deterministic). */
const cuda_bn_stats *cuda_bn_stash_for_grad(const cuda_ctx *c, const kernel_args *a, int64_t C,
                                            bool exact);
void cuda_bn_stash_free(cuda_bn_stash *st);
/* The backend's profile_start / profile_write (backend.h; cuda_profile.c holds
 * the writer, backend_cuda.c the start). */
int cuda_profile_start(rt_backend *b, const ir_graph *g, oc_err *err);
int cuda_profile_write(rt_backend *b, const train_graph *tg, int64_t batch, const char *path,
                       oc_err *err);

/* Helpers shared by the kernel files (cuda_kernels.c). */
/* Output i's pointer, or NULL when the node omits it. */
static inline void *out_or_null(const kernel_args *a, int i) {
    return i < a->n->n_outputs && a->n->outputs[i] >= 0 ? a->out[i] : NULL;
}
/* (kernel_in/out/numel/fail/want_dtype: kernels.h) */

#endif
