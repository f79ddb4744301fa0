/* cpu_shape.c — data movement ops, generic over element types: Concat,
 * ConcatGrad, Flatten/Reshape/Unsqueeze (a copy), Pad, PadGrad, Constant,
 * Shape, Gather. */
#include <inttypes.h>
#include <string.h>

#include "cpu_internal.h"
#include "ir/half.h"
#include "cast_rule.h"
#include "pad_coord.h"
#include "pointwise.h"
#include "topk_order.h"

static size_t esize(const kernel_args *a, const ir_tensor *t, oc_err *err) {
    int s = ir_dtype_size(t->dtype);
    if (s <= 0)
        kernel_fail(a, err, "tensor '%s' has unsupported dtype %s", t->name,
                    ir_dtype_name(t->dtype));
    return (size_t)(s > 0 ? s : 0);
}

static int64_t prod(const int64_t *d, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= d[i];
    return p;
}

/* X -> Y with the same bytes (Flatten, Reshape, Unsqueeze: only the shape changes);
 * nothing to do for an in-place view (train_view_source: one storage). */
int cpu_copy(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (kernel_numel(x) != kernel_numel(y) || x->dtype != y->dtype)
        return kernel_fail(a, err, "input '%s' and output '%s' differ in size or dtype", x->name,
                           y->name);
    if (a->out[0] != a->in[0]) memcpy(a->out[0], a->in[0], (size_t)kernel_numel(x) * es);
    return OC_OK;
}

/* Between float32, float16 and bfloat16: through float32, rounded to nearest
 * even (ir/half.h; a half -> half cast rounds once, its source widens exactly). */
static void cast_floats(const kernel_args *a, const ir_tensor *x, const ir_tensor *y) {
    int64_t n = kernel_numel(x);
    for (int64_t i = 0; i < n; i++) {
        float v = x->dtype == IR_DTYPE_FLOAT
                      ? ((const float *)a->in[0])[i]
                      : half_to_f32(x->dtype, ((const uint16_t *)a->in[0])[i]);
        if (y->dtype == IR_DTYPE_FLOAT) ((float *)a->out[0])[i] = v;
        else ((uint16_t *)a->out[0])[i] = half_from_f32(y->dtype, v);
    }
}

/* Cast / CastLike at run time: a copy when the type stays, between the float
 * types (mixed precision), bool -> float (a dropout pattern's mask), the casts of masks and
 * indices (runtime/cast_rule.h). */
int cpu_cast(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (x->dtype == y->dtype) return cpu_copy(a, err);
    if (ir_dtype_is_compute(x->dtype) && ir_dtype_is_compute(y->dtype)) {
        cast_floats(a, x, y);
        return OC_OK;
    }
    if (!oc_cast_runs(x->dtype, y->dtype))
        return kernel_fail(a, err, "a run-time cast from %s to %s is not supported",
                           ir_dtype_name(x->dtype), ir_dtype_name(y->dtype));
    int64_t n = kernel_numel(x);
    for (int64_t i = 0; i < n; i++) { /* masks and indices: exact in int64 */
        float f = x->dtype == IR_DTYPE_FLOAT ? ((const float *)a->in[0])[i] : 0.0f;
        int64_t v = x->dtype == IR_DTYPE_INT64   ? ((const int64_t *)a->in[0])[i]
                    : x->dtype == IR_DTYPE_INT32 ? ((const int32_t *)a->in[0])[i]
                    : x->dtype == IR_DTYPE_FLOAT
                        ? (y->dtype == IR_DTYPE_BOOL ? f != 0.0f : oc_float_to_int(f))
                        : ((const uint8_t *)a->in[0])[i] != 0;
        switch (y->dtype) {
        case IR_DTYPE_FLOAT: ((float *)a->out[0])[i] = (float)v; break;
        case IR_DTYPE_INT64: ((int64_t *)a->out[0])[i] = v; break;
        case IR_DTYPE_INT32:
            ((int32_t *)a->out[0])[i] = (int32_t)(v > INT32_MAX   ? INT32_MAX
                                                  : v < INT32_MIN ? INT32_MIN
                                                                  : v);
            break;
        default: ((uint8_t *)a->out[0])[i] = v != 0; /* bool */
        }
    }
    return OC_OK;
}

/* Y[.., i_d, ..] = X[.., i_perm[d], ..]: output element by element, the
 * input offset stepped by the permuted strides. */
