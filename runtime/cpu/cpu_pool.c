/* cpu_pool.c — MaxPool (with optional Indices), AveragePool, GlobalAveragePool
 * and their gradients, over any number of spatial dims.
 *
 * MaxPool ignores padding (padded cells never win); ties go to the first
 * maximum in window order, as PyTorch's CPU kernel does, and MaxPoolGrad
 * recomputes the same argmax from X. AveragePool divides by the number of
 * cells inside the input (count_include_pad=0) or inside the padded input
 * (count_include_pad=1; a ceil_mode window past the end padding is clipped),
 * PyTorch's avg_pool semantics. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

/* Window of a pooling node: image = the x side (input 0 of the forward, or
 * the output dX of a grad), columns = the y side. */
static int pool_setup(const kernel_args *a, const ir_tensor *x, const ir_tensor *y, cpu_window *w,
                      oc_err *err) {
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, y, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    cpu_window_of(&op_args_of(a->n)->pool.win, x->rank - 2, x->dims + 2, y->dims + 2, w);
    return OC_OK;
}

/* Kernel cells of the window at output position o: writes the flat image
 * index of each cell into idx (-1 for padding) and returns the count of
 * cells inside the padded extent (for count_include_pad). */
static int64_t window_cells(const cpu_window *w, const int64_t *o, int64_t *idx) {
    int64_t padded = 0;
    for (int64_t kk = 0; kk < w->k_size; kk++) {
        int64_t rem = kk, off = 0, k[IR_MAX_RANK];
        for (int d = w->nsp - 1; d >= 0; d--) {
            k[d] = rem % w->kernel[d];
            rem /= w->kernel[d];
        }
        bool inside = true, in_padded = true;
        for (int d = 0; d < w->nsp; d++) {
            int64_t ix = o[d] * w->stride[d] - w->pad[d] + k[d] * w->dilation[d];
            if (ix < 0 || ix >= w->img[d]) inside = false;
            if (ix < -w->pad[d] || ix >= w->img[d] + w->pad_end[d]) in_padded = false;
            off = off * w->img[d] + ix;
        }
        idx[kk] = inside ? off : -1;
        padded += in_padded;
    }
    return padded;
}

static void next_pos(const cpu_window *w, int64_t *o) {
    for (int d = w->nsp - 1; d >= 0; d--) {
        if (++o[d] < w->col[d]) break;
        o[d] = 0;
    }
}

/* Argmax (flat index within the plane, -1 if the window is all padding). */
static int64_t plane_argmax(const float *x, const int64_t *idx, int64_t k_size) {
    int64_t best = -1;
    for (int64_t kk = 0; kk < k_size; kk++) {
        int64_t i = idx[kk];
        if (i < 0) continue;
        if (best < 0 || x[i] > x[best] || (isnan(x[i]) && !isnan(x[best]))) best = i;
    }
    return best;
}

/* Flat index of plane cell b for the Indices output: row-major within the
 * plane (storage_order 0) or column-major over the spatial dims (1). */
static int64_t storage_index(const cpu_window *w, int64_t b, bool col_major) {
    if (!col_major) return b;
    int64_t c[IR_MAX_RANK], idx = 0;
    for (int d = w->nsp - 1; d >= 0; d--) {
        c[d] = b % w->img[d];
        b /= w->img[d];
    }
    for (int d = w->nsp - 1; d >= 0; d--) idx = idx * w->img[d] + c[d];
    return idx;
}

/* X (N, C, D..) -> Y (N, C, O..) [, Indices (N, C, O..) int64: flat index over
 * (N, C, D..), spatial part ordered by storage_order] */
int cpu_max_pool(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    cpu_window w;
    if (pool_setup(a, x, y, &w, err)) return OC_ERR;
    int64_t planes = x->dims[0] * x->dims[1];
    const float *xp = a->in[0];
    float *yp = a->out[0];
    int64_t *ind = a->n->n_outputs > 1 ? a->out[1] : NULL;
    bool cm = op_args_of(a->n)->pool.storage_col_major;
    int64_t *idx = oc_malloc((size_t)w.k_size * sizeof *idx);
    for (int64_t p = 0; p < planes; p++) {
        int64_t o[IR_MAX_RANK] = {0};
        const float *xs = xp + p * w.img_size;
        for (int64_t oi = 0; oi < w.col_size; oi++, next_pos(&w, o)) {
            window_cells(&w, o, idx);
            int64_t b = plane_argmax(xs, idx, w.k_size);
            yp[p * w.col_size + oi] = b >= 0 ? xs[b] : -INFINITY;
            if (ind)
                ind[p * w.col_size + oi] = b >= 0 ? p * w.img_size + storage_index(&w, b, cm) : -1;
        }
    }
    oc_free(idx);
    return OC_OK;
}

