/* cpu_kernels.c — the cpu backend's dispatch table (one row per op) and the
 * helpers every kernel file shares. See kernels.h for the contract. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cpu_internal.h"
#include "ir/half.h"
#include "ir/ops/op_table.h"

/* Indexed by op_kind: every computing op of the list has its cpu_<kern>. */
static const cpu_kernel_fn cpu_kernels[OP__COUNT] = {
#define CPU_KERNEL_ROW(kind, name, domain, def, kern) [OP_##kind] = cpu_##kern,
    OC_OPS_COMPUTE(CPU_KERNEL_ROW)
#undef CPU_KERNEL_ROW
};

/* The kernels that need scratch; NULL: none. */
static const cpu_scratch_fn cpu_scratch[OP__COUNT] = {
    [OP_CONV] = cpu_conv_scratch,
    [OP_CONV_RELU] = cpu_conv_scratch,
    [OP_CONV_BACKWARD_DATA] = cpu_conv_scratch,
    [OP_CONV_BACKWARD_FILTER] = cpu_conv_scratch,
    [OP_CONV_TRANSPOSE] = cpu_conv_transpose_scratch,
    [OP_CONV_TRANSPOSE_BACKWARD_DATA] = cpu_conv_transpose_scratch,
    [OP_CONV_TRANSPOSE_BACKWARD_FILTER] = cpu_conv_transpose_scratch,
    [OP_FUSED_ATTENTION] = cpu_attention_scratch,
    [OP_FUSED_ATTENTION_GRAD] = cpu_attention_scratch,
};

bool cpu_kernel_supported(int op) { return op >= 0 && op < OP__COUNT && cpu_kernels[op]; }

size_t cpu_kernel_scratch_bytes(const ir_graph *g, const ir_node *n) {
    cpu_scratch_fn f = n->op >= 0 && n->op < OP__COUNT ? cpu_scratch[n->op] : NULL;
    if (!f) return 0;
    if (!n->channels_last) return f(g, n);
    ir_node_view v; /* the kernel runs on the logical view (run_view) */
    ir_node_view_init(&v, g, n);
    ir_node_view_logical(&v);
    v.n.channels_last = false;
    size_t s = f(&v.g, &v.n);
    ir_node_view_free(&v);
    return s;
}

/* ---- float16 / bfloat16 (mixed precision): the kernel runs in float32 on
 * widened copies of the half inputs, and each half output is rounded to
 * nearest even once when stored (ir/half.h) — PyTorch's arithmetic for half
 * tensors on the cpu (float32 accumulation, one rounding per op). Cast is the
 * one kernel that sees half tensors. Channels-last nodes run the same way on
 * (N, C, H, W) copies of their rank-4 tensors: the same arithmetic, so a
 * channels-last step equals the model's own bit for bit. ---- */

/* Element i of slot k's view buffer from (to_view) or to its own bytes. */
static void view_copy(const kernel_view *v, int k, void *own, void *buf, bool to_view) {
    const ir_tensor *t = &v->base.t[k];
    int64_t numel = kernel_numel(t), C = 1, H = 1, W = 1;
    bool tr = kernel_view_nhwc(v, k), half = kernel_view_half(v, k);
    if (tr) C = t->dims[1], H = t->dims[2], W = t->dims[3];
    size_t es = (size_t)ir_dtype_size(t->dtype);
    for (int64_t i = 0; i < numel; i++) {
        int64_t j = i; /* (n, c, h, w) in the view is (n, h, w, c) in its own bytes */
        if (tr) {
            int64_t w = i % W, h = i / W % H, c = i / (W * H) % C, n = i / (W * H * C);
            j = ((n * H + h) * W + w) * C + c;
        }
        if (half && to_view) ((float *)buf)[i] = half_to_f32(v->was[k], ((const uint16_t *)own)[j]);
        else if (half) ((uint16_t *)own)[j] = half_from_f32(v->was[k], ((const float *)buf)[i]);
        else if (to_view)
            memcpy((char *)buf + (size_t)i * es, (const char *)own + (size_t)j * es, es);
        else memcpy((char *)own + (size_t)j * es, (const char *)buf + (size_t)i * es, es);
    }
}

