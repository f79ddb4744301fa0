/* cpu_conv.c — Conv, ConvTranspose and their backward ops, through im2col /
 * col2im and one sgemm per (batch item, group).
 *
 * Every op of the family has an "x side" (N, C, D..), a "y side" (N, M, O..)
 * and a weight-shaped tensor; the slots are the same for all six ops:
 *   Conv                        x = in0,  y = out0, w = in1   Y = conv(X, W) + B
 *   ConvRelu                    as Conv, then Y = max(Y, 0)
 *   ConvBackwardData            x = out0, y = in0,  w = in1   dX from dY, W
 *   ConvBackwardFilter          x = in1,  y = in0,  w = out0  dW (+ dB = out1) from dY, X
 *   ConvTranspose               x = in0,  y = out0, w = in1   Y = conv^T(X, W) + B
 *   ConvTransposeBackwardData   x = out0, y = in0,  w = in1
 *   ConvTransposeBackwardFilter x = in1,  y = in0,  w = out0
 * Conv weights are (M, C/G, k..); ConvTranspose weights (C, M/G, k..).
 * Scratch: one column buffer of one batch item, all groups. */
#include <string.h>

#include "cpu_internal.h"
#include "pointwise.h"

typedef struct conv_sides {
    const ir_tensor *x, *y, *w;
    int64_t N, C, M, G, D, O; /* D, O: spatial sizes of x and y */
} conv_sides;

static const ir_tensor *slot(const ir_graph *g, const ir_node *n, bool out, int i) {
    return &g->tensors[out ? n->outputs[i] : n->inputs[i]];
}

static void sides_of(const ir_graph *g, const ir_node *n, conv_sides *s) {
    bool data = n->op == OP_CONV_BACKWARD_DATA || n->op == OP_CONV_TRANSPOSE_BACKWARD_DATA;
    bool filter = n->op == OP_CONV_BACKWARD_FILTER || n->op == OP_CONV_TRANSPOSE_BACKWARD_FILTER;
    s->x = data ? slot(g, n, true, 0) : filter ? slot(g, n, false, 1) : slot(g, n, false, 0);
    s->y = (data || filter) ? slot(g, n, false, 0) : slot(g, n, true, 0);
    s->w = filter ? slot(g, n, true, 0) : slot(g, n, false, 1);
    s->N = s->x->dims[0];
    s->C = s->x->dims[1];
    s->M = s->y->dims[1];
    s->D = s->O = 1;
    for (int i = 2; i < s->x->rank; i++) s->D *= s->x->dims[i];
    for (int i = 2; i < s->y->rank; i++) s->O *= s->y->dims[i];
}

static int64_t k_size_of(const conv_sides *s) {
    int64_t k = 1;
    for (int i = 2; i < s->w->rank; i++) k *= s->w->dims[i];
    return k;
}

size_t cpu_conv_scratch(const ir_graph *g, const ir_node *n) {
    conv_sides s;
    sides_of(g, n, &s);
    return (size_t)(s.C * k_size_of(&s) * s.O) * sizeof(float);
}

size_t cpu_conv_transpose_scratch(const ir_graph *g, const ir_node *n) {
    conv_sides s;
    sides_of(g, n, &s);
    return (size_t)(s.M * k_size_of(&s) * s.D) * sizeof(float);
}

/* Checks dtypes and group; the window from the decoded arguments. transpose:
 * the image is the y side. */
static int setup(const kernel_args *a, bool transpose, conv_sides *s, cpu_window *w, oc_err *err) {
    sides_of(a->g, a->n, s);
    const op_conv_args *p = &op_args_of(a->n)->conv;
    s->G = p->group;
    if (kernel_want_dtype(a, s->x, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, s->y, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, s->w, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    if (s->G <= 0 || s->C % s->G || s->M % s->G)
        return kernel_fail(a, err, "group %lld does not divide channels %lld and %lld",
                           (long long)s->G, (long long)s->C, (long long)s->M);
    int nsp = s->x->rank - 2;
    const int64_t *xs = s->x->dims + 2, *ys = s->y->dims + 2;
    if (transpose) cpu_window_of(&p->win, nsp, ys, xs, w);
    else cpu_window_of(&p->win, nsp, xs, ys, w);
    return OC_OK;
}

/* True when im2col is the identity (1x1 kernel, stride 1, no padding). */
static bool window_is_identity(const cpu_window *w) {
    for (int i = 0; i < w->nsp; i++)
        if (w->kernel[i] != 1 || w->stride[i] != 1 || w->pad[i] != 0 || w->img[i] != w->col[i])
            return false;
    return true;
}

/* Adds bias b (M) to y (N, M, O). */
static void add_bias(float *y, const float *b, int64_t N, int64_t M, int64_t O) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            float *row = y + (n * M + m) * O;
            for (int64_t o = 0; o < O; o++) row[o] += b[m];
        }
}

