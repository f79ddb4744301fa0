/* emu.h — the CUDA emulator's own interface (tests/emu/): what the fake
 * cuda_runtime.h, cudnn.h and cublas_v2.h share. The emulator lets the cuda
 * backend (runtime/cuda/) build and run on a machine without a GPU
 * (`make CUDA=emu`): "device" memory is host memory tracked by the emulator,
 * each cudaStream_t is a FIFO run by its own host thread, events order streams
 * exactly as CUDA's do, and cuDNN/cuBLAS calls are reference loops. It checks
 * what a GPU would not forgive: a device pointer that is not in a cudaMalloc
 * block, a copy whose direction does not match its pointers, allocation past
 * the emulated device size.
 *
 *   cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
 *   emu_stream_enqueue(s, run_my_work, ctx, sizeof *ctx);  // run_my_work(ctx) on s, in order;
 *                                                          // it frees ctx (malloc'd, plain data)
 *
 * Environment: EMU_DEVICE_BYTES (default 80 GiB) is the emulated device's
 * memory; cudaMalloc past it fails with cudaErrorMemoryAllocation.
 * EMU_CAPTURE_FAIL_AT=N: the N-th item a stream capture records invalidates
 * it (the enqueuing call's cudaGetLastError says so), to test fallbacks.
 * EMU_DEVICE_NAME: the name cudaGetDeviceProperties gives (default "outcore CUDA
 * emulator", which matches no device preset), e.g. an H100's, to run as on one. */
#ifndef OC_EMU_H
#define OC_EMU_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emu_stream *cudaStream_t;

/* Runs fn(ctx) on stream s's thread after everything enqueued on s before it
 * (and after the events s was told to wait for). s == NULL is the legacy
 * default stream: waits until every stream is drained, then runs fn(ctx) in
 * the calling thread. fn owns ctx (frees it with free()). ctx is `size` bytes
 * of plain data: while s is captured (cudaStreamBeginCapture) the item is
 * recorded, and each graph launch runs fn on a fresh copy of those bytes. */
void emu_stream_enqueue(cudaStream_t s, void (*fn)(void *ctx), void *ctx, size_t size);

/* True when [p, p + bytes) lies inside one live cudaMalloc block. */
bool emu_is_device_range(const void *p, size_t bytes);

/* Runs a kernel launch on the calling (stream) thread: fn(ctx) once per thread of
 * min(grid, EMU_GRID_MAX (default 2)) blocks of `block` threads, each with its own
 * emu_tid / emu_bid and the launch's emu_bdim / emu_gdim (threadIdx.x, blockIdx.x,
 * blockDim.x, gridDim.x of the .cu files; emu_grid.c). */
void emu_run_grid(unsigned grid, unsigned block, void (*fn)(void *ctx), void *ctx);
/* __shfl_xor_sync of the running thread's warp: v's 8 bytes exchanged (emu_grid.c). */
unsigned long long emu_shfl_xor(unsigned mask, unsigned long long v, int lane_mask);
/* __syncthreads: waits until every thread of the running block is there (emu_grid.c). */
void emu_syncthreads(void);
extern __thread unsigned emu_tid, emu_bid, emu_bdim, emu_gdim;

/* Records an error of asynchronous work (as a kernel fault would): the next
 * cudaStreamSynchronize / cudaDeviceSynchronize / cudaGetLastError returns it.
 * what is printed to stderr once. */
void emu_async_error(int cuda_error, const char *what);

#ifdef __cplusplus
}
/* Kernel launch in the .cu files, rewritten from `k<<<grid, block, shm, s>>>(args)`
 * by tests/emu/cu2cpp.pl into `emu_launch(s, grid, block, [=] { k(args); })`: on
 * stream s, every thread of the launch's blocks runs k (emu_run_grid; at most
 * EMU_GRID_MAX blocks: the kernels are grid-stride loops), warp shuffles exchange
 * lanes' values as on a GPU, __syncthreads holds a block's threads together,
 * __shared__ arrays are static per stream thread (no dynamic shared memory). */
#include <new>
#include <stdlib.h>
#include <type_traits>
#include <stdio.h>
#include <string.h>
/* The block size the running kernel was launched with: a kernel whose reductions
 * assume one warp a block (or ROW_BLOCK threads) checks it at once, by name. */
inline thread_local unsigned emu_launch_block = 1;
static inline void emu_require_block(unsigned want, const char *what) {
    if (emu_launch_block == want) return;
    fprintf(stderr, "emu: %s needs blocks of %u threads; the kernel was launched with %u\n", what,
            want, emu_launch_block);
    abort();
}
template <typename F>
static inline void emu_launch(cudaStream_t s, unsigned grid, unsigned block, F f) {
    /* plain data (the kernel's arguments by value), so a graph replays a byte copy */
    static_assert(std::is_trivially_copyable<F>::value, "kernel arguments must be plain data");
    struct box {
        F f;
        unsigned grid, block;
        static void call(void *p) { (*(F *)p)(); }
        static void run(void *p) {
            box *b = (box *)p;
            emu_launch_block = b->block;
            emu_run_grid(b->grid, b->block, call, &b->f);
            b->~box();
            free(b);
        }
    };
    void *mem = malloc(sizeof(box));
    if (!mem) abort();
    emu_stream_enqueue(s, box::run, new (mem) box{f, grid, block}, sizeof(box));
}
#endif

#endif
