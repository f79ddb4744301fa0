/* grad_norm.c — gradient of BatchNormalization:
 *   training:  dX, dScale, dBias = BatchNormalizationGrad(dY, X, scale)
 *     The batch mean and variance are recomputed from X (one pass over a tensor
 *     the gradient reads anyway), so both export forms (opset <= 13 with saved
 *     statistics, opset >= 14 without) need the same saved tensors: X and scale.
 *   frozen (an inference-form BN kept so by --bn frozen: fine-tuning):
 *              dX, dScale, dBias = BatchNormalizationGrad(dY, X, scale, mean, var)
 *     the statistics are the running ones: dX = dY * scale / sqrt(var + eps). */
#include "ir/ops/grad_rules.h"

int op_grad_batch_norm(grad_ctx *c) {
    const ir_node *f = grad_fwd(c);
    bool training =
        grad_graph(c)->opset >= 14 ? ir_attr_int(f, "training_mode", 0) != 0 : f->n_outputs > 1;
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    int b = grad_node(c, "grad", OP_BATCH_NORM_GRAD);
    grad_in(c, b, dy);                /* dY (N, C, ..) */
    grad_in(c, b, grad_fwd_in(c, 0)); /* X  saved */
    grad_in(c, b, grad_fwd_in(c, 1)); /* scale (C) */
    if (!training) {                  /* frozen (--bn frozen): the running statistics */
        grad_in(c, b, grad_fwd_in(c, 3));
        grad_in(c, b, grad_fwd_in(c, 4));
    }
    grad_out_dx(c, b, 0); /* dX (N, C, ..) */
    grad_out_dx(c, b, 1); /* dScale (C) */
    grad_out_dx(c, b, 2); /* dBias (C) */
    grad_attr_float(c, b, "epsilon", ir_attr_float(grad_fwd(c), "epsilon", 1e-5f));
    return grad_finish(c, b);
}
