/* cpu_norm.c — BatchNormalization (training and inference) and its gradient,
 * the fused BatchNormRelu and its gradient, LayerNormalization.
 *
 * Training numerics follow PyTorch (the gradients are compared with its
 * autograd): batch mean and *biased* variance normalise; the running
 * statistics use ONNX momentum semantics
 *     running = momentum * running + (1 - momentum) * batch
 * (PyTorch's momentum m exports as ONNX momentum 1 - m) with the *unbiased*
 * batch variance for running_var, as torch.nn.BatchNorm does. (ONNX's own
 * reference implementation uses the biased variance there; see
 * docs/conformance.md.) Sums are accumulated in double in a fixed order. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"
#include "ir/half.h"
#include "pointwise.h"

/* (N, C, S..) -> per-channel count, and the batch mean / biased variance. */
static void batch_stats(const float *x, int64_t N, int64_t C, int64_t S, double *mean,
                        double *var) {
    double cnt = (double)(N * S);
    for (int64_t c = 0; c < C; c++) {
        double s = 0;
        for (int64_t n = 0; n < N; n++) {
            const float *p = x + (n * C + c) * S;
            for (int64_t i = 0; i < S; i++) s += p[i];
        }
        double m = s / cnt, q = 0;
        for (int64_t n = 0; n < N; n++) {
            const float *p = x + (n * C + c) * S;
            for (int64_t i = 0; i < S; i++) q += ((double)p[i] - m) * ((double)p[i] - m);
        }
        mean[c] = m;
        var[c] = q / cnt;
    }
}

static void bn_dims(const ir_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->dims[0];
    *C = x->dims[1];
    *S = 1;
    for (int i = 2; i < x->rank; i++) *S *= x->dims[i];
}

/* BN's value of x: (x - mean) * (invstd * scale) + bias, the subtraction first and
 * in double (forward, and the fused gradient's Relu mask: the same bits). */
static inline float bn_value(float x, double m, double a_c, double b_c) {
    return (float)(((double)x - m) * a_c + b_c);
}

/* X (N, C, ..), scale, B, input_mean, input_var (C) -> Y (N, C, ..)
 * [, running_mean, running_var (C), in place on inputs 3, 4]
 * [, saved_mean, saved_var (C): batch mean and biased variance (opset <= 13)].
 * res (N, C, ..) added and relu applied after the normalisation for the fused
 * BatchNormRelu: the same float operations as BN, Add and Relu apart. */
