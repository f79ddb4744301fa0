/* op_cases.h — the op × backend harness's cases (tests/unit/test_op_harness.c),
 * one line each. Adding an op: add its cases here (docs/adding-an-op.md).
 *
 *   OP_CASE(KIND, "what", opset, outputs, "inputs", "attributes")
 *     KIND        the op_kind without OP_ (ir/ops/op_list.h)
 *     outputs     how many outputs the node has (BatchNormalization's training
 *                 form has 3; Dropout's mask, when asked for, is the 2nd)
 *     inputs      space-separated, in slot order:
 *                   [2,3,4]      float, uniform in [-1, 1)   (a trainable
 *                   +[3]         float, uniform in [0.5, 1.5) parameter, or
 *                                state/constant by the op's input role)
 *                   ~[3]         float, uniform in [-0.5, 0.5)  (Asin's domain)
 *                   ++[3]        float, uniform in [1.5, 2.5)   (Acosh's domain)
 *                   ^[3]         float, uniform in [-1.5, 1.5)  (a grid reaching outside)
 *                   i64<5[4]     int64, uniform in [0, 5)
 *                   i64=[2,-1]   int64 values (rank 1; i64=[] is empty)
 *                   i64=[2,0,1,3]@[2,2]  the same in the shape given
 *                   b[3,4]       bool, true or false at random
 *                   bu[1,4,4]    bool, true above the last two dims' diagonal
 *                                (a causal mask); bl[4,4]: true at and below it
 *                   h[2,3,4]     as [2,3,4], then cast to the case's half type
 *                                (!bf16 / !fp16) by a Cast node: a half activation
 *                                (h+[2,3]: the same of +[2,3])
 *                   f=0.5  i64=3  b=1   a scalar (rank 0) float/int64/bool
 *                   -            an omitted input
 *     attributes  space-separated name=value: 2 (int), 0.5 (float),
 *                 [2,1] (ints), SAME_UPPER (string); and markers:
 *                   !forward        the op's gradient rule refuses these
 *                                   arguments: forward only (checked: it must)
 *                   !refused:cuda   that backend refuses them with an error
 *                                   naming the node (checked: it must)
 *                   !frozen         the step is built with --bn frozen
 *                   !adamw          the step updates with AdamW (else SGD)
 *                   !clip           the step clips gradients to a global norm
 *                   !scaled         the loss is scaled (GradScaler at scale 1: the
 *                                   gradients stay comparable with finite differences)
 *                   !zero:K         input K's gradient is zero everywhere (nearest
 *                                   sampling's grid): checked zero, not required nonzero
 *                   !bf16 !fp16     the step is built with --precision bf16 / fp16
 *                                   (autocast's Casts around the node): no finite
 *                                   differences (the float32 cases check the rule);
 *                                   backends compared within a few half units in the
 *                                   last place (the cuda backend's native half
 *                                   convolutions and GEMMs, its widened other nodes)
 *                   !nhwc           the step is built with --layout nhwc: the node
 *                                   is channels-last (checked), Transposes around it
 *
 * For each case on the cpu backend: the op's gradient rule builds the backward
 * (train_build, a probe loss after the node), and every gradient is checked
 * against central finite differences; then every other backend built in runs
 * the whole training step and is compared with cpu tensor by tensor.
 * Each case draws its numbers from its own seed (a hash of its op and name).
 * OP_EXEMPT(KIND, "why") names an op no case can reach; the harness fails when
 * an op is neither reached by a case nor exempt, or exempt and reached. */

/* forward ops (their backward ops are reached through their gradient rules) */
OP_CASE(CONV, "3x3 pad 1", 13, 1, "[2,3,6,5] [4,3,3,3] [4]", "pads=[1,1,1,1]")
OP_CASE(CONV, "group 2, stride, dilation", 13, 1, "[2,4,7,6] [6,2,3,2] [6]",
        "group=2 strides=[2,1] pads=[1,0,1,0] dilations=[1,2] kernel_shape=[3,2]")
/* pads unequal at a dim's ends: the cuda kernels refuse them; a model's such Conv reaches them
 * as a Pad then a Conv, a ConvTranspose as a ConvTranspose then a Slice (op_conv.c, at load) */
OP_CASE(CONV, "asymmetric pads", 13, 1, "[1,2,6,5] [3,2,3,2] [3]", "pads=[1,0,0,1] !refused:cuda")
OP_CASE(CONV, "1-d, no bias", 13, 1, "[2,3,9] [2,3,3] -", "strides=[2]")
OP_CASE(CONV, "SAME_UPPER", 11, 1, "[1,2,5,5] [3,2,3,3] [3]", "auto_pad=SAME_UPPER")
OP_CASE(CONV_TRANSPOSE, "group 2, stride 2, output_padding", 13, 1, "[2,4,4,3] [4,3,3,2] [6]",
        "group=2 strides=[2,1] pads=[1,0,1,0] dilations=[1,2] output_padding=[1,0]")
OP_CASE(CONV_TRANSPOSE, "asymmetric pads", 13, 1, "[1,2,3,3] [2,2,3,3] -",
        "strides=[2,2] pads=[1,0,0,1] !refused:cuda")
OP_CASE(CONV_TRANSPOSE, "2x2 stride 2 (U-Net up)", 13, 1, "[1,4,3,3] [4,2,2,2] [2]",
        "strides=[2,2] kernel_shape=[2,2]")
OP_CASE(BATCH_NORM, "training (opset 15)", 15, 3, "[3,2,4,3] +[2] [2] [2] +[2]",
        "training_mode=1 momentum=0.9")
OP_CASE(BATCH_NORM, "training, 5 outputs (opset 9)", 9, 3, "[4,3,5] +[3] [3] [3] +[3]",
        "epsilon=0.001")
OP_CASE(BATCH_NORM, "inference form trained (as model.train())", 15, 1,
        "[3,2,4,3] +[2] [2] [2] +[2]", "")
OP_CASE(BATCH_NORM, "inference form, --bn frozen", 15, 1, "[3,2,4,3] +[2] [2] [2] +[2]", "!frozen")
OP_CASE(BATCH_NORM_RELU, "training, fused backward", 15, 3, "[3,2,4,3] +[2] [2] [2] +[2]",
        "training_mode=1 momentum=0.9 fused_backward=1")
OP_CASE(BATCH_NORM_RELU, "training, backward as ReluGrad + BNGrad", 15, 3,
        "[3,2,4,3] +[2] [2] [2] +[2]", "training_mode=1")
OP_CASE(BATCH_NORM_RELU, "training, residual (ResNet's block end)", 15, 3,
        "[2,3,5,4] +[3] [3] [3] +[3] [2,3,5,4]", "training_mode=1 epsilon=0.001 fused_backward=1")
OP_CASE(BATCH_NORM_RELU, "running statistics (frozen), fused backward, 1-d", 15, 1,
        "[4,3,5] +[3] [3] [3] +[3]", "training_mode=0 fused_backward=1")
OP_CASE(BATCH_NORM_RELU, "running statistics (frozen), residual", 15, 1,
        "[2,3,4,3] +[3] [3] [3] +[3] [2,3,4,3]", "training_mode=0")
OP_CASE(CONV_RELU, "3x3 pad 1, bias (cuDNN's fused call)", 13, 1, "[2,3,6,5] [4,3,3,3] [4]",
        "pads=[1,1,1,1]")
OP_CASE(CONV_RELU, "bias, fused backward (ReluGradBias)", 13, 1, "[2,3,6,5] [4,3,3,3] [4]",
        "pads=[1,1,1,1] fused_backward=1")
