/* op_args.h — an op's attributes decoded once into a typed struct.
 *
 * op_infer (op_table.h) runs an op's shape function and then its decoder
 * (op_def.decode), which reads the node's ONNX attributes (and plan-time
 * constant inputs such as Dropout's ratio), checks them against the input and
 * output shapes — kernel size against the weight, pads, strides, groups,
 * axes — and stores the result in node->args; a node that disagrees fails
 * naming itself. Import, the training-graph builder and the runtime loader all
 * go through op_infer, so a kernel never sees raw attributes: it reads
 *
 *   const op_conv_args *p = &op_args_of(a->n)->conv;   // group, window
 *
 * Ops without attributes have no decoder and node->args stays NULL. The
 * structs hold values only (no pointers), so node->args is one allocation,
 * freed with the node (ir.c). */
#ifndef OC_OP_ARGS_H
#define OC_OP_ARGS_H

#include "ir/ir.h"

/* Spatial window geometry shared by Conv, ConvTranspose and pooling. For each
 * of the nsp spatial dims: kernel, stride, dilation, pads (begin then end, as
 * ONNX orders them) after resolving auto_pad against the input extents. */
typedef struct op_window {
    int nsp;
    int64_t kernel[IR_MAX_RANK], stride[IR_MAX_RANK], dilation[IR_MAX_RANK];
    int64_t pad_begin[IR_MAX_RANK], pad_end[IR_MAX_RANK];
    bool ceil_mode;
} op_window;

/* Conv, ConvTranspose and their backward ops (the forward node's attributes). */
typedef struct op_conv_args {
    op_window win; /* against the forward input's spatial dims (the image side) */
    int64_t group; /* >= 1, divides both channel counts */
} op_conv_args;

/* MaxPool, AveragePool and their backward ops. */
typedef struct op_pool_args {
    op_window win;
    bool count_include_pad; /* AveragePool */
    bool storage_col_major; /* MaxPool's Indices output: storage_order = 1 */
} op_pool_args;

/* BatchNormalization and BatchNormalizationGrad. */
typedef struct op_bn_args {
    float epsilon, momentum;
    bool training; /* batch statistics (opset >= 14: training_mode; before: > 1 output);
                      the grad: false when frozen (running statistics as inputs 3, 4) */
    int stats_key; /* the tensor whose batch statistics X's are: X (BN input 0, the grad's
                      input 1), or through SwapIn/SwapOut copies their source, or a
                      recompute clone's output's original (the cuda statistics stash) */
} op_bn_args;

/* LayerNormalization and its gradient: rows are the dims from axis on. */
typedef struct op_ln_args {
    int64_t axis;
    float epsilon;
} op_ln_args;

/* Softmax, LogSoftmax and their gradients: rows along the normalised axis
 * (stride: the dims after it), or with flatten (opset < 13) the dims from
 * axis on as one row. */
typedef struct op_softmax_args {
    int64_t axis;
    bool flatten;
} op_softmax_args;

/* MatMul and its gradients: the right operand has batch dims (one GEMM per
 * batch) rather than being one matrix for every row. */
typedef struct op_matmul_args {
    bool batched;
} op_matmul_args;

/* WhereGrad: dY kept where cond (select) or where not cond (!select). */
typedef struct op_where_args {
    bool select;
} op_where_args;

/* ScatterNDGrad (op_fold_index.c): which gradient the node writes. */
typedef struct op_scatter_nd_grad_args {
    bool updates; /* dUpdates (the rows of dY at the indices); else dData (dY, those rows 0) */
} op_scatter_nd_grad_args;

/* MinMaxGrad, PReluGrad (op_binary.c): which input's gradient the node writes, in the
 * forward output's shape (summed to the input's after); MinMaxGrad: of Max or of Min. */
typedef struct op_binary_grad_args {
    int input; /* 0: A (PRelu: X), 1: B (PRelu: slope) */
    bool max;
} op_binary_grad_args;

