/* cuda_dnn.c — the cuDNN and cuBLAS kernels of the cuda backend:
 *   convolution family (cuDNN): each op is one cuDNN operation on a "conv
 *   input" cin, a "conv output" cout and a filter w:
 *     Conv                          forward        cin = X,  cout = Y   (+ bias)
 *     ConvBackwardData              backward data  cin = dX, cout = dY
 *     ConvBackwardFilter            backward filter cin = X, cout = dY  (+ dB)
 *     ConvTranspose                 backward data  cin = Y,  cout = X   (+ bias)
 *     ConvTransposeBackwardData     forward        cin = dY, cout = dX
 *     ConvTransposeBackwardFilter   backward filter cin = dY, cout = X  (+ dB from dY)
 *   The algorithm is chosen once per shape (cudnnGet*Algorithm_v7): the
 *   heuristics' first (fastest-ranked) algorithm whose workspace fits the
 *   limit, never one that down-converts to fp16 — PyTorch's choice with
 *   cudnn.benchmark off. With the deterministic option (outcore-run
 *   --deterministic) only deterministic algorithms are taken, so runs repeat
 *   bit for bit (a swap/recompute plan then equals its in-core run bitwise).
 *   The limit is the workspace_limit option, default 8 GiB: the fast NCHW
 *   algorithms transpose whole activations into their workspace (VGG-16's
 *   second convolution at batch 256 wants 6.1 GiB; under a 4 GiB cap its
 *   forward took 45 ms and its filter gradient 66 ms on the H100, a third of
 *   the step). A plan bounds the workspace per node anyway.
 *   The verbose option prints every choice with its candidates.
 *   Chosen when the executor asks scratch_bytes — before the arena exists,
 *   so cudnnFind (which runs on real buffers) is not used — and cached with
 *   its descriptors. The choice is made within a workspace limit: the plan's
 *   region for the node (outcore_workspace, from the measured profile's
 *   workspace_bytes), so the arena holds the workspace and the plan counts it;
 *   run with kernel_args.scratch_bytes = that limit, the kernel finds the same
 *   cache entry.
 *   Math type: the algorithm's (CUDNN_DEFAULT_MATH or tensor-op), i.e. TF32 on
 *   Hopper, as PyTorch's default allow_tf32 for cuDNN; --tf32-conv off: FMA math
 *   (no tensor cores), as allow_tf32 = False sets it.
 *   BatchNormalization (cuDNN, SPATIAL): running statistics with factor
 *   1 - momentum (ONNX momentum) and cuDNN's unbiased running variance, the
 *   cpu backend's semantics; saved_var converted from cuDNN's inverse std.
 *   Its batch mean and inverse std are kept for BatchNormalizationGrad (as
 *   PyTorch keeps them) in the statistics stash (cuda_bn_stash.c), so the
 *   backward skips cuDNN's extra pass over X (a fifth of ResNet-50's BN
 *   backward time at batch 640; a plan that recomputes a convolution before
 *   its BN's backward would otherwise pay it, 14% of BN backward time measured
 *   on an H200); when the stash has none for this X, and always when
 *   deterministic, cuDNN recomputes them from X, so a plan's results stay
 *   bitwise its in-core run's.
 *   Gemm and MatMul (cuBLAS, fp32 math; TF32 per --tf32-matmul).
 *   Half tensors (--precision; cuda_native_half): the same convolutions with
 *   bfloat16 / float16 descriptors and float32 compute (tensor-op math, the
 *   TF32 switch not applied), the bias by cu_channel_bias / cu_channel_sum;
 *   GEMMs by cublasGemmEx with CUBLAS_COMPUTE_32F; BatchNormalization on half
 *   data by the BatchNormRelu kernels (cuda_norm_act.c), not cuDNN. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "cpu/cpu_rng.h"
#include "cuda_dnn_graph.h"
#include "cuda_internal.h"

enum { CONV_FWD = 0, CONV_BWD_DATA, CONV_BWD_FILTER };

/* --conv-algo measure times this many of the heuristics' first candidates (those that fit
 * the workspace and the math and determinism rules), each run once to warm up, then
 * MEASURE_RUNS times. */
#define MEASURE_CANDS 4
#define MEASURE_RUNS 2

typedef struct algo_entry {
    char *key;
    int kind;
    cudnnTensorDescriptor_t in_d, out_d;
    cudnnFilterDescriptor_t w_d;
    cudnnConvolutionDescriptor_t conv_d;
    /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, or < 0: plan -(algo + 1) of graph */
    int algo;
    /* --conv-api graph / auto: the convolution through cuDNN's graph API (cuda_dnn_graph.h);
     * NULL: the legacy calls only */
    dnn_graph_conv *graph;
    bool epi; /* graph: the bias / Relu of a Conv or ConvRelu are in the graph */
    size_t ws;
    /* --conv-algo measure / --conv-api auto: the candidates timed on the first run (the
     * heuristics' order, graph plans first; ws is the largest one's workspace, so any of them
     * fits the node's region) */
    int n_cand;
    int cand[2 * MEASURE_CANDS];
    cudnnMathType_t cand_math[2 * MEASURE_CANDS];
    size_t cand_ws[2 * MEASURE_CANDS]; /* each candidate's own workspace */
    float cand_ms[2 * MEASURE_CANDS];  /* once timed: each one's time (INFINITY: failed) */
    int best;                          /* once timed: the candidate taken */
    bool measured;
    /* ConvRelu's fused call (fused_forward): made on first use; no_fused once
     * cuDNN refused it for this shape (then conv, bias, relu apart) */
    cudnnTensorDescriptor_t bias_d;
    cudnnActivationDescriptor_t act_d;
    bool no_fused;
    bool fusion_measured; /* --conv-algo measure: fused call vs apart timed (or not to be) */
    struct algo_entry *next;
} algo_entry;

struct cuda_algo_cache {
    algo_entry *head;
};

void cuda_algo_cache_free(cuda_algo_cache *ac) {
    if (!ac) return;
    for (algo_entry *e = ac->head, *nx; e; e = nx) {
        nx = e->next;
        if (e->in_d) (void)cudnnDestroyTensorDescriptor(e->in_d);
        if (e->out_d) (void)cudnnDestroyTensorDescriptor(e->out_d);
        if (e->w_d) (void)cudnnDestroyFilterDescriptor(e->w_d);
        if (e->conv_d) (void)cudnnDestroyConvolutionDescriptor(e->conv_d);
        if (e->bias_d) (void)cudnnDestroyTensorDescriptor(e->bias_d);
        if (e->act_d) (void)cudnnDestroyActivationDescriptor(e->act_d);
        dnn_graph_conv_free(e->graph);
        oc_free(e->key);
        oc_free(e);
    }
    oc_free(ac);
}

/* One heuristic candidate, whichever direction it came from. */
typedef struct algo_cand {
    int algo;
    cudnnStatus_t status;
    cudnnDeterminism_t det;
    cudnnMathType_t math;
    size_t memory;
} algo_cand;

static const char *math_name(cudnnMathType_t m) {
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op+fp16";
    default: return "fma";
    }
}

/* "algo 1 (det, 12345 B, tensor-op), algo 0 (NOT_SUPPORTED), ..." into buf. */
static void cands_text(const algo_cand *c, int n, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o < len; i++) {
        int w;
        if (c[i].status != CUDNN_STATUS_SUCCESS)
            w = snprintf(buf + o, len - o, "%salgo %d (%s)", i ? ", " : "", c[i].algo,
                         cudnnGetErrorString(c[i].status));
        else
            w = snprintf(buf + o, len - o, "%salgo %d (%s, %zu B, %s)", i ? ", " : "", c[i].algo,
                         c[i].det == CUDNN_DETERMINISTIC ? "det" : "non-det", c[i].memory,
                         math_name(c[i].math));
        if (w < 0) break;
        o += (size_t)w;
    }
}

/* The tensors of a conv-family node (see the table above). */
typedef struct conv_geo {
    int kind;
    bool transpose;
    const ir_tensor *cin, *cout, *w;
    int cin_slot, cout_slot, w_slot; /* >= 0 input i, < 0 output -(i + 1) */
    int64_t groups;
    op_window win;
    int nsp;
    ir_dtype dt; /* cin, cout and w alike: float, float16 or bfloat16 */
    bool nhwc;   /* channels-last (the node's view: logical dims, bytes NHWC / KRSC) */
    /* Conv / ConvRelu: the bias (input 2, of type b_dt) and the Relu after the convolution */
    bool epi_bias, epi_relu;
    ir_dtype b_dt;
} conv_geo;

/* cuDNN's type of a float tensor of ours. */
static cudnnDataType_t dnn_type(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT16    ? CUDNN_DATA_HALF
           : dt == IR_DTYPE_BFLOAT16 ? CUDNN_DATA_BFLOAT16
                                     : CUDNN_DATA_FLOAT;
}

static const ir_tensor *slot_t(const ir_graph *g, const ir_node *n, int s) {
    return &g->tensors[s >= 0 ? n->inputs[s] : n->outputs[-s - 1]];
}

static int geo_of(const ir_graph *g, const ir_node *n, conv_geo *q, oc_err *err) {
    memset(q, 0, sizeof *q);
    switch (n->op) {
    case OP_CONV:
    case OP_CONV_RELU:
        q->kind = CONV_FWD;
        q->cin_slot = 0;
        q->cout_slot = -1;
        q->w_slot = 1;
        break;
    case OP_CONV_BACKWARD_DATA:
        q->kind = CONV_BWD_DATA;
        q->cin_slot = -1;
        q->cout_slot = 0;
        q->w_slot = 1;
        break;
    case OP_CONV_BACKWARD_FILTER:
        q->kind = CONV_BWD_FILTER;
        q->cin_slot = 1;
        q->cout_slot = 0;
        q->w_slot = -1;
        break;
    case OP_CONV_TRANSPOSE:
        q->kind = CONV_BWD_DATA;
        q->cin_slot = -1;
        q->cout_slot = 0;
        q->w_slot = 1;
        q->transpose = true;
        break;
    case OP_CONV_TRANSPOSE_BACKWARD_DATA:
        q->kind = CONV_FWD;
        q->cin_slot = 0;
        q->cout_slot = -1;
        q->w_slot = 1;
        q->transpose = true;
        break;
    case OP_CONV_TRANSPOSE_BACKWARD_FILTER:
        q->kind = CONV_BWD_FILTER;
        q->cin_slot = 0;
        q->cout_slot = 1;
        q->w_slot = -1;
        q->transpose = true;
        break;
    default: OC_ASSERT(false && "geo_of: not a conv op");
    }
    q->nhwc = n->channels_last;
    if (n->op == OP_CONV || n->op == OP_CONV_RELU) {
        q->epi_relu = n->op == OP_CONV_RELU;
        q->epi_bias = n->n_inputs > 2 && n->inputs[2] >= 0; /* an omitted bias: -1 */
        if (q->epi_bias) q->b_dt = g->tensors[n->inputs[2]].dtype;
    }
    q->cin = slot_t(g, n, q->cin_slot);
    q->cout = slot_t(g, n, q->cout_slot);
    q->w = slot_t(g, n, q->w_slot);
    const op_conv_args *p = &op_args_of(n)->conv; /* group, window: checked at load */
    q->groups = p->group;
    q->nsp = q->cin->rank - 2;
    if (q->nsp < 1 || q->nsp > 3)
        return oc_fail(err, "node '%s' (%s): %d spatial dims (1 to 3 supported)", n->name,
                       n->op_type, q->nsp);
    q->dt = q->cin->dtype;
    if ((q->dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(q->dt)) || q->cout->dtype != q->dt ||
        q->w->dtype != q->dt)
        return oc_fail(err,
                       "node '%s' (%s): the cuda kernel takes float, float16 or bfloat16 "
                       "tensors, all of one type",
                       n->name, n->op_type);
    q->win = p->win;
    for (int i = 0; i < q->nsp; i++)
        if (q->win.pad_begin[i] != q->win.pad_end[i])
            return oc_fail(err,
                           "node '%s' (%s): asymmetric padding (%lld, %lld) is not supported "
                           "by cuDNN",
                           n->name, n->op_type, (long long)q->win.pad_begin[i],
                           (long long)q->win.pad_end[i]);
    for (int i = 0; i < q->cin->rank; i++)
        if (q->cin->dims[i] > INT_MAX || q->cout->dims[i] > INT_MAX)
            return oc_fail(err, "node '%s' (%s): a dim exceeds cuDNN's int range", n->name,
                           n->op_type);
    return OC_OK;
}

