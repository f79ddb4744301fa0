/* cuda_runtime.h (emulator) — the subset of the CUDA runtime API that the cuda
 * backend (runtime/cuda/) and tests/gpu/ use, with CUDA's names, signatures
 * and semantics, implemented on the host by tests/emu/emu_runtime.c (see
 * emu.h). Built with `make CUDA=emu`; never on the include path of a real
 * CUDA build.
 *
 *   void *d; cudaStream_t s;
 *   cudaMalloc(&d, n); cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
 *   cudaMemcpyAsync(d, pinned, n, cudaMemcpyHostToDevice, s);  // runs on s's thread
 *   cudaStreamSynchronize(s);
 *
 * What differs from a GPU (on purpose): a launch's threads run one after
 * another on the stream's thread, at most EMU_GRID_MAX blocks of them (emu.h:
 * emu_launch, emu_run_grid; warp shuffles meet as on a GPU); a copy whose pointers contradict its
 * kind, or whose device side is not inside one cudaMalloc block, fails at the
 * call with cudaErrorInvalidValue; a device-to-pageable-host copy is always
 * asynchronous (a GPU may or may not block), a pageable-host-to-device copy
 * reads its source at the call (as the driver's staging does). Under
 * `#ifdef __cplusplus`, what .cu kernels need to compile as plain C++. */
#ifndef OC_EMU_CUDA_RUNTIME_H
#define OC_EMU_CUDA_RUNTIME_H

#include <stddef.h>

#include "emu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotPermitted = 800,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureUnmatched = 903,
    cudaErrorStreamCaptureUnjoined = 904,
    cudaErrorStreamCaptureIsolation = 905,
    cudaErrorUnknown = 999
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef struct emu_event *cudaEvent_t;
typedef struct emu_graph *cudaGraph_t;
typedef struct emu_graph_exec *cudaGraphExec_t;

typedef enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
} cudaStreamCaptureMode;

typedef enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2
} cudaStreamCaptureStatus;

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01

#define CUDART_CB
typedef void(CUDART_CB *cudaHostFn_t)(void *userData);

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int major, minor;
    int multiProcessorCount;
    int asyncEngineCount;
    int unifiedAddressing;
};

/* Device memory: 256-byte aligned, tracked; EMU_DEVICE_BYTES caps the total. */
cudaError_t cudaMalloc(void **devPtr, size_t size);
/* Implicitly synchronises the device (drains every stream), as CUDA does. */
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
/* Drains the stream and joins its thread. */
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);

/* Stream capture (CUDA graphs), emulated by recording the calls: between
 * cudaStreamBeginCapture(s) and cudaStreamEndCapture(s) work enqueued on s, and
 * on every stream that waits on an event recorded in the capture, is recorded,
 * not run. The checks CUDA makes: a capturing stream may not wait on an event
 * recorded outside the capture (cudaErrorStreamCaptureIsolation); every joined
 * stream must end with an event the origin waits on (cudaErrorStreamCaptureUnjoined);
 * synchronising, or a copy from pageable memory, during a capture invalidates
 * it. cudaGraphLaunch re-issues the recorded work, records and waits on the
 * streams that made them (the origin's on the launch stream), ordered after
 * the launch stream's earlier work and before its later work. */
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);

#ifdef __cplusplus
}

/* ---- what .cu files need to compile as plain C++ (see emu.h: emu_launch) ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct emu_dim3 {
    unsigned x, y, z;
};
/* The running thread's coordinates (emu.h: emu_run_grid; 1-d launches only). */
#define threadIdx (emu_dim3{emu_tid, 0, 0})
#define blockIdx (emu_dim3{emu_bid, 0, 0})
#define blockDim (emu_dim3{emu_bdim, 1, 1})
#define gridDim (emu_dim3{emu_gdim, 1, 1})
/* A block's shared memory: one array per stream thread, which runs a launch's blocks one
 * after another and their threads on its fibers; __syncthreads: emu_grid.c's barrier. */
#define __shared__ static thread_local
static inline void __syncthreads(void) { emu_syncthreads(); }
/* A warp's lanes exchange values (emu_grid.c: the warp's 32 lanes meet there). */
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "a register value");
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof v);
    b = emu_shfl_xor(mask, b, lane_mask);
    memcpy(&v, &b, sizeof v);
    return v;
}
/* One thread of a stream at a time: an atomic add is a plain one. */
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    unsigned long long old = *p;
    *p += v;
    return old;
}
static inline unsigned atomicMax(unsigned *p, unsigned v) {
    unsigned old = *p;
    if (v > old) *p = v;
    return old;
}
#endif

#endif