static int bn_forward(const kernel_args *a, const float *res, bool relu, oc_err *err) {
    for (int i = 0; i < 5; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t N, C, S;
    bn_dims(kernel_in(a, 0), &N, &C, &S);
    const float *x = a->in[0], *scale = a->in[1], *bias = a->in[2];
    const float *rm = a->in[3], *rv = a->in[4];
    const op_bn_args *bn = &op_args_of(a->n)->bn;
    float eps = bn->epsilon, momentum = bn->momentum;
    float *y = a->out[0];
    bool train = bn->training;
    if (!train && a->n->n_outputs > 1)
        return kernel_fail(a, err, "inference mode with %d outputs", a->n->n_outputs);
    double *mean = oc_malloc((size_t)C * 2 * sizeof(double)), *var = mean + C;
    if (train) {
        batch_stats(x, N, C, S, mean, var);
    } else {
        for (int64_t c = 0; c < C; c++) mean[c] = rm[c], var[c] = rv[c];
    }
    /* Y = (X - mean) * (invstd * scale) + bias, the subtraction first and in double: folding
     * the mean into a float shift (X * a + b) cancels catastrophically when a channel's mean
     * is large against its spread (a small batch late in a network), flipping ReLU decisions
     * PyTorch does not flip. */
    for (int64_t c = 0; c < C; c++) {
        double invstd = 1.0 / sqrt(var[c] + (double)eps), a_c = invstd * scale[c], m = mean[c];
        double b_c = bias[c];
        for (int64_t n = 0; n < N; n++) {
            const float *p = x + (n * C + c) * S, *r = res ? res + (n * C + c) * S : NULL;
            float *q = y + (n * C + c) * S;
            for (int64_t i = 0; i < S; i++) q[i] = bn_value(p[i], m, a_c, b_c);
            /* the epilogue over the slice just written (in cache): plain loops vectorize */
            for (int64_t i = 0; r && i < S; i++) q[i] = q[i] + r[i];
            for (int64_t i = 0; relu && i < S; i++) q[i] = oc_relu(q[i]);
        }
    }
    if (train) {
        double cnt = (double)(N * S);
        double unbias = cnt > 1 ? cnt / (cnt - 1) : 1.0;
        float *om = a->n->n_outputs > 1 ? a->out[1] : NULL;
        float *ov = a->n->n_outputs > 2 ? a->out[2] : NULL;
        float *sm = a->n->n_outputs > 3 ? a->out[3] : NULL;
        float *sv = a->n->n_outputs > 4 ? a->out[4] : NULL;
        for (int64_t c = 0; c < C; c++) { /* reads in[c] before writing out[c]: in place is fine */
            if (om) om[c] = momentum * rm[c] + (1.0f - momentum) * (float)mean[c];
            if (ov) ov[c] = momentum * rv[c] + (1.0f - momentum) * (float)(var[c] * unbias);
            if (sm) sm[c] = (float)mean[c];
            if (sv) sv[c] = (float)var[c];
        }
    }
    oc_free(mean);
    return OC_OK;
}

int cpu_batch_norm(const kernel_args *a, oc_err *err) { return bn_forward(a, NULL, false, err); }

/* BatchNormRelu (op_bn_relu.c): X, scale, B, mean, var [, R] -> Relu(BN(X) [+ R]). */
int cpu_batch_norm_relu(const kernel_args *a, oc_err *err) {
    const float *res = NULL;
    if (a->n->n_inputs > 5 && a->n->inputs[5] >= 0) {
        if (kernel_want_dtype(a, kernel_in(a, 5), IR_DTYPE_FLOAT, err)) return OC_ERR;
        res = a->in[5];
    }
    return bn_forward(a, res, true, err);
}

/* dY, X (N, C, ..), scale (C) -> dX (N, C, ..), dScale (C), dBias (C).
 * Batch statistics are recomputed from X:
 *   xhat = (x - mean) * invstd
 *   dBias = sum dy;  dScale = sum dy * xhat
 *   dX = scale * invstd / M * (M * dy - dBias - xhat * dScale),  M = N * S */
/* LayerNormalization: rows of D = prod(dims[axis:]) elements, statistics in
 * double, Y = (X - mean) / sqrt(var + eps) * scale + bias. */
static void ln_rows(const kernel_args *a, int64_t *R, int64_t *D) {
    const ir_tensor *x = kernel_in(a, a->n->op == OP_LAYER_NORM ? 0 : 1);
    int64_t axis = op_args_of(a->n)->ln.axis;
    *D = 1;
    for (int d = (int)axis; d < x->rank; d++) *D *= x->dims[d];
    *R = *D ? kernel_numel(x) / *D : 0;
}

static void row_stats(const float *x, int64_t D, double eps, double *mean, double *invstd) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < D; i++) s += x[i];
    double m = D ? s / (double)D : 0;
    for (int64_t i = 0; i < D; i++) q += ((double)x[i] - m) * ((double)x[i] - m);
    *mean = m;
    *invstd = 1.0 / sqrt((D ? q / (double)D : 0) + eps);
}

int cpu_layer_norm(const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 2; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t R, D;
    ln_rows(a, &R, &D);
    const float *x = a->in[0], *s = a->in[1], *b = a->n->n_inputs > 2 ? a->in[2] : NULL;
    float *y = a->out[0];
    double eps = op_args_of(a->n)->ln.epsilon;
    for (int64_t r = 0; r < R; r++) {
        double m, is;
        row_stats(x + r * D, D, eps, &m, &is);
        for (int64_t i = 0; i < D; i++)
            y[r * D + i] = (float)(((double)x[r * D + i] - m) * is * s[i] + (b ? b[i] : 0.0f));
    }
    return OC_OK;
}

/* dX = invstd / D * (D g - sum g - xhat sum(g xhat)), g = dY * scale;
 * dScale = sum over rows of dY xhat; dB = sum over rows of dY. */
int cpu_layer_norm_grad(const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t R, D;
    ln_rows(a, &R, &D);
    const float *dy = a->in[0], *x = a->in[1], *s = a->in[2];
    float *dx = a->out[0];
    float *ds = a->n->n_outputs > 1 ? a->out[1] : NULL,
          *db = a->n->n_outputs > 2 ? a->out[2] : NULL;
    double eps = op_args_of(a->n)->ln.epsilon;
    double *acc = oc_calloc((size_t)(2 * D + 1), sizeof(double));
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * D, *dr = dy + r * D;
        double m, is, sg = 0, sgx = 0;
        row_stats(xr, D, eps, &m, &is);
        for (int64_t i = 0; i < D; i++) {
            double xh = ((double)xr[i] - m) * is, gi = (double)dr[i] * s[i];
            sg += gi;
            sgx += gi * xh;
            acc[i] += (double)dr[i] * xh;
            acc[D + i] += dr[i];
        }
        for (int64_t i = 0; dx && i < D; i++) {
            double xh = ((double)xr[i] - m) * is, gi = (double)dr[i] * s[i];
            dx[r * D + i] = (float)(is / (double)D * ((double)D * gi - sg - xh * sgx));
        }
    }
    for (int64_t i = 0; i < D; i++) {
        if (ds) ds[i] = (float)acc[i];
        if (db) db[i] = (float)acc[D + i];
    }
    oc_free(acc);
    return OC_OK;
}

