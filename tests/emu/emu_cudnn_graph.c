/* emu_cudnn_graph.c — the CUDA emulator's cuDNN graph (backend) API
 * (tests/emu/include/cudnn.h): operation graphs of one convolution, a forward one
 * optionally followed by a bias ADD and a RELU_FWD on virtual intermediates (float
 * data only), as runtime/cuda/cuda_dnn_graph.c builds them, executed by the
 * emulator's legacy calls (emu_cudnn.c: the convolution, cudnnAddTensor,
 * cudnnActivationForward).
 *
 * Checked as cuDNN checks (BAD_PARAM / NOT_SUPPORTED, the reason on stderr as
 * "emu cudnn: <call>: ..."):
 *  - SetAttribute: a descriptor made by cudnnBackendCreateDescriptor, not yet
 *    finalized;
an attribute of its type, with its attribute type and an element *count in range;
*-Finalize : every required attribute set;
tensors of 3 to 8 dims, strides as *many, positive, a unique id, a power - of - two alignment,
    float / half / *bfloat16 data;
a convolution's paddings, strides and dilations as many as its *spatial dims, float compute; an operation's tensors and convolution finalized,
 *    distinct ids, one data type, y = the convolution's output of x and w (groups =
  *    x's channels / w's), w packed KCRS or KRSC;
a pointwise ADD with a bias of *(1, K, 1..), a RELU_FWD without one;
a graph of one convolution whose *pointwise operations chain from its output(conv->ADD->RELU),
    every *intermediate virtual and the last output not, and a handle;
a plan of a *configuration the heuristics returned;
*-GetAttribute : the heuristics' results into ENGINECFG descriptors the caller *created(
                     count first with 0 requested),
    a configuration's engine into an *ENGINE descriptor,
    an engine 's notes and index, a plan' s workspace;
 *  - Execute: a finalized plan and variant pack, a pointer for every tensor id of
 *    the graph, a workspace pointer when the plan needs one (the legacy call then
 *    checks every extent and fills the workspace with NaN bytes).
 *
 * Fake engines (the heuristics' order), exercising a caller's filters:
 *   0  refused when its plan is finalized (NOT_SUPPORTED),
 *   1  tensor cores, down-converts its inputs,
 *   2  tensor cores; nondeterministic for the backward kinds,
 *   3  tensor cores (tensor-op math: a workspace 256 bytes larger),
 *   4  no notes, the zero-workspace algorithm where there is one;
 * the fallback mode (CUDNN_HEUR_MODE_FALLBACK) lists engine 4 alone.
 * Each runs one legacy algorithm; the emulator's convolutions sum in double in a
 * fixed order, so every engine gives the legacy calls' bits. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn.h"
#include "emu_cudnn_fail.h"

#define MAGIC 0x67726170u /* "grap" */
#define MAX_ATTRS 16
#define MAX_ELEMS 64

typedef struct battr {
    cudnnBackendAttributeName_t name;
    cudnnBackendAttributeType_t type;
    int64_t n;
    unsigned char data[MAX_ELEMS * 8];
} battr;

enum { K_FWD, K_BWD_DATA, K_BWD_FILTER };

typedef struct bdesc bdesc;
struct bdesc {
    unsigned magic;
    cudnnBackendDescriptorType_t type;
    bool final;
    int n_attr;
    battr attr[MAX_ATTRS];
    /* ENGINECFG / ENGINE: the fake engine, the operation graph it is for */
    int engine;
    bdesc *graph;
    /* EXECUTION_PLAN: the legacy call it makes, with its own descriptors */
    int kind, algo;
    size_t ws;
    int64_t uid[3]; /* x, w, y */
    float alpha, beta;
    int64_t bias_uid; /* the epilogue: 0 none */
    bool relu;
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnActivationDescriptor_t act;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
};

static bdesc *as_desc(cudnnBackendDescriptor_t d) {
    bdesc *b = (bdesc *)d;
    return b && b->magic == MAGIC ? b : NULL;
}

/* ---- which attributes each descriptor takes ---- */

typedef struct rule {
    cudnnBackendDescriptorType_t desc;
    cudnnBackendAttributeName_t name;
    cudnnBackendAttributeType_t type; /* FLOAT also admits DOUBLE (alpha, beta) */
    int64_t lo, hi;
    bool required;
} rule;

