/* cpu_elementwise.c — the pointwise ops (Relu, ...: runtime/pointwise.h),
 * Clip, Dropout, Add, Sum and their gradients (ClipGrad, DropoutGrad,
 * ReduceSumTo). Shapes in comments. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_rng.h"
#include "pointwise.h"

/* ---- pointwise ---- */

/* p0, p1 of a pointwise op: its decoded parameters, or 0 (ops without). */
static void cpu_pointwise_params(const ir_node *n, float *p0, float *p1) {
    const op_args *p = n->args ? op_args_of(n) : NULL;
    *p0 = p ? p->pointwise.p0 : 0.0f;
    *p1 = p ? p->pointwise.p1 : 0.0f;
}

/* The pointwise ops (runtime/pointwise.h): one loop per op, float tensors. */
int cpu_pointwise(const kernel_args *a, oc_err *err) {
    const ir_tensor *xt = kernel_in(a, 0);
    if (kernel_want_dtype(a, xt, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const float *xp = a->in[0];
    float *y = a->out[0];
    int64_t n = kernel_numel(xt);
    float p0, p1;
    cpu_pointwise_params(a->n, &p0, &p1);
    switch (a->n->op) {
#define PW_CASE(kind, expr)                                                                        \
    case OP_##kind:                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                          \
            float x = xp[i];                                                                       \
            y[i] = (expr);                                                                         \
        }                                                                                          \
        return OC_OK;
        OC_POINTWISE_FORWARD(PW_CASE)
#undef PW_CASE
    default: return kernel_fail(a, err, "no pointwise expression (runtime/pointwise.h)");
    }
}

/* dY, S (the saved tensor) [, dY2] -> dX; dY2 (ReluGrad's, fuse_grad_sum.h):
 * a second partial, dY + dY2 for dY. */
int cpu_pointwise_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dyt = kernel_in(a, 0), *dy2t = kernel_in(a, 2);
    if (kernel_want_dtype(a, dyt, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err) ||
        (dy2t && kernel_want_dtype(a, dy2t, IR_DTYPE_FLOAT, err)))
        return OC_ERR;
    const float *dyp = a->in[0], *sp = a->in[1], *dy2p = dy2t ? a->in[2] : NULL;
    float *dx = a->out[0];
    int64_t n = kernel_numel(dyt);
    float p0, p1;
    cpu_pointwise_params(a->n, &p0, &p1);
    switch (a->n->op) {
#define PW_CASE(kind, expr)                                                                        \
    case OP_##kind:                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                          \
            float dy = dy2p ? dyp[i] + dy2p[i] : dyp[i], s = sp[i];                                \
            dx[i] = (expr);                                                                        \
        }                                                                                          \
        return OC_OK;
        OC_POINTWISE_GRAD(PW_CASE)
#undef PW_CASE
    default: return kernel_fail(a, err, "no pointwise expression (runtime/pointwise.h)");
    }
}

/* ---- Clip ---- */

/* Bounds of a Clip / ClipGrad node: inputs 1, 2 (opset >= 11; omitted = no
 * bound), else the float attributes min / max. */
static void clip_bounds(const kernel_args *a, double *lo, double *hi, bool *has_lo, bool *has_hi) {
    const ir_tensor *x = kernel_in(a, 0);
    *has_lo = *has_hi = false;
    *lo = -INFINITY, *hi = INFINITY;
    int first = a->n->op == OP_CLIP_GRAD ? 2 : 1;
    if (a->n->n_inputs > first && a->in[first])
        *lo = cpu_load_f(a->in[first], kernel_in(a, first)->dtype, 0), *has_lo = true;
    if (a->n->n_inputs > first + 1 && a->in[first + 1])
        *hi = cpu_load_f(a->in[first + 1], kernel_in(a, first + 1)->dtype, 0), *has_hi = true;
    const op_clip_args *p = &op_args_of(a->n)->clip;
    if (p->has_min) *lo = p->min, *has_lo = true;
    if (p->has_max) *hi = p->max, *has_hi = true;
    (void)x;
}