OP_CASE(CONV_RELU, "group 2, stride, dilation", 13, 1, "[2,4,7,6] [6,2,3,2] [6]",
        "group=2 strides=[2,1] pads=[1,0,1,0] dilations=[1,2] kernel_shape=[3,2]")
OP_CASE(CONV_RELU, "1-d, no bias", 13, 1, "[2,3,9] [2,3,3] -", "strides=[2]")
OP_CASE(CONV_RELU, "fp16, bias, fused backward", 13, 1, "[2,3,6,5] [4,3,3,3] [4]",
        "pads=[1,1,1,1] fused_backward=1 !fp16")
OP_CASE(LAYER_NORM, "last dim (ConvNeXt, channels-last)", 17, 1, "[2,3,4,6] +[6] [6]", "")
OP_CASE(LAYER_NORM, "two dims, no bias", 17, 1, "[3,4,5] +[4,5]", "axis=1 epsilon=0.001")
OP_CASE(LAYER_NORM, "320 rows (scale / bias gradients in parts)", 17, 1, "[4,80,16] +[16] [16]", "")
OP_CASE(LAYER_NORM, "rows of 800 (past cuda's 768 in registers)", 17, 1, "[2,3,800] +[800] [800]",
        "")
OP_CASE(RELU, "", 13, 1, "[2,3,4,5]", "")
OP_CASE(SIGMOID, "", 13, 1, "[2,3,4,5]", "")
OP_CASE(CLIP, "bounds as inputs (ReLU6-like)", 13, 1, "[3,4,5] f=-0.3 f=0.4", "")
OP_CASE(CLIP, "min only", 13, 1, "[3,4,5] f=-0.2 -", "")
OP_CASE(CLIP, "bounds as attributes", 9, 1, "[3,4,5]", "min=-0.5 max=0.25")
OP_CASE(DROPOUT, "ratio 0.3 as input, training", 13, 2, "[4,5,6] f=0.3 b=1", "")
OP_CASE(DROPOUT, "ratio attribute, mask added by the rule", 10, 1, "[3,7]", "ratio=0.5")
OP_CASE(MAX_POOL, "3x3 stride 2 pad 1", 13, 1, "[2,3,7,6]",
        "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]")
OP_CASE(MAX_POOL, "ceil_mode, dilation", 13, 1, "[1,2,8,7]",
        "kernel_shape=[2,3] strides=[2,2] dilations=[1,2] ceil_mode=1")
OP_CASE(MAX_POOL, "with indices", 13, 2, "[1,2,6,6]", "kernel_shape=[2,2] strides=[2,2]")
OP_CASE(AVERAGE_POOL, "pad excluded", 13, 1, "[2,3,7,6]",
        "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1]")
OP_CASE(AVERAGE_POOL, "pad included, asymmetric", 13, 1, "[1,2,6,5]",
        "kernel_shape=[3,2] strides=[1,2] pads=[0,1,2,0] count_include_pad=1")
OP_CASE(AVERAGE_POOL, "ceil_mode, pad included", 13, 1, "[2,2,5,6]",
        "kernel_shape=[3,2] strides=[2,2] pads=[1,0,1,1] ceil_mode=1 count_include_pad=1")
OP_CASE(GLOBAL_AVERAGE_POOL, "", 13, 1, "[2,3,4,5]", "")
/* channels-last (--layout nhwc, train/channels_last.h) */
OP_CASE(CONV, "nhwc, 3x3 pad 1, bias", 13, 1, "[2,3,6,5] [4,3,3,3] [4]", "pads=[1,1,1,1] !nhwc")
OP_CASE(CONV, "nhwc, group 2, stride, dilation", 13, 1, "[2,4,7,6] [6,2,3,2] [6]",
        "group=2 strides=[2,1] pads=[1,0,1,0] dilations=[1,2] kernel_shape=[3,2] !nhwc")
OP_CASE(CONV, "nhwc, 1x1, no bias", 13, 1, "[2,5,3,4] [6,5,1,1] -", "!nhwc")
OP_CASE(CONV, "nhwc, bf16, bias", 13, 1, "[2,3,6,5] [4,3,3,3] [4]", "pads=[1,1,1,1] !nhwc !bf16")
OP_CASE(CONV, "nhwc, fp16, stride 2", 13, 1, "[2,4,7,6] [6,4,3,3] [6]", "strides=[2,2] !nhwc !fp16")
OP_CASE(CONV_TRANSPOSE, "nhwc, group 2, stride 2, output_padding", 13, 1, "[2,4,4,3] [4,3,3,2] [6]",
        "group=2 strides=[2,1] pads=[1,0,1,0] dilations=[1,2] output_padding=[1,0] !nhwc")
OP_CASE(CONV_TRANSPOSE, "nhwc, 2x2 stride 2 (U-Net up)", 13, 1, "[1,4,3,3] [4,2,2,2] [2]",
        "strides=[2,2] kernel_shape=[2,2] !nhwc")
OP_CASE(CONV_TRANSPOSE, "nhwc, bf16, no bias", 13, 1, "[2,4,3,3] [4,3,3,3] -",
        "strides=[2,2] pads=[1,1,1,1] !nhwc !bf16")
OP_CASE(CONV_RELU, "nhwc, bias", 13, 1, "[2,3,6,5] [4,3,3,3] [4]", "pads=[1,1,1,1] !nhwc")
OP_CASE(CONV_RELU, "nhwc, bias, fused backward", 13, 1, "[2,3,6,5] [4,3,3,3] [4]",
        "pads=[1,1,1,1] fused_backward=1 !nhwc")
OP_CASE(CONV_RELU, "nhwc, bf16, bias, fused backward", 13, 1, "[2,3,6,5] [4,3,3,3] [4]",
        "pads=[1,1,1,1] fused_backward=1 !nhwc !bf16")
OP_CASE(BATCH_NORM, "nhwc, training (opset 15)", 15, 3, "[3,2,4,3] +[2] [2] [2] +[2]",
        "training_mode=1 momentum=0.9 !nhwc")
OP_CASE(BATCH_NORM, "nhwc, 5 outputs (opset 9)", 9, 5, "[4,3,5,2] +[3] [3] [3] +[3]",
        "epsilon=0.001 !nhwc")
OP_CASE(BATCH_NORM, "nhwc, --bn frozen", 15, 1, "[3,2,4,3] +[2] [2] [2] +[2]", "!frozen !nhwc")
OP_CASE(BATCH_NORM, "nhwc, bf16, training", 15, 3, "[3,2,4,3] +[2] [2] [2] +[2]",
        "training_mode=1 !nhwc !bf16")
OP_CASE(BATCH_NORM_RELU, "nhwc, fused backward", 15, 3, "[3,2,4,3] +[2] [2] [2] +[2]",
        "training_mode=1 fused_backward=1 !nhwc")
OP_CASE(BATCH_NORM_RELU, "nhwc, residual", 15, 3, "[3,2,4,3] +[2] [2] [2] +[2] [3,2,4,3]",
        "training_mode=1 !nhwc")
OP_CASE(BATCH_NORM_RELU, "nhwc, running statistics, fused backward", 15, 1,
        "[2,3,3,4] +[3] [3] [3] +[3]", "fused_backward=1 !nhwc")
/* 8 channels: the channels-last BN kernels' 4-channel vectors (cu_kernels.h vec_of; half
 * data: test_cuda_backend.c) */
