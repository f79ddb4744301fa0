/* op_table.c — the registry: every supported op, listed once. */
#include "op_table.h"

#include <stdio.h>
#include <string.h>

extern const op_def op_def_conv, op_def_conv_transpose, op_def_batch_norm, op_def_relu,
    op_def_clip, op_def_dropout, op_def_add, op_def_max_pool, op_def_average_pool,
    op_def_global_average_pool, op_def_gemm, op_def_flatten, op_def_concat, op_def_pad,
    op_def_constant, op_def_reshape, op_def_shape, op_def_gather, op_def_unsqueeze;

static const op_def *const op_registry[] = {
    &op_def_conv,        &op_def_conv_transpose, &op_def_batch_norm,
    &op_def_relu,        &op_def_clip,           &op_def_dropout,
    &op_def_add,         &op_def_max_pool,       &op_def_average_pool,
    &op_def_global_average_pool,                 &op_def_gemm,
    &op_def_flatten,     &op_def_concat,         &op_def_pad,
    &op_def_constant,    &op_def_reshape,        &op_def_shape,
    &op_def_gather,      &op_def_unsqueeze,
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
    for (size_t i = 0; i < N_OPS && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "",
                                op_registry[i]->op_type);
}

op_role op_input_role(const op_def *d, int i) {
    if (d->n_roles == 0) return OP_IN_DATA;
    return d->roles[i < d->n_roles ? i : d->n_roles - 1];
}
