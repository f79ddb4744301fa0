/* op_list.h — every op outcore knows, listed once. Everything else about an
 * op is reached through its enum value op_kind (op_table.h), the way ggml
 * keys its per-op tables on one enum.
 *
 *   X(KIND, "OnnxName", DOMAIN, def, kern)
 *     KIND    enum value OP_<KIND>
 *     name    the ONNX op_type: the only place it is spelled (import and the
 *             loader look names up once; every later test is on the enum)
 *     DOMAIN  ONNX (the default domain "") or OC (OC_DOMAIN: the project's
 *             fused forward ops, backward, loss-gradient, update and copy ops)
 *     def     the op's definition op_def_<def> (ir/ops/op_*.c): arity, input
 *             roles, argument decoding and checks, shape function, cost model,
 *             gradient rule, saved tensors, in-place outputs
 *     kern    each backend's kernel for it: cpu_<kern> (runtime/cpu/),
 *             cuda_<kern> (runtime/cuda/); ops that share a kernel share kern
 *             (pointwise / pointwise_grad: the scalar math of runtime/pointwise.h)
 *
 * OC_OPS_COMPUTE lists the ops that run as kernels; OC_OPS_FOLD those only
 * evaluated at plan time (exporters' shape and constant glue); OC_OPS_LOWERED those the
 * importer rewrites into others (Einsum); OC_OPS_COPY the plan's
 * copies, which the executor runs on its copy streams (no kernel).
 * Adding an op: docs/adding-an-op.md. Pure preprocessor + one enum: C and
 * CUDA C++ include it alike. */
#ifndef OC_OP_LIST_H
#define OC_OP_LIST_H

