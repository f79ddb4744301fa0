/* emu_cudnn.c — the CUDA emulator's cuDNN (tests/emu/include/cudnn.h):
 * reference implementations of the legacy cuDNN calls runtime/cuda/ makes.
 *
 * Each call first validates its arguments synchronously, as cuDNN does
 * (descriptors set and consistent, output dims = cudnnGetConvolutionNdForward-
 * OutputDim, float data — convolutions also take cuDNN's half configurations,
 * float16 or bfloat16 data with float compute, widened and rounded once —,
 * group count dividing the channels, every data pointer
 * inside one cudaMalloc block for the tensor's full strided extent, workspace
 * pointer + size >= what the algorithm's GetWorkspaceSize reports) and returns
 * CUDNN_STATUS_BAD_PARAM / NOT_SUPPORTED, printing the reason to stderr
 * ("emu cudnn: <call>: ..."; cuDNN keeps it for cudnnGetLastErrorString). Then
 * it copies what the computation needs into a job and enqueues it on the
 * handle's stream (emu_stream_enqueue; NULL = legacy default stream until
 * cudnnSetStream). Sums are accumulated in double in a fixed order.
 *
 * Blending, as cuDNN's: dst = alpha * result + beta * dst, and with beta == 0
 * dst is not read (it may hold NaN garbage).
 *
 * Fake heuristics (cudnnGet*Algorithm_v7): a fixed list per direction, sorted
 * by a made-up time, that exercises a caller's selection logic: the fastest
 * entries are a NON_DETERMINISTIC one (backward) and one with math type
 * CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (fp16 down-conversion), then
 * deterministic ones with nonzero and with zero workspace, and one entry with
 * status NOT_SUPPORTED. The workspace an algorithm needs depends on the
 * descriptor's math type (tensor-op math needs 256 bytes more), so a caller
 * that runs an entry without setting its mathType on the descriptor may be
 * short of workspace. During execution the required workspace is filled with
 * 0xFF bytes (NaN floats), so a workspace that aliases live data shows.
 *
 * cuDNN semantics confirmed (sources in parentheses):
 *  - CUDNN_BN_MIN_EPSILON is 0.0 in cuDNN 9 (cudnn_ops.h 9.19); epsilon below
 *    it -> BAD_PARAM.
 *  - exponentialAverageFactor: running = batch * factor + running * (1 - factor)
 *    (cudnn_ops.h comment on cudnnBatchNormalizationForwardTraining).
 *  - running variance uses the UNBIASED batch variance m/(m-1), m = N*H*W
 *    (apache/mxnet#21111 measured it; NervanaSystems/ngraph#893: "CUDNN always
 *    returns the unbiased variance"); normalisation uses the biased one.
 *  - resultSaveInvVariance is 1/sqrt(biased var + epsilon), an inverse std,
 *    despite the name (microsoft/onnxruntime#8172 verified numerically).
 *  - running mean/var pointers: both NULL or both set, same for saveMean/
 *    saveInvVariance (cuDNN API reference, cudnnBatchNormalizationForward-
 *    Training parameters); the backward uses savedMean/savedInvVariance when
 *    both are given, else recomputes the statistics from x.
 *  - bnScaleBiasMeanVarDesc for SPATIAL is 1xCx1x1 (cudnn_ops.h comment).
 *  - perf struct fields and algorithm enums: cudnn_cnn.h / cudnn_ops.h 9.19. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn.h"
#include "emu.h"
#include "emu_conv_ref.h"
#include "emu_cudnn_fail.h"
#define OC_HALF_NO_IR
#include "ir/half.h"

/* ---- objects ---- */

struct cudnnContext {
    cudaStream_t stream;
};

struct cudnnTensorStruct {
    bool set;
    cudnnDataType_t dt;
    int nb;
    int dim[CUDNN_DIM_MAX], str[CUDNN_DIM_MAX];
};

struct cudnnFilterStruct {
    bool set;
    cudnnDataType_t dt;
    cudnnTensorFormat_t fmt;
    int nb;
    int dim[CUDNN_DIM_MAX];
};

struct cudnnActivationStruct {
    bool set;
    cudnnActivationMode_t mode;
    cudnnNanPropagation_t nan;
    double coef;
};

struct cudnnConvolutionStruct {
    bool set;
    int nsp;
    int pad[CUDNN_DIM_MAX - 2], str[CUDNN_DIM_MAX - 2], dil[CUDNN_DIM_MAX - 2];
    cudnnConvolutionMode_t mode;
    cudnnDataType_t ctype;
    int groups;
    cudnnMathType_t math;
};

cudnnStatus_t emu_cudnn_fail(cudnnStatus_t st, const char *call, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "emu cudnn: %s: %s -> %s\n", call, msg, cudnnGetErrorString(st));
    return st;
}

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char *cudnnGetErrorString(cudnnStatus_t s) {
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED:
        return "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    }
    return "CUDNN_STATUS_UNKNOWN";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *h) {
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreate", "handle is NULL");
    *h = emu_xcalloc(1, sizeof **h);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
    free(h);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream", "handle is NULL");
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t h, cudaStream_t *s) {
    if (!h || !s) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream", "NULL argument");
    *s = h->stream;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- tensor descriptors ---- */

static bool dt_valid(cudnnDataType_t dt) {
    return dt == CUDNN_DATA_FLOAT || dt == CUDNN_DATA_DOUBLE || dt == CUDNN_DATA_HALF ||
           dt == CUDNN_DATA_INT8 || dt == CUDNN_DATA_INT32 || dt == CUDNN_DATA_UINT8 ||
           dt == CUDNN_DATA_BFLOAT16 || dt == CUDNN_DATA_INT64;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) {
    if (!d)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateTensorDescriptor",
                              "NULL argument");
    *d = emu_xcalloc(1, sizeof **d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

/* Elements from the first to one past the last (strided extent). */
static int64_t t_extent(const struct cudnnTensorStruct *t) {
    int64_t e = 1;
    for (int i = 0; i < t->nb; i++) e += (int64_t)(t->dim[i] - 1) * t->str[i];
    return e;
}

static int64_t t_numel(const struct cudnnTensorStruct *t) {
    int64_t e = 1;
    for (int i = 0; i < t->nb; i++) e *= t->dim[i];
    return e;
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int nb,
                                         const int dim[], const int str[]) {
    const char *call = "cudnnSetTensorNdDescriptor";
    if (!d || !dim || !str) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL argument");
    if (!dt_valid(dt))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "invalid data type %d", (int)dt);
    /* cuDNN API reference: nbDims outside [3, CUDNN_DIM_MAX] is NOT_SUPPORTED
     * (2-d tensors are rejected); dims or strides <= 0 are BAD_PARAM. */
    if (nb < 3 || nb > CUDNN_DIM_MAX)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "nbDims %d outside [3, %d]", nb,
                              CUDNN_DIM_MAX);
    int64_t numel = 1;
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0 || str[i] <= 0)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "dim[%d] = %d, stride[%d] = %d (must be > 0)", i, dim[i], i,
                                  str[i]);
        numel *= dim[i];
    }
    if (numel > INT32_MAX)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "%lld elements exceed 2^31 - 1",
                              (long long)numel);
    d->set = true;
    d->dt = dt;
    d->nb = nb;
    for (int i = 0; i < nb; i++) d->dim[i] = dim[i], d->str[i] = str[i];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t fmt,
                                         cudnnDataType_t dt, int n, int c, int h, int w) {
    int dim[4] = {n, c, h, w}, str[4];
    if (fmt == CUDNN_TENSOR_NCHW) {
        str[3] = 1, str[2] = w, str[1] = h * w, str[0] = c * h * w;
    } else if (fmt == CUDNN_TENSOR_NHWC) {
        str[1] = 1, str[3] = c, str[2] = w * c, str[0] = h * w * c;
    } else {
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensor4dDescriptor", "format %d",
                              (int)fmt);
    }
    return cudnnSetTensorNdDescriptor(d, dt, 4, dim, str);
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d, int req,
                                         cudnnDataType_t *dt, int *nb, int dim[], int str[]) {
    if (!d || !d->set || !dt || !nb || req < 0)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensorNdDescriptor", "bad argument");
    *dt = d->dt;
    *nb = d->nb;
    for (int i = 0; i < req && i < d->nb; i++) {
        if (dim) dim[i] = d->dim[i];
        if (str) str[i] = d->str[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

/* ---- filter descriptors ---- */

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) {
    if (!d)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateFilterDescriptor",
                              "NULL argument");
    *d = emu_xcalloc(1, sizeof **d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t fmt, int nb, const int dim[]) {
    const char *call = "cudnnSetFilterNdDescriptor";
    if (!d || !dim) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL argument");
    if (!dt_valid(dt) || (fmt != CUDNN_TENSOR_NCHW && fmt != CUDNN_TENSOR_NHWC))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "data type %d / format %d", (int)dt,
                              (int)fmt);
    if (nb < 3 || nb > CUDNN_DIM_MAX)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "nbDims %d outside [3, %d]", nb,
                              CUDNN_DIM_MAX);
    for (int i = 0; i < nb; i++)
        if (dim[i] <= 0)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "filterDimA[%d] = %d", i, dim[i]);
    d->set = true;
    d->dt = dt;
    d->fmt = fmt;
    d->nb = nb;
    for (int i = 0; i < nb; i++) d->dim[i] = dim[i];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t fmt, int k, int c, int h, int w) {
    int dim[4] = {k, c, h, w};
    return cudnnSetFilterNdDescriptor(d, dt, fmt, 4, dim);
}

