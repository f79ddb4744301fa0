/* grad_loss.c — gradient of SoftmaxCrossEntropyLoss, the root of backward:
 *   dScores = SoftmaxCrossEntropyLossGrad(log_prob, labels)
 *           = (exp(log_prob) - onehot(labels)) / N   (reduction mean)
 * The loss gradient seed is 1, or the dynamic loss scale S (--loss-scale:
 * GradScaler's scaler.scale(loss)) as a third input; log_prob is added as an
 * output if missing. */
#include "ir/ops/grad_rules.h"

int op_grad_softmax_cross_entropy(grad_ctx *c) {
    if (!grad_wants(c, 0)) return OC_OK;
    int logp = grad_fwd_out(c, 1);
    if (logp < 0 && (logp = grad_fwd_add_output(c, "log_prob")) < 0) return OC_ERR;
    int b = grad_node(c, "grad", OP_SOFTMAX_CROSS_ENTROPY_GRAD);
    grad_in(c, b, logp);              /* log_prob (N, C) saved */
    grad_in(c, b, grad_fwd_in(c, 1)); /* labels (N) */
    int scale = grad_loss_scale(c);
    if (scale >= 0) grad_in(c, b, scale); /* S [1] */
    grad_out_dx(c, b, 0);                 /* dScores (N, C) */
    if (ir_attr_find(grad_fwd(c), "ignore_index"))
        grad_attr_int(c, b, "ignore_index", ir_attr_int(grad_fwd(c), "ignore_index", 0));
    const char *red = ir_attr_string(grad_fwd(c), "reduction", "mean");
    ir_attr a = {.name = "reduction", .type = IR_ATTR_STRING, .s = (char *)red};
    ir_node_add_attr(grad_graph(c), b, &a);
    return grad_finish(c, b);
}
