/* cuda_conv.c — the cuDNN kernels of the cuda backend's convolutions:
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
 *   Half tensors (--precision; cuda_native_half): bfloat16 / float16 descriptors and
 *   float32 compute (tensor-op math, the TF32 switch not applied), the bias by
 *   cu_channel_bias / cu_channel_sum. */
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