/* ---- activation descriptors ---- */

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *d) {
    if (!d)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateActivationDescriptor",
                              "NULL argument");
    *d = emu_xcalloc(1, sizeof **d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t mode, cudnnNanPropagation_t nan,
                                           double coef) {
    const char *call = "cudnnSetActivationDescriptor";
    if (!d) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL descriptor");
    if ((int)mode < 0 || mode > CUDNN_ACTIVATION_SWISH ||
        (nan != CUDNN_NOT_PROPAGATE_NAN && nan != CUDNN_PROPAGATE_NAN))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "mode %d / NaN option %d", (int)mode,
                              (int)nan);
    d->set = true;
    d->mode = mode;
    d->nan = nan;
    d->coef = coef;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution descriptors ---- */

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) {
    if (!d)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateConvolutionDescriptor",
                              "NULL argument");
    *d = emu_xcalloc(1, sizeof **d);
    (*d)->groups = 1;
    (*d)->math = CUDNN_DEFAULT_MATH;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m) {
    if (!d || (int)m < 0 || m > CUDNN_FMA_MATH)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType", "math type %d",
                              (int)m);
    d->math = m;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t *m) {
    if (!d || !m)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionMathType",
                              "NULL argument");
    *m = d->math;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int g) {
    if (!d || g < 1)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount",
                              "group count %d", g);
    d->groups = g;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int len,
                                              const int pad[], const int str[], const int dil[],
                                              cudnnConvolutionMode_t mode, cudnnDataType_t ctype) {
    const char *call = "cudnnSetConvolutionNdDescriptor";
    if (!d || !pad || !str || !dil)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL argument");
    if (len < 1 || len > CUDNN_DIM_MAX - 2)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "arrayLength %d", len);
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "mode %d", (int)mode);
    if (!dt_valid(ctype))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "compute type %d", (int)ctype);
    for (int i = 0; i < len; i++)
        if (pad[i] < 0 || str[i] <= 0 || dil[i] <= 0)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "dim %d: pad %d, stride %d, dilation %d", i, pad[i], str[i],
                                  dil[i]);
    d->set = true;
    d->nsp = len;
    for (int i = 0; i < len; i++) d->pad[i] = pad[i], d->str[i] = str[i], d->dil[i] = dil[i];
    d->mode = mode;
    d->ctype = ctype;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u,
                                              int v, int dh, int dw, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t ctype) {
    int pad[2] = {ph, pw}, str[2] = {u, v}, dil[2] = {dh, dw};
    return cudnnSetConvolutionNdDescriptor(d, 2, pad, str, dil, mode, ctype);
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t cd,
                                                    const cudnnTensorDescriptor_t xd,
                                                    const cudnnFilterDescriptor_t wd, int nb,
                                                    int out[]) {
    const char *call = "cudnnGetConvolutionNdForwardOutputDim";
    if (!cd || !xd || !wd || !out || !cd->set || !xd->set || !wd->set)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL or unset argument");
    if (nb != xd->nb || wd->nb != nb || cd->nsp != nb - 2)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "nbDims %d, x %d, w %d, conv %d spatial", nb, xd->nb, wd->nb,
                              cd->nsp);
    if (xd->dim[1] != wd->dim[1] * cd->groups)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "x has %d channels, filter %d x %d groups", xd->dim[1], wd->dim[1],
                              cd->groups);
    out[0] = xd->dim[0];
    out[1] = wd->dim[0];
    for (int i = 0; i < cd->nsp; i++) {
        int span = (wd->dim[i + 2] - 1) * cd->dil[i] + 1;
        int num = xd->dim[i + 2] + 2 * cd->pad[i] - span;
        if (num < 0)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "spatial dim %d: filter span %d > padded input %d", i, span,
                                  xd->dim[i + 2] + 2 * cd->pad[i]);
        out[i + 2] = 1 + num / cd->str[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution geometry (checked once, copied into jobs) ---- */

static cudnnStatus_t conv_geo(const char *call, const cudnnTensorDescriptor_t xd,
                              const cudnnFilterDescriptor_t wd,
                              const cudnnConvolutionDescriptor_t cd,
                              const cudnnTensorDescriptor_t yd, cgeo *q) {
    if (!xd || !wd || !cd || !yd || !xd->set || !wd->set || !cd->set || !yd->set)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "a descriptor is NULL or was never set");
    if (xd->dt != yd->dt || xd->dt != wd->dt)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "data types x %d, w %d, y %d differ",
                              (int)xd->dt, (int)wd->dt, (int)yd->dt);
    /* cuDNN's configurations: FLOAT_CONFIG, PSEUDO_HALF_CONFIG (half data, float
     * compute), TRUE_HALF_CONFIG, PSEUDO_BFLOAT16_CONFIG (bfloat16, float) */
    bool cfg = (xd->dt == CUDNN_DATA_FLOAT && cd->ctype == CUDNN_DATA_FLOAT) ||
               (xd->dt == CUDNN_DATA_HALF &&
                (cd->ctype == CUDNN_DATA_FLOAT || cd->ctype == CUDNN_DATA_HALF)) ||
               (xd->dt == CUDNN_DATA_BFLOAT16 && cd->ctype == CUDNN_DATA_FLOAT);
    if (!cfg)
        return emu_cudnn_fail(
            CUDNN_STATUS_NOT_SUPPORTED, call,
            "data type %d / compute type %d is not a cuDNN configuration (emulator: "
            "float, half or bfloat16 data)",
            (int)xd->dt, (int)cd->ctype);
    int nb = xd->nb;
    if (yd->nb != nb || wd->nb != nb || cd->nsp != nb - 2)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "nbDims x %d, y %d, w %d, conv arrayLength %d", nb, yd->nb, wd->nb,
                              cd->nsp);
    if (nb != 4 && nb != 5)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "%d-d tensors (convolutions take 4-d or 5-d)", nb);
    if (wd->fmt == CUDNN_TENSOR_NHWC && nb != 4)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "NHWC filter of %d dims (emulator: 4 only)", nb);
    int G = cd->groups;
    if (wd->dim[0] % G != 0)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "%d output channels not divisible by %d groups", wd->dim[0], G);
    if (xd->dim[1] != wd->dim[1] * G)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "x has %d channels, filter %d per group x %d groups", xd->dim[1],
                              wd->dim[1], G);
    int od[CUDNN_DIM_MAX];
    cudnnStatus_t st = cudnnGetConvolutionNdForwardOutputDim(cd, xd, wd, nb, od);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    for (int i = 0; i < nb; i++)
        if (yd->dim[i] != od[i])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "y dim %d is %d, cudnnGetConvolutionNdForwardOutputDim gives %d",
                                  i, yd->dim[i], od[i]);
    memset(q, 0, sizeof *q);
    q->N = xd->dim[0];
    q->C = xd->dim[1];
    q->K = wd->dim[0];
    q->G = G;
    q->cg = q->C / G;
    q->kg = q->K / G;
    int nsp = nb - 2, off = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        q->in[i] = q->out[i] = q->k[i] = q->str[i] = q->dil[i] = 1;
        q->pad[i] = 0;
    }
    q->xs[0] = xd->str[0], q->xs[1] = xd->str[1];
    q->ys[0] = yd->str[0], q->ys[1] = yd->str[1];
    for (int i = 0; i < nsp; i++) {
        q->in[off + i] = xd->dim[i + 2];
        q->out[off + i] = yd->dim[i + 2];
        q->k[off + i] = wd->dim[i + 2];
        q->pad[off + i] = cd->pad[i];
        q->str[off + i] = cd->str[i];
        q->dil[off + i] = cd->dil[i];
        q->xs[2 + off + i] = xd->str[i + 2];
        q->ys[2 + off + i] = yd->str[i + 2];
    }
    /* packed filter (K, C/G, k0, k1, k2) */
    q->wstr[4] = 1;
    q->wstr[3] = q->k[2];
    q->wstr[2] = q->k[1] * q->k[2];
    q->wstr[1] = q->k[0] * q->wstr[2];
    q->wstr[0] = q->cg * q->wstr[1];
    if (wd->fmt == CUDNN_TENSOR_NHWC) { /* (K, R, S, C/G): the channel fastest */
        q->wstr[1] = 1;
        q->wstr[4] = q->cg;
        q->wstr[3] = q->k[2] * q->cg;
        q->wstr[2] = q->k[1] * q->wstr[3];
    }
    q->flip = cd->mode == CUDNN_CONVOLUTION;
    q->dt = xd->dt;
    q->ctype = cd->ctype;
    size_t esz = q->dt == CUDNN_DATA_FLOAT ? sizeof(float) : sizeof(uint16_t);
    q->x_bytes = (size_t)t_extent(xd) * esz;
    q->y_bytes = (size_t)t_extent(yd) * esz;
    q->w_bytes = (size_t)(q->K * q->wstr[0]) * esz;
    q->math = cd->math;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- fake algorithms: workspace and heuristics ---- */

