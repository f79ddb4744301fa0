/* cpu_resize.c — Resize / Upsample (nearest, linear) and ResizeGrad over up to
 * three spatial dims: per dim, each output index reads two input indices with
 * weights (1 - w, w) (nearest: one, w = 0; runtime/resize_coord.h); an output
 * element is the weighted sum over the 2^nsp corners. The gradient scatters
 * each output's value back with the same weights, in output order. */
#include <string.h>

#include "cpu_internal.h"
#include "resize_coord.h"

typedef struct sp_table {
    int64_t *i0, *i1;
    double *w;
} sp_table;

static int resize_run(const kernel_args *a, bool grad, oc_err *err) {
    const ir_tensor *in = kernel_in(a, 0), *out = kernel_out(a, 0);
    if (kernel_want_dtype(a, in, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_resize_args *p = &op_args_of(a->n)->resize;
    const ir_tensor *small = grad ? out : in, *big = grad ? in : out; /* x and y of the forward */
    int nsp = p->nsp;
    if (small->rank != nsp + 2 || big->rank != nsp + 2)
        return kernel_fail(a, err, "the spatial rank is not the tensors'");
    sp_table t[OP_RESIZE_MAX_SP];
    for (int d = 0; d < nsp; d++) {
        int64_t n = small->dims[2 + d], m = big->dims[2 + d];
        t[d].i0 = oc_malloc((size_t)(m ? m : 1) * sizeof(int64_t));
        t[d].i1 = oc_malloc((size_t)(m ? m : 1) * sizeof(int64_t));
        t[d].w = oc_malloc((size_t)(m ? m : 1) * sizeof(double));
        for (int64_t o = 0; o < m; o++)
            oc_resize_src(o, n, m, p->scale[d], p->linear, (int)p->coord, (int)p->nearest,
                          &t[d].i0[o], &t[d].i1[o], &t[d].w[o]);
    }
    int64_t planes = small->dims[0] * small->dims[1], sin = 1, sout = 1;
    for (int d = 0; d < nsp; d++) sin *= small->dims[2 + d], sout *= big->dims[2 + d];
    const float *src = a->in[0];
    float *dst = a->out[0];
    if (grad) memset(dst, 0, (size_t)kernel_numel(out) * sizeof(float));
    int corners = 1 << nsp;
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t o = 0; o < sout; o++) {
            int64_t oi[OP_RESIZE_MAX_SP], rem = o;
            for (int d = nsp - 1; d >= 0; d--)
                oi[d] = rem % big->dims[2 + d], rem /= big->dims[2 + d];
            double acc = 0;
            for (int c = 0; c < corners; c++) {
                double w = 1;
                int64_t off = 0;
                for (int d = 0; d < nsp; d++) {
                    bool hi = (c >> d) & 1;
                    double wd = hi ? t[d].w[oi[d]] : 1.0 - t[d].w[oi[d]];
                    w *= wd;
                    off = off * small->dims[2 + d] + (hi ? t[d].i1[oi[d]] : t[d].i0[oi[d]]);
                }
                if (w == 0.0) continue;
                if (grad) dst[pl * sin + off] += (float)(w * src[pl * sout + o]);
                else acc += w * src[pl * sin + off];
            }
            if (!grad) dst[pl * sout + o] = (float)acc;
        }
    for (int d = 0; d < nsp; d++) oc_free(t[d].i0), oc_free(t[d].i1), oc_free(t[d].w);
    return OC_OK;
}

int cpu_resize(const kernel_args *a, oc_err *err) { return resize_run(a, false, err); }
int cpu_resize_grad(const kernel_args *a, oc_err *err) { return resize_run(a, true, err); }
