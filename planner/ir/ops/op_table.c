/* op_table.c — the registry: every supported op, listed once. */
#include "ir/ops/op_table.h"

#include <stdio.h>
#include <string.h>

extern const op_def op_def_conv, op_def_conv_transpose, op_def_batch_norm, op_def_relu,
    op_def_clip, op_def_dropout, op_def_add, op_def_max_pool, op_def_average_pool,
    op_def_global_average_pool, op_def_gemm, op_def_flatten, op_def_concat, op_def_pad,
    op_def_constant, op_def_reshape, op_def_shape, op_def_gather, op_def_unsqueeze,
    op_def_softmax_cross_entropy, op_def_sum, op_def_conv_backward_data,
    op_def_conv_backward_filter, op_def_conv_transpose_backward_data,
    op_def_conv_transpose_backward_filter, op_def_bn_grad, op_def_relu_grad, op_def_clip_grad,
    op_def_dropout_grad, op_def_max_pool_grad, op_def_average_pool_grad,
    op_def_global_average_pool_grad, op_def_reduce_sum_to, op_def_pad_grad, op_def_concat_grad,
    op_def_sce_grad, op_def_sgd_momentum;
extern const op_def op_def_swap_out, op_def_swap_in; /* op_swap.c */

static const op_def *const op_registry[] = {
    &op_def_conv,        &op_def_conv_transpose, &op_def_batch_norm,
    &op_def_relu,        &op_def_clip,           &op_def_dropout,
    &op_def_add,         &op_def_max_pool,       &op_def_average_pool,
    &op_def_global_average_pool,                 &op_def_gemm,
    &op_def_flatten,     &op_def_concat,         &op_def_pad,
    &op_def_constant,    &op_def_reshape,        &op_def_shape,
    &op_def_gather,      &op_def_unsqueeze,      &op_def_softmax_cross_entropy,
    &op_def_sum,
    /* project domain: backward and update */
    &op_def_conv_backward_data,           &op_def_conv_backward_filter,
    &op_def_conv_transpose_backward_data, &op_def_conv_transpose_backward_filter,
    &op_def_bn_grad,     &op_def_relu_grad,      &op_def_clip_grad,
    &op_def_dropout_grad, &op_def_max_pool_grad, &op_def_average_pool_grad,
    &op_def_global_average_pool_grad,            &op_def_reduce_sum_to,
    &op_def_pad_grad,    &op_def_concat_grad,    &op_def_sce_grad,
    &op_def_sgd_momentum,
    &op_def_swap_out,    &op_def_swap_in,
};

#define N_OPS (sizeof op_registry / sizeof op_registry[0])

static bool same_domain(const char *a, const char *b) {
    if (!a || strcmp(a, "ai.onnx") == 0) a = "";
    if (!b || strcmp(b, "ai.onnx") == 0) b = "";
    return strcmp(a, b) == 0;
}

const op_def *op_find(const char *domain, const char *op_type) {
    for (size_t i = 0; i < N_OPS; i++)
        if (strcmp(op_registry[i]->op_type, op_type) == 0 &&
            same_domain(op_registry[i]->domain, domain))
            return op_registry[i];
    return NULL;
}

void op_supported_list(char *buf, size_t cap) {
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_OPS && off < cap; i++) {
        if (*op_registry[i]->domain) continue; /* project-domain ops are ours, not the model's */
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? ", " : "",
                                op_registry[i]->op_type);
    }
}

op_role op_input_role(const op_def *d, int i) {
    if (d->n_roles == 0) return OP_IN_DATA;
    return d->roles[i < d->n_roles ? i : d->n_roles - 1];
}

static double tensor_bytes_d(const ir_graph *g, int t) {
    int64_t b = 0;
    if (t >= 0) ir_tensor_bytes(&g->tensors[t], &b);
    return (double)b;
}

void op_cost_default(const ir_graph *g, const ir_node *n, op_cost *c) {
    c->flops = c->bytes_read = c->bytes_written = 0;
    for (int i = 0; i < n->n_inputs; i++) c->bytes_read += tensor_bytes_d(g, n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++) {
        int64_t numel = 0;
        if (n->outputs[i] >= 0) ir_tensor_numel(&g->tensors[n->outputs[i]], &numel);
        c->flops += (double)numel;
        c->bytes_written += tensor_bytes_d(g, n->outputs[i]);
    }
}

void op_cost_of(const ir_graph *g, const ir_node *n, op_cost *c) {
    const op_def *d = op_find(n->domain, n->op_type);
    if (d && d->cost)
        d->cost(g, n, c);
    else
        op_cost_default(g, n, c);
}

bool op_is_swap_out(const ir_node *n) {
    return strcmp(n->domain, OC_DOMAIN) == 0 && strcmp(n->op_type, "SwapOut") == 0;
}

bool op_is_swap_in(const ir_node *n) {
    return strcmp(n->domain, OC_DOMAIN) == 0 && strcmp(n->op_type, "SwapIn") == 0;
}
