/* cuda_table.c — see cuda_table.h and backend_cuda.h (cuda_kernel_supported). */
#include <string.h>

#include "backend_cuda.h"
#include "cuda_table.h"
#include "ir/ops/op_table.h"

typedef struct cuda_op_row {
    const char *domain; /* "" = default ONNX domain */
    const char *op_type;
    cuda_op_id id;
} cuda_op_row;

static const cuda_op_row cuda_op_rows[] = {
    {"", "Conv", CUDA_OP_CONV},                       /* cuDNN */
    {"", "ConvTranspose", CUDA_OP_CONV_TRANSPOSE},    /* cuDNN (backward data) */
    {"", "BatchNormalization", CUDA_OP_BATCH_NORM},   /* cuDNN */
    {"", "Relu", CUDA_OP_RELU},
    {"", "Clip", CUDA_OP_CLIP},
    {"", "Dropout", CUDA_OP_DROPOUT},
    {"", "MaxPool", CUDA_OP_MAX_POOL},                 /* cuDNN (own kernel: Indices, dilation, ceil) */
    {"", "AveragePool", CUDA_OP_AVERAGE_POOL},
    {"", "GlobalAveragePool", CUDA_OP_GLOBAL_AVERAGE_POOL},
    {"", "Add", CUDA_OP_ADD},
    {"", "Sum", CUDA_OP_SUM},
    {"", "Concat", CUDA_OP_CONCAT},
    {"", "Flatten", CUDA_OP_COPY},
    {"", "Reshape", CUDA_OP_COPY},
    {"", "Unsqueeze", CUDA_OP_COPY},
    {"", "Pad", CUDA_OP_PAD},
    {"", "Gemm", CUDA_OP_GEMM},                       /* cuBLAS */
    {"", "SoftmaxCrossEntropyLoss", CUDA_OP_SCE},
    {"", "Constant", CUDA_OP_CONSTANT},
    {"", "Shape", CUDA_OP_SHAPE},
    {"", "Gather", CUDA_OP_GATHER},
    {OC_DOMAIN, "ConvBackwardData", CUDA_OP_CONV_BWD_DATA},          /* cuDNN */
    {OC_DOMAIN, "ConvBackwardFilter", CUDA_OP_CONV_BWD_FILTER},      /* cuDNN */
    {OC_DOMAIN, "ConvTransposeBackwardData", CUDA_OP_CONVT_BWD_DATA},     /* cuDNN */
    {OC_DOMAIN, "ConvTransposeBackwardFilter", CUDA_OP_CONVT_BWD_FILTER}, /* cuDNN */
    {OC_DOMAIN, "BatchNormalizationGrad", CUDA_OP_BATCH_NORM_GRAD},  /* cuDNN */
    {OC_DOMAIN, "ReluGrad", CUDA_OP_RELU_GRAD},
    {OC_DOMAIN, "ClipGrad", CUDA_OP_CLIP_GRAD},
    {OC_DOMAIN, "DropoutGrad", CUDA_OP_DROPOUT_GRAD},
    {OC_DOMAIN, "MaxPoolGrad", CUDA_OP_MAX_POOL_GRAD},             /* cuDNN, as MaxPool */
    {OC_DOMAIN, "AveragePoolGrad", CUDA_OP_AVERAGE_POOL_GRAD},
    {OC_DOMAIN, "GlobalAveragePoolGrad", CUDA_OP_GLOBAL_AVERAGE_POOL_GRAD},
    {OC_DOMAIN, "ReduceSumTo", CUDA_OP_REDUCE_SUM_TO},
    {OC_DOMAIN, "PadGrad", CUDA_OP_PAD_GRAD},
    {OC_DOMAIN, "ConcatGrad", CUDA_OP_CONCAT_GRAD},
    {OC_DOMAIN, "SoftmaxCrossEntropyLossGrad", CUDA_OP_SCE_GRAD},
    {OC_DOMAIN, "SGDMomentum", CUDA_OP_SGD_MOMENTUM},
};

#define N_ROWS ((int)(sizeof cuda_op_rows / sizeof cuda_op_rows[0]))

int cuda_op_lookup(const char *domain, const char *op_type) {
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int i = 0; i < N_ROWS; i++)
        if (strcmp(cuda_op_rows[i].op_type, op_type) == 0 &&
            strcmp(cuda_op_rows[i].domain, domain) == 0)
            return (int)cuda_op_rows[i].id;
    return -1;
}

bool cuda_kernel_supported(const char *domain, const char *op_type) {
    return cuda_op_lookup(domain, op_type) >= 0;
}

bool cuda_kernel_entry(int i, const char **domain, const char **op_type) {
    if (i < 0 || i >= N_ROWS) return false;
    *domain = cuda_op_rows[i].domain;
    *op_type = cuda_op_rows[i].op_type;
    return true;
}