int cpu_transpose(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    const op_perm_args *p = &op_args_of(a->n)->perm;
    int r = p->rank;
    int64_t in_st[IR_MAX_RANK], st[IR_MAX_RANK], acc = 1, o[IR_MAX_RANK] = {0}, off = 0;
    for (int d = r - 1; d >= 0; d--) in_st[d] = acc, acc *= x->dims[d];
    for (int d = 0; d < r; d++) st[d] = in_st[p->perm[d]];
    const uint8_t *in = a->in[0];
    uint8_t *out = a->out[0];
    int64_t n = kernel_numel(y);
    for (int64_t i = 0; i < n; i++) {
        memcpy(out + (size_t)i * es, in + (size_t)off * es, es);
        for (int d = r - 1; d >= 0; d--) {
            off += st[d];
            if (++o[d] < y->dims[d]) break;
            off -= st[d] * y->dims[d];
            o[d] = 0;
        }
    }
    return OC_OK;
}

/* Offset in a tensor of dims `dims` of the element at start + o * step. */
static int64_t slice_offset(const op_slice_args *p, const int64_t *dims, const int64_t *o) {
    int64_t off = 0;
    for (int d = 0; d < p->rank; d++) off = off * dims[d] + p->start[d] + o[d] * p->step[d];
    return off;
}

/* Y = X[start + o * step] over every output index o (Slice), or dX = 0 with
 * dX[start + o * step] = dY[o] (SliceGrad). */
static int slice_copy(const kernel_args *a, bool grad, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    const ir_tensor *small = grad ? x : y, *big = grad ? y : x;
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    const op_slice_args *p = &op_args_of(a->n)->slice;
    if (p->rank != big->rank || small->rank != big->rank)
        return kernel_fail(a, err, "the slice's rank is not the tensor's");
    if (grad) memset(a->out[0], 0, (size_t)kernel_numel(big) * es);
    int64_t n = kernel_numel(small), o[IR_MAX_RANK] = {0};
    const uint8_t *in = a->in[0];
    uint8_t *out = a->out[0];
    for (int64_t i = 0; i < n; i++) {
        int64_t at = slice_offset(p, big->dims, o);
        if (grad) memcpy(out + (size_t)at * es, in + (size_t)i * es, es);
        else memcpy(out + (size_t)i * es, in + (size_t)at * es, es);
        for (int d = p->rank - 1; d >= 0; d--) {
            if (++o[d] < small->dims[d]) break;
            o[d] = 0;
        }
    }
    return OC_OK;
}

int cpu_slice(const kernel_args *a, oc_err *err) { return slice_copy(a, false, err); }
int cpu_slice_grad(const kernel_args *a, oc_err *err) { return slice_copy(a, true, err); }

/* X1..Xk (.., d_i, ..) -> Y (.., sum d_i, ..) along axis. */
int cpu_concat(const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    size_t es = esize(a, y, err);
    if (!es) return OC_ERR;
    int64_t axis = op_args_of(a->n)->axis.axis;
    int64_t outer = prod(y->dims, 0, (int)axis), inner = prod(y->dims, (int)axis + 1, y->rank);
    int64_t row = y->dims[axis] * inner, at = 0;
    for (int i = 0; i < a->n->n_inputs; i++) {
        const ir_tensor *x = kernel_in(a, i);
        if (x->dtype != y->dtype)
            return kernel_fail(a, err, "input '%s' differs in dtype", x->name);
        int64_t chunk = x->dims[axis] * inner;
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)a->out[0] + (size_t)(o * row + at) * es,
                   (const char *)a->in[i] + (size_t)(o * chunk) * es, (size_t)chunk * es);
        at += chunk;
    }
    return OC_OK;
}

/* dY (.., sum d_i, ..) -> dX_1..dX_k (.., d_i, ..): slices along axis. */
int cpu_concat_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0);
    size_t es = esize(a, dy, err);
    if (!es) return OC_ERR;
    const op_split_args *sp = &op_args_of(a->n)->split;
    int64_t axis = sp->axis;
    int64_t outer = prod(dy->dims, 0, (int)axis), inner = prod(dy->dims, (int)axis + 1, dy->rank);
    int64_t row = dy->dims[axis] * inner, at = 0;
    for (int i = 0; i < sp->n; i++) {
        int64_t chunk = sp->sizes[i] * inner;
        if (a->out[i])
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)a->out[i] + (size_t)(o * chunk) * es,
                       (const char *)a->in[0] + (size_t)(o * row + at) * es, (size_t)chunk * es);
        at += chunk;
    }
    return OC_OK;
}

/* ---- Pad ---- */

/* Generic copy: out (rank, od) from in (id) where out coordinate o reads
 * in coordinate oc_pad_source(o - begin) (pad_coord.h); fill (es bytes) where it is -1. */