#define CLIP_LOOP(T)                                                                               \
    do {                                                                                           \
        const T *xp = a->in[0];                                                                    \
        T *y = a->out[0];                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = xp[i];                                                                           \
            if (has_lo && (double)v < lo) v = (T)lo;                                               \
            if (has_hi && (double)v > hi) v = (T)hi;                                               \
            y[i] = v;                                                                              \
        }                                                                                          \
    } while (0)

/* X [, min, max] -> Y = min(max(X, min), max); NaN stays NaN. */
int cpu_clip(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    double lo, hi;
    bool has_lo, has_hi;
    for (int i = 1; i < a->n->n_inputs && i < 3; i++) {
        const ir_tensor *b = kernel_in(a, i);
        if (b && b->dtype != x->dtype)
            return kernel_fail(a, err, "bound '%s' has dtype %s, input has %s", b->name,
                               ir_dtype_name(b->dtype), ir_dtype_name(x->dtype));
    }
    clip_bounds(a, &lo, &hi, &has_lo, &has_hi);
    int64_t n = kernel_numel(x);
    switch (x->dtype) {
    case IR_DTYPE_FLOAT: CLIP_LOOP(float); break;
    case IR_DTYPE_DOUBLE: CLIP_LOOP(double); break;
    case IR_DTYPE_INT8: CLIP_LOOP(int8_t); break;
    case IR_DTYPE_UINT8: CLIP_LOOP(uint8_t); break;
    case IR_DTYPE_INT32: CLIP_LOOP(int32_t); break;
    case IR_DTYPE_INT64: CLIP_LOOP(int64_t); break;
    default:
        return kernel_fail(a, err,
                           "dtype %s is not supported (float, double, int8, uint8, int32, "
                           "int64)",
                           ir_dtype_name(x->dtype));
    }
    return OC_OK;
}

/* dY, X [, min, max] -> dX = dY where min < X < max, else 0. Strict bounds:
 * PyTorch's hardtanh (ReLU6, which exports as Clip) passes no gradient at
 * the bounds. */
int cpu_clip_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err))
        return OC_ERR;
    double lo, hi;
    bool has_lo, has_hi;
    clip_bounds(a, &lo, &hi, &has_lo, &has_hi);
    const float *d = a->in[0], *x = a->in[1];
    float *dx = a->out[0];
    int64_t n = kernel_numel(dy);
    for (int64_t i = 0; i < n; i++) {
        bool pass = (!has_lo || (double)x[i] > lo) && (!has_hi || (double)x[i] < hi);
        dx[i] = pass ? d[i] : 0.0f;
    }
    return OC_OK;
}

/* ---- Dropout ---- */

/* X -> Y [, mask (bool)]. Training: mask[i] = u(seed, step, node, i) >= ratio,
 * Y = X * mask / (1 - ratio). Inference or ratio 0: Y = X, mask all true. */
int cpu_dropout(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_dropout_args *p = &op_args_of(a->n)->dropout; /* ratio in [0, 1) when training */
    float ratio = p->ratio;
    bool train = p->training;
    int64_t n = kernel_numel(x);
    const float *xp = a->in[0];
    float *y = a->out[0];
    uint8_t *mask = a->n->n_outputs > 1 ? a->out[1] : NULL;
    if (!train || ratio == 0.0f) {
        memcpy(y, xp, (size_t)n * sizeof(float));
        if (mask) memset(mask, 1, (size_t)n);
        return OC_OK;
    }
    uint64_t key = cpu_rng_key(a->seed, a->step, p->key_hash);
    float scale = 1.0f / (1.0f - ratio);
    for (int64_t i = 0; i < n; i++) {
        bool keep = cpu_rng_uniform(key, (uint64_t)i) >= ratio;
        y[i] = keep ? xp[i] * scale : 0.0f;
        if (mask) mask[i] = keep;
    }
    return OC_OK;
}