#define OPD(T, A, B, C, D, AL, BE)                                                                 \
    {T, A, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},                                             \
        {T, B, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},                                         \
        {T, C, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},                                         \
        {T, D, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true}, {T, AL, CUDNN_TYPE_FLOAT, 1, 1, true},  \
    {                                                                                              \
        T, BE, CUDNN_TYPE_FLOAT, 1, 1, true                                                        \
    }
static const rule RULES[] = {
    {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, 1,
     true},
    {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 1, 8, true},
    {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 1, 8, true},
    {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, 1, true},
    {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, 1,
     true},
    {CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, 1,
     false},
    {CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, 1,
     true},
    {CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, 1,
     true},
    {CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},
    {CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},
    {CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, false},
    {CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},
    {CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
     1, 1, true},
    {CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
     CUDNN_TYPE_CONVOLUTION_MODE, 1, 1, true},
    {CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1,
     1, true},
    {CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 1,
     6, true},
    {CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
     1, 6, true},
    {CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 1, 6,
     true},
    {CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64,
     1, 6, true},
    OPD(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA),
    OPD(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA),
    OPD(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA),
    {CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_ATTR_OPERATIONGRAPH_OPS,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, MAX_ELEMS, true},
    {CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE,
     1, 1, true},
    {CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},
    {CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, 1,
     true},
    {CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
     1, 1, true},
    {CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, true},
    {CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
     CUDNN_TYPE_VOID_PTR, 1, MAX_ELEMS, true},
    {CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 1,
     MAX_ELEMS, true},
    {CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
     1, 1, false},
};
#undef OPD
enum { N_RULES = sizeof RULES / sizeof RULES[0] };

static size_t type_size(cudnnBackendAttributeType_t t) {
    switch (t) {
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE: return 8;
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void *);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    default: return sizeof(int); /* enums */
    }
}

static const battr *find(const bdesc *b, cudnnBackendAttributeName_t name) {
    for (int i = 0; i < b->n_attr; i++)
        if (b->attr[i].name == name) return &b->attr[i];
    return NULL;
}
static int64_t i64(const bdesc *b, cudnnBackendAttributeName_t name, int k) {
    int64_t v;
    memcpy(&v, find(b, name)->data + 8 * k, 8);
    return v;
}
static int enum_of(const bdesc *b, cudnnBackendAttributeName_t name) {
    int v;
    memcpy(&v, find(b, name)->data, sizeof v);
    return v;
}
static void *ptr_of(const bdesc *b, cudnnBackendAttributeName_t name, int k) {
    void *v;
    memcpy(&v, find(b, name)->data + sizeof(void *) * (size_t)k, sizeof v);
    return v;
}
static double scalar_of(const bdesc *b, cudnnBackendAttributeName_t name) {
    const battr *a = find(b, name);
    if (a->type == CUDNN_TYPE_DOUBLE) {
        double d;
        memcpy(&d, a->data, sizeof d);
        return d;
    }
    float f;
    memcpy(&f, a->data, sizeof f);
    return f;
}