static size_t tensor_op_extra(cudnnMathType_t m) {
    return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? 256 : 0;
}

/* im2col-like buffer of one image: (C/G * prod k) x prod out floats. */
static size_t col_bytes(const cgeo *q) {
    return (size_t)(q->cg * q->k[0] * q->k[1] * q->k[2] * q->out[0] * q->out[1] * q->out[2]) *
           sizeof(float);
}

/* Workspace algorithm `algo` of direction `kind` needs under math type m;
 * false when the emulator does not offer that algorithm. */
static bool ws_need(int kind, int algo, cudnnMathType_t m, const cgeo *q, size_t *need) {
    size_t x = tensor_op_extra(m);
    switch (kind) {
    case K_FWD:
        switch (algo) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
            *need = 0;
            return true; /* FMA-only: no extra */
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
            *need = (size_t)(q->cg * q->k[0] * q->k[1] * q->k[2]) * sizeof(int) + 64 + x;
            return true;
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: *need = col_bytes(q) + x; return true;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
            *need = col_bytes(q) / 2 + 128 + x;
            return true;
        default: return false;
        }
    case K_BWD_DATA:
        switch (algo) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: *need = 0; return true;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: *need = x; return true;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
            *need = col_bytes(q) + 128 + x;
            return true;
        default: return false;
        }
    default:
        switch (algo) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: *need = 0; return true;
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: *need = x; return true;
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: *need = col_bytes(q) + x; return true;
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
            *need = col_bytes(q) + 128 + x;
            return true;
        default: return false;
        }
    }
}

typedef struct fake_perf {
    int algo;
    cudnnStatus_t status;
    float time;
    cudnnDeterminism_t det;
    cudnnMathType_t math;
} fake_perf;

/* Sorted by time, as cuDNN's heuristics list is. */
static const fake_perf FWD_LIST[] = {
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_STATUS_SUCCESS, 0.2f, CUDNN_DETERMINISTIC,
     CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_STATUS_SUCCESS, 0.5f,
     CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH},
    {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_STATUS_SUCCESS, 0.8f, CUDNN_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_STATUS_SUCCESS, 1.0f, CUDNN_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_STATUS_NOT_SUPPORTED, -1.0f, CUDNN_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
};
static const fake_perf BWD_DATA_LIST[] = {
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_STATUS_SUCCESS, 0.3f, CUDNN_NON_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, CUDNN_STATUS_SUCCESS, 0.4f,
     CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_STATUS_SUCCESS, 0.6f, CUDNN_DETERMINISTIC,
     CUDNN_TENSOR_OP_MATH},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_STATUS_SUCCESS, 0.9f, CUDNN_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_STATUS_NOT_SUPPORTED, -1.0f, CUDNN_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
};
static const fake_perf BWD_FILTER_LIST[] = {
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_STATUS_SUCCESS, 0.2f, CUDNN_NON_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, CUDNN_STATUS_SUCCESS, 0.3f, CUDNN_NON_DETERMINISTIC,
     CUDNN_TENSOR_OP_MATH},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, CUDNN_STATUS_SUCCESS, 0.4f,
     CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_STATUS_SUCCESS, 0.6f, CUDNN_DETERMINISTIC,
     CUDNN_TENSOR_OP_MATH},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_STATUS_SUCCESS, 1.1f, CUDNN_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_STATUS_NOT_SUPPORTED, -1.0f, CUDNN_DETERMINISTIC,
     CUDNN_DEFAULT_MATH},
};

#define FAKE_LIST(kind)                                                                            \
    ((kind) == K_FWD ? FWD_LIST : (kind) == K_BWD_DATA ? BWD_DATA_LIST : BWD_FILTER_LIST)
#define FAKE_COUNT(kind)                                                                           \
    ((kind) == K_FWD        ? (int)(sizeof FWD_LIST / sizeof *FWD_LIST)                            \
     : (kind) == K_BWD_DATA ? (int)(sizeof BWD_DATA_LIST / sizeof *BWD_DATA_LIST)                  \
                            : (int)(sizeof BWD_FILTER_LIST / sizeof *BWD_FILTER_LIST))

/* Fills entry i of the list of `kind` (perf fields through pointers so the
 * three perf struct types share it). */
static void fake_entry(int kind, int i, const cgeo *q, int *algo, cudnnStatus_t *st, float *time,
                       size_t *mem, cudnnDeterminism_t *det, cudnnMathType_t *math) {
    const fake_perf *f = &FAKE_LIST(kind)[i];
    *algo = f->algo;
    *st = f->status;
    *time = f->time;
    *det = f->det;
    *math = f->math;
    *mem = 0;
    if (f->status == CUDNN_STATUS_SUCCESS && !ws_need(kind, f->algo, f->math, q, mem))
        *st = CUDNN_STATUS_NOT_SUPPORTED;
}

#define GET_V7(kind, perf_t, algo_t)                                                               \
    do {                                                                                           \
        if (!h || !ret || !perf || req < 1)                                                        \
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "bad argument");                   \
        int n_ = FAKE_COUNT(kind) < req ? FAKE_COUNT(kind) : req;                                  \
        for (int i_ = 0; i_ < n_; i_++) {                                                          \
            int a_;                                                                                \
            memset(&perf[i_], 0, sizeof perf[i_]);                                                 \
            fake_entry(kind, i_, &q, &a_, &perf[i_].status, &perf[i_].time, &perf[i_].memory,      \
                       &perf[i_].determinism, &perf[i_].mathType);                                 \
            perf[i_].algo = (algo_t)a_;                                                            \
        }                                                                                          \
        *ret = n_;                                                                                 \
        return CUDNN_STATUS_SUCCESS;                                                               \
    } while (0)

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const cudnnFilterDescriptor_t wd,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t yd, const int req,
    int *ret, cudnnConvolutionFwdAlgoPerf_t *perf) {
    const char *call = "cudnnGetConvolutionForwardAlgorithm_v7";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, xd, wd, cd, yd, &q);
    if (st) return st;
    GET_V7(K_FWD, cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t h, const cudnnFilterDescriptor_t wd, const cudnnTensorDescriptor_t dyd,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t dxd, const int req,
    int *ret, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
    const char *call = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, dxd, wd, cd, dyd, &q);
    if (st) return st;
    GET_V7(K_BWD_DATA, cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const cudnnTensorDescriptor_t dyd,
    const cudnnConvolutionDescriptor_t cd, const cudnnFilterDescriptor_t dwd, const int req,
    int *ret, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
    const char *call = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, xd, dwd, cd, dyd, &q);
    if (st) return st;
    GET_V7(K_BWD_FILTER, cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t);
}