/* Dims of t as cuDNN wants them: rank >= 4 (a 1-d conv gets a trailing 1);
 * the strides of a packed (N, C, ...) tensor, or with nhwc (a 4-d view of a
 * channels-last node) of its (N, H, W, C) bytes. */
static int nd_dims(const ir_tensor *t, bool nhwc, int *d, int *s) {
    int r = t->rank < 4 ? 4 : t->rank;
    for (int i = 0; i < r; i++) d[i] = i < t->rank ? (int)t->dims[i] : 1;
    int acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        s[i] = acc;
        acc *= d[i];
    }
    if (nhwc && r == 4) s[1] = 1, s[3] = d[1], s[2] = d[1] * d[3], s[0] = d[1] * d[2] * d[3];
    return r;
}

static char *geo_key(const conv_geo *q) {
    char buf[512];
    int o = snprintf(buf, sizeof buf, "%d|%d|%d|%lld|%d%d%d|", q->kind, (int)q->dt, (int)q->nhwc,
                     (long long)q->groups, (int)q->epi_bias, (int)q->epi_relu, (int)q->b_dt);
    const ir_tensor *ts[3] = {q->cin, q->cout, q->w};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ts[k]->rank; i++)
            o += snprintf(buf + o, sizeof buf - (size_t)o, "%lld,", (long long)ts[k]->dims[i]);
    for (int i = 0; i < q->nsp; i++)
        o += snprintf(buf + o, sizeof buf - (size_t)o, "|%lld,%lld,%lld",
                      (long long)q->win.pad_begin[i], (long long)q->win.stride[i],
                      (long long)q->win.dilation[i]);
    return oc_sprintf("%s", buf);
}

/* A graph plan's index as an algorithm value of algo_entry and back. */
static int plan_algo(int i) { return -(i + 1); }
static int algo_plan(int algo) { return -algo - 1; }

/* --conv-api graph: e's convolution through cuDNN's graph API, its heuristics' first plan
 * that fits limit (and with --conv-algo measure up to MEASURE_CANDS of them, timed on the
 * first run). A Conv / ConvRelu with a bias or a Relu: first with them in the graph
 * (e->epi: one fused kernel where cuDNN has an engine for it); refused, the convolution
  * alone, the bias and Relu in one pass after it (the legacy fused call is not made).
 * OC_ERR, said on stderr: the legacy calls instead. With `alone` false (--conv-api auto)
 * the bare convolution's plans only join e's candidates, the legacy algorithms to follow. */
static int graph_build(cuda_impl *im, const ir_node *n, const conv_geo *q, size_t limit,
                       algo_entry *e, bool alone) {
    dnn_conv_spec s = {.kind = q->kind,
                       .dt = dnn_type(q->dt),
                       .tensor_ok = q->dt != IR_DTYPE_FLOAT || im->tf32_conv,
                       .det_only = im->deterministic,
                       .limit = limit,
                       .bias = alone && q->epi_bias,
                       .relu = alone && q->epi_relu,
                       .b_dt = dnn_type(q->b_dt)};
    int d[8], st[8];
    const ir_tensor *ts[3] = {q->cin, q->w, q->cout};
    int64_t *dims[3] = {s.x_dim, s.w_dim, s.y_dim}, *strs[3] = {s.x_str, s.w_str, s.y_str};
    for (int k = 0; k < 3; k++) {
        s.rank = nd_dims(ts[k], q->nhwc, d, st);
        for (int i = 0; i < s.rank; i++) dims[k][i] = d[i], strs[k][i] = st[i];
    }
    for (int i = 0; i < s.rank - 2; i++) {
        s.pad[i] = i < q->nsp ? q->win.pad_begin[i] : 0;
        s.stride[i] = i < q->nsp ? q->win.stride[i] : 1;
        s.dilation[i] = i < q->nsp ? q->win.dilation[i] : 1;
    }
    char why[512];
    struct timespec t0, t1; /* plans of runtime-compiled engines take long to finalize */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int max_plans = im->conv_measure ? MEASURE_CANDS : 1, rc = 1;
    if (s.bias || s.relu) {
        rc = dnn_graph_conv_build(im->dnn, &s, max_plans, &e->graph, why, sizeof why);
        if (rc)
            fprintf(stderr,
                    "cuda: %s (%s): cuDNN's graph API refused the convolution with its %s%s%s "
                    "(%s); the convolution alone, then one pass\n",
                    n->name, n->op_type, s.bias ? "bias" : "", s.bias && s.relu ? " and " : "",
                    s.relu ? "Relu" : "", why);
        e->epi = rc == 0;
        s.bias = s.relu = false;
    }
    if (rc) rc = dnn_graph_conv_build(im->dnn, &s, max_plans, &e->graph, why, sizeof why);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    if (rc) {
        fprintf(stderr, "cuda: %s (%s): cuDNN's graph API: %s; the legacy calls instead\n", n->name,
                n->op_type, why);
        return OC_ERR;
    }
    int np = dnn_graph_conv_plans(e->graph);
    e->kind = q->kind;
    e->algo = plan_algo(0);
    e->ws = 0;
    for (int i = 0; i < np; i++) {
        size_t ws = dnn_graph_conv_workspace(e->graph, i);
        if (ws > e->ws) e->ws = ws;
        if (np > 1 || !alone) e->cand_ws[e->n_cand] = ws, e->cand[e->n_cand++] = plan_algo(i);
    }
    e->measured = np < 2;
    e->no_fused = alone;
    if (im->verbose) {
        fprintf(stderr,
                "cuda: %s: %s%s graph plan 0, workspace %zu B (limit %zu), built in %.1f ms%s; "
                "engines:",
                n->name,
                q->kind == CONV_FWD        ? "fwd"
                : q->kind == CONV_BWD_DATA ? "bwd-data"
                                           : "bwd-filter",
                e->epi ? (q->epi_bias && q->epi_relu ? "+bias+relu"
                          : q->epi_bias              ? "+bias"
                                                     : "+relu")
                       : "",
                dnn_graph_conv_workspace(e->graph, 0), limit, ms,
                !alone        ? ", timed against the legacy algorithms"
                : e->measured ? ""
                              : ", timed on the first run");
        for (int i = 0; i < np; i++)
            fprintf(stderr, " %lld (%zu B)", (long long)dnn_graph_conv_engine(e->graph, i),
                    dnn_graph_conv_workspace(e->graph, i));
        fprintf(stderr, "\n");
    }
    return OC_OK;
}

