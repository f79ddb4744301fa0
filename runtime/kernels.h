/* kernels.h — the contract between the executor and a backend's kernels.
 *
 * A kernel runs one node of a (training) graph. Shapes, dtypes and attributes
 * come from the IR (g->tensors[n->inputs[i]], ir_attr_*); data pointers come
 * from the executor, which owns all memory (arena offsets or host buffers).
 *
 *   kernel_args a = {.g = g, .n = &g->nodes[i], .in = in_ptrs, .out = out_ptrs,
 *                    .seed = 42, .step = 3, .scratch = ws, .scratch_bytes = ws_len};
 *   if (cpu_kernel_run(&a, &err)) { fprintf(stderr, "%s\n", err.msg); ... }
 *
 * Rules every kernel follows:
 *   - in[i] / out[i] are NULL exactly when the node's input/output i is omitted;
 *   - outputs never alias inputs, except the in-place outputs an op declares in
 *     its table entry (op_def.aliases: BN running statistics, SGDMomentum), where
 *     out[o] == in[aliases[o]] and the kernel updates in place;
 *   - a kernel writes every byte of every present output (no reliance on zeroed
 *     memory) and never touches memory outside its inputs, outputs and scratch;
 *   - randomness (Dropout) is a pure function of (seed, step, node name, element
 *     index): a recomputation reproduces the same mask bit for bit;
 *   - results are deterministic: same inputs, same bits (no data races, fixed
 *     reduction order), so plans that swap or recompute match in-core bitwise.
 *     The cuda backend keeps this only with --deterministic (OC_CUDNN_DETERMINISTIC):
 *     by default it takes cuDNN's fastest algorithms, some of which use atomics,
 *     and reuses the forward's BatchNorm statistics (runtime/cuda/cuda_dnn.c).
 * Unsupported attribute values are reported as errors naming node and attribute,
 * never skipped silently.
 *
 * cpu backend (runtime/cpu/): kernels per file, one dispatch table in
 * cpu_kernels.c; OpenBLAS is set to one thread on the first sgemm (cpu_gemm.c)
 * so results are bitwise repeatable and kernels may run on several executor
 * threads; Dropout's RNG is runtime/cpu/cpu_rng.h. */
#ifndef OC_KERNELS_H
#define OC_KERNELS_H

#include "ir/ir.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"

typedef struct kernel_args {
    const ir_graph *g;
    const ir_node *n;
    void *const *in;      /* n->n_inputs pointers */
    void *const *out;     /* n->n_outputs pointers */
    uint64_t seed;        /* run seed (Dropout) */
    int64_t step;         /* training step, from 0 (Dropout) */
    void *scratch;        /* cpu_kernel_scratch_bytes(g, n) bytes, or NULL if 0 */
    size_t scratch_bytes;
} kernel_args;

/* Helpers every backend's kernels share. */
/* Tensor of input / output i, or NULL when omitted. */
const ir_tensor *kernel_in(const kernel_args *a, int i);
const ir_tensor *kernel_out(const kernel_args *a, int i);
/* Element count of a tensor with a static shape (bug if unknown). */
int64_t kernel_numel(const ir_tensor *t);
/* OC_ERR with "node '<name>' (<op>): <message>". */
int kernel_fail(const kernel_args *a, oc_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fails naming the tensor unless its dtype is dt. */
int kernel_want_dtype(const kernel_args *a, const ir_tensor *t, ir_dtype dt, oc_err *err);

/* Pad and PadGrad parameters every backend reads the same way. */
typedef enum kernel_pad_mode {
    KERNEL_PAD_CONSTANT = 0,
    KERNEL_PAD_REFLECT = 1,
    KERNEL_PAD_EDGE = 2,
} kernel_pad_mode;
/* The "mode" attribute; OC_ERR naming it when unsupported. */
int kernel_pad_mode_of(const kernel_args *a, kernel_pad_mode *mode, oc_err *err);
/* Opset < 11 Pad: begin pads and the fill element (x's dtype, in *fill) from
 * the pads/value attributes; the end pads follow from the output shape. */
int kernel_pad_attrs(const kernel_args *a, const ir_tensor *x, int64_t *begin, uint64_t *fill,
                     oc_err *err);
/* PadGrad: begin offsets into dY (minus the forward begin pads) from "pads". */
int kernel_pad_grad_begin(const kernel_args *a, int rank, int64_t *begin, oc_err *err);

/* Runs the node on the CPU. OC_ERR with a message naming the node on an
 * unsupported op or attribute value. Thread-safe for distinct outputs. */
int cpu_kernel_run(const kernel_args *a, oc_err *err);

/* Scratch the CPU kernel of this node needs (e.g. im2col buffers). */
size_t cpu_kernel_scratch_bytes(const ir_graph *g, const ir_node *n);

/* True when the CPU backend has a kernel for op kind op (op_list.h). */
bool cpu_kernel_supported(int op);

#endif
