/* cuda_kernels.c — the cuda backend's dispatch table (one row per op of the
 * list, ir/ops/op_list.h: cuda_<kern>) and the host side of the small kernels:
 * take the decoded arguments (op_args_of) and shapes, check dtypes, call a
 * cuda_launch.h launcher. cuDNN / cuBLAS kernels are in cuda_conv.c,
 * cuda_norm.c, cuda_gemm.c and cuda_attention_gemm.c. */
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu_rng.h"
#include "cuda_internal.h"
#include "cast_rule.h"
#include "predicate.h"
#include "topk_order.h"
#include "ir/ops/op_update.h"

/* ---- helpers ---- */

static int dtype_of(const kernel_args *a, const ir_tensor *t, cu_dtype *dt, oc_err *err) {
    switch (t->dtype) {
    case IR_DTYPE_FLOAT: *dt = CU_DT_F32; return OC_OK;
    case IR_DTYPE_DOUBLE: *dt = CU_DT_F64; return OC_OK;
    case IR_DTYPE_INT64: *dt = CU_DT_I64; return OC_OK;
    case IR_DTYPE_INT32: *dt = CU_DT_I32; return OC_OK;
    case IR_DTYPE_INT8: *dt = CU_DT_I8; return OC_OK;
    case IR_DTYPE_UINT8:
    case IR_DTYPE_BOOL: *dt = CU_DT_U8; return OC_OK;
    default:
        return kernel_fail(a, err,
                           "tensor '%s' has dtype %s (float, double, int64, int32, int8, "
                           "uint8 supported)",
                           t->name, ir_dtype_name(t->dtype));
    }
}

static cu_shape shape_of(const ir_tensor *t) {
    cu_shape s = {.rank = t->rank};
    for (int i = 0; i < t->rank; i++) s.d[i] = t->dims[i];
    return s;
}

static bool same_dims(const ir_tensor *x, const ir_tensor *y) {
    if (x->rank != y->rank) return false;
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] != y->dims[i]) return false;
    return true;
}

static int64_t prod(const int64_t *d, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

static size_t esize(const kernel_args *a, const ir_tensor *t, oc_err *err) {
    int s = ir_dtype_size(t->dtype);
    if (s <= 0)
        kernel_fail(a, err, "tensor '%s' has unsupported dtype %s", t->name,
                    ir_dtype_name(t->dtype));
    return (size_t)(s > 0 ? s : 0);
}

/* ---- elementwise ---- */

/* A half y = a (op) b, two inputs (cuda_native_half): of y's type, or float32 scalars. */
static int binary_half(const cuda_ctx *c, const kernel_args *a, int op, oc_err *err) {
    (void)err;
    const ir_tensor *y = kernel_out(a, 0), *l = kernel_in(a, 0), *r = kernel_in(a, 1);
    int ky = cuda_float_kind(y->dtype);
    if (op == CU_BC_ADD && same_dims(l, y) && same_dims(r, y) && l->dtype == y->dtype &&
        r->dtype == y->dtype) {
        CU_LAUNCH(cu_add2_half(c->stream, ky, a->in[0], a->in[1], a->out[0], kernel_numel(y)));
        return OC_OK;
    }
    CU_LAUNCH(cu_binary_half(c->stream, cuda_float_kind(l->dtype), a->in[0], shape_of(l),
                             cuda_float_kind(r->dtype), a->in[1], shape_of(r), ky, a->out[0],
                             shape_of(y), op));
    return OC_OK;
}

/* A half y = in_0 + .. + in_k (k > 2; cuda_native_half). */
static int sum_half(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    cu_sum_in in = {.n = a->n->n_inputs};
    if (in.n > CU_SUM_MAX) return kernel_fail(a, err, "more than %d inputs", CU_SUM_MAX);
    for (int j = 0; j < in.n; j++) {
        in.p[j] = a->in[j];
        in.shape[j] = shape_of(kernel_in(a, j));
        in.kind[j] = cuda_float_kind(kernel_in(a, j)->dtype);
    }
    CU_LAUNCH(cu_sum_half(c->stream, in, cuda_float_kind(y->dtype), a->out[0], shape_of(y)));
    return OC_OK;
}

static int add_sum(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    if (ir_dtype_is_half(y->dtype))
        return a->n->n_inputs == 2 ? binary_half(c, a, CU_BC_ADD, err) : sum_half(c, a, err);
    cu_dtype dt;
    if (dtype_of(a, y, &dt, err)) return OC_ERR;
    int n_in = a->n->n_inputs, i = 0;
    for (int k = 0; k < n_in; k++)
        if (kernel_in(a, k)->dtype != y->dtype)
            return kernel_fail(a, err, "inputs differ in dtype");
    /* Two inputs of the output's shape (the residual Add, a 2-way gradient Sum): one pass. */
    if (n_in >= 2 && same_dims(kernel_in(a, 0), y) && same_dims(kernel_in(a, 1), y)) {
        CU_LAUNCH(cu_add2(c->stream, dt, a->in[0], a->in[1], a->out[0], kernel_numel(y)));
        i = 2;
    } else if (n_in == 2 && (dt == CU_DT_F32 || dt == CU_DT_F64)) { /* a bias: one pass */
        CU_LAUNCH(cu_binary(c->stream, dt, a->in[0], shape_of(kernel_in(a, 0)), a->in[1],
                            shape_of(kernel_in(a, 1)), a->out[0], shape_of(y), CU_BC_ADD));
        return OC_OK;
    }
    for (; i < n_in; i++)
        CU_LAUNCH(cu_bcast_accumulate(c->stream, dt, a->in[i], shape_of(kernel_in(a, i)), a->out[0],
                                      shape_of(y), i == 0));
    return OC_OK;
}

int cuda_add(const cuda_ctx *c, const kernel_args *a, oc_err *err) { return add_sum(c, a, err); }

/* A, B -> C = A - B, A * B, A / B, max, min, fmod, pow, PRelu(A, slope B) (broadcast; float,
 * double, half: cuda_native_half); a one-input Max / Min: C = A. */
int cuda_binary(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    op_kind k = a->n->op;
    int op = k == OP_SUB          ? CU_BC_SUB
             : k == OP_MUL        ? CU_BC_MUL
             : k == OP_DIV        ? CU_BC_DIV
             : k == OP_MAX        ? CU_BC_MAX
             : k == OP_MIN        ? CU_BC_MIN
             : k == OP_MOD        ? (op_args_of(a->n)->mod.fmod ? CU_BC_FMOD : CU_BC_IMOD)
             : k == OP_POW_TENSOR ? CU_BC_POW
                                  : CU_BC_PRELU;
    if (ir_dtype_is_half(y->dtype)) return binary_half(c, a, op, err);
    cu_dtype dt;
    if (dtype_of(a, y, &dt, err)) return OC_ERR;
    bool int_arith = (dt == CU_DT_I64 || dt == CU_DT_I32) &&
                     (op == CU_BC_SUB || op == CU_BC_MUL || op == CU_BC_DIV || op == CU_BC_FMOD ||
                      op == CU_BC_IMOD);
    if (dt != CU_DT_F32 && dt != CU_DT_F64 && !int_arith)
        return kernel_fail(
            a, err, "dtype %s is not supported (float, double; Sub, Mul, Div, Mod: int64, int32)",
            ir_dtype_name(y->dtype));
    int n_in = a->n->n_inputs;
    for (int i = 0; i < n_in; i++)
        if (kernel_in(a, i)->dtype != y->dtype)
            return kernel_fail(a, err, "inputs differ in dtype");
    if (n_in == 1) {
        CU_LAUNCH(cu_bcast_apply(c->stream, dt, a->in[0], shape_of(kernel_in(a, 0)), a->out[0],
                                 shape_of(y), CU_BC_ASSIGN));
        return OC_OK;
    }
    CU_LAUNCH(cu_binary(c->stream, dt, a->in[0], shape_of(kernel_in(a, 0)), a->in[1],
                        shape_of(kernel_in(a, 1)), a->out[0], shape_of(y), op));
    return OC_OK;
}

/* dY, A, B -> the gradient of Max's / Min's, PRelu's or PowTensor's input `input` in dY's
 * shape (float). */
int cuda_binary_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *ta = kernel_in(a, 1), *tb = kernel_in(a, 2);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, ta, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, tb, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    const op_binary_grad_args *p = &op_args_of(a->n)->binary_grad;
    CU_LAUNCH(cu_binary_grad(c->stream, a->in[0], shape_of(dy), a->in[1], shape_of(ta), a->in[2],
                             shape_of(tb), a->out[0],
                             a->n->op == OP_PRELU_GRAD        ? CU_BG_PRELU
                             : a->n->op == OP_POW_TENSOR_GRAD ? CU_BG_POW
                                                              : CU_BG_MIN_MAX,
                             p->max, p->input));
    return OC_OK;
}

