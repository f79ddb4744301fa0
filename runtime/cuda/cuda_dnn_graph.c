/* cuda_dnn_graph.c — see cuda_dnn_graph.h. Every backend descriptor this file creates
 * belongs to the dnn_graph_conv it builds (or to the function that made it: the
 * heuristics, the configurations not kept, a run's variant pack) and is destroyed there. */
#include "cuda_dnn_graph.h"

#include <stdio.h>
#include <string.h>

#include "ir/common.h"

enum { UID_X = 1, UID_W = 2, UID_Y = 3, UID_B = 4, UID_CONV = 5, UID_ADD = 6 };
/* The heuristics' list is read up to this many configurations. */
#define MAX_CFGS 64

struct dnn_graph_conv {
    cudnnBackendDescriptor_t x, w, y, conv, op, graph;
    /* the epilogue: the bias, the virtual conv and add outputs, the pointwise ops */
    cudnnBackendDescriptor_t b, t_conv, t_add, pw_add, pw_relu, op_add, op_relu;
    bool has_bias;
    int n_plans;
    cudnnBackendDescriptor_t cfg[DNN_GRAPH_MAX_PLANS], plan[DNN_GRAPH_MAX_PLANS];
    int64_t ws[DNN_GRAPH_MAX_PLANS], engine[DNN_GRAPH_MAX_PLANS];
};

static void destroy(cudnnBackendDescriptor_t *d) {
    if (*d) (void)cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

void dnn_graph_conv_free(dnn_graph_conv *g) {
    if (!g) return;
    for (int i = 0; i < g->n_plans; i++) destroy(&g->plan[i]), destroy(&g->cfg[i]);
    destroy(&g->graph), destroy(&g->op), destroy(&g->conv);
    destroy(&g->op_add), destroy(&g->op_relu), destroy(&g->pw_add), destroy(&g->pw_relu);
    destroy(&g->t_conv), destroy(&g->t_add), destroy(&g->b);
    destroy(&g->x), destroy(&g->w), destroy(&g->y);
    oc_free(g);
}

/* A call's status into why (the first failure only); true when it succeeded. */
static bool ok(cudnnStatus_t st, const char *what, char *why, size_t len) {
    if (st == CUDNN_STATUS_SUCCESS) return true;
    if (!why[0]) snprintf(why, len, "%s: %s", what, cudnnGetErrorString(st));
    return false;
}

static cudnnStatus_t set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                         cudnnBackendAttributeType_t type, int64_t n, const void *v) {
    return cudnnBackendSetAttribute(d, name, type, n, v);
}

