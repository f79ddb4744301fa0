/* op_loss.c — SoftmaxCrossEntropyLoss (the appended loss) and Sum (gradient
 * accumulation): shapes and costs. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* scores (N, C), labels (N) int64 -> loss () for mean/sum or (N) for none,
 * log_prob (N, C). Class weights and extra spatial dims are not supported. */
static int sce_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *s, *l;
    if (op_in_shaped(g, n, 0, &s, err) || op_in_shaped(g, n, 1, &l, err)) return OC_ERR;
    if (s->rank != 2 || l->rank != 1 || l->dims[0] != s->dims[0])
        return oc_fail(err, "needs scores [N, C] and labels [N]; got '%s' rank %d, '%s' rank %d",
                       s->name, s->rank, l->name, l->rank);
    if (l->dtype != IR_DTYPE_INT64 && l->dtype != IR_DTYPE_INT32)
        return oc_fail(err, "labels '%s' must be int64 or int32", l->name);
    if (ir_node_in(g, n, 2)) return oc_fail(err, "class weights are not supported");
    const char *red = ir_attr_string(n, "reduction", "mean");
    if (strcmp(red, "mean") == 0 || strcmp(red, "sum") == 0) op_set_out(g, n, 0, s->dtype, 0, NULL);
    else if (strcmp(red, "none") == 0) op_set_out(g, n, 0, s->dtype, 1, s->dims);
    else return oc_fail(err, "reduction '%s' is not one of mean, sum, none", red);
    op_set_out_like(g, n, 1, s);
    return OC_OK;
}

/* x_1..x_k (one shape, or broadcastable) -> their sum */
static int sum_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *acc;
    if (op_in_shaped(g, n, 0, &acc, err)) return OC_ERR;
    ir_tensor shape = {.name = acc->name, .dtype = acc->dtype, .rank = acc->rank};
    memcpy(shape.dims, acc->dims, sizeof shape.dims);
    for (int i = 1; i < n->n_inputs; i++) {
        ir_tensor *x;
        if (op_in_shaped(g, n, i, &x, err)) return OC_ERR;
        if (x->dtype != acc->dtype) return oc_fail(err, "input '%s' differs in type", x->name);
        if (op_broadcast(&shape, x, &shape.rank, shape.dims, err)) return OC_ERR;
    }
    op_set_out(g, n, 0, acc->dtype, shape.rank, shape.dims);
    return OC_OK;
}

/* Reduction and ignore_index (the loss and its gradient). */
int op_decode_sce(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_sce_args *p = &op_args_new(n)->sce;
    const char *red = ir_attr_string(n, "reduction", "mean");
    if (strcmp(red, "mean") == 0) p->reduction = OP_REDUCTION_MEAN;
    else if (strcmp(red, "sum") == 0) p->reduction = OP_REDUCTION_SUM;
    else if (strcmp(red, "none") == 0) p->reduction = OP_REDUCTION_NONE;
    else return oc_fail(err, "reduction '%s' is not one of mean, sum, none", red);
    const ir_attr *ig = ir_attr_find(n, "ignore_index");
    p->has_ignore_index = ig != NULL;
    p->ignore_index = ig ? ig->i : 0;
    return OC_OK;
}

static const op_role sce_roles[] = {OP_IN_DATA, OP_IN_DATA, OP_IN_CONST};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_softmax_cross_entropy = {
    .min_inputs = 2,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 2,
    .roles = sce_roles,
    .n_roles = 3,
    .infer = sce_infer,
    .grad = op_grad_softmax_cross_entropy,
    .saved_inputs = 0x2,
    .saved_outputs = 0x2,
    .decode = op_decode_sce,
    .autocast = OP_AUTOCAST_FP32,
};

const op_def op_def_sum = {
    .min_inputs = 1,
    .max_inputs = -1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = sum_infer,
};