static void pad_copy(int rank, const int64_t *od, const int64_t *id, const int64_t *begin,
                     op_pad_mode m, size_t es, const void *in, void *out, const void *fill) {
    int64_t is[IR_MAX_RANK], o[IR_MAX_RANK] = {0}, n = prod(od, 0, rank);
    cpu_strides(rank, id, is);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < rank && inside; d++) {
            int64_t s = oc_pad_source(o[d] - begin[d], id[d], (int)m);
            if (s < 0) inside = false;
            off += s * is[d];
        }
        if (inside) memcpy((char *)out + (size_t)k * es, (const char *)in + (size_t)off * es, es);
        else memcpy((char *)out + (size_t)k * es, fill, es);
        for (int d = rank - 1; d >= 0; d--) {
            if (++o[d] < od[d]) break;
            o[d] = 0;
        }
    }
}

/* data, pads [, constant_value [, axes]] -> padded (opset >= 11; before: the
 * pads and value attributes). Modes constant, reflect, edge; negative pads crop. */
int cpu_pad(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    const op_pad_args *p = &op_args_of(a->n)->pad;
    op_pad_mode m = p->mode;
    int rank = x->rank;
    int64_t begin[IR_MAX_RANK] = {0};
    uint64_t fill = 0; /* es <= 8 bytes of the fill element */
    if (es > sizeof fill)
        return kernel_fail(a, err, "dtype %s is not supported", ir_dtype_name(x->dtype));
    if (!p->pads_from_attr) {
        const ir_tensor *tp = kernel_in(a, 1), *tv = kernel_in(a, 2), *ta = kernel_in(a, 3);
        if (tp->dtype != IR_DTYPE_INT64) return kernel_fail(a, err, "pads must be int64");
        const int64_t *pads = a->in[1];
        int64_t naxes = ta ? kernel_numel(ta) : rank;
        for (int64_t i = 0; i < naxes; i++) {
            int64_t ax = i;
            if (ta) {
                if (ta->dtype != IR_DTYPE_INT64) return kernel_fail(a, err, "axes must be int64");
                ax = ((const int64_t *)a->in[3])[i];
                if (ax < 0) ax += rank;
            }
            begin[ax] = pads[i];
        }
        if (tv && a->in[2]) {
            if (tv->dtype != x->dtype)
                return kernel_fail(a, err, "constant_value differs in dtype");
            memcpy(&fill, a->in[2], es);
        }
    } else {
        memcpy(begin, p->begin, sizeof begin);
        fill = p->fill;
    }
    pad_copy(rank, y->dims, x->dims, begin, m, es, a->in[0], a->out[0], &fill);
    return OC_OK;
}

/* dY (padded) -> dX (input_shape): constant mode, the interior of dY at the begin pads
 * (cells a negative pad cropped get 0); reflect and edge, each element the sum of dY at
 * every index that read it (pad_coord.h, the cuda backend's order), in float32 (a half dY
 * comes widened, the result is rounded once when stored: cpu_kernels.c). */
int cpu_pad_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *dx = kernel_out(a, 0);
    size_t es = esize(a, dy, err);
    if (!es || es > 8) return es ? kernel_fail(a, err, "dtype not supported") : OC_ERR;
    const op_pad_args *p = &op_args_of(a->n)->pad;
    int rank = dx->rank;
    int64_t begin[IR_MAX_RANK];
    memcpy(begin, p->begin, (size_t)rank * sizeof *begin);
    if (p->mode == OP_PAD_CONSTANT) {
        uint64_t zero = 0;
        pad_copy(rank, dx->dims, dy->dims, begin, OP_PAD_CONSTANT, es, a->in[0], a->out[0], &zero);
        return OC_OK;
    }
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t os[IR_MAX_RANK], c[IR_MAX_RANK] = {0}, n = kernel_numel(dx);
    cpu_strides(rank, dy->dims, os);
    for (int d = 0; d < rank; d++) begin[d] = -begin[d]; /* the forward's begin pads */
    float *out = a->out[0];
    for (int64_t k = 0; k < n; k++) {
        out[k] = oc_pad_grad_sum(rank, dx->dims, dy->dims, os, begin, (int)p->mode, c, a->in[0], 0);
        for (int d = rank - 1; d >= 0; d--) {
            if (++c[d] < dx->dims[d]) break;
            c[d] = 0;
        }
    }
    return OC_OK;
}

/* ---- Constant, Shape, Gather ---- */