/* virt: an intermediate of the graph (no memory) */
static cudnnStatus_t make_tensor(cudnnBackendDescriptor_t *d, cudnnDataType_t dt, int rank,
                                 const int64_t *dim, const int64_t *str, int64_t uid, bool virt) {
    int64_t align = 16; /* arena offsets and cudaMalloc blocks are 256-byte aligned */
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d);
    if (!st && virt) st = set(*d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (!st) st = set(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    if (!st) st = set(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dim);
    if (!st) st = set(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, str);
    if (!st) st = set(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    if (!st) st = set(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (!st) st = cudnnBackendFinalize(*d);
    return st;
}

static cudnnStatus_t make_conv(cudnnBackendDescriptor_t *d, const dnn_conv_spec *s) {
    int64_t nsp = s->rank - 2;
    cudnnDataType_t ct = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, d);
    if (!st) st = set(*d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp);
    if (!st) st = set(*d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
    if (!st) st = set(*d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    if (!st) st = set(*d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, s->pad);
    if (!st) st = set(*d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp, s->pad);
    if (!st) st = set(*d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, s->dilation);
    if (!st) st = set(*d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp, s->stride);
    if (!st) st = cudnnBackendFinalize(*d);
    return st;
}

/* The operation of s->kind on g's tensors and convolution, alpha 1, beta 0. */
static cudnnStatus_t make_op(dnn_graph_conv *g, const dnn_conv_spec *s) {
    static const struct {
        cudnnBackendDescriptorType_t type;
        cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
    } K[] = {
        [DNN_CONV_FWD] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
        [DNN_CONV_BWD_DATA] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
        [DNN_CONV_BWD_FILTER] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
    };
    const float one = 1.0f, zero = 0.0f;
    cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(K[s->kind].type, &g->op);
    if (!st) st = set(g->op, K[s->kind].x, D, 1, &g->x);
    if (!st) st = set(g->op, K[s->kind].w, D, 1, &g->w);
    if (!st) st = set(g->op, K[s->kind].y, D, 1, g->t_conv ? &g->t_conv : &g->y);
    if (!st) st = set(g->op, K[s->kind].conv, D, 1, &g->conv);
    if (!st) st = set(g->op, K[s->kind].alpha, CUDNN_TYPE_FLOAT, 1, &one);
    if (!st) st = set(g->op, K[s->kind].beta, CUDNN_TYPE_FLOAT, 1, &zero);
    if (!st) st = cudnnBackendFinalize(g->op);
    return st;
}

/* One pointwise operation y = mode(x[, b]) into *pw, *op. */
static cudnnStatus_t make_pw(cudnnBackendDescriptor_t *pw, cudnnBackendDescriptor_t *op,
                             cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                             cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y) {
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw);
    if (!st) st = set(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    if (!st) st = set(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (!st) st = cudnnBackendFinalize(*pw);
    if (!st) st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op);
    if (!st) st = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, D, 1, pw);
    if (!st) st = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, D, 1, &x);
    if (!st && b) st = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, D, 1, &b);
    if (!st) st = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, D, 1, &y);
    if (!st) st = cudnnBackendFinalize(*op);
    return st;
}

/* The epilogue's tensors (before the convolution's operation, which writes t_conv). */
static cudnnStatus_t make_epilogue_tensors(dnn_graph_conv *g, const dnn_conv_spec *s) {
    /* (1, K, 1..), packed in y's dim order (NHWC y: strides K, 1, K, K, as cuDNN's own
     * samples and PyTorch give a bias: cuDNN reads size-1 dims' strides for the layout) */
    int64_t bd[5], bs[5], stride = 1;
    int order[5];
    for (int i = 0; i < s->rank; i++) bd[i] = i == 1 ? s->y_dim[1] : 1, order[i] = i;
    for (int i = 1; i < s->rank; i++) /* y's dims by stride, innermost last */
        for (int j = i; j > 0 && s->y_str[order[j]] > s->y_str[order[j - 1]]; j--) {
            int o = order[j];
            order[j] = order[j - 1], order[j - 1] = o;
        }
    for (int i = s->rank - 1; i >= 0; i--) bs[order[i]] = stride, stride *= bd[order[i]];
    cudnnStatus_t st =
        make_tensor(&g->t_conv, CUDNN_DATA_FLOAT, s->rank, s->y_dim, s->y_str, UID_CONV, true);
    if (!st && s->bias) st = make_tensor(&g->b, s->b_dt, s->rank, bd, bs, UID_B, false);
    if (!st && s->bias && s->relu)
        st = make_tensor(&g->t_add, CUDNN_DATA_FLOAT, s->rank, s->y_dim, s->y_str, UID_ADD, true);
    return st;
}

/* conv -> [+ bias] -> [relu] -> y. */
static cudnnStatus_t make_epilogue_ops(dnn_graph_conv *g, const dnn_conv_spec *s) {
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    if (s->bias)
        st = make_pw(&g->pw_add, &g->op_add, CUDNN_POINTWISE_ADD, g->t_conv, g->b,
                     s->relu ? g->t_add : g->y);
    if (!st && s->relu)
        st = make_pw(&g->pw_relu, &g->op_relu, CUDNN_POINTWISE_RELU_FWD,
                     s->bias ? g->t_add : g->t_conv, NULL, g->y);
    return st;
}

