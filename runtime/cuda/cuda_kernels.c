/* cuda_kernels.c — the cuda backend's dispatch (one case per cuda_op_id, the
 * table is cuda_table.c) and the host side of the small kernels: read
 * attributes and shapes from the IR, check dtypes, call a cuda_launch.h
 * launcher. cuDNN / cuBLAS kernels are in cuda_dnn.c. */
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu_rng.h"
#include "cuda_internal.h"
#include "cuda_table.h"
#include "ir/ops/op_util.h"

/* ---- helpers ---- */

static int dtype_of(const kernel_args *a, const ir_tensor *t, cu_dtype *dt, oc_err *err) {
    switch (t->dtype) {
    case IR_DTYPE_FLOAT: *dt = CU_DT_F32; return OC_OK;
    case IR_DTYPE_DOUBLE: *dt = CU_DT_F64; return OC_OK;
    case IR_DTYPE_INT64: *dt = CU_DT_I64; return OC_OK;
    case IR_DTYPE_INT32: *dt = CU_DT_I32; return OC_OK;
    case IR_DTYPE_INT8: *dt = CU_DT_I8; return OC_OK;
    case IR_DTYPE_UINT8: case IR_DTYPE_BOOL: *dt = CU_DT_U8; return OC_OK;
    default:
        return kernel_fail(a, err, "tensor '%s' has dtype %s (float, double, int64, int32, int8, "
                         "uint8 supported)", t->name, ir_dtype_name(t->dtype));
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
    if (s <= 0) kernel_fail(a, err, "tensor '%s' has unsupported dtype %s", t->name, ir_dtype_name(t->dtype));
    return (size_t)(s > 0 ? s : 0);
}

/* ---- elementwise ---- */

static int k_add_sum(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    cu_dtype dt;
    if (dtype_of(a, y, &dt, err)) return OC_ERR;
    int n_in = a->n->n_inputs, i = 0;
    for (int k = 0; k < n_in; k++)
        if (kernel_in(a, k)->dtype != y->dtype) return kernel_fail(a, err, "inputs differ in dtype");
    /* Two inputs of the output's shape (the residual Add, a 2-way gradient Sum): one pass. */
    if (n_in >= 2 && same_dims(kernel_in(a, 0), y) && same_dims(kernel_in(a, 1), y)) {
        CU_LAUNCH(cu_add2(c->stream, dt, a->in[0], a->in[1], a->out[0], kernel_numel(y)));
        i = 2;
    }
    for (; i < n_in; i++)
        CU_LAUNCH(cu_bcast_accumulate(c->stream, dt, a->in[i], shape_of(kernel_in(a, i)), a->out[0],
                                      shape_of(y), i == 0));
    return OC_OK;
}

static int k_reduce_sum_to(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) || kernel_want_dtype(a, dx, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    if (dx->rank > dy->rank) return kernel_fail(a, err, "input_shape has a higher rank than dY");
    CU_LAUNCH(cu_reduce_sum_to(c->stream, a->in[0], shape_of(dy), a->out[0], shape_of(dx),
                               ir_attr_float(a->n, "scale", 1.0f)));
    return OC_OK;
}

/* Clip bounds: device scalar inputs (first, first + 1) or attributes min/max. */
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
    if (ir_attr_find(a->n, "min")) b->lo_a = ir_attr_float(a->n, "min", 0), b->has_lo_a = 1;
    if (ir_attr_find(a->n, "max")) b->hi_a = ir_attr_float(a->n, "max", 0), b->has_hi_a = 1;
    return OC_OK;
}

static int k_clip(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
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

static int k_clip_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    clip_b b;
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err) || clip_bounds(a, 2, &b, err))
        return OC_ERR;
    CU_LAUNCH(cu_clip_grad(c->stream, a->in[0], a->in[1], a->out[0], kernel_numel(dy), b.lo_p,
                           b.lo_dt, b.hi_p, b.hi_dt, b.has_lo_a, b.lo_a, b.has_hi_a, b.hi_a));
    return OC_OK;
}

static int k_relu(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    CU_LAUNCH(cu_relu(c->stream, a->in[0], a->out[0], kernel_numel(x)));
    return OC_OK;
}

static int k_relu_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_FLOAT, err))
        return OC_ERR;
    CU_LAUNCH(cu_relu_grad(c->stream, a->in[0], a->in[1], a->out[0], kernel_numel(dy)));
    return OC_OK;
}

