/* cuda_bn_stash.c — a BatchNorm forward's batch statistics kept for its
 * gradient in the same step, as PyTorch keeps save_mean / save_invstd, so the
 * backward skips a pass over X (ResNet-50 b640: a fifth of cuDNN's BN backward
 * time; one of the six passes of the fused BatchNormReluGrad).
 *
 * One entry per (graph, X's statistics key, epsilon, C): a device buffer
 * outside the arena (2 C floats + 2 C doubles; ResNet-50's 53 BNs, 26560
 * channels: 0.64 MB), made by the first forward, freed with the backend. Two
 * forms:
 *   - f: mean[C], then 1 / sqrt(var + eps)[C], float32 — cuDNN's saved
 *     statistics (its forward writes them; ours too, for a cuDNN gradient
 *     after our fused forward). cuDNN's backward then differs from
 *     recomputing in the last bits, so it is read only when not
 *     --deterministic (a plan's results stay bitwise its in-core run's).
 *   - d: (mean, 1 / sqrt(var + eps)) per channel in double, as our kernels
 *     compute them (cu_bn_relu): the same bits the gradient would compute from
 *     the same X, so it is read in every mode.
 * An entry is valid for a gradient when this step's forward wrote that form
 * for this X: read where the forward read it, or through a swap (another
 * address), or a recompute clone's output (op_bn_args.stats_key). */
#include "cuda_internal.h"

struct cuda_bn_stash {
    cuda_bn_stats *head;
};

void cuda_bn_stash_free(cuda_bn_stash *st) {
    if (!st) return;
    for (cuda_bn_stats *e = st->head, *nx; e; e = nx) {
        nx = e->next;
        if (e->f) (void)cudaFree(e->f); /* one block: f, then d */
        oc_free(e);
    }
    oc_free(st);
}

static const ir_graph *graph_of(const cuda_ctx *c, const kernel_args *a) {
    return c->graph ? c->graph : a->g;
}

static cuda_bn_stats *find(const cuda_ctx *c, const kernel_args *a, int64_t C) {
    const op_bn_args *p = &op_args_of(a->n)->bn;
    if (!c->im->bn_stash) return NULL;
    for (cuda_bn_stats *e = c->im->bn_stash->head; e; e = e->next)
        if (e->g == graph_of(c, a) && e->key == p->stats_key && e->eps == p->epsilon &&
            e->channels == C)
            return e;
    return NULL;
}

cuda_bn_stats *cuda_bn_stash_entry(const cuda_ctx *c, const kernel_args *a, int64_t C,
                                   oc_err *err) {
    cuda_bn_stats *e = find(c, a, C);
    if (e) return e;
    cuda_impl *im = c->im;
    if (!im->bn_stash) im->bn_stash = oc_calloc(1, sizeof *im->bn_stash);
    const op_bn_args *p = &op_args_of(a->n)->bn;
    e = oc_calloc(1, sizeof *e);
    *e = (cuda_bn_stats){.g = graph_of(c, a),
                         .key = p->stats_key,
                         .eps = p->epsilon,
                         .channels = C,
                         .f_step = -1,
                         .d_step = -1};
    void *blk = NULL;
    cudaError_t rc = cudaMalloc(&blk, 2 * (size_t)C * (sizeof(float) + sizeof(double)));
    if (rc != cudaSuccess) {
        oc_free(e);
        cuda_fail_call(err, "cudaMalloc (BN statistics stash)", cudaGetErrorString(rc), __FILE__,
                       __LINE__, a->n->name);
        return NULL;
    }
    e->f = blk;
    e->d = (double *)(void *)((char *)blk + 2 * (size_t)C * sizeof(float)); /* 8-aligned: C*8 */
    e->next = im->bn_stash->head;
    im->bn_stash->head = e;
    return e;
}

void cuda_bn_stash_wrote(cuda_bn_stats *e, const kernel_args *a, bool f, bool d) {
    if (f) e->f_step = a->step;
    if (d) e->d_step = a->step;
    e->x_ptr = a->in[0];
}

const cuda_bn_stats *cuda_bn_stash_for_grad(const cuda_ctx *c, const kernel_args *a, int64_t C,
                                            bool exact) {
    const op_bn_args *p = &op_args_of(a->n)->bn;
    if (!p->training || (!exact && c->im->deterministic)) return NULL;
    const cuda_bn_stats *e = find(c, a, C);
    if (!e || (exact ? e->d_step : e->f_step) != a->step) return NULL;
    /* X (input 1) read where the forward read it; through a swap it is elsewhere */
    if (p->stats_key == a->n->inputs[1] && e->x_ptr != a->in[1]) return NULL;
    return e;
}
