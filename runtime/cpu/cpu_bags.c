/* cpu_bags.c — SegmentMax and its gradient (ir/ops/op_bags.c): nn.EmbeddingBag's max
 * bags at bounds given at run time. */
#include <inttypes.h>
#include <string.h>

#include "cpu_internal.h"

/* rows [L, D..], E [n + 1] -> Y [n, D..] (the max of rows [E[i], E[i + 1]); 0 when empty),
 * A [n, D..] (its row: the first of equal ones, a NaN winning; -1 when empty). Bounds not
 * ascending within [0, L] are refused, naming the bound. */
int cpu_segment_max(const kernel_args *a, oc_err *err) {
    const ir_tensor *r = kernel_in(a, 0), *e = kernel_in(a, 1);
    if (kernel_want_dtype(a, r, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t n = e->dims[0] - 1, len = r->dims[0], inner = 1;
    for (int d = 1; d < r->rank; d++) inner *= r->dims[d];
    const int64_t *bound = a->in[1];
    const float *x = a->in[0];
    float *out = a->out[0];
    int64_t *arg = a->n->n_outputs > 1 ? a->out[1] : NULL;
    for (int64_t i = 0; i <= n; i++)
        if (bound[i] < (i ? bound[i - 1] : 0) || bound[i] > len)
            return kernel_fail(a, err,
                               "bounds '%s': bound %" PRId64 " is %" PRId64
                               ", not ascending within [0, %" PRId64 "]",
                               e->name, i, bound[i], len);
    for (int64_t i = 0; i < n; i++)
        for (int64_t d = 0; d < inner; d++) {
            float best = 0.0f;
            int64_t at = -1;
            for (int64_t k = bound[i]; k < bound[i + 1]; k++) {
                float v = x[k * inner + d];
                if (at < 0 || v > best || (v != v && best == best)) best = v, at = k;
            }
            out[i * inner + d] = best;
            if (arg) arg[i * inner + d] = at;
        }
    return OC_OK;
}

/* dY [n, D..], A [n, D..] -> dRows [L, D..]: zeros, dY[i] at row A[i] (-1: none). A row
 * outside [0, L) is refused. */
int cpu_segment_max_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t len = dx->dims[0], numel = kernel_numel(dy), inner = 1;
    for (int d = 1; d < dy->rank; d++) inner *= dy->dims[d];
    const int64_t *arg = a->in[1];
    const float *g = a->in[0];
    float *out = a->out[0];
    memset(out, 0, (size_t)kernel_numel(dx) * sizeof *out);
    for (int64_t j = 0; j < numel; j++) {
        if (arg[j] < 0) continue;
        if (arg[j] >= len)
            return kernel_fail(a, err, "row %" PRId64 " is outside the %" PRId64 " rows", arg[j],
                               len);
        out[arg[j] * inner + j % inner] = g[j];
    }
    return OC_OK;
}