/* Dropout: same parameters as cpu_dropout (opset >= 12: inputs ratio and
 * training_mode, read on the device; before: attribute ratio, training when
 * the mask output is present). Same RNG key: cpu_rng_key. */
static int k_dropout(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const void *ratio_p = NULL;
    int ratio_dbl = 0, train_val = 0;
    float ratio_val = 0.5f;
    const uint8_t *train_p = NULL;
    if (a->g->opset >= 12) {
        const ir_tensor *r = kernel_in(a, 1), *t = kernel_in(a, 2);
        if (r) {
            if (r->dtype != IR_DTYPE_FLOAT && r->dtype != IR_DTYPE_DOUBLE)
                return kernel_fail(a, err, "ratio '%s' has dtype %s (float or double supported)",
                                 r->name, ir_dtype_name(r->dtype));
            ratio_p = a->in[1];
            ratio_dbl = r->dtype == IR_DTYPE_DOUBLE;
        }
        if (t && t->dtype != IR_DTYPE_BOOL)
            return kernel_fail(a, err, "training_mode '%s' must be bool", t->name);
        train_p = t ? a->in[2] : NULL;
    } else {
        ratio_val = ir_attr_float(a->n, "ratio", 0.5f);
        train_val = a->n->n_outputs > 1 && a->n->outputs[1] >= 0;
        if (train_val && !(ratio_val >= 0.0f && ratio_val < 1.0f))
            return kernel_fail(a, err, "ratio %g is outside [0, 1)", (double)ratio_val);
    }
    uint8_t *mask = a->n->n_outputs > 1 ? a->out[1] : NULL;
    uint64_t key = cpu_rng_key(a->seed, a->step, cpu_rng_key_name(a->n));
    CU_LAUNCH(cu_dropout(c->stream, a->in[0], a->out[0], mask, kernel_numel(x), key, ratio_p,
                         ratio_dbl, ratio_val, train_p, train_val));
    return OC_OK;
}

static int k_dropout_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, kernel_in(a, 1), IR_DTYPE_BOOL, err))
        return OC_ERR;
    float ratio = ir_attr_float(a->n, "ratio", 0.5f);
    if (!(ratio >= 0.0f && ratio < 1.0f))
        return kernel_fail(a, err, "ratio %g is outside [0, 1)", (double)ratio);
    CU_LAUNCH(cu_dropout_grad(c->stream, a->in[0], a->in[1], a->out[0], kernel_numel(dy),
                              1.0f / (1.0f - ratio)));
    return OC_OK;
}

static int k_sgd(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    for (int i = 0; i < 3; i++)
        if (kernel_want_dtype(a, kernel_in(a, i), IR_DTYPE_FLOAT, err)) return OC_ERR;
    const ir_attr *lr = ir_attr_find(a->n, "lr");
    if (!lr) return kernel_fail(a, err, "attribute 'lr' is required");
    CU_LAUNCH(cu_sgd_momentum(c->stream, a->in[0], a->in[1], a->in[2], a->out[0], a->out[1],
                              kernel_numel(kernel_in(a, 0)), lr->f, ir_attr_float(a->n, "momentum", 0.0f),
                              ir_attr_float(a->n, "weight_decay", 0.0f)));
    return OC_OK;
}

/* ---- pooling ---- */

static int pool_window(const kernel_args *a, const ir_tensor *x, const ir_tensor *y, cu_window *w,
                       oc_err *err) {
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err) || kernel_want_dtype(a, y, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > 3) return kernel_fail(a, err, "%d spatial dims (1 to 3 supported)", nsp);
    op_window ow;
    if (op_window_read(a->n, nsp, x->dims + 2, NULL, &ow, err))
        return oc_fail_prefix(err, "node '%s' (%s)", a->n->name, a->n->op_type);
    memset(w, 0, sizeof *w);
    w->nsp = nsp;
    w->img_size = w->col_size = w->k_size = 1;
    for (int i = 0; i < nsp; i++) {
        w->img[i] = x->dims[2 + i];
        w->col[i] = y->dims[2 + i];
        w->kernel[i] = ow.kernel[i];
        w->stride[i] = ow.stride[i];
        w->dilation[i] = ow.dilation[i];
        w->pad[i] = ow.pad_begin[i];
        w->pad_end[i] = ow.pad_end[i];
        w->img_size *= w->img[i];
        w->col_size *= w->col[i];
        w->k_size *= w->kernel[i];
    }
    return OC_OK;
}