#define OC_OPS_COMPUTE(X)                                                                          \
    /* forward (default ONNX domain) */                                                            \
    X(CONV, "Conv", ONNX, conv, conv)                                                              \
    X(CONV_TRANSPOSE, "ConvTranspose", ONNX, conv_transpose, conv_transpose)                       \
    X(BATCH_NORM, "BatchNormalization", ONNX, batch_norm, batch_norm)                              \
    X(LAYER_NORM, "LayerNormalization", ONNX, layer_norm, layer_norm)                              \
    X(BATCH_NORM_RELU, "BatchNormRelu", OC, batch_norm_relu, batch_norm_relu)                      \
    X(CONV_RELU, "ConvRelu", OC, conv_relu, conv_relu)                                             \
    X(RELU, "Relu", ONNX, relu, pointwise)                                                         \
    X(SIGMOID, "Sigmoid", ONNX, sigmoid, pointwise)                                                \
    X(TANH, "Tanh", ONNX, tanh, pointwise)                                                         \
    X(HARD_SIGMOID, "HardSigmoid", ONNX, hard_sigmoid, pointwise)                                  \
    X(HARD_SWISH, "HardSwish", ONNX, hard_swish, pointwise)                                        \
    X(ERF, "Erf", ONNX, erf, pointwise)                                                            \
    X(GELU, "Gelu", ONNX, gelu, pointwise)                                                         \
    X(NEG, "Neg", ONNX, neg, pointwise)                                                            \
    X(EXP, "Exp", ONNX, exp, pointwise)                                                            \
    X(LOG, "Log", ONNX, log, pointwise)                                                            \
    X(ABS, "Abs", ONNX, abs, pointwise)                                                            \
    X(RECIPROCAL, "Reciprocal", ONNX, reciprocal, pointwise)                                       \
    X(LEAKY_RELU, "LeakyRelu", ONNX, leaky_relu, pointwise)                                        \
    X(ELU, "Elu", ONNX, elu, pointwise)                                                            \
    X(SELU, "Selu", ONNX, selu, pointwise)                                                         \
    X(SOFTPLUS, "Softplus", ONNX, softplus, pointwise)                                             \
    X(MISH, "Mish", ONNX, mish, pointwise)                                                         \
    X(SIN, "Sin", ONNX, sin, pointwise)                                                            \
    X(COS, "Cos", ONNX, cos, pointwise)                                                            \
    X(TAN, "Tan", ONNX, tan, pointwise)                                                            \
    X(ASIN, "Asin", ONNX, asin, pointwise)                                                         \
    X(ACOS, "Acos", ONNX, acos, pointwise)                                                         \
    X(ATAN, "Atan", ONNX, atan, pointwise)                                                         \
    X(SINH, "Sinh", ONNX, sinh, pointwise)                                                         \
    X(COSH, "Cosh", ONNX, cosh, pointwise)                                                         \
    X(ASINH, "Asinh", ONNX, asinh, pointwise)                                                      \
    X(ACOSH, "Acosh", ONNX, acosh, pointwise)                                                      \
    X(ATANH, "Atanh", ONNX, atanh, pointwise)                                                      \
    X(SIGN, "Sign", ONNX, sign, pointwise)                                                         \
    X(FLOOR, "Floor", ONNX, floor, pointwise)                                                      \
    X(CEIL, "Ceil", ONNX, ceil, pointwise)                                                         \
    X(ROUND, "Round", ONNX, round, pointwise)                                                      \
    X(SOFTSIGN, "Softsign", ONNX, softsign, pointwise)                                             \
    X(THRESHOLDED_RELU, "ThresholdedRelu", ONNX, thresholded_relu, pointwise)                      \
    X(SHRINK, "Shrink", ONNX, shrink, pointwise)                                                   \
    X(SQRT, "Sqrt", ONNX, sqrt, pointwise)                                                         \
    X(POW, "Pow", ONNX, pow, pointwise)                                                            \
    X(SOFTMAX, "Softmax", ONNX, softmax, softmax)                                                  \
    X(LOG_SOFTMAX, "LogSoftmax", ONNX, log_softmax, softmax)                                       \
    X(CLIP, "Clip", ONNX, clip, clip)                                                              \
    X(DROPOUT, "Dropout", ONNX, dropout, dropout)                                                  \
    X(MAX_POOL, "MaxPool", ONNX, max_pool, max_pool)                                               \
    X(AVERAGE_POOL, "AveragePool", ONNX, average_pool, average_pool)                               \
    X(GLOBAL_AVERAGE_POOL, "GlobalAveragePool", ONNX, global_average_pool, global_average_pool)    \
    X(ADD, "Add", ONNX, add, add)                                                                  \
    X(SUB, "Sub", ONNX, sub, binary)                                                               \
    X(MUL, "Mul", ONNX, mul, binary)                                                               \
    X(DIV, "Div", ONNX, div, binary)                                                               \
    X(MAX, "Max", ONNX, min_max, binary)                                                           \
    X(MIN, "Min", ONNX, min_max, binary)                                                           \
    X(PRELU, "PRelu", ONNX, prelu, binary)                                                         \
    X(MOD, "Mod", ONNX, mod, binary)                                                               \
    X(CUM_SUM, "CumSum", ONNX, cum_sum, cum_sum)                                                   \
    X(POW_TENSOR, "PowTensor", OC, pow_tensor, binary)                                             \
    X(LESS, "Less", ONNX, compare, predicate)                                                      \
    X(GREATER, "Greater", ONNX, compare, predicate)                                                \
    X(LESS_OR_EQUAL, "LessOrEqual", ONNX, compare, predicate)                                      \
    X(GREATER_OR_EQUAL, "GreaterOrEqual", ONNX, compare, predicate)                                \
    X(EQUAL, "Equal", ONNX, compare, predicate)                                                    \
    X(AND, "And", ONNX, logic, predicate)                                                          \
    X(OR, "Or", ONNX, logic, predicate)                                                            \
    X(XOR, "Xor", ONNX, logic, predicate)                                                          \
    X(NOT, "Not", ONNX, not, predicate)                                                            \
    X(IS_NAN, "IsNaN", ONNX, is_class, predicate)                                                  \
    X(IS_INF, "IsInf", ONNX, is_class, predicate)                                                  \
    X(WHERE, "Where", ONNX, where, where)                                                          \
    X(EXPAND, "Expand", ONNX, expand, expand)                                                      \
    X(RANDOM_UNIFORM_LIKE, "RandomUniformLike", ONNX, random_uniform_like, random_uniform_like)    \
    X(REDUCE_MEAN, "ReduceMean", ONNX, reduce_mean, reduce_sum_to)                                 \
    X(REDUCE_SUM, "ReduceSum", ONNX, reduce_sum, reduce_sum_to)                                    \
    X(SUM, "Sum", ONNX, sum, sum)                                                                  \
    X(CONCAT, "Concat", ONNX, concat, concat)                                                      \
    X(FLATTEN, "Flatten", ONNX, flatten, copy)                                                     \
    X(RESHAPE, "Reshape", ONNX, reshape, copy)                                                     \
    X(UNSQUEEZE, "Unsqueeze", ONNX, unsqueeze, copy)                                               \
    X(PAD, "Pad", ONNX, pad, pad)                                                                  \
    X(GEMM, "Gemm", ONNX, gemm, gemm)                                                              \
    X(MATMUL, "MatMul", ONNX, matmul, matmul)                                                      \
    X(LINEAR, "Linear", OC, linear, linear)                                                        \
    X(SOFTMAX_CROSS_ENTROPY, "SoftmaxCrossEntropyLoss", ONNX, softmax_cross_entropy,               \
      softmax_cross_entropy)                                                                       \
    X(FUSED_ATTENTION, "FusedAttention", OC, fused_attention, fused_attention)                     \
    X(CONSTANT, "Constant", ONNX, constant, constant)                                              \
    X(SHAPE, "Shape", ONNX, shape, shape)                                                          \
    X(GATHER, "Gather", ONNX, gather, gather)                                                      \
    X(SCATTER_ND, "ScatterND", ONNX, scatter_nd, scatter_nd)                                       \
    X(IDENTITY, "Identity", ONNX, identity, copy)                                                  \
    X(SQUEEZE, "Squeeze", ONNX, squeeze, copy)                                                     \
    X(TRANSPOSE, "Transpose", ONNX, transpose, transpose)                                          \
    X(GRID_SAMPLE, "GridSample", ONNX, grid_sample, grid_sample)                                   \
    X(RESIZE, "Resize", ONNX, resize, resize)                                                      \
    X(UPSAMPLE, "Upsample", ONNX, upsample, resize)                                                \
    X(SLICE, "Slice", ONNX, slice, slice)                                                          \
    X(SPLIT, "Split", ONNX, split, concat_grad)                                                    \
    X(CAST, "Cast", ONNX, cast, cast)                                                              \
    X(CAST_LIKE, "CastLike", ONNX, cast_like, cast)                                                \
    X(TOP_K_OFFSETS, "TopKOffsets", OC, top_k_offsets, top_k_offsets)                              \
    X(ELEMENT_OFFSETS, "ElementOffsets", OC, element_offsets, element_offsets)                     \
    X(SEGMENT_MAX, "SegmentMax", OC, segment_max, segment_max)                                     \
    /* backward, loss gradient and update (OC_DOMAIN) */                                           \
    X(CONV_BACKWARD_DATA, "ConvBackwardData", OC, conv_backward_data, conv_backward_data)          \
    X(CONV_BACKWARD_FILTER, "ConvBackwardFilter", OC, conv_backward_filter, conv_backward_filter)  \
    X(CONV_TRANSPOSE_BACKWARD_DATA, "ConvTransposeBackwardData", OC, conv_transpose_backward_data, \
      conv_transpose_backward_data)                                                                \
    X(CONV_TRANSPOSE_BACKWARD_FILTER, "ConvTransposeBackwardFilter", OC,                           \
      conv_transpose_backward_filter, conv_transpose_backward_filter)                              \
    X(BATCH_NORM_GRAD, "BatchNormalizationGrad", OC, batch_norm_grad, batch_norm_grad)             \
    X(LAYER_NORM_GRAD, "LayerNormalizationGrad", OC, layer_norm_grad, layer_norm_grad)             \
    X(BATCH_NORM_RELU_GRAD, "BatchNormReluGrad", OC, batch_norm_relu_grad, batch_norm_relu_grad)   \
    X(RELU_GRAD, "ReluGrad", OC, relu_grad, pointwise_grad)                                        \
    X(RELU_GRAD_BIAS, "ReluGradBias", OC, relu_grad_bias, relu_grad_bias)                          \
    X(SIGMOID_GRAD, "SigmoidGrad", OC, sigmoid_grad, pointwise_grad)                               \
    X(TANH_GRAD, "TanhGrad", OC, tanh_grad, pointwise_grad)                                        \
    X(HARD_SIGMOID_GRAD, "HardSigmoidGrad", OC, hard_sigmoid_grad, pointwise_grad)                 \
    X(HARD_SWISH_GRAD, "HardSwishGrad", OC, hard_swish_grad, pointwise_grad)                       \
    X(ERF_GRAD, "ErfGrad", OC, erf_grad, pointwise_grad)                                           \
    X(GELU_GRAD, "GeluGrad", OC, gelu_grad, pointwise_grad)                                        \
    X(EXP_GRAD, "ExpGrad", OC, exp_grad, pointwise_grad)                                           \
    X(LOG_GRAD, "LogGrad", OC, log_grad, pointwise_grad)                                           \
    X(ABS_GRAD, "AbsGrad", OC, abs_grad, pointwise_grad)                                           \
    X(RECIPROCAL_GRAD, "ReciprocalGrad", OC, reciprocal_grad, pointwise_grad)                      \
    X(LEAKY_RELU_GRAD, "LeakyReluGrad", OC, leaky_relu_grad, pointwise_grad)                       \
    X(ELU_GRAD, "EluGrad", OC, elu_grad, pointwise_grad)                                           \
    X(SELU_GRAD, "SeluGrad", OC, selu_grad, pointwise_grad)                                        \
    X(SOFTPLUS_GRAD, "SoftplusGrad", OC, softplus_grad, pointwise_grad)                            \
    X(MISH_GRAD, "MishGrad", OC, mish_grad, pointwise_grad)                                        \
    X(SIN_GRAD, "SinGrad", OC, sin_grad, pointwise_grad)                                           \
    X(COS_GRAD, "CosGrad", OC, cos_grad, pointwise_grad)                                           \
    X(TAN_GRAD, "TanGrad", OC, tan_grad, pointwise_grad)                                           \
    X(ASIN_GRAD, "AsinGrad", OC, asin_grad, pointwise_grad)                                        \
    X(ACOS_GRAD, "AcosGrad", OC, acos_grad, pointwise_grad)                                        \
    X(ATAN_GRAD, "AtanGrad", OC, atan_grad, pointwise_grad)                                        \
    X(SINH_GRAD, "SinhGrad", OC, sinh_grad, pointwise_grad)                                        \
    X(COSH_GRAD, "CoshGrad", OC, cosh_grad, pointwise_grad)                                        \
    X(ASINH_GRAD, "AsinhGrad", OC, asinh_grad, pointwise_grad)                                     \
    X(ACOSH_GRAD, "AcoshGrad", OC, acosh_grad, pointwise_grad)                                     \
    X(ATANH_GRAD, "AtanhGrad", OC, atanh_grad, pointwise_grad)                                     \
    X(SOFTSIGN_GRAD, "SoftsignGrad", OC, softsign_grad, pointwise_grad)                            \
    X(THRESHOLDED_RELU_GRAD, "ThresholdedReluGrad", OC, thresholded_relu_grad, pointwise_grad)     \
    X(SHRINK_GRAD, "ShrinkGrad", OC, shrink_grad, pointwise_grad)                                  \
    X(SQRT_GRAD, "SqrtGrad", OC, sqrt_grad, pointwise_grad)                                        \
    X(POW_GRAD, "PowGrad", OC, pow_grad, pointwise_grad)                                           \
    X(WHERE_GRAD, "WhereGrad", OC, where_grad, where_grad)                                         \
    X(MIN_MAX_GRAD, "MinMaxGrad", OC, min_max_grad, binary_grad)                                   \
    X(PRELU_GRAD, "PReluGrad", OC, prelu_grad, binary_grad)                                        \
    X(POW_TENSOR_GRAD, "PowTensorGrad", OC, pow_tensor_grad, binary_grad)                          \
    X(FUSED_ATTENTION_GRAD, "FusedAttentionGrad", OC, fused_attention_grad, fused_attention_grad)  \
    X(SOFTMAX_GRAD, "SoftmaxGrad", OC, softmax_grad, softmax_grad)                                 \
    X(LOG_SOFTMAX_GRAD, "LogSoftmaxGrad", OC, log_softmax_grad, softmax_grad)                      \
    X(CLIP_GRAD, "ClipGrad", OC, clip_grad, clip_grad)                                             \
    X(DROPOUT_GRAD, "DropoutGrad", OC, dropout_grad, dropout_grad)                                 \
    X(MAX_POOL_GRAD, "MaxPoolGrad", OC, max_pool_grad, max_pool_grad)                              \
    X(AVERAGE_POOL_GRAD, "AveragePoolGrad", OC, average_pool_grad, average_pool_grad)              \
    X(GLOBAL_AVERAGE_POOL_GRAD, "GlobalAveragePoolGrad", OC, global_average_pool_grad,             \
      global_average_pool_grad)                                                                    \
    X(REDUCE_SUM_TO, "ReduceSumTo", OC, reduce_sum_to, reduce_sum_to)                              \
    X(BROADCAST_TO, "BroadcastTo", OC, broadcast_to, broadcast_to)                                 \
    X(SLICE_GRAD, "SliceGrad", OC, slice_grad, slice_grad)                                         \
    X(GATHER_GRAD, "GatherGrad", OC, gather_grad, gather_grad)                                     \
    X(SEGMENT_MAX_GRAD, "SegmentMaxGrad", OC, segment_max_grad, segment_max_grad)                  \
    X(SCATTER_ND_GRAD, "ScatterNDGrad", OC, scatter_nd_grad, scatter_nd_grad)                      \
    X(RESIZE_GRAD, "ResizeGrad", OC, resize_grad, resize_grad)                                     \
    X(GRID_SAMPLE_GRAD, "GridSampleGrad", OC, grid_sample_grad, grid_sample_grad)                  \
    X(MATMUL_GRAD_A, "MatMulGradA", OC, matmul_grad_a, matmul)                                     \
    X(MATMUL_GRAD_B, "MatMulGradB", OC, matmul_grad_b, matmul)                                     \
    X(PAD_GRAD, "PadGrad", OC, pad_grad, pad_grad)                                                 \
    X(CONCAT_GRAD, "ConcatGrad", OC, concat_grad, concat_grad)                                     \
    X(SOFTMAX_CROSS_ENTROPY_GRAD, "SoftmaxCrossEntropyLossGrad", OC, softmax_cross_entropy_grad,   \
      softmax_cross_entropy_grad)                                                                  \
    X(CLIP_GRAD_NORM, "ClipGradNorm", OC, clip_grad_norm, clip_grad_norm)                          \
    X(GRAD_SCALER, "GradScaler", OC, grad_scaler, grad_scaler)                                     \
    X(SGD_MOMENTUM, "SGDMomentum", OC, sgd_momentum, sgd_momentum)                                 \
    X(ADAMW, "AdamW", OC, adamw, adamw)

