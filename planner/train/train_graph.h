/* train_graph.h — the whole training step as one graph (DESIGN §3):
 * forward, loss, backward, optimizer update, in the default schedule
 * (forward in order, backward in reverse, each parameter's update as soon as
 * its gradient is final), with tensor classes and the in-core peak.
 *
 *   train_opts o = train_opts_default();
 *   train_graph *tg;
 *   if (train_build(fwd_graph, &o, &tg, &err)) ...   // fwd_graph is consumed
 *   printf("%lld\n", (long long)tg->incore_peak_bytes);
 *   train_graph_free(tg);
 */
#ifndef OC_TRAIN_GRAPH_H
#define OC_TRAIN_GRAPH_H

#include "ir/ir.h"

typedef enum train_phase {
    TRAIN_PHASE_FORWARD = 0,
    TRAIN_PHASE_LOSS,
    TRAIN_PHASE_BACKWARD,
    TRAIN_PHASE_UPDATE,
} train_phase;
const char *train_phase_name(train_phase p);

typedef enum train_loss {
    TRAIN_LOSS_SOFTMAX_CE = 0, /* SoftmaxCrossEntropyLoss on an [N, C] output, int64 labels */
    TRAIN_LOSS_MODEL,          /* the model already computes its loss (scalar output) */
} train_loss;

typedef enum train_optimizer {
    TRAIN_OPT_SGD = 0, /* SGDMomentum: torch.optim.SGD (momentum, weight decay) */
    TRAIN_OPT_ADAMW,   /* AdamW: torch.optim.AdamW (betas, eps, decoupled weight decay) */
} train_optimizer;

/* How far elementwise chains are fused (--fuse; plan's auto picks all or forward). */
typedef enum train_fuse {
    TRAIN_FUSE_NONE = 0, /* --no-fuse: the model's own nodes */
    TRAIN_FUSE_FORWARD,  /* BatchNormRelu forward; backward as ReluGrad + BatchNormalizationGrad */
    TRAIN_FUSE_ALL,      /* also BatchNormReluGrad where no residual needs dZ, the gradient Sum
                            in ReluGrad, and multi-tensor updates (each forward node's
                            parameters; with clipping or loss scaling all) (the default) */
} train_fuse;

/* Compute precision (--precision; train/autocast.h). Parameters, gradients and
 * the optimizer stay float32 whichever it is. */
typedef enum train_precision {
    TRAIN_PRECISION_FP32 = 0, /* every float tensor float32 (the default) */
    TRAIN_PRECISION_BF16,     /* autocast to bfloat16 */
    TRAIN_PRECISION_FP16,     /* autocast to float16 */
} train_precision;
const char *train_precision_name(train_precision p);
/* The half type of p (IR_DTYPE_FLOAT for fp32). */
ir_dtype train_precision_dtype(train_precision p);

typedef struct train_opts {
    train_loss loss;
    train_optimizer optimizer;
    float lr, momentum, weight_decay;
    float beta1, beta2, epsilon; /* AdamW */
    float clip_grad_norm;        /* > 0: gradients scaled to at most this global L2 norm */
    bool fuse_attention;         /* --attention fused: FusedAttention nodes (fuse_attention.h) */
    train_fuse fuse;    /* BatchNormalization [+ Add] + Relu as BatchNormRelu (fuse_norm_act.h);
                           not NONE: decomposed GELUs as Gelu (fuse_gelu.h) */
    bool channels_last; /* --layout nhwc: convolutions and what follows them (channels_last.h) */
    train_precision precision;
    /* --loss-scale: GradScaler's initial scale (0: none; < 0: auto, 65536 with
     * fp16, none otherwise) and --loss-scale-interval (growth interval);
     * growth 2 and backoff 0.5 as torch.amp.GradScaler's defaults. */
    float loss_scale;
    int64_t loss_scale_interval;
    bool forward_only; /* the forward pass and the loss, no backward or update (evaluation) */
    bool bn_frozen;    /* BatchNormalization on its running statistics, not updated (--bn frozen) */
    /* --freeze P[,P..]: the parameters whose names match a pattern (fnmatch: * ? [..]) take
     * no gradient and no update, as requires_grad False in PyTorch; NULL: none. Points into
     * the caller's argument (not owned). */
    const char *freeze;
    int64_t ignore_index; /* labels equal to it count in no loss (PyTorch's default -100) */
} train_opts;
/* softmax CE, SGD with lr 0.1, momentum 0.9, weight decay 1e-4; AdamW's betas
 * (0.9, 0.999), eps 1e-8 (its weight decay is weight_decay too); no clipping. */
