/* cuda_pool.c — MaxPool through cuDNN pooling, where cuDNN can express the
 * window: float, no Indices output, dilation 1, symmetric pads, output dims of
 * the floor formula (no ceil-mode partial window). Otherwise (and for the
 * average pools) the own kernels of cuda_pad_pool.cu run (cuda_kernels.c); both give
 * the cpu kernel's values: cudnnPoolingForward, CUDNN_POOLING_MAX_DETERMINISTIC,
 * NaN propagated (the cpu kernel: NaN wins a window). MaxPoolGrad is always the
 * own kernel (cuda_kernels.c: k_max_pool_grad): cuDNN's backward needs Y, which
 * the training graph does not save, and was slower even with Y recomputed. */
#include <limits.h>
#include <string.h>

#include "cuda_internal.h"
#include "ir/ops/op_util.h"

typedef struct pool_geo {
    int nd;           /* tensor rank given to cuDNN (4 or 5) */
    int xd[5], yd[5]; /* N, C, spatial (a 1-d pool gets a trailing 1) */
    int win[3], pad[3], str[3];
} pool_geo;

static void packed_strides(int nd, const int *d, int *s) {
    s[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) s[i] = s[i + 1] * d[i + 1];
}

/* True (and *q filled) when cuDNN pooling computes node n's MaxPool window
 * on input x with output y exactly as ONNX does. */
static bool pool_geo_of(const ir_node *n, const ir_tensor *x, const ir_tensor *y, pool_geo *q) {
    memset(q, 0, sizeof *q);
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > 3 || y->rank != x->rank || x->dtype != IR_DTYPE_FLOAT) return false;
    if (n->n_outputs > 1 && n->outputs[1] >= 0) return false; /* Indices: own kernel */
    if (n->channels_last) return false;                       /* own kernel, in place */
    const op_window *w = &op_args_of(n)->pool.win;
    q->nd = nsp < 2 ? 4 : nsp + 2;
    for (int i = 0; i < 2; i++) {
        if (x->dims[i] > INT_MAX || y->dims[i] != x->dims[i]) return false;
        q->xd[i] = q->yd[i] = (int)x->dims[i];
    }
    for (int i = 0; i < 3; i++) q->win[i] = q->str[i] = 1;
    for (int i = 0; i < q->nd - 2; i++) q->xd[2 + i] = q->yd[2 + i] = 1;
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->dims[2 + i], k = w->kernel[i], p = w->pad_begin[i], s = w->stride[i];
        if (w->dilation[i] != 1 || w->pad_end[i] != p || in > INT_MAX || k > in + 2 * p || p >= k)
            return false;
        if (y->dims[2 + i] != (in + 2 * p - k) / s + 1) return false; /* ceil-mode window */
        q->xd[2 + i] = (int)in;
        q->yd[2 + i] = (int)y->dims[2 + i];
        q->win[i] = (int)k, q->pad[i] = (int)p, q->str[i] = (int)s;
    }
    int64_t nx = 1, ny = 1;
    for (int i = 0; i < q->nd; i++) nx *= q->xd[i], ny *= q->yd[i];
    return nx <= INT_MAX && ny <= INT_MAX;
}

bool cuda_pool_uses_cudnn(const ir_graph *g, const ir_node *n) {
    pool_geo q;
    return pool_geo_of(n, &g->tensors[n->inputs[0]], &g->tensors[n->outputs[0]], &q);
}

typedef struct pool_descs {
    cudnnTensorDescriptor_t x, y;
    cudnnPoolingDescriptor_t p;
} pool_descs;

static void pool_descs_free(pool_descs *d) {
    if (d->x) (void)cudnnDestroyTensorDescriptor(d->x);
    if (d->y) (void)cudnnDestroyTensorDescriptor(d->y);
    if (d->p) (void)cudnnDestroyPoolingDescriptor(d->p);
}

static cudnnStatus_t pool_descs_make(const pool_geo *q, pool_descs *d) {
    memset(d, 0, sizeof *d);
    int s[5];
    cudnnStatus_t st = cudnnCreateTensorDescriptor(&d->x);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreateTensorDescriptor(&d->y);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnCreatePoolingDescriptor(&d->p);
    if (st == CUDNN_STATUS_SUCCESS) {
        packed_strides(q->nd, q->xd, s);
        st = cudnnSetTensorNdDescriptor(d->x, CUDNN_DATA_FLOAT, q->nd, q->xd, s);
    }
    if (st == CUDNN_STATUS_SUCCESS) {
        packed_strides(q->nd, q->yd, s);
        st = cudnnSetTensorNdDescriptor(d->y, CUDNN_DATA_FLOAT, q->nd, q->yd, s);
    }
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnSetPoolingNdDescriptor(d->p, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_PROPAGATE_NAN,
                                         q->nd - 2, q->win, q->pad, q->str);
    return st;
}

int cuda_max_pool_cudnn(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    pool_geo q;
    if (!pool_geo_of(a->n, x, y, &q))
        return kernel_fail(a, err, "internal: cuDNN pooling chosen for a window it cannot express");
    if (kernel_numel(x) == 0) return OC_OK;
    CUDNN_CHECK(cudnnSetStream(c->im->dnn, c->stream));
    pool_descs d;
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st = pool_descs_make(&q, &d);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnPoolingForward(c->im->dnn, d.p, &one, d.x, a->in[0], &zero, d.y, a->out[0]);
    pool_descs_free(&d);
    CUDNN_CHECK(st);
    return OC_OK;
}
