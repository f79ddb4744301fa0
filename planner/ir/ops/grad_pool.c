/* grad_pool.c — gradients of MaxPool, AveragePool, GlobalAveragePool.
 *   MaxPool:    dX = MaxPoolGrad(dY, X)  — argmax recomputed from X (saved)
 *   AveragePool / GlobalAveragePool: dX spread from dY; read no forward tensor */
#include <string.h>

#include "ir/ops/grad_rules.h"

static int pool_grad(grad_ctx *c, op_kind op, bool reads_x) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    if (grad_fwd(c)->channels_last && rank == 4) ir_dims_to_logical(dims); /* the rules' view */
    int b = grad_node(c, "grad", op);
    grad_in(c, b, dy);                             /* dY (N, C, O..) */
    if (reads_x) grad_in(c, b, grad_fwd_in(c, 0)); /* X saved */
    grad_out_dx(c, b, 0);                          /* dX (N, C, D..) */
    grad_copy_attrs(c, b);
    grad_attr_ints(c, b, "input_shape", rank, dims);
    return grad_finish(c, b);
}

int op_grad_max_pool(grad_ctx *c) { return pool_grad(c, OP_MAX_POOL_GRAD, true); }
int op_grad_average_pool(grad_ctx *c) { return pool_grad(c, OP_AVERAGE_POOL_GRAD, false); }
int op_grad_global_average_pool(grad_ctx *c) {
    return pool_grad(c, OP_GLOBAL_AVERAGE_POOL_GRAD, false);
}