/* -> its value, folded into the output tensor by shape inference (op_shape.c). */
int cpu_constant(const kernel_args *a, oc_err *err) {
    const ir_tensor *y = kernel_out(a, 0);
    size_t es = esize(a, y, err);
    if (!es) return OC_ERR;
    size_t bytes = (size_t)kernel_numel(y) * es;
    if (y->data_src != IR_DATA_INLINE || y->data_bytes != bytes)
        return kernel_fail(a, err, "output '%s' has no plan-time value of %zu bytes", y->name,
                           bytes);
    memcpy(a->out[0], y->data, bytes);
    return OC_OK;
}

/* data -> int64 dims[start:end] (negative values count from the end, clamped). */
int cpu_shape(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *y = kernel_out(a, 0);
    if (kernel_want_dtype(a, y, IR_DTYPE_INT64, err)) return OC_ERR;
    int64_t start = op_args_of(a->n)->shape.start, end = op_args_of(a->n)->shape.end;
    int64_t *out = a->out[0];
    if (end - start != kernel_numel(y))
        return kernel_fail(a, err, "output size disagrees with start/end");
    for (int64_t i = start; i < end; i++) out[i - start] = x->dims[i];
    return OC_OK;
}

/* data (.., d_axis, ..), indices (I..) int32/int64 -> (.., I.., ..). */
/* dX = 0; dX[o, idx[j], :] += dY[o, j, :] in index order (float). */
int cpu_gather_grad(const kernel_args *a, oc_err *err) {
    const ir_tensor *dy = kernel_in(a, 0), *ti = kernel_in(a, 1), *dx = kernel_out(a, 0);
    if (kernel_want_dtype(a, dy, IR_DTYPE_FLOAT, err)) return OC_ERR;
    int64_t axis = op_args_of(a->n)->axis.axis;
    int64_t outer = prod(dx->dims, 0, (int)axis), inner = prod(dx->dims, (int)axis + 1, dx->rank);
    int64_t extent = dx->dims[axis], ni = kernel_numel(ti);
    float *out = a->out[0];
    const float *in = a->in[0];
    const op_axis_args *p = &op_args_of(a->n)->axis;
    memset(out, 0, (size_t)kernel_numel(dx) * sizeof(float));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = ti->dtype == IR_DTYPE_INT64 ? ((const int64_t *)a->in[1])[j]
                                                    : ((const int32_t *)a->in[1])[j];
            if (k < 0) k += extent;
            if (k < 0 || k >= extent)
                return kernel_fail(a, err, "index %" PRId64 " out of range [0, %" PRId64 ")", k,
                                   extent);
            if (p->has_skip && k == p->skip) continue; /* padding_idx: no gradient */
            for (int64_t i = 0; i < inner; i++)
                out[(o * extent + k) * inner + i] += in[(o * ni + j) * inner + i];
        }
    return OC_OK;
}

/* x (float32; half inputs come widened) -> the indices along the axis of each line's k
 * first elements in TopK's order, and their offsets in x (topk_order.h: the cuda backend's
 * choice and order). */
int cpu_top_k_offsets(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err)) return OC_ERR;
    const op_top_k_args *p = &op_args_of(a->n)->top_k;
    int ax = (int)p->axis;
    int64_t len = x->dims[ax], inner = prod(x->dims, ax + 1, x->rank);
    int64_t lines = prod(x->dims, 0, ax) * inner;
    for (int64_t l = 0; l < lines; l++) {
        int64_t o = l / inner, i = l % inner;
        oc_topk_line(a->in[0], o * len * inner + i, inner, len, p->k,
                     (p->largest ? OC_TOPK_LARGEST : 0) | (p->last ? OC_TOPK_LAST : 0) |
                         (p->nan_first ? OC_TOPK_NAN_FIRST : 0),
                     a->out[0], a->out[1], o * p->k * inner + i, inner);
    }
    return OC_OK;
}

/* indices (int32/int64) -> the row-major offset in data (data_shape) of each index's element
 * along the axis (negative indices from the end; one outside the axis fails, named). */