/* Builds the descriptors and picks the algorithm (see the file comment). */
static int entry_build(cuda_impl *im, const ir_node *n, const conv_geo *q, size_t limit,
                       algo_entry *e, oc_err *err) {
    int d[8], s[8], r;
    CUDNN_CHECK_N(cudnnCreateTensorDescriptor(&e->in_d), n);
    CUDNN_CHECK_N(cudnnCreateTensorDescriptor(&e->out_d), n);
    CUDNN_CHECK_N(cudnnCreateFilterDescriptor(&e->w_d), n);
    CUDNN_CHECK_N(cudnnCreateConvolutionDescriptor(&e->conv_d), n);
    cudnnDataType_t dt = dnn_type(q->dt);
    bool half = q->dt != IR_DTYPE_FLOAT;
    r = nd_dims(q->cin, q->nhwc, d, s);
    CUDNN_CHECK_N(cudnnSetTensorNdDescriptor(e->in_d, dt, r, d, s), n);
    r = nd_dims(q->cout, q->nhwc, d, s);
    CUDNN_CHECK_N(cudnnSetTensorNdDescriptor(e->out_d, dt, r, d, s), n);
    r = nd_dims(q->w, false, d, s);
    CUDNN_CHECK_N(cudnnSetFilterNdDescriptor(e->w_d, dt,
                                             q->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, r, d),
                  n);
    int pad[3] = {0, 0, 0}, str[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
    int nsp = q->nsp < 2 ? 2 : q->nsp;
    for (int i = 0; i < q->nsp; i++) {
        pad[i] = (int)q->win.pad_begin[i];
        str[i] = (int)q->win.stride[i];
        dil[i] = (int)q->win.dilation[i];
    }
    CUDNN_CHECK_N(cudnnSetConvolutionNdDescriptor(e->conv_d, nsp, pad, str, dil,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  n);
    CUDNN_CHECK_N(cudnnSetConvolutionGroupCount(e->conv_d, (int)q->groups), n);
    /* TF32 off: FMA math, so cuDNN ranks (and runs) only algorithms without
     * tensor cores. Half data: tensor cores (TF32 is a float32 switch). */
    bool tensor_ok = half || im->tf32_conv;
    CUDNN_CHECK_N(cudnnSetConvolutionMathType(e->conv_d, half            ? CUDNN_TENSOR_OP_MATH
                                                         : im->tf32_conv ? CUDNN_DEFAULT_MATH
                                                                         : CUDNN_FMA_MATH),
                  n);
    if (im->conv_graph && !im->conv_auto && graph_build(im, n, q, limit, e, true) == OC_OK)
        return OC_OK;
    /* auto: the graph's plans first among the candidates (refused: the legacy ones alone) */
    size_t graph_ws = 0;
    if (im->conv_auto && graph_build(im, n, q, limit, e, false) == OC_OK) graph_ws = e->ws;
    int got = 0;
    algo_cand c[16];
#define HEUR(perf_t, getter, ...)                                                                  \
    do {                                                                                           \
        perf_t perf[16];                                                                           \
        CUDNN_CHECK_N(getter(im->dnn, __VA_ARGS__, 16, &got, perf), n);                            \
        for (int i = 0; i < got; i++)                                                              \
            c[i] = (algo_cand){(int)perf[i].algo, perf[i].status, perf[i].determinism,             \
                               perf[i].mathType, perf[i].memory};                                  \
    } while (0)
    if (q->kind == CONV_FWD)
        HEUR(cudnnConvolutionFwdAlgoPerf_t, cudnnGetConvolutionForwardAlgorithm_v7, e->in_d, e->w_d,
             e->conv_d, e->out_d);
    else if (q->kind == CONV_BWD_DATA)
        HEUR(cudnnConvolutionBwdDataAlgoPerf_t, cudnnGetConvolutionBackwardDataAlgorithm_v7, e->w_d,
             e->out_d, e->conv_d, e->in_d);
    else
        HEUR(cudnnConvolutionBwdFilterAlgoPerf_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
             e->in_d, e->out_d, e->conv_d, e->w_d);
#undef HEUR
    bool det_only = im->deterministic;
    int pick = -1, per_api = im->conv_measure ? MEASURE_CANDS : 1, n_legacy = 0;
    bool collect = im->conv_measure || im->conv_auto;
    size_t ws_max = graph_ws; /* measure / auto: the largest candidate's workspace */
    for (int i = 0; i < got; i++) {
        if (c[i].status != CUDNN_STATUS_SUCCESS || c[i].memory > limit ||
            c[i].math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
            (!tensor_ok && c[i].math == CUDNN_TENSOR_OP_MATH) ||
            (det_only && c[i].det != CUDNN_DETERMINISTIC))
            continue;
        if (pick < 0) pick = i;
        if (!collect || n_legacy++ == per_api) break;
        e->cand[e->n_cand] = c[i].algo;
        e->cand_ws[e->n_cand] = c[i].memory;
        e->cand_math[e->n_cand++] = tensor_ok ? c[i].math : CUDNN_FMA_MATH;
        if (c[i].memory > ws_max) ws_max = c[i].memory;
    }
    char list[1024];
    cands_text(c, got, list, sizeof list);
    if (pick < 0 && e->graph) { /* auto: no legacy algorithm fits, the graph's plans do */
        e->measured = e->n_cand < 2;
        e->no_fused = true;
        e->ws = graph_ws;
        return OC_OK;
    }
    if (pick < 0)
        return oc_fail(err,
                       "node '%s' (%s): cuDNN offers no %salgorithm within a workspace of %zu "
                       "bytes (the plan's region, or the workspace limit); its candidates: %s",
                       n->name, n->op_type, det_only ? "deterministic " : "", limit, list);
    e->kind = q->kind;
    e->algo = c[pick].algo;
    e->ws = e->n_cand > 1 ? ws_max : c[pick].memory;
    cudnnMathType_t math = tensor_ok ? c[pick].math : CUDNN_FMA_MATH;
    e->measured = e->n_cand < 2; /* nothing to choose between */
    if (im->verbose)
        fprintf(stderr,
                "cuda: %s: %s algo %d, math %s, workspace %zu B (limit %zu)%s; candidates: %s\n",
                n->name,
                q->kind == CONV_FWD        ? "fwd"
                : q->kind == CONV_BWD_DATA ? "bwd-data"
                                           : "bwd-filter",
                e->algo, math_name(math), e->ws, limit,
                e->measured ? "" : ", timed on the first run", list);
    CUDNN_CHECK_N(cudnnSetConvolutionMathType(e->conv_d, math), n);
    return OC_OK;
}

/* Cached entry for the node's shape and workspace limit (capped by
 * the workspace_limit option); built on first use. NULL + err on failure. */
static algo_entry *entry_get(cuda_impl *im, const ir_node *n, const conv_geo *q, size_t limit,
                             oc_err *err) {
    if (!im->algos) im->algos = oc_calloc(1, sizeof *im->algos);
    if (limit > im->ws_limit) limit = im->ws_limit;
    char *shape = geo_key(q);
    char *key = oc_sprintf("%s|ws%zu", shape, limit);
    oc_free(shape);
    for (algo_entry *e = im->algos->head; e; e = e->next)
        if (strcmp(e->key, key) == 0) {
            oc_free(key);
            return e;
        }
    algo_entry *e = oc_calloc(1, sizeof *e);
    e->best = -1;
    e->key = key;
    e->next = im->algos->head;
    im->algos->head = e; /* freed with the cache even if the build fails */
    if (entry_build(im, n, q, limit, e, err)) {
        e->key[0] = '\0'; /* never matched again */
        return NULL;
    }
    return e;
}

/* ---- the bias gradient of the filter ops ----
 * dB (C) = sum of dY (N, C, S..) over N and S as two cuBLAS products with a
 * vector of ones: t (N C) = dY rows . ones(S), then dB = sum over N of t, one
 * read of dY. With cudnnConvolutionBackwardBias, VGG-16's first filter-gradient
 * node (batch 256) took 13 ms on the H100, and VGG-16 ran at 0.875x PyTorch;
 * with this, at 0.976x. Scratch after the cuDNN workspace: ones (max(S, N)
 * floats) and t (N C floats). */
static size_t align_up(size_t v) { return (v + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

static bool has_bias_grad(const ir_node *n) {
    return (n->op == OP_CONV_BACKWARD_FILTER || n->op == OP_CONV_TRANSPOSE_BACKWARD_FILTER) &&
           n->n_outputs > 1 && n->outputs[1] >= 0;
}

/* dY's (N, C, S) for the bias gradient of node n (dY is input 0 of both filter ops). */
static void bias_dims(const ir_graph *g, const ir_node *n, int64_t *N, int64_t *C, int64_t *S) {
    const ir_tensor *dy = &g->tensors[n->inputs[0]];
    *N = dy->dims[0], *C = dy->dims[1], *S = 1;
    for (int i = 2; i < dy->rank; i++) *S *= dy->dims[i];
}

static size_t bias_scratch(const ir_graph *g, const ir_node *n) {
    if (!has_bias_grad(n)) return 0;
    int64_t N, C, S;
    bias_dims(g, n, &N, &C, &S);
    if (n->channels_last) /* cu_channel_sum_nhwc */
        return align_up((size_t)(cu_channel_parts(N * S, C) * C) * sizeof(double));
    if (g->tensors[n->inputs[0]].dtype != IR_DTYPE_FLOAT) /* cu_channel_sum */
        return align_up((size_t)(N * C) * sizeof(double));
    return align_up((size_t)((S > N ? S : N) + N * C) * sizeof(float));
}

static int bias_grad(const cuda_ctx *c, const kernel_args *a, void *scratch, oc_err *err) {
    int64_t N, C, S;
    bias_dims(a->g, a->n, &N, &C, &S);
    ir_dtype dt = kernel_in(a, 0)->dtype;
    if (a->n->channels_last) { /* dY (N H W, C): column sums, deterministic */
        CU_LAUNCH(cu_channel_sum_nhwc(c->stream, a->in[0], cuda_float_kind(dt), N * S, C, scratch,
                                      a->out[1], cuda_float_kind(kernel_out(a, 1)->dtype)));
        return OC_OK;
    }
    if (dt != IR_DTYPE_FLOAT) { /* half dY: one deterministic reduction, float sums */
        CU_LAUNCH(cu_channel_sum(c->stream, a->in[0], cuda_float_kind(dt), N, C, S, scratch,
                                 a->out[1], cuda_float_kind(kernel_out(a, 1)->dtype)));
        return OC_OK;
    }
    float *db = a->out[1], *ws = scratch;
    if (N * C > INT_MAX || S > INT_MAX)
        return kernel_fail(a, err, "dY has more rows or columns than cuBLAS's int range");
    if (N * C * S == 0) {
        CU_CHECK(cudaMemsetAsync(db, 0, (size_t)C * sizeof(float), c->stream));
        return OC_OK;
    }
    float *ones = ws, *t = ws + (S > N ? S : N);
    CU_LAUNCH(cu_fill(c->stream, ones, S > N ? S : N, 1.0f));
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSetStream(c->im->blas, c->stream));
    CUBLAS_CHECK(cublasSgemm(c->im->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)(N * C), 1, (int)S, &one,
                             a->in[0], (int)S, ones, (int)S, &zero, t, (int)(N * C)));
    CUBLAS_CHECK(cublasSgemm(c->im->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)C, 1, (int)N, &one, t,
                             (int)C, ones, (int)N, &zero, db, (int)C));
    return OC_OK;
}

/* The cuDNN algorithm is chosen within what the bias gradient (bias_ws bytes)
 * leaves of the limit; the node's scratch is the workspace, then those bytes. */
static size_t conv_limit(size_t limit, size_t bias_ws) {
    return limit == SIZE_MAX ? limit : limit > bias_ws ? limit - bias_ws : 0;
}

static size_t conv_need(size_t ws, size_t bias_ws) { return bias_ws ? align_up(ws) + bias_ws : ws; }

size_t cuda_conv_scratch(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t limit) {
    conv_geo q;
    oc_err err;
    if (geo_of(g, n, &q, &err)) return 0; /* reported when the node runs */
    size_t bias_ws = bias_scratch(g, n);
    algo_entry *e = entry_get(im, n, &q, conv_limit(limit, bias_ws), &err);
    if (!e) {
        fprintf(stderr, "cuda: %s\n", err.msg);
        return 0;
    }
    return conv_need(e->ws, bias_ws);
}

int cuda_conv_alternatives(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t *own_ws,
                           double *delta_s, size_t *ws, int max) {
    conv_geo q;
    oc_err err;
    if (!op_is_conv(n->op) || geo_of(g, n, &q, &err)) return 0;
    size_t bias_ws = bias_scratch(g, n);
    /* the entry the node ran with: its shape's, timed (the run's limit was the shared
     * workspace's, not the node's own) */
    char *shape = geo_key(&q), *prefix = oc_sprintf("%s|ws", shape);
    size_t plen = strlen(prefix);
    algo_entry *e = NULL;
    for (algo_entry *x = im->algos ? im->algos->head : NULL; x; x = x->next)
        if (strncmp(x->key, prefix, plen) == 0 && x->best >= 0 && x->best < x->n_cand &&
            x->n_cand >= 2 && x->cand_ms[x->best] < INFINITY && (!e || x->n_cand > e->n_cand))
            e = x;
    oc_free(shape), oc_free(prefix);
    if (!e) return 0;
    *own_ws = conv_need(e->cand_ws[e->best], bias_ws);
    int k = 0;
    for (int i = 0; i < e->n_cand && k < max; i++) {
        if (i == e->best || !(e->cand_ms[i] < INFINITY)) continue;
        delta_s[k] = ((double)e->cand_ms[i] - (double)e->cand_ms[e->best]) * 1e-3;
        ws[k++] = conv_need(e->cand_ws[i], bias_ws);
    }
    return k;
}

static void *slot_p(const kernel_args *a, int s) { return s >= 0 ? a->in[s] : a->out[-s - 1]; }

/* A bias (C) as cuDNN broadcasts it onto y: dims 1 but the channels', packed. */
static int bias_nd(const ir_tensor *y, bool nhwc, int *bdim, int *bs) {
    int d[8], s[8], r = nd_dims(y, nhwc, d, s);
    for (int i = 0; i < r; i++) bdim[i] = i == 1 ? d[1] : 1;
    bs[r - 1] = 1;
    for (int i = r - 2; i >= 0; i--) bs[i] = bs[i + 1] * bdim[i + 1];
    return r;
}

/* ConvRelu, float32 with a bias: y = relu(conv(x, w) + bias) in one cuDNN call
 * (cudnnConvolutionBiasActivationForward, z = y scaled by 0), with the
 * entry's algorithm and workspace. */
static cudnnStatus_t fused_forward(cuda_impl *im, algo_entry *e, const ir_tensor *yt, bool nhwc,
                                   const void *x, const void *w, const void *bias, void *y,
                                   void *ws) {
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    if (!e->act_d) {
        int bdim[8], bs[8], r = bias_nd(yt, nhwc, bdim, bs);
        st = cudnnCreateTensorDescriptor(&e->bias_d);
        if (st == CUDNN_STATUS_SUCCESS)
            st = cudnnSetTensorNdDescriptor(e->bias_d, CUDNN_DATA_FLOAT, r, bdim, bs);
        if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateActivationDescriptor(&e->act_d);
        if (st == CUDNN_STATUS_SUCCESS)
            st = cudnnSetActivationDescriptor(e->act_d, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN,
                                              0.0);
        if (st != CUDNN_STATUS_SUCCESS) return st; /* descriptors freed with the cache */
    }
    const float one = 1.0f, zero = 0.0f;
    return cudnnConvolutionBiasActivationForward(
        im->dnn, &one, e->in_d, x, e->w_d, w, e->conv_d, (cudnnConvolutionFwdAlgo_t)e->algo, ws,
        e->ws, &zero, e->out_d, y, e->bias_d, bias, e->act_d, e->out_d, y);
}

/* Y += bias (a forward op's input 2) and ConvRelu's Relu, one pass over Y (y + b rounded
 * once, as cudnnAddTensor, then the Relu). */
static int bias_relu(const cuda_ctx *c, const kernel_args *a, const conv_geo *q,
                     const ir_tensor *yt, const void *bias, bool relu, oc_err *err) {
    int64_t S = 1;
    for (int i = 2; i < yt->rank; i++) S *= yt->dims[i];
    /* channels-last: rows of C, the channel fastest */
    int64_t rows = q->nhwc ? yt->dims[0] * S : yt->dims[0];
    CU_LAUNCH(cu_channel_bias(c->stream, slot_p(a, -1), cuda_float_kind(yt->dtype), bias,
                              cuda_float_kind(kernel_in(a, 2)->dtype), rows, yt->dims[1],
                              q->nhwc ? 1 : S, relu));
    return OC_OK;
}

/* e's convolution with algorithm `algo` (cin, cout, w: the table above), beta 0: the
 * output is overwritten; with e->epi the bias and Relu too (bias: the node's, else unread). */
static cudnnStatus_t conv_call(cuda_impl *im, const algo_entry *e, int algo, void *cin, void *cout,
                               void *w, const void *bias, void *ws) {
    if (algo < 0)
        return dnn_graph_conv_run(im->dnn, e->graph, algo_plan(algo), cin, w, cout, bias, ws);
    const float one = 1.0f, zero = 0.0f;
    if (e->kind == CONV_FWD)
        return cudnnConvolutionForward(im->dnn, &one, e->in_d, cin, e->w_d, w, e->conv_d,
                                       (cudnnConvolutionFwdAlgo_t)algo, ws, e->ws, &zero, e->out_d,
                                       cout);
    if (e->kind == CONV_BWD_DATA)
        return cudnnConvolutionBackwardData(im->dnn, &one, e->w_d, w, e->out_d, cout, e->conv_d,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, e->ws, &zero,
                                            e->in_d, cin);
    return cudnnConvolutionBackwardFilter(im->dnn, &one, e->in_d, cin, e->out_d, cout, e->conv_d,
                                          (cudnnConvolutionBwdFilterAlgo_t)algo, ws, e->ws, &zero,
                                          e->w_d, w);
}

/* The time since ev[0] (recorded on the stream before the timed calls): ev[1] recorded now
 * and waited for. */
static int elapsed_ms(const cuda_ctx *c, const kernel_args *a, cudaEvent_t ev[2], float *ms,
                      oc_err *err) {
    CU_CHECK(cudaEventRecord(ev[1], c->stream));
    CU_CHECK(cudaEventSynchronize(ev[1]));
    CU_CHECK(cudaEventElapsedTime(ms, ev[0], ev[1]));
    return OC_OK;
}

/* Candidate i's time: one warm-up call, then MEASURE_RUNS between two events; INFINITY
 * when cuDNN refuses it for these tensors. */
static int time_candidate(const cuda_ctx *c, const kernel_args *a, algo_entry *e, int i,
                          cudaEvent_t ev[2], void *cin, void *cout, void *w, const void *bias,
                          float *ms, oc_err *err) {
    *ms = INFINITY;
    if (e->cand[i] >= 0) CUDNN_CHECK(cudnnSetConvolutionMathType(e->conv_d, e->cand_math[i]));
    cudnnStatus_t st = conv_call(c->im, e, e->cand[i], cin, cout, w, bias, a->scratch);
    if (st != CUDNN_STATUS_SUCCESS) return OC_OK;
    CU_CHECK(cudaEventRecord(ev[0], c->stream));
    for (int r = 0; r < MEASURE_RUNS && st == CUDNN_STATUS_SUCCESS; r++)
        st = conv_call(c->im, e, e->cand[i], cin, cout, w, bias, a->scratch);
    float t;
    if (elapsed_ms(c, a, ev, &t, err)) return OC_ERR;
    if (st == CUDNN_STATUS_SUCCESS) *ms = t;
    return OC_OK;
}

/* --conv-algo measure, on the shape's first run: times e's candidates on this node's
 * tensors and workspace (each writes the node's output; the real call then writes it
 * again) and keeps the fastest. While the stream is captured into a CUDA graph nothing
 * can wait for a timing: the heuristics' pick stays. */
static int measure(const cuda_ctx *c, const kernel_args *a, algo_entry *e, void *cin, void *cout,
                   void *w, const void *bias, oc_err *err) {
    e->measured = true;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CU_CHECK(cudaStreamIsCapturing(c->stream, &cs));
    if (cs != cudaStreamCaptureStatusNone) return OC_OK;
    cudaEvent_t ev[2] = {NULL, NULL};
    int rc = OC_OK, best = -1;
    float t[2 * MEASURE_CANDS];
    if (cudaEventCreate(&ev[0]) != cudaSuccess || cudaEventCreate(&ev[1]) != cudaSuccess)
        rc = kernel_fail(a, err, "cudaEventCreate failed while timing convolution algorithms");
    for (int i = 0; i < e->n_cand && rc == OC_OK; i++) {
        rc = time_candidate(c, a, e, i, ev, cin, cout, w, bias, &t[i], err);
        if (rc == OC_OK && t[i] < INFINITY && (best < 0 || t[i] < t[best])) best = i;
    }
    for (int k = 0; k < 2; k++)
        if (ev[k]) (void)cudaEventDestroy(ev[k]);
    if (rc) return rc;
    if (best < 0) return kernel_fail(a, err, "cuDNN ran none of its %d candidates", e->n_cand);
    for (int i = 0; i < e->n_cand; i++) e->cand_ms[i] = t[i] / MEASURE_RUNS;
    e->best = best;
    e->algo = e->cand[best];
    if (e->algo >= 0) CUDNN_CHECK(cudnnSetConvolutionMathType(e->conv_d, e->cand_math[best]));
    else e->no_fused = true; /* the legacy fused call takes a legacy algorithm */
    if (c->im->verbose) {
        fprintf(stderr, "cuda: %s: measured", a->n->name);
        for (int i = 0; i < e->n_cand; i++)
            fprintf(
                stderr, "%s %s %d %.4f ms", i ? "," : "", e->cand[i] < 0 ? "graph plan" : "algo",
                e->cand[i] < 0 ? algo_plan(e->cand[i]) : e->cand[i], (double)t[i] / MEASURE_RUNS);
        fprintf(stderr, " -> %s %d\n", e->algo < 0 ? "graph plan" : "algo",
                e->algo < 0 ? algo_plan(e->algo) : e->algo);
    }
    return OC_OK;
}

/* --conv-algo measure, ConvRelu with a float32 bias, on the shape's first run: cuDNN's fused
 * call against the convolution then one bias + Relu pass (bias_relu), each warmed up once and
 * timed over MEASURE_RUNS; the shape keeps the faster (no_fused when apart). Refused by
 * cuDNN: apart, said once. Not while the stream is captured. */
static int measure_fusion(const cuda_ctx *c, const kernel_args *a, algo_entry *e, const conv_geo *q,
                          void *cin, void *cout, void *w, void *bias, oc_err *err) {
    e->fusion_measured = true;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CU_CHECK(cudaStreamIsCapturing(c->stream, &cs));
    if (cs != cudaStreamCaptureStatusNone) return OC_OK;
    const ir_tensor *yt = kernel_out(a, 0);
    cudnnStatus_t st = fused_forward(c->im, e, yt, q->nhwc, cin, w, bias, cout, a->scratch);
    if (st != CUDNN_STATUS_SUCCESS) return OC_OK; /* conv_family says why and runs apart */
    cudaEvent_t ev[2] = {NULL, NULL};
    float fused = INFINITY, apart = INFINITY;
    int rc = OC_OK;
    if (cudaEventCreate(&ev[0]) != cudaSuccess || cudaEventCreate(&ev[1]) != cudaSuccess)
        rc = kernel_fail(a, err, "cudaEventCreate failed while timing the fused convolution");
    if (rc == OC_OK && cudaEventRecord(ev[0], c->stream) != cudaSuccess)
        rc = kernel_fail(a, err, "cudaEventRecord failed");
    for (int r = 0; r < MEASURE_RUNS && rc == OC_OK && st == CUDNN_STATUS_SUCCESS; r++)
        st = fused_forward(c->im, e, yt, q->nhwc, cin, w, bias, cout, a->scratch);
    if (rc == OC_OK) rc = elapsed_ms(c, a, ev, &fused, err);
    for (int r = 0; r <= MEASURE_RUNS && rc == OC_OK; r++) { /* the first: a warm-up */
        if (r == 1 && cudaEventRecord(ev[0], c->stream) != cudaSuccess)
            rc = kernel_fail(a, err, "cudaEventRecord failed");
        if (rc == OC_OK && conv_call(c->im, e, e->algo, cin, cout, w, NULL, a->scratch))
            rc = kernel_fail(a, err, "the convolution failed while timed");
        if (rc == OC_OK) rc = bias_relu(c, a, q, yt, bias, true, err);
    }
    if (rc == OC_OK) rc = elapsed_ms(c, a, ev, &apart, err);
    for (int k = 0; k < 2; k++)
        if (ev[k]) (void)cudaEventDestroy(ev[k]);
    if (rc) return rc;
    if (st != CUDNN_STATUS_SUCCESS) fused = INFINITY;
    e->no_fused = apart < fused;
    if (c->im->verbose)
        fprintf(stderr,
                "cuda: %s: measured conv-bias-relu as one cuDNN call %.4f ms, apart %.4f ms -> "
                "%s\n",
                a->n->name, (double)fused / MEASURE_RUNS, (double)apart / MEASURE_RUNS,
                e->no_fused ? "apart" : "one call");
    return OC_OK;
}

/* The conv family: one cuDNN call of q.kind (see the table above) + the bias. */
static int conv_family(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    conv_geo q;
    if (geo_of(a->g, a->n, &q, err)) return OC_ERR;
    cuda_impl *im = c->im;
    size_t bias_ws = bias_scratch(a->g, a->n);
    /* as scratch_bytes chose */
    algo_entry *e = entry_get(im, a->n, &q, conv_limit(a->scratch_bytes, bias_ws), err);
    if (!e) return OC_ERR;
    size_t need = conv_need(e->ws, bias_ws);
    if (need > a->scratch_bytes)
        return kernel_fail(a, err, "workspace %zu bytes exceeds the scratch of %zu bytes", need,
                           a->scratch_bytes);
    CUDNN_CHECK(cudnnSetStream(im->dnn, c->stream));
    void *cin = slot_p(a, q.cin_slot), *cout = slot_p(a, q.cout_slot), *w = slot_p(a, q.w_slot);
    bool relu = a->n->op == OP_CONV_RELU;
    bool fwd_op = a->n->op == OP_CONV || relu || a->n->op == OP_CONV_TRANSPOSE;
    void *bias = fwd_op && a->n->n_inputs > 2 ? a->in[2] : NULL;
    if (!e->measured && measure(c, a, e, cin, cout, w, bias, err)) return OC_ERR;
    if (e->epi) { /* the graph's bias and Relu too */
        CUDNN_CHECK(conv_call(im, e, e->algo, cin, cout, w, bias, a->scratch));
        return OC_OK;
    }
    const ir_tensor *yt = kernel_out(a, 0);
    if (relu && bias && q.dt == IR_DTYPE_FLOAT && im->conv_measure && !e->fusion_measured &&
        !e->no_fused && measure_fusion(c, a, e, &q, cin, cout, w, bias, err))
        return OC_ERR;
    if (relu && bias && q.dt == IR_DTYPE_FLOAT && !e->no_fused) {
        cudnnStatus_t st = fused_forward(im, e, yt, q.nhwc, cin, w, bias, cout, a->scratch);
        if (st == CUDNN_STATUS_SUCCESS) return OC_OK;
        /* refused before anything ran (NOT_SUPPORTED; BAD_PARAM: e.g. a workspace
         * the fused engine wants larger than the convolution's): this shape runs
         * conv, bias and relu apart from now on, said once */
        if (st != CUDNN_STATUS_NOT_SUPPORTED && st != CUDNN_STATUS_BAD_PARAM) CUDNN_CHECK(st);
        e->no_fused = true;
        fprintf(stderr,
                "cuda: %s: cuDNN refused the fused convolution-bias-activation (%s); "
                "convolution, bias and Relu apart for this shape\n",
                a->n->name, cudnnGetErrorString(st));
    }
    CUDNN_CHECK(conv_call(im, e, e->algo, cin, cout, w, NULL, a->scratch));
    /* Bias (forward ops, input 2) onto the y side; dB (filter ops, output 1) from dY. */
    if (bias_ws) return bias_grad(c, a, (char *)a->scratch + align_up(e->ws), err);
    if (bias) return bias_relu(c, a, &q, yt, bias, relu, err);
    if (relu) /* in place over Y, as the Relu node's kernel */
        CU_LAUNCH(cu_pointwise(c->stream, OP_RELU, cuda_float_kind(yt->dtype), cout, cout,
                               kernel_numel(yt), 0.0f, 0.0f));
    return OC_OK;
}

#define CONV_KERNEL(kern)                                                                          \
    int cuda_##kern(const cuda_ctx *c, const kernel_args *a, oc_err *err) {                        \
        return conv_family(c, a, err);                                                             \
    }
