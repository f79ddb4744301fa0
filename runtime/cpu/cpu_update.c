/* cpu_update.c — the optimizer ops (op_update.c), PyTorch's update rules, in
 * place (outputs alias W and the state; distinct buffers work too). g is dW
 * times the ClipGradNorm scale when the node has that input.
 *   SGDMomentum (torch.optim.SGD, dampening 0, not Nesterov):
 *     g = g + weight_decay * W;  M = momentum * M + g (M starts at 0);  W -= lr * M
 *   AdamW (torch.optim.AdamW, t = step + 1):
 *     W *= 1 - lr * weight_decay;  M = M + (1 - beta1) (g - M);
 *     V = beta2 V + (1 - beta2) g^2;
 *     W -= lr / (1 - beta1^t) * M / (sqrt(V) / sqrt(1 - beta2^t) + eps)
 *   ClipGradNorm (torch.nn.utils.clip_grad_norm_): the L2 norm of every
 *     gradient's L2 norm; scale = min(1, max_norm / (norm + 1e-6)).
 * Elementwise, float; sums in double. */
#include <math.h>

#include "cpu_internal.h"

/* The ClipGradNorm scale the node reads as input i, or 1. */
static float grad_scale(const kernel_args *a, int i) {
    return a->n->n_inputs > i && a->in[i] ? *(const float *)a->in[i] : 1.0f;
}

/* W, dW, M [, scale] -> W', M' */
int cpu_sgd_momentum(const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_sgd_args *p = &op_args_of(a->n)->sgd;
    float lr = p->lr, mom = p->momentum, wd = p->weight_decay, s = grad_scale(a, 3);
    const float *w = a->in[0], *dw = a->in[1], *m = a->in[2];
    float *wo = a->out[0], *mo = a->out[1];
    int64_t n = kernel_numel(kernel_in(a, 0));
    for (int64_t i = 0; i < n; i++) {
        float g = dw[i] * s + wd * w[i];
        float mi = mom * m[i] + g;
        mo[i] = mi;
        wo[i] = w[i] - lr * mi;
    }
    return OC_OK;
}

/* W, dW, M, V [, scale] -> W', M', V' */
int cpu_adamw(const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 4; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_adamw_args *p = &op_args_of(a->n)->adamw;
    double t = (double)a->step + 1.0;
    float b1 = p->beta1, b2 = p->beta2, s = grad_scale(a, 4);
    float decay = 1.0f - p->lr * p->weight_decay;
    float step_size = (float)((double)p->lr / (1.0 - pow(b1, t)));
    float bc2_sqrt = (float)sqrt(1.0 - pow(b2, t));
    const float *w = a->in[0], *dw = a->in[1], *m = a->in[2], *v = a->in[3];
    float *wo = a->out[0], *mo = a->out[1], *vo = a->out[2];
    int64_t n = kernel_numel(kernel_in(a, 0));
    for (int64_t i = 0; i < n; i++) {
        float g = dw[i] * s;
        float mi = m[i] + (1.0f - b1) * (g - m[i]);
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        mo[i] = mi;
        vo[i] = vi;
        wo[i] = w[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + p->epsilon);
    }
    return OC_OK;
}

/* dW1..dWk -> scale [1] */
int cpu_clip_grad_norm(const kernel_args *a, oc_err *err) {
    double total = 0;
    for (int k = 0; k < a->n->n_inputs; k++) {
        const ir_tensor *t = kernel_in(a, k);
        if (kernel_want_dtype(a, t, IR_DTYPE_FLOAT, err)) return OC_ERR;
        const float *g = a->in[k];
        double sq = 0;
        for (int64_t i = 0, n = kernel_numel(t); i < n; i++) sq += (double)g[i] * g[i];
        total += sq;
    }
    double coef = (double)op_args_of(a->n)->clip_norm.max_norm / (sqrt(total) + 1e-6);
    *(float *)a->out[0] = (float)(coef < 1.0 ? coef : 1.0);
    return OC_OK;
}