OP_CASE(BATCH_NORM_RELU, "nhwc, 8 channels, fused backward", 15, 3, "[3,8,3,2] +[8] [8] [8] +[8]",
        "training_mode=1 fused_backward=1 !nhwc")
OP_CASE(BATCH_NORM_RELU, "nhwc, 8 channels, residual", 15, 3,
        "[2,8,3,3] +[8] [8] [8] +[8] [2,8,3,3]", "training_mode=1 !nhwc")
OP_CASE(BATCH_NORM_RELU, "nhwc, 8 channels, running statistics, fused backward", 15, 1,
        "[2,8,3,2] +[8] [8] [8] +[8]", "fused_backward=1 !nhwc")
/* inputs in [0.5, 1.5): a mean 3.5x the spread, for statistics summed in float first
 * (OC_BN_MATH=float, test_cuda_emu.sh 1c-bnf) */
OP_CASE(BATCH_NORM_RELU, "nhwc, 8 channels, offset inputs, fused backward", 15, 3,
        "+[4,8,4,4] +[8] [8] [8] +[8]", "training_mode=1 fused_backward=1 !nhwc")
OP_CASE(MAX_POOL, "nhwc, 3x3 stride 2 pad 1", 13, 1, "[2,3,7,6]",
        "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] !nhwc")
OP_CASE(MAX_POOL, "nhwc, 8 channels (4 a thread), 3x3 stride 2 pad 1", 13, 1, "[2,8,7,6]",
        "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] !nhwc")
OP_CASE(MAX_POOL, "nhwc, 4 channels, 2x2 stride 2, bf16", 13, 1, "[3,4,6,5]",
        "kernel_shape=[2,2] strides=[2,2] !nhwc !bf16")
OP_CASE(AVERAGE_POOL, "nhwc, pad excluded", 13, 1, "[2,3,7,6]",
        "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] !nhwc")
OP_CASE(GLOBAL_AVERAGE_POOL, "nhwc", 13, 1, "[2,3,4,5]", "!nhwc")
OP_CASE(CONCAT, "nhwc, channels", 13, 1, "[2,3,4,5] [2,2,4,5] [2,1,4,5]", "axis=1 !nhwc")
OP_CASE(CONCAT, "nhwc, height, bf16", 13, 1, "[2,3,2,5] [2,3,4,5]", "axis=-2 !nhwc !bf16")
OP_CASE(TANH, "", 13, 1, "[2,3,4,5]", "")
OP_CASE(HARD_SIGMOID, "PyTorch's alpha 1/6", 13, 1, "[2,3,4,5]", "alpha=0.16666667 beta=0.5")
OP_CASE(HARD_SIGMOID, "ONNX defaults", 13, 1, "[3,8]", "")
OP_CASE(HARD_SWISH, "", 14, 1, "[2,3,4,5]", "")
OP_CASE(ERF, "", 13, 1, "[2,3,4]", "")
OP_CASE(SQRT, "", 13, 1, "+[2,3,4]", "")
OP_CASE(POW, "squared (decomposed LayerNorm)", 13, 1, "[2,3,4] f=2.0", "")
OP_CASE(POW, "fractional exponent", 13, 1, "+[3,5] f=1.5", "")
OP_CASE(GELU, "erf form", 20, 1, "[2,3,4]", "")
OP_CASE(GELU, "tanh approximation", 20, 1, "[2,3,4]", "approximate=tanh")
OP_CASE(NEG, "", 13, 1, "[2,3,4]", "")
OP_CASE(NEG, "bf16", 13, 1, "h[2,3,4]", "!bf16")
OP_CASE(EXP, "", 13, 1, "[2,3,4]", "")
OP_CASE(EXP, "fp16 (float32 under autocast)", 13, 1, "h[2,3,4]", "!fp16")
OP_CASE(LOG, "", 13, 1, "+[2,3,4]", "")
OP_CASE(ABS, "", 13, 1, "[2,3,4]", "")
OP_CASE(RECIPROCAL, "", 13, 1, "+[2,3,4]", "")
OP_CASE(LEAKY_RELU, "PyTorch's default slope", 16, 1, "[2,3,4,5]", "alpha=0.01")
OP_CASE(LEAKY_RELU, "slope 0.2 (GANs)", 16, 1, "[3,8]", "alpha=0.2")
OP_CASE(LEAKY_RELU, "bf16", 16, 1, "h[3,8]", "alpha=0.1 !bf16")
OP_CASE(ELU, "", 6, 1, "[2,3,4]", "")
OP_CASE(ELU, "alpha 0.5", 6, 1, "[3,5]", "alpha=0.5")
OP_CASE(SELU, "ONNX's constants", 6, 1, "[2,3,4]", "")
OP_CASE(SOFTPLUS, "", 1, 1, "[2,3,4]", "")
OP_CASE(MISH, "", 18, 1, "[2,3,4]", "")
OP_CASE(SIN, "", 13, 1, "[2,3,4]", "")
OP_CASE(COS, "", 13, 1, "[2,3,4]", "")
OP_CASE(COS, "bf16", 13, 1, "h[2,3,4]", "!bf16")
OP_CASE(TAN, "", 13, 1, "[2,3,4]", "")
OP_CASE(TAN, "bf16 (float32 under autocast)", 13, 1, "h[2,3,4]", "!bf16")
OP_CASE(ASIN, "", 13, 1, "~[2,3,4]", "")
OP_CASE(ACOS, "", 13, 1, "~[2,3,4]", "")
OP_CASE(ATAN, "", 13, 1, "[2,3,4]", "")
OP_CASE(ATAN, "fp16", 13, 1, "h[2,3,4]", "!fp16")
OP_CASE(SINH, "", 13, 1, "[2,3,4]", "")
OP_CASE(COSH, "", 13, 1, "[2,3,4]", "")
OP_CASE(ASINH, "", 13, 1, "[2,3,4]", "")
OP_CASE(ACOSH, "", 13, 1, "++[2,3,4]", "")
OP_CASE(ATANH, "", 13, 1, "~[2,3,4]", "")
OP_CASE(SIGN, "no gradient flows", 13, 1, "[2,3,4]", "")
OP_CASE(FLOOR, "no gradient flows", 13, 1, "[2,3,4]", "")
OP_CASE(CEIL, "no gradient flows", 13, 1, "[2,3,4]", "")
OP_CASE(ROUND, "no gradient flows", 13, 1, "++[2,3,4]", "")
OP_CASE(SOFTSIGN, "", 13, 1, "[2,3,4]", "")
OP_CASE(SOFTSIGN, "bf16", 13, 1, "h[2,3,4]", "!bf16")
OP_CASE(THRESHOLDED_RELU, "alpha 0.3", 13, 1, "[2,3,4,5]", "alpha=0.3")
OP_CASE(SHRINK, "hardshrink", 13, 1, "[2,3,4,5]", "lambd=0.4")
OP_CASE(SHRINK, "softshrink", 13, 1, "[2,3,4,5]", "lambd=0.3 bias=0.3")
OP_CASE(MAX, "same shape (torch.maximum)", 13, 1, "[2,3,4] [2,3,4]", "")
OP_CASE(MAX, "broadcast both ways", 13, 1, "[2,1,4] [3,1]", "")
OP_CASE(MAX, "one input", 13, 1, "[3,4]", "")
OP_CASE(MIN, "broadcast (a cap per channel)", 13, 1, "[2,3,4,5] [3,1,1]", "")
OP_CASE(MIN, "bf16", 13, 1, "h[2,3,4] h[2,3,4]", "!bf16")
OP_CASE(PRELU, "a slope per channel", 16, 1, "[2,3,4,5] +[3,1,1]", "")
OP_CASE(PRELU, "one slope (nn.PReLU())", 16, 1, "[3,8] +[1]", "")
OP_CASE(PRELU, "fp16", 16, 1, "h[2,3,4] h+[3,1]", "!fp16")
OP_CASE(SUB, "broadcast both ways", 13, 1, "[2,1,4] [3,1]", "")
OP_CASE(SUB, "same shape", 13, 1, "[2,3,4] [2,3,4]", "")
OP_CASE(MUL, "squeeze-excitation gate", 13, 1, "[2,3,4,5] [2,3,1,1]", "")
OP_CASE(MUL, "same shape (SiLU's x * sigmoid)", 13, 1, "[2,3,4] [2,3,4]", "")
OP_CASE(DIV, "broadcast divisor", 13, 1, "[2,3,4] +[3,1]", "")
OP_CASE(DIV, "same shape", 13, 1, "[2,3] +[2,3]", "")
OP_CASE(MOD, "torch.fmod, broadcast divisor", 13, 1, "^[2,3,4] +[3,1]", "fmod=1")
OP_CASE(MOD, "torch.fmod, same shape", 13, 1, "^[2,3] +[2,3]", "fmod=1")
OP_CASE(POW_TENSOR, "GeM pooling's learnt exponent", 13, 1, "+[2,3,4,4] +[1]", "")
OP_CASE(POW_TENSOR, "both broadcast, exponents of either sign", 13, 1, "+[2,1,4] ^[3,1]", "")
OP_CASE(CUM_SUM, "middle axis (linear attention's prefix sums)", 14, 1, "[2,5,3] i64=1", "")
OP_CASE(CUM_SUM, "last axis, exclusive and reverse", 14, 1, "[3,6] i64=-1", "exclusive=1 reverse=1")
OP_CASE(CUM_SUM, "first axis, exclusive", 14, 1, "[4,2,3] i64=0", "exclusive=1")
OP_CASE(CUM_SUM, "an axis of 5000 (past the old 4096 limit), reverse", 14, 1, "[2,5000] i64=1",
        "reverse=1")