CONV_KERNEL(conv)
CONV_KERNEL(conv_relu)
CONV_KERNEL(conv_transpose)
CONV_KERNEL(conv_backward_data)
CONV_KERNEL(conv_backward_filter)
CONV_KERNEL(conv_transpose_backward_data)
CONV_KERNEL(conv_transpose_backward_filter)
#undef CONV_KERNEL

/* ---- BatchNormalization ---- */

typedef struct bn_descs {
    cudnnTensorDescriptor_t x, p;
} bn_descs;

static void bn_free(bn_descs *d) {
    if (d->x) (void)cudnnDestroyTensorDescriptor(d->x);
    if (d->p) (void)cudnnDestroyTensorDescriptor(d->p);
}

/* (N, C, S..) as NCHW (N, C, S, 1) and the derived (1, C, 1, 1). */
static int bn_make(const kernel_args *a, const ir_tensor *x, bn_descs *d, oc_err *err) {
    memset(d, 0, sizeof *d);
    int64_t S = 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    if (x->rank < 2 || x->dims[0] > INT_MAX || x->dims[1] > INT_MAX || S > INT_MAX)
        return kernel_fail(a, err, "input '%s' has a shape cuDNN cannot take", x->name);
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&d->x));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&d->p));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                           (int)x->dims[0], (int)x->dims[1], (int)S, 1));
    CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(d->p, d->x, CUDNN_BATCHNORM_SPATIAL));
    return OC_OK;
}