/* Y (shape of input 0) = low + (high - low) * U[0, 1), U from the Dropout
 * generator keyed by (seed, step, node); input 0 is not read. */
int cpu_random_uniform_like(const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    if (kernel_want_dtype(a, y, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_random_args *p = &op_args_of(a->n)->random;
    uint64_t key = cpu_rng_key(a->seed, a->step, p->key_hash);
    float *out = a->out[0], span = p->high - p->low;
    int64_t n = kernel_numel(y);
    for (int64_t i = 0; i < n; i++) out[i] = p->low + span * cpu_rng_uniform(key, (uint64_t)i);
    return OC_OK;
}

/* dY, mask -> dX = dY * mask / (1 - ratio)  (attribute ratio) */
int cpu_dropout_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_BOOL, err))
        return OC_ERR;
    float ratio = op_args_of(a->n)->dropout.ratio; /* in [0, 1), checked at load */
    float scale = 1.0f / (1.0f - ratio);
    const float *d = a->in[0];
    const uint8_t *mask = a->in[1];
    float *dx = a->out[0];
    int64_t n = kernel_numel(dy);
    for (int64_t i = 0; i < n; i++) dx[i] = mask[i] ? d[i] * scale : 0.0f;
    return OC_OK;
}

/* ---- Add, Sum (numpy broadcasting) ---- */

/* out (op)= in broadcast to out's shape (op: BC_ASSIGN, BC_ADD, ...). */
enum {
    BC_ASSIGN,
    BC_ADD,
    BC_SUB,
    BC_MUL,
    BC_DIV,
    BC_MAX,
    BC_MIN,
    BC_FMOD,
    BC_POW,
    BC_PRELU,
    BC_IMOD
};
/* Max / Min: a NaN wins (s != s); Mod: C's fmod (exact); Pow in double, rounded once; PRelu:
 * d the input, s the slope */
#define BC_APPLY(T, d, s)                                                                          \
    ((T)(op == BC_ASSIGN ? (s)                                                                     \
         : op == BC_ADD  ? (d) + (s)                                                               \
         : op == BC_SUB  ? (d) - (s)                                                               \
         : op == BC_MUL  ? (d) * (s)                                                               \
         : op == BC_DIV  ? (d) / (s)                                                               \
         : op == BC_MAX  ? ((s) != (s) || (s) > (d) ? (s) : (d))                                   \
         : op == BC_MIN  ? ((s) != (s) || (s) < (d) ? (s) : (d))                                   \
         : op == BC_FMOD ? (T)fmod((double)(d), (double)(s))                                       \
         : op == BC_POW  ? (T)pow((double)(d), (double)(s))                                        \
         : (d) < 0       ? (d) * (s)                                                               \
                         : (d)))