/* dB (M) = sum of dy (N, M, O) over N and O, accumulated in double. */
static void bias_grad(const float *dy, float *db, int64_t N, int64_t M, int64_t O) {
    for (int64_t m = 0; m < M; m++) {
        double acc = 0;
        for (int64_t n = 0; n < N; n++) {
            const float *row = dy + (n * M + m) * O;
            for (int64_t o = 0; o < O; o++) acc += row[o];
        }
        db[m] = (float)acc;
    }
}

/* X (N, C, D..), W (M, C/G, k..), B (M) -> Y (N, M, O..) */
int cpu_conv(const kernel_args *a, oc_err *err) {
    conv_sides s;
    cpu_window w;
    if (setup(a, false, &s, &w, err)) return OC_ERR;
    const float *x = a->in[0], *wt = a->in[1];
    float *y = a->out[0], *col = a->scratch;
    int64_t cg = s.C / s.G, mg = s.M / s.G, kk = cg * w.k_size;
    bool ident = window_is_identity(&w);
    for (int64_t n = 0; n < s.N; n++) {
        const float *xn = x + n * s.C * s.D;
        const float *c = xn;
        if (!ident) {
            cpu_im2col(xn, s.C, &w, col);
            c = col;
        }
        for (int64_t g = 0; g < s.G; g++)
            cpu_sgemm(false, false, mg, s.O, kk, 1.0f, wt + g * mg * kk, kk, c + g * kk * s.O, s.O,
                      0.0f, y + (n * s.M + g * mg) * s.O, s.O);
    }
    if (a->n->n_inputs > 2 && a->in[2]) add_bias(y, a->in[2], s.N, s.M, s.O);
    return OC_OK;
}

/* ReluGradBias: dZ = ReluGrad(dY, Y) (oc_relu_grad, the ReluGrad kernel's),
 * and dB summed as ConvBackwardFilter sums it (bias_grad): bitwise the two
 * nodes it replaces. */
int cpu_relu_grad_bias(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_out(a, 1), IR_DTYPE_FLOAT, err))
        return OC_ERR;
    const float *g = a->in[0], *y = a->in[1];
    float *dz = a->out[0];
    int64_t n = kernel_numel(dy), N = dy->dims[0], M = dy->dims[1];
    for (int64_t i = 0; i < n; i++) dz[i] = oc_relu_grad(g[i], y[i]);
    bias_grad(dz, a->out[1], N, M, N * M > 0 ? n / (N * M) : 0);
    return OC_OK;
}

/* ConvRelu: Conv's Y, then max(Y, 0) in place (oc_relu, the Relu kernel's). */
int cpu_conv_relu(const kernel_args *a, oc_err *err) {
    if (cpu_conv(a, err)) return OC_ERR;
    float *y = a->out[0];
    int64_t n = kernel_numel(kernel_out(a, 0));
    for (int64_t i = 0; i < n; i++) y[i] = oc_relu(y[i]);
    return OC_OK;
}

/* dY (N, M, O..), W (M, C/G, k..) -> dX (N, C, D..) */
int cpu_conv_backward_data(const kernel_args *a, oc_err *err) {
    conv_sides s;
    cpu_window w;
    if (setup(a, false, &s, &w, err)) return OC_ERR;
    const float *dy = a->in[0], *wt = a->in[1];
    float *dx = a->out[0], *col = a->scratch;
    int64_t cg = s.C / s.G, mg = s.M / s.G, kk = cg * w.k_size;
    bool ident = window_is_identity(&w);
    if (!ident) memset(dx, 0, (size_t)(s.N * s.C * s.D) * sizeof(float));
    for (int64_t n = 0; n < s.N; n++) {
        float *dxn = dx + n * s.C * s.D;
        float *c = ident ? dxn : col;
        for (int64_t g = 0; g < s.G; g++)
            cpu_sgemm(true, false, kk, s.O, mg, 1.0f, wt + g * mg * kk, kk,
                      dy + (n * s.M + g * mg) * s.O, s.O, 0.0f, c + g * kk * s.O, s.O);
        if (!ident) cpu_col2im(col, s.C, &w, dxn);
    }
    return OC_OK;
}