static int bn_forward(const cuda_ctx *c, const kernel_args *a, const bn_descs *d, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    const op_bn_args *p = &op_args_of(a->n)->bn;
    double eps = p->epsilon;
    float momentum = p->momentum;
    if (eps < CUDNN_BN_MIN_EPSILON)
        return kernel_fail(a, err, "epsilon %g is below cuDNN's minimum %g", eps,
                           CUDNN_BN_MIN_EPSILON);
    const float one = 1.0f, zero = 0.0f;
    bool train = p->training;
    if (!train) {
        if (a->n->n_outputs > 1)
            return kernel_fail(a, err, "inference mode with %d outputs", a->n->n_outputs);
        CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
            c->im->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->x, a->in[0], d->x, a->out[0], d->p,
            a->in[1], a->in[2], a->in[3], a->in[4], eps));
        return OC_OK;
    }
    float *rm = out_or_null(a, 1), *rv = out_or_null(a, 2), *sm = out_or_null(a, 3),
          *sv = out_or_null(a, 4);
    if (!rm != !rv)
        return kernel_fail(a, err, "running_mean and running_var must both be present or absent");
    if (!sm != !sv)
        return kernel_fail(a, err, "saved_mean and saved_var must both be present or absent");
    size_t cb = (size_t)x->dims[1] * sizeof(float);
    if (rm && rm != a->in[3])
        CU_CHECK(cudaMemcpyAsync(rm, a->in[3], cb, cudaMemcpyDeviceToDevice, c->stream));
    if (rv && rv != a->in[4])
        CU_CHECK(cudaMemcpyAsync(rv, a->in[4], cb, cudaMemcpyDeviceToDevice, c->stream));
    cuda_bn_stats *e = NULL;
    if (!c->im->deterministic) { /* keep mean and inverse std for the backward */
        e = cuda_bn_stash_entry(c, a, x->dims[1], err);
        if (!e) return OC_ERR;
    }
    CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        c->im->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->x, a->in[0], d->x, a->out[0], d->p,
        a->in[1], a->in[2], 1.0 - (double)momentum, rm, rv, eps, e ? e->f : sm,
        e ? e->f + x->dims[1] : sv));
    if (e) {
        cuda_bn_stash_wrote(e, a, true, false);
        if (sm) { /* the opset <= 13 saved_mean / saved_var outputs, from the stash */
            CU_CHECK(cudaMemcpyAsync(sm, e->f, cb, cudaMemcpyDeviceToDevice, c->stream));
            CU_CHECK(
                cudaMemcpyAsync(sv, e->f + x->dims[1], cb, cudaMemcpyDeviceToDevice, c->stream));
        }
    }
    if (sv) CU_LAUNCH(cu_invstd_to_var(c->stream, sv, x->dims[1], (float)eps));
    return OC_OK;
}

int cuda_batch_norm(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    if (cuda_bn_ours(a->g, a->n)) return cuda_batch_norm_half(c, a, err);
    for (int i = 0; i < 5; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    CUDNN_CHECK(cudnnSetStream(c->im->dnn, c->stream));
    bn_descs d;
    int rc = bn_make(a, kernel_in(a, 0), &d, err);
    if (rc == OC_OK) rc = bn_forward(c, a, &d, err);
    bn_free(&d);
    return rc;
}

/* dY, X, scale -> dX, dScale, dBias; the batch statistics from the stash when
 * this step's forward left them for this X, else recomputed by cuDNN from X
 * (as the cpu kernel does). */
/* Softmax, LogSoftmax and their gradients (cpu_softmax): our kernels. */
int cuda_softmax(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t outer, D, inner;
    kernel_softmax_rows(a, x, &outer, &D, &inner);
    CU_LAUNCH(
        cu_softmax(c->stream, a->in[0], a->out[0], outer, D, inner, a->n->op == OP_LOG_SOFTMAX));
    return OC_OK;
}

int cuda_softmax_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_in(a, 1);
    if (kernel_want_dtype(a, kernel_in(a, 0), IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, y, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    int64_t outer, D, inner;
    kernel_softmax_rows(a, y, &outer, &D, &inner);
    CU_LAUNCH(cu_softmax_grad(c->stream, a->in[0], a->in[1], a->out[0], outer, D, inner,
                              a->n->op == OP_LOG_SOFTMAX_GRAD));
    return OC_OK;
}

/* LayerNormalization and its gradient (cpu_layer_norm): our kernels. */
static void ln_rows(const kernel_args *a, int64_t *R, int64_t *D) {
    const ir_tensor *x = kernel_in(a, a->n->op == OP_LAYER_NORM ? 0 : 1);
    int64_t axis = op_args_of(a->n)->ln.axis;
    *D = 1;
    for (int d = (int)axis; d < x->rank; d++) *D *= x->dims[d];
    *R = *D ? kernel_numel(x) / *D : 0;
}

int cuda_layer_norm(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 2; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t R, D;
    ln_rows(a, &R, &D);
    CU_LAUNCH(cu_layer_norm(c->stream, a->in[0], a->in[1], a->n->n_inputs > 2 ? a->in[2] : NULL,
                            a->out[0], R, D, op_args_of(a->n)->ln.epsilon));
    return OC_OK;
}

int cuda_layer_norm_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t R, D;
    ln_rows(a, &R, &D);
    OC_ASSERT(a->scratch_bytes >= cuda_layer_norm_grad_scratch(a->g, a->n));
    CU_LAUNCH(cu_layer_norm_grad(c->stream, a->in[0], a->in[1], a->in[2], out_or_null(a, 0),
                                 out_or_null(a, 1), out_or_null(a, 2), a->scratch, R, D,
                                 op_args_of(a->n)->ln.epsilon));
    return OC_OK;
}

/* Each row's mean and 1/std, and the scale / bias gradients' partial sums. */
size_t cuda_layer_norm_grad_scratch(const ir_graph *g, const ir_node *n) {
    const ir_tensor *x = &g->tensors[n->inputs[1]];
    int64_t D = 1, numel = 0;
    for (int d = (int)op_args_of(n)->ln.axis; d < x->rank; d++) D *= x->dims[d];
    ir_tensor_numel(x, &numel);
    return (size_t)cu_layer_norm_grad_doubles(D ? numel / D : 0, D) * sizeof(double) +
           sizeof(double);
}

/* Frozen statistics (--bn frozen): dX = dY * scale / sqrt(var + eps) and the
 * per-channel sums, with our kernels (cuDNN's backward uses batch statistics). */
static int bn_frozen_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 3; i < 5; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const ir_tensor *x = kernel_in(a, 1);
    int64_t N = x->dims[0], C = x->dims[1], S = 1;
    for (int i = 2; i < x->rank; i++) S *= x->dims[i];
    CU_LAUNCH(cu_bn_frozen_grad(c->stream, a->in[0], a->in[1], a->in[2], a->in[3], a->in[4],
                                op_args_of(a->n)->bn.epsilon, out_or_null(a, 0), out_or_null(a, 1),
                                out_or_null(a, 2), N, C, S));
    return OC_OK;
}

int cuda_batch_norm_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    if (cuda_bn_ours(a->g, a->n)) return cuda_batch_norm_grad_half(c, a, err);
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    if (!op_args_of(a->n)->bn.training) return bn_frozen_grad(c, a, err);
    const ir_tensor *x = kernel_in(a, 1);
    double eps = op_args_of(a->n)->bn.epsilon;
    if (eps < CUDNN_BN_MIN_EPSILON)
        return kernel_fail(a, err, "epsilon %g is below cuDNN's minimum %g", eps,
                           CUDNN_BN_MIN_EPSILON);
    if (!a->out[0]) /* cuDNN's backward always writes dX */
        return kernel_fail(a, err,
                           "dX omitted (BatchNormalization of an input that needs no "
                           "gradient) is not supported by the cuda backend yet");
    float *ds = out_or_null(a, 1), *db = out_or_null(a, 2);
    float *tmp = a->scratch;
    OC_ASSERT(a->scratch_bytes >= 2 * (size_t)x->dims[1] * sizeof(float));
    if (!ds) ds = tmp;
    if (!db) db = tmp + x->dims[1];
    CUDNN_CHECK(cudnnSetStream(c->im->dnn, c->stream));
    const cuda_bn_stats *e = cuda_bn_stash_for_grad(c, a, x->dims[1], false);
    bn_descs d;
    int rc = bn_make(a, x, &d, err);
    const float one = 1.0f, zero = 0.0f;
    if (rc == OC_OK) {
        cudnnStatus_t st = cudnnBatchNormalizationBackward(
            c->im->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d.x, a->in[1], d.x,
            a->in[0], d.x, a->out[0], d.p, a->in[2], ds, db, eps, e ? e->f : NULL,
            e ? e->f + x->dims[1] : NULL);
        if (st != CUDNN_STATUS_SUCCESS)
            rc = cuda_fail_call(err, "cudnnBatchNormalizationBackward", cudnnGetErrorString(st),
                                __FILE__, __LINE__, a->n->name);
    }
    bn_free(&d);
    return rc;
}

/* ---- Gemm (cuBLAS) ---- */

