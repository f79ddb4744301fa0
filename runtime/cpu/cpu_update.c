/* cpu_update.c — SGDMomentum, PyTorch's torch.optim.SGD (dampening 0, not
 * Nesterov), in place (out[0] == in[0], out[1] == in[2]; distinct buffers
 * work too):
 *   g = dW + weight_decay * W
 *   M = momentum * M + g          (M starts at zero: the first step gives M = g)
 *   W = W - lr * M
 * Attributes lr, momentum, weight_decay (floats). Elementwise, float. */
#include "cpu_internal.h"

/* W, dW, M -> W', M' */
int cpu_sgd_momentum(const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_sgd_args *p = &op_args_of(a->n)->sgd;
    float lr = p->lr, mom = p->momentum, wd = p->weight_decay;
    const float *w = a->in[0], *dw = a->in[1], *m = a->in[2];
    float *wo = a->out[0], *mo = a->out[1];
    int64_t n = kernel_numel(kernel_in(a, 0));
    for (int64_t i = 0; i < n; i++) {
        float g = dw[i] + wd * w[i];
        float mi = mom * m[i] + g;
        mo[i] = mi;
        wo[i] = w[i] - lr * mi;
    }
    return OC_OK;
}