static cudnnStatus_t ws_query(const char *call, cudnnHandle_t h, int kind, int algo, const cgeo *q,
                              size_t *size) {
    if (!h || !size) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL argument");
    if (!ws_need(kind, algo, q->math, q, size))
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "algorithm %d is not offered for this convolution", algo);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h,
                                                      const cudnnTensorDescriptor_t xd,
                                                      const cudnnFilterDescriptor_t wd,
                                                      const cudnnConvolutionDescriptor_t cd,
                                                      const cudnnTensorDescriptor_t yd,
                                                      cudnnConvolutionFwdAlgo_t a, size_t *size) {
    const char *call = "cudnnGetConvolutionForwardWorkspaceSize";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, xd, wd, cd, yd, &q);
    return st ? st : ws_query(call, h, K_FWD, (int)a, &q, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t h, const cudnnFilterDescriptor_t wd, const cudnnTensorDescriptor_t dyd,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t dxd,
    cudnnConvolutionBwdDataAlgo_t a, size_t *size) {
    const char *call = "cudnnGetConvolutionBackwardDataWorkspaceSize";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, dxd, wd, cd, dyd, &q);
    return st ? st : ws_query(call, h, K_BWD_DATA, (int)a, &q, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t xd, const cudnnTensorDescriptor_t dyd,
    const cudnnConvolutionDescriptor_t cd, const cudnnFilterDescriptor_t dwd,
    cudnnConvolutionBwdFilterAlgo_t a, size_t *size) {
    const char *call = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, xd, dwd, cd, dyd, &q);
    return st ? st : ws_query(call, h, K_BWD_FILTER, (int)a, &q, size);
}

/* ---- shared argument checks ---- */

static cudnnStatus_t check_dev(const char *call, const char *what, const void *p, size_t bytes) {
    if (!p) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "%s is NULL", what);
    if (!emu_is_device_range(p, bytes))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "%s [%p, +%zu bytes) is not inside one cudaMalloc block", what, p,
                              bytes);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t check_scalars(const char *call, const void *alpha, const void *beta, double *a,
                                   double *b) {
    *a = *b = 0;
    if (!alpha || !beta)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "alpha or beta is NULL");
    /* host pointers to float for float data (cuDNN "scaling parameters") */
    *a = *(const float *)alpha;
    *b = *(const float *)beta;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- half data: the operands widened exactly, the float convolution (double
 * accumulation), each output rounded once to nearest even (ir/half.h); under
 * TRUE_HALF_CONFIG (half compute) the result is rounded as well, once: the
 * emulator does not model half accumulation. ---- */

static float half_in(cudnnDataType_t dt, uint16_t h) {
    return dt == CUDNN_DATA_BFLOAT16 ? bf16_to_f32(h) : f16_to_f32(h);
}

static float *widen(cudnnDataType_t dt, const void *p, size_t bytes) {
    size_t n = bytes / sizeof(uint16_t);
    float *w = emu_xcalloc(n ? n : 1, sizeof *w);
    const uint16_t *h = p;
    for (size_t i = 0; i < n; i++) w[i] = half_in(dt, h[i]);
    return w;
}

static size_t out_bytes(const conv_job *j) {
    return j->kind == K_FWD ? j->q.y_bytes : j->kind == K_BWD_DATA ? j->q.x_bytes : j->q.w_bytes;
}

static size_t in_bytes(const conv_job *j, int k) {
    if (j->kind == K_FWD) return k == 0 ? j->q.x_bytes : j->q.w_bytes;
    if (j->kind == K_BWD_DATA) return k == 0 ? j->q.w_bytes : j->q.y_bytes;
    return k == 0 ? j->q.x_bytes : j->q.y_bytes;
}

static void conv_half(const conv_job *j) {
    cudnnDataType_t dt = j->q.dt;
    conv_job f = *j;
    float *a = widen(dt, j->in0, in_bytes(j, 0)), *b = widen(dt, j->in1, in_bytes(j, 1)),
          *o = widen(dt, j->out, out_bytes(j));
    f.in0 = a, f.in1 = b, f.out = o;
    emu_conv_float(&f);
    uint16_t *h = (uint16_t *)j->out;
    for (size_t i = 0; i < out_bytes(j) / sizeof(uint16_t); i++)
        h[i] = dt == CUDNN_DATA_BFLOAT16 ? bf16_from_f32(o[i]) : f16_from_f32(o[i]);
    free(a);
    free(b);
    free(o);
}

static void conv_run(void *p) {
    conv_job *j = p;
    if (j->ws_need) memset(j->ws, 0xff, j->ws_need); /* the algorithm's scratch: NaN garbage */
    if (j->q.dt == CUDNN_DATA_FLOAT) emu_conv_float(j);
    else conv_half(j);
    free(j);
}

static cudnnStatus_t conv_enqueue(const char *call, cudnnHandle_t h, int kind, int algo,
                                  const cgeo *q, const void *alpha, const void *beta,
                                  const void *in0, size_t in0_bytes, const char *in0_name,
                                  const void *in1, size_t in1_bytes, const char *in1_name,
                                  void *out, size_t out_bytes, const char *out_name, void *ws,
                                  size_t ws_bytes) {
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
    double a = 0, b = 0;
    cudnnStatus_t st = check_scalars(call, alpha, beta, &a, &b);
    if (st) return st;
    if ((st = check_dev(call, in0_name, in0, in0_bytes)) ||
        (st = check_dev(call, in1_name, in1, in1_bytes)) ||
        (st = check_dev(call, out_name, out, out_bytes)))
        return st;
    size_t need;
    if (!ws_need(kind, algo, q->math, q, &need))
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "algorithm %d is not offered for this convolution", algo);
    if (!ws && ws_bytes)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "workSpace is NULL with %zu bytes",
                              ws_bytes);
    if (ws_bytes < need)
        return emu_cudnn_fail(
            CUDNN_STATUS_BAD_PARAM, call,
            "workSpaceSizeInBytes %zu < %zu bytes algorithm %d needs under math type %d", ws_bytes,
            need, algo, (int)q->math);
    if (need && (st = check_dev(call, "workSpace", ws, need))) return st;
    conv_job *j = emu_xcalloc(1, sizeof *j);
    *j = (conv_job){kind, *q, in0, in1, out, a, b, ws, need};
    emu_stream_enqueue(h->stream, conv_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
                                      const cudnnTensorDescriptor_t xd, const void *x,
                                      const cudnnFilterDescriptor_t wd, const void *w,
                                      const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes,
                                      const void *beta, const cudnnTensorDescriptor_t yd, void *y) {
    const char *call = "cudnnConvolutionForward";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, xd, wd, cd, yd, &q);
    if (st) return st;
    return conv_enqueue(call, h, K_FWD, (int)algo, &q, alpha, beta, x, q.x_bytes, "x", w, q.w_bytes,
                        "w", y, q.y_bytes, "y", ws, ws_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                                           const cudnnFilterDescriptor_t wd, const void *w,
                                           const cudnnTensorDescriptor_t dyd, const void *dy,
                                           const cudnnConvolutionDescriptor_t cd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *ws,
                                           size_t ws_bytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxd, void *dx) {
    const char *call = "cudnnConvolutionBackwardData";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, dxd, wd, cd, dyd, &q);
    if (st) return st;
    return conv_enqueue(call, h, K_BWD_DATA, (int)algo, &q, alpha, beta, w, q.w_bytes, "w", dy,
                        q.y_bytes, "dy", dx, q.x_bytes, "dx", ws, ws_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha,
                                             const cudnnTensorDescriptor_t xd, const void *x,
                                             const cudnnTensorDescriptor_t dyd, const void *dy,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws,
                                             size_t ws_bytes, const void *beta,
                                             const cudnnFilterDescriptor_t dwd, void *dw) {
    const char *call = "cudnnConvolutionBackwardFilter";
    cgeo q;
    cudnnStatus_t st = conv_geo(call, xd, dwd, cd, dyd, &q);
    if (st) return st;
    return conv_enqueue(call, h, K_BWD_FILTER, (int)algo, &q, alpha, beta, x, q.x_bytes, "x", dy,
                        q.y_bytes, "dy", dw, q.w_bytes, "dw", ws, ws_bytes);
}

/* ---- generic strided element-wise jobs (bias, add, activation) ---- */

typedef struct tv {
    int nb;
    int64_t dim[CUDNN_DIM_MAX], str[CUDNN_DIM_MAX];
} tv;

static tv tv_of(const struct cudnnTensorStruct *t) {
    tv v;
    memset(&v, 0, sizeof v);
    v.nb = t->nb;
    for (int i = 0; i < t->nb; i++) v.dim[i] = t->dim[i], v.str[i] = t->str[i];
    return v;
}

/* Offset of linear (row-major over dims of `shape`) index i in view v, whose
 * dims equal shape's or are 1 (broadcast). */
