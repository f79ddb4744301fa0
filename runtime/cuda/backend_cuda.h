/* backend_cuda.h — the cuda backend (DESIGN §8) and its profiler.
 *
 *   rt_backend *b;
 *   if (rt_backend_cuda_new(&b, &err)) { puts(err.msg); ... }  // "no CUDA GPU ..." without one
 *   ... rt_exec_new / rt_exec_step as with the cpu backend ...
 *   rt_cuda_profile_start(b, tg->g, &err);        // after the warm-up step(s)
 *   ... more steps: every node is timed with CUDA events ...
 *   rt_cuda_profile_write(b, tg, batch, "profile.json", &err);  // medians, copy bandwidth
 *
 * What it is: one cudaMalloc per dev_alloc (the executor makes one arena),
 * cudaHostAlloc'd pinned host memory (the executor allocates it once; its size
 * is printed to stderr), three cudaStream_t (compute, D2H, H2D), events as
 * cudaEvent_t, cuDNN for convolutions, batch normalisation and max pooling, cuBLAS
 * (fp32, no TF32) for Gemm, small kernels (cuda_ops.cu) for the rest. TF32 is
 * allowed in convolutions (CUDNN_DEFAULT_MATH, PyTorch's default). Every CUDA,
 * cuDNN and cuBLAS call is checked (cuda_internal.h: CU_CHECK): a failure
 * becomes an oc_err naming the call, file:line and node, reported by sync.
 *
 * Built only when the Makefile finds the CUDA toolkit (CUDA=1, the default
 * when /usr/local/cuda exists); otherwise cuda_none.c provides these functions
 * and they fail with a one-line "not built" message. */
#ifndef OC_BACKEND_CUDA_H
#define OC_BACKEND_CUDA_H

#include "backend.h"
#include "train/train_graph.h"

/* The cuda backend on device 0. OC_ERR with one line when the build has no
 * CUDA, or no GPU is usable (cudaGetDeviceCount fails or reports 0). */
int rt_backend_cuda_new(rt_backend **out, oc_err *err);
/* True when this build contains the cuda backend. */
bool rt_backend_cuda_built(void);

/* From now on every node run on b is timed (CUDA events around it; samples
 * are gathered at each sync, keyed by node index in g). OC_ERR if b is not
 * the cuda backend. */
int rt_cuda_profile_start(rt_backend *b, const ir_graph *g, oc_err *err);
/* Writes profile.json (planner/profile.h format, source "measured"): per
 * node the median of its samples (0 and a warning on stderr for nodes never
 * run as kernels, e.g. copies), workspace = scratch_bytes; device: name and
 * memory from cudaGetDeviceProperties, H2D/D2H bandwidth measured on pinned
 * buffers (each way, and both at once for `duplex`), copy latency from small
 * copies; peak FLOP/s and memory bandwidth from the h100 preset. Prints the
 * copy figures to stdout. OC_ERR on CUDA failures or write errors. */
int rt_cuda_profile_write(rt_backend *b, const train_graph *tg, int64_t batch, const char *path,
                          oc_err *err);
/* Device bytes in use now (cudaMemGetInfo total - free: context, library
 * handles, arena, workspaces), or -1 when b is not the cuda backend. */
int64_t rt_cuda_device_used(rt_backend *b);

/* True when the cuda backend has a kernel for op kind op. Pure table lookup:
 * works in every build and without a GPU (cuda_table.c). */
bool cuda_kernel_supported(int op);

#endif