static bool is_virtual(const bdesc *t) {
    const battr *a = find(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
    bool v = false;
    if (a) memcpy(&v, a->data, sizeof v);
    return v;
}

/* ---- create, destroy, set ---- */

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *d) {
    if (!d)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendCreateDescriptor",
                              "NULL descriptor");
    bdesc *b = calloc(1, sizeof *b);
    if (!b) abort();
    b->magic = MAGIC;
    b->type = type;
    b->engine = -1;
    *d = b;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d) {
    bdesc *b = as_desc(d);
    if (!b)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor",
                              "not a backend descriptor");
    if (b->xd) (void)cudnnDestroyTensorDescriptor(b->xd);
    if (b->yd) (void)cudnnDestroyTensorDescriptor(b->yd);
    if (b->bd) (void)cudnnDestroyTensorDescriptor(b->bd);
    if (b->act) (void)cudnnDestroyActivationDescriptor(b->act);
    if (b->wd) (void)cudnnDestroyFilterDescriptor(b->wd);
    if (b->cd) (void)cudnnDestroyConvolutionDescriptor(b->cd);
    b->magic = 0;
    free(b);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t n, const void *v) {
    const char *call = "cudnnBackendSetAttribute";
    bdesc *b = as_desc(d);
    if (!b) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "not a backend descriptor");
    if (b->final)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "descriptor type %d already finalized",
                              (int)b->type);
    const rule *r = NULL;
    for (int i = 0; i < N_RULES && !r; i++)
        if (RULES[i].desc == b->type && RULES[i].name == name) r = &RULES[i];
    if (!r)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "attribute %d is not one of descriptor type %d's", (int)name,
                              (int)b->type);
    bool type_ok = type == r->type || (r->type == CUDNN_TYPE_FLOAT && type == CUDNN_TYPE_DOUBLE);
    if (!type_ok)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "attribute %d given type %d, wants %d",
                              (int)name, (int)type, (int)r->type);
    if (n < r->lo || n > r->hi || !v)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "attribute %d: %lld elements (%lld to %lld)", (int)name, (long long)n,
                              (long long)r->lo, (long long)r->hi);
    battr *a = (battr *)find(b, name);
    if (!a) {
        if (b->n_attr == MAX_ATTRS) abort();
        a = &b->attr[b->n_attr++];
    }
    a->name = name;
    a->type = type;
    a->n = n;
    memset(a->data, 0, sizeof a->data);
    memcpy(a->data, v, (size_t)n * type_size(type));
    return CUDNN_STATUS_SUCCESS;
}

/* ---- finalize ---- */

static cudnnStatus_t need_attrs(const bdesc *b, const char *call) {
    for (int i = 0; i < N_RULES; i++)
        if (RULES[i].desc == b->type && RULES[i].required && !find(b, RULES[i].name))
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "descriptor type %d: required attribute %d not set", (int)b->type,
                                  (int)RULES[i].name);
    return CUDNN_STATUS_SUCCESS;
}

/* A finalized descriptor of type t held by attribute name of b, else NULL. */
static bdesc *held(const bdesc *b, cudnnBackendAttributeName_t name,
                   cudnnBackendDescriptorType_t t) {
    bdesc *h = as_desc(ptr_of(b, name, 0));
    return h && h->type == t && h->final ? h : NULL;
}

static cudnnStatus_t tensor_final(const bdesc *b, const char *call) {
    int64_t n = find(b, CUDNN_ATTR_TENSOR_DIMENSIONS)->n;
    if (n < 3 || n != find(b, CUDNN_ATTR_TENSOR_STRIDES)->n)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "tensor of %lld dims and %lld strides",
                              (long long)n, (long long)find(b, CUDNN_ATTR_TENSOR_STRIDES)->n);
    for (int k = 0; k < n; k++)
        if (i64(b, CUDNN_ATTR_TENSOR_DIMENSIONS, k) < 1 || i64(b, CUDNN_ATTR_TENSOR_STRIDES, k) < 1)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "tensor dim or stride %d not positive", k);
    int64_t al = i64(b, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0);
    if (al < 1 || (al & (al - 1)))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "alignment %lld", (long long)al);
    int dt = enum_of(b, CUDNN_ATTR_TENSOR_DATA_TYPE);
    if (dt != CUDNN_DATA_FLOAT && dt != CUDNN_DATA_HALF && dt != CUDNN_DATA_BFLOAT16)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "data type %d (emulator: float, half, "
                              "bfloat16)",
                              dt);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t conv_final(const bdesc *b, const char *call) {
    int64_t nsp = i64(b, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0);
    if (nsp < 1 || nsp > 3)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "%lld spatial dims", (long long)nsp);
    static const cudnnBackendAttributeName_t arr[] = {
        CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
        CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES};
    for (int i = 0; i < 4; i++)
        if (find(b, arr[i])->n != nsp)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "attribute %d: %lld values, %lld dims", (int)arr[i],
                                  (long long)find(b, arr[i])->n, (long long)nsp);
    if (enum_of(b, CUDNN_ATTR_CONVOLUTION_COMP_TYPE) != CUDNN_DATA_FLOAT)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "compute type %d (emulator: float)",
                              enum_of(b, CUDNN_ATTR_CONVOLUTION_COMP_TYPE));
    return CUDNN_STATUS_SUCCESS;
}