static int k_max_pool(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (cuda_pool_uses_cudnn(a->g, a->n)) return cuda_max_pool_cudnn(c, a, err);
    cu_window w;
    if (pool_window(a, x, y, &w, err)) return OC_ERR;
    int64_t *ind = a->n->n_outputs > 1 ? a->out[1] : NULL;
    CU_LAUNCH(cu_max_pool(c->stream, a->in[0], a->out[0], ind, x->dims[0] * x->dims[1], w,
                          ir_attr_int(a->n, "storage_order", 0) != 0));
    return OC_OK;
}

/* Own kernel (cuDNN's pooling backward needs Y, and with Y recomputed took 13.5 ms
 * on ResNet-50's stem at batch 640 on the H100, this 8.1 ms): windows' argmax into
 * the scratch (int32 per output), then a gather; without scratch the argmax is
 * found per covered cell. */
static int k_max_pool_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *x = kernel_in(a, 1);
    cu_window w;
    if (pool_window(a, x, dy, &w, err)) return OC_ERR;
    size_t need = cuda_max_pool_grad_scratch(a->g, a->n);
    int32_t *arg = need > 0 && a->scratch && a->scratch_bytes >= need ? a->scratch : NULL;
    CU_LAUNCH(cu_max_pool_grad(c->stream, a->in[0], a->in[1], a->out[0], x->dims[0] * x->dims[1],
                               w, arg));
    return OC_OK;
}

size_t cuda_max_pool_grad_scratch(const ir_graph *g, const ir_node *n) {
    const ir_tensor *dy = &g->tensors[n->inputs[0]], *x = &g->tensors[n->inputs[1]];
    int64_t plane = 1, ny = 0;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    if (!ir_tensor_numel(dy, &ny) || plane > INT32_MAX) return 0; /* int32 index in a plane */
    return (size_t)ny * sizeof(int32_t);
}

static int k_average_pool(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    cu_window w;
    if (pool_window(a, x, y, &w, err)) return OC_ERR;
    CU_LAUNCH(cu_average_pool(c->stream, a->in[0], a->out[0], x->dims[0] * x->dims[1], w,
                              ir_attr_int(a->n, "count_include_pad", 0) != 0));
    return OC_OK;
}

static int k_average_pool_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *x = kernel_out(a, 0);
    cu_window w;
    if (pool_window(a, x, dy, &w, err)) return OC_ERR;
    CU_LAUNCH(cu_average_pool_grad(c->stream, a->in[0], a->out[0], x->dims[0] * x->dims[1], w,
                                   ir_attr_int(a->n, "count_include_pad", 0) != 0));
    return OC_OK;
}

static int k_gap(const cuda_ctx *c, const kernel_args *a, oc_err *err, bool grad) {
    const ir_tensor *x = grad ? kernel_out(a, 0) : kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t planes = x->dims[0] * x->dims[1], S = kernel_numel(x) / (planes ? planes : 1);
    if (grad) CU_LAUNCH(cu_global_average_pool_grad(c->stream, a->in[0], a->out[0], planes, S));
    else CU_LAUNCH(cu_global_average_pool(c->stream, a->in[0], a->out[0], planes, S));
    return OC_OK;
}

/* ---- data movement ---- */

static int k_copy(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (kernel_numel(x) != kernel_numel(y) || x->dtype != y->dtype)
        return kernel_fail(a, err, "input '%s' and output '%s' differ in size or dtype", x->name, y->name);
    size_t n = (size_t)kernel_numel(x) * es;
    if (n) CU_CHECK(cudaMemcpyAsync(a->out[0], a->in[0], n, cudaMemcpyDeviceToDevice, c->stream));
    return OC_OK;
}

static int k_concat(const cuda_ctx *c, const kernel_args *a, oc_err *err, bool grad) {
    const ir_tensor *big = grad ? kernel_in(a, 0) : kernel_out(a, 0);
    size_t es = esize(a, big, err);
    if (!es) return OC_ERR;
    int64_t axis = ir_attr_int(a->n, "axis", 0);
    if (axis < 0) axis += big->rank;
    int64_t outer = prod(big->dims, 0, (int)axis), inner = prod(big->dims, (int)axis + 1, big->rank);
    int64_t row = big->dims[axis] * inner, at = 0;
    const int64_t *split = NULL;
    int k = grad ? ir_attr_ints(a->n, "split", &split) : a->n->n_inputs;
    if (grad && k != a->n->n_outputs)
        return kernel_fail(a, err, "attribute 'split' needs one size per output");
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
            if (x->dtype != big->dtype) return kernel_fail(a, err, "input '%s' differs in dtype", x->name);
            chunk = x->dims[axis] * inner;
            CU_LAUNCH(cu_copy_rows(c->stream, (char *)a->out[0] + at * (int64_t)es, row * (int64_t)es,
                                   a->in[i], chunk * (int64_t)es, chunk * (int64_t)es, outer));
        }
        at += chunk;
    }
    return OC_OK;
}