OP_CASE(LESS, "broadcast (no gradient)", 13, 1, "[2,3,4] [3,1]", "")
OP_CASE(GREATER, "broadcast (no gradient; Softplus's threshold)", 13, 1, "[3,1] [2,3,4]", "")
OP_CASE(LESS_OR_EQUAL, "broadcast (hardshrink's |x| <= lambda)", 16, 1, "[2,3,4] f=0.5", "")
OP_CASE(GREATER_OR_EQUAL, "broadcast", 16, 1, "[3,1] [2,3,4]", "")
OP_CASE(EQUAL, "bool, broadcast", 13, 1, "b[2,3,4] b[3,1]", "")
OP_CASE(EQUAL, "float, broadcast", 13, 1, "[2,3,4] [4]", "")
OP_CASE(AND, "broadcast", 13, 1, "b[2,3,4] b[3,1]", "")
OP_CASE(OR, "broadcast", 13, 1, "b[3,1] b[2,3,4]", "")
OP_CASE(XOR, "broadcast", 13, 1, "b[2,3,4] b[4]", "")
OP_CASE(NOT, "", 13, 1, "b[2,3,4]", "")
OP_CASE(IS_NAN, "(nan_to_num's mask)", 13, 1, "[2,3,4]", "")
OP_CASE(IS_INF, "negative only", 13, 1, "[2,3,4]", "detect_positive=0")
OP_CASE(RANDOM_UNIFORM_LIKE, "low, high (no gradient)", 13, 1, "[3,4,5]", "low=-1.0 high=2.0")
OP_CASE(REDUCE_MEAN, "axes input, keepdims", 18, 1, "[2,3,4,5] i64=[2,3]", "")
OP_CASE(REDUCE_MEAN, "axes attribute, keepdims 0", 13, 1, "[2,3,4,5]", "axes=[1,-1] keepdims=0")
OP_CASE(REDUCE_MEAN, "every axis, keepdims", 18, 1, "[3,4,2]", "")
OP_CASE(REDUCE_SUM, "axes input, keepdims 0", 13, 1, "[2,3,4] i64=[0]", "keepdims=0")
OP_CASE(IDENTITY, "", 13, 1, "[2,3,4]", "")
OP_CASE(TRANSPOSE, "channel shuffle", 13, 1, "[2,2,3,4,5]", "perm=[0,2,1,3,4]")
OP_CASE(SLICE, "channel half (ShuffleNet)", 13, 1, "[2,6,3,3] i64=[3] i64=[6] i64=[1]", "")
OP_CASE(SLICE, "negative and clamped bounds, steps", 13, 1,
        "[3,7,5] i64=[-1,1,-100] i64=[-100,100,4] i64=[0,1,2] i64=[-1,2,3]", "")
OP_CASE(SLICE, "attributes (opset 9)", 9, 1, "[4,5]", "starts=[1] ends=[3] axes=[1]")
OP_CASE(GRID_SAMPLE, "bilinear, zeros (points outside)", 16, 1, "[2,3,5,6] ^[2,4,3,2]", "")
OP_CASE(GRID_SAMPLE, "bilinear, border, align_corners", 16, 1, "[2,3,5,6] ^[2,4,3,2]",
        "padding_mode=border align_corners=1")
OP_CASE(GRID_SAMPLE, "bilinear, reflection", 16, 1, "[1,2,4,5] ^[1,3,4,2]",
        "padding_mode=reflection")
OP_CASE(GRID_SAMPLE, "bilinear, reflection, align_corners", 16, 1, "[1,2,4,5] ^[1,3,4,2]",
        "padding_mode=reflection align_corners=1")
OP_CASE(GRID_SAMPLE, "nearest, zeros (the grid's gradient zero)", 16, 1, "[2,3,5,6] ^[2,4,3,2]",
        "mode=nearest !zero:1")
OP_CASE(GRID_SAMPLE, "800 points on 64 pixels (cuda's buckets of many)", 16, 1,
        "[2,3,8,8] ^[2,20,20,2]", "align_corners=1")
OP_CASE(GRID_SAMPLE, "bf16 (float32 under autocast)", 16, 1, "h[2,3,5,6] h^[2,4,3,2]", "!bf16")
OP_CASE(GRID_SAMPLE, "bicubic, zeros (points outside)", 16, 1, "[2,3,5,6] ^[2,4,3,2]",
        "mode=bicubic")
OP_CASE(GRID_SAMPLE, "bicubic, border, align_corners", 16, 1, "[2,2,5,6] ^[2,4,3,2]",
        "mode=bicubic padding_mode=border align_corners=1")
OP_CASE(GRID_SAMPLE, "bicubic, reflection (opset 20: cubic)", 20, 1, "[1,2,4,5] ^[1,3,4,2]",
        "mode=cubic padding_mode=reflection")
OP_CASE(GRID_SAMPLE, "bicubic, reflection, align_corners, 800 points on 64 pixels", 16, 1,
        "[1,2,8,8] ^[1,20,40,2]", "mode=bicubic padding_mode=reflection align_corners=1")
OP_CASE(GRID_SAMPLE, "volume, trilinear, zeros (points outside)", 20, 1, "[2,2,3,4,5] ^[2,2,3,2,3]",
        "mode=linear")