static cudaDataType blas_type(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT16 ? CUDA_R_16F : dt == IR_DTYPE_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Row-major C_b (m, n) = alpha op(A_b) op(B_b) + beta C_b for b < nb (strides
 * sa, sb, sc elements; beta 0 or 1), as the column-major C^T = op(B)^T op(A)^T.
 * float: cublasSgemm (TF32 per the handle's math mode), batched or not; half
 * (A, B, C all of type dt): cublasGemmEx with float compute — tensor cores,
 * float accumulation, C rounded once. */
static int gemm_typed(const cuda_ctx *c, ir_dtype dt, bool batched, bool ta, bool tb, int64_t m,
                      int64_t n, int64_t k, float alpha, const void *A, int64_t lda, int64_t sa,
                      const void *B, int64_t ldb, int64_t sb, float beta, void *C, int64_t ldc,
                      int64_t sc, int64_t nb, const kernel_args *a, oc_err *err) {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || nb > INT_MAX)
        return kernel_fail(a, err, "dims exceed cuBLAS's int range");
    if (m == 0 || n == 0 || nb == 0) return OC_OK;
    if (k == 0) { /* C = beta C */
        size_t es = dt == IR_DTYPE_FLOAT ? sizeof(float) : sizeof(uint16_t);
        if (beta == 0.0f) CU_CHECK(cudaMemsetAsync(C, 0, (size_t)(nb * m * n) * es, c->stream));
        return OC_OK;
    }
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasSetStream(c->im->blas, c->stream));
    if (dt == IR_DTYPE_FLOAT && batched)
        CUBLAS_CHECK(cublasSgemmStridedBatched(c->im->blas, opb, opa, (int)n, (int)m, (int)k,
                                               &alpha, B, (int)ldb, sb, A, (int)lda, sa, &beta, C,
                                               (int)ldc, sc, (int)nb));
    else if (dt == IR_DTYPE_FLOAT)
        CUBLAS_CHECK(cublasSgemm(c->im->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, B, (int)ldb,
                                 A, (int)lda, &beta, C, (int)ldc));
    else if (batched)
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(
            c->im->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, B, blas_type(dt), (int)ldb, sb,
            A, blas_type(dt), (int)lda, sa, &beta, C, blas_type(dt), (int)ldc, sc, (int)nb,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        CUBLAS_CHECK(cublasGemmEx(c->im->blas, opb, opa, (int)n, (int)m, (int)k, &alpha, B,
                                  blas_type(dt), (int)ldb, A, blas_type(dt), (int)lda, &beta, C,
                                  blas_type(dt), (int)ldc, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
    return OC_OK;
}

/* Row-major C (m, n) = op(A) op(B), one product. */
static int gemm_rm(const cuda_ctx *c, ir_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                   int64_t k, const void *A, int64_t lda, const void *B, int64_t ldb, void *C,
                   int64_t ldc, const kernel_args *a, oc_err *err) {
    return gemm_typed(c, dt, false, ta, tb, m, n, k, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, C, ldc, 0, 1,
                      a, err);
}

/* Row-major C_b = alpha op(A_b) op(B_b) + beta C_b for b < nb, float
 * (FusedAttention). */
static int gemm_rm_batched(const cuda_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                           float alpha, const float *A, int64_t lda, int64_t sa, const float *B,
                           int64_t ldb, int64_t sb, float beta, float *C, int64_t ldc, int64_t sc,
                           int64_t nb, const kernel_args *a, oc_err *err) {
    return gemm_typed(c, IR_DTYPE_FLOAT, true, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta,
                      C, ldc, sc, nb, a, err);
}

/* Row-major C_b = op(A_b) op(B_b), MatMul's batches (any float type). */
static int mm_batched(const cuda_ctx *c, ir_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                      int64_t k, const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb,
                      int64_t sb, void *C, int64_t ldc, int64_t sc, int64_t nb,
                      const kernel_args *a, oc_err *err) {
    return gemm_typed(c, dt, true, ta, tb, m, n, k, 1.0f, A, lda, sa, B, ldb, sb, 0.0f, C, ldc, sc,
                      nb, a, err);
}

/* MatMul and its gradients: see cpu_matmul. Float, or all three tensors of
 * one half type (cuda_native_half). */
int cuda_matmul(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *l = kernel_in(a, 0), *r = kernel_in(a, 1);
    ir_dtype dt = l->dtype;
    if ((dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(dt)) || r->dtype != dt ||
        kernel_out(a, 0)->dtype != dt)
        return kernel_fail(a, err, "takes float, float16 or bfloat16 tensors, all of one type");
    int64_t last = l->dims[l->rank - 1], rows = kernel_numel(l) / (last ? last : 1);
    if (op_args_of(a->n)->matmul.batched) {
        int64_t M = l->dims[l->rank - 2], Kl = last, Kr = r->dims[r->rank - 2],
                Nr = r->dims[r->rank - 1], nb = M * Kl != 0 ? kernel_numel(l) / (M * Kl) : 0;
        if (a->n->op == OP_MATMUL)
            return mm_batched(c, dt, false, false, M, Nr, Kl, a->in[0], Kl, M * Kl, a->in[1], Nr,
                              Kr * Nr, a->out[0], Nr, M * Nr, nb, a, err);
        if (a->n->op == OP_MATMUL_GRAD_A)
            return mm_batched(c, dt, false, true, M, Kr, Nr, a->in[0], Kl, M * Kl, a->in[1], Nr,
                              Kr * Nr, a->out[0], Kr, M * Kr, nb, a, err);
        return mm_batched(c, dt, true, false, Kl, Nr, M, a->in[0], Kl, M * Kl, a->in[1], Nr, M * Nr,
                          a->out[0], Nr, Kl * Nr, nb, a, err);
    }
    if (a->n->op == OP_MATMUL)
        return gemm_rm(c, dt, false, false, rows, r->dims[1], r->dims[0], a->in[0], r->dims[0],
                       a->in[1], r->dims[1], a->out[0], r->dims[1], a, err);
    if (a->n->op == OP_MATMUL_GRAD_A)
        return gemm_rm(c, dt, false, true, rows, r->dims[0], r->dims[1], a->in[0], r->dims[1],
                       a->in[1], r->dims[1], a->out[0], r->dims[0], a, err);
    int64_t K = last, N = r->dims[r->rank - 1];
    return gemm_rm(c, dt, true, false, K, N, rows, a->in[0], K, a->in[1], N, a->out[0], N, a, err);
}

/* Linear (cpu_linear): one GEMM reading W in place (transposed when trans_w);
 * a bias is written to Y first (cu_rows_fill) and added by the GEMM (beta 1),
 * so no pass over Y follows. Float, or every tensor of one half type. */
int cuda_linear(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *w = kernel_in(a, 1), *b = kernel_in(a, 2);
    ir_dtype dt = x->dtype;
    if ((dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(dt)) || w->dtype != dt ||
        kernel_out(a, 0)->dtype != dt || (b && b->dtype != dt))
        return kernel_fail(a, err, "takes float, float16 or bfloat16 tensors, all of one type");
    const op_linear_args *p = &op_args_of(a->n)->linear;
    int64_t K = x->dims[x->rank - 1], N = p->trans_w ? w->dims[0] : w->dims[1], rows = 1;
    for (int d = 0; d + 1 < x->rank; d++) rows *= x->dims[d];
    if (p->bias && rows > 0 && N > 0)
        CU_LAUNCH(cu_rows_fill(c->stream, a->in[2], cuda_float_kind(dt), a->out[0], rows, N));
    return gemm_typed(c, dt, false, false, p->trans_w, rows, N, K, 1.0f, a->in[0], K, 0, a->in[1],
                      p->trans_w ? K : N, 0, p->bias ? 1.0f : 0.0f, a->out[0], N, 0, 1, a, err);
}

/* ---- FusedAttention (cpu_attention.c): batched cuBLAS GEMMs over chunks of
 * batches whose [T, S] scores fit the scratch, row kernels for the softmax.
 * A causal node (op_attention_args.causal) runs by blocks of B rows: row block
 * i's scores against columns [0, (i + 1) B) alone, the blocks above the
 * diagonal (masked, their probabilities exactly 0) neither computed nor read;
 * the gradients' column blocks sum over the rows at and below them. ---- */

/* The scores' scratch by default: room for ATT_CHUNK_WANT batches a chunk,
 * within [ATT_SCRATCH_MIN_MIB, ATT_SCRATCH_MAX_MIB]. A chunk's GEMMs fill the
 * GPU only with many batches (a causal block's row products are one
 * [128, 64] tile a batch): on an H200, GPT-2 small b16 ran FusedAttention and
 * its gradient in 112.6 ms a step in chunks of 32 (256 MiB), in 65.1 ms in
 * one chunk of all 192 (1.5 GiB); ViT-B/16 b256's, 93.8 ms in chunks of 864
 * (256 MiB), 91.6 ms in one of 3072 (1 GiB): left at 256 MiB. */
#define ATT_CHUNK_WANT 192
#define ATT_SCRATCH_MIN_MIB 256
#define ATT_SCRATCH_MAX_MIB 1536

/* A positive integer from the environment, or 0: OC_ATTENTION_CHUNK=K forces
 * K batches a chunk, OC_ATTENTION_BLOCK=B causal blocks of B rows (the tests'
 * way to run several chunks and blocks on small models; 0: whole rows, the
 * blocks above the diagonal computed too, gpu-check's comparison),
 * OC_ATTENTION_SCRATCH_MIB=M the scores' scratch (default: see ATT_CHUNK_WANT),
 * OC_ATTENTION_DKV_ROWS=1 or 0 a causal dV and dK by row blocks or by column
 * blocks (default: rows when a chunk holds fewer than ATT_CHUNK_WANT; gpu-check's
 * attention sweep compares them on the GPU). */
static int64_t env_count(const char *name) {
    const char *e = getenv(name);
    long long k = e ? strtoll(e, NULL, 10) : 0;
    return k > 0 ? (int64_t)k : 0;
}

/* The op's geometry (op_attention_geometry), the batches a chunk holds and
 * the blocks its rows run by. A chunk fits `limit` bytes of scratch (a plan's
 * workspace for the node, SIZE_MAX without one) where one batch does: a plan
 * made with a profile of a smaller scratch (another version, another
 * OC_ATTENTION_SCRATCH_MIB) runs in smaller chunks inside its workspace. */
typedef struct att_dims {
    op_attention_geom a;
    int64_t chunk;
    int64_t blk;        /* causal: rows a block; 0: whole rows */
    int64_t nblk;       /* blocks of rows (1 unless causal) */
    int64_t bt;         /* what the GEMMs' dims are cut by: blk, or max(T, S) */
    bool dkv_rows;      /* blocked dV, dK: by row blocks, each adding to the columns up to
                           its end (else by column blocks, over the rows from the diagonal) */
    const float **ptrs; /* blocked seq_first GEMMs' pointer arrays (scratch), 3 nblk chunk */
} att_dims;

static att_dims att_dims_of(const ir_graph *g, const ir_node *n, size_t limit) {
    att_dims d = {0};
    op_attention_geometry(g, n, &d.a);
    size_t per = 2 * (size_t)d.a.T * (size_t)d.a.S * sizeof(float);
    size_t want = per * (size_t)(d.a.nb < ATT_CHUNK_WANT ? d.a.nb : ATT_CHUNK_WANT),
           lo = (size_t)ATT_SCRATCH_MIN_MIB << 20, hi = (size_t)ATT_SCRATCH_MAX_MIB << 20;
    size_t bytes = want < lo ? lo : want > hi ? hi : want;
    if (env_count("OC_ATTENTION_SCRATCH_MIB"))
        bytes = (size_t)env_count("OC_ATTENTION_SCRATCH_MIB") << 20;
    d.chunk = per ? (int64_t)(bytes / per) : d.a.nb;
    if (env_count("OC_ATTENTION_CHUNK")) d.chunk = env_count("OC_ATTENTION_CHUNK");
    if (d.chunk < 1) d.chunk = 1;
    if (d.chunk > d.a.nb) d.chunk = d.a.nb;
    if (op_args_of(n)->attention.causal && d.a.dh > 0 && d.a.dv > 0) { /* no empty products */
        d.blk = getenv("OC_ATTENTION_BLOCK") ? env_count("OC_ATTENTION_BLOCK") : OP_ATTENTION_BLOCK;
        d.nblk = d.blk ? (d.a.T + d.blk - 1) / d.blk : 1;
    }
    if (d.nblk < 1) d.nblk = 1;
    size_t ptrs = d.a.H || d.nblk > 1 ? 3 * (size_t)d.nblk * sizeof(float *) : 0;
    if (per && limit < (per + ptrs) * (size_t)d.chunk && limit / (per + ptrs) >= 1)
        d.chunk = (int64_t)(limit / (per + ptrs));
    if (d.blk) {
        /* column blocks hold one [blk, dv] tile a batch: with few batches a
         * chunk, rows (H200, GPT-2 in chunks of 32: FusedAttentionGrad 65.4
         * ms a step by rows, 79.0 by columns; in one chunk of 192: 45.2, 43.3) */
        const char *e = getenv("OC_ATTENTION_DKV_ROWS");
        d.dkv_rows = e ? env_count("OC_ATTENTION_DKV_ROWS") > 0
                       : d.chunk < ATT_CHUNK_WANT && d.chunk < d.a.nb;
    }
    d.bt = d.blk ? d.blk : d.a.T > d.a.S ? d.a.T : d.a.S;
    return d;
}

/* Bytes of the scores' two buffers, then (blocked) the pointer arrays. */
static size_t att_ptrs_at(const att_dims *d) {
    return 2 * (size_t)(d->chunk * d->a.T * d->a.S) * sizeof(float);
}

/* Through the batched GEMMs over chunks of scores (below) by default; by rows
 * (cuda_attention.cu: no [T, S] scratch, the gradient's rowsum(dY Y) alone) only with
 * OC_ATTENTION_KERNEL=rows and heads that fit its registers (OP_ATTENTION_ROWS_DMAX): on an
 * H200 (docs/gpu-check-2026-11-28-h200.txt) GPT-2's FusedAttentionGrad took 281.2 ms a step
 * by rows, 43.2 ms through the GEMMs (ViT-B/16: 355.7, 60.8). */
static bool att_by_rows(const op_attention_geom *a) {
    const char *e = getenv("OC_ATTENTION_KERNEL");
    return e && strcmp(e, "rows") == 0 && a->dh > 0 && a->dv > 0 &&
           a->dh <= OP_ATTENTION_ROWS_DMAX && a->dv <= OP_ATTENTION_ROWS_DMAX;
}

/* The row kernels' gradient workspace: rowsum(dY Y), a float a row. */
static size_t att_rows_dsum_bytes(const op_attention_geom *a) {
    return (size_t)(a->nb * a->T) * sizeof(float);
}

size_t cuda_attention_scratch(const ir_graph *g, const ir_node *n, size_t limit) {
    op_attention_geom a;
    op_attention_geometry(g, n, &a);
    if (att_by_rows(&a)) return n->op == OP_FUSED_ATTENTION_GRAD ? att_rows_dsum_bytes(&a) : 0;
    att_dims d = att_dims_of(g, n, limit);
    size_t ptrs = d.a.H || d.nblk > 1 ? 3 * (size_t)(d.nblk * d.chunk) * sizeof(float *) : 0;
    return att_ptrs_at(&d) + ptrs;
}

static cu_att_mask att_mask(const kernel_args *a, int at, const att_dims *d) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    const ir_tensor *c = kernel_in(a, at + 3);
    cu_att_mask m = {.cond = p->mask && c ? a->in[at + 3] : NULL,
                     .mode = p->mask,
                     .causal = p->causal,
                     .blk = d->blk,
                     .fill = p->fill,
                     .rank = d->a.rank};
    int64_t od[IR_MAX_RANK]; /* the logical scores [b.., T, S] */
    memcpy(od, d->a.bdims, sizeof od);
    od[m.rank - 2] = d->a.T, od[m.rank - 1] = d->a.S;
    for (int i = 0; i + 2 < m.rank; i++) m.bdims[i] = od[i];
    if (m.cond) { /* the condition's strides, right-aligned, 0 where it broadcasts */
        int64_t acc = 1;
        for (int i = m.rank - 1; i >= 0; i--) {
            int ci = i - (m.rank - c->rank);
            int64_t dim = ci >= 0 ? c->dims[ci] : 1;
            m.cs[i] = ci >= 0 && dim == od[i] && dim != 1 ? acc : 0;
            if (ci >= 0) acc *= dim;
        }
    }
    return m;
}

/* A GEMM operand of batch b: a tensor's [rows, cols] block (contiguous blocks,
 * or seq_first: head h of image n, rows `width` elements apart) or the chunk's
 * scratch (scratch: blocks from the chunk's first batch, contiguous); for
 * block i of a blocked GEMM it starts i bt rows down (rs) and i bt columns
 * right (cs). */
typedef struct att_opnd {
    const float *base;
    int64_t rows, cols, width;
    bool scratch;
    int rs, cs;
} att_opnd;

static int64_t opnd_ld(const att_dims *d, const att_opnd *o) {
    return o->scratch || !d->a.H ? o->cols : o->width;
}
static int64_t opnd_step(const att_dims *d, const att_opnd *o) {
    return d->bt * (o->rs * opnd_ld(d, o) + o->cs);
}

static const float *opnd_at(const att_dims *d, const att_opnd *o, int64_t b, int64_t b0,
                            int64_t *ld, int64_t *stride) {
    *ld = opnd_ld(d, o);
    if (o->scratch || !d->a.H) {
        *stride = o->rows * o->cols;
        return o->base + (o->scratch ? b - b0 : b) * o->rows * o->cols;
    }
    *stride = o->cols;
    return o->base + (b / d->a.H) * o->rows * o->width + (b % d->a.H) * o->cols;
}

/* A GEMM's M, N or K: a count, or what block i of the rows cuts it to. */
enum {
    ATT_ROWS = -1, /* the block's rows */
    ATT_COLS = -2, /* the block's columns (of S) */
    ATT_UPTO = -3, /* the columns up to the block's end */
    ATT_FROM = -4, /* the rows from the block's start */
};
static int64_t att_dim(const att_dims *d, int64_t v, int64_t i) {
    int64_t lo = i * d->bt, T = d->a.T, S = d->a.S;
    switch (v) {
    case ATT_ROWS: return T - lo < d->bt ? T - lo : d->bt;
    case ATT_COLS: return S - lo < d->bt ? S - lo : d->bt;
    case ATT_UPTO: return lo + d->bt < S ? lo + d->bt : S;
    case ATT_FROM: return T - lo;
    default: return v;
    }
}

/* Row-major C_b = alpha op(A_b) op(B_b) + beta C_b for the nb pointers of
 * each array (device memory). */
static int gemm_rm_ptrs(const cuda_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        float alpha, const float **A, int64_t lda, const float **B, int64_t ldb,
                        float beta, const float **C, int64_t ldc, int64_t nb, const kernel_args *a,
                        oc_err *err) {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX || nb > INT_MAX)
        return kernel_fail(a, err, "dims exceed cuBLAS's int range");
    if (m == 0 || n == 0 || nb == 0) return OC_OK;
    if (k == 0) return kernel_fail(a, err, "a blocked product of length 0"); /* att_dims_of: none */
    CUBLAS_CHECK(cublasSetStream(c->im->blas, c->stream));
    CUBLAS_CHECK(cublasSgemmBatched(
        c->im->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m,
        (int)k, &alpha, B, (int)ldb, A, (int)lda, &beta, (float *const *)C, (int)ldc, (int)nb));
    return OC_OK;
}

/* Block j of a blocked GEMM's order: the blocks in order, or (acc) from the
 * last to the first, the last writing C and the others adding to it. */
static int64_t att_block(const att_dims *d, bool acc, int64_t j, float *beta) {
    *beta = acc && j > 0 ? 1.0f : 0.0f;
    return acc ? d->nblk - 1 - j : j;
}

/* A seq_first GEMM over a chunk of several images, or blocked: one kernel
 * writes every block's pointers, then one cublasSgemmBatched a block covers
 * the chunk's batches (a strided batch cannot: a batch's head and image
 * stride differently; one strided call per image was 72 calls a GEMM a chunk
 * for ViT-B/16's 864 batch-heads of 197 x 197 scores, launch-bound). */
static int att_gemm_ptrs(const cuda_ctx *c, const kernel_args *a, const att_dims *d, int64_t b0,
                         int64_t cb, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const att_opnd *o[3], bool acc, oc_err *err) {
    cu_att_ptrs p;
    for (int k = 0; k < 3; k++) {
        bool heads = !o[k]->scratch;
        p.base[k] = o[k]->base, p.first[k] = o[k]->scratch ? b0 : 0;
        p.h[k] = heads ? d->a.H : 1;
        p.s1[k] = heads ? o[k]->rows * o[k]->width : o[k]->rows * o[k]->cols;
        p.s2[k] = heads ? o[k]->cols : 0;
        p.step[k] = opnd_step(d, o[k]);
    }
    CU_LAUNCH(cu_att_ptrs_fill(c->stream, d->ptrs, d->nblk, cb, b0, p));
    for (int64_t j = 0; j < d->nblk; j++) {
        float beta;
        int64_t i = att_block(d, acc, j, &beta);
        const float **at = d->ptrs + i * 3 * cb;
        if (gemm_rm_ptrs(c, ta, tb, att_dim(d, M, i), att_dim(d, N, i), att_dim(d, K, i), alpha, at,
                         opnd_ld(d, o[0]), at + cb, opnd_ld(d, o[1]), beta, at + 2 * cb,
                         opnd_ld(d, o[2]), cb, a, err))
            return OC_ERR;
    }
    return OC_OK;
}

/* C_b = alpha op(A_b) op(B_b) for the chunk's batches [b0, b0 + cb), M, N
 * and K counts or ATT_* cuts, block by block (acc: see att_block): one
 * strided-batched GEMM, or (seq_first, within one image) one strided-batched
 * GEMM over its heads, or (seq_first, several images or blocked)
 * att_gemm_ptrs. */
static int att_gemm_blocks(const cuda_ctx *c, const kernel_args *a, const att_dims *d, int64_t b0,
                           int64_t cb, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                           float alpha, att_opnd A, att_opnd B, att_opnd C, bool acc, oc_err *err) {
    if (d->a.H && (d->nblk > 1 || b0 / d->a.H != (b0 + cb - 1) / d->a.H)) {
        const att_opnd *o[3] = {&A, &B, &C};
        return att_gemm_ptrs(c, a, d, b0, cb, ta, tb, M, N, K, alpha, o, acc, err);
    }
    for (int64_t j = 0; j < d->nblk; j++) {
        float beta;
        int64_t i = att_block(d, acc, j, &beta);
        int64_t m = att_dim(d, M, i), n = att_dim(d, N, i), k = att_dim(d, K, i);
        for (int64_t b = b0; b < b0 + cb;) {
            int64_t run = d->a.H ? (b / d->a.H + 1) * d->a.H - b : cb;
            if (run > b0 + cb - b) run = b0 + cb - b;
            int64_t la, sa, lb, sb, lc, sc;
            const float *pa = opnd_at(d, &A, b, b0, &la, &sa) + i * opnd_step(d, &A),
                        *pb = opnd_at(d, &B, b, b0, &lb, &sb) + i * opnd_step(d, &B);
            float *pc = (float *)opnd_at(d, &C, b, b0, &lc, &sc) + i * opnd_step(d, &C);
            if (gemm_rm_batched(c, ta, tb, m, n, k, alpha, pa, la, sa, pb, lb, sb, beta, pc, lc, sc,
                                run, a, err))
                return OC_ERR;
            b += run;
        }
    }
    return OC_OK;
}
static int att_gemm(const cuda_ctx *c, const kernel_args *a, const att_dims *d, int64_t b0,
                    int64_t cb, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                    att_opnd A, att_opnd B, att_opnd C, oc_err *err) {
    return att_gemm_blocks(c, a, d, b0, cb, ta, tb, M, N, K, alpha, A, B, C, false, err);
}

/* A tensor operand (width: elements a row of it, when seq_first) or a scratch
 * one; moved(o, rs, cs): o as block i's moves it (rows down, columns right). */
static att_opnd tensor_opnd(const void *p, int64_t rows, int64_t cols, int64_t width) {
    return (att_opnd){(const float *)p, rows, cols, width, false, 0, 0};
}
static att_opnd scratch_opnd(const float *p, int64_t rows, int64_t cols) {
    return (att_opnd){p, rows, cols, cols, true, 0, 0};
}
static att_opnd moved(att_opnd o, int rs, int cs) {
    o.rs = rs, o.cs = cs;
    return o;
}

/* s = scale Q Kᵀ for batches [b0, b0 + cb), then the masked softmax. */
static int att_scores(const cuda_ctx *c, const kernel_args *a, int at, const att_dims *d,
                      int64_t b0, int64_t cb, float *s, const float *lse_in, float *lse_out,
                      oc_err *err) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    att_opnd Q = moved(tensor_opnd(a->in[at], d->a.T, d->a.dh, d->a.wq), 1, 0),
             S = moved(scratch_opnd(s, d->a.T, d->a.S), 1, 0);
    const float *K = (const float *)a->in[at + 1] + d->a.koff;
    int rc = p->k_transposed
                 ? att_gemm(c, a, d, b0, cb, false, false, ATT_ROWS, ATT_UPTO, d->a.dh, p->scale, Q,
                            tensor_opnd(K, d->a.dh, d->a.S, 0), S, err)
                 : att_gemm(c, a, d, b0, cb, false, true, ATT_ROWS, ATT_UPTO, d->a.dh, p->scale, Q,
                            tensor_opnd(K, d->a.S, d->a.dh, d->a.wq), S, err);
    if (rc) return rc;
    CU_LAUNCH(cu_att_softmax(c->stream, s, cb * d->a.T, d->a.T, d->a.S, b0, att_mask(a, at, d),
                             lse_in ? lse_in + b0 * d->a.T : NULL,
                             lse_out ? lse_out + b0 * d->a.T : NULL));
    return OC_OK;
}

