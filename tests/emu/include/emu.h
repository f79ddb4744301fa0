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
 * it (the enqueuing call's cudaGetLastError says so), to test fallbacks. */
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

/* Records an error of asynchronous work (as a kernel fault would): the next
 * cudaStreamSynchronize / cudaDeviceSynchronize / cudaGetLastError returns it.
 * what is printed to stderr once. */
void emu_async_error(int cuda_error, const char *what);

#ifdef __cplusplus
}
/* Kernel launch in the .cu files, rewritten from `k<<<grid, block, shm, s>>>(args)`
 * by tests/emu/cu2cpp.pl into `emu_launch(s, block, [=] { k(args); })`: the kernel runs
 * once on stream s with blockIdx = threadIdx = 0 and blockDim = gridDim = 1, so
 * a grid-stride loop covers every index. (No __shared__, no __syncthreads.) */
#include <new>
#include <stdlib.h>
#include <type_traits>
#include <stdio.h>
/* The block size the running kernel was launched with (the emulated kernel itself sees
 * blockDim 1): a kernel whose reductions assume one warp a block checks it, since the
 * emulator's one lane would compute the right result whatever the launch said. */
inline thread_local unsigned emu_launch_block = 1;
static inline void emu_require_block(unsigned want, const char *what) {
    if (emu_launch_block == want) return;
    fprintf(stderr, "emu: %s needs blocks of %u threads; the kernel was launched with %u\n", what,
            want, emu_launch_block);
    abort();
}
template <typename F> static inline void emu_launch(cudaStream_t s, unsigned block, F f) {
    /* plain data (the kernel's arguments by value), so a graph replays a byte copy */
    static_assert(std::is_trivially_copyable<F>::value, "kernel arguments must be plain data");
    struct box {
        F f;
        unsigned block;
        static void run(void *p) {
            box *b = (box *)p;
            emu_launch_block = b->block;
            b->f();
            b->~box();
            free(b);
        }
    };
    void *mem = malloc(sizeof(box));
    if (!mem) abort();
    emu_stream_enqueue(s, box::run, new (mem) box{f, block}, sizeof(box));
}
#endif

#endif