OP_CASE(GRID_SAMPLE, "volume, trilinear, border, align_corners", 20, 1, "[1,2,3,4,5] ^[1,3,2,3,3]",
        "mode=linear padding_mode=border align_corners=1")
OP_CASE(GRID_SAMPLE, "volume, trilinear, reflection", 20, 1, "[1,2,4,3,5] ^[1,2,3,2,3]",
        "mode=linear padding_mode=reflection")
OP_CASE(GRID_SAMPLE, "volume, nearest (the grid's gradient zero)", 20, 1,
        "[1,2,3,4,5] ^[1,2,3,2,3]", "mode=nearest !zero:1")
OP_CASE(GRID_SAMPLE, "volume, 1000 points in 64 voxels", 20, 1, "[1,2,4,4,4] ^[1,10,10,10,3]",
        "mode=linear align_corners=1")
OP_CASE(RESIZE, "bilinear x4, half_pixel (F.interpolate)", 13, 1, "[1,2,3,2] - - i64=[1,2,12,8]",
        "mode=linear coordinate_transformation_mode=half_pixel")
OP_CASE(RESIZE, "bilinear, align_corners, odd sizes", 13, 1, "[2,1,3,4] - - i64=[2,1,5,7]",
        "mode=linear coordinate_transformation_mode=align_corners")
OP_CASE(RESIZE, "nearest x2, scales (asymmetric floor)", 13, 1, "[1,2,3,3] - f=[1,1,2,2]",
        "coordinate_transformation_mode=asymmetric nearest_mode=floor")
OP_CASE(RESIZE, "linear 1-d downsample, pytorch_half_pixel", 13, 1, "[2,2,9] - - i64=[2,2,4]",
        "mode=linear coordinate_transformation_mode=pytorch_half_pixel")
OP_CASE(RESIZE, "bicubic 3x3 -> 4x4, half_pixel (DINOv2's position table)", 13, 1,
        "[1,2,3,3] - - i64=[1,2,4,4]", "mode=cubic coordinate_transformation_mode=half_pixel")
OP_CASE(RESIZE, "bicubic x2, align_corners, 3-d", 13, 1, "[1,1,2,3,2] - f=[1,1,2,2,2]",
        "mode=cubic coordinate_transformation_mode=align_corners cubic_coeff_a=-0.5")
OP_CASE(RESIZE, "cubic downsample, exclude_outside", 13, 1, "[2,1,7,5] - - i64=[2,1,3,4]",
        "mode=cubic exclude_outside=1")
/* antialias (F.interpolate(antialias=True)): the filter stretched when downscaling */
OP_CASE(RESIZE, "bilinear antialias down to 3x5 (opset 18)", 18, 1, "[1,2,8,11] - - i64=[1,2,3,5]",
        "mode=linear antialias=1 exclude_outside=1")
OP_CASE(RESIZE, "bicubic antialias by half, a -0.5", 18, 1, "[2,1,8,6] - - i64=[2,1,4,3]",
        "mode=cubic antialias=1 exclude_outside=1 cubic_coeff_a=-0.5")
OP_CASE(RESIZE, "bilinear antialias up x1.5, 1-d", 18, 1, "[2,2,6] - - i64=[2,2,9]",
        "mode=linear antialias=1 exclude_outside=1")
OP_CASE(UPSAMPLE, "nearest x2 (opset 9)", 9, 1, "[1,1,2,3] f=[1,1,2,2]", "")
OP_CASE(SPLIT, "split input", 13, 3, "[2,6,3] i64=[1,3,2]", "axis=1")
OP_CASE(SPLIT, "num_outputs, last part smaller", 18, 2, "[5,3]", "num_outputs=2")
OP_CASE(SPLIT, "equal parts (opset 11)", 11, 2, "[2,4,6]", "axis=-1")
OP_CASE(SPLIT, "q, k, v of rows of 24 (16-byte rows: cuda's row copy)", 11, 3, "[3,24]", "axis=-1")
OP_CASE(TRANSPOSE, "to channels-last", 13, 1, "[2,3,4,5]", "perm=[0,2,3,1]")
OP_CASE(TRANSPOSE, "default (reversed)", 13, 1, "[3,4,2]", "")
OP_CASE(TRANSPOSE, "from channels-last (one side under a tile)", 13, 1, "[2,4,5,3]",
        "perm=[0,3,1,2]")
OP_CASE(TRANSPOSE, "a conv filter to channels-last (K, C, RS) -> (K, RS, C)", 13, 1, "[6,4,3,3]",
        "perm=[0,2,3,1]")
OP_CASE(TRANSPOSE, "batched 2-d, partial 32x32 tiles (ViT's patch tokens)", 13, 1, "[2,40,36]",
        "perm=[0,2,1]")
OP_CASE(TRANSPOSE, "a matrix, one row past a tile", 13, 1, "[33,64]", "")
OP_CASE(TRANSPOSE, "attention's head split (inner dim kept: float4)", 13, 1, "[2,3,2,8]",
        "perm=[0,2,1,3]")
OP_CASE(SQUEEZE, "axes input", 13, 1, "[2,1,3,1] i64=[1,3]", "")
OP_CASE(SQUEEZE, "every size-1 dim", 11, 1, "[1,3,1]", "")
OP_CASE(CAST, "float to float (a copy)", 13, 1, "[2,3]", "to=1")
OP_CASE(CAST, "bool to float (a dropout mask)", 13, 1, "b=1", "to=1")
OP_CASE(CAST_LIKE, "float like float", 15, 1, "[2,3] [1]", "")
OP_CASE(ADD, "same shape", 13, 1, "[2,3,4] [2,3,4]", "")
OP_CASE(ADD, "broadcast both ways", 13, 1, "[2,1,4] [3,1]", "")
OP_CASE(ADD, "a GEMM's bias, 335 rows (its gradient: parts of rows)", 13, 1, "[5,67,6] [6]", "")
OP_CASE(SUM, "three inputs, broadcast", 13, 1, "[2,3,4] [3,4] [1]", "")
OP_CASE(CONCAT, "axis 1", 13, 1, "[2,3,4] [2,2,4] [2,1,4]", "axis=1")
OP_CASE(CONCAT, "axis -1", 13, 1, "[2,3] [2,5]", "axis=-1")
OP_CASE(CONCAT, "axis 1, rows of 16-byte multiples", 13, 1, "[2,3,8] [2,5,8]", "axis=1")
OP_CASE(FLATTEN, "axis 2", 13, 1, "[2,3,4,2]", "axis=2")
OP_CASE(RESHAPE, "0 and -1", 13, 1, "[2,3,4] i64=[0,-1,2]", "")
OP_CASE(UNSQUEEZE, "axes input", 13, 1, "[3,4] i64=[0,-1]", "")
OP_CASE(UNSQUEEZE, "axes attribute", 11, 1, "[3,4]", "axes=[1]")
OP_CASE(PAD, "constant, value input", 13, 1, "[2,3,4] i64=[0,1,2,0,0,1] f=0.5", "")
OP_CASE(PAD, "reflect", 13, 1, "[1,2,4,5] i64=[0,0,1,2,0,0,2,1]", "mode=reflect")
OP_CASE(PAD, "reflect past one period, a crop", 13, 1, "[1,2,3,4] i64=[0,0,5,-1,0,0,0,7]",
        "mode=reflect")
