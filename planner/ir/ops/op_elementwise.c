/* op_elementwise.c — Relu, Clip, Dropout, Add: shapes. */
#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* X -> Y of the same shape (Relu, Clip); Dropout adds a bool mask of that shape. */
static int same_shape_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    op_set_out_like(g, n, 0, x);
    op_set_out(g, n, 1, IR_DTYPE_BOOL, x->rank, x->dims);
    return OC_OK;
}

static int dropout_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    double ratio;
    if (ir_node_in(g, n, 1) && !op_in_scalar_f(g, n, 1, &ratio))
        return oc_fail(err, "ratio must be a float scalar known at plan time");
    return same_shape_infer(g, n, opset, err);
}

/* A, B -> C with numpy broadcasting. */
static int add_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *a, *b;
    if (op_in_shaped(g, n, 0, &a, err) || op_in_shaped(g, n, 1, &b, err)) return OC_ERR;
    if (a->dtype != b->dtype)
        return oc_fail(err, "inputs '%s' (%s) and '%s' (%s) differ in type", a->name,
                       ir_dtype_name(a->dtype), b->name, ir_dtype_name(b->dtype));
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (op_broadcast(a, b, &rank, dims, err)) return OC_ERR;
    op_set_out(g, n, 0, a->dtype, rank, dims);
    return OC_OK;
}

static const op_role data_role[] = {OP_IN_DATA};
static const op_role clip_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_relu = {
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
    .max_outputs = 1, .roles = data_role, .n_roles = 1, .infer = same_shape_infer,
    .grad = op_grad_relu, .saved_outputs = 0x1,
};

const op_def op_def_clip = {
    .min_inputs = 1, .max_inputs = 3, .min_outputs = 1,
    .max_outputs = 1, .roles = clip_roles, .n_roles = 2, .infer = same_shape_infer,
    .grad = op_grad_clip, .saved_inputs = 0x7,
};

const op_def op_def_dropout = {
    .min_inputs = 1, .max_inputs = 3, .min_outputs = 1,
    .max_outputs = 2, .roles = clip_roles, .n_roles = 2, .infer = dropout_infer,
    .grad = op_grad_dropout, .saved_outputs = 0x2,
};

const op_def op_def_add = {
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,
    .max_outputs = 1, .roles = data_role, .n_roles = 1, .infer = add_infer,
    .grad = op_grad_add,
};