/* dY -> dX = scale * dY broadcast (BroadcastTo). */
int cuda_broadcast_to(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, dx, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    const op_reduce_args *p = &op_args_of(a->n)->reduce;
    if (p->rank != dx->rank) return kernel_fail(a, err, "dY's shape does not have dX's rank");
    cu_shape kept = {.rank = p->rank};
    for (int i = 0; i < p->rank; i++) kept.d[i] = p->dims[i];
    CU_LAUNCH(cu_broadcast_to(c->stream, a->in[0], kept, a->out[0], shape_of(dx), p->scale));
    return OC_OK;
}
int cuda_sum(const cuda_ctx *c, const kernel_args *a, oc_err *err) { return add_sum(c, a, err); }

static size_t reduce_sum_to_scratch(const ir_graph *g, const ir_node *n);

int cuda_reduce_sum_to(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    if (!(ir_dtype_is_half(dy->dtype) && dx->dtype == dy->dtype) && /* cuda_native_half */
        (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
         kernel_want_dtype(a, dx, IR_DTYPE_FLOAT, err)))
        return OC_ERR;
    const op_reduce_args *p = &op_args_of(a->n)->reduce;
    if (p->rank != dy->rank) return kernel_fail(a, err, "the reduced shape's rank is not dY's");
    cu_shape kept = {.rank = p->rank};
    for (int i = 0; i < p->rank; i++) kept.d[i] = p->dims[i];
    OC_ASSERT(a->scratch_bytes >= reduce_sum_to_scratch(a->g, a->n));
    CU_LAUNCH(cu_reduce_sum_to(c->stream, cuda_float_kind(dy->dtype), a->in[0], shape_of(dy),
                               a->out[0], kept, p->scale, a->scratch));
    return OC_OK;
}

/* cu_reduce_sum_to's partial sums */
static size_t reduce_sum_to_scratch(const ir_graph *g, const ir_node *n) {
    const op_reduce_args *p = &op_args_of(n)->reduce;
    cu_shape ys = shape_of(&g->tensors[n->inputs[0]]), kept = {.rank = p->rank};
    for (int i = 0; i < p->rank && i < CU_MAX_RANK; i++) kept.d[i] = p->dims[i];
    if (p->rank != ys.rank) return 0; /* refused when run */
    return (size_t)cu_sum_to_scratch(ys, kept) * sizeof(double);
}

/* Clip bounds: device scalar inputs (first, first + 1) or the decoded attributes min/max. */
typedef struct clip_b {
    const void *lo_p, *hi_p;
    cu_dtype lo_dt, hi_dt;
    int has_lo_a, has_hi_a;
    double lo_a, hi_a;
} clip_b;

static int clip_bounds(const kernel_args *a, int first, clip_b *b, oc_err *err) {
    memset(b, 0, sizeof *b);
    const ir_tensor *tl = kernel_in(a, first), *th = kernel_in(a, first + 1);
    if (tl && a->in[first]) {
        if (dtype_of(a, tl, &b->lo_dt, err)) return OC_ERR;
        b->lo_p = a->in[first];
    }
    if (th && a->in[first + 1]) {
        if (dtype_of(a, th, &b->hi_dt, err)) return OC_ERR;
        b->hi_p = a->in[first + 1];
    }
    const op_clip_args *p = &op_args_of(a->n)->clip;
    b->has_lo_a = p->has_min, b->lo_a = p->min;
    b->has_hi_a = p->has_max, b->hi_a = p->max;
    return OC_OK;
}

int cuda_clip(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    cu_dtype dt;
    clip_b b;
    if (dtype_of(a, x, &dt, err) || clip_bounds(a, 1, &b, err)) return OC_ERR;
    if (x->dtype == IR_DTYPE_BOOL) return kernel_fail(a, err, "dtype bool is not supported");
    for (int i = 1; i < a->n->n_inputs && i < 3; i++) {
        const ir_tensor *t = kernel_in(a, i);
        if (t && t->dtype != x->dtype)
            return kernel_fail(a, err, "bound '%s' has dtype %s, input has %s", t->name,
                               ir_dtype_name(t->dtype), ir_dtype_name(x->dtype));
    }
    CU_LAUNCH(cu_clip(c->stream, dt, a->in[0], a->out[0], kernel_numel(x), b.lo_p, b.hi_p,
                      b.has_lo_a, b.lo_a, b.has_hi_a, b.hi_a));
    return OC_OK;
}

int cuda_clip_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    clip_b b;
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err) || clip_bounds(a, 2, &b, err))
        return OC_ERR;
    CU_LAUNCH(cu_clip_grad(c->stream, a->in[0], a->in[1], a->out[0], kernel_numel(dy), b.lo_p,
                           b.lo_dt, b.hi_p, b.hi_dt, b.has_lo_a, b.lo_a, b.has_hi_a, b.hi_a));
    return OC_OK;
}

/* p0, p1 of a pointwise op (op_pointwise_args), 0 for ops without. */
static op_pointwise_args pointwise_params(const ir_node *n) {
    op_pointwise_args z = {0.0f, 0.0f};
    return n->args ? op_args_of(n)->pointwise : z;
}

/* The pointwise ops (runtime/pointwise.h). */
int cuda_pointwise(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (!ir_dtype_is_half(x->dtype) && kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    op_pointwise_args p = pointwise_params(a->n);
    CU_LAUNCH(cu_pointwise(c->stream, a->n->op, cuda_float_kind(x->dtype), a->in[0], a->out[0],
                           kernel_numel(x), p.p0, p.p1));
    return OC_OK;
}

/* dY, S (the saved tensor) [, dY2: a second partial of dY] -> dX. */
int cuda_pointwise_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dy2 = kernel_in(a, 2);
    if (!ir_dtype_is_half(dy->dtype) &&
        (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
         kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err)))
        return OC_ERR;
    if (dy2 && dy2->dtype != dy->dtype) return kernel_fail(a, err, "dY and dY2 differ in type");
    op_pointwise_args p = pointwise_params(a->n);
    CU_LAUNCH(cu_pointwise_grad(c->stream, a->n->op, cuda_float_kind(dy->dtype), a->in[0],
                                dy2 ? a->in[2] : NULL, a->in[1], a->out[0], kernel_numel(dy), p.p0,
                                p.p1));
    return OC_OK;
}

/* ReluGradBias (dY, Y -> dZ, dB over all but the channels): one pass; float32
 * or one half type (read widened, stored rounded once). */
static void relu_grad_bias_dims(const ir_graph *g, const ir_node *n, int64_t *N, int64_t *C,
                                int64_t *S) {
    const ir_tensor *dy = &g->tensors[n->inputs[0]]; /* the node's view: (N, C, ..) dims */
    *N = dy->dims[0], *C = dy->dims[1], *S = 1;
    for (int i = 2; i < dy->rank; i++) *S *= dy->dims[i];
}

static size_t relu_grad_bias_scratch(const ir_graph *g, const ir_node *n) {
    int64_t N, C, S;
    relu_grad_bias_dims(g, n, &N, &C, &S);
    int64_t parts = n->channels_last ? cu_channel_parts(N * S, C) : N;
    return (size_t)((parts > 0 ? parts : 1) * (C > 0 ? C : 1)) * sizeof(double);
}

