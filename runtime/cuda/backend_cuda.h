/* backend_cuda.h — the cuda backend's registry entry (backend.h; DESIGN §8).
 *
 * What it is: one cudaMalloc per dev_alloc (the executor makes one arena),
 * cudaHostAlloc'd pinned host memory (the executor allocates it once; its size
 * is printed to stderr), three cudaStream_t (compute, D2H, H2D), events as
 * cudaEvent_t, cuDNN for convolutions, batch normalisation and max pooling, cuBLAS
 * for Gemm / MatMul, small kernels (cuda_*.cu) for the rest; half tensors
 * natively where cuda_native_half says so (below). TF32 as PyTorch's defaults:
 * on in convolutions, off in matmuls (--tf32-conv, --tf32-matmul). Every CUDA,
 * cuDNN and cuBLAS call is checked (cuda_internal.h: CU_CHECK): a failure
 * becomes an oc_err naming the call, file:line and node, reported by sync.
 * Options (rt_backend_opts): deterministic, verbose, workspace_limit (cuda_conv.c).
 * Its optional vtable entries: profile_start / profile_write (cuda_profile.c:
 * per-node CUDA-event medians, copy bandwidth and latency measured on pinned
 * buffers, as a "measured" profile.json) and device_used (cudaMemGetInfo).
 *
 * Built only when the Makefile finds the CUDA toolkit (CUDA=1, the default
 * when /usr/local/cuda exists); otherwise cuda_none.c provides the entry point
 * and it fails with a one-line "not built" message. */
#ifndef OC_BACKEND_CUDA_H
#define OC_BACKEND_CUDA_H

#include "backend.h"

/* The cuda backend on device 0. OC_ERR with one line when the build has no
 * CUDA, or no GPU is usable (cudaGetDeviceCount fails or reports 0). */
int rt_backend_cuda_new(const rt_backend_opts *opts, rt_backend **out, oc_err *err);
/* True when this build contains the cuda backend. */
bool rt_backend_cuda_built(void);

/* True when the cuda backend has a kernel for op kind op. Pure table lookup:
 * works in every build and without a GPU (cuda_table.c). */
bool cuda_kernel_supported(int op);

/* Mixed precision: a convolution-family, MatMul[Grad] or Gemm node whose
 * tensors are all of one half type runs its cuDNN / cuBLAS call on them
 * directly (tensor cores, float accumulation, each output rounded once; a
 * conv's bias added after the rounding, as PyTorch's), and BatchNormRelu,
 * BatchNormalization and their gradients outcore's kernels on half data
 * (float32 statistics); every other node with half tensors runs widened
 * (cuda_kernels.c). Pure, every build (cuda_table.c). */
bool cuda_native_half(const ir_graph *g, const ir_node *n);
/* The BN family's data tensors' type (X, R, Y; dY, Y, X, dX) when they share
 * one float type and every other tensor is float32; else UNDEFINED. */
ir_dtype cuda_bn_relu_data_type(const ir_graph *g, const ir_node *n);

#endif