/* dz[i] = dy[i] * (BN(x[i]) > 0) over one slice, BN(x) rounded as Y was stored
 * (dt: half under --precision), so the mask is Y > 0 exactly; returns dz. */
static const float *relu_masked(const float *dy, const float *x, int64_t S, double m, double a_c,
                                double b_c, ir_dtype dt, float *dz) {
    for (int64_t i = 0; i < S; i++)
        dz[i] = oc_relu_grad(dy[i], half_round(dt, bn_value(x[i], m, a_c, b_c)));
    return dz;
}

/* The gradient's inputs: dY at 0, X at 1, scale at 2; bias non-NULL (the fused
 * BatchNormReluGrad: B at 3): dY is Relu's, and the BN output's gradient dz =
 * dY * (BN(X) > 0) is taken slice by slice (one (n, c) plane), never stored
 * whole. Frozen: the running mean and var at stats_at, stats_at + 1. */
static int bn_backward(const kernel_args *a, int stats_at, const float *bias, oc_err *err) {
    const int x_at = 1;
    const int checked[] = {0, x_at, x_at + 1};
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, checked[i]), IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t N, C, S;
    bn_dims(kernel_in(a, x_at), &N, &C, &S);
    const float *dy = a->in[0], *x = a->in[x_at], *scale = a->in[x_at + 1];
    float eps = op_args_of(a->n)->bn.epsilon;
    float *dx = a->out[0];
    float *dscale = a->n->n_outputs > 1 ? a->out[1] : NULL;
    float *dbias = a->n->n_outputs > 2 ? a->out[2] : NULL;
    bool frozen = !op_args_of(a->n)->bn.training;
    if (frozen && (kernel_want_dtype(a, kernel_in(a, stats_at), IR_DTYPE_FLOAT, err) ||
                   kernel_want_dtype(a, kernel_in(a, stats_at + 1), IR_DTYPE_FLOAT, err)))
        return OC_ERR;
    double *mean = oc_malloc((size_t)C * 2 * sizeof(double)), *var = mean + C;
    if (frozen) { /* the running statistics: no batch-statistics terms */
        const float *rm = a->in[stats_at], *rv = a->in[stats_at + 1];
        for (int64_t c = 0; c < C; c++) mean[c] = rm[c], var[c] = rv[c];
    } else {
        batch_stats(x, N, C, S, mean, var);
    }
    double M = (double)(N * S);
    /* the type Y was stored in (the mask rounds as it was): X's */
    ir_dtype dt = a->stored ? a->stored[x_at] : IR_DTYPE_FLOAT;
    float *dz = bias ? oc_malloc((size_t)(S ? S : 1) * sizeof(float)) : NULL; /* one slice */
    for (int64_t c = 0; c < C; c++) {
        double invstd = 1.0 / sqrt(var[c] + (double)eps), sdy = 0, sdyx = 0;
        double a_c = invstd * scale[c], b_c = bias ? bias[c] : 0; /* bn_forward's */
#define DZ(o) (bias ? relu_masked(dy + (o), x + (o), S, mean[c], a_c, b_c, dt, dz) : dy + (o))
        for (int64_t n = 0; n < N; n++) {
            int64_t o = (n * C + c) * S;
            const float *p = x + o, *d = DZ(o);
            for (int64_t i = 0; i < S; i++) {
                sdy += d[i];
                sdyx += d[i] * ((double)p[i] - mean[c]) * invstd;
            }
        }
        if (dscale) dscale[c] = (float)sdyx;
        if (dbias) dbias[c] = (float)sdy;
        double k = scale[c] * invstd / M;
        for (int64_t n = 0; dx && n < N; n++) { /* dX omitted: the input needs no gradient */
            int64_t o = (n * C + c) * S;
            const float *p = x + o, *d = DZ(o);
            float *out = dx + o;
            for (int64_t i = 0; i < S; i++) {
                double xhat = ((double)p[i] - mean[c]) * invstd;
                out[i] = frozen ? (float)(scale[c] * invstd * d[i])
                                : (float)(k * (M * d[i] - sdy - xhat * sdyx));
            }
        }
    }
#undef DZ
    oc_free(dz);
    oc_free(mean);
    return OC_OK;
}

int cpu_batch_norm_grad(const kernel_args *a, oc_err *err) { return bn_backward(a, 3, NULL, err); }

/* BatchNormReluGrad (op_bn_relu.c): dY, X, scale, B [, mean, var] -> dX, dScale,
 * dBias. */
int cpu_batch_norm_relu_grad(const kernel_args *a, oc_err *err) {
    if (kernel_want_dtype(a, kernel_in(a, 3), IR_DTYPE_FLOAT, err)) return OC_ERR;
    return bn_backward(a, 4, a->in[3], err);
}