int cuda_relu_grad_bias(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    if (!ir_dtype_is_half(dy->dtype) && kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    if (kernel_in(a, 1)->dtype != dy->dtype) return kernel_fail(a, err, "dY and Y differ in type");
    int64_t N, C, S;
    relu_grad_bias_dims(a->g, a->n, &N, &C, &S);
    CU_LAUNCH(cu_relu_grad_bias(c->stream, cuda_float_kind(dy->dtype), a->in[0], a->in[1],
                                a->out[0], a->out[1], cuda_float_kind(kernel_out(a, 1)->dtype), N,
                                C, S, a->n->channels_last, a->scratch));
    return OC_OK;
}

/* Dropout: the decoded ratio and training flag (plan-time values, as cpu_dropout
 * reads them); the same RNG key (cpu_rng_key), so masks agree bit for bit. */
int cuda_dropout(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (!ir_dtype_is_half(x->dtype) && kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_dropout_args *p = &op_args_of(a->n)->dropout; /* ratio in [0, 1) when training */
    uint8_t *mask = a->n->n_outputs > 1 ? a->out[1] : NULL;
    cu_rng key = {cpu_rng_seeded(a->seed), p->key_hash, c->im->step_dev};
    CU_LAUNCH(cu_dropout(c->stream, cuda_float_kind(x->dtype), a->in[0], a->out[0], mask,
                         kernel_numel(x), key, p->ratio, p->training));
    return OC_OK;
}

/* The same numbers as cpu_random_uniform_like (same key, same generator). */
int cuda_random_uniform_like(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    if (kernel_want_dtype(a, y, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_random_args *p = &op_args_of(a->n)->random;
    cu_rng key = {cpu_rng_seeded(a->seed), p->key_hash, c->im->step_dev};
    CU_LAUNCH(cu_random_uniform(c->stream, a->out[0], kernel_numel(y), key, p->low, p->high));
    return OC_OK;
}

/* cpu_predicate: comparisons and logic of two operands of one type, broadcast; Not,
 * IsNaN, IsInf of one. */
int cuda_predicate(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    int code = oc_pred_code(a->n->op);
    const ir_tensor *ta = kernel_in(a, 0), *y = kernel_out(a, 0);
    const ir_tensor *tb = oc_pred_unary(code) ? ta : kernel_in(a, 1);
    cu_dtype dt;
    if (kernel_want_dtype(a, y, IR_DTYPE_BOOL, err) || dtype_of(a, ta, &dt, err)) return OC_ERR;
    bool unary_ok = code == OC_PRED_NOT ? ta->dtype == IR_DTYPE_BOOL : dt == CU_DT_F32;
    bool binary_ok =
        dt == CU_DT_F32 || dt == CU_DT_I64 || dt == CU_DT_I32 || ta->dtype == IR_DTYPE_BOOL;
    if (tb->dtype != ta->dtype || !(oc_pred_unary(code) ? unary_ok : binary_ok))
        return kernel_fail(a, err,
                           "inputs '%s' (%s) and '%s' (%s): this kernel compares two tensors "
                           "of one type, float32, int64, int32 or bool",
                           ta->name, ir_dtype_name(ta->dtype), tb->name, ir_dtype_name(tb->dtype));
    const op_predicate_args *p = &op_args_of(a->n)->predicate;
    CU_LAUNCH(cu_predicate(c->stream, code, dt, a->in[0], shape_of(ta),
                           a->in[oc_pred_unary(code) ? 0 : 1], shape_of(tb), a->out[0], shape_of(y),
                           p->detect_pos, p->detect_neg));
    return OC_OK;
}

/* cpu_expand */
int cuda_expand(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    int dt = x->dtype == IR_DTYPE_INT64 ? CU_DT_I64 : x->dtype == IR_DTYPE_INT32 ? CU_DT_I32 : -1;
    if (dt < 0 && kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    CU_LAUNCH(cu_bcast_apply(c->stream, dt < 0 ? CU_DT_F32 : dt, a->in[0], shape_of(x), a->out[0],
                             shape_of(y), CU_BC_ASSIGN));
    return OC_OK;
}

int cuda_where(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *tc = kernel_in(a, 0), *tx = kernel_in(a, 1), *ty = kernel_in(a, 2),
                    *y = kernel_out(a, 0);
    if (ir_dtype_is_half(y->dtype)) { /* cuda_native_half */
        if (kernel_want_dtype(a, tc, IR_DTYPE_BOOL, err)) return OC_ERR;
        CU_LAUNCH(cu_where_half(c->stream, a->in[0], shape_of(tc), cuda_float_kind(tx->dtype),
                                a->in[1], shape_of(tx), cuda_float_kind(ty->dtype), a->in[2],
                                shape_of(ty), cuda_float_kind(y->dtype), a->out[0], shape_of(y)));
        return OC_OK;
    }
    if (tx->dtype == IR_DTYPE_INT64 || tx->dtype == IR_DTYPE_INT32) { /* index glue */
        if (kernel_want_dtype(a, tc, IR_DTYPE_BOOL, err) ||
            kernel_want_dtype(a, ty, tx->dtype, err))
            return OC_ERR;
        CU_LAUNCH(cu_where_int(c->stream, ir_dtype_size(tx->dtype), a->in[0], shape_of(tc),
                               a->in[1], shape_of(tx), a->in[2], shape_of(ty), a->out[0],
                               shape_of(y)));
        return OC_OK;
    }
    if (kernel_want_dtype(a, tc, IR_DTYPE_BOOL, err) ||
        kernel_want_dtype(a, tx, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, ty, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    CU_LAUNCH(cu_where(c->stream, a->in[0], shape_of(tc), a->in[1], shape_of(tx), a->in[2],
                       shape_of(ty), a->out[0], shape_of(y)));
    return OC_OK;
}

int cuda_where_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *tdy = kernel_in(a, 0), *tc = kernel_in(a, 1);
    if ((!ir_dtype_is_half(tdy->dtype) && kernel_want_dtype(a, tdy, IR_DTYPE_FLOAT, err)) ||
        kernel_want_dtype(a, tc, IR_DTYPE_BOOL, err))
        return OC_ERR;
    CU_LAUNCH(cu_where_grad(c->stream, cuda_float_kind(tdy->dtype), a->in[0], a->in[1],
                            shape_of(tc), shape_of(tdy), a->out[0],
                            op_args_of(a->n)->where.select));
    return OC_OK;
}

int cuda_dropout_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    if ((!ir_dtype_is_half(dy->dtype) && kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err)) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_BOOL, err))
        return OC_ERR;
    float ratio = op_args_of(a->n)->dropout.ratio; /* in [0, 1), checked at load */
    CU_LAUNCH(cu_dropout_grad(c->stream, cuda_float_kind(dy->dtype), a->in[0], a->in[1], a->out[0],
                              kernel_numel(dy), 1.0f / (1.0f - ratio)));
    return OC_OK;
}

/* The members of an update node (op_update.h) as the launcher's table; *scale: the
 * ClipGradNorm / GradScaler factor (device) or NULL. Owned by the caller (oc_free). */
static cu_update_member *update_members(const kernel_args *a, op_update_layout *l,
                                        const float **scale, oc_err *err) {
    if (kernel_update_layout(a, l, err)) return NULL;
    cu_update_member *m = oc_calloc((size_t)l->members, sizeof *m);
    for (int k = 0; k < l->members; k++) {
        int in = k * l->width, out = k * l->out_width;
        m[k] = (cu_update_member){.w = a->in[in],
                                  .dw = a->in[in + 1],
                                  .m = a->in[in + 2],
                                  .v = l->width > 3 ? a->in[in + 3] : NULL,
                                  .wo = a->out[out],
                                  .mo = a->out[out + 1],
                                  .vo = l->out_width > 2 ? a->out[out + 2] : NULL,
                                  .n = kernel_numel(kernel_in(a, in))};
        if (l->counts >= 0)
            m[k].count = a->in[l->counts + k],
            m[k].count_out = a->out[l->out_width * l->members + k];
    }
    *scale = l->scale >= 0 ? a->in[l->scale] : NULL;
    return m;
}

int cuda_sgd_momentum(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    op_update_layout l;
    const float *scale;
    cu_update_member *m = update_members(a, &l, &scale, err);
    if (!m) return OC_ERR;
    const op_sgd_args *p = &op_args_of(a->n)->sgd;
    int rc = cu_sgd_momentum(c->stream, m, l.members, scale, p->lr, p->momentum, p->weight_decay);
    oc_free(m);
    CU_LAUNCH(rc);
    return OC_OK;
}

/* cpu_adamw: the step's bias corrections, in double, from the step in device
 * memory (a captured step replays with the current one). */
int cuda_adamw(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    op_update_layout l;
    const float *scale;
    cu_update_member *m = update_members(a, &l, &scale, err);
    if (!m) return OC_ERR;
    const op_adamw_args *p = &op_args_of(a->n)->adamw;
    int rc = cu_adamw(c->stream, m, l.members, scale, p->beta1, p->beta2, p->epsilon,
                      1.0f - p->lr * p->weight_decay, p->lr, c->im->step_dev);
    oc_free(m);
    CU_LAUNCH(rc);
    return OC_OK;
}

/* cpu_clip_grad_norm: the squares summed tensor by tensor into the first
 * double of scratch (cuda_kernel_scratch), then the scale. */
static int sum_squares(const cuda_ctx *c, const kernel_args *a, int from, oc_err *err) {
    OC_ASSERT(a->scratch_bytes >= (1 + CU_SUMSQ_SLOTS) * sizeof(double));
    for (int k = from; k < a->n->n_inputs; k++) {
        const ir_tensor *t = kernel_in(a, k);
        if (kernel_want_dtype(a, t, IR_DTYPE_FLOAT, err)) return OC_ERR;
        CU_LAUNCH(cu_sumsq(c->stream, a->in[k], kernel_numel(t), a->scratch, k == from));
    }
    return OC_OK;
}

int cuda_clip_grad_norm(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const op_clip_norm_args *p = &op_args_of(a->n)->clip_norm;
    if (sum_squares(c, a, p->prescaled ? 1 : 0, err)) return OC_ERR;
    CU_LAUNCH(cu_clip_scale(c->stream, a->scratch, a->out[0], p->max_norm,
                            p->prescaled ? a->in[0] : NULL));
    return OC_OK;
}

/* cpu_grad_scaler: every gradient's squares summed (finite iff all are), then
 * one thread for the coefficient and the state. */
int cuda_grad_scaler(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const op_grad_scaler_args *p = &op_args_of(a->n)->grad_scaler;
    if (sum_squares(c, a, 2, err)) return OC_ERR;
    CU_LAUNCH(cu_grad_scaler(c->stream, a->scratch, a->in[0], a->in[1], a->out[0], a->out[1],
                             a->out[2], p->growth, p->backoff, (float)p->interval));
    return OC_OK;
}

/* ---- pooling ---- */

static int pool_window(const kernel_args *a, const ir_tensor *x, const ir_tensor *y, cu_window *w,
                       oc_err *err) {
    if (!(ir_dtype_is_half(x->dtype) && y->dtype == x->dtype) && /* half: cuda_native_half */
        (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err) ||
         kernel_want_dtype(a, y, IR_DTYPE_FLOAT, err)))
        return OC_ERR;
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > 3) return kernel_fail(a, err, "%d spatial dims (1 to 3 supported)", nsp);
    const op_window *ow = &op_args_of(a->n)->pool.win;
    memset(w, 0, sizeof *w);
    w->nsp = nsp;
    w->chan = a->n->channels_last ? x->dims[1] : 0; /* the view's logical (N, C, ..) dims */
    w->img_size = w->col_size = w->k_size = 1;
    for (int i = 0; i < nsp; i++) {
        w->img[i] = x->dims[2 + i];
        w->col[i] = y->dims[2 + i];
        w->kernel[i] = ow->kernel[i];
        w->stride[i] = ow->stride[i];
        w->dilation[i] = ow->dilation[i];
        w->pad[i] = ow->pad_begin[i];
        w->pad_end[i] = ow->pad_end[i];
        w->img_size *= w->img[i];
        w->col_size *= w->col[i];
        w->k_size *= w->kernel[i];
    }
    return OC_OK;
}

int cuda_max_pool(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (cuda_pool_uses_cudnn(a->g, a->n)) return cuda_max_pool_cudnn(c, a, err);
    cu_window w;
    if (pool_window(a, x, y, &w, err)) return OC_ERR;
    int64_t *ind = a->n->n_outputs > 1 ? a->out[1] : NULL;
    CU_LAUNCH(cu_max_pool(c->stream, cuda_float_kind(x->dtype), a->in[0], a->out[0], ind,
                          x->dims[0] * x->dims[1], w, op_args_of(a->n)->pool.storage_col_major));
    return OC_OK;
}

/* Own kernel (cuDNN's pooling backward needs Y, and with Y recomputed took 13.5 ms
 * on ResNet-50's stem at batch 640 on the H100, this 8.1 ms): windows' argmax into
 * the scratch (int32 per output), then a gather; without scratch the argmax is
 * found per covered cell. */
int cuda_max_pool_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *x = kernel_in(a, 1);
    cu_window w;
    if (pool_window(a, x, dy, &w, err)) return OC_ERR;
    size_t need = cuda_max_pool_grad_scratch(a->g, a->n);
    int32_t *arg = need > 0 && a->scratch && a->scratch_bytes >= need ? a->scratch : NULL;
    CU_LAUNCH(cu_max_pool_grad(c->stream, cuda_float_kind(x->dtype), a->in[0], a->in[1], a->out[0],
                               x->dims[0] * x->dims[1], w, arg));
    return OC_OK;
}

