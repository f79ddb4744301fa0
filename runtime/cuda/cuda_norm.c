/* cuda_norm.c — the cuda backend's normalizations:
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
 *   Half data: BatchNormalization by the BatchNormRelu kernels (cuda_norm_act.c), not
 *   cuDNN.
 *   Softmax, LogSoftmax and LayerNormalization, and their gradients: our kernels
 *   (cuda_softmax.cu, cuda_layer_norm.cu). */
#include <limits.h>
#include <string.h>

#include "cuda_internal.h"

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

/* dY, X, scale -> dX, dScale, dBias; the batch statistics from the stash when
 * this step's forward left them for this X, else recomputed by cuDNN from X
 * (as the cpu kernel does). */
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
