/* cuda_dnn_graph.h — one convolution through cuDNN's graph (backend) API, the path
 * PyTorch's convolutions take (its cuDNN v8 API, cudnn.benchmark off: the heuristics'
 * first engine configuration that works). The legacy cudnnConvolution* calls reach a
 * fixed set of algorithms; the graph API's heuristics rank every engine and its knob
 * settings (tile sizes, split-K, ..) for the shape and the GPU.
 *
 *   dnn_conv_spec s = {.kind = DNN_CONV_FWD, .dt = CUDNN_DATA_FLOAT, .rank = 4, ...};
 *   dnn_graph_conv *g;
 *   char why[256];
 *   if (dnn_graph_conv_build(handle, &s, 4, &g, why, sizeof why)) ... (legacy instead; why)
 *   for (int i = 0; i < dnn_graph_conv_plans(g); i++)
 *       ... dnn_graph_conv_workspace(g, i), dnn_graph_conv_engine(g, i) ...
 *   st = dnn_graph_conv_run(handle, g, 0, x, w, y, NULL, ws);  // beta 0: y overwritten
 *   dnn_graph_conv_free(g);
 *
 * The operation graph holds the one convolution on x (N, C, spatial..), w (K, C / groups,
 * kernel..) and y (N, K, spatial..), logical dims with the bytes' strides (channels-last:
 * NHWC / KRSC), float compute, cross-correlation. Heuristics mode A ranks the engine
 * configurations (none of them usable: then the fallback mode's list); kept, in that order,
 * up to max_plans that
 *  - do not down-convert inputs or reduce in reduced precision (the legacy path refuses
 *    CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION alike),
 *  - use tensor cores only where allowed (spec.tensor_ok: half data, or float with TF32 on),
 *  - are deterministic when spec.det_only,
 *  - finalize into an execution plan for this handle's GPU,
 *  - need a workspace of at most spec.limit bytes.
 * A forward convolution may carry an epilogue in the same graph (cuDNN's runtime fusion
 * engines): y = relu(conv(x, w) + bias), bias (1, K, 1..) and relu each optional, the
 * intermediates virtual float tensors, ConvRelu's pattern.
 * Any cuDNN refusal on the way ends the build with a non-zero return and the reason in
 * why: the caller runs the convolution alone, or the legacy path (nothing is left
 * allocated). */
#ifndef OC_CUDA_DNN_GRAPH_H
#define OC_CUDA_DNN_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cudnn.h>

enum { DNN_CONV_FWD = 0, DNN_CONV_BWD_DATA, DNN_CONV_BWD_FILTER };
#define DNN_GRAPH_MAX_PLANS 4

typedef struct dnn_conv_spec {
    int kind;           /* DNN_CONV_*: y from x (fwd), x from y (bwd data), w (bwd filter) */
    cudnnDataType_t dt; /* x, w and y alike: float, half or bfloat16 */
    int rank;           /* 4 or 5: rank - 2 spatial dims */
    int64_t x_dim[5], x_str[5], w_dim[5], w_str[5], y_dim[5], y_str[5];
    int64_t pad[3], stride[3], dilation[3];
    bool bias, relu;      /* forward only: the epilogue (see above) */
    cudnnDataType_t b_dt; /* the bias's type */
    bool tensor_ok;       /* tensor-core engines allowed */
    bool det_only;        /* deterministic engines only */
    size_t limit;         /* the largest workspace a plan may take */
} dnn_conv_spec;

typedef struct dnn_graph_conv dnn_graph_conv;

/* 0: *out holds 1 to max_plans (<= DNN_GRAPH_MAX_PLANS) plans, the heuristics' order.
 * Non-zero: none; why says what cuDNN refused or what the filters left. */
int dnn_graph_conv_build(cudnnHandle_t h, const dnn_conv_spec *s, int max_plans,
                         dnn_graph_conv **out, char *why, size_t why_len);
int dnn_graph_conv_plans(const dnn_graph_conv *g);
size_t dnn_graph_conv_workspace(const dnn_graph_conv *g, int i);
/* The engine's global index (for --verbose-algos). */
int64_t dnn_graph_conv_engine(const dnn_graph_conv *g, int i);
/* Enqueues plan i on the handle's stream: x, w, y as in the spec (the kind's output
 * overwritten), b the bias (with spec.bias, else unused), ws at least
 * dnn_graph_conv_workspace(g, i) bytes. */
cudnnStatus_t dnn_graph_conv_run(cudnnHandle_t h, const dnn_graph_conv *g, int i, void *x, void *w,
                                 void *y, const void *b, void *ws);
void dnn_graph_conv_free(dnn_graph_conv *g);

#endif