size_t cuda_max_pool_grad_scratch(const ir_graph *g, const ir_node *n) {
    const ir_tensor *dy = &g->tensors[n->inputs[0]], *x = &g->tensors[n->inputs[1]];
    int64_t plane = 1, ny = 0;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    if (!ir_tensor_numel(dy, &ny) || plane > INT32_MAX) return 0; /* int32 index in a plane */
    return (size_t)ny * sizeof(int32_t);
}

int cuda_average_pool(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    cu_window w;
    if (pool_window(a, x, y, &w, err)) return OC_ERR;
    CU_LAUNCH(cu_average_pool(c->stream, cuda_float_kind(x->dtype), a->in[0], a->out[0],
                              x->dims[0] * x->dims[1], w,
                              op_args_of(a->n)->pool.count_include_pad));
    return OC_OK;
}

int cuda_average_pool_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *x = kernel_out(a, 0);
    cu_window w;
    if (pool_window(a, x, dy, &w, err)) return OC_ERR;
    CU_LAUNCH(cu_average_pool_grad(c->stream, cuda_float_kind(x->dtype), a->in[0], a->out[0],
                                   x->dims[0] * x->dims[1], w,
                                   op_args_of(a->n)->pool.count_include_pad));
    return OC_OK;
}

static int gap(const cuda_ctx *c, const kernel_args *a, oc_err *err, bool grad) {
    const ir_tensor *x = grad ? kernel_out(a, 0) : kernel_in(a, 0);
    if (!ir_dtype_is_half(x->dtype) && kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t planes = x->dims[0] * x->dims[1], S = kernel_numel(x) / (planes ? planes : 1);
    int64_t chan = a->n->channels_last ? x->dims[1] : 0;
    int k = cuda_float_kind(x->dtype);
    if (grad)
        CU_LAUNCH(cu_global_average_pool_grad(c->stream, k, a->in[0], a->out[0], planes, S, chan));
    else CU_LAUNCH(cu_global_average_pool(c->stream, k, a->in[0], a->out[0], planes, S, chan));
    return OC_OK;
}

int cuda_global_average_pool(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return gap(c, a, err, false);
}
int cuda_global_average_pool_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return gap(c, a, err, true);
}

/* ---- data movement ---- */

int cuda_copy(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (kernel_numel(x) != kernel_numel(y) || x->dtype != y->dtype)
        return kernel_fail(a, err, "input '%s' and output '%s' differ in size or dtype", x->name,
                           y->name);
    size_t n = (size_t)kernel_numel(x) * es;
    if (n && a->out[0] != a->in[0]) /* equal: an in-place view (train_view_source) */
        CU_CHECK(cudaMemcpyAsync(a->out[0], a->in[0], n, cudaMemcpyDeviceToDevice, c->stream));
    return OC_OK;
}