int cpu_element_offsets(const kernel_args *a, oc_err *err) {
    const ir_tensor *ti = kernel_in(a, 0);
    const op_element_offsets_args *p = &op_args_of(a->n)->element_offsets;
    bool i64 = ti->dtype == IR_DTYPE_INT64;
    if (!i64 && ti->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "indices '%s' must be int32 or int64", ti->name);
    int64_t n = kernel_numel(ti), extent = p->dims[p->axis], *out = a->out[0];
    for (int64_t o = 0; o < n; o++) {
        int64_t v = i64 ? ((const int64_t *)a->in[0])[o] : ((const int32_t *)a->in[0])[o];
        if (v < -extent || v >= extent)
            return kernel_fail(a, err,
                               "index %" PRId64 " (element %" PRId64 ") is outside [%" PRId64
                               ", %" PRId64 ")",
                               v, o, -extent, extent);
        int64_t rest = o, off = 0, stride = 1;
        for (int d = p->rank - 1; d >= 0; d--) {
            int64_t c = rest % ti->dims[d];
            rest /= ti->dims[d];
            off += (d == p->axis ? (v < 0 ? v + extent : v) : c) * stride;
            stride *= p->dims[d];
        }
        out[o] = off;
    }
    return OC_OK;
}

int cpu_gather(const kernel_args *a, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *ti = kernel_in(a, 1);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    if (ti->dtype != IR_DTYPE_INT64 && ti->dtype != IR_DTYPE_INT32)
        return kernel_fail(a, err, "indices '%s' must be int32 or int64", ti->name);
    int64_t axis = op_args_of(a->n)->axis.axis;
    int64_t outer = prod(x->dims, 0, (int)axis), inner = prod(x->dims, (int)axis + 1, x->rank);
    int64_t extent = x->dims[axis], ni = kernel_numel(ti);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = ti->dtype == IR_DTYPE_INT64 ? ((const int64_t *)a->in[1])[j]
                                                    : ((const int32_t *)a->in[1])[j];
            if (k < 0) k += extent;
            if (k < 0 || k >= extent)
                return kernel_fail(a, err, "index %" PRId64 " out of range [0, %" PRId64 ")", k,
                                   extent);
            memcpy((char *)a->out[0] + (size_t)((o * ni + j) * inner) * es,
                   (const char *)a->in[0] + (size_t)((o * extent + k) * inner) * es,
                   (size_t)inner * es);
        }
    return OC_OK;
}

/* Row r of ScatterND's indices (k coordinates into data's first k dims, negative
 * from the end; checked at plan time unless computed at run time): its slab's offset
 * in slabs, or -1 with *bad the coordinate outside its dim. */
static int64_t scatter_block(const ir_tensor *ti, const void *idx, int64_t r, int k,
                             const int64_t *dims, int64_t *bad) {
    int64_t off = 0;
    for (int t = 0; t < k; t++) {
        int64_t v = ti->dtype == IR_DTYPE_INT64 ? ((const int64_t *)idx)[r * k + t]
                                                : ((const int32_t *)idx)[r * k + t];
        *bad = v;
        if (v < 0) v += dims[t];
        if (v < 0 || v >= dims[t]) return -1;
        off = off * dims[t] + v;
    }
    return off;
}

/* ScatterND of run-time data (reduction none): y = data, each index row's slab
 * replaced by its slab of updates (of rows repeating an offset, the last one's). ScatterNDGrad(dY, indices): dData (dY with
 * those slabs 0) or, with updates, dUpdates (those slabs of dY, in index order). */
static int scatter_nd_run(const kernel_args *a, bool grad, oc_err *err) {
    const ir_tensor *x = kernel_in(a, 0), *ti = kernel_in(a, 1);
    size_t es = esize(a, x, err);
    if (!es) return OC_ERR;
    int k = (int)ti->dims[ti->rank - 1];
    int64_t rows = kernel_numel(ti) / k, slab = prod(x->dims, k, x->rank);
    size_t row = (size_t)slab * es;
    bool updates = grad && op_args_of(a->n)->scatter_nd_grad.updates;
    if (!updates && a->out[0] != a->in[0])
        memcpy(a->out[0], a->in[0], (size_t)kernel_numel(x) * es);
    for (int64_t r = 0; r < rows; r++) {
        int64_t bad, off = scatter_block(ti, a->in[1], r, k, x->dims, &bad);
        if (off < 0)
            return kernel_fail(a, err, "indices '%s' row %" PRId64 ": %" PRId64 " is outside '%s'",
                               ti->name, r, bad, x->name);
        char *at = (char *)(updates ? a->in[0] : a->out[0]) + (size_t)off * row;
        if (updates) memcpy((char *)a->out[0] + (size_t)r * row, at, row);
        else if (grad) memset(at, 0, row);
        else memcpy(at, (const char *)a->in[2] + (size_t)r * row, row);
    }
    return OC_OK;
}

int cpu_scatter_nd(const kernel_args *a, oc_err *err) { return scatter_nd_run(a, false, err); }

int cpu_scatter_nd_grad(const kernel_args *a, oc_err *err) { return scatter_nd_run(a, true, err); }