/* Integers' Div and Mod (oc_int_div_mod: no input traps). */
#define BC_INT_DIV(T, d, s) ((T)oc_int_div_mod((d), (s), op == BC_DIV ? 0 : op == BC_FMOD ? 1 : 2))
/* out (op)= in broadcast, element by element through APPLY (BC_APPLY, BC_INT_DIV). */
#define BCAST_LOOP(T, APPLY)                                                                       \
    do {                                                                                           \
        const T *src = in;                                                                         \
        T *dst = out;                                                                              \
        int64_t o[IR_MAX_RANK] = {0}, off = 0;                                                     \
        for (int64_t i = 0; i < n; i++) {                                                          \
            dst[i] = APPLY(T, dst[i], src[off]);                                                   \
            for (int d = r - 1; d >= 0; d--) {                                                     \
                off += s[d];                                                                       \
                if (++o[d] < od[d]) break;                                                         \
                off -= s[d] * od[d];                                                               \
                o[d] = 0;                                                                          \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static int bcast_apply(const kernel_args *a, const ir_tensor *ti, const void *in,
                       const ir_tensor *to, void *out, int op, oc_err *err) {
    int r = to->rank;
    const int64_t *od = to->dims;
    int64_t s[IR_MAX_RANK], n = kernel_numel(to);
    cpu_bcast_strides(ti->rank, ti->dims, r, od, s);
    bool int_div = op == BC_DIV || op == BC_FMOD || op == BC_IMOD;
    if (int_div && to->dtype == IR_DTYPE_INT64) BCAST_LOOP(int64_t, BC_INT_DIV);
    else if (int_div && to->dtype == IR_DTYPE_INT32) BCAST_LOOP(int32_t, BC_INT_DIV);
    if (int_div && (to->dtype == IR_DTYPE_INT64 || to->dtype == IR_DTYPE_INT32)) return OC_OK;
    if (op > BC_MUL && to->dtype != IR_DTYPE_FLOAT && to->dtype != IR_DTYPE_DOUBLE)
        return kernel_fail(a, err, "dtype %s is not supported (float, double)",
                           ir_dtype_name(to->dtype));
    switch (to->dtype) {
    case IR_DTYPE_FLOAT: BCAST_LOOP(float, BC_APPLY); break;
    case IR_DTYPE_DOUBLE: BCAST_LOOP(double, BC_APPLY); break;
    case IR_DTYPE_INT32: BCAST_LOOP(int32_t, BC_APPLY); break;
    case IR_DTYPE_INT64: BCAST_LOOP(int64_t, BC_APPLY); break;
    case IR_DTYPE_INT8: BCAST_LOOP(int8_t, BC_APPLY); break;
    case IR_DTYPE_UINT8: BCAST_LOOP(uint8_t, BC_APPLY); break;
    default:
        return kernel_fail(a, err,
                           "dtype %s is not supported (float, double, int8, uint8, int32, "
                           "int64)",
                           ir_dtype_name(to->dtype));
    }
    return OC_OK;
}

/* A, B -> C = A + B (broadcast). */
int cpu_add(const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    for (int i = 0; i < 2; i++)
        if (kernel_in(a, i)->dtype != y->dtype)
            return kernel_fail(a, err, "inputs differ in dtype");
    if (bcast_apply(a, kernel_in(a, 0), a->in[0], y, a->out[0], BC_ASSIGN, err)) return OC_ERR;
    return bcast_apply(a, kernel_in(a, 1), a->in[1], y, a->out[0], BC_ADD, err);
}

/* A, B -> C = A - B, A * B, A / B, max, min, fmod, pow, PRelu(A, slope B) (broadcast; float,
 * double; Sub, Mul, Div and Mod (fmod 0: floored) of integers too);
 * a one-input Max / Min: C = A. */
int cpu_binary(const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    int n_in = a->n->n_inputs;
    for (int i = 0; i < n_in; i++)
        if (kernel_in(a, i)->dtype != y->dtype)
            return kernel_fail(a, err, "inputs differ in dtype");
    op_kind k = a->n->op;
    int op = k == OP_SUB          ? BC_SUB
             : k == OP_MUL        ? BC_MUL
             : k == OP_DIV        ? BC_DIV
             : k == OP_MAX        ? BC_MAX
             : k == OP_MIN        ? BC_MIN
             : k == OP_MOD        ? (op_args_of(a->n)->mod.fmod ? BC_FMOD : BC_IMOD)
             : k == OP_POW_TENSOR ? BC_POW
                                  : BC_PRELU;
    if (bcast_apply(a, kernel_in(a, 0), a->in[0], y, a->out[0], BC_ASSIGN, err)) return OC_ERR;
    if (n_in == 1) return OC_OK;
    return bcast_apply(a, kernel_in(a, 1), a->in[1], y, a->out[0], op, err);
}

/* dY, A, B -> the gradient of input `input` of Max / Min (MinMaxGrad), PRelu (PReluGrad) or
 * PowTensor (PowTensorGrad)
 * in dY's shape, A and B broadcast (pointwise.h's oc_min_max_grad, oc_prelu_grad). */
int cpu_binary_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *ta = kernel_in(a, 1), *tb = kernel_in(a, 2);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, ta, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, tb, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    const op_binary_grad_args *p = &op_args_of(a->n)->binary_grad;
    bool prelu = a->n->op == OP_PRELU_GRAD, pow_ = a->n->op == OP_POW_TENSOR_GRAD;
    int r = dy->rank;
    const int64_t *od = dy->dims;
    int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], o[IR_MAX_RANK] = {0}, oa = 0, ob = 0;
    cpu_bcast_strides(ta->rank, ta->dims, r, od, sa);
    cpu_bcast_strides(tb->rank, tb->dims, r, od, sb);
    const float *g = a->in[0], *pa = a->in[1], *pb = a->in[2];
    float *out = a->out[0];
    int64_t n = kernel_numel(dy);
    for (int64_t i = 0; i < n; i++) {
        out[i] = prelu  ? oc_prelu_grad(g[i], pa[oa], pb[ob], p->input)
                 : pow_ ? oc_pow_grad(g[i], pa[oa], pb[ob], p->input)
                        : oc_min_max_grad(g[i], pa[oa], pb[ob], p->max, p->input);
        for (int d = r - 1; d >= 0; d--) {
            oa += sa[d], ob += sb[d];
            if (++o[d] < od[d]) break;
            oa -= sa[d] * od[d], ob -= sb[d] * od[d];
            o[d] = 0;
        }
    }
    return OC_OK;
}

/* X (float), shape -> X broadcast to the output's shape. */
int cpu_expand(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (x->dtype != IR_DTYPE_INT64 && x->dtype != IR_DTYPE_INT32 &&
        kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    return bcast_apply(a, x, a->in[0], y, a->out[0], BC_ASSIGN, err);
}

/* cond (bool), X, Y (float) -> cond ? X : Y, broadcast over all three. */
int cpu_where(const kernel_args *a, oc_err *err) {
    const ir_tensor *tc = kernel_in(a, 0), *tx = kernel_in(a, 1), *ty = kernel_in(a, 2),
                    *y = kernel_out(a, 0);
    ir_dtype dt =
        tx->dtype == IR_DTYPE_INT64 || tx->dtype == IR_DTYPE_INT32 ? tx->dtype : IR_DTYPE_FLOAT;
    if (kernel_want_dtype(a, tc, IR_DTYPE_BOOL, err) || kernel_want_dtype(a, tx, dt, err) ||
        kernel_want_dtype(a, ty, dt, err))
        return OC_ERR;
    int r = y->rank;
    const int64_t *od = y->dims;
    int64_t sc[IR_MAX_RANK], sx[IR_MAX_RANK], sy[IR_MAX_RANK], o[IR_MAX_RANK] = {0};
    int64_t oc = 0, ox = 0, oy = 0;
    cpu_bcast_strides(tc->rank, tc->dims, r, od, sc);
    cpu_bcast_strides(tx->rank, tx->dims, r, od, sx);
    cpu_bcast_strides(ty->rank, ty->dims, r, od, sy);
    const uint8_t *pc = a->in[0];
    size_t es = (size_t)ir_dtype_size(dt); /* float32, int64 or int32: copied as bytes */
    const char *px = a->in[1], *py = a->in[2];
    char *out = a->out[0];
    int64_t n = kernel_numel(y);
    for (int64_t i = 0; i < n; i++) {
        const char *src = pc[oc] ? px + (size_t)ox * es : py + (size_t)oy * es;
        if (es == 8) memcpy(out + (size_t)i * 8, src, 8); /* constant sizes: inlined copies */
        else memcpy(out + (size_t)i * 4, src, 4);
        for (int d = r - 1; d >= 0; d--) {
            oc += sc[d], ox += sx[d], oy += sy[d];
            if (++o[d] < od[d]) break;
            oc -= sc[d] * od[d], ox -= sx[d] * od[d], oy -= sy[d] * od[d];
            o[d] = 0;
        }
    }
    return OC_OK;
}

/* dY, cond -> dY where cond == select, else 0 (cond broadcast to dY). */
int cpu_where_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *tdy = kernel_in(a, 0), *tc = kernel_in(a, 1);
    if (kernel_want_dtype(a, tdy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, tc, IR_DTYPE_BOOL, err))
        return OC_ERR;
    int r = tdy->rank;
    const int64_t *od = tdy->dims;
    int64_t sc[IR_MAX_RANK], o[IR_MAX_RANK] = {0}, oc = 0;
    cpu_bcast_strides(tc->rank, tc->dims, r, od, sc);
    const uint8_t *pc = a->in[1];
    const float *dy = a->in[0];
    float *out = a->out[0];
    bool select = op_args_of(a->n)->where.select;
    int64_t n = kernel_numel(tdy);
    for (int64_t i = 0; i < n; i++) {
        out[i] = (pc[oc] != 0) == select ? dy[i] : 0.0f;
        for (int d = r - 1; d >= 0; d--) {
            oc += sc[d];
            if (++o[d] < od[d]) break;
            oc -= sc[d] * od[d];
            o[d] = 0;
        }
    }
    return OC_OK;
}

/* X1..Xk -> Y = ((X1 + X2) + X3) + ... (broadcast, this order). */
int cpu_sum(const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    for (int i = 0; i < a->n->n_inputs; i++) {
        if (kernel_in(a, i)->dtype != y->dtype)
            return kernel_fail(a, err, "inputs differ in dtype");
        if (bcast_apply(a, kernel_in(a, i), a->in[i], y, a->out[0], i == 0 ? BC_ASSIGN : BC_ADD,
                        err))
            return OC_ERR;
    }
    return OC_OK;
}

/* dY -> dX (input_shape) = scale * dY broadcast (BroadcastTo; dY's shape
 * right-aligned in dX's rank by the decoder). */
int cpu_broadcast_to(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, dx, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    const op_reduce_args *p = &op_args_of(a->n)->reduce;
    if (p->rank != dx->rank) return kernel_fail(a, err, "dY's shape does not have dX's rank");
    int r = dx->rank;
    const int64_t *od = dx->dims;
    int64_t s[IR_MAX_RANK], n = kernel_numel(dx);
    cpu_bcast_strides(p->rank, p->dims, r, od, s);
    const float *d = a->in[0];
    float *out = a->out[0], scale = p->scale;
    int64_t o[IR_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < n; i++) {
        out[i] = d[off] * scale;
        for (int k = r - 1; k >= 0; k--) {
            off += s[k];
            if (++o[k] < od[k]) break;
            off -= s[k] * od[k];
            o[k] = 0;
        }
    }
    return OC_OK;
}

/* dY (broadcast shape) -> dX (input_shape) = scale * dY summed over the dims
 * dX was broadcast along (attribute scale, default 1). Double accumulation in
 * dY's element order. */
int cpu_reduce_sum_to(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, dx, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    const op_reduce_args *p = &op_args_of(a->n)->reduce;
    if (p->rank != dy->rank) return kernel_fail(a, err, "the reduced shape's rank is not dY's");
    float scale = p->scale;
    int r = dy->rank;
    const int64_t *od = dy->dims;
    int64_t s[IR_MAX_RANK], n = kernel_numel(dy), m = kernel_numel(dx);
    cpu_bcast_strides(p->rank, p->dims, r, od, s);
    double *acc = oc_calloc((size_t)(m ? m : 1), sizeof(double));
    const float *d = a->in[0];
    int64_t o[IR_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < n; i++) {
        acc[off] += d[i];
        for (int k = r - 1; k >= 0; k--) {
            off += s[k];
            if (++o[k] < od[k]) break;
            off -= s[k] * od[k];
            o[k] = 0;
        }
    }
    float *out = a->out[0];
    for (int64_t i = 0; i < m; i++) out[i] = (float)(acc[i] * scale);
    oc_free(acc);
    return OC_OK;
}