/* Resize / ResizeGrad: see cpu_resize.c. */
static int resize_run(const cuda_ctx *c, const kernel_args *a, bool grad, oc_err *err) {
    const ir_tensor *in = kernel_in(a, 0), *out = kernel_out(a, 0);
    if (kernel_want_dtype(a, in, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_resize_args *p = &op_args_of(a->n)->resize;
    const ir_tensor *small = grad ? out : in, *big = grad ? in : out;
    if (small->rank != p->nsp + 2 || big->rank != p->nsp + 2)
        return kernel_fail(a, err, "the spatial rank is not the tensors'");
    oc_resize_kind k = kernel_resize_kind(a);
    CU_LAUNCH(cu_resize(c->stream, a->in[0], a->out[0], grad, p->nsp, &k, small->dims + 2,
                        big->dims + 2, p->scale, small->dims[0] * small->dims[1]));
    return OC_OK;
}

int cuda_resize(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return resize_run(c, a, false, err);
}
int cuda_resize_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return resize_run(c, a, true, err);
}

/* Cast / CastLike: a copy when the type stays, bool -> float otherwise. */
/* cu_float_convert's kind of a float type, or -1. */
static int float_kind(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT ? 0 : dt == IR_DTYPE_FLOAT16 ? 1 : dt == IR_DTYPE_BFLOAT16 ? 2 : -1;
}

int cuda_cast(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (x->dtype == y->dtype) return cuda_copy(c, a, err);
    if (float_kind(x->dtype) >= 0 && float_kind(y->dtype) >= 0) {
        CU_LAUNCH(cu_float_convert(c->stream, a->in[0], float_kind(x->dtype), a->out[0],
                                   float_kind(y->dtype), kernel_numel(x)));
        return OC_OK;
    }
    if (!oc_cast_runs(x->dtype, y->dtype))
        return kernel_fail(a, err, "a run-time cast from %s to %s is not supported",
                           ir_dtype_name(x->dtype), ir_dtype_name(y->dtype));
    cu_dtype from, to;
    if (dtype_of(a, x, &from, err) || dtype_of(a, y, &to, err)) return OC_ERR;
    CU_LAUNCH(cu_int_convert(c->stream, from, a->in[0], to, a->out[0], kernel_numel(x)));
    return OC_OK;
}

/* Y[.., i_d, ..] = X[.., i_perm[d], ..]. */
int cuda_transpose(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return kernel_fail(a, err, "dtype %s is not supported", ir_dtype_name(x->dtype));
    const op_perm_args *p = &op_args_of(a->n)->perm;
    cu_shape perm = {.rank = p->rank};
    for (int i = 0; i < p->rank; i++) perm.d[i] = p->perm[i];
    CU_LAUNCH(
        cu_transpose(c->stream, (int)es, a->in[0], shape_of(x), a->out[0], shape_of(y), perm));
    return OC_OK;
}

/* Slice (gather) and SliceGrad (zero, then scatter): see cpu_slice. */
static int slice_copy(const cuda_ctx *c, const kernel_args *a, bool grad, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    const ir_tensor *small = grad ? x : y, *big = grad ? y : x;
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return kernel_fail(a, err, "dtype %s is not supported", ir_dtype_name(x->dtype));
    const op_slice_args *p = &op_args_of(a->n)->slice;
    if (p->rank != big->rank || small->rank != big->rank)
        return kernel_fail(a, err, "the slice's rank is not the tensor's");
    cu_shape start = {.rank = p->rank}, step = {.rank = p->rank};
    for (int i = 0; i < p->rank; i++) start.d[i] = p->start[i], step.d[i] = p->step[i];
    if (grad) {
        size_t bytes = (size_t)kernel_numel(big) * es;
        if (bytes) CU_CHECK(cudaMemsetAsync(a->out[0], 0, bytes, c->stream));
    }
    CU_LAUNCH(cu_slice(c->stream, (int)es, a->in[0], a->out[0], shape_of(small), shape_of(big),
                       start, step, grad));
    return OC_OK;
}

int cuda_slice(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return slice_copy(c, a, false, err);
}
int cuda_slice_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return slice_copy(c, a, true, err);
}

/* A channels-last node's view: logical (N, C, H, W) dims and axis -> the stored ones. */
static int stored_axis(const ir_node *n, int64_t axis) {
    static const int nhwc[4] = {0, 3, 1, 2};
    return n->channels_last ? nhwc[axis] : (int)axis;
}

static void stored_dims(const ir_node *n, const ir_tensor *t, int64_t *d) {
    memcpy(d, t->dims, IR_MAX_RANK * sizeof *d);
    if (n->channels_last && t->rank == 4) ir_dims_to_nhwc(d);
}

static int concat(const cuda_ctx *c, const kernel_args *a, oc_err *err, bool grad) {
    const ir_tensor *big = grad ? kernel_in(a, 0) : kernel_out(a, 0);
    size_t es = esize(a, big, err);
    if (!es) return OC_ERR;
    const op_args *p = op_args_of(a->n); /* split: one size per output, checked at load */
    int axis = stored_axis(a->n, grad ? p->split.axis : p->axis.axis);
    int64_t bd[IR_MAX_RANK], xd[IR_MAX_RANK];
    stored_dims(a->n, big, bd);
    int64_t outer = prod(bd, 0, axis), inner = prod(bd, axis + 1, big->rank);
    int64_t row = bd[axis] * inner, at = 0;
    const int64_t *split = p->split.sizes;
    int k = grad ? p->split.n : a->n->n_inputs;
    for (int i = 0; i < k; i++) {
        int64_t chunk;
        if (grad) {
            chunk = split[i] * inner;
            if (a->out[i])
                CU_LAUNCH(cu_copy_rows(c->stream, a->out[i], chunk * (int64_t)es,
                                       (const char *)a->in[0] + at * (int64_t)es, row * (int64_t)es,
                                       chunk * (int64_t)es, outer));
        } else {
            const ir_tensor *x = kernel_in(a, i);
            if (x->dtype != big->dtype)
                return kernel_fail(a, err, "input '%s' differs in dtype", x->name);
            stored_dims(a->n, x, xd);
            chunk = xd[axis] * inner;
            CU_LAUNCH(cu_copy_rows(c->stream, (char *)a->out[0] + at * (int64_t)es,
                                   row * (int64_t)es, a->in[i], chunk * (int64_t)es,
                                   chunk * (int64_t)es, outer));
        }
        at += chunk;
    }
    return OC_OK;
}

int cuda_concat(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return concat(c, a, err, false);
}
int cuda_concat_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return concat(c, a, err, true);
}

/* Pad: the pads input (int64) is read from the device synchronously on this
 * stream (a few bytes); the planner folds constant pads, so this is rare. */
int cuda_pad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (es > 8) return kernel_fail(a, err, "dtype %s is not supported", ir_dtype_name(x->dtype));
    const op_pad_args *p = &op_args_of(a->n)->pad;
    int rank = x->rank;
    int64_t begin[IR_MAX_RANK] = {0};
    uint64_t fill = p->fill;
    if (!p->pads_from_attr) {
        const ir_tensor *tp = kernel_in(a, 1), *tv = kernel_in(a, 2), *ta = kernel_in(a, 3);
        if (tp->dtype != IR_DTYPE_INT64) return kernel_fail(a, err, "pads must be int64");
        int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
        int64_t np = kernel_numel(tp), naxes = ta ? kernel_numel(ta) : rank;
        if (np > 2 * IR_MAX_RANK || naxes > IR_MAX_RANK)
            return kernel_fail(a, err, "too many pads");
        CU_CHECK(
            cudaMemcpyAsync(pads, a->in[1], (size_t)np * 8, cudaMemcpyDeviceToHost, c->stream));
        if (ta) {
            if (ta->dtype != IR_DTYPE_INT64) return kernel_fail(a, err, "axes must be int64");
            CU_CHECK(cudaMemcpyAsync(axes, a->in[3], (size_t)naxes * 8, cudaMemcpyDeviceToHost,
                                     c->stream));
        }
        if (tv && a->in[2]) {
            if (tv->dtype != x->dtype)
                return kernel_fail(a, err, "constant_value differs in dtype");
            CU_CHECK(cudaMemcpyAsync(&fill, a->in[2], es, cudaMemcpyDeviceToHost, c->stream));
        }
        CU_CHECK(cudaStreamSynchronize(c->stream));
        for (int64_t i = 0; i < naxes; i++) {
            int64_t ax = ta ? axes[i] : i;
            if (ax < 0) ax += rank;
            if (ax < 0 || ax >= rank) return kernel_fail(a, err, "axis out of range");
            begin[ax] = pads[i];
        }
    } else {
        memcpy(begin, p->begin, (size_t)rank * sizeof *begin);
    }
    CU_LAUNCH(cu_pad(c->stream, (int)es, shape_of(y), shape_of(x), begin, (int)p->mode, a->in[0],
                     a->out[0], fill));
    return OC_OK;
}

