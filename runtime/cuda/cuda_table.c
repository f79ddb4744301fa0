/* cuda_table.c — see cuda_table.h and backend_cuda.h (cuda_kernel_supported). */
#include "backend_cuda.h"
#include "cuda_table.h"
#include "ir/ops/op_table.h"

/* Indexed by op_kind: the kernel id + 1 (0: the backend has no kernel). */
static const int cuda_ops[OP__COUNT] = {
    [OP_CONV] = 1 + CUDA_OP_CONV, /* cuDNN */
    [OP_CONV_TRANSPOSE] = 1 + CUDA_OP_CONV_TRANSPOSE, /* cuDNN (backward data) */
    [OP_BATCH_NORM] = 1 + CUDA_OP_BATCH_NORM, /* cuDNN */
    [OP_RELU] = 1 + CUDA_OP_RELU,
    [OP_CLIP] = 1 + CUDA_OP_CLIP,
    [OP_DROPOUT] = 1 + CUDA_OP_DROPOUT,
    [OP_MAX_POOL] = 1 + CUDA_OP_MAX_POOL, /* cuDNN (own kernel: Indices, dilation, ceil) */
    [OP_AVERAGE_POOL] = 1 + CUDA_OP_AVERAGE_POOL,
    [OP_GLOBAL_AVERAGE_POOL] = 1 + CUDA_OP_GLOBAL_AVERAGE_POOL,
    [OP_ADD] = 1 + CUDA_OP_ADD,
    [OP_SUM] = 1 + CUDA_OP_SUM,
    [OP_CONCAT] = 1 + CUDA_OP_CONCAT,
    [OP_FLATTEN] = 1 + CUDA_OP_COPY,
    [OP_RESHAPE] = 1 + CUDA_OP_COPY,
    [OP_UNSQUEEZE] = 1 + CUDA_OP_COPY,
    [OP_PAD] = 1 + CUDA_OP_PAD,
    [OP_GEMM] = 1 + CUDA_OP_GEMM, /* cuBLAS */
    [OP_SOFTMAX_CROSS_ENTROPY] = 1 + CUDA_OP_SCE,
    [OP_CONSTANT] = 1 + CUDA_OP_CONSTANT,
    [OP_SHAPE] = 1 + CUDA_OP_SHAPE,
    [OP_GATHER] = 1 + CUDA_OP_GATHER,
    [OP_CONV_BACKWARD_DATA] = 1 + CUDA_OP_CONV_BWD_DATA, /* cuDNN */
    [OP_CONV_BACKWARD_FILTER] = 1 + CUDA_OP_CONV_BWD_FILTER, /* cuDNN */
    [OP_CONV_TRANSPOSE_BACKWARD_DATA] = 1 + CUDA_OP_CONVT_BWD_DATA, /* cuDNN */
    [OP_CONV_TRANSPOSE_BACKWARD_FILTER] = 1 + CUDA_OP_CONVT_BWD_FILTER, /* cuDNN */
    [OP_BATCH_NORM_GRAD] = 1 + CUDA_OP_BATCH_NORM_GRAD, /* cuDNN */
    [OP_RELU_GRAD] = 1 + CUDA_OP_RELU_GRAD,
    [OP_CLIP_GRAD] = 1 + CUDA_OP_CLIP_GRAD,
    [OP_DROPOUT_GRAD] = 1 + CUDA_OP_DROPOUT_GRAD,
    [OP_MAX_POOL_GRAD] = 1 + CUDA_OP_MAX_POOL_GRAD, /* cuDNN, as MaxPool */
    [OP_AVERAGE_POOL_GRAD] = 1 + CUDA_OP_AVERAGE_POOL_GRAD,
    [OP_GLOBAL_AVERAGE_POOL_GRAD] = 1 + CUDA_OP_GLOBAL_AVERAGE_POOL_GRAD,
    [OP_REDUCE_SUM_TO] = 1 + CUDA_OP_REDUCE_SUM_TO,
    [OP_PAD_GRAD] = 1 + CUDA_OP_PAD_GRAD,
    [OP_CONCAT_GRAD] = 1 + CUDA_OP_CONCAT_GRAD,
    [OP_SOFTMAX_CROSS_ENTROPY_GRAD] = 1 + CUDA_OP_SCE_GRAD,
    [OP_SGD_MOMENTUM] = 1 + CUDA_OP_SGD_MOMENTUM,
};

int cuda_op_of(int op) { return op >= 0 && op < OP__COUNT ? cuda_ops[op] - 1 : -1; }

bool cuda_kernel_supported(int op) { return cuda_op_of(op) >= 0; }
