/* cuda_norm_act.c — the fused BatchNormRelu and its gradient (op_bn_relu.c)
 * with our kernels (cu_bn_relu, cu_bn_relu_grad: cuda_batch_norm.cu), the cpu
 * kernels' numerics: statistics in double, Y written in one pass over X (and
 * R), no intermediate tensor; the gradient's batch statistics the forward's
 * (kept in the statistics stash, cuda_bn_stash.c: the bits X would give
 * again) or again from X, and the Relu mask from them (BN(X) > 0, the
 * forward's arithmetic: Y unread).
 * The data tensors (X, R, Y; dY, X, dX) are float32 or all of one half type
 * (--precision: read widened, stored rounded once, the cpu backend's
 * emulation); scale, bias and the statistics are float32. The same kernels
 * without the Relu run BatchNormalization and its gradient on half data (float32
 * ones go to cuDNN, cuda_norm.c). */
#include <stdlib.h>

#include "cuda_internal.h"

static void nchw(const ir_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->dims[0], *C = x->dims[1], *S = 1;
    for (int i = 2; i < x->rank; i++) *S *= x->dims[i];
}

/* Parts of a channel's statistics: whole images, about 4096 elements each;
 * channels-last (nhwc): ranges of rows, a thread walking each, as many as
 * fill the GPU (cu_channel_parts: ResNet-50 b640's stem, 64 channels of 8.0M
 * rows, 4096 parts of 1960 rows; its last stage, 2048 channels of 31360
 * rows, 128 of 245). OC_BN_PART_ELEMS overrides, for tests: small values make
 * many parts (channels-last: a quarter as many rows each). */
static int64_t bn_parts(int64_t N, int64_t S, int64_t C, bool nhwc) {
    static int64_t elems = -1;
    if (elems < 0) {
        const char *e = getenv("OC_BN_PART_ELEMS");
        long long v = e ? atoll(e) : 0;
        elems = v > 0 ? v : 0;
    }
    if (nhwc && !elems) return cu_channel_parts(N * S, C);
    int64_t per = !elems ? 4096 : nhwc && elems >= 4 ? elems / 4 : elems;
    int64_t p = (N * S + per - 1) / per;
    if (p > N && !nhwc) p = N;
    return p < 1 ? 1 : p;
}

/* X's input slot: BatchNormRelu and BatchNormalization 0, the gradients 1 (dY, X, ..). */
static int x_slot(const ir_node *n) {
    return n->op == OP_BATCH_NORM_RELU || n->op == OP_BATCH_NORM ? 0 : 1;
}

/* X's dims and the parts of a node. */
static int64_t node_dims(const ir_graph *g, const ir_node *n, int64_t *N, int64_t *C, int64_t *S) {
    nchw(&g->tensors[n->inputs[x_slot(n)]], N, C, S);
    return bn_parts(*N, *S, *C, n->channels_last);
}

static int want_types(const kernel_args *a, ir_dtype *dt, oc_err *err) {
    *dt = cuda_bn_relu_data_type(a->g, a->n);
    if (*dt == IR_DTYPE_UNDEFINED)
        return kernel_fail(a, err,
                           "takes data tensors of one float type (float32, float16 or "
                           "bfloat16) and float32 scale, bias and statistics");
    return OC_OK;
}

/* Scratch: the statistics, the gradient's sums (4 C doubles) and the parts (2 C P). */
size_t cuda_bn_relu_scratch(const ir_graph *g, const ir_node *n) {
    int64_t N, C, S, P = node_dims(g, n, &N, &C, &S);
    return (size_t)(4 * C + 2 * C * P) * sizeof(double);
}

/* BatchNormRelu (relu 1: X, scale, B, mean, var [, R]) or BatchNormalization on
 * half data (relu 0, cuda_native_half: X, scale, B, mean, var) -> Y [,
 * running_mean, running_var [, saved_mean, saved_var: BatchNormalization at
 * opset <= 13]]. */
static int bn_forward_run(const cuda_ctx *c, const kernel_args *a, int relu, oc_err *err) {
    ir_dtype dt;
    if (want_types(a, &dt, err)) return OC_ERR;
    const op_bn_args *bn = &op_args_of(a->n)->bn;
    if (!bn->training && a->n->n_outputs > 1)
        return kernel_fail(a, err, "inference mode with %d outputs", a->n->n_outputs);
    int64_t N, C, S, P = node_dims(a->g, a->n, &N, &C, &S);
    OC_ASSERT(a->scratch_bytes >= cuda_bn_relu_scratch(a->g, a->n));
    const void *r = relu && a->n->n_inputs > 5 ? a->in[5] : NULL;
    cuda_bn_stats *e = NULL; /* the batch statistics kept for the gradient */
    if (bn->training && !(e = cuda_bn_stash_entry(c, a, C, err))) return OC_ERR;
    CU_LAUNCH(cu_bn_relu(c->stream, cuda_float_kind(dt), relu, a->in[0], r, a->in[1], a->in[2],
                         a->in[3], a->in[4], bn->momentum, bn->epsilon, bn->training,
                         out_or_null(a, 1), out_or_null(a, 2), a->out[0], N, C, S,
                         a->n->channels_last, P, a->scratch, e ? e->d : NULL, e ? e->f : NULL));
    if (e) cuda_bn_stash_wrote(e, a, true, true);
    float *sm = relu ? NULL : out_or_null(a, 3), *sv = relu ? NULL : out_or_null(a, 4);
    if (!sm != !sv)
        return kernel_fail(a, err, "saved_mean and saved_var must both be present or absent");
    if (sm && bn->training) CU_LAUNCH(cu_bn_saved(c->stream, a->scratch, C, bn->epsilon, sm, sv));
    return OC_OK;
}

/* BatchNormReluGrad (relu 1: dY, X, scale, B [, mean, var]) or
 * BatchNormalizationGrad on half data (relu 0: dY, X, scale [, mean, var]) ->
 * dX, dScale, dBias; the batch statistics the forward's (the stash) or again
 * from X, the running ones when frozen. */
static int bn_grad_run(const cuda_ctx *c, const kernel_args *a, int relu, oc_err *err) {
    ir_dtype dt;
    if (want_types(a, &dt, err)) return OC_ERR;
    const op_bn_args *bn = &op_args_of(a->n)->bn;
    int64_t N, C, S, P = node_dims(a->g, a->n, &N, &C, &S);
    OC_ASSERT(a->scratch_bytes >= cuda_bn_relu_scratch(a->g, a->n));
    int st = relu ? 4 : 3; /* the running statistics' slot (after dY, X, scale [, B]) */
    const float *rm = bn->training ? NULL : a->in[st], *rv = bn->training ? NULL : a->in[st + 1];
    const cuda_bn_stats *e = cuda_bn_stash_for_grad(c, a, C, true); /* the forward's statistics */
    CU_LAUNCH(cu_bn_relu_grad(c->stream, cuda_float_kind(dt), relu, a->in[0], a->in[1], a->in[2],
                              relu ? a->in[3] : NULL, rm, rv, bn->epsilon, bn->training,
                              out_or_null(a, 0), out_or_null(a, 1), out_or_null(a, 2), N, C, S,
                              a->n->channels_last, P, a->scratch, e ? e->d : NULL));
    return OC_OK;
}

int cuda_batch_norm_relu(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return bn_forward_run(c, a, 1, err);
}
int cuda_batch_norm_relu_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return bn_grad_run(c, a, 1, err);
}
int cuda_batch_norm_half(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return bn_forward_run(c, a, 0, err);
}
int cuda_batch_norm_grad_half(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return bn_grad_run(c, a, 0, err);
}