int cuda_pad_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    size_t es = esize(a, dy, err);
    if (!es || es > 8) return es ? kernel_fail(a, err, "dtype not supported") : OC_ERR;
    const op_pad_args *p = &op_args_of(a->n)->pad;
    if (p->mode == OP_PAD_CONSTANT) {
        CU_LAUNCH(cu_pad(c->stream, (int)es, shape_of(dx), shape_of(dy), p->begin, OP_PAD_CONSTANT,
                         a->in[0], a->out[0], 0));
        return OC_OK;
    }
    if (!ir_dtype_is_compute(dy->dtype))
        return kernel_fail(a, err,
                           "reflect / edge padding's gradient takes float32, bfloat16 "
                           "or float16, not %s",
                           ir_dtype_name(dy->dtype));
    int64_t begin[IR_MAX_RANK];
    for (int d = 0; d < dx->rank; d++) begin[d] = -p->begin[d]; /* the forward's begin pads */
    CU_LAUNCH(cu_pad_grad_sum(c->stream, shape_of(dy), shape_of(dx), begin, (int)p->mode, a->in[0],
                              a->out[0], float_kind(dy->dtype)));
    return OC_OK;
}

/* Constant: its output's plan-time value, folded at import (a pageable copy:
 * the source may go away once cudaMemcpyAsync returns). */
int cuda_constant(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    size_t es = esize(a, y, err);
    if (!es) return OC_ERR;
    size_t bytes = (size_t)kernel_numel(y) * es;
    if (y->data_src != IR_DATA_INLINE || y->data_bytes != bytes)
        return kernel_fail(a, err, "output '%s' has no plan-time value of %zu bytes", y->name,
                           bytes);
    if (bytes)
        CU_CHECK(cudaMemcpyAsync(a->out[0], y->data, bytes, cudaMemcpyHostToDevice, c->stream));
    return OC_OK;
}

int cuda_shape(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (kernel_want_dtype(a, y, IR_DTYPE_INT64, err)) return OC_ERR;
    int64_t start = op_args_of(a->n)->shape.start, end = op_args_of(a->n)->shape.end;
    if (end - start != kernel_numel(y))
        return kernel_fail(a, err, "output size disagrees with start/end");
    if (end > start)
        CU_CHECK(cudaMemcpyAsync(a->out[0], x->dims + start, (size_t)(end - start) * 8,
                                 cudaMemcpyHostToDevice, c->stream));
    return OC_OK;
}

/* See cpu_gather_grad: one thread per dX element, its indices summed in order. */
/* cu_gather_grad's counting sort: two scan buffers of extent + 1 and the order. */
static size_t gather_grad_scratch(const ir_graph *g, const ir_node *n) {
    const ir_tensor *dx = &g->tensors[n->outputs[0]], *ti = &g->tensors[n->inputs[1]];
    int64_t ni = 0;
    ir_tensor_numel(ti, &ni);
    return (size_t)(2 * (dx->dims[op_args_of(n)->axis.axis] + 1) + ni) * sizeof(int64_t);
}

int cuda_gather_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *ti = kernel_in(a, 1), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err)) return OC_ERR;
    if (ti->dtype != IR_DTYPE_INT64 && ti->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "indices '%s' must be int32 or int64", ti->name);
    int64_t axis = op_args_of(a->n)->axis.axis;
    int64_t outer = prod(dx->dims, 0, (int)axis), inner = prod(dx->dims, (int)axis + 1, dx->rank);
    OC_ASSERT(a->scratch_bytes >= gather_grad_scratch(a->g, a->n));
    const op_axis_args *p = &op_args_of(a->n)->axis;
    CU_LAUNCH(cu_gather_grad(c->stream, a->in[0], a->in[1], ti->dtype == IR_DTYPE_INT64, a->out[0],
                             outer, dx->dims[axis], kernel_numel(ti), inner,
                             p->has_skip ? p->skip : -1, a->scratch));
    return OC_OK;
}

/* See cpu_segment_max (bounds clamped here, not refused: BagBounds checked them). */
int cuda_segment_max(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *r = kernel_in(a, 0), *e = kernel_in(a, 1);
    if (kernel_want_dtype(a, r, IR_DTYPE_FLOAT, err)) return OC_ERR;
    CU_LAUNCH(cu_segment_max(c->stream, a->in[0], a->in[1], a->out[0],
                             a->n->n_outputs > 1 ? a->out[1] : NULL, e->dims[0] - 1, r->dims[0],
                             prod(r->dims, 1, r->rank)));
    return OC_OK;
}

/* See cpu_segment_max_grad (a row outside the rows skipped, not refused). */
int cuda_segment_max_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err)) return OC_ERR;
    CU_LAUNCH(cu_segment_max_grad(c->stream, a->in[0], a->in[1], a->out[0], dy->dims[0],
                                  dx->dims[0], prod(dy->dims, 1, dy->rank)));
    return OC_OK;
}

/* See cpu_cum_sum. */
int cuda_cum_sum(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_cum_sum_args *p = &op_args_of(a->n)->cum_sum;
    CU_LAUNCH(cu_cum_sum(c->stream, a->in[0], a->out[0], p->lines, p->len, p->inner, p->exclusive,
                         p->reverse));
    return OC_OK;
}

/* GridSample's geometry from X (input xi) and the grid after it, and the node's arguments. */
static cu_gs_geo grid_sample_geo(const ir_graph *g, const ir_node *n, int xi) {
    const ir_tensor *x = &g->tensors[n->inputs[xi]], *grid = &g->tensors[n->inputs[xi + 1]];
    const op_grid_sample_args *p = &op_args_of(n)->grid_sample;
    bool vol = x->rank == 5;
    return (cu_gs_geo){.N = x->dims[0],
                       .C = x->dims[1],
                       .H = x->dims[vol ? 3 : 2],
                       .W = x->dims[vol ? 4 : 3],
                       .P = grid->dims[1] * grid->dims[2] * (vol ? grid->dims[3] : 1),
                       .mode = p->mode,
                       .padding = p->padding,
                       .align = p->align_corners,
                       .D = vol ? x->dims[2] : 0};
}

static size_t grid_sample_grad_scratch(const ir_graph *g, const ir_node *n) {
    if (op_args_of(n)->grid_sample.input != 0) return 0;
    return (size_t)cu_grid_sample_scratch(grid_sample_geo(g, n, 1)) * sizeof(int64_t);
}

/* See cpu_grid_sample. */
int cuda_grid_sample(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    if (kernel_want_dtype(a, kernel_in(a, 0), IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err))
        return OC_ERR;
    CU_LAUNCH(
        cu_grid_sample(c->stream, a->in[0], a->in[1], a->out[0], grid_sample_geo(a->g, a->n, 0)));
    return OC_OK;
}

/* dGrid one thread a point; dX one thread a pixel, its points found by a counting sort
 * (deterministic, no atomics on floats). */