/* Why configurations were passed over, for the message when none is left. */
typedef struct cfg_tally {
    int offered, convert, tensor, nondet, refused, too_big;
} cfg_tally;

/* Whether cfg's engine may run under s's rules; *engine its global index. */
static bool cfg_allowed(cudnnBackendDescriptor_t cfg, const dnn_conv_spec *s, int64_t *engine,
                        cfg_tally *t) {
    cudnnBackendDescriptor_t eng = NULL;
    int64_t n = 0, n_notes = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    bool allowed =
        cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) == 0 &&
        cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &n, &eng) == 0 &&
        cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n_notes, notes) == 0;
    *engine = -1;
    if (allowed)
        (void)cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                       engine);
    else t->refused++;
    for (int64_t i = 0; allowed && i < n_notes && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++) {
        cudnnBackendNumericalNote_t note = notes[i];
        if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
            note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
            allowed = false, t->convert++;
        else if (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && !s->tensor_ok)
            allowed = false, t->tensor++;
        else if (note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && s->det_only)
            allowed = false, t->nondet++;
    }
    destroy(&eng);
    return allowed;
}

/* cfg finalized into g's next plan when it fits s->limit; false (nothing kept) otherwise. */
static bool plan_of(cudnnHandle_t h, dnn_graph_conv *g, cudnnBackendDescriptor_t cfg,
                    int64_t engine, const dnn_conv_spec *s, cfg_tally *t) {
    cudnnBackendDescriptor_t plan = NULL;
    int64_t n = 0, ws = 0;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
    if (!st) st = set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    if (!st)
        st = set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &cfg);
    if (!st) st = cudnnBackendFinalize(plan);
    if (!st)
        st = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                      CUDNN_TYPE_INT64, 1, &n, &ws);
    if (st || ws < 0) {
        t->refused++;
        destroy(&plan);
        return false;
    }
    if ((uint64_t)ws > s->limit) {
        t->too_big++;
        destroy(&plan);
        return false;
    }
    g->plan[g->n_plans] = plan;
    g->cfg[g->n_plans] = cfg;
    g->ws[g->n_plans] = ws;
    g->engine[g->n_plans++] = engine;
    return true;
}

/* The configurations heuristics mode `mode` lists for g's graph, each made into a plan while
 * they last. */
static cudnnStatus_t plans_of(cudnnHandle_t h, dnn_graph_conv *g, const dnn_conv_spec *s,
                              cudnnBackendHeurMode_t mode, int max_plans, cfg_tally *t) {
    cudnnBackendDescriptor_t heur = NULL, cfg[MAX_CFGS] = {NULL};
    int64_t n = 0, got = 0;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
    if (!st)
        st = set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &g->graph);
    if (!st) st = set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (!st) st = cudnnBackendFinalize(heur);
    if (!st)
        st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
    if (n > MAX_CFGS) n = MAX_CFGS;
    for (int64_t i = 0; !st && i < n; i++)
        st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]);
    if (!st && n > 0)
        st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfg);
    for (int64_t i = 0; !st && i < got && i < n && g->n_plans < max_plans; i++) {
        int64_t engine;
        t->offered++;
        if (cfg_allowed(cfg[i], s, &engine, t) && plan_of(h, g, cfg[i], engine, s, t))
            cfg[i] = NULL; /* the plan's now */
    }
    for (int64_t i = 0; i < n; i++) destroy(&cfg[i]);
    destroy(&heur);
    return st;
}

