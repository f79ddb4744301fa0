/* op_pool.c — MaxPool, AveragePool, GlobalAveragePool: shapes. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* X (N, C, D..) -> Y (N, C, O..); MaxPool's optional Indices has Y's shape. */
static int pool_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (x->rank < 3) return oc_fail(err, "input '%s' must have rank >= 3", x->name);
    int nsp = x->rank - 2;
    op_window win;
    if (op_window_read(n, nsp, x->dims + 2, NULL, &win, err)) return OC_ERR;
    int64_t y[IR_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < nsp; i++)
        if (op_window_out(&win, i, x->dims[2 + i], &y[2 + i], err)) return OC_ERR;
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    op_set_out(g, n, 1, IR_DTYPE_INT64, x->rank, y);
    return OC_OK;
}

/* X (N, C, D..) -> Y (N, C, 1..) */
static int global_pool_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    if (x->rank < 3) return oc_fail(err, "input '%s' must have rank >= 3", x->name);
    int64_t y[IR_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 2; i < x->rank; i++) y[i] = 1;
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

/* Window against the image side: the forward input (MaxPool, AveragePool,
 * MaxPoolGrad's X) or the gradient's output dX (AveragePoolGrad). */
int op_decode_pool(const ir_graph *g, ir_node *n, oc_err *err) {
    const ir_tensor *x = n->op == OP_MAX_POOL_GRAD       ? ir_node_in((ir_graph *)g, n, 1)
                         : n->op == OP_AVERAGE_POOL_GRAD ? ir_node_out((ir_graph *)g, n, 0)
                                                         : ir_node_in((ir_graph *)g, n, 0);
    /* The pooled side: the output, or the gradient dY. */
    const ir_tensor *y = n->op == OP_MAX_POOL_GRAD || n->op == OP_AVERAGE_POOL_GRAD
                             ? ir_node_in((ir_graph *)g, n, 0)
                             : ir_node_out((ir_graph *)g, n, 0);
    const ir_tensor *dx = n->op == OP_MAX_POOL_GRAD ? ir_node_out((ir_graph *)g, n, 0) : x;
    if (!x || !y || !dx || x->rank < 3 || y->rank != x->rank || dx->rank != x->rank ||
        memcmp(dx->dims, x->dims, (size_t)x->rank * sizeof x->dims[0]) != 0 ||
        y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return oc_fail(err, "needs input and output of one rank >= 3, batch and channels");
    op_pool_args *p = &op_args_new(n)->pool;
    if (op_window_read(n, x->rank - 2, x->dims + 2, NULL, &p->win, err)) return OC_ERR;
    for (int i = 0; i < p->win.nsp; i++) {
        int64_t o;
        if (op_window_out(&p->win, i, x->dims[2 + i], &o, err)) return OC_ERR;
        if (o != y->dims[2 + i])
            return oc_fail(
                err, "spatial dim %d: the window over %" PRId64 " gives %" PRId64 ", not %" PRId64,
                i, x->dims[2 + i], o, y->dims[2 + i]);
    }
    p->count_include_pad = ir_attr_int(n, "count_include_pad", 0) != 0;
    p->storage_col_major = ir_attr_int(n, "storage_order", 0) != 0;
    return OC_OK;
}

static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_max_pool = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 2,
    .roles = data_role,
    .n_roles = 1,
    .infer = pool_infer,
    .grad = op_grad_max_pool,
    .saved_inputs = 0x1,
    .decode = op_decode_pool,
};

const op_def op_def_average_pool = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = pool_infer,
    .grad = op_grad_average_pool,
    .decode = op_decode_pool,
};

const op_def op_def_global_average_pool = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = global_pool_infer,
    .grad = op_grad_global_average_pool,
};