int cuda_grid_sample_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int k = 0; k < 3; k++)
        if (kernel_want_dtype(a, kernel_in(a, k), IR_DTYPE_FLOAT, err)) return OC_ERR;
    int input = op_args_of(a->n)->grid_sample.input;
    OC_ASSERT(a->scratch_bytes >= grid_sample_grad_scratch(a->g, a->n));
    CU_LAUNCH(cu_grid_sample_grad(c->stream, input, a->in[0], a->in[1], a->in[2], a->out[0],
                                  grid_sample_geo(a->g, a->n, 1), a->scratch));
    return OC_OK;
}

int cuda_element_offsets(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *ti = kernel_in(a, 0);
    const op_element_offsets_args *p = &op_args_of(a->n)->element_offsets;
    if (ti->dtype != IR_DTYPE_INT64 && ti->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "indices '%s' must be int32 or int64", ti->name);
    cu_shape dd = {.rank = p->rank};
    for (int d = 0; d < p->rank; d++) dd.d[d] = p->dims[d];
    CU_LAUNCH(cu_element_offsets(c->stream, a->in[0], ti->dtype == IR_DTYPE_INT64, shape_of(ti), dd,
                                 (int)p->axis, a->out[0]));
    return OC_OK;
}

int cuda_top_k_offsets(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_top_k_args *p = &op_args_of(a->n)->top_k;
    int ax = (int)p->axis;
    CU_LAUNCH(cu_top_k_offsets(c->stream, a->in[0], prod(x->dims, 0, ax), x->dims[ax],
                               prod(x->dims, ax + 1, x->rank), p->k,
                               (p->largest ? OC_TOPK_LARGEST : 0) | (p->last ? OC_TOPK_LAST : 0) |
                                   (p->nan_first ? OC_TOPK_NAN_FIRST : 0),
                               a->out[0], a->out[1]));
    return OC_OK;
}

int cuda_gather(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *ti = kernel_in(a, 1);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (ti->dtype != IR_DTYPE_INT64 && ti->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "indices '%s' must be int32 or int64", ti->name);
    int64_t axis = op_args_of(a->n)->axis.axis;
    int64_t outer = prod(x->dims, 0, (int)axis), inner = prod(x->dims, (int)axis + 1, x->rank);
    CU_LAUNCH(cu_gather(c->stream, (int)es, a->in[0], a->in[1], ti->dtype == IR_DTYPE_INT64,
                        a->out[0], outer, x->dims[axis], kernel_numel(ti), inner));
    return OC_OK;
}

/* ScatterND's indices computed at run time (not a plan-time value: rows may repeat). */
static bool scatter_indices_at_run_time(const ir_graph *g, const ir_node *n) {
    const ir_tensor *ti = &g->tensors[n->inputs[1]];
    return !(ti->kind == IR_KIND_CONSTANT && ti->data_src != IR_DATA_NONE);
}

/* The owner slots of ScatterND at run-time indices: an unsigned per slab of data. */
static size_t scatter_nd_scratch(const ir_graph *g, const ir_node *n) {
    if (n->op != OP_SCATTER_ND || !scatter_indices_at_run_time(g, n)) return 0;
    const ir_tensor *x = &g->tensors[n->inputs[0]], *ti = &g->tensors[n->inputs[1]];
    int64_t slabs = 1;
    for (int d = 0; d < ti->dims[ti->rank - 1] && d < x->rank; d++) slabs *= x->dims[d];
    return (size_t)slabs * sizeof(unsigned);
}

/* ScatterND (reduction none, run-time data) and ScatterNDGrad: as cpu_shape.c's,
 * a copy (or nothing) then cu_scatter_nd over the index rows' slabs. */
static int scatter_nd_run(const cuda_ctx *c, const kernel_args *a, bool grad, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *ti = kernel_in(a, 1);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    int k = (int)ti->dims[ti->rank - 1];
    cu_shape dims = {.rank = k};
    for (int d = 0; d < k; d++) dims.d[d] = x->dims[d];
    int64_t rows = kernel_numel(ti) / k, slab = prod(x->dims, k, x->rank);
    int i64 = ti->dtype == IR_DTYPE_INT64;
    bool updates = grad && op_args_of(a->n)->scatter_nd_grad.updates;
    if (updates) { /* dUpdates: the slabs of dY */
        CU_LAUNCH(cu_scatter_nd(c->stream, (int)es, a->in[1], i64, rows, dims, slab, a->out[0],
                                (void *)a->in[0], 1, NULL));
        return OC_OK;
    }
    size_t n = (size_t)kernel_numel(x) * es;
    if (n && a->out[0] != a->in[0])
        CU_CHECK(cudaMemcpyAsync(a->out[0], a->in[0], n, cudaMemcpyDeviceToDevice, c->stream));
    size_t need = scatter_nd_scratch(a->g, a->n);
    if (need && (!a->scratch || a->scratch_bytes < need))
        return kernel_fail(a, err, "needs %zu bytes of scratch", need);
    CU_LAUNCH(cu_scatter_nd(c->stream, (int)es, a->in[1], i64, rows, dims, slab,
                            grad ? NULL : (void *)a->in[2], a->out[0], 0,
                            need ? a->scratch : NULL));
    return OC_OK;
}

int cuda_scatter_nd(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return scatter_nd_run(c, a, false, err);
}

int cuda_scatter_nd_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return scatter_nd_run(c, a, true, err);
}

/* ---- loss ---- */

static int sce_setup(const kernel_args *a, const ir_tensor *s, const ir_tensor *l, oc_err *err) {
    if (kernel_want_dtype(a, s, IR_DTYPE_FLOAT, err)) return OC_ERR;
    if (l->dtype != IR_DTYPE_INT64 && l->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "labels '%s' must be int64 or int32", l->name);
    if (s->rank != 2 || l->rank != 1)
        return kernel_fail(a, err, "needs scores (N, C) and labels (N)");
    return OC_OK;
}

static int sce(const cuda_ctx *c, const kernel_args *a, oc_err *err, bool grad) {
    const ir_tensor *ts = kernel_in(a, 0), *tl = kernel_in(a, 1);
    if (!grad && a->n->n_inputs > 2 && a->in[2])
        return kernel_fail(a, err, "class weights are not supported");
    if (sce_setup(a, ts, tl, err)) return OC_ERR;
    const op_sce_args *p = &op_args_of(a->n)->sce;
    int red = (int)p->reduction; /* cu_sce: 0 mean, 1 sum, 2 none (op_reduction's order) */
    int64_t N = ts->dims[0], C = ts->dims[1];
    OC_ASSERT(a->scratch_bytes >= (size_t)(N > 0 ? N : 1) * sizeof(double));
    int l64 = tl->dtype == IR_DTYPE_INT64;
    if (grad)
        CU_LAUNCH(cu_sce_grad(c->stream, a->in[0], a->in[1], l64, N, C, p->has_ignore_index,
                              p->ignore_index, red, a->out[0], a->scratch,
                              a->n->n_inputs > 2 ? a->in[2] : NULL));
    else
        CU_LAUNCH(cu_sce(c->stream, a->in[0], a->in[1], l64, N, C, p->has_ignore_index,
                         p->ignore_index, red, a->out[0], a->n->n_outputs > 1 ? a->out[1] : NULL,
                         a->scratch));
    return OC_OK;
}

int cuda_softmax_cross_entropy(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return sce(c, a, err, false);
}
int cuda_softmax_cross_entropy_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    return sce(c, a, err, true);
}

/* ---- dispatch ---- */

/* Indexed by op_kind: every computing op of the list has its cuda_<kern> (a
 * missing one fails to link). */
static const cuda_kernel_fn cuda_kernels[OP__COUNT] = {
#define CUDA_KERNEL_ROW(kind, name, domain, def, kern) [OP_##kind] = cuda_##kern,
    OC_OPS_COMPUTE(CUDA_KERNEL_ROW)
#undef CUDA_KERNEL_ROW
};

/* ---- half nodes (--precision bf16|fp16) other than the cuDNN / cuBLAS ones
 * (cuda_native_half): the float32 kernel on the node's view (kernels.h), its
 * half inputs widened into the front of the node's workspace and its half
 * outputs rounded back from there (cu_float_convert); the kernel's own
 * workspace follows. Correct and deterministic, at float32 speed plus the
 * conversions. ---- */