/* dY (N, C, O..), X (N, C, D..) -> dX (N, C, D..): dY routed to each argmax. */
int cpu_max_pool_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 1), *dy = kernel_in(a, 0);
    cpu_window w;
    if (pool_setup(a, x, dy, &w, err)) return OC_ERR;
    int64_t planes = x->dims[0] * x->dims[1];
    const float *xp = a->in[1], *dyp = a->in[0];
    float *dx = a->out[0];
    memset(dx, 0, (size_t)(planes * w.img_size) * sizeof(float));
    int64_t *idx = oc_malloc((size_t)w.k_size * sizeof *idx);
    for (int64_t p = 0; p < planes; p++) {
        int64_t o[IR_MAX_RANK] = {0};
        for (int64_t oi = 0; oi < w.col_size; oi++, next_pos(&w, o)) {
            window_cells(&w, o, idx);
            int64_t b = plane_argmax(xp + p * w.img_size, idx, w.k_size);
            if (b >= 0) dx[p * w.img_size + b] += dyp[p * w.col_size + oi];
        }
    }
    oc_free(idx);
    return OC_OK;
}

/* Cells inside the input, and the divisor count_include_pad selects. */
static int64_t avg_divisor(const cpu_window *w, const int64_t *idx, int64_t padded, bool include) {
    if (include) return padded;
    int64_t n = 0;
    for (int64_t kk = 0; kk < w->k_size; kk++) n += idx[kk] >= 0;
    return n;
}

/* X (N, C, D..) -> Y (N, C, O..) */
int cpu_average_pool(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    cpu_window w;
    if (pool_setup(a, x, y, &w, err)) return OC_ERR;
    bool include = op_args_of(a->n)->pool.count_include_pad;
    int64_t planes = x->dims[0] * x->dims[1];
    const float *xp = a->in[0];
    float *yp = a->out[0];
    int64_t *idx = oc_malloc((size_t)w.k_size * sizeof *idx);
    for (int64_t p = 0; p < planes; p++) {
        int64_t o[IR_MAX_RANK] = {0};
        const float *xs = xp + p * w.img_size;
        for (int64_t oi = 0; oi < w.col_size; oi++, next_pos(&w, o)) {
            int64_t padded = window_cells(&w, o, idx);
            double s = 0;
            for (int64_t kk = 0; kk < w.k_size; kk++)
                if (idx[kk] >= 0) s += xs[idx[kk]];
            int64_t div = avg_divisor(&w, idx, padded, include);
            yp[p * w.col_size + oi] = div > 0 ? (float)(s / (double)div) : 0.0f;
        }
    }
    oc_free(idx);
    return OC_OK;
}

/* dY (N, C, O..) -> dX (N, C, D..) (input_shape): dY / divisor spread over the window. */
int cpu_average_pool_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *x = kernel_out(a, 0);
    cpu_window w;
    if (pool_setup(a, x, dy, &w, err)) return OC_ERR;
    bool include = op_args_of(a->n)->pool.count_include_pad;
    int64_t planes = x->dims[0] * x->dims[1];
    const float *dyp = a->in[0];
    float *dx = a->out[0];
    memset(dx, 0, (size_t)(planes * w.img_size) * sizeof(float));
    int64_t *idx = oc_malloc((size_t)w.k_size * sizeof *idx);
    for (int64_t p = 0; p < planes; p++) {
        int64_t o[IR_MAX_RANK] = {0};
        float *ds = dx + p * w.img_size;
        for (int64_t oi = 0; oi < w.col_size; oi++, next_pos(&w, o)) {
            int64_t padded = window_cells(&w, o, idx);
            int64_t div = avg_divisor(&w, idx, padded, include);
            if (div <= 0) continue;
            float g = dyp[p * w.col_size + oi] / (float)div;
            for (int64_t kk = 0; kk < w.k_size; kk++)
                if (idx[kk] >= 0) ds[idx[kk]] += g;
        }
    }
    oc_free(idx);
    return OC_OK;
}

/* X (N, C, D..) -> Y (N, C, 1..): plane means (double accumulation). */
int cpu_global_average_pool(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t planes = x->dims[0] * x->dims[1], S = kernel_numel(x) / (planes ? planes : 1);
    const float *xp = a->in[0];
    float *y = a->out[0];
    for (int64_t p = 0; p < planes; p++) {
        double s = 0;
        for (int64_t i = 0; i < S; i++) s += xp[p * S + i];
        y[p] = (float)(s / (double)S);
    }
    return OC_OK;
}

/* dY (N, C, 1..) -> dX (N, C, D..) = dY / S. */
int cpu_global_average_pool_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_out(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t planes = x->dims[0] * x->dims[1], S = kernel_numel(x) / (planes ? planes : 1);
    const float *dy = a->in[0];
    float *dx = a->out[0];
    for (int64_t p = 0; p < planes; p++) {
        float g = dy[p] / (float)S;
        for (int64_t i = 0; i < S; i++) dx[p * S + i] = g;
    }
    return OC_OK;
}
