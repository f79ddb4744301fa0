/* cuda_table.h — the cuda backend's op table: one row per op, pure C (no
 * CUDA headers), so tests can check it against the cpu backend's in every
 * build. cuda_kernels.c dispatches on cuda_op_id with a switch that the
 * compiler checks for completeness (-Wswitch). */
#ifndef OC_CUDA_TABLE_H
#define OC_CUDA_TABLE_H

#include <stdbool.h>

typedef enum cuda_op_id {
    CUDA_OP_CONV = 0, CUDA_OP_CONV_TRANSPOSE, CUDA_OP_BATCH_NORM, CUDA_OP_RELU, CUDA_OP_CLIP,
    CUDA_OP_DROPOUT, CUDA_OP_MAX_POOL, CUDA_OP_AVERAGE_POOL, CUDA_OP_GLOBAL_AVERAGE_POOL,
    CUDA_OP_ADD, CUDA_OP_SUM, CUDA_OP_CONCAT, CUDA_OP_COPY, CUDA_OP_PAD, CUDA_OP_GEMM,
    CUDA_OP_SCE, CUDA_OP_CONSTANT, CUDA_OP_SHAPE, CUDA_OP_GATHER,
    CUDA_OP_CONV_BWD_DATA, CUDA_OP_CONV_BWD_FILTER, CUDA_OP_CONVT_BWD_DATA,
    CUDA_OP_CONVT_BWD_FILTER, CUDA_OP_BATCH_NORM_GRAD, CUDA_OP_RELU_GRAD, CUDA_OP_CLIP_GRAD,
    CUDA_OP_DROPOUT_GRAD, CUDA_OP_MAX_POOL_GRAD, CUDA_OP_AVERAGE_POOL_GRAD,
    CUDA_OP_GLOBAL_AVERAGE_POOL_GRAD, CUDA_OP_REDUCE_SUM_TO, CUDA_OP_PAD_GRAD,
    CUDA_OP_CONCAT_GRAD, CUDA_OP_SCE_GRAD, CUDA_OP_SGD_MOMENTUM,
    CUDA_OP__COUNT
} cuda_op_id;

/* Kernel id of op kind op (ir/ops/op_list.h); -1 if none. */
int cuda_op_of(int op);

#endif