/* Ops evaluated at plan time only (op_fold.c): their inputs must be plan-time
 * values; a node of them never reaches a training graph, so no kernel. */
#define OC_OPS_FOLD(X)                                                                             \
    X(TRILU, "Trilu", ONNX, trilu, none)                                                           \
    X(RANGE, "Range", ONNX, range, none)                                                           \
    X(CONSTANT_OF_SHAPE, "ConstantOfShape", ONNX, constant_of_shape, none)                         \
    X(EYE_LIKE, "EyeLike", ONNX, eye_like, none)                                                   \
    X(BAG_BOUNDS, "BagBounds", OC, bag_bounds, none)                                               \
    X(GATHER_ND, "GatherND", ONNX, gather_nd, none)                                                \
    X(GATHER_ELEMENTS, "GatherElements", ONNX, gather_elements, none)                              \
    X(TILE, "Tile", ONNX, tile, none)                                                              \
    X(REDUCE_MAX, "ReduceMax", ONNX, reduce_max, none)                                             \
    X(REDUCE_MIN, "ReduceMin", ONNX, reduce_min, none)                                             \
    X(TOP_K, "TopK", ONNX, top_k, none)                                                            \
    X(ARG_MAX, "ArgMax", ONNX, arg_max, none)                                                      \
    X(ARG_MIN, "ArgMin", ONNX, arg_min, none)