int dnn_graph_conv_build(cudnnHandle_t h, const dnn_conv_spec *s, int max_plans,
                         dnn_graph_conv **out, char *why, size_t why_len) {
    *out = NULL;
    why[0] = '\0';
    if (max_plans > DNN_GRAPH_MAX_PLANS) max_plans = DNN_GRAPH_MAX_PLANS;
    if (max_plans < 1) max_plans = 1;
    dnn_graph_conv *g = oc_calloc(1, sizeof *g);
    cfg_tally t = {0};
    bool epi = s->kind == DNN_CONV_FWD && (s->bias || s->relu);
    g->has_bias = epi && s->bias;
    bool good = ok(make_tensor(&g->x, s->dt, s->rank, s->x_dim, s->x_str, UID_X, false), "tensor x",
                   why, why_len) &&
                ok(make_tensor(&g->w, s->dt, s->rank, s->w_dim, s->w_str, UID_W, false), "tensor w",
                   why, why_len) &&
                ok(make_tensor(&g->y, s->dt, s->rank, s->y_dim, s->y_str, UID_Y, false), "tensor y",
                   why, why_len) &&
                (!epi || ok(make_epilogue_tensors(g, s), "epilogue tensors", why, why_len)) &&
                ok(make_conv(&g->conv, s), "convolution descriptor", why, why_len) &&
                ok(make_op(g, s), "convolution operation", why, why_len) &&
                (!epi || ok(make_epilogue_ops(g, s), "epilogue operations", why, why_len));
    if (good) {
        cudnnBackendDescriptor_t ops[3] = {g->op, NULL, NULL};
        int64_t n_ops = 1;
        if (g->op_add) ops[n_ops++] = g->op_add;
        if (g->op_relu) ops[n_ops++] = g->op_relu;
        cudnnStatus_t st =
            cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph);
        if (!st)
            st = set(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n_ops,
                     ops);
        if (!st) st = set(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        if (!st) st = cudnnBackendFinalize(g->graph);
        good = ok(st, "operation graph", why, why_len);
        /* mode A failing or none of its usable: the fallback list (functional engines), as
         * PyTorch and cudnn-frontend do; the fallback's failure is the one reported */
        if (good && (plans_of(h, g, s, CUDNN_HEUR_MODE_A, max_plans, &t) || g->n_plans == 0))
            good = ok(plans_of(h, g, s, CUDNN_HEUR_MODE_FALLBACK, max_plans, &t),
                      "fallback heuristics", why, why_len);
    }
    if (good && g->n_plans == 0) {
        snprintf(why, why_len,
                 "none of the heuristics' %d engine configurations is usable (%d down-convert or "
                 "reduce in half, %d tensor-core with TF32 off, %d nondeterministic, %d refused "
                 "by cuDNN, %d over the workspace limit of %zu bytes)",
                 t.offered, t.convert, t.tensor, t.nondet, t.refused, t.too_big, s->limit);
        good = false;
    }
    if (!good) {
        dnn_graph_conv_free(g);
        return OC_ERR;
    }
    *out = g;
    return OC_OK;
}

int dnn_graph_conv_plans(const dnn_graph_conv *g) { return g->n_plans; }
size_t dnn_graph_conv_workspace(const dnn_graph_conv *g, int i) { return (size_t)g->ws[i]; }
int64_t dnn_graph_conv_engine(const dnn_graph_conv *g, int i) { return g->engine[i]; }

cudnnStatus_t dnn_graph_conv_run(cudnnHandle_t h, const dnn_graph_conv *g, int i, void *x, void *w,
                                 void *y, const void *b, void *ws) {
    void *ptr[4] = {x, w, y, (void *)b};
    int64_t uid[4] = {UID_X, UID_W, UID_Y, UID_B}, n = g->has_bias ? 4 : 3;
    cudnnBackendDescriptor_t vp = NULL;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    if (!st) st = set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptr);
    if (!st) st = set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uid);
    if (!st) st = set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (!st) st = cudnnBackendFinalize(vp);
    if (!st) st = cudnnBackendExecute(h, g->plan[i], vp);
    destroy(&vp);
    return st;
}