static int64_t tv_off(const tv *shape, const tv *v, int64_t i) {
    int64_t off = 0;
    for (int d = shape->nb - 1; d >= 0; d--) {
        int64_t c = i % shape->dim[d];
        i /= shape->dim[d];
        if (v->dim[d] != 1) off += c * v->str[d];
    }
    return off;
}

static int64_t tv_numel(const tv *v) {
    int64_t n = 1;
    for (int i = 0; i < v->nb; i++) n *= v->dim[i];
    return n;
}

enum { EW_ADD, EW_ACT, EW_BIAS_GRAD };

typedef struct ew_job {
    int op;
    tv a, c; /* source view, destination view */
    const float *A;
    float *C;
    double alpha, beta;
    struct cudnnActivationStruct act;
} ew_job;

static double act_apply(const struct cudnnActivationStruct *d, double x) {
    if (x != x) return d->nan == CUDNN_PROPAGATE_NAN ? x : 0.0; /* NaN */
    switch (d->mode) {
    case CUDNN_ACTIVATION_RELU: return x > 0 ? x : 0.0;
    case CUDNN_ACTIVATION_CLIPPED_RELU: return x > 0 ? (x < d->coef ? x : d->coef) : 0.0;
    case CUDNN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case CUDNN_ACTIVATION_TANH: return tanh(x);
    case CUDNN_ACTIVATION_ELU: return x > 0 ? x : d->coef * (exp(x) - 1.0);
    case CUDNN_ACTIVATION_IDENTITY: return x;
    case CUDNN_ACTIVATION_SWISH: return x / (1.0 + exp(-d->coef * x));
    }
    return x;
}

static void ew_run(void *p) {
    ew_job *j = p;
    if (j->op == EW_BIAS_GRAD) { /* c = dbias (1, C, 1..): sum a over every dim but 1 */
        int64_t C = j->c.dim[1], n = tv_numel(&j->a);
        double *s = emu_xcalloc((size_t)C, sizeof *s);
        for (int64_t i = 0; i < n; i++) {
            int64_t inner = n / j->a.dim[0] / C; /* row-major: (i / inner) % C is the channel */
            s[(i / inner) % C] += j->A[tv_off(&j->a, &j->a, i)];
        }
        for (int64_t c = 0; c < C; c++) {
            float *q = j->C + c * j->c.str[1];
            *q = blend(j->alpha, s[c], j->beta, q);
        }
        free(s);
    } else { /* destination shape drives the loop; the source broadcasts */
        int64_t n = tv_numel(&j->c);
        for (int64_t i = 0; i < n; i++) {
            double v = j->A[tv_off(&j->c, &j->a, i)];
            if (j->op == EW_ACT) v = act_apply(&j->act, v);
            float *q = j->C + tv_off(&j->c, &j->c, i);
            *q = blend(j->alpha, v, j->beta, q);
        }
    }
    free(j);
}

static cudnnStatus_t float_desc(const char *call, const char *what,
                                const cudnnTensorDescriptor_t d) {
    if (!d || !d->set)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "%s descriptor is NULL or unset", what);
    if (d->dt != CUDNN_DATA_FLOAT)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "%s data type %d (emulator: float only)", what, (int)d->dt);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnActivationForward(cudnnHandle_t h, cudnnActivationDescriptor_t ad,
                                     const void *alpha, const cudnnTensorDescriptor_t xd,
                                     const void *x, const void *beta,
                                     const cudnnTensorDescriptor_t yd, void *y) {
    const char *call = "cudnnActivationForward";
    cudnnStatus_t st;
    double a = 0, b = 0;
    if (!h || !ad || !ad->set)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "handle or activation descriptor unset");
    if ((st = float_desc(call, "x", xd)) || (st = float_desc(call, "y", yd))) return st;
    if (xd->nb != yd->nb)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x and y differ in nbDims");
    for (int i = 0; i < xd->nb; i++)
        if (xd->dim[i] != yd->dim[i])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x and y differ in dim %d", i);
    if ((st = check_scalars(call, alpha, beta, &a, &b))) return st;
    if ((st = check_dev(call, "x", x, (size_t)t_extent(xd) * sizeof(float))) ||
        (st = check_dev(call, "y", y, (size_t)t_extent(yd) * sizeof(float))))
        return st;
    ew_job *j = emu_xcalloc(1, sizeof *j);
    j->op = EW_ACT;
    j->a = tv_of(xd), j->c = tv_of(yd);
    j->A = x, j->C = y, j->alpha = a, j->beta = b, j->act = *ad;
    emu_stream_enqueue(h->stream, ew_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t ad,
                             const void *A, const void *beta, const cudnnTensorDescriptor_t cd,
                             void *C) {
    const char *call = "cudnnAddTensor";
    cudnnStatus_t st;
    double a = 0, b = 0;
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
    if ((st = float_desc(call, "A", ad)) || (st = float_desc(call, "C", cd))) return st;
    /* cuDNN: each dim of A matches C's or is 1 (and only up to 5-d). */
    if (ad->nb != cd->nb)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "A and C differ in nbDims");
    if (cd->nb > 5) return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "%d-d tensors", cd->nb);
    for (int i = 0; i < ad->nb; i++)
        if (ad->dim[i] != 1 && ad->dim[i] != cd->dim[i])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "A dim %d is %d, C's %d", i,
                                  ad->dim[i], cd->dim[i]);
    if ((st = check_scalars(call, alpha, beta, &a, &b))) return st;
    if ((st = check_dev(call, "A", A, (size_t)t_extent(ad) * sizeof(float))) ||
        (st = check_dev(call, "C", C, (size_t)t_extent(cd) * sizeof(float))))
        return st;
    ew_job *j = emu_xcalloc(1, sizeof *j);
    j->op = EW_ADD;
    j->a = tv_of(ad), j->c = tv_of(cd);
    j->A = A, j->C = C, j->alpha = a, j->beta = b;
    emu_stream_enqueue(h->stream, ew_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

/* y = act(alpha1 conv(x, w) + alpha2 z + bias): the convolution job, then the
 * bias and the activation as element-wise jobs on the same stream. cuDNN's
 * rules checked: z shaped as y, bias (1, C, 1..), RELU or IDENTITY (IDENTITY
 * only with IMPLICIT_PRECOMP_GEMM). The emulator computes float data with
 * alpha2 = 0 (z unread) only, and says so otherwise. EMU_CUDNN_REFUSE=<this
 * function's name> makes it answer NOT_SUPPORTED (cuDNN's answer for a shape
 * no fused engine takes), to test the caller's fallback. */
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void *alpha1, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes, const void *alpha2,
    const cudnnTensorDescriptor_t zd, const void *z, const cudnnTensorDescriptor_t bd,
    const void *bias, const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t yd,
    void *y) {
    const char *call = "cudnnConvolutionBiasActivationForward";
    cudnnStatus_t st;
    cgeo q;
    const char *refuse = getenv("EMU_CUDNN_REFUSE"); /* a test of the caller's fallback */
    if (refuse && strcmp(refuse, call) == 0)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "refused (EMU_CUDNN_REFUSE)");
    if ((st = conv_geo(call, xd, wd, cd, yd, &q))) return st;
    if ((st = float_desc(call, "y", yd)) || (st = float_desc(call, "z", zd)) ||
        (st = float_desc(call, "bias", bd)))
        return st;
    if (!ad || !ad->set)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "activation descriptor unset");
    if (ad->mode != CUDNN_ACTIVATION_RELU && ad->mode != CUDNN_ACTIVATION_IDENTITY)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "activation mode %d (RELU or IDENTITY)", (int)ad->mode);
    if (ad->mode == CUDNN_ACTIVATION_IDENTITY &&
        algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "IDENTITY activation with algorithm %d (IMPLICIT_PRECOMP_GEMM only)",
                              (int)algo);
    if (zd->nb != yd->nb || bd->nb != yd->nb)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "z, bias and y differ in nbDims");
    for (int i = 0; i < yd->nb; i++) {
        if (zd->dim[i] != yd->dim[i])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "z and y differ in dim %d", i);
        if (bd->dim[i] != (i == 1 ? yd->dim[1] : 1))
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "bias dim %d is %d, not %d", i,
                                  bd->dim[i], i == 1 ? yd->dim[1] : 1);
    }
    double a2 = 0, unused = 0;
    if ((st = check_scalars(call, alpha2, alpha2, &a2, &unused))) return st;
    if (a2 != 0.0)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "alpha2 %g (emulator: 0 only)", a2);
    if ((st = check_dev(call, "bias", bias, (size_t)t_extent(bd) * sizeof(float)))) return st;
    (void)z;
    const float zero = 0.0f, one = 1.0f;
    if ((st = conv_enqueue(call, h, K_FWD, (int)algo, &q, alpha1, &zero, x, q.x_bytes, "x", w,
                           q.w_bytes, "w", y, q.y_bytes, "y", ws, ws_bytes)))
        return st;
    if ((st = cudnnAddTensor(h, &one, bd, bias, &one, yd, y))) return st;
    return cudnnActivationForward(h, ad, &one, yd, y, &zero, yd, y);
}

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t h, const void *alpha,
                                           const cudnnTensorDescriptor_t dyd, const void *dy,
                                           const void *beta, const cudnnTensorDescriptor_t dbd,
                                           void *db) {
    const char *call = "cudnnConvolutionBackwardBias";
    cudnnStatus_t st;
    double a = 0, b = 0;
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
    if ((st = float_desc(call, "dy", dyd)) || (st = float_desc(call, "db", dbd))) return st;
    if (dyd->nb != dbd->nb || dyd->nb < 4)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "nbDims dy %d, db %d", dyd->nb,
                              dbd->nb);
    for (int i = 0; i < dbd->nb; i++)
        if (dbd->dim[i] != (i == 1 ? dyd->dim[1] : 1))
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "db dim %d is %d (db must be 1 x C x 1 ..., C = %d)", i,
                                  dbd->dim[i], dyd->dim[1]);
    if ((st = check_scalars(call, alpha, beta, &a, &b))) return st;
    if ((st = check_dev(call, "dy", dy, (size_t)t_extent(dyd) * sizeof(float))) ||
        (st = check_dev(call, "db", db, (size_t)t_extent(dbd) * sizeof(float))))
        return st;
    ew_job *j = emu_xcalloc(1, sizeof *j);
    j->op = EW_BIAS_GRAD;
    j->a = tv_of(dyd), j->c = tv_of(dbd);
    j->A = dy, j->C = db, j->alpha = a, j->beta = b;
    emu_stream_enqueue(h->stream, ew_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- batch normalization (SPATIAL) ---- */

/* ---- pooling ---- */

#define POOL_MAX_CELLS 4096 /* emulator limit on a window's cells */

struct cudnnPoolingStruct {
    bool set;
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan;
    int nsp;
    int win[3], pad[3], str[3];
};

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t *d) {
    if (!d) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreatePoolingDescriptor", "NULL");
    *d = emu_xcalloc(1, sizeof **d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t d, const cudnnPoolingMode_t mode,
                                          const cudnnNanPropagation_t nan, int nb, const int win[],
                                          const int pad[], const int str[]) {
    const char *call = "cudnnSetPoolingNdDescriptor";
    if (!d || !win || !pad || !str)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL argument");
    if (nb < 2 || nb > 3)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call, "nbDims %d (2 or 3)", nb);
    if (mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "mode %d", (int)mode);
    for (int i = 0; i < nb; i++)
        if (win[i] < 1 || str[i] < 1 || pad[i] < 0 || pad[i] >= win[i])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "dim %d: window %d, padding %d, stride %d", i, win[i], pad[i],
                                  str[i]);
    int64_t cells = 1;
    for (int i = 0; i < nb; i++) cells *= win[i];
    if (cells > POOL_MAX_CELLS)
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "a window of %lld cells (emulator: at most %d)", (long long)cells,
                              POOL_MAX_CELLS);
    d->set = true, d->mode = mode, d->nan = nan, d->nsp = nb;
    for (int i = 0; i < 3; i++) {
        d->win[i] = i < nb ? win[i] : 1;
        d->pad[i] = i < nb ? pad[i] : 0;
        d->str[i] = i < nb ? str[i] : 1;
    }
    return CUDNN_STATUS_SUCCESS;
}