OP_CASE(PAD, "reflect, an extent of 1", 13, 1, "[2,1,3] i64=[0,0,2,0,0,1]", "mode=reflect")
OP_CASE(PAD, "edge, pads attribute", 9, 1, "[2,3,4]", "mode=edge pads=[0,2,1,0,1,0]")
OP_CASE(PAD, "edge, a crop", 13, 1, "[2,3,5] i64=[0,-1,3,0,2,-2]", "mode=edge")
OP_CASE(PAD, "reflect past one period, bf16", 13, 1, "h[1,2,3,4] i64=[0,0,5,-1,0,0,0,7]",
        "mode=reflect !bf16")
OP_CASE(PAD, "edge, a crop, fp16", 13, 1, "h[2,3,5] i64=[0,-1,3,0,2,-2]", "mode=edge !fp16")
OP_CASE(PAD, "wrap (circular), pads past one extent", 19, 1, "[1,2,3,4] i64=[0,0,4,1,0,0,2,6]",
        "mode=wrap")
OP_CASE(PAD, "wrap, bf16", 19, 1, "h[2,3,5] i64=[0,2,1,0,1,3]", "mode=wrap !bf16")
OP_CASE(GEMM, "transB, bias row", 13, 1, "[3,5] [4,5] [4]", "transB=1")
OP_CASE(MATMUL, "channels-last Linear (ConvNeXt)", 13, 1, "[2,3,2,5] [5,4]", "")
OP_CASE(MATMUL, "matrices", 13, 1, "[3,6] [6,2]", "")
OP_CASE(LINEAR, "W (N, K) as nn.Linear stores it, bias, rows of rank 3", 17, 1, "[2,3,5] [4,5] [4]",
        "")
OP_CASE(LINEAR, "W (K, N), bias (ConvNeXt's channels-last Linear)", 17, 1, "[2,3,2,5] [5,4] [4]",
        "trans_w=0")
OP_CASE(LINEAR, "W (N, K), no bias, 4-wide rows", 17, 1, "[7,8] [12,8]", "")
OP_CASE(LINEAR, "updated by AdamW, gradients clipped", 17, 1, "[3,6] [2,6] [2]", "!adamw !clip")
OP_CASE(MATMUL, "updated by AdamW, gradients clipped", 13, 1, "[3,6] [6,2]", "!adamw !clip")
OP_CASE(GEMM, "updated by SGD, gradients clipped", 13, 1, "[3,6] [2,6] [2]", "transB=1 !clip")
OP_CASE(GEMM, "updated by SGD, loss scaled (GradScaler)", 13, 1, "[3,6] [2,6] [2]",
        "transB=1 !scaled")
OP_CASE(MATMUL, "AdamW, loss scaled, unscaled gradients clipped", 13, 1, "[3,6] [6,2]",
        "!adamw !clip !scaled")
OP_CASE(MATMUL, "batched (attention's Q K^T)", 13, 1, "[2,3,4,5] [2,3,5,4]", "")
OP_CASE(MATMUL, "batched, rank 3", 13, 1, "[3,2,6] [3,6,5]", "")
/* mixed precision: half tensors in cuDNN / cuBLAS (and widened elsewhere) */
OP_CASE(CONV, "bf16, 3x3 pad 1, bias", 13, 1, "[2,3,6,5] [4,3,3,3] [4]", "pads=[1,1,1,1] !bf16")
OP_CASE(CONV, "fp16, group 2, stride, dilation", 13, 1, "[2,4,7,6] [6,2,3,2] [6]",
        "group=2 strides=[2,1] pads=[1,0,1,0] dilations=[1,2] kernel_shape=[3,2] !fp16")
OP_CASE(CONV_TRANSPOSE, "bf16, 2x2 stride 2, bias", 13, 1, "[1,4,3,3] [4,2,2,2] [2]",
        "strides=[2,2] kernel_shape=[2,2] !bf16")
OP_CASE(MATMUL, "bf16, batched (attention's Q K^T)", 13, 1, "[2,3,4,5] [2,3,5,4]", "!bf16")
OP_CASE(MATMUL, "fp16, channels-last Linear", 13, 1, "[2,3,2,5] [5,4]", "!fp16")
OP_CASE(LINEAR, "bf16, W (N, K), bias", 17, 1, "[2,3,8] [4,8] [4]", "!bf16")
OP_CASE(LINEAR, "fp16, W (K, N), bias, 4-wide rows", 17, 1, "[3,4] [4,8] [8]", "trans_w=0 !fp16")
OP_CASE(GEMM, "bf16, transB, bias row", 13, 1, "[3,5] [4,5] [4]", "transB=1 !bf16")
OP_CASE(GEMM, "fp16, beta 0.5 (widened on cuda)", 13, 1, "[5,3] [5,4] [3,4]",
        "transA=1 alpha=0.7 beta=0.5 !fp16")
OP_CASE(BATCH_NORM_RELU, "bf16 data, fused backward", 15, 3, "h[3,2,4,3] +[2] [2] [2] +[2]",
        "training_mode=1 momentum=0.9 fused_backward=1 !bf16")
OP_CASE(BATCH_NORM_RELU, "fp16 data, residual", 15, 3, "h[2,3,3,4] +[3] [3] [3] +[3] h[2,3,3,4]",
        "training_mode=1 momentum=0.9 !fp16")
OP_CASE(BATCH_NORM, "bf16 data, training (opset 15)", 15, 3, "h[3,2,4,3] +[2] [2] [2] +[2]",
        "training_mode=1 momentum=0.9 !bf16")
OP_CASE(BATCH_NORM, "bf16 data, 5 outputs (opset 9)", 9, 5, "h[4,3,5] +[3] [3] [3] +[3]",
        "epsilon=0.001 !bf16")
OP_CASE(BATCH_NORM, "fp16 data, --bn frozen", 15, 1, "h[3,2,4,3] +[2] [2] [2] +[2]",
        "!frozen !fp16")
OP_CASE(RELU, "bf16", 13, 1, "h[2,3,4,5]", "!bf16")
OP_CASE(GELU, "fp16, tanh approximation", 20, 1, "h[2,3,4]", "approximate=tanh !fp16")
OP_CASE(ADD, "bf16, same shape (a residual)", 13, 1, "h[2,3,4] h[2,3,4]", "!bf16")
OP_CASE(ADD, "fp16, broadcast (a bias)", 13, 1, "h[2,1,4] h[3,1]", "!fp16")
OP_CASE(MUL, "bf16, by a float32 scalar (GELU's 0.044715)", 13, 1, "h[2,3,4] f=0.044715", "!bf16")
OP_CASE(MUL, "fp16, squeeze-excitation gate", 13, 1, "h[2,3,4,5] h[2,3,1,1]", "!fp16")
OP_CASE(SUB, "bf16, broadcast both ways", 13, 1, "h[2,1,4] h[3,1]", "!bf16")
OP_CASE(DIV, "fp16, float32 scalar dividend", 13, 1, "f=1.7 h+[2,3]", "!fp16")
OP_CASE(MOD, "bf16 (both half)", 13, 1, "h[2,3,4] h+[3,1]", "fmod=1 !bf16")
OP_CASE(CUM_SUM, "fp16 (float32 under autocast)", 14, 1, "h[2,5,3] i64=1", "!fp16")
OP_CASE(POW_TENSOR, "bf16 (float32 under autocast)", 13, 1, "h+[2,3,4] h+[3,1]", "!bf16")
OP_CASE(DROPOUT, "bf16, ratio 0.3 as input, training", 13, 2, "h[4,5,6] f=0.3 b=1", "!bf16")
OP_CASE(WHERE, "bf16, masked_fill with a float32 scalar", 13, 1, "b[1,1,4,4] f=-3.5 h[2,3,4,4]",
        "!bf16")
