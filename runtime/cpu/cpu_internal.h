/* cpu_internal.h — helpers shared by the cpu backend's kernel files
 * (runtime/cpu/cpu_*.c). Not an interface for other modules: the executor
 * calls kernels only through runtime/kernels.h.
 *
 * Every kernel has the signature cpu_kernel_fn and is named cpu_<kern> after
 * its op's row in ir/ops/op_list.h; cpu_kernels.c's dispatch table is made
 * from the list. A kernel reads shapes and dtypes from the IR (a->g, a->n),
 * its arguments from op_args_of(a->n) — decoded and checked at load, never raw
 * attributes — and data from a->in / a->out; it reports what it cannot do
 * (dtypes) with kernel_fail, whose message names the node and op. */
#ifndef OC_CPU_INTERNAL_H
#define OC_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

typedef int (*cpu_kernel_fn)(const kernel_args *a, oc_err *err);
typedef size_t (*cpu_scratch_fn)(const ir_graph *g, const ir_node *n);

/* Reads element i of a float/double/int tensor's data as double. */
double cpu_load_f(const void *p, ir_dtype dt, int64_t i);

/* Row-major strides of dims (rank r) into s. */
void cpu_strides(int r, const int64_t *dims, int64_t *s);
/* Strides that broadcast a tensor (rank tr, dims td) to an output of rank r,
 * dims od: 0 where td's dim is 1 (or missing), row-major otherwise. */
void cpu_bcast_strides(int tr, const int64_t *td, int r, const int64_t *od, int64_t *s);

/* Window geometry of convolution and pooling, resolved against tensor
 * shapes: for each of nsp spatial dims the "image" extent (im2col reads it,
 * col2im writes it) and the "column" extent (output positions). */
typedef struct cpu_window {
    int nsp;
    int64_t img[IR_MAX_RANK], col[IR_MAX_RANK];
    int64_t kernel[IR_MAX_RANK], stride[IR_MAX_RANK], dilation[IR_MAX_RANK];
    int64_t pad[IR_MAX_RANK], pad_end[IR_MAX_RANK]; /* begin / end padding */
    int64_t img_size, col_size, k_size;             /* products */
} cpu_window;
/* The window of a node's decoded arguments (op_args.h) against image dims img
 * and column dims col (both nsp long). */
void cpu_window_of(const op_window *ow, int nsp, const int64_t *img, const int64_t *col,
                   cpu_window *w);

/* im2col: img (C, img..) -> col (C * k_size, col_size); padding reads 0. */
void cpu_im2col(const float *img, int64_t channels, const cpu_window *w, float *col);
/* col2im: adds col (C * k_size, col_size) into img (C, img..), which the
 * caller zeroes first. Fixed order: deterministic. */
void cpu_col2im(const float *col, int64_t channels, const cpu_window *w, float *img);

/* C (m, n) = alpha * op(A) op(B) + beta * C, row-major, via OpenBLAS
 * (single-threaded, see cpu_gemm.c: bitwise repeatable). */
void cpu_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* Kernels: cpu_<kern> for every op of the list (ir/ops/op_list.h), defined
 * in the cpu_*.c file of its family; the table in cpu_kernels.c is generated
 * from the list, so a missing kernel is a link error. */
#define CPU_KERNEL_DECL(kind, name, domain, def, kern)                                             \
    int cpu_##kern(const kernel_args *a, oc_err *err);
OC_OPS_COMPUTE(CPU_KERNEL_DECL)
#undef CPU_KERNEL_DECL

/* Scratch of the kernels that need it (im2col / col2im buffers). */
size_t cpu_conv_scratch(const ir_graph *g, const ir_node *n);
size_t cpu_attention_scratch(const ir_graph *g, const ir_node *n);
size_t cpu_conv_transpose_scratch(const ir_graph *g, const ir_node *n);

#endif