/* FusedAttention and its gradient (op_attention.c). */
typedef struct op_attention_args {
    float scale, fill, dropout_ratio;
    bool k_transposed; /* input 1 is Kᵀ [b.., dh, S] (else K [b.., S, dh]) */
    bool seq_first;    /* Q, K, V, Y (and gradients) stored [N, T, H, d]: heads second-last */
    int64_t qkv_heads; /* > 0: Q, K, V one tensor [N, T, 3 H d] (its column thirds), H heads */
    int mask;          /* 0 none; 1 s = fill where cond; 2 s = fill where not cond */
    bool causal; /* the mask proven causal (op_attention_causal_mask): kernels may skip blocks */
    uint64_t dropout_key_hash; /* op_name_hash of the Dropout node it replaced */
} op_attention_args;

/* A causal FusedAttention's kernels compute the scores of row block i (rows
 * [i B, (i + 1) B)) against columns [0, (i + 1) B) only; the rest is masked
 * and its probabilities are exactly 0 (the cost model counts the same). */
#define OP_ATTENTION_BLOCK 128
/* With OC_ATTENTION_KERNEL=rows, heads (dh and dv) up to this run by rows on cuda
 * (runtime/cuda/cuda_attention.cu): a thread per query row or key column, the scores
 * recomputed and never stored; by default, and wider heads always, through chunks of [T, S]
 * scores and batched GEMMs (what the cost model counts). */
#define OP_ATTENTION_ROWS_DMAX 64
/* A fill at or below this makes a masked score's exp(fill - row max) 0 in
 * float32 and float64 whatever finite scores the row holds beside it. */
#define OP_ATTENTION_CAUSAL_FILL (-1e30f)

/* FusedAttention's logical geometry, which both backends run by
 * (op_attention_geometry): batches of [T, dh] queries against [S, dh] keys and
 * [S, dv] values; the batch dims bdims of the logical scores [b.., T, S]
 * (rank); seq_first: H heads, each tensor's row holding wq (Q, K and their
 * gradients), wv (V, dV) or wy (Y, dY) elements, K and V at koff and voff of
 * their tensors (qkv_heads: the column thirds of one); else H 0 and
 * contiguous [T, d] blocks. */
typedef struct op_attention_geom {
    int64_t nb, T, S, dh, dv;
    int64_t H, wq, wv, wy, koff, voff;
    int rank;
    int64_t bdims[IR_MAX_RANK];
} op_attention_geom;

typedef struct op_gemm_args {
    bool trans_a, trans_b;
    float alpha, beta;
} op_gemm_args;

/* Linear (op_linear.c): Y = X W^T + B (trans_w; W [N, K]) or X W + B (W [K, N]). */
typedef struct op_linear_args {
    bool trans_w, bias;
} op_linear_args;

/* Clip and ClipGrad bounds given as attributes (opset < 11; ClipGrad copies
 * them). Bounds given as inputs are read from the inputs. */
typedef struct op_clip_args {
    bool has_min, has_max;
    float min, max;
} op_clip_args;

/* Dropout and DropoutGrad. */
typedef struct op_dropout_args {
    float ratio;       /* in [0, 1) when training */
    bool training;     /* Dropout: a mask is drawn (else Y = X) */
    uint64_t key_hash; /* 64-bit FNV-1a of the name the mask is keyed by: the node's,
                           or a recompute clone's original (outcore_recompute_of) */
} op_dropout_args;

/* RandomUniformLike: uniform in [low, high), keyed like Dropout's mask (a
 * recompute clone draws its original's numbers). */
typedef struct op_random_args {
    float low, high;
    uint64_t key_hash;
} op_random_args;

typedef enum op_pad_mode {
    OP_PAD_CONSTANT = 0,
    OP_PAD_REFLECT,
    OP_PAD_EDGE,
    OP_PAD_WRAP, /* circular: index modulo the extent (opset 19) */
} op_pad_mode;

/* Pad (the pads of opset < 11 attributes; later ones come as an input) and
 * PadGrad (begin offsets into dY). */
typedef struct op_pad_args {
    op_pad_mode mode;
    bool pads_from_attr;        /* begin[] below is valid */
    int64_t begin[IR_MAX_RANK]; /* Pad: begin pads; PadGrad: -(forward begin pads) */
    uint64_t fill;              /* constant fill element bits (opset < 11 'value') */
} op_pad_args;