/* Ops rewritten into others: by the importer (Einsum, ReduceL2: never in a graph) or at
 * load, before their shapes are inferred (InstanceNormalization, ScatterElements, Col2Im,
 * RNN / GRU / LSTM and Loop unrolled: op_def.lower). Sequences known at load (op_sequence.c)
 * become their elements; the nodes writing them go once shapes are inferred. */
#define OC_OPS_LOWERED(X)                                                                          \
    X(EINSUM, "Einsum", ONNX, einsum, none)                                                        \
    X(BAG_REDUCE, "BagReduce", OC, bag_reduce, none)                                               \
    X(REDUCE_L2, "ReduceL2", ONNX, reduce_l2, none)                                                \
    X(INSTANCE_NORM, "InstanceNormalization", ONNX, instance_norm, none)                           \
    X(SCATTER_ELEMENTS, "ScatterElements", ONNX, scatter_elements, none)                           \
    X(COL2IM, "Col2Im", ONNX, col2im, none)                                                        \
    X(RNN, "RNN", ONNX, rnn, none)                                                                 \
    X(GRU, "GRU", ONNX, gru, none)                                                                 \
    X(LSTM, "LSTM", ONNX, lstm, none)                                                              \
    X(LOOP, "Loop", ONNX, loop, none)                                                              \
    X(IF, "If", ONNX, if, none)                                                                    \
    X(SEQUENCE_EMPTY, "SequenceEmpty", ONNX, sequence_empty, none)                                 \
    X(SEQUENCE_INSERT, "SequenceInsert", ONNX, sequence_insert, none)                              \
    X(SEQUENCE_AT, "SequenceAt", ONNX, sequence_at, none)                                          \
    X(CONCAT_FROM_SEQUENCE, "ConcatFromSequence", ONNX, concat_from_sequence, none)                \
    X(DEPTH_TO_SPACE, "DepthToSpace", ONNX, depth_to_space, none)                                  \
    X(SPACE_TO_DEPTH, "SpaceToDepth", ONNX, space_to_depth, none)                                  \
    X(MEAN, "Mean", ONNX, mean, none)                                                              \
    X(CELU, "Celu", ONNX, celu, none)                                                              \
    X(LRN, "LRN", ONNX, lrn, none)                                                                 \
    X(NEGATIVE_LOG_LIKELIHOOD_LOSS, "NegativeLogLikelihoodLoss", ONNX,                             \
      negative_log_likelihood_loss, none)                                                          \
    X(REDUCE_L1, "ReduceL1", ONNX, reduce_l1, none)                                                \
    X(REDUCE_SUM_SQUARE, "ReduceSumSquare", ONNX, reduce_sum_square, none)                         \
    X(REDUCE_LOG_SUM, "ReduceLogSum", ONNX, reduce_log_sum, none)                                  \
    X(REDUCE_LOG_SUM_EXP, "ReduceLogSumExp", ONNX, reduce_log_sum_exp, none)                       \
    X(REDUCE_PROD, "ReduceProd", ONNX, reduce_prod, none)                                          \
    X(ONE_HOT, "OneHot", ONNX, one_hot, none)                                                      \
    X(DFT, "DFT", ONNX, dft, none)                                                                 \
    X(SIZE, "Size", ONNX, size, none)