/* Pad: the pads input (int64) is read from the device synchronously on this
 * stream (a few bytes); the planner folds constant pads, so this is rare. */
static int k_pad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (es > 8) return kernel_fail(a, err, "dtype %s is not supported", ir_dtype_name(x->dtype));
    kernel_pad_mode mode;
    if (kernel_pad_mode_of(a, &mode, err)) return OC_ERR;
    int rank = x->rank;
    int64_t begin[IR_MAX_RANK] = {0};
    uint64_t fill = 0;
    if (a->g->opset >= 11) {
        const ir_tensor *tp = kernel_in(a, 1), *tv = kernel_in(a, 2), *ta = kernel_in(a, 3);
        if (tp->dtype != IR_DTYPE_INT64) return kernel_fail(a, err, "pads must be int64");
        int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
        int64_t np = kernel_numel(tp), naxes = ta ? kernel_numel(ta) : rank;
        if (np > 2 * IR_MAX_RANK || naxes > IR_MAX_RANK) return kernel_fail(a, err, "too many pads");
        CU_CHECK(cudaMemcpyAsync(pads, a->in[1], (size_t)np * 8, cudaMemcpyDeviceToHost, c->stream));
        if (ta) {
            if (ta->dtype != IR_DTYPE_INT64) return kernel_fail(a, err, "axes must be int64");
            CU_CHECK(cudaMemcpyAsync(axes, a->in[3], (size_t)naxes * 8, cudaMemcpyDeviceToHost, c->stream));
        }
        if (tv && a->in[2]) {
            if (tv->dtype != x->dtype) return kernel_fail(a, err, "constant_value differs in dtype");
            CU_CHECK(cudaMemcpyAsync(&fill, a->in[2], es, cudaMemcpyDeviceToHost, c->stream));
        }
        CU_CHECK(cudaStreamSynchronize(c->stream));
        for (int64_t i = 0; i < naxes; i++) {
            int64_t ax = ta ? axes[i] : i;
            if (ax < 0) ax += rank;
            if (ax < 0 || ax >= rank) return kernel_fail(a, err, "axis out of range");
            begin[ax] = pads[i];
        }
    } else if (kernel_pad_attrs(a, x, begin, &fill, err)) {
        return OC_ERR;
    }
    CU_LAUNCH(cu_pad(c->stream, (int)es, shape_of(y), shape_of(x), begin, mode, a->in[0], a->out[0], fill));
    return OC_OK;
}

static int k_pad_grad(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    size_t es = esize(a, dy, err);
    if (!es || es > 8) return es ? kernel_fail(a, err, "dtype not supported") : OC_ERR;
    int64_t begin[IR_MAX_RANK];
    if (kernel_pad_grad_begin(a, dx->rank, begin, err)) return OC_ERR;
    CU_LAUNCH(cu_pad(c->stream, (int)es, shape_of(dx), shape_of(dy), begin, 0, a->in[0], a->out[0], 0));
    return OC_OK;
}

/* Constant: from the attribute's host data (a pageable copy: the source may
 * go away once cudaMemcpyAsync returns). */
static int k_constant(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    size_t es = esize(a, y, err);
    if (!es) return OC_ERR;
    size_t bytes = (size_t)kernel_numel(y) * es;
    const ir_attr *at;
    const void *src = NULL;
    if ((at = ir_attr_find(a->n, "value")) && at->type == IR_ATTR_TENSOR) {
        if (at->t->data_src != IR_DATA_INLINE || at->t->data_bytes != bytes)
            return kernel_fail(a, err, "attribute 'value' has no inline data of %zu bytes", bytes);
        src = at->t->data;
    } else if ((at = ir_attr_find(a->n, "value_float")) && es == 4 && bytes == 4) {
        src = &at->f;
    } else if ((at = ir_attr_find(a->n, "value_int")) && es == 8 && bytes == 8) {
        src = &at->i;
    } else if ((at = ir_attr_find(a->n, "value_floats")) && (size_t)at->n * 4 == bytes) {
        src = at->floats;
    } else if ((at = ir_attr_find(a->n, "value_ints")) && (size_t)at->n * 8 == bytes) {
        src = at->ints;
    } else {
        return kernel_fail(a, err, "no supported value attribute (value, value_float, value_int, "
                         "value_floats, value_ints)");
    }
    if (bytes) CU_CHECK(cudaMemcpyAsync(a->out[0], src, bytes, cudaMemcpyHostToDevice, c->stream));
    return OC_OK;
}