/* dY (N, M, O..), X (N, C, D..) -> dW (M, C/G, k..), dB (M) */
int cpu_conv_backward_filter(const kernel_args *a, oc_err *err) {
    conv_sides s;
    cpu_window w;
    if (setup(a, false, &s, &w, err)) return OC_ERR;
    const float *dy = a->in[0], *x = a->in[1];
    float *dw = a->out[0], *col = a->scratch;
    int64_t cg = s.C / s.G, mg = s.M / s.G, kk = cg * w.k_size;
    bool ident = window_is_identity(&w);
    for (int64_t n = 0; n < s.N; n++) {
        const float *xn = x + n * s.C * s.D;
        const float *c = xn;
        if (!ident) {
            cpu_im2col(xn, s.C, &w, col);
            c = col;
        }
        for (int64_t g = 0; g < s.G; g++)
            cpu_sgemm(false, true, mg, kk, s.O, 1.0f, dy + (n * s.M + g * mg) * s.O, s.O,
                      c + g * kk * s.O, s.O, n == 0 ? 0.0f : 1.0f, dw + g * mg * kk, kk);
    }
    if (s.N == 0) memset(dw, 0, (size_t)(s.M * kk) * sizeof(float));
    if (a->n->n_outputs > 1 && a->out[1]) bias_grad(dy, a->out[1], s.N, s.M, s.O);
    return OC_OK;
}

/* X (N, C, D..), W (C, M/G, k..), B (M) -> Y (N, M, O..) */
int cpu_conv_transpose(const kernel_args *a, oc_err *err) {
    conv_sides s;
    cpu_window w;
    if (setup(a, true, &s, &w, err)) return OC_ERR;
    const float *x = a->in[0], *wt = a->in[1];
    float *y = a->out[0], *col = a->scratch;
    int64_t cg = s.C / s.G, mg = s.M / s.G, kk = mg * w.k_size;
    memset(y, 0, (size_t)(s.N * s.M * s.O) * sizeof(float));
    for (int64_t n = 0; n < s.N; n++) {
        for (int64_t g = 0; g < s.G; g++)
            cpu_sgemm(true, false, kk, s.D, cg, 1.0f, wt + g * cg * kk, kk,
                      x + (n * s.C + g * cg) * s.D, s.D, 0.0f, col + g * kk * s.D, s.D);
        cpu_col2im(col, s.M, &w, y + n * s.M * s.O);
    }
    if (a->n->n_inputs > 2 && a->in[2]) add_bias(y, a->in[2], s.N, s.M, s.O);
    return OC_OK;
}

/* dY (N, M, O..), W (C, M/G, k..) -> dX (N, C, D..) */
int cpu_conv_transpose_backward_data(const kernel_args *a, oc_err *err) {
    conv_sides s;
    cpu_window w;
    if (setup(a, true, &s, &w, err)) return OC_ERR;
    const float *dy = a->in[0], *wt = a->in[1];
    float *dx = a->out[0], *col = a->scratch;
    int64_t cg = s.C / s.G, mg = s.M / s.G, kk = mg * w.k_size;
    for (int64_t n = 0; n < s.N; n++) {
        cpu_im2col(dy + n * s.M * s.O, s.M, &w, col);
        for (int64_t g = 0; g < s.G; g++)
            cpu_sgemm(false, false, cg, s.D, kk, 1.0f, wt + g * cg * kk, kk, col + g * kk * s.D,
                      s.D, 0.0f, dx + (n * s.C + g * cg) * s.D, s.D);
    }
    return OC_OK;
}

/* dY (N, M, O..), X (N, C, D..) -> dW (C, M/G, k..), dB (M) */
int cpu_conv_transpose_backward_filter(const kernel_args *a, oc_err *err) {
    conv_sides s;
    cpu_window w;
    if (setup(a, true, &s, &w, err)) return OC_ERR;
    const float *dy = a->in[0], *x = a->in[1];
    float *dw = a->out[0], *col = a->scratch;
    int64_t cg = s.C / s.G, mg = s.M / s.G, kk = mg * w.k_size;
    for (int64_t n = 0; n < s.N; n++) {
        cpu_im2col(dy + n * s.M * s.O, s.M, &w, col);
        for (int64_t g = 0; g < s.G; g++)
            cpu_sgemm(false, true, cg, kk, s.D, 1.0f, x + (n * s.C + g * cg) * s.D, s.D,
                      col + g * kk * s.D, s.D, n == 0 ? 0.0f : 1.0f, dw + g * cg * kk, kk);
    }
    if (s.N == 0) memset(dw, 0, (size_t)(s.C * kk) * sizeof(float));
    if (a->n->n_outputs > 1 && a->out[1]) bias_grad(dy, a->out[1], s.N, s.M, s.O);
    return OC_OK;
}
