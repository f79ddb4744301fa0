/* cpu_update.c — the optimizer ops (op_update.c), PyTorch's update rules, in
 * place (outputs alias W and the state; distinct buffers work too), each
 * member of a multi-tensor update (op_update.h) in turn, as its own node would
 * be. g is dW times the ClipGradNorm scale when the node has that input.
 *   SGDMomentum (torch.optim.SGD, dampening 0, not Nesterov):
 *     g = g + weight_decay * W;  M = momentum * M + g (M starts at 0);  W -= lr * M
 *   AdamW (torch.optim.AdamW, t = step + 1, or K + 1 with the step count K, then K' = t):
 *     W *= 1 - lr * weight_decay;  M = M + (1 - beta1) (g - M);
 *     V = beta2 V + (1 - beta2) g^2;
 *     W -= lr / (1 - beta1^t) * M / (sqrt(V) / sqrt(1 - beta2^t) + eps)
 *   ClipGradNorm (torch.nn.utils.clip_grad_norm_): the L2 norm of every
 *     gradient's L2 norm; scale = min(1, max_norm / (norm + 1e-6)); prescaled
 *     (after GradScaler): of the gradients times coef, and scale = coef * that
 *     (0 when coef is 0);
 *   GradScaler (torch.amp.GradScaler, op_update.c): coef = 1/S if every
 *     gradient is finite (their sum of squares, in double, is), else 0; S and
 *     the tracker updated in place.
 * An update whose scale is 0 (GradScaler found inf/NaN) changes nothing: its
 * outputs are its inputs (scaler.step skips optimizer.step).
 * Elementwise, float; sums in double. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"
#include "ir/ops/op_update.h"

/* The ClipGradNorm / GradScaler scale the node reads (the layout's slot), or 1. */
static float grad_scale(const kernel_args *a, const op_update_layout *l) {
    return l->scale >= 0 && a->in[l->scale] ? *(const float *)a->in[l->scale] : 1.0f;
}

/* A skipped step (scale 0): every output its input, copied unless in place. */
static void keep_state(const kernel_args *a) {
    for (int o = 0; o < a->n->n_outputs; o++) {
        int i = op_update_alias(a->n, o);
        size_t bytes = (size_t)kernel_numel(kernel_in(a, i)) * sizeof(float);
        if (a->out[o] != a->in[i]) memcpy(a->out[o], a->in[i], bytes);
    }
}

/* W, dW, M [, scale] -> W', M' (per member) */
int cpu_sgd_momentum(const kernel_args *a, oc_err *err) {
    op_update_layout l;
    if (kernel_update_layout(a, &l, err)) return OC_ERR;
    const op_sgd_args *p = &op_args_of(a->n)->sgd;
    float lr = p->lr, mom = p->momentum, wd = p->weight_decay, s = grad_scale(a, &l);
    if (s == 0.0f) {
        keep_state(a);
        return OC_OK;
    }
    for (int k = 0; k < l.members; k++) {
        int in = k * l.width, out = k * l.out_width;
        const float *w = a->in[in], *dw = a->in[in + 1], *m = a->in[in + 2];
        float *wo = a->out[out], *mo = a->out[out + 1];
        int64_t n = kernel_numel(kernel_in(a, in));
        for (int64_t i = 0; i < n; i++) {
            float g = dw[i] * s + wd * w[i];
            float mi = mom * m[i] + g;
            mo[i] = mi;
            wo[i] = w[i] - lr * mi;
        }
    }
    return OC_OK;
}

/* W, dW, M, V [, scale [, K]] -> W', M', V' [, K'] (per member) */
int cpu_adamw(const kernel_args *a, oc_err *err) {
    op_update_layout l;
    if (kernel_update_layout(a, &l, err)) return OC_ERR;
    const op_adamw_args *p = &op_args_of(a->n)->adamw;
    float b1 = p->beta1, b2 = p->beta2, s = grad_scale(a, &l);
    if (s == 0.0f) {
        keep_state(a);
        return OC_OK;
    }
    float decay = 1.0f - p->lr * p->weight_decay;
    for (int k = 0; k < l.members; k++) {
        int in = k * l.width, out = k * l.out_width;
        const float *count = l.counts >= 0 ? a->in[l.counts + k] : NULL;
        double t = (count ? (double)*count : (double)a->step) + 1.0;
        if (count) *(float *)a->out[l.out_width * l.members + k] = (float)t;
        float step_size = (float)((double)p->lr / (1.0 - pow(b1, t)));
        float bc2_sqrt = (float)sqrt(1.0 - pow(b2, t));
        const float *w = a->in[in], *dw = a->in[in + 1], *m = a->in[in + 2], *v = a->in[in + 3];
        float *wo = a->out[out], *mo = a->out[out + 1], *vo = a->out[out + 2];
        int64_t n = kernel_numel(kernel_in(a, in));
        for (int64_t i = 0; i < n; i++) {
            float g = dw[i] * s;
            float mi = m[i] + (1.0f - b1) * (g - m[i]);
            float vi = b2 * v[i] + (1.0f - b2) * g * g;
            mo[i] = mi;
            vo[i] = vi;
            wo[i] = w[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + p->epsilon);
        }
    }
    return OC_OK;
}

/* The sum of squares of inputs [from, n_inputs), tensor by tensor, in double. */
static int sum_squares(const kernel_args *a, int from, double *total, oc_err *err) {
    *total = 0;
    for (int k = from; k < a->n->n_inputs; k++) {
        const ir_tensor *t = kernel_in(a, k);
        if (kernel_want_dtype(a, t, IR_DTYPE_FLOAT, err)) return OC_ERR;
        const float *g = a->in[k];
        double sq = 0;
        for (int64_t i = 0, n = kernel_numel(t); i < n; i++) sq += (double)g[i] * g[i];
        *total += sq;
    }
    return OC_OK;
}

/* [coef,] dW1..dWk -> scale [1] */
int cpu_clip_grad_norm(const kernel_args *a, oc_err *err) {
    const op_clip_norm_args *p = &op_args_of(a->n)->clip_norm;
    double total, pre = p->prescaled ? (double)*(const float *)a->in[0] : 1.0;
    if (sum_squares(a, p->prescaled ? 1 : 0, &total, err)) return OC_ERR;
    if (pre == 0.0) {
        *(float *)a->out[0] = 0.0f;
        return OC_OK;
    }
    double coef = (double)p->max_norm / (sqrt(total) * pre + 1e-6);
    *(float *)a->out[0] = (float)(pre * (coef < 1.0 ? coef : 1.0));
    return OC_OK;
}

/* S, T, dW1..dWk -> coef [1], S', T' (in place or not) */
int cpu_grad_scaler(const kernel_args *a, oc_err *err) {
    const op_grad_scaler_args *p = &op_args_of(a->n)->grad_scaler;
    double total;
    if (sum_squares(a, 2, &total, err)) return OC_ERR;
    float s = *(const float *)a->in[0], t = *(const float *)a->in[1];
    bool finite = isfinite(total);
    *(float *)a->out[0] = finite ? 1.0f / s : 0.0f;
    if (!finite) {
        s *= p->backoff;
        t = 0.0f;
    } else if ((t += 1.0f) >= (float)p->interval) {
        if (isfinite(s * p->growth)) s *= p->growth; /* as _amp_update_scale_ */
        t = 0.0f;
    }
    *(float *)a->out[1] = s;
    *(float *)a->out[2] = t;
    return OC_OK;
}