static bool packed(const struct cudnnTensorStruct *t) {
    int64_t acc = 1;
    for (int i = t->nb - 1; i >= 0; i--) {
        if (t->str[i] != acc) return false;
        acc *= t->dim[i];
    }
    return true;
}

typedef struct pool_job {
    struct cudnnPoolingStruct p;
    int64_t planes, in[3], out[3];
    const float *x, *y, *dy;
    float *dst;
    double alpha, beta;
    bool backward;
} pool_job;

/* Window cells of output position o (flat within a plane) -> input offsets
 * (within a plane), -1 for a padded cell; returns the cell count. */
static int pool_cells(const pool_job *j, int64_t o, int64_t *cell) {
    int64_t oc[3];
    for (int d = 2; d >= 0; d--) oc[d] = o % j->out[d], o /= j->out[d];
    int n = 0;
    for (int a = 0; a < j->p.win[0]; a++)
        for (int b = 0; b < j->p.win[1]; b++)
            for (int e = 0; e < j->p.win[2]; e++) {
                int64_t k[3] = {a, b, e}, off = 0;
                bool in = true;
                for (int d = 0; d < 3; d++) {
                    int64_t v = oc[d] * j->p.str[d] - j->p.pad[d] + k[d];
                    if (v < 0 || v >= j->in[d]) in = false;
                    off = off * j->in[d] + (in ? v : 0);
                }
                cell[n++] = in ? off : -1;
            }
    return n;
}

static void pool_run(void *arg) {
    pool_job *j = arg;
    int64_t isz = j->in[0] * j->in[1] * j->in[2], osz = j->out[0] * j->out[1] * j->out[2];
    int64_t cell[POOL_MAX_CELLS];
    bool is_max = j->p.mode == CUDNN_POOLING_MAX || j->p.mode == CUDNN_POOLING_MAX_DETERMINISTIC;
    double *acc = j->backward ? emu_xcalloc((size_t)isz, sizeof *acc) : NULL;
    for (int64_t pl = 0; pl < j->planes; pl++) {
        const float *x = j->x + pl * isz;
        if (j->backward) memset(acc, 0, (size_t)isz * sizeof *acc);
        for (int64_t o = 0; o < osz; o++) {
            int nc = pool_cells(j, o, cell), inside = 0;
            double m = -INFINITY, sum = 0;
            bool nan = false;
            for (int c = 0; c < nc; c++) {
                if (cell[c] < 0) continue;
                double v = x[cell[c]];
                inside++;
                sum += v;
                if (isnan(v)) nan = true;
                else if (v > m) m = v;
            }
            double count = j->p.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? nc : inside;
            if (!j->backward) {
                double r =
                    is_max ? (nan && j->p.nan == CUDNN_PROPAGATE_NAN ? NAN : m) : sum / count;
                j->dst[pl * osz + o] = blend(j->alpha, r, j->beta, &j->dst[pl * osz + o]);
                continue;
            }
            double g = j->dy[pl * osz + o];
            if (is_max) { /* the first cell equal to the window's y */
                float yv = j->y[pl * osz + o];
                for (int c = 0; c < nc; c++)
                    if (cell[c] >= 0 && (x[cell[c]] == yv || (isnan(yv) && isnan(x[cell[c]])))) {
                        acc[cell[c]] += g;
                        break;
                    }
            } else {
                for (int c = 0; c < nc; c++)
                    if (cell[c] >= 0) acc[cell[c]] += g / count;
            }
        }
        if (j->backward)
            for (int64_t i = 0; i < isz; i++)
                j->dst[pl * isz + i] = blend(j->alpha, acc[i], j->beta, &j->dst[pl * isz + i]);
    }
    free(acc);
    free(j);
}

/* The pooling's x / y descriptors: float, packed, rank nsp + 2, same N and C,
 * y's spatial dims the floor formula of x's. */