/* The operation's kind and its x, w, y tensors and convolution (attribute names). */
typedef struct op_names {
    int kind;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
} op_names;
static bool op_names_of(cudnnBackendDescriptorType_t t, op_names *o) {
    if (t == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)
        *o = (op_names){K_FWD,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    else if (t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR)
        *o = (op_names){K_BWD_DATA,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    else if (t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR)
        *o = (op_names){K_BWD_FILTER,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
    else return false;
    return true;
}

/* The legacy descriptors of operation op into plan p (x, y: dims and strides; w: KCRS or
 * KRSC; the convolution with groups = x's channels / w's). yout: the tensor the legacy
 * call writes (the epilogue's last output), NULL: the operation's own y; a virtual y
 * takes x's data type. */
static cudnnStatus_t legacy_of(const bdesc *op, const op_names *o, const bdesc *yout, bdesc *p,
                               const char *call) {
    const bdesc *t[3] = {held(op, o->x, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         held(op, o->w, CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                         yout ? yout : held(op, o->y, CUDNN_BACKEND_TENSOR_DESCRIPTOR)};
    bdesc *cv = held(op, o->conv, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    if (!t[0] || !t[1] || !t[2] || !cv)
        return emu_cudnn_fail(
            CUDNN_STATUS_BAD_PARAM, call,
            "the operation's tensors or convolution are not finalized descriptors");
    int nb = (int)find(t[0], CUDNN_ATTR_TENSOR_DIMENSIONS)->n;
    int nsp = (int)i64(cv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0);
    int dt = enum_of(t[0], CUDNN_ATTR_TENSOR_DATA_TYPE);
    for (int k = 0; k < 3; k++) {
        p->uid[k] = i64(t[k], CUDNN_ATTR_TENSOR_UNIQUE_ID, 0);
        if (find(t[k], CUDNN_ATTR_TENSOR_DIMENSIONS)->n != nb || nb != nsp + 2)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "tensor ranks differ or != %d + 2",
                                  nsp);
        if (enum_of(t[k], CUDNN_ATTR_TENSOR_DATA_TYPE) != dt && !is_virtual(t[k]))
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "data types differ");
    }
    if (p->uid[0] == p->uid[1] || p->uid[0] == p->uid[2] || p->uid[1] == p->uid[2])
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "tensor unique ids not distinct");
    int d[3][8], s[3][8], pad[3], str[3], dil[3];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < nb; i++) {
            int64_t dv = i64(t[k], CUDNN_ATTR_TENSOR_DIMENSIONS, i),
                    sv = i64(t[k], CUDNN_ATTR_TENSOR_STRIDES, i);
            if (dv > 0x7fffffff || sv > 0x7fffffff)
                return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "dim over int (emulator)");
            d[k][i] = (int)dv, s[k][i] = (int)sv;
        }
    for (int i = 0; i < nsp; i++) {
        pad[i] = (int)i64(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, i);
        if (pad[i] != i64(cv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, i))
            return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                                  "asymmetric padding (emulator)");
        str[i] = (int)i64(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, i);
        dil[i] = (int)i64(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, i);
    }
    /* w packed as KCRS, or (4-d) KRSC */
    int acc = 1;
    bool kcrs = true, krsc = nb == 4;
    for (int i = nb - 1; i >= 0; i--) kcrs = kcrs && s[1][i] == acc, acc *= d[1][i];
    if (krsc)
        krsc = s[1][1] == 1 && s[1][3] == d[1][1] && s[1][2] == d[1][1] * d[1][3] &&
               s[1][0] == d[1][1] * d[1][2] * d[1][3];
    if (!kcrs && !krsc)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "w neither packed KCRS nor KRSC");
    if (d[1][1] < 1 || d[0][1] % d[1][1] != 0 || d[1][0] % (d[0][1] / d[1][1]) != 0)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "x has %d channels, w %d per group and %d filters", d[0][1], d[1][1],
                              d[1][0]);
    cudnnDataType_t cdt = (cudnnDataType_t)dt;
    int mode = enum_of(cv, CUDNN_ATTR_CONVOLUTION_CONV_MODE);
    cudnnStatus_t st = cudnnCreateTensorDescriptor(&p->xd);
    if (!st) st = cudnnCreateTensorDescriptor(&p->yd);
    if (!st) st = cudnnCreateFilterDescriptor(&p->wd);
    if (!st) st = cudnnCreateConvolutionDescriptor(&p->cd);
    if (!st) st = cudnnSetTensorNdDescriptor(p->xd, cdt, nb, d[0], s[0]);
    if (!st) st = cudnnSetTensorNdDescriptor(p->yd, cdt, nb, d[2], s[2]);
    if (!st)
        st = cudnnSetFilterNdDescriptor(p->wd, cdt, kcrs ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC,
                                        nb, d[1]);
    if (!st)
        st = cudnnSetConvolutionNdDescriptor(p->cd, nsp, pad, str, dil,
                                             (cudnnConvolutionMode_t)mode, CUDNN_DATA_FLOAT);
    if (!st) st = cudnnSetConvolutionGroupCount(p->cd, d[0][1] / d[1][1]);
    int od[8];
    if (!st) st = cudnnGetConvolutionNdForwardOutputDim(p->cd, p->xd, p->wd, nb, od);
    for (int i = 0; !st && i < nb; i++)
        if (od[i] != d[2][i])
            st = emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                "y dim %d is %d, the convolution gives %d", i, d[2][i], od[i]);
    p->kind = o->kind;
    p->alpha = (float)scalar_of(op, o->alpha);
    p->beta = (float)scalar_of(op, o->beta);
    return st;
}