#define OC_OPS_COPY(X)                                                                             \
    X(SWAP_OUT, "SwapOut", OC, swap_out, none)                                                     \
    X(SWAP_IN, "SwapIn", OC, swap_in, none)

// clang-format off
typedef enum op_kind {
#define OP_LIST_ENUM(kind, name, domain, def, kern) OP_##kind,
    OC_OPS_COMPUTE(OP_LIST_ENUM)
    OC_OPS_FOLD(OP_LIST_ENUM)
    OC_OPS_LOWERED(OP_LIST_ENUM)
    OC_OPS_COPY(OP_LIST_ENUM)
#undef OP_LIST_ENUM
    OP__COUNT
} op_kind;
// clang-format on

/* A node whose op is not in the list (rejected at import; ir_node.op). */
#define OP_UNKNOWN (-1)

/* The count, checked at compile time: a change of the list is seen here, and
 * every per-op table indexed by op_kind is sized by OP__COUNT. */
#define OP_LIST_COUNT 217
#ifdef __cplusplus
static_assert(OP__COUNT == OP_LIST_COUNT, "op list changed: update OP_LIST_COUNT");
#else
_Static_assert(OP__COUNT == OP_LIST_COUNT, "op list changed: update OP_LIST_COUNT");
#endif

#endif