train_opts train_opts_default(void);
/* One option of both command lines into o: --optimizer sgd|adamw, --betas B1,B2,
 * --eps E, --clip-grad-norm MAX, --ignore-index K, --attention fused|unfused,
 * --fuse all|forward|none (v is its value; --no-fuse is --fuse none), --layout nchw|nhwc,
 * --precision fp32|bf16|fp16, --loss-scale S|auto|none, --loss-scale-interval N,
 * --freeze P[,P..].
 * 1 when flag is one of them, 0 when it is not, OC_ERR (naming it) on a bad value. */
#define TRAIN_OPTS_FLAGS                                                                           \
    "--optimizer", "--betas", "--eps", "--clip-grad-norm", "--ignore-index", "--attention",        \
        "--fuse", "--layout", "--precision", "--loss-scale", "--loss-scale-interval", "--freeze"
int train_opts_parse(train_opts *o, const char *flag, const char *v, oc_err *err);
/* The initial loss scale o asks for (--loss-scale resolved), 0 for none. */
float train_loss_scale(const train_opts *o);

typedef struct train_graph {
    ir_graph *g;        /* owns everything; nodes are in the default schedule order */
    train_phase *phase; /* per node */
    int *fwd_of;        /* per node: the forward node a backward node differentiates, or -1 */
    int *alias_of;      /* per tensor: tensor whose storage it reuses (in-place update), or -1 */
    int n_forward;      /* nodes [0, n_forward) are forward (incl. the loss) */
    int loss_tensor;
    int label_tensor; /* -1 when the model brings its own loss */
    int *saved;       /* forward activations read by backward nodes */
    int n_saved;
    int *grad_of; /* per tensor: index of its final gradient, or -1 */
    int64_t incore_peak_bytes;
    int incore_peak_node; /* node at which the peak occurs */
    train_opts opts;
} train_graph;

/* Builds the training graph from a shape-inferred forward graph (consumed,
 * even on failure). Fails naming the node and op when an op that needs a
 * gradient has no rule, or the model has no usable output for the loss. */
int train_build(ir_graph *fwd, const train_opts *o, train_graph **out, oc_err *err);
void train_graph_free(train_graph *tg);
/* Indices in g->inputs of every data input — neither the labels nor computed on the host
 * (ir/host_inputs.h): token ids, then an attention mask, .. — in graph order, into idx (cap
 * entries at most); returns how many there are. */
int train_data_inputs(const train_graph *tg, int *idx, int cap);
/* Index in g->inputs of the labels, or -1. */
int train_label_input(const train_graph *tg);

/* Fills tg->alias_of (allocated here; replaced if set) from the op table's
 * in-place outputs (BN running statistics, SGDMomentum). Kinds are not touched. */
void train_mark_aliases(train_graph *tg);
/* Gives every in-place output the kind of the tensor whose storage it reuses. */
void train_alias_kinds(train_graph *tg);

/* In-place views: node i, a Reshape, Flatten, Squeeze, Unsqueeze or Identity,
 * whose output holds its data input's bytes unchanged, takes that input's
 * storage instead of a copy when the input is an activation on the device
 * (written by an earlier node, not a SwapOut; no parameter, state or constant,
 * no graph input or output) and the output is not a graph output. Sharing is
 * safe whenever the input is read later too: neither is ever written again.
 * Returns the input tensor, or -1. The layout, the plan verifier and the
 * runtime's arena see it through plan_lifetimes' roots (plan/lifetimes.h), the simulator and
 * the in-core peak count the two as one storage, and the copy
 * kernels return at once when the two pointers agree. */
int train_view_source(const train_graph *tg, int node);
/* Parameters, state, optimizer state, constants and in-place aliases: on the
 * device for the whole step, never swapped, recomputed or freed. */
bool train_tensor_persistent(const train_graph *tg, int t);
/* Liveness over the node order: first/last use per tensor. Persistent tensors
 * (parameters, state, optimizer state) live throughout. Returns the peak of
 * live bytes as the arena holds them (ir_tensor_device_bytes; aliases counted
 * once; an in-place view's output is its source's storage, live to the last use
 * of either) and the node where it occurs. */
int64_t train_liveness_peak(const train_graph *tg, int *peak_node);

/* Backward nodes that read tensor t (for reports). Returns count; fills up to cap. */
int train_saved_readers(const train_graph *tg, int t, int *nodes, int cap);

#endif