/* The fake engines (file comment): notes and the legacy algorithm of each kind. */
enum { N_ENGINES = 5 };
static const struct {
    bool refused, tensor, convert, nondet_bwd;
    int algo[3]; /* fwd, bwd data, bwd filter */
} ENGINES[N_ENGINES] = {
    {true, false, false, false, {0, 1, 1}},
    {false, true, true, false, {1, 1, 1}},
    {false,
     true,
     false,
     true,
     {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0}},
    {false,
     true,
     false,
     false,
     {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1}},
    {false,
     false,
     false,
     false,
     {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1}},
};

/* A graph's operations as the emulator runs them: the convolution, then an optional ADD of
 * a (1, K, 1..) bias and an optional RELU, in that order, chained through virtual
 * tensors into a real y. */
typedef struct chain {
    const bdesc *conv, *bias, *y;
    op_names o;
    bool relu;
} chain;
static cudnnStatus_t chain_of(const bdesc *graph, chain *ch, const char *call) {
    memset(ch, 0, sizeof *ch);
    const battr *ops = find(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    int n = (int)ops->n, used = 1;
    const bdesc *op[MAX_ELEMS];
    for (int i = 0; i < n; i++) {
        op[i] = as_desc(ptr_of(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, i));
        if (!op[i] || !op[i]->final)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "operation %d not finalized", i);
        op_names o;
        if (op_names_of(op[i]->type, &o)) {
            if (ch->conv)
                return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                                      "two convolutions (emulator)");
            ch->conv = op[i], ch->o = o;
        } else if (op[i]->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
            return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "operation type %d (emulator)",
                                  (int)op[i]->type);
        }
    }
    if (!ch->conv)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "no convolution (emulator)");
    const bdesc *cur = held(ch->conv, ch->o.y, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    for (int stage = 0; stage < 2; stage++) { /* ADD, then RELU */
        for (int i = 0; i < n; i++) {
            if (op[i]->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) continue;
            const bdesc *x =
                held(op[i], CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
            const bdesc *pw = held(op[i], CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                   CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
            int mode = enum_of(pw, CUDNN_ATTR_POINTWISE_MODE);
            if (x != cur || mode != (stage ? CUDNN_POINTWISE_RELU_FWD : CUDNN_POINTWISE_ADD))
                continue;
            if (!is_virtual(cur))
                return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                      "tensor %lld feeds an operation but "
                                      "is not virtual (emulator: real intermediates unsupported)",
                                      (long long)i64(cur, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0));
            if (stage == 0) {
                ch->bias = held(op[i], CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                CUDNN_BACKEND_TENSOR_DESCRIPTOR);
                int64_t nb = find(cur, CUDNN_ATTR_TENSOR_DIMENSIONS)->n;
                bool shaped = ch->bias && !is_virtual(ch->bias) &&
                              find(ch->bias, CUDNN_ATTR_TENSOR_DIMENSIONS)->n == nb;
                for (int k = 0; shaped && k < nb; k++)
                    shaped = i64(ch->bias, CUDNN_ATTR_TENSOR_DIMENSIONS, k) ==
                             (k == 1 ? i64(cur, CUDNN_ATTR_TENSOR_DIMENSIONS, 1) : 1);
                if (!shaped)
                    return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                          "ADD: b must be a real (1, K, 1..) tensor (emulator)");
            } else {
                ch->relu = true;
            }
            cur =
                held(op[i], CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
            used++;
            break;
        }
    }
    if (used != n)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "%d of %d operations not in a conv -> ADD -> RELU chain (emulator)",
                              n - used, n);
    if (!cur || is_virtual(cur))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "the graph's last output is virtual");
    ch->y = cur;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t plan_final(bdesc *p, const char *call) {
    bdesc *cfg =
        held(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (!cfg || cfg->engine < 0 || !as_desc(cfg->graph))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "not an engine configuration of the heuristics");
    if (!ptr_of(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, 0))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL handle");
    int e = cfg->engine;
    if (ENGINES[e].refused)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "engine %d refuses this graph (fake)", e);
    chain ch;
    cudnnStatus_t st = chain_of(cfg->graph, &ch, call);
    if (st) return st;
    op_names o = ch.o;
    bool epi = ch.bias || ch.relu;
    const bdesc *x = held(ch.conv, o.x, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (epi && enum_of(x, CUDNN_ATTR_TENSOR_DATA_TYPE) != CUDNN_DATA_FLOAT)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "epilogues on float data only (emulator)");
    if ((st = legacy_of(ch.conv, &o, ch.y, p, call))) return st;
    if (ch.bias) {
        int nb = (int)find(ch.bias, CUDNN_ATTR_TENSOR_DIMENSIONS)->n, d[8], str[8];
        for (int k = 0; k < nb; k++)
            d[k] = (int)i64(ch.bias, CUDNN_ATTR_TENSOR_DIMENSIONS, k),
            str[k] = (int)i64(ch.bias, CUDNN_ATTR_TENSOR_STRIDES, k);
        p->bias_uid = i64(ch.bias, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0);
        if (!st) st = cudnnCreateTensorDescriptor(&p->bd);
        if (!st)
            st = cudnnSetTensorNdDescriptor(
                p->bd, (cudnnDataType_t)enum_of(ch.bias, CUDNN_ATTR_TENSOR_DATA_TYPE), nb, d, str);
    }
    p->relu = ch.relu;
    if (!st && ch.relu) st = cudnnCreateActivationDescriptor(&p->act);
    if (!st && ch.relu)
        st = cudnnSetActivationDescriptor(p->act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0);
    if (st) return st;
    p->engine = e;
    p->algo = ENGINES[e].algo[o.kind];
    st = cudnnSetConvolutionMathType(p->cd,
                                     ENGINES[e].tensor ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH);
    cudnnHandle_t h = (cudnnHandle_t)ptr_of(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, 0);
    if (!st && o.kind == K_FWD)
        st = cudnnGetConvolutionForwardWorkspaceSize(h, p->xd, p->wd, p->cd, p->yd,
                                                     (cudnnConvolutionFwdAlgo_t)p->algo, &p->ws);
    else if (!st && o.kind == K_BWD_DATA)
        st = cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, p->wd, p->yd, p->cd, p->xd, (cudnnConvolutionBwdDataAlgo_t)p->algo, &p->ws);
    else if (!st)
        st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, p->xd, p->yd, p->cd, p->wd, (cudnnConvolutionBwdFilterAlgo_t)p->algo, &p->ws);
    return st;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d) {
    const char *call = "cudnnBackendFinalize";
    bdesc *b = as_desc(d);
    if (!b) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "not a backend descriptor");
    if (b->final) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "already finalized");
    cudnnStatus_t st = need_attrs(b, call);
    op_names o;
    if (st) return st;
    if (b->type == CUDNN_BACKEND_TENSOR_DESCRIPTOR) st = tensor_final(b, call);
    else if (b->type == CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) st = conv_final(b, call);
    else if (op_names_of(b->type, &o)) { /* checked on a scratch plan's descriptors */
        bdesc scratch = {.magic = MAGIC};
        st = legacy_of(b, &o, NULL, &scratch, call);
        scratch.magic = 0;
        if (scratch.xd) (void)cudnnDestroyTensorDescriptor(scratch.xd);
        if (scratch.yd) (void)cudnnDestroyTensorDescriptor(scratch.yd);
        if (scratch.wd) (void)cudnnDestroyFilterDescriptor(scratch.wd);
        if (scratch.cd) (void)cudnnDestroyConvolutionDescriptor(scratch.cd);
    } else if (b->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) {
        chain ch;
        if (find(b, CUDNN_ATTR_OPERATIONGRAPH_OPS)->n > 3)
            st = emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                                "more than 3 operations (emulator)");
        else if ((st = chain_of(b, &ch, call)))
            ;
        else if (!ptr_of(b, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, 0))
            st = emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL handle");
    } else if (b->type == CUDNN_BACKEND_POINTWISE_DESCRIPTOR) {
        int mode = enum_of(b, CUDNN_ATTR_POINTWISE_MODE);
        if (mode != CUDNN_POINTWISE_ADD && mode != CUDNN_POINTWISE_RELU_FWD)
            st = emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                                "pointwise mode %d (emulator: ADD, "
                                "RELU_FWD)",
                                mode);
    } else if (b->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
        const bdesc *pw = held(b, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                               CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
        bool binary = pw && enum_of(pw, CUDNN_ATTR_POINTWISE_MODE) == CUDNN_POINTWISE_ADD;
        if (!pw ||
            !held(b, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_BACKEND_TENSOR_DESCRIPTOR) ||
            !held(b, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_BACKEND_TENSOR_DESCRIPTOR))
            st = emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                "pointwise: descriptors not finalized");
        else if (binary != (find(b, CUDNN_ATTR_OPERATION_POINTWISE_BDESC) != NULL))
            st = emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "pointwise: a B tensor %s",
                                binary ? "is required" : "is not taken");
    } else if (b->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) {
        if (!held(b, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                  CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR))
            st = emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "not a finalized operation graph");
    } else if (b->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
        st = plan_final(b, call);
    } else if (b->type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
        if (find(b, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)->n !=
            find(b, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)->n)
            st = emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                "pointers and unique ids differ in count");
    } else {
        st = emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "descriptor type %d (emulator)",
                            (int)b->type);
    }
    if (!st) b->final = true;
    return st;
}

