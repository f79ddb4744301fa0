/* grad_conv.c — gradients of Conv, ConvTranspose and ConvRelu.
 *   Conv:          dX = ConvBackwardData(dY, W)           (needs W)
 *                  dW, dB = ConvBackwardFilter(dY, X)      (needs X)
 *   ConvRelu:      dZ = ReluGrad(dY, Y), then Conv's with dZ (needs Y, W, X); with
 *                  fused_backward, dZ, dB = ReluGradBias(dY, Y) and the filter op
 *                  without dB
 *   ConvTranspose: dX = ConvTransposeBackwardData(dY, W)  (a forward conv of dY)
 *                  dW, dB = ConvTransposeBackwardFilter(dY, X) */
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_table.h"

/* Forward attributes (ConvRelu's own left out), plus kernel_shape from W
 * when the model left it out. */
static void conv_attrs(grad_ctx *c, int node) {
    for (int i = 0; i < grad_fwd(c)->n_attrs; i++) {
        ir_attr a = grad_fwd(c)->attrs[i]; /* shallow view; ir_node_add_attr copies */
        if (!op_conv_relu_own_attr(a.name)) ir_node_add_attr(grad_graph(c), node, &a);
    }
    if (ir_attr_find(grad_fwd(c), "kernel_shape")) return;
    const ir_tensor *w = &grad_graph(c)->tensors[grad_fwd_in(c, 1)];
    int64_t k[IR_MAX_RANK];
    int nk = w->rank - 2;
    for (int i = 0; i < nk; i++) k[i] = w->dims[2 + i];
    OC_ASSERT(!grad_fwd(c)->channels_last); /* train/channels_last.c sets kernel_shape */
    grad_attr_ints(c, node, "kernel_shape", nk, k);
}

/* dY: the gradient of the convolution's output (ConvRelu: dZ); bias_done: the
 * bias gradient is made already (ReluGradBias). */
static int conv_like_grad(grad_ctx *c, int dy, op_kind data_op, op_kind filter_op, bool bias_done) {
    if (dy < 0) return OC_OK;
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    int64_t xdims[IR_MAX_RANK];
    for (int i = 0; i < rank; i++) xdims[i] = x->dims[i];
    if (grad_fwd(c)->channels_last && rank == 4) ir_dims_to_logical(xdims); /* the rules' view */
    if (grad_wants(c, 0)) {
        int b = grad_node(c, "grad_data", data_op);
        grad_in(c, b, dy);                /* dY (N, M, O..) */
        grad_in(c, b, grad_fwd_in(c, 1)); /* W  */
        grad_out_dx(c, b, 0);             /* dX (N, C, D..) */
        conv_attrs(c, b);
        grad_attr_ints(c, b, "input_shape", rank, xdims);
        if (grad_finish(c, b)) return OC_ERR;
    }
    bool has_bias = grad_fwd_in(c, 2) >= 0 && !bias_done;
    if (grad_wants(c, 1) || (has_bias && grad_wants(c, 2))) {
        int b = grad_node(c, "grad_filter", filter_op);
        grad_in(c, b, dy);                  /* dY */
        grad_in(c, b, grad_fwd_in(c, 0));   /* X  saved */
        grad_out_dx(c, b, 1);               /* dW like W */
        if (has_bias) grad_out_dx(c, b, 2); /* dB (M) */
        conv_attrs(c, b);
        if (grad_finish(c, b)) return OC_ERR;
    }
    return OC_OK;
}

int op_grad_conv(grad_ctx *c) {
    return conv_like_grad(c, grad_dy(c, 0), OP_CONV_BACKWARD_DATA, OP_CONV_BACKWARD_FILTER, false);
}

int op_grad_conv_transpose(grad_ctx *c) {
    return conv_like_grad(c, grad_dy(c, 0), OP_CONV_TRANSPOSE_BACKWARD_DATA,
                          OP_CONV_TRANSPOSE_BACKWARD_FILTER, false);
}

/* With fused_backward (--fuse all) and a bias that wants a gradient, the bias
 * gradient comes out of the pass that writes dZ (ReluGradBias). */
int op_grad_conv_relu(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    bool fused = grad_fwd_in(c, 2) >= 0 && grad_wants(c, 2) &&
                 ir_attr_int(grad_fwd(c), "fused_backward", 0) != 0;
    int r = grad_node(c, "grad_relu", fused ? OP_RELU_GRAD_BIAS : OP_RELU_GRAD);
    grad_in(c, r, dy);
    grad_in(c, r, grad_fwd_out(c, 0)); /* Y saved */
    int dz = grad_out_tmp(c, r, "grad_relu_out");
    if (fused) grad_out_dx(c, r, 2); /* dB */
    if (grad_finish(c, r)) return OC_ERR;
    return conv_like_grad(c, dz, OP_CONV_BACKWARD_DATA, OP_CONV_BACKWARD_FILTER, fused);
}