/* Concat, ConcatGrad, Gather, Flatten: one normalised axis. */
typedef struct op_axis_args {
    int64_t axis;
    /* GatherGrad: positions whose index is skip add nothing (nn.Embedding's padding_idx) */
    bool has_skip;
    int64_t skip;
} op_axis_args;

/* ConcatGrad: the axis and every output's extent along it (outputs may be
 * omitted, so the sizes are not all readable from shapes). */
#define OP_MAX_SPLIT 64
typedef struct op_split_args {
    int64_t axis;
    int n;
    int64_t sizes[OP_MAX_SPLIT];
} op_split_args;

/* Resize (Upsample) and ResizeGrad over the spatial dims (from 2 on, at most
 * OP_RESIZE_MAX_SP): nearest, linear or cubic, ONNX's coordinate transformation, per
 * dim the scale (output / input extent, or the scales input). The taps each output
 * reads: runtime/resize_coord.h. */
#define OP_RESIZE_MAX_SP 3
typedef enum op_resize_coord {
    OP_RESIZE_HALF_PIXEL = 0,
    OP_RESIZE_PYTORCH_HALF_PIXEL,
    OP_RESIZE_ALIGN_CORNERS,
    OP_RESIZE_ASYMMETRIC,
} op_resize_coord;
typedef enum op_resize_nearest {
    OP_NEAREST_ROUND_PREFER_FLOOR = 0,
    OP_NEAREST_ROUND_PREFER_CEIL,
    OP_NEAREST_FLOOR,
    OP_NEAREST_CEIL,
} op_resize_nearest;
typedef enum op_resize_mode {
    OP_RESIZE_NEAREST = 0,
    OP_RESIZE_LINEAR,
    OP_RESIZE_CUBIC,
} op_resize_mode;
typedef struct op_resize_args {
    op_resize_mode mode;
    double cubic_a;       /* cubic: cubic_coeff_a (ONNX's default and PyTorch's -0.75) */
    bool exclude_outside; /* cubic: taps outside the input get weight 0, the rest renormalised */
    bool antialias; /* linear, cubic: the filter stretched when downscaling (resize_coord.h) */
    op_resize_coord coord;
    op_resize_nearest nearest;
    int nsp;
    double scale[OP_RESIZE_MAX_SP];
} op_resize_args;

/* Transpose: output dim i is input dim perm[i]. */
typedef struct op_perm_args {
    int rank;
    int64_t perm[IR_MAX_RANK];
} op_perm_args;

/* Slice and SliceGrad: per dim of the sliced tensor, the first index and the
 * step (every dim listed: 0 and 1 where not sliced). */
typedef struct op_slice_args {
    int rank;
    int64_t start[IR_MAX_RANK], step[IR_MAX_RANK];
} op_slice_args;

/* Shape: the [start, end) dims taken, normalised. */
typedef struct op_shape_args {
    int64_t start, end;
} op_shape_args;

/* ElementOffsets: the data's dims and the axis the indices select along. */
typedef struct op_element_offsets_args {
    int rank;
    int64_t axis, dims[IR_MAX_RANK];
} op_element_offsets_args;

/* TopKOffsets: the k first elements along the axis, largest (else smallest) first. */
typedef struct op_top_k_args {
    int64_t k, axis;
    bool largest, last; /* last: equal values by the higher index first (ArgMax's option) */
    bool nan_first;     /* a NaN first, smallest first too (ArgMin) */
} op_top_k_args;

typedef enum op_reduction {
    OP_REDUCTION_MEAN = 0,
    OP_REDUCTION_SUM,
    OP_REDUCTION_NONE,
} op_reduction;

/* SoftmaxCrossEntropyLoss and its gradient. */
typedef struct op_sce_args {
    op_reduction reduction;
    bool has_ignore_index;
    int64_t ignore_index;
} op_sce_args;

/* SGDMomentum. */
typedef struct op_sgd_args {
    float lr, momentum, weight_decay;
} op_sgd_args;

/* AdamW (torch.optim.AdamW; bias correction from the step count). */
typedef struct op_adamw_args {
    float lr, beta1, beta2, epsilon, weight_decay;
} op_adamw_args;

/* ClipGradNorm; prescaled: input 0 is GradScaler's coefficient (the gradients
 * follow), by which the gradients are unscaled first (0: a skipped step). */