/* The row kernels' arguments for a node of geometry ge whose Q sits at input `at`. */
static cu_att_rows att_rows_of(const cuda_ctx *c, const kernel_args *a, int at,
                               const op_attention_geom *ge) {
    const op_attention_args *p = &op_args_of(a->n)->attention;
    att_dims d = {.a = *ge}; /* blk 0: att_mask's rows are whole */
    return (cu_att_rows){.q = a->in[at],
                         .k = (const float *)a->in[at + 1] + d.a.koff,
                         .v = (const float *)a->in[at + 2] + d.a.voff,
                         .nb = d.a.nb,
                         .T = d.a.T,
                         .S = d.a.S,
                         .dh = d.a.dh,
                         .dv = d.a.dv,
                         .H = d.a.H,
                         .wq = d.a.wq,
                         .wv = d.a.wv,
                         .wy = d.a.wy,
                         .kt = p->k_transposed,
                         .scale = p->scale,
                         .ratio = p->dropout_ratio,
                         .m = att_mask(a, at, &d),
                         .key = {cpu_rng_seeded(a->seed), p->dropout_key_hash, c->im->step_dev}};
}

int cuda_fused_attention(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    op_attention_geom ge;
    op_attention_geometry(a->g, a->n, &ge);
    if (att_by_rows(&ge)) {
        cu_att_rows r = att_rows_of(c, a, 0, &ge);
        CU_LAUNCH(cu_att_rows_fwd(c->stream, &r, a->out[0], a->out[1]));
        return OC_OK;
    }
    const op_attention_args *p = &op_args_of(a->n)->attention;
    att_dims d = att_dims_of(a->g, a->n, a->scratch_bytes);
    OC_ASSERT(a->scratch_bytes >= cuda_attention_scratch(a->g, a->n, a->scratch_bytes));
    float *s = a->scratch;
    d.ptrs = (const float **)((uint8_t *)a->scratch + att_ptrs_at(&d));
    cu_rng key = {cpu_rng_seeded(a->seed), p->dropout_key_hash, c->im->step_dev};
    int64_t T = d.a.T, S = d.a.S;
    att_opnd V = tensor_opnd((const float *)a->in[2] + d.a.voff, S, d.a.dv, d.a.wv),
             Y = moved(tensor_opnd(a->out[0], T, d.a.dv, d.a.wy), 1, 0);
    for (int64_t b0 = 0; b0 < d.a.nb; b0 += d.chunk) {
        int64_t cb = d.a.nb - b0 < d.chunk ? d.a.nb - b0 : d.chunk;
        if (att_scores(c, a, 0, &d, b0, cb, s, NULL, a->out[1], err)) return OC_ERR;
        if (p->dropout_ratio > 0.0f)
            CU_LAUNCH(cu_att_dropout(c->stream, s, s, cb * T, T, S, d.blk, key, p->dropout_ratio,
                                     b0 * T * S));
        if (att_gemm(c, a, &d, b0, cb, false, false, ATT_ROWS, d.a.dv, ATT_UPTO, 1.0f,
                     moved(scratch_opnd(s, T, S), 1, 0), V, Y, err))
            return OC_ERR;
    }
    return OC_OK;
}

