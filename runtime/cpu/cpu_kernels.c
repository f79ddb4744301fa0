/* cpu_kernels.c — the cpu backend's dispatch table (one row per op) and the
 * helpers every kernel file shares. See kernels.h for the contract. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cpu_internal.h"
#include "ir/ops/op_table.h"

typedef struct cpu_kernel_def {
    const char *domain; /* "" = default ONNX domain */
    const char *op_type;
    cpu_kernel_fn run;
    cpu_scratch_fn scratch; /* NULL: needs none */
} cpu_kernel_def;

static const cpu_kernel_def cpu_kernel_table[] = {
    /* forward (default domain) */
    {"", "Conv", cpu_conv, cpu_conv_scratch},
    {"", "ConvTranspose", cpu_conv_transpose, cpu_conv_transpose_scratch},
    {"", "BatchNormalization", cpu_batch_norm, NULL},
    {"", "Relu", cpu_relu, NULL},
    {"", "Clip", cpu_clip, NULL},
    {"", "Dropout", cpu_dropout, NULL},
    {"", "MaxPool", cpu_max_pool, NULL},
    {"", "AveragePool", cpu_average_pool, NULL},
    {"", "GlobalAveragePool", cpu_global_average_pool, NULL},
    {"", "Add", cpu_add, NULL},
    {"", "Sum", cpu_sum, NULL},
    {"", "Concat", cpu_concat, NULL},
    {"", "Flatten", cpu_copy, NULL},
    {"", "Reshape", cpu_copy, NULL},
    {"", "Unsqueeze", cpu_copy, NULL},
    {"", "Pad", cpu_pad, NULL},
    {"", "Gemm", cpu_gemm, NULL},
    {"", "SoftmaxCrossEntropyLoss", cpu_softmax_cross_entropy, NULL},
    {"", "Constant", cpu_constant, NULL},
    {"", "Shape", cpu_shape, NULL},
    {"", "Gather", cpu_gather, NULL},
    /* backward, loss gradient and update (OC_DOMAIN) */
    {OC_DOMAIN, "ConvBackwardData", cpu_conv_backward_data, cpu_conv_scratch},
    {OC_DOMAIN, "ConvBackwardFilter", cpu_conv_backward_filter, cpu_conv_scratch},
    {OC_DOMAIN, "ConvTransposeBackwardData", cpu_conv_transpose_backward_data,
     cpu_conv_transpose_scratch},
    {OC_DOMAIN, "ConvTransposeBackwardFilter", cpu_conv_transpose_backward_filter,
     cpu_conv_transpose_scratch},
    {OC_DOMAIN, "BatchNormalizationGrad", cpu_batch_norm_grad, NULL},
    {OC_DOMAIN, "ReluGrad", cpu_relu_grad, NULL},
    {OC_DOMAIN, "ClipGrad", cpu_clip_grad, NULL},
    {OC_DOMAIN, "DropoutGrad", cpu_dropout_grad, NULL},
    {OC_DOMAIN, "MaxPoolGrad", cpu_max_pool_grad, NULL},
    {OC_DOMAIN, "AveragePoolGrad", cpu_average_pool_grad, NULL},
    {OC_DOMAIN, "GlobalAveragePoolGrad", cpu_global_average_pool_grad, NULL},
    {OC_DOMAIN, "ReduceSumTo", cpu_reduce_sum_to, NULL},
    {OC_DOMAIN, "PadGrad", cpu_pad_grad, NULL},
    {OC_DOMAIN, "ConcatGrad", cpu_concat_grad, NULL},
    {OC_DOMAIN, "SoftmaxCrossEntropyLossGrad", cpu_softmax_cross_entropy_grad, NULL},
    {OC_DOMAIN, "SGDMomentum", cpu_sgd_momentum, NULL},
};

#define N_KERNELS (sizeof cpu_kernel_table / sizeof cpu_kernel_table[0])

static const cpu_kernel_def *kernel_find(const char *domain, const char *op_type) {
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (size_t i = 0; i < N_KERNELS; i++)
        if (strcmp(cpu_kernel_table[i].op_type, op_type) == 0 &&
            strcmp(cpu_kernel_table[i].domain, domain) == 0)
            return &cpu_kernel_table[i];
    return NULL;
}

bool cpu_kernel_supported(const char *domain, const char *op_type) {
    return kernel_find(domain, op_type) != NULL;
}

size_t cpu_kernel_scratch_bytes(const ir_graph *g, const ir_node *n) {
    const cpu_kernel_def *k = kernel_find(n->domain, n->op_type);
    return k && k->scratch ? k->scratch(g, n) : 0;
}

int cpu_kernel_run(const kernel_args *a, oc_err *err) {
    const cpu_kernel_def *k = kernel_find(a->n->domain, a->n->op_type);
    if (!k)
        return oc_fail(err, "node '%s': op %s%s%s has no cpu kernel", a->n->name,
                       *a->n->domain ? a->n->domain : "", *a->n->domain ? "." : "",
                       a->n->op_type);
    OC_ASSERT(!k->scratch || a->scratch_bytes >= k->scratch(a->g, a->n));
    return k->run(a, err);
}

/* ---- shared helpers ---- */

double cpu_load_f(const void *p, ir_dtype dt, int64_t i) {
    switch (dt) {
    case IR_DTYPE_FLOAT: return ((const float *)p)[i];
    case IR_DTYPE_DOUBLE: return ((const double *)p)[i];
    case IR_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case IR_DTYPE_INT32: return ((const int32_t *)p)[i];
    case IR_DTYPE_INT8: return ((const int8_t *)p)[i];
    case IR_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case IR_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: OC_ASSERT(!"cpu_load_f: unsupported dtype");
    }
    return 0;
}

void cpu_strides(int r, const int64_t *dims, int64_t *s) {
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        s[i] = acc;
        acc *= dims[i];
    }
}

void cpu_bcast_strides(int tr, const int64_t *td, int r, const int64_t *od, int64_t *s) {
    int64_t own[IR_MAX_RANK];
    cpu_strides(tr, td, own);
    for (int i = 0; i < r; i++) {
        int j = i - (r - tr);
        s[i] = (j < 0 || td[j] == 1 || od[i] == 1) ? 0 : own[j];
    }
}