typedef struct op_clip_norm_args {
    float max_norm;
    bool prescaled;
} op_clip_norm_args;

/* GradScaler: torch.amp.GradScaler's dynamic loss scale. */
typedef struct op_grad_scaler_args {
    float growth, backoff;
    int64_t interval;
} op_grad_scaler_args;

/* ReduceSumTo, ReduceMean, ReduceSum: Y = scale * (X summed to the shape
 * dims, which has X's rank: X's extent where kept, 1 where summed; Y holds
 * the same elements, with or without those 1s). BroadcastTo: dX = scale *
 * dY broadcast to dX's shape. */
typedef struct op_reduce_args {
    float scale;
    int rank;
    int64_t dims[IR_MAX_RANK];
} op_reduce_args;

/* Pointwise ops with parameters (HardSigmoid's alpha, beta; Gelu's form,
 * alpha 1 for tanh); the math in runtime/pointwise.h reads p0, p1. */
typedef struct op_pointwise_args {
    float p0, p1;
} op_pointwise_args;

/* The predicate ops (runtime/predicate.h): IsInf's detect_positive / detect_negative. */
typedef struct op_predicate_args {
    bool detect_pos, detect_neg;
} op_predicate_args;

/* GridSample / GridSampleGrad (runtime/grid_sample.h): OC_GS_BILINEAR / _NEAREST / _BICUBIC,
 * OC_GS_ZEROS / _BORDER / _REFLECTION; the gradient's input (0: dX, 1: dGrid). */
typedef struct op_grid_sample_args {
    int mode, padding, input;
    bool align_corners;
} op_grid_sample_args;

/* Mod: fmod 1 (C's, the dividend's sign) or 0 (integers only: floored, the divisor's). */
typedef struct op_mod_args {
    bool fmod;
} op_mod_args;

/* CumSum: the normalised axis; the geometry of its scan (lines of len elements, inner
 * elements apart: the dims after the axis); exclusive, reverse (runtime/cum_sum.h). */
typedef struct op_cum_sum_args {
    int axis;
    int64_t lines, len, inner;
    bool exclusive, reverse;
} op_cum_sum_args;

typedef union op_args {
    op_conv_args conv;
    op_pool_args pool;
    op_bn_args bn;
    op_gemm_args gemm;
    op_linear_args linear;
    op_ln_args ln;
    op_softmax_args softmax;
    op_matmul_args matmul;
    op_where_args where;
    op_scatter_nd_grad_args scatter_nd_grad;
    op_binary_grad_args binary_grad;
    op_adamw_args adamw;
    op_clip_norm_args clip_norm;
    op_grad_scaler_args grad_scaler;
    op_attention_args attention;
    op_clip_args clip;
    op_dropout_args dropout;
    op_random_args random;
    op_pad_args pad;
    op_axis_args axis;
    op_split_args split;
    op_shape_args shape;
    op_top_k_args top_k;
    op_element_offsets_args element_offsets;
    op_perm_args perm;
    op_resize_args resize;
    op_slice_args slice;
    op_sce_args sce;
    op_sgd_args sgd;
    op_reduce_args reduce;
    op_pointwise_args pointwise;
    op_predicate_args predicate;
    op_grid_sample_args grid_sample;
    op_cum_sum_args cum_sum;
    op_mod_args mod;
} op_args;

/* 64-bit FNV-1a of a NUL-terminated string (Dropout's mask key). */
uint64_t op_name_hash(const char *s);
/* The decoded arguments of n (a bug when its op has a decoder that did not run). */
const op_args *op_args_of(const ir_node *n);
/* FusedAttention's or FusedAttentionGrad's geometry (decoded, shapes known). */
void op_attention_geometry(const ir_graph *g, const ir_node *n, op_attention_geom *out);
/* Whether the plan-time bool value cond, broadcast to scores [b.., T, S] and
 * read in mask mode (1: masked where cond; 2: where not), masks exactly the
 * scores above the diagonal (column j > row t) of every batch, T == S. */
bool op_attention_causal_mask(const ir_tensor *cond, int mode, int64_t T, int64_t S);
/* Fresh zeroed arguments attached to n, replacing earlier ones (decoders). */
op_args *op_args_new(ir_node *n);

#endif