static cudnnStatus_t pool_check(const char *call, const cudnnPoolingDescriptor_t pd,
                                const cudnnTensorDescriptor_t xd, const cudnnTensorDescriptor_t yd,
                                pool_job *j) {
    cudnnStatus_t st;
    if (!pd || !pd->set)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "pooling descriptor NULL or unset");
    if ((st = float_desc(call, "x", xd)) || (st = float_desc(call, "y", yd))) return st;
    if (xd->nb != pd->nsp + 2 || yd->nb != xd->nb)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "tensors of rank %d / %d for a %d-d pooling", xd->nb, yd->nb,
                              pd->nsp);
    if (!packed(xd) || !packed(yd))
        return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                              "strided tensors (emulator: packed only)");
    if (xd->dim[0] != yd->dim[0] || xd->dim[1] != yd->dim[1])
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x and y differ in N or C");
    memset(j, 0, sizeof *j);
    j->p = *pd;
    j->planes = (int64_t)xd->dim[0] * xd->dim[1];
    for (int d = 0; d < 3; d++) {
        j->in[d] = d < pd->nsp ? xd->dim[2 + d] : 1;
        j->out[d] = d < pd->nsp ? yd->dim[2 + d] : 1;
        int64_t want = (j->in[d] + 2 * pd->pad[d] - pd->win[d]) / pd->str[d] + 1;
        if (j->in[d] + 2 * pd->pad[d] < pd->win[d] || j->out[d] != want)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "y spatial dim %d is %lld, the pooling gives %lld", d,
                                  (long long)j->out[d], (long long)want);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t h, const cudnnPoolingDescriptor_t pd,
                                  const void *alpha, const cudnnTensorDescriptor_t xd,
                                  const void *x, const void *beta, const cudnnTensorDescriptor_t yd,
                                  void *y) {
    const char *call = "cudnnPoolingForward";
    pool_job q;
    cudnnStatus_t st;
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle NULL");
    if ((st = pool_check(call, pd, xd, yd, &q)) ||
        (st = check_scalars(call, alpha, beta, &q.alpha, &q.beta)))
        return st;
    if ((st = check_dev(call, "x", x, (size_t)t_numel(xd) * sizeof(float))) ||
        (st = check_dev(call, "y", y, (size_t)t_numel(yd) * sizeof(float))))
        return st;
    pool_job *j = emu_xcalloc(1, sizeof *j);
    *j = q;
    j->x = x, j->dst = y;
    emu_stream_enqueue(h->stream, pool_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t h, const cudnnPoolingDescriptor_t pd,
                                   const void *alpha, const cudnnTensorDescriptor_t yd,
                                   const void *y, const cudnnTensorDescriptor_t dyd, const void *dy,
                                   const cudnnTensorDescriptor_t xd, const void *x,
                                   const void *beta, const cudnnTensorDescriptor_t dxd, void *dx) {
    const char *call = "cudnnPoolingBackward";
    pool_job q, q2;
    cudnnStatus_t st;
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle NULL");
    if ((st = pool_check(call, pd, xd, yd, &q)) || (st = pool_check(call, pd, dxd, dyd, &q2)) ||
        (st = check_scalars(call, alpha, beta, &q.alpha, &q.beta)))
        return st;
    for (int d = 0; d < 3; d++)
        if (q.in[d] != q2.in[d] || q.out[d] != q2.out[d] || q.planes != q2.planes)
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x/dx or y/dy shapes differ");
    size_t xb = (size_t)t_numel(xd) * sizeof(float), yb = (size_t)t_numel(yd) * sizeof(float);
    if ((st = check_dev(call, "y", y, yb)) || (st = check_dev(call, "dy", dy, yb)) ||
        (st = check_dev(call, "x", x, xb)) || (st = check_dev(call, "dx", dx, xb)))
        return st;
    pool_job *j = emu_xcalloc(1, sizeof *j);
    *j = q;
    j->x = x, j->y = y, j->dy = dy, j->dst = dx, j->backward = true;
    emu_stream_enqueue(h->stream, pool_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t dd,
                                            const cudnnTensorDescriptor_t xd,
                                            cudnnBatchNormMode_t mode) {
    const char *call = "cudnnDeriveBNTensorDescriptor";
    if (!dd || !xd || !xd->set)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "NULL or unset descriptor");
    if (xd->nb != 4 && xd->nb != 5)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x has %d dims (4 or 5)", xd->nb);
    if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT &&
        mode != CUDNN_BATCHNORM_PER_ACTIVATION)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "mode %d", (int)mode);
    int dim[CUDNN_DIM_MAX], str[CUDNN_DIM_MAX];
    for (int i = 0; i < xd->nb; i++)
        dim[i] = i == 0 ? 1 : i == 1 || mode == CUDNN_BATCHNORM_PER_ACTIVATION ? xd->dim[i] : 1;
    str[xd->nb - 1] = 1;
    for (int i = xd->nb - 2; i >= 0; i--) str[i] = str[i + 1] * dim[i + 1];
    /* half/bfloat16 data -> float parameters */
    cudnnDataType_t dt = xd->dt == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    return cudnnSetTensorNdDescriptor(dd, dt, xd->nb, dim, str);
}

/* x (N, C, S...) in a strided view; per-channel params packed in (1, C, 1..). */
typedef struct bn_geo {
    int64_t N, C, S;
    tv x, y; /* y: the y / dy view; x also used for dx */
    tv dx;
    int64_t pstr; /* stride of channel in the param tensor */
} bn_geo;

static cudnnStatus_t bn_check(const char *call, cudnnBatchNormMode_t mode,
                              const cudnnTensorDescriptor_t xd, const cudnnTensorDescriptor_t yd,
                              const cudnnTensorDescriptor_t pd, double eps, bn_geo *g) {
    cudnnStatus_t st;
    if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
        if (mode == CUDNN_BATCHNORM_PER_ACTIVATION)
            return emu_cudnn_fail(CUDNN_STATUS_NOT_SUPPORTED, call,
                                  "PER_ACTIVATION (emulator: SPATIAL only)");
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "mode %d", (int)mode);
    }
    if ((st = float_desc(call, "x", xd)) || (st = float_desc(call, "y", yd)) ||
        (st = float_desc(call, "bnScaleBiasMeanVar", pd)))
        return st;
    if (xd->nb != 4 && xd->nb != 5)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x has %d dims (4 or 5)", xd->nb);
    if (yd->nb != xd->nb)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x and y differ in nbDims");
    for (int i = 0; i < xd->nb; i++)
        if (yd->dim[i] != xd->dim[i])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x and y differ in dim %d", i);
    if (pd->nb != xd->nb)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "param tensor has %d dims", pd->nb);
    for (int i = 0; i < pd->nb; i++)
        if (pd->dim[i] != (i == 1 ? xd->dim[1] : 1))
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                                  "param dim %d is %d (must be 1 x C x 1 ..., C = %d)", i,
                                  pd->dim[i], xd->dim[1]);
    if (!(eps >= CUDNN_BN_MIN_EPSILON))
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "epsilon %g < CUDNN_BN_MIN_EPSILON %g",
                              eps, CUDNN_BN_MIN_EPSILON);
    memset(g, 0, sizeof *g);
    g->N = xd->dim[0];
    g->C = xd->dim[1];
    g->S = t_numel(xd) / g->N / g->C;
    g->x = tv_of(xd);
    g->y = tv_of(yd);
    g->pstr = pd->str[1];
    return CUDNN_STATUS_SUCCESS;
}

/* Offset of (n, c, s) — s linear over the spatial dims — in view v. */
static int64_t bn_off(const tv *v, int64_t n, int64_t c, int64_t s) {
    int64_t off = n * v->str[0] + c * v->str[1];
    for (int d = v->nb - 1; d >= 2; d--) {
        off += (s % v->dim[d]) * v->str[d];
        s /= v->dim[d];
    }
    return off;
}

static void bn_stats(const bn_geo *g, const float *x, int64_t c, double *mean, double *var) {
    double m = (double)(g->N * g->S), s = 0, q = 0;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t i = 0; i < g->S; i++) s += x[bn_off(&g->x, n, c, i)];
    *mean = s / m;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t i = 0; i < g->S; i++) {
            double d = x[bn_off(&g->x, n, c, i)] - *mean;
            q += d * d;
        }
    *var = q / m; /* biased */
}

enum { BN_TRAIN, BN_INFER, BN_BWD };

typedef struct bn_job {
    int op;
    bn_geo g;
    const float *x, *scale, *bias, *mean_in,
        *var_in; /* infer: estimated; bwd: saved mean / inv std */
    const float *dy;
    float *y; /* y or dx */
    float *rmean, *rvar, *smean, *sinv, *dscale, *dbias;
    double alpha, beta, alpha_p, beta_p, factor, eps;
} bn_job;

