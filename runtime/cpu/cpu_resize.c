/* cpu_resize.c — Resize / Upsample (nearest, linear, cubic; antialiased) and ResizeGrad
 * over up to three spatial dims: per dim, each output index reads up to four input
 * indices (antialiased: the stretched filter's) with weights (runtime/resize_coord.h);
 * an output element is the weighted sum over the taps' product over the dims. The
 * gradient scatters each output's value back with the same weights, in output order. */
#include <string.h>

#include "cpu_internal.h"

typedef struct sp_table {
    int64_t *idx; /* per output index, `taps` taps (unused ones weight 0) */
    double *w;
    int taps;
} sp_table;

/* Dim d's table: each output's taps, oc_resize_taps' or, antialiased, oc_resize_aa_span's
 * (as many as the widest output's; the rest weight 0). */
static void fill_table(sp_table *t, int64_t n, int64_t m, double scale, const oc_resize_kind *k) {
    int64_t most = k->antialias ? oc_resize_aa_max_taps(n, scale, k) : OC_RESIZE_MAX_TAPS;
    most = most < 1 ? 1 : most;
    t->idx = oc_calloc((size_t)(m ? m : 1) * (size_t)most, sizeof(int64_t));
    t->w = oc_calloc((size_t)(m ? m : 1) * (size_t)most, sizeof(double));
    t->taps = k->antialias ? (int)most : 1;
    for (int64_t o = 0; o < m; o++) {
        int64_t *idx = t->idx + o * most;
        double *w = t->w + o * most;
        if (!k->antialias) {
            t->taps = oc_resize_taps(o, n, m, scale, k, idx, w);
            continue;
        }
        int64_t first, count;
        double center, inv,
            total = oc_resize_aa_span(o, n, scale, k, &first, &count, &center, &inv);
        for (int64_t j = 0; j < count && j < most && total != 0.0; j++) {
            idx[j] = first + j;
            w[j] = oc_resize_aa_filter(((double)(first + j) + 0.5 - center) * inv, k) / total;
        }
    }
}

static int resize_run(const kernel_args *a, bool grad, oc_err *err) {
    const ir_tensor *in = kernel_in(a, 0), *out = kernel_out(a, 0);
    if (kernel_want_dtype(a, in, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_resize_args *p = &op_args_of(a->n)->resize;
    const ir_tensor *small = grad ? out : in, *big = grad ? in : out; /* x and y of the forward */
    int nsp = p->nsp;
    if (small->rank != nsp + 2 || big->rank != nsp + 2)
        return kernel_fail(a, err, "the spatial rank is not the tensors'");
    oc_resize_kind k = kernel_resize_kind(a);
    sp_table t[OP_RESIZE_MAX_SP];
    int combos = 1;
    int64_t stride[OP_RESIZE_MAX_SP];
    for (int d = 0; d < nsp; d++) {
        int64_t n = small->dims[2 + d], m = big->dims[2 + d];
        fill_table(&t[d], n, m, p->scale[d], &k);
        stride[d] = k.antialias ? t[d].taps : OC_RESIZE_MAX_TAPS;
        combos *= t[d].taps;
    }
    int64_t planes = small->dims[0] * small->dims[1], sin = 1, sout = 1;
    for (int d = 0; d < nsp; d++) sin *= small->dims[2 + d], sout *= big->dims[2 + d];
    const float *src = a->in[0];
    float *dst = a->out[0];
    if (grad) memset(dst, 0, (size_t)kernel_numel(out) * sizeof(float));
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t o = 0; o < sout; o++) {
            int64_t oi[OP_RESIZE_MAX_SP], rem = o;
            for (int d = nsp - 1; d >= 0; d--)
                oi[d] = rem % big->dims[2 + d], rem /= big->dims[2 + d];
            double acc = 0;
            for (int c = 0; c < combos; c++) {
                double w = 1;
                int64_t off = 0;
                for (int d = 0, cr = c; d < nsp; d++) {
                    int j = cr % t[d].taps;
                    cr /= t[d].taps;
                    w *= t[d].w[oi[d] * stride[d] + j];
                    off = off * small->dims[2 + d] + t[d].idx[oi[d] * stride[d] + j];
                }
                if (w == 0.0) continue;
                if (grad) dst[pl * sin + off] += (float)(w * src[pl * sout + o]);
                else acc += w * src[pl * sin + off];
            }
            if (!grad) dst[pl * sout + o] = (float)acc;
        }
    for (int d = 0; d < nsp; d++) oc_free(t[d].idx), oc_free(t[d].w);
    return OC_OK;
}

int cpu_resize(const kernel_args *a, oc_err *err) { return resize_run(a, false, err); }
int cpu_resize_grad(const kernel_args *a, oc_err *err) { return resize_run(a, true, err); }