OP_CASE(WHERE, "fp16, both branches broadcast", 13, 1, "b[3,4] h[3,1] h[4]", "!fp16")
OP_CASE(SUM, "bf16, three inputs", 13, 1, "h[2,3,4] h[2,3,4] h[2,3,4]", "!bf16")
OP_CASE(SUM, "fp16, three inputs, broadcast", 13, 1, "h[2,3,4] h[3,4] h[1]", "!fp16")
OP_CASE(TRANSPOSE, "bf16, channel shuffle", 13, 1, "h[2,2,3,4,5]", "perm=[0,2,1,3,4] !bf16")
OP_CASE(TRANSPOSE, "bf16, batched 2-d tiles", 13, 1, "h[2,36,40]", "perm=[0,2,1] !bf16")
OP_CASE(TRANSPOSE, "bf16, to channels-last", 13, 1, "h[2,3,4,5]", "perm=[0,2,3,1] !bf16")
OP_CASE(SLICE, "fp16, channel half", 13, 1, "h[2,6,3,3] i64=[3] i64=[6] i64=[1]", "!fp16")
OP_CASE(CONCAT, "bf16, axis 1 (U-Net skip)", 13, 1, "h[2,3,4] h[2,2,4]", "axis=1 !bf16")
OP_CASE(SPLIT, "fp16, split input", 13, 3, "h[2,6,3] i64=[1,3,2]", "axis=1 !fp16")
OP_CASE(RESHAPE, "bf16, 0 and -1", 13, 1, "h[2,3,4] i64=[0,-1,2]", "!bf16")
OP_CASE(MAX_POOL, "bf16, 2x2 stride 2", 13, 1, "h[1,2,5,5]",
        "kernel_shape=[2,2] strides=[2,2] !bf16")
OP_CASE(MAX_POOL, "fp16, 3x3 stride 2 pad 1 (ResNet's stem)", 13, 1, "h[2,3,7,6]",
        "kernel_shape=[3,3] strides=[2,2] pads=[1,1,1,1] !fp16")
OP_CASE(GLOBAL_AVERAGE_POOL, "bf16", 13, 1, "h[2,3,4,5]", "!bf16")
OP_CASE(AVERAGE_POOL, "fp16, 2x2", 13, 1, "h[1,2,5,5]", "kernel_shape=[2,2] !fp16")
OP_CASE(FUSED_ATTENTION, "no mask, K", 13, 2, "[2,2,3,4] [2,2,5,4] [2,2,5,3]", "scale=0.5")
OP_CASE(FUSED_ATTENTION, "Kᵀ, masked where cond (finite fill)", 13, 2,
        "[1,2,4,3] [1,2,3,5] [1,2,5,2] b[1,1,4,5]", "scale=0.7 k_transposed=1 mask=1 fill=-2.5")
OP_CASE(FUSED_ATTENTION, "masked where not cond, dropout 0.3", 13, 2,
        "[2,3,4] [2,5,4] [2,5,3] b[3,5]",
        "scale=0.5 mask=2 fill=-3.0 dropout_ratio=0.3 "
        "dropout_key=attn/Dropout")
/* a padding mask: each sample's own keys, broadcast over heads and rows (the attention mask
 * a padded batch comes with, made on the host; Hugging Face's fill, finfo.min) */
OP_CASE(FUSED_ATTENTION, "padding mask [N,1,1,S], masked where not cond", 13, 2,
        "[2,2,4,3] [2,2,5,3] [2,2,5,2] b[2,1,1,5]", "scale=0.5 mask=2 fill=-3.4028234e38")
OP_CASE(FUSED_ATTENTION, "seq_first, padding mask [N,1,T,S]", 13, 2,
        "[2,3,2,4] [2,5,2,4] [2,5,2,3] b[2,1,3,5]",
        "scale=0.5 seq_first=1 mask=1 fill=-3.4028234e38")
/* rows of 1040 keys: cuda's row kernels hold 1024 in registers (32 a lane), the rest read again */
OP_CASE(FUSED_ATTENTION, "1040 keys, masked, dropout 0.1", 13, 2,
        "[1,2,3,4] [1,2,1040,4] [1,2,1040,2] b[3,1040]",
        "scale=0.5 mask=1 fill=-4.0 dropout_ratio=0.1 dropout_key=attn/Dropout")
/* seq_first: Q, K, V, Y [N, T, H, d] (the head split absorbed), the mask and LSE logical */
OP_CASE(FUSED_ATTENTION, "seq_first, masked, dropout 0.2", 13, 2,
        "[2,3,2,4] [2,5,2,4] [2,5,2,3] b[1,1,3,5]",
        "scale=0.5 seq_first=1 mask=1 fill=-2.0 dropout_ratio=0.2 dropout_key=attn/Dropout")
OP_CASE(FUSED_ATTENTION, "seq_first, 3 heads, no mask", 13, 2, "[3,4,3,2] [3,6,3,2] [3,6,3,5]",
        "scale=0.6 seq_first=1")
/* qkv_heads: Q, K and V the column thirds of one [N, T, 3 H d] tensor (the fused projection) */
OP_CASE(FUSED_ATTENTION, "one q/k/v tensor, 2 heads, masked, dropout 0.2", 13, 2,
        "[2,4,12] @0 @0 b[1,1,4,4]",
        "scale=0.5 seq_first=1 qkv_heads=2 mask=1 fill=-2.0 dropout_ratio=0.2 "
        "dropout_key=attn/Dropout")
OP_CASE(FUSED_ATTENTION, "one q/k/v tensor, 3 heads", 13, 2, "[3,5,18] @0 @0",
        "scale=0.7 seq_first=1 qkv_heads=3")
/* causal: the mask proven causal (fill -inf), so cuda skips the blocks of scores above the
 * diagonal: 128 rows a block (130 rows: 2 blocks), or OC_ATTENTION_BLOCK's (test_cuda_emu.sh) */
OP_CASE(FUSED_ATTENTION, "causal, K", 13, 2, "[2,2,9,4] [2,2,9,4] [2,2,9,3] bu[1,1,9,9]",
        "scale=0.5 mask=1 fill=-inf causal=1")
OP_CASE(FUSED_ATTENTION, "causal, Kᵀ, masked where not cond, dropout 0.2", 13, 2,
        "[1,2,9,3] [1,2,3,9] [1,2,9,2] bl[9,9]",
        "scale=0.7 k_transposed=1 mask=2 fill=-inf causal=1 dropout_ratio=0.2 "
        "dropout_key=attn/Dropout")
OP_CASE(FUSED_ATTENTION, "causal, seq_first, 130 rows", 13, 2,
        "[1,130,2,2] [1,130,2,2] [1,130,2,3] bu[130,130]",
        "scale=0.5 seq_first=1 mask=1 "
        "fill=-inf causal=1")
OP_CASE(FUSED_ATTENTION, "causal, one q/k/v tensor, 2 heads, dropout 0.2 (GPT-2's)", 13, 2,
        "[2,9,12] @0 @0 bu[1,1,9,9]",
        "scale=0.5 seq_first=1 qkv_heads=2 mask=1 fill=-inf causal=1 dropout_ratio=0.2 "
        "dropout_key=attn/Dropout")
/* heads of 16, 32 and 64 (dh == dv, aligned rows): cuda's row kernels' vector instances; of
 * 64, the gradients' rows in two halves (att_split); dh 40 / dv 24 and Kᵀ: the element-wise
 * instances of 64 (OC_ATTENTION_KERNEL=gemm runs them all through the GEMMs) */