/* The node on its view (kernels.h): half inputs widened and channels-last
 * ones transposed into buffers made here, such outputs stored back; every
 * buffer freed here. */
static int run_view(const kernel_args *a, oc_err *err) {
    const ir_node *n = a->n;
    int ni = n->n_inputs, nt = ni + n->n_outputs;
    kernel_view v;
    kernel_view_init(&v, a->g, n, true, true);
    void **ptr = oc_calloc((size_t)nt + 1, sizeof *ptr);
    bool *own = oc_calloc((size_t)nt + 1, sizeof *own);
    for (int k = 0; k < nt; k++) {
        ptr[k] = k < ni ? a->in[k] : a->out[k - ni];
        if (!kernel_view_moved(&v, k)) continue;
        int shared = -1; /* an in-place output reads and writes its input's copy */
        for (int j = 0; k >= ni && j < ni; j++)
            if (own[j] && a->in[j] == a->out[k - ni]) shared = j;
        if (shared >= 0) {
            ptr[k] = ptr[shared];
            continue;
        }
        int64_t numel = kernel_numel(&v.base.t[k]);
        void *f = oc_malloc((size_t)(numel ? numel : 1) * (size_t)ir_dtype_size(v.base.t[k].dtype));
        if (k < ni) view_copy(&v, k, a->in[k], f, true);
        ptr[k] = f;
        own[k] = true;
    }
    kernel_args b = *a;
    b.g = &v.base.g;
    b.n = &v.base.n;
    b.in = ptr;
    b.out = ptr + ni;
    b.stored = v.was;
    int rc = cpu_kernels[n->op](&b, err);
    for (int k = ni; rc == OC_OK && k < nt; k++)
        if (kernel_view_moved(&v, k)) view_copy(&v, k, a->out[k - ni], ptr[k], false);
    for (int k = 0; k < nt; k++)
        if (own[k]) oc_free(ptr[k]);
    oc_free(ptr), oc_free(own);
    kernel_view_free(&v);
    return rc;
}

int cpu_kernel_run(const kernel_args *a, oc_err *err) {
    if (!cpu_kernel_supported(a->n->op))
        return oc_fail(err, "node '%s': op %s%s%s has no cpu kernel", a->n->name,
                       *a->n->domain ? a->n->domain : "", *a->n->domain ? "." : "", a->n->op_type);
    OC_ASSERT(a->scratch_bytes >= cpu_kernel_scratch_bytes(a->g, a->n));
    if (kernel_touches_half(a->g, a->n) || a->n->channels_last) return run_view(a, err);
    return cpu_kernels[a->n->op](a, err);
}

/* ---- shared helpers ---- */

double cpu_load_f(const void *p, ir_dtype dt, int64_t i) {
    switch (dt) {
    case IR_DTYPE_FLOAT: return ((const float *)p)[i];
    case IR_DTYPE_DOUBLE: return ((const double *)p)[i];
    case IR_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case IR_DTYPE_INT32: return ((const int32_t *)p)[i];
    case IR_DTYPE_INT8: return ((const int8_t *)p)[i];
    case IR_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case IR_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: OC_ASSERT(false && "cpu_load_f: unsupported dtype");
    }
    return 0;
}

void cpu_strides(int r, const int64_t *dims, int64_t *s) {
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        s[i] = acc;
        acc *= dims[i];
    }
}

void cpu_bcast_strides(int tr, const int64_t *td, int r, const int64_t *od, int64_t *s) {
    int64_t own[IR_MAX_RANK];
    cpu_strides(tr, td, own);
    for (int i = 0; i < r; i++) {
        int j = i - (r - tr);
        s[i] = (j < 0 || td[j] == 1 || od[i] == 1) ? 0 : own[j];
    }
}
