/* grad_shape.c — gradients of Concat, Flatten/Reshape, Pad. */
#include <string.h>

#include "ir/ops/grad_rules.h"

/* dX_1..dX_k = ConcatGrad(dY): slices of dY along the axis. */
int op_grad_concat(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    const ir_node *f = grad_fwd(c);
    const ir_graph *g = grad_graph(c);
    int k = f->n_inputs, rank = g->tensors[f->inputs[0]].rank;
    int64_t axis = ir_attr_int(f, "axis", 0);
    if (axis < 0) axis += rank;
    int64_t *split = oc_malloc((size_t)k * sizeof *split);
    for (int i = 0; i < k; i++) {
        int64_t d[IR_MAX_RANK];
        memcpy(d, g->tensors[f->inputs[i]].dims, sizeof d);
        if (f->channels_last && rank == 4) ir_dims_to_logical(d); /* the rules' view */
        split[i] = d[axis];
    }
    int b = grad_node(c, "grad", OP_CONCAT_GRAD);
    grad_in(c, b, dy);
    for (int i = 0; i < k; i++) grad_out_dx(c, b, i);
    grad_attr_int(c, b, "axis", axis);
    grad_attr_ints(c, b, "split", k, split);
    oc_free(split);
    return grad_finish(c, b);
}

/* dX = Reshape(dY, shape of X). */
int op_grad_reshape(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    int shape = grad_const_i64(c, "grad_shape", rank, dims);
    int b = grad_node(c, "grad", OP_RESHAPE);
    grad_in(c, b, dy);
    grad_in(c, b, shape);
    grad_out_dx(c, b, 0);
    return grad_finish(c, b);
}

/* Pad: dX = PadGrad(dY) with the pads and the mode: constant, the interior of dY; reflect
 * and edge (nn.ReflectionPad2d, ReplicationPad2d), also the pads' gradient added to the
 * elements they copied. */
int op_grad_pad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_node *f = grad_fwd(c);
    const ir_graph *g = grad_graph(c);
    const char *mode = ir_attr_string(f, "mode", "constant"); /* PadGrad's: a literal */
    mode = strcmp(mode, "reflect") == 0 ? "reflect"
           : strcmp(mode, "edge") == 0  ? "edge"
           : strcmp(mode, "wrap") == 0  ? "wrap"
                                        : "constant";
    if (strcmp(mode, "constant") != 0 && !ir_dtype_is_compute(g->tensors[grad_fwd_in(c, 0)].dtype))
        return oc_fail(grad_err(c),
                       "Pad mode '%s' has a gradient in float32, bfloat16 and float16, not %s",
                       mode, ir_dtype_name(g->tensors[grad_fwd_in(c, 0)].dtype));
    if (grad_fwd_in(c, 3) >= 0)
        return oc_fail(grad_err(c), "Pad with an 'axes' input has no gradient rule");
    const ir_tensor *x = &g->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    int64_t dims[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    if (g->opset >= 11) {
        const ir_tensor *p = &g->tensors[grad_fwd_in(c, 1)];
        memcpy(pads, p->data, (size_t)(2 * rank) * sizeof(int64_t));
    } else {
        const int64_t *v;
        ir_attr_ints(f, "pads", &v);
        memcpy(pads, v, (size_t)(2 * rank) * sizeof(int64_t));
    }
    int b = grad_node(c, "grad", OP_PAD_GRAD);
    grad_in(c, b, dy);
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "pads", 2 * rank, pads);
    grad_attr_ints(c, b, "input_shape", rank, dims);
    if (strcmp(mode, "constant") != 0) grad_attr_string(c, b, "mode", mode);
    return grad_finish(c, b);
}