int cuda_fused_attention_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 4; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_attention_args *p = &op_args_of(a->n)->attention;
    float *dQ = out_or_null(a, 0), *dK = out_or_null(a, 1), *dV = out_or_null(a, 2);
    op_attention_geom ge;
    op_attention_geometry(a->g, a->n, &ge);
    if (p->qkv_heads && dQ) /* one gradient, its column thirds */
        dK = dQ + ge.koff, dV = dQ + ge.voff;
    if (att_by_rows(&ge)) {
        OC_ASSERT(a->scratch_bytes >= att_rows_dsum_bytes(&ge));
        cu_att_rows r = att_rows_of(c, a, 1, &ge);
        CU_LAUNCH(
            cu_att_rows_grad(c->stream, &r, a->in[0], a->in[5], a->in[6], a->scratch, dQ, dK, dV));
        return OC_OK;
    }
    att_dims d = att_dims_of(a->g, a->n, a->scratch_bytes);
    OC_ASSERT(a->scratch_bytes >= cuda_attention_scratch(a->g, a->n, a->scratch_bytes));
    float *P = a->scratch, *dS = P + d.chunk * d.a.T * d.a.S;
    d.ptrs = (const float **)((uint8_t *)a->scratch + att_ptrs_at(&d));
    cu_rng key = {cpu_rng_seeded(a->seed), p->dropout_key_hash, c->im->step_dev};
    int64_t T = d.a.T, S = d.a.S, dh = d.a.dh, dv = d.a.dv;
    const float *K = (const float *)a->in[2] + d.a.koff;
    /* row block i: dY's and Q's rows, dS's rows; column block j: dS's rows
     * and columns from the diagonal, P's alike */
    att_opnd dY = moved(tensor_opnd(a->in[0], T, dv, d.a.wy), 1, 0),
             Q = moved(tensor_opnd(a->in[1], T, dh, d.a.wq), 1, 0),
             V = tensor_opnd((const float *)a->in[3] + d.a.voff, S, dv, d.a.wv),
             sP = scratch_opnd(P, T, S), sdS = scratch_opnd(dS, T, S);
    for (int64_t b0 = 0; b0 < d.a.nb; b0 += d.chunk) {
        int64_t cb = d.a.nb - b0 < d.chunk ? d.a.nb - b0 : d.chunk;
        if (att_scores(c, a, 1, &d, b0, cb, P, a->in[6], NULL, err)) return OC_ERR;
        if (dV) { /* dV = (P with dropout)ᵀ dY, by column blocks */
            att_opnd Pd = sP;
            if (p->dropout_ratio > 0.0f) {
                CU_LAUNCH(cu_att_dropout(c->stream, P, dS, cb * T, T, S, d.blk, key,
                                         p->dropout_ratio, b0 * T * S));
                Pd = sdS;
            }
            if (d.dkv_rows ? att_gemm_blocks(c, a, &d, b0, cb, true, false, ATT_UPTO, dv, ATT_ROWS,
                                             1.0f, moved(Pd, 1, 0), dY,
                                             tensor_opnd(dV, S, dv, d.a.wv), true, err)
                           : att_gemm(c, a, &d, b0, cb, true, false, ATT_COLS, dv, ATT_FROM, 1.0f,
                                      moved(Pd, 1, 1), dY,
                                      moved(tensor_opnd(dV, S, dv, d.a.wv), 1, 0), err))
                return OC_ERR;
        }
        if (!dQ && !dK) continue;
        if (att_gemm(c, a, &d, b0, cb, false, true, ATT_ROWS, ATT_UPTO, dv, 1.0f, dY, V,
                     moved(sdS, 1, 0), err))
            return OC_ERR;
        CU_LAUNCH(cu_att_ds(c->stream, dS, P, (const float *)a->in[0], (const float *)a->in[5],
                            cb * T, T, S, dv, d.a.H, b0, att_mask(a, 1, &d), key,
                            p->dropout_ratio));
        if (dQ &&
            (p->k_transposed ? att_gemm(c, a, &d, b0, cb, false, true, ATT_ROWS, dh, ATT_UPTO,
                                        p->scale, moved(sdS, 1, 0), tensor_opnd(K, dh, S, 0),
                                        moved(tensor_opnd(dQ, T, dh, 0), 1, 0), err)
                             : att_gemm(c, a, &d, b0, cb, false, false, ATT_ROWS, dh, ATT_UPTO,
                                        p->scale, moved(sdS, 1, 0), tensor_opnd(K, S, dh, d.a.wq),
                                        moved(tensor_opnd(dQ, T, dh, d.a.wq), 1, 0), err)))
            return OC_ERR;
        if (dK && d.dkv_rows &&
            (p->k_transposed
                 ? att_gemm_blocks(c, a, &d, b0, cb, true, false, dh, ATT_UPTO, ATT_ROWS, p->scale,
                                   Q, moved(sdS, 1, 0), tensor_opnd(dK, dh, S, 0), true, err)
                 : att_gemm_blocks(c, a, &d, b0, cb, true, false, ATT_UPTO, dh, ATT_ROWS, p->scale,
                                   moved(sdS, 1, 0), Q, tensor_opnd(dK, S, dh, d.a.wq), true, err)))
            return OC_ERR;
        if (dK && !d.dkv_rows &&
            (p->k_transposed
                 ? att_gemm(c, a, &d, b0, cb, true, false, dh, ATT_COLS, ATT_FROM, p->scale, Q,
                            moved(sdS, 1, 1), moved(tensor_opnd(dK, dh, S, 0), 0, 1), err)
                 : att_gemm(c, a, &d, b0, cb, true, false, ATT_COLS, dh, ATT_FROM, p->scale,
                            moved(sdS, 1, 1), Q, moved(tensor_opnd(dK, S, dh, d.a.wq), 1, 0), err)))
            return OC_ERR;
    }
    return OC_OK;
}

int cuda_gemm(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *ta_ = kernel_in(a, 0), *tb_ = kernel_in(a, 1), *tc = kernel_in(a, 2),
                    *ty = kernel_out(a, 0);
    ir_dtype dt = ta_->dtype;
    if ((dt != IR_DTYPE_FLOAT && !ir_dtype_is_half(dt)) || tb_->dtype != dt || ty->dtype != dt ||
        (tc && tc->dtype != dt))
        return kernel_fail(a, err, "takes float, float16 or bfloat16 tensors, all of one type");
    const op_gemm_args *p = &op_args_of(a->n)->gemm;
    bool ta = p->trans_a, tb = p->trans_b;
    int64_t M = ty->dims[0], N = ty->dims[1], K = ta ? ta_->dims[0] : ta_->dims[1];
    bool bias = tc && a->in[2] && p->beta != 0.0f;
    if (bias && dt != IR_DTYPE_FLOAT && p->beta != 1.0f) /* cuda_native_half: widened */
        return kernel_fail(a, err, "a half Gemm scales its C by beta %g (1 only)", p->beta);
    if (bias) {
        int64_t s[2] = {0, 0}, own1 = tc->rank == 2 ? tc->dims[1] : tc->rank == 1 ? tc->dims[0] : 1;
        /* numpy broadcast of C (rank <= 2) to (M, N) */
        if (tc->rank == 2) {
            s[0] = tc->dims[0] == 1 ? 0 : own1;
            s[1] = tc->dims[1] == 1 ? 0 : 1;
        } else if (tc->rank == 1) {
            s[1] = tc->dims[0] == 1 ? 0 : 1;
        }
        CU_LAUNCH(cu_gemm_bias(c->stream, a->in[2], cuda_float_kind(dt), s[0], s[1], p->beta,
                               a->out[0], M, N));
    }
    return gemm_typed(c, dt, false, ta, tb, M, N, K, p->alpha, a->in[0], ta_->dims[1], 0, a->in[1],
                      tb_->dims[1], 0, bias ? 1.0f : 0.0f, a->out[0], N, 0, 1, a, err);
}