static int k_shape(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (kernel_want_dtype(a, y, IR_DTYPE_INT64, err)) return OC_ERR;
    int64_t r = x->rank, start = ir_attr_int(a->n, "start", 0), end = ir_attr_int(a->n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    if (end - start != kernel_numel(y)) return kernel_fail(a, err, "output size disagrees with start/end");
    if (end > start)
        CU_CHECK(cudaMemcpyAsync(a->out[0], x->dims + start, (size_t)(end - start) * 8,
                                 cudaMemcpyHostToDevice, c->stream));
    return OC_OK;
}

static int k_gather(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *ti = kernel_in(a, 1);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (ti->dtype != IR_DTYPE_INT64 && ti->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "indices '%s' must be int32 or int64", ti->name);
    int64_t axis = ir_attr_int(a->n, "axis", 0);
    if (axis < 0) axis += x->rank;
    int64_t outer = prod(x->dims, 0, (int)axis), inner = prod(x->dims, (int)axis + 1, x->rank);
    CU_LAUNCH(cu_gather(c->stream, (int)es, a->in[0], a->in[1], ti->dtype == IR_DTYPE_INT64,
                        a->out[0], outer, x->dims[axis], kernel_numel(ti), inner));
    return OC_OK;
}

/* ---- loss ---- */

static int sce_setup(const kernel_args *a, const ir_tensor *s, const ir_tensor *l, int *red,
                     oc_err *err) {
    if (kernel_want_dtype(a, s, IR_DTYPE_FLOAT, err)) return OC_ERR;
    if (l->dtype != IR_DTYPE_INT64 && l->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "labels '%s' must be int64 or int32", l->name);
    if (s->rank != 2 || l->rank != 1) return kernel_fail(a, err, "needs scores (N, C) and labels (N)");
    const char *r = ir_attr_string(a->n, "reduction", "mean");
    if (strcmp(r, "mean") == 0) *red = 0;
    else if (strcmp(r, "sum") == 0) *red = 1;
    else if (strcmp(r, "none") == 0) *red = 2;
    else return kernel_fail(a, err, "reduction '%s' is not one of mean, sum, none", r);
    return OC_OK;
}

static int k_sce(const cuda_ctx *c, const kernel_args *a, oc_err *err, bool grad) {
    const ir_tensor *ts = kernel_in(a, 0), *tl = kernel_in(a, 1);
    int red = 0;
    if (!grad && a->n->n_inputs > 2 && a->in[2]) return kernel_fail(a, err, "class weights are not supported");
    if (sce_setup(a, ts, tl, &red, err)) return OC_ERR;
    const ir_attr *ig = ir_attr_find(a->n, "ignore_index");
    int64_t N = ts->dims[0], C = ts->dims[1];
    OC_ASSERT(a->scratch_bytes >= (size_t)(N > 0 ? N : 1) * sizeof(double));
    int l64 = tl->dtype == IR_DTYPE_INT64;
    if (grad)
        CU_LAUNCH(cu_sce_grad(c->stream, a->in[0], a->in[1], l64, N, C, ig != NULL, ig ? ig->i : 0,
                              red, a->out[0], a->scratch));
    else
        CU_LAUNCH(cu_sce(c->stream, a->in[0], a->in[1], l64, N, C, ig != NULL, ig ? ig->i : 0, red,
                         a->out[0], a->n->n_outputs > 1 ? a->out[1] : NULL, a->scratch));
    return OC_OK;
}

/* ---- dispatch ---- */

int cuda_kernel_run(const cuda_ctx *c, const kernel_args *a, oc_err *err) {
    int id = cuda_op_of(a->n->op);
    if (id < 0)
        return oc_fail(err, "node '%s': op %s%s%s has no cuda kernel", a->n->name,
                       *a->n->domain ? a->n->domain : "", *a->n->domain ? "." : "", a->n->op_type);
    switch ((cuda_op_id)id) {
    case CUDA_OP_CONV: case CUDA_OP_CONV_TRANSPOSE: case CUDA_OP_CONV_BWD_DATA:
    case CUDA_OP_CONV_BWD_FILTER: case CUDA_OP_CONVT_BWD_DATA: case CUDA_OP_CONVT_BWD_FILTER:
        return cuda_conv_family(c, a, id, err);
    case CUDA_OP_BATCH_NORM: return cuda_batch_norm(c, a, err);
    case CUDA_OP_BATCH_NORM_GRAD: return cuda_batch_norm_grad(c, a, err);
    case CUDA_OP_RELU: return k_relu(c, a, err);
    case CUDA_OP_GEMM: return cuda_gemm(c, a, err);
    case CUDA_OP_CLIP: return k_clip(c, a, err);
    case CUDA_OP_CLIP_GRAD: return k_clip_grad(c, a, err);
    case CUDA_OP_RELU_GRAD: return k_relu_grad(c, a, err);
    case CUDA_OP_DROPOUT: return k_dropout(c, a, err);
    case CUDA_OP_DROPOUT_GRAD: return k_dropout_grad(c, a, err);
    case CUDA_OP_MAX_POOL: return k_max_pool(c, a, err);
    case CUDA_OP_MAX_POOL_GRAD: return k_max_pool_grad(c, a, err);
    case CUDA_OP_AVERAGE_POOL: return k_average_pool(c, a, err);
    case CUDA_OP_AVERAGE_POOL_GRAD: return k_average_pool_grad(c, a, err);
    case CUDA_OP_GLOBAL_AVERAGE_POOL: return k_gap(c, a, err, false);
    case CUDA_OP_GLOBAL_AVERAGE_POOL_GRAD: return k_gap(c, a, err, true);
    case CUDA_OP_ADD: case CUDA_OP_SUM: return k_add_sum(c, a, err);
    case CUDA_OP_REDUCE_SUM_TO: return k_reduce_sum_to(c, a, err);
    case CUDA_OP_CONCAT: return k_concat(c, a, err, false);
    case CUDA_OP_CONCAT_GRAD: return k_concat(c, a, err, true);
    case CUDA_OP_COPY: return k_copy(c, a, err);
    case CUDA_OP_PAD: return k_pad(c, a, err);
    case CUDA_OP_PAD_GRAD: return k_pad_grad(c, a, err);
    case CUDA_OP_CONSTANT: return k_constant(c, a, err);
    case CUDA_OP_SHAPE: return k_shape(c, a, err);
    case CUDA_OP_GATHER: return k_gather(c, a, err);
    case CUDA_OP_SCE: return k_sce(c, a, err, false);
    case CUDA_OP_SCE_GRAD: return k_sce(c, a, err, true);
    case CUDA_OP_SGD_MOMENTUM: return k_sgd(c, a, err);
    case CUDA_OP__COUNT: break;
    }
    OC_ASSERT(!"cuda_kernel_run: unhandled op id");
    return OC_ERR;
}

size_t cuda_kernel_scratch(cuda_impl *im, const ir_graph *g, const ir_node *n, size_t limit) {
    int id = cuda_op_of(n->op);
    switch (id) {
    case CUDA_OP_CONV: case CUDA_OP_CONV_TRANSPOSE: case CUDA_OP_CONV_BWD_DATA:
    case CUDA_OP_CONV_BWD_FILTER: case CUDA_OP_CONVT_BWD_DATA: case CUDA_OP_CONVT_BWD_FILTER:
        return cuda_conv_scratch(im, g, n, id, limit);
    case CUDA_OP_SCE: case CUDA_OP_SCE_GRAD: {
        const ir_tensor *s = &g->tensors[n->inputs[0]];
        int64_t N = s->rank >= 1 ? s->dims[0] : 1;
        return (size_t)(N > 0 ? N : 1) * sizeof(double);
    }
    case CUDA_OP_MAX_POOL_GRAD: return cuda_max_pool_grad_scratch(g, n);
    case CUDA_OP_BATCH_NORM_GRAD: { /* dScale / dBias when the graph omits them */
        const ir_tensor *x = &g->tensors[n->inputs[1]];
        return 2 * (size_t)(x->rank >= 2 ? x->dims[1] : 1) * sizeof(float);
    }
    default: return 0;
    }
}