/* ---- get ---- */

static cudnnStatus_t give(const char *call, cudnnBackendAttributeType_t want,
                          cudnnBackendAttributeType_t type, int64_t req, int64_t *count, void *out,
                          const void *v, int64_t n) {
    if (type != want)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "attribute type %d", (int)type);
    if (count) *count = n;
    if (req == 0) return CUDNN_STATUS_SUCCESS;
    if (!out) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL array");
    memcpy(out, v, (size_t)(req < n ? req : n) * type_size(type));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const d,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t req,
                                       int64_t *count, void *out) {
    const char *call = "cudnnBackendGetAttribute";
    bdesc *b = as_desc(d);
    if (!b || !b->final)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "not a finalized backend descriptor");
    if (b->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
        if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "attribute type %d", (int)type);
        /* the fallback mode lists the plain engine (4) alone */
        int first = enum_of(b, CUDNN_ATTR_ENGINEHEUR_MODE) == CUDNN_HEUR_MODE_FALLBACK ? 4 : 0;
        if (count) *count = N_ENGINES - first;
        cudnnBackendDescriptor_t *cfg = out;
        for (int64_t i = 0; i < req && i < N_ENGINES - first; i++) {
            bdesc *c = as_desc(cfg ? cfg[i] : NULL);
            if (!c || c->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
                return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                      "result %lld: not an ENGINECFG descriptor made by the caller",
                                      (long long)i);
            c->engine = first + (int)i;
            c->graph = held(b, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                            CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
            c->final = true;
        }
        return CUDNN_STATUS_SUCCESS;
    }
    if (b->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && name == CUDNN_ATTR_ENGINECFG_ENGINE) {
        bdesc *e = as_desc(out ? *(cudnnBackendDescriptor_t *)out : NULL);
        if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || req != 1 || !e ||
            e->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "wants one ENGINE descriptor");
        e->engine = b->engine, e->graph = b->graph, e->final = true;
        if (count) *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    if (b->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && name == CUDNN_ATTR_ENGINE_GLOBAL_INDEX) {
        int64_t v = b->engine;
        return give(call, CUDNN_TYPE_INT64, type, req, count, out, &v, 1);
    }
    if (b->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE) {
        cudnnBackendNumericalNote_t notes[4];
        int n = 0;
        chain ch;
        bool bwd = b->graph && !chain_of(b->graph, &ch, call) && ch.o.kind != K_FWD;
        if (ENGINES[b->engine].tensor) notes[n++] = CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
        if (ENGINES[b->engine].convert) notes[n++] = CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
        if (ENGINES[b->engine].nondet_bwd && bwd)
            notes[n++] = CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
        return give(call, CUDNN_TYPE_NUMERICAL_NOTE, type, req, count, out, notes, n);
    }
    if (b->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
        name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
        int64_t v = (int64_t)b->ws;
        return give(call, CUDNN_TYPE_INT64, type, req, count, out, &v, 1);
    }
    return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                          "attribute %d of descriptor type %d (emulator)", (int)name, (int)b->type);
}

