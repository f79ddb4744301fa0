/* cpu_loss.c — SoftmaxCrossEntropyLoss and its gradient, for scores (N, C)
 * and labels (N) (int64 or int32), without class weights:
 *   log_prob = scores - logsumexp(scores)           (per row, in double)
 *   loss_i   = -log_prob[i, label_i]  (0 where label_i == ignore_index)
 *   mean: sum loss_i / #rows not ignored; sum: sum loss_i; none: loss (N). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

static int sce_setup(const kernel_args *a, const ir_tensor *scores, const ir_tensor *labels,
                     op_reduction *red, oc_err *err) {
    if (kernel_want_dtype(a, scores, IR_DTYPE_FLOAT, err)) return OC_ERR;
    if (labels->dtype != IR_DTYPE_INT64 && labels->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "labels '%s' must be int64 or int32", labels->name);
    if (scores->rank != 2 || labels->rank != 1)
        return kernel_fail(a, err, "needs scores (N, C) and labels (N)");
    *red = op_args_of(a->n)->sce.reduction;
    return OC_OK;
}

static int64_t label_at(const ir_tensor *t, const void *p, int64_t i) {
    return t->dtype == IR_DTYPE_INT64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

/* Label of row i, -1 when ignored; OC_ERR (as -2) when out of range. */
static int64_t row_label(const kernel_args *a, const ir_tensor *tl, const void *labels, int64_t i,
                         int64_t C, oc_err *err) {
    int64_t l = label_at(tl, labels, i);
    const op_sce_args *p = &op_args_of(a->n)->sce;
    if (p->has_ignore_index && l == p->ignore_index) return -1;
    if (l < 0 || l >= C) {
        kernel_fail(a, err, "label %" PRId64 " of row %" PRId64 " is outside [0, %" PRId64 ")", l,
                    i, C);
        return -2;
    }
    return l;
}

/* scores (N, C), labels (N) -> loss (scalar, or (N) for none) [, log_prob (N, C)] */
int cpu_softmax_cross_entropy(const kernel_args *a, oc_err *err) {
    const ir_tensor *ts = kernel_in(a, 0), *tl = kernel_in(a, 1);
    op_reduction red;
    if (a->n->n_inputs > 2 && a->in[2])
        return kernel_fail(a, err, "class weights are not supported");
    if (sce_setup(a, ts, tl, &red, err)) return OC_ERR;
    int64_t N = ts->dims[0], C = ts->dims[1];
    const float *s = a->in[0];
    float *loss = a->out[0];
    float *lp = a->n->n_outputs > 1 ? a->out[1] : NULL;
    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) {
        const float *row = s + i * C;
        double mx = -INFINITY, se = 0;
        for (int64_t c = 0; c < C; c++) mx = row[c] > mx ? row[c] : mx;
        for (int64_t c = 0; c < C; c++) se += exp((double)row[c] - mx);
        double lse = mx + log(se);
        if (lp)
            for (int64_t c = 0; c < C; c++) lp[i * C + c] = (float)((double)row[c] - lse);
        int64_t l = row_label(a, tl, a->in[1], i, C, err);
        if (l == -2) return OC_ERR;
        double li = l >= 0 ? lse - (double)row[l] : 0.0;
        if (red == OP_REDUCTION_NONE) loss[i] = (float)li;
        total += li;
        count += l >= 0;
    }
    if (red == OP_REDUCTION_MEAN) loss[0] = (float)(total / (double)count);
    else if (red == OP_REDUCTION_SUM) loss[0] = (float)total;
    return OC_OK;
}

/* log_prob (N, C), labels (N) -> dScores (N, C) = (exp(log_prob) - onehot) / k,
 * k = #rows not ignored for mean, 1 for sum and none; ignored rows get 0. */
int cpu_softmax_cross_entropy_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *tp = kernel_in(a, 0), *tl = kernel_in(a, 1);
    op_reduction red;
    if (sce_setup(a, tp, tl, &red, err)) return OC_ERR;
    int64_t N = tp->dims[0], C = tp->dims[1], count = 0;
    for (int64_t i = 0; i < N; i++) {
        int64_t l = row_label(a, tl, a->in[1], i, C, err);
        if (l == -2) return OC_ERR;
        count += l >= 0;
    }
    double k = red == OP_REDUCTION_MEAN ? (double)count : 1.0;
    /* the loss scale (GradScaler), input 2 when present */
    double s = a->n->n_inputs > 2 && a->in[2] ? (double)*(const float *)a->in[2] : 1.0;
    const float *lp = a->in[0];
    float *d = a->out[0];
    for (int64_t i = 0; i < N; i++) {
        int64_t l = row_label(a, tl, a->in[1], i, C, err);
        for (int64_t c = 0; c < C; c++)
            d[i * C + c] = l < 0 ? 0.0f : (float)(s * (exp((double)lp[i * C + c]) - (c == l)) / k);
    }
    return OC_OK;
}