#define WIDE_ALIGN 256

static size_t moved_size(const kernel_view *v, int k) {
    size_t b = (size_t)kernel_numel(&v->base.t[k]) * (size_t)ir_dtype_size(v->base.t[k].dtype);
    return (b + WIDE_ALIGN - 1) / WIDE_ALIGN * WIDE_ALIGN;
}

/* Workspace bytes of the view's copies (an in-place output shares its input's). */
static size_t moved_bytes(const kernel_view *v) {
    size_t s = 0;
    for (int k = 0; k < v->base.n.n_inputs + v->base.n.n_outputs; k++)
        if (kernel_view_moved(v, k)) s += moved_size(v, k);
    return s;
}

/* Slot k between its own bytes and the view's copy (to_view: in): widened or
 * narrowed, transposed (N, H, W, C) <-> (N, C, H, W), or both. */
static int convert(const cuda_ctx *c, const kernel_view *v, int k, const void *src, void *dst,
                   bool to_view) {
    const ir_tensor *t = &v->base.t[k];
    int own = cuda_float_kind(v->was[k]), view = cuda_float_kind(t->dtype);
    int from = to_view ? own : view, to = to_view ? view : own;
    if (!kernel_view_nhwc(v, k))
        return cu_float_convert(c->stream, src, from, dst, to, kernel_numel(t));
    return cu_nhwc_convert(c->stream, src, from, dst, to, t->dims[0], t->dims[1],
                           t->dims[2] * t->dims[3], to_view);
}

/* Every op that can be channels-last (op_reads_channel_axis) reads the layout
 * in place here — cuDNN's convolutions, our BatchNorm (cuda_norm_act.c),
 * pooling and Concat kernels — so the view keeps the bytes (logical dims,
 * channels_last set); only the cpu backend transposes. */
static void view_of(kernel_view *v, const ir_graph *g, const ir_node *n) {
    bool widen = kernel_touches_half(g, n) && !cuda_native_half(g, n);
    kernel_view_init(v, g, n, widen, false);
}

/* The node on its view (kernels.h): copies of the moved slots in the front of
 * the node's workspace, the kernel's own workspace after them. */
static int run_view(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_node *n = a->n;
    int ni = n->n_inputs, nt = ni + n->n_outputs, rc = OC_OK;
    kernel_view v;
    view_of(&v, a->g, n);
    size_t need = moved_bytes(&v);
    void **ptr = oc_calloc((size_t)nt + 1, sizeof *ptr);
    if (a->scratch_bytes < need || (need && !a->scratch)) {
        rc = kernel_fail(a, err,
                         "its workspace (%zu bytes) cannot hold the float32 or (N, C, H, W) "
                         "copies of its tensors (%zu bytes)",
                         a->scratch_bytes, need);
        goto out;
    }
    uint8_t *at = a->scratch;
    for (int k = 0; k < nt; k++) {
        ptr[k] = k < ni ? a->in[k] : a->out[k - ni];
        if (!kernel_view_moved(&v, k)) continue;
        void *own = ptr[k];
        ptr[k] = at;
        at += moved_size(&v, k);
        if (k < ni) {
            int ce = convert(c, &v, k, own, ptr[k], true);
            if (ce) {
                rc = cuda_fail_call(err, "convert", cudaGetErrorString((cudaError_t)ce), __FILE__,
                                    __LINE__, CU_NODE_NAME(n));
                goto out;
            }
        } else { /* an in-place output: its input's copy (already made) */
            for (int j = 0; j < ni; j++)
                if (a->in[j] == a->out[k - ni] && kernel_view_moved(&v, j)) ptr[k] = ptr[j];
        }
    }
    kernel_args b = *a;
    b.g = &v.base.g;
    b.n = &v.base.n;
    b.in = ptr;
    b.out = ptr + ni;
    b.stored = v.was;
    b.scratch = a->scratch_bytes > need ? (uint8_t *)a->scratch + need : NULL;
    b.scratch_bytes = a->scratch_bytes - need;
    cuda_ctx cv = *c;
    cv.graph = c->graph ? c->graph : a->g; /* the BN stash keys on the real graph */
    rc = cuda_kernels[n->op](&cv, &b, err);
    for (int k = ni; rc == OC_OK && k < nt; k++) {
        int ce = kernel_view_moved(&v, k) ? convert(c, &v, k, ptr[k], a->out[k - ni], false) : 0;
        if (ce)
            rc = cuda_fail_call(err, "convert", cudaGetErrorString((cudaError_t)ce), __FILE__,
                                __LINE__, CU_NODE_NAME(n));
    }
out:
    oc_free(ptr);
    kernel_view_free(&v);
    return rc;
}

static bool needs_view(const ir_graph *g, const ir_node *n) {
    return n->channels_last || (kernel_touches_half(g, n) && !cuda_native_half(g, n));
}

int cuda_kernel_run(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    int op = a->n->op;
    if (op < 0 || op >= OP__COUNT || !cuda_kernels[op])
        return oc_fail(err, "node '%s': op %s%s%s has no cuda kernel", a->n->name,
                       *a->n->domain ? a->n->domain : "", *a->n->domain ? "." : "", a->n->op_type);
    if (needs_view(a->g, a->n)) return run_view(c, a, err);
    return cuda_kernels[op](c, a, err);
}

static size_t float_scratch(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t limit);

size_t cuda_kernel_scratch(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t limit) {
    if (!needs_view(g, n)) return float_scratch(im, g, n, limit);
    kernel_view v;
    view_of(&v, g, n);
    size_t w = moved_bytes(&v);
    size_t s = w + float_scratch(im, &v.base.g, &v.base.n, limit > w ? limit - w : 0);
    kernel_view_free(&v);
    return s;
}

static size_t float_scratch(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t limit) {
    if (cuda_kernels[n->op] == cuda_reduce_sum_to) /* ReduceSumTo, ReduceSum, ReduceMean */
        return reduce_sum_to_scratch(g, n);
    if (op_is_conv(n->op)) return cuda_conv_scratch(im, g, n, limit);
    switch (n->op) {
    case OP_RELU_GRAD_BIAS: return relu_grad_bias_scratch(g, n);
    case OP_SOFTMAX_CROSS_ENTROPY:
    case OP_SOFTMAX_CROSS_ENTROPY_GRAD: {
        const ir_tensor *s = &g->tensors[n->inputs[0]];
        int64_t N = s->rank >= 1 ? s->dims[0] : 1;
        return (size_t)(N > 0 ? N : 1) * sizeof(double);
    }
    case OP_MAX_POOL_GRAD: return cuda_max_pool_grad_scratch(g, n);
    case OP_LAYER_NORM_GRAD: return cuda_layer_norm_grad_scratch(g, n);
    case OP_BATCH_NORM_RELU:
    case OP_BATCH_NORM_RELU_GRAD: return cuda_bn_relu_scratch(g, n);
    case OP_GATHER_GRAD: return gather_grad_scratch(g, n);
    case OP_SCATTER_ND: return scatter_nd_scratch(g, n);
    case OP_GRID_SAMPLE_GRAD: return grid_sample_grad_scratch(g, n);
    case OP_FUSED_ATTENTION:
    case OP_FUSED_ATTENTION_GRAD: return cuda_attention_scratch(g, n, limit);
    case OP_CLIP_GRAD_NORM:
    case OP_GRAD_SCALER: return (1 + CU_SUMSQ_SLOTS) * sizeof(double); /* cu_sumsq */
    case OP_BATCH_NORM: /* half or channels-last: our kernels */
        return cuda_bn_ours(g, n) ? cuda_bn_relu_scratch(g, n) : 0;
    case OP_BATCH_NORM_GRAD: { /* dScale / dBias when the graph omits them */
        if (cuda_bn_ours(g, n)) return cuda_bn_relu_scratch(g, n);
        const ir_tensor *x = &g->tensors[n->inputs[1]];
        return 2 * (size_t)(x->rank >= 2 ? x->dims[1] : 1) * sizeof(float);
    }
    default: return 0;
    }
}
