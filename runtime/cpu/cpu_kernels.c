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
    return f ? f(g, n) : 0;
}

/* ---- float16 / bfloat16 (mixed precision): the kernel runs in float32 on
 * widened copies of the half inputs, and each half output is rounded to
 * nearest even once when stored (ir/half.h) — PyTorch's arithmetic for half
 * tensors on the cpu (float32 accumulation, one rounding per op). Cast is the
 * one kernel that sees half tensors. ---- */

static bool touches_half(const kernel_args *a) {
    if (a->n->op == OP_CAST || a->n->op == OP_CAST_LIKE) return false;
    for (int k = 0; k < a->n->n_inputs + a->n->n_outputs; k++) {
        const ir_tensor *t =
            k < a->n->n_inputs ? kernel_in(a, k) : kernel_out(a, k - a->n->n_inputs);
        if (t && ir_dtype_is_half(t->dtype)) return true;
    }
    return false;
}

/* The node over a graph of its own tensors only (slot k: input k, then the
 * outputs), half ones as float32 copies. Every buffer made here is freed here. */
static int run_widened(const kernel_args *a, oc_err *err) {
    const ir_node *n = a->n;
    int ni = n->n_inputs, nt = ni + n->n_outputs;
    ir_tensor *ts = oc_calloc((size_t)nt, sizeof *ts);
    int *slot = oc_malloc((size_t)nt * sizeof *slot);
    void **ptr = oc_calloc((size_t)nt, sizeof *ptr);
    bool *own = oc_calloc((size_t)nt, sizeof *own);
    ir_dtype *was = oc_calloc((size_t)nt, sizeof *was);
    for (int k = 0; k < nt; k++) {
        int t = k < ni ? n->inputs[k] : n->outputs[k - ni];
        slot[k] = t < 0 ? -1 : k;
        if (t < 0) continue;
        ts[k] = a->g->tensors[t]; /* a shallow view: names and dims shared */
        ptr[k] = k < ni ? a->in[k] : a->out[k - ni];
        was[k] = ts[k].dtype;
        if (!ir_dtype_is_half(was[k])) continue;
        ts[k].dtype = IR_DTYPE_FLOAT;
        int64_t numel = kernel_numel(&ts[k]);
        int shared = -1; /* an in-place output reads and writes its input's copy */
        for (int j = 0; k >= ni && j < ni; j++)
            if (own[j] && a->in[j] == a->out[k - ni]) shared = j;
        if (shared >= 0) {
            ptr[k] = ptr[shared];
            continue;
        }
        float *f = oc_malloc((size_t)(numel ? numel : 1) * sizeof(float));
        if (k < ni)
            for (int64_t i = 0; i < numel; i++)
                f[i] = half_to_f32(was[k], ((const uint16_t *)a->in[k])[i]);
        ptr[k] = f;
        own[k] = true;
    }
    ir_graph view_g = *a->g;
    view_g.tensors = ts;
    view_g.n_tensors = nt;
    ir_node view_n = *n;
    view_n.inputs = slot;
    view_n.outputs = slot + ni;
    kernel_args b = *a;
    b.g = &view_g;
    b.n = &view_n;
    b.in = ptr;
    b.out = ptr + ni;
    int rc = cpu_kernels[n->op](&b, err);
    for (int k = ni; rc == OC_OK && k < nt; k++) {
        if (slot[k] < 0 || !ir_dtype_is_half(was[k])) continue;
        int64_t numel = kernel_numel(&ts[k]);
        const float *f = ptr[k];
        uint16_t *h = a->out[k - ni];
        for (int64_t i = 0; i < numel; i++) h[i] = half_from_f32(was[k], f[i]);
    }
    for (int k = 0; k < nt; k++)
        if (own[k]) oc_free(ptr[k]);
    oc_free(ts), oc_free(slot), oc_free(ptr), oc_free(own), oc_free(was);
    return rc;
}

int cpu_kernel_run(const kernel_args *a, oc_err *err) {
    if (!cpu_kernel_supported(a->n->op))
        return oc_fail(err, "node '%s': op %s%s%s has no cpu kernel", a->n->name,
                       *a->n->domain ? a->n->domain : "", *a->n->domain ? "." : "", a->n->op_type);
    OC_ASSERT(a->scratch_bytes >= cpu_kernel_scratch_bytes(a->g, a->n));
    if (touches_half(a)) return run_widened(a, err);
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
