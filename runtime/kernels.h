/* kernels.h — the contract between the executor and a backend's kernels.
 *
 * A kernel runs one node of a (training) graph. Shapes and dtypes come from
 * the IR (g->tensors[n->inputs[i]]), the node's arguments from op_args_of(n):
 * decoded and checked against the shapes once, at load (ir/ops/op_args.h) —
 * kernels never read raw attributes; data pointers come from the executor,
 * which owns all memory (arena offsets or host buffers).
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
 *     index), the name hashed at load (op_dropout_args.key_hash; a recompute
 *     clone carries its original's): a recomputation reproduces the mask bit for bit;
 *   - results are deterministic: same inputs, same bits (no data races, fixed
 *     reduction order), so plans that swap or recompute match in-core bitwise.
 *     The cuda backend keeps this only with --deterministic (OC_CUDNN_DETERMINISTIC):
 *     by default it takes cuDNN's fastest algorithms, some of which use atomics,
 *     and reuses the forward's BatchNorm statistics (runtime/cuda/cuda_norm.c).
 * Argument values the decoder accepts but a backend cannot run (a dtype, an
 * asymmetric cuDNN padding) are reported as errors naming the node, never
 * skipped silently.
 *
 * Dispatch: each backend's table is indexed by op_kind and generated from the
 * op list (ir/ops/op_list.h): cpu_<kern> (runtime/cpu/cpu_kernels.c),
 * cuda_<kern> (runtime/cuda/cuda_kernels.c); a missing kernel fails to link.
 * cpu backend (runtime/cpu/): OpenBLAS is set to one thread on the first sgemm (cpu_gemm.c)
 * so results are bitwise repeatable and kernels may run on several executor
 * threads; Dropout's RNG is runtime/cpu/cpu_rng.h. */
#ifndef OC_KERNELS_H
#define OC_KERNELS_H

#include "ir/ir.h"
#include "ir/ops/op_args.h"
#include "ir/ops/op_table.h"
#include "resize_coord.h"

typedef struct kernel_args {
    const ir_graph *g;
    const ir_node *n;
    void *const *in;  /* n->n_inputs pointers */
    void *const *out; /* n->n_outputs pointers */
    uint64_t seed;    /* run seed (Dropout) */
    int64_t step;     /* training step, from 0 (Dropout) */
    void *scratch;    /* cpu_kernel_scratch_bytes(g, n) bytes, or NULL if 0 */
    size_t scratch_bytes;
    /* per slot (inputs, then outputs): the type a tensor is stored in when the
     * kernel runs on a widened view (below) — for a kernel that must round a
     * value as its stored output was rounded; NULL: as g says */
    const ir_dtype *stored;
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
/* A Resize's or ResizeGrad's taps, as runtime/resize_coord.h reads them. */
oc_resize_kind kernel_resize_kind(const kernel_args *a);
/* Fails naming the tensor unless its dtype is dt. */
int kernel_want_dtype(const kernel_args *a, const ir_tensor *t, ir_dtype dt, oc_err *err);
/* An optimizer update node's slots (ir/ops/op_update.h, checked at inference), its
 * members' W, dW and state float32 (else an error naming the tensor). */
struct op_update_layout;
int kernel_update_layout(const kernel_args *a, struct op_update_layout *l, oc_err *err);

/* Mixed precision: a node with float16/bfloat16 tensors runs its float32
 * kernel on a view of it (ir_node_view) with every half tensor retyped
 * float32, whose buffers the backend fills with widened copies and narrows
 * back (cpu_kernels.c, cuda_kernels.c). Cast and CastLike see half tensors
 * themselves; SwapOut and SwapIn (copies, no kernel) are not touched.
 * Channels-last nodes (ir.h) are seen in their logical layout: with
 * transpose, the view is an (N, C, H, W) node and its rank-4 tensors are
 * copies the backend transposes in and out (with any widening); without, the
 * view keeps channels_last and the bytes where they are (a kernel that reads
 * channels-last itself: cuDNN's convolutions). */
bool kernel_touches_half(const ir_graph *g, const ir_node *n);
typedef struct kernel_view {
    ir_node_view base;
    ir_dtype *was; /* per slot: the tensor's own type */
    bool nhwc;     /* rank-4 slots are transposed copies */
} kernel_view;
/* widen: half tensors float32 in the view; transpose: see above. */
void kernel_view_init(kernel_view *v, const ir_graph *g, const ir_node *n, bool widen,
                      bool transpose);
void kernel_view_free(kernel_view *v);
/* Slot k of the view is a half tensor (widened in the view). */
bool kernel_view_half(const kernel_view *v, int k);
/* Slot k is a channels-last tensor transposed in the view. */
bool kernel_view_nhwc(const kernel_view *v, int k);
/* Slot k's view buffer is a copy (widened, transposed or both). */
bool kernel_view_moved(const kernel_view *v, int k);

/* Softmax-family rows of tensor t (op_softmax_args): outer rows of D
 * elements, `inner` apart. */
void kernel_softmax_rows(const kernel_args *a, const ir_tensor *t, int64_t *outer, int64_t *D,
                         int64_t *inner);

/* Runs the node on the CPU. OC_ERR with a message naming the node on an
 * unsupported op or attribute value. Thread-safe for distinct outputs. */
int cpu_kernel_run(const kernel_args *a, oc_err *err);

/* Scratch the CPU kernel of this node needs (e.g. im2col buffers). */
size_t cpu_kernel_scratch_bytes(const ir_graph *g, const ir_node *n);

/* True when the CPU backend has a kernel for op kind op (op_list.h). */
bool cpu_kernel_supported(int op);

#endif