static void bn_run(void *p) {
    bn_job *j = p;
    const bn_geo *g = &j->g;
    double m = (double)(g->N * g->S);
    for (int64_t c = 0; c < g->C; c++) {
        int64_t pc = c * g->pstr;
        double mean, var, invstd;
        if (j->op == BN_INFER) {
            mean = j->mean_in[pc];
            invstd = 1.0 / sqrt((double)j->var_in[pc] + j->eps);
        } else if (j->op == BN_BWD && j->mean_in) {
            mean = j->mean_in[pc];
            invstd = j->var_in[pc];
        } else {
            bn_stats(g, j->x, c, &mean, &var);
            invstd = 1.0 / sqrt(var + j->eps);
            if (j->op == BN_TRAIN) {
                if (j->rmean) {
                    double unbiased = m > 1 ? var * m / (m - 1) : var;
                    j->rmean[pc] = (float)((1.0 - j->factor) * j->rmean[pc] + j->factor * mean);
                    j->rvar[pc] = (float)((1.0 - j->factor) * j->rvar[pc] + j->factor * unbiased);
                }
                if (j->smean) {
                    j->smean[pc] = (float)mean;
                    j->sinv[pc] = (float)invstd;
                }
            }
        }
        if (j->op != BN_BWD) {
            double sc = j->scale[pc], bi = j->bias[pc];
            for (int64_t n = 0; n < g->N; n++)
                for (int64_t i = 0; i < g->S; i++) {
                    double xv = j->x[bn_off(&g->x, n, c, i)];
                    float *q = j->y + bn_off(&g->y, n, c, i);
                    *q = blend(j->alpha, sc * (xv - mean) * invstd + bi, j->beta, q);
                }
            continue;
        }
        /* backward: dbias = sum dy; dscale = sum dy * xhat;
         * dx = scale * invstd / m * (m * dy - dbias - xhat * dscale) */
        double sdy = 0, sdyx = 0;
        for (int64_t n = 0; n < g->N; n++)
            for (int64_t i = 0; i < g->S; i++) {
                double d = j->dy[bn_off(&g->y, n, c, i)];
                sdy += d;
                sdyx += d * ((double)j->x[bn_off(&g->x, n, c, i)] - mean) * invstd;
            }
        double k = j->scale[pc] * invstd / m;
        for (int64_t n = 0; n < g->N; n++)
            for (int64_t i = 0; i < g->S; i++) {
                double xhat = ((double)j->x[bn_off(&g->x, n, c, i)] - mean) * invstd;
                double d = j->dy[bn_off(&g->y, n, c, i)];
                float *q = j->y + bn_off(&g->dx, n, c, i);
                *q = blend(j->alpha, k * (m * d - sdy - xhat * sdyx), j->beta, q);
            }
        j->dscale[pc] = blend(j->alpha_p, sdyx, j->beta_p, &j->dscale[pc]);
        j->dbias[pc] = blend(j->alpha_p, sdy, j->beta_p, &j->dbias[pc]);
    }
    free(j);
}

static size_t bytes_of(const cudnnTensorDescriptor_t d) {
    return (size_t)t_extent(d) * sizeof(float);
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xd, const void *x, const cudnnTensorDescriptor_t yd, void *y,
    const cudnnTensorDescriptor_t pd, const void *scale, const void *bias, double factor,
    void *rmean, void *rvar, double eps, void *smean, void *sinv) {
    const char *call = "cudnnBatchNormalizationForwardTraining";
    bn_geo g;
    double a = 0, b = 0;
    cudnnStatus_t st;
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
    if ((st = bn_check(call, mode, xd, yd, pd, eps, &g)) ||
        (st = check_scalars(call, alpha, beta, &a, &b)))
        return st;
    if (!rmean != !rvar)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "resultRunningMean and resultRunningVariance: one is NULL");
    if (!smean != !sinv)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "resultSaveMean and resultSaveInvVariance: one is NULL");
    size_t pb = bytes_of(pd);
    if ((st = check_dev(call, "x", x, bytes_of(xd))) ||
        (st = check_dev(call, "y", y, bytes_of(yd))) ||
        (st = check_dev(call, "bnScale", scale, pb)) ||
        (st = check_dev(call, "bnBias", bias, pb)) ||
        (rmean && ((st = check_dev(call, "resultRunningMean", rmean, pb)) ||
                   (st = check_dev(call, "resultRunningVariance", rvar, pb)))) ||
        (smean && ((st = check_dev(call, "resultSaveMean", smean, pb)) ||
                   (st = check_dev(call, "resultSaveInvVariance", sinv, pb)))))
        return st;
    bn_job *j = emu_xcalloc(1, sizeof *j);
    *j = (bn_job){.op = BN_TRAIN,
                  .g = g,
                  .x = x,
                  .scale = scale,
                  .bias = bias,
                  .y = y,
                  .rmean = rmean,
                  .rvar = rvar,
                  .smean = smean,
                  .sinv = sinv,
                  .alpha = a,
                  .beta = b,
                  .factor = factor,
                  .eps = eps};
    emu_stream_enqueue(h->stream, bn_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alpha, const void *beta,
    const cudnnTensorDescriptor_t xd, const void *x, const cudnnTensorDescriptor_t yd, void *y,
    const cudnnTensorDescriptor_t pd, const void *scale, const void *bias, const void *emean,
    const void *evar, double eps) {
    const char *call = "cudnnBatchNormalizationForwardInference";
    bn_geo g;
    double a = 0, b = 0;
    cudnnStatus_t st;
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
    if ((st = bn_check(call, mode, xd, yd, pd, eps, &g)) ||
        (st = check_scalars(call, alpha, beta, &a, &b)))
        return st;
    size_t pb = bytes_of(pd);
    if ((st = check_dev(call, "x", x, bytes_of(xd))) ||
        (st = check_dev(call, "y", y, bytes_of(yd))) ||
        (st = check_dev(call, "bnScale", scale, pb)) ||
        (st = check_dev(call, "bnBias", bias, pb)) ||
        (st = check_dev(call, "estimatedMean", emean, pb)) ||
        (st = check_dev(call, "estimatedVariance", evar, pb)))
        return st;
    bn_job *j = emu_xcalloc(1, sizeof *j);
    *j = (bn_job){.op = BN_INFER,
                  .g = g,
                  .x = x,
                  .scale = scale,
                  .bias = bias,
                  .mean_in = emean,
                  .var_in = evar,
                  .y = y,
                  .alpha = a,
                  .beta = b,
                  .eps = eps};
    emu_stream_enqueue(h->stream, bn_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t h, cudnnBatchNormMode_t mode, const void *alphaD, const void *betaD,
    const void *alphaP, const void *betaP, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnTensorDescriptor_t dxd, void *dx,
    const cudnnTensorDescriptor_t pd, const void *scale, void *dscale, void *dbias, double eps,
    const void *smean, const void *sinv) {
    const char *call = "cudnnBatchNormalizationBackward";
    bn_geo g;
    double a = 0, b = 0, ap = 0, bp = 0;
    cudnnStatus_t st;
    if (!h) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
    if ((st = bn_check(call, mode, xd, dyd, pd, eps, &g)) || (st = float_desc(call, "dx", dxd)) ||
        (st = check_scalars(call, alphaD, betaD, &a, &b)) ||
        (st = check_scalars(call, alphaP, betaP, &ap, &bp)))
        return st;
    if (dxd->nb != xd->nb)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x and dx differ in nbDims");
    for (int i = 0; i < xd->nb; i++)
        if (dxd->dim[i] != xd->dim[i])
            return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x and dx differ in dim %d", i);
    if (!smean != !sinv)
        return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call,
                              "savedMean and savedInvVariance: one is NULL");
    size_t pb = bytes_of(pd);
    if ((st = check_dev(call, "x", x, bytes_of(xd))) ||
        (st = check_dev(call, "dy", dy, bytes_of(dyd))) ||
        (st = check_dev(call, "dx", dx, bytes_of(dxd))) ||
        (st = check_dev(call, "bnScale", scale, pb)) ||
        (st = check_dev(call, "dBnScaleResult", dscale, pb)) ||
        (st = check_dev(call, "dBnBiasResult", dbias, pb)) ||
        (smean && ((st = check_dev(call, "savedMean", smean, pb)) ||
                   (st = check_dev(call, "savedInvVariance", sinv, pb)))))
        return st;
    g.dx = tv_of(dxd);
    bn_job *j = emu_xcalloc(1, sizeof *j);
    *j = (bn_job){.op = BN_BWD,
                  .g = g,
                  .x = x,
                  .scale = scale,
                  .mean_in = smean,
                  .var_in = sinv,
                  .dy = dy,
                  .y = dx,
                  .dscale = dscale,
                  .dbias = dbias,
                  .alpha = a,
                  .beta = b,
                  .alpha_p = ap,
                  .beta_p = bp,
                  .eps = eps};
    emu_stream_enqueue(h->stream, bn_run, j, sizeof *j);
    return CUDNN_STATUS_SUCCESS;
}
