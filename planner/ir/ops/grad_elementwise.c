/* grad_elementwise.c — gradients of Relu, Clip, Dropout, Add. */
#include <string.h>

#include "ir/ops/grad_rules.h"

int op_grad_pointwise_of_y(grad_ctx *c, op_kind grad_op) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    int b = grad_node(c, "grad", grad_op);
    grad_in(c, b, dy);                 /* dY */
    grad_in(c, b, grad_fwd_out(c, 0)); /* Y saved */
    grad_out_dx(c, b, 0);              /* dX */
    return grad_finish(c, b);
}

int op_grad_pointwise_of_x(grad_ctx *c, op_kind grad_op) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    int b = grad_node(c, "grad", grad_op);
    grad_in(c, b, dy);                /* dY */
    grad_in(c, b, grad_fwd_in(c, 0)); /* X saved */
    grad_out_dx(c, b, 0);             /* dX */
    grad_copy_attrs(c, b);
    return grad_finish(c, b);
}

/* dX = dY * (Y > 0); reads Y (the output, often saved anyway by the next op). */
int op_grad_relu(grad_ctx *c) { return op_grad_pointwise_of_y(c, OP_RELU_GRAD); }

/* dX = dY * (min < X < max); reads X and the bounds. */
int op_grad_clip(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    int b = grad_node(c, "grad", OP_CLIP_GRAD);
    grad_in(c, b, dy);                /* dY */
    grad_in(c, b, grad_fwd_in(c, 0)); /* X saved */
    grad_in(c, b, grad_fwd_in(c, 1)); /* min (or empty) */
    grad_in(c, b, grad_fwd_in(c, 2)); /* max (or empty) */
    grad_out_dx(c, b, 0);
    if (grad_graph(c)->opset < 11) { /* bounds were attributes */
        grad_attr_float(c, b, "min", ir_attr_float(grad_fwd(c), "min", -3.4e38f));
        grad_attr_float(c, b, "max", ir_attr_float(grad_fwd(c), "max", 3.4e38f));
    }
    return grad_finish(c, b);
}

/* Training-mode flag of a Dropout node: opset >= 12 input 2 (default false). */
static bool dropout_training(grad_ctx *c) {
    if (grad_graph(c)->opset < 12) return grad_fwd(c)->n_outputs > 1;
    int t = grad_fwd_in(c, 2);
    if (t < 0) return false;
    const ir_tensor *x = &grad_graph(c)->tensors[t];
    return x->data_src == IR_DATA_INLINE && x->data_bytes >= 1 && ((uint8_t *)x->data)[0] != 0;
}

static float dropout_ratio(grad_ctx *c) {
    if (grad_graph(c)->opset < 12) return ir_attr_float(grad_fwd(c), "ratio", 0.5f);
    int t = grad_fwd_in(c, 1);
    if (t < 0) return 0.5f;
    const ir_tensor *x = &grad_graph(c)->tensors[t];
    float r = 0.5f;
    if (x->dtype == IR_DTYPE_FLOAT && x->data_bytes == 4) memcpy(&r, x->data, 4);
    else if (x->dtype == IR_DTYPE_DOUBLE && x->data_bytes == 8) {
        double d;
        memcpy(&d, x->data, 8);
        r = (float)d;
    }
    return r;
}

/* Training: dX = dY * mask / (1 - ratio), reading the mask the forward wrote
 * (added as an output when the model did not export it). Inference: dX = dY. */
int op_grad_dropout(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    if (!dropout_training(c)) {
        grad_pass(c, 0, dy);
        return OC_OK;
    }
    int mask = grad_fwd_out(c, 1);
    if (mask < 0 && (mask = grad_fwd_add_output(c, "mask")) < 0) return OC_ERR;
    float ratio = dropout_ratio(c);
    int b = grad_node(c, "grad", OP_DROPOUT_GRAD);
    grad_in(c, b, dy);   /* dY */
    grad_in(c, b, mask); /* mask saved (bool) */
    grad_out_dx(c, b, 0);
    grad_attr_float(c, b, "ratio", ratio);
    return grad_finish(c, b);
}

/* dA = dY summed over A's broadcast dims (dY itself when shapes agree); same for B. */
int op_grad_add(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    for (int i = 0; i < 2; i++) {
        if (!grad_wants(c, i)) continue;
        const ir_graph *g = grad_graph(c);
        const ir_tensor *x = &g->tensors[grad_fwd_in(c, i)], *y = &g->tensors[dy];
        if (x->rank == y->rank &&
            memcmp(x->dims, y->dims, (size_t)x->rank * sizeof(int64_t)) == 0) {
            grad_pass(c, i, dy);
            continue;
        }
        int rank = x->rank;
        int64_t dims[IR_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        int b = grad_node(c, i == 0 ? "grad_a" : "grad_b", OP_REDUCE_SUM_TO);
        grad_in(c, b, dy);
        grad_out_dx(c, b, i);
        grad_attr_ints(c, b, "input_shape", rank, dims);
        if (grad_finish(c, b)) return OC_ERR;
    }
    return OC_OK;
}