/* ---- execute ---- */

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t pack) {
    const char *call = "cudnnBackendExecute";
    bdesc *p = as_desc(plan), *v = as_desc(pack);
    if (!h || !p || !v || !p->final || !v->final ||
        p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
        v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "a finalized plan and variant pack");
    void *ptr[3] = {NULL, NULL, NULL};
    int64_t n = find(v, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)->n;
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < n; i++)
            if (i64(v, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, (int)i) == p->uid[k])
                ptr[k] = ptr_of(v, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, (int)i);
    for (int k = 0; k < 3; k++)
        if (!ptr[k])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "no pointer for tensor id %lld",
                                  (long long)p->uid[k]);
    void *ws = find(v, CUDNN_ATTR_VARIANT_PACK_WORKSPACE)
                   ? ptr_of(v, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, 0)
                   : NULL;
    if (p->ws > 0 && !ws)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "the plan needs %zu bytes of workspace, none "
                              "given",
                              p->ws);
    const void *bias = NULL;
    for (int64_t i = 0; p->bias_uid && i < n; i++)
        if (i64(v, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, (int)i) == p->bias_uid)
            bias = ptr_of(v, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, (int)i);
    if (p->bias_uid && !bias)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "no pointer for the bias, tensor id %lld", (long long)p->bias_uid);
    if (p->kind == K_FWD) {
        const float one = 1.0f, zero = 0.0f;
        cudnnStatus_t st = cudnnConvolutionForward(h, &p->alpha, p->xd, ptr[0], p->wd, ptr[1],
                                                   p->cd, (cudnnConvolutionFwdAlgo_t)p->algo, ws,
                                                   p->ws, &p->beta, p->yd, ptr[2]);
        if (!st && bias) st = cudnnAddTensor(h, &one, p->bd, bias, &one, p->yd, ptr[2]);
        if (!st && p->relu)
            st = cudnnActivationForward(h, p->act, &one, p->yd, ptr[2], &zero, p->yd, ptr[2]);
        return st;
    }
    if (p->kind == K_BWD_DATA)
        return cudnnConvolutionBackwardData(h, &p->alpha, p->wd, ptr[1], p->yd, ptr[2], p->cd,
                                            (cudnnConvolutionBwdDataAlgo_t)p->algo, ws, p->ws,
                                            &p->beta, p->xd, ptr[0]);
    return cudnnConvolutionBackwardFilter(h, &p->alpha, p->xd, ptr[0], p->yd, ptr[2], p->cd,
                                          (cudnnConvolutionBwdFilterAlgo_t)p->algo, ws, p->ws,
                                          &p->beta, p->wd, ptr[1]);
}