OP_CASE(FUSED_ATTENTION, "heads of 64, causal, one q/k/v tensor", 13, 2,
        "[1,37,192] @0 @0 bu[1,1,37,37]",
        "scale=0.125 seq_first=1 qkv_heads=1 mask=1 fill=-inf causal=1")
OP_CASE(FUSED_ATTENTION, "heads of 32, no mask", 13, 2, "[2,1,20,32] [2,1,24,32] [2,1,24,32]",
        "scale=0.2")
OP_CASE(FUSED_ATTENTION, "heads of 16, seq_first, masked, dropout 0.2", 13, 2,
        "[1,9,2,16] [1,11,2,16] [1,11,2,16] b[1,1,9,11]",
        "scale=0.25 seq_first=1 mask=1 fill=-2.0 dropout_ratio=0.2 dropout_key=attn/Dropout")
OP_CASE(FUSED_ATTENTION, "dh 40, dv 24", 13, 2, "[1,1,7,40] [1,1,9,40] [1,1,9,24]", "scale=0.15")
OP_CASE(FUSED_ATTENTION, "heads of 64, Kᵀ, causal", 13, 2,
        "[1,1,12,64] [1,1,64,12] [1,1,12,64] bu[1,1,12,12]",
        "scale=0.125 k_transposed=1 mask=1 fill=-inf causal=1")
OP_CASE(SOFTMAX, "last axis (attention)", 13, 1, "[2,3,5]", "")
OP_CASE(SOFTMAX, "middle axis", 13, 1, "[2,4,3]", "axis=1")
OP_CASE(SOFTMAX, "opset 11: dims from axis flattened", 11, 1, "[2,3,4]", "axis=1")
OP_CASE(LOG_SOFTMAX, "last axis", 13, 1, "[3,7]", "")
/* rows of a multiple of 4: cuda's float4 row kernels, the row in registers up to 1024
 * (and past them: 1040), several rows a block */
OP_CASE(SOFTMAX, "last axis, rows of 8 (float4 rows)", 13, 1, "[2,3,8]", "")
OP_CASE(SOFTMAX, "last axis, 1040 columns (past the rows' registers)", 13, 1, "[1,2,1040]", "")
OP_CASE(LOG_SOFTMAX, "last axis, rows of 12 (float4 rows)", 13, 1, "[5,12]", "")
OP_CASE(SOFTMAX, "last axis, 301 columns (past the scalar rows' registers)", 13, 1, "[1,2,301]", "")
OP_CASE(MUL, "attention scores by a scalar (float4 path)", 13, 1, "[2,3,4,8] f=0.125", "")
OP_CASE(LOG_SOFTMAX, "axis 0", 13, 1, "[4,3,2]", "axis=0")
OP_CASE(EXPAND, "a class token over the batch (ViT)", 13, 1, "[1,1,5] i64=[3,4,1]", "")
OP_CASE(EXPAND, "to a higher rank", 13, 1, "[3,1] i64=[2,1,4]", "")
OP_CASE(WHERE, "masked_fill: bool mask, scalar fill", 13, 1, "b[1,1,4,4] f=-3.5 [2,3,4,4]", "")
OP_CASE(WHERE, "both branches broadcast", 13, 1, "b[3,4] [3,1] [4]", "")
OP_CASE(GEMM, "transA, alpha, beta, full bias", 13, 1, "[5,3] [5,4] [3,4]",
        "transA=1 alpha=0.5 beta=2.0")
OP_CASE(SOFTMAX_CROSS_ENTROPY, "mean (the loss itself)", 13, 1, "[4,5] i64<5[4]", "")
OP_CASE(SOFTMAX_CROSS_ENTROPY, "mean, ignore_index", 13, 1, "[4,5] i64=[1,4,2,0]", "ignore_index=2")
OP_CASE(SOFTMAX_CROSS_ENTROPY, "sum, ignore_index", 13, 1, "[5,3] i64=[0,2,1,2,1]",
        "reduction=sum ignore_index=2")
OP_CASE(SHAPE, "start and end", 15, 1, "[2,3,4,5]", "start=1 end=-1")
/* TopK of run-time data is lowered to TopKOffsets and a Gather: the kernel's choice and order
 * (topk_order.h) on every backend; values drawn in [-1, 1) tie seldom: the conformance cases
 * hold the ties and NaNs */
OP_CASE(TOP_K_OFFSETS, "largest 3 along the last axis", 13, 2, "[3,7]", "k=3 axis=-1 largest=1")
OP_CASE(TOP_K_OFFSETS, "smallest 2 along the middle axis", 13, 2, "[2,5,3]", "k=2 axis=1 largest=0")
/* ... and a gather at those indices: ElementOffsets, each index's element's offset in data */
OP_CASE(ELEMENT_OFFSETS, "along the middle axis, indices narrower than data", 13, 1, "i64<5[2,4,2]",
        "data_shape=[2,5,3] axis=1")
OP_CASE(ELEMENT_OFFSETS, "negative indices from the end", 13, 1, "i64=[-1,0,-3,2]@[1,4]",
        "data_shape=[2,3] axis=1")
OP_CASE(GATHER, "axis 1, repeated index (gradients add)", 13, 1, "[3,4,2] i64=[3,0,0]", "axis=1")
OP_CASE(SCATTER_ND, "rows of run-time data and updates", 16, 1, "[4,3,2] i64=[2,0]@[2,1] [2,3,2]",
        "")
OP_CASE(SCATTER_ND, "two coordinates, negative, one row", 13, 1, "[3,4,2] i64=[1,-1] [2]", "")
OP_CASE(SCATTER_ND, "slab of a 4-d tensor, reduction none", 18, 1,
        "[2,3,2,2] i64=[0,2,1,0]@[2,2] [2,2,2]", "reduction=none")
OP_CASE(SCATTER_ND, "bf16 activations", 16, 1, "h[4,3,2] i64=[3,1]@[2,1] h[2,3,2]", "!bf16")
OP_CASE(GATHER, "an embedding: a table row per token, repeats add up", 13, 1, "[7,3] i64<7[2,6]",
        "")
OP_CASE(GATHER, "negative indices", 13, 1, "[5,2] i64=[-1,0,4,-5,-1]", "")
/* GatherGrad as a forward node: ScatterND / ScatterElements with reduction add on run-time
 * data lowered at load (op_fold_index.c); its gradient gathers dY at the indices */
OP_CASE(GATHER_GRAD, "a scatter-add, repeated offsets add", 13, 1, "[2,3] i64=[4,0,4,7,1,4]@[2,3]",
        "input_shape=[9] axis=0")
OP_CASE(GATHER_GRAD, "rows along axis 1", 13, 1, "[2,3,2] i64=[2,0,2]",
        "input_shape=[2,4,2] axis=1")
/* SegmentMax: nn.EmbeddingBag's max bags at run-time offsets (bag_reduce.c); its gradient
 * reaches each bag's winning row, the winners added by the rule */
OP_CASE(SEGMENT_MAX, "bags of 2, 0, 3 and 1 rows", 13, 1, "[6,3] i64=[0,2,2,5,6]", "")
OP_CASE(SEGMENT_MAX, "rows of rank 3, one before the first bag and one after the last, winners", 13,
        2, "[8,2,3] i64=[1,4,4,7]", "")

OP_EXEMPT(CONSTANT, "no inputs, its value is a tensor attribute: the conformance suite runs it")
