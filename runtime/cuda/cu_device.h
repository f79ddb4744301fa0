/* cu_device.h — device helpers shared by the .cu files (cu_kernels.h, cuda_attention.cu):
 * grid-stride loops, 16-byte float vectors, the Dropout RNG (cpu_rng.c's), FusedAttention's
 * mask. Included by .cu files only (CUDA C++, or C++ on the CUDA emulator). */
#ifndef OC_CU_DEVICE_H
#define OC_CU_DEVICE_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_launch.h"

#define THREADS 256

static inline unsigned blocks_for(int64_t n) {
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b < 1) b = 1;
    if (b > 65535LL * 16) b = 65535LL * 16;
    return (unsigned)b;
}

#define GRID_LOOP(i, n)                                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

static inline int last_error(void) { return (int)cudaGetLastError(); }

#ifdef __CUDACC__
#define UNROLL _Pragma("unroll")
#else
#define UNROLL
#endif

// Four floats moved as one 16-byte access (ld/st.global.v4) where every pointer is
// 16-byte aligned and n is a multiple of 4 (arena tensors are 256-byte aligned): the
// memory-bound kernels then run near the card's bandwidth.
struct alignas(16) f4 {
    float v[4];
};

// ---- Dropout RNG: runtime/cpu/cpu_rng.c, same constants ----
__host__ __device__ static inline uint64_t rng_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
__host__ __device__ static inline uint64_t rng_u64(uint64_t key, uint64_t index) {
    return rng_mix64(key + 0x9e3779b97f4a7c15ULL * (index + 1));
}
__host__ __device__ static inline float rng_uniform(uint64_t key, uint64_t index) {
    return (float)(rng_u64(key, index) >> 40) * (1.0f / 16777216.0f);
}
// cpu_rng_key_from on the device
__device__ static inline uint64_t rng_key(cu_rng r) {
    return rng_mix64(rng_mix64(r.seeded ^ (uint64_t)*r.step) ^ r.hash);
}

// ---- FusedAttention's mask (cu_att_mask) ----
// the mask's offset for row (b, t) of the scores; element j of the row is at + j * cs[rank - 1]
__device__ static inline int64_t att_mask_row(const cu_att_mask &m, int64_t b, int64_t t) {
    if (!m.cond) return 0;
    int64_t off = t * m.cs[m.rank - 2];
    for (int i = m.rank - 3; i >= 0; i--) {
        off += (b % m.bdims[i]) * m.cs[i];
        b /= m.bdims[i];
    }
    return off;
}
__device__ static inline bool att_masked(const cu_att_mask &m, int64_t row_off, int64_t t,
                                         int64_t j) {
    if (m.causal) return j > t;
    if (!m.cond) return false;
    bool c = m.cond[row_off + j * m.cs[m.rank - 1]] != 0;
    return m.mode == 1 ? c : !c;
}
// the columns row t computes: all S, or (blocked) its row block's and those left of it
__device__ static inline int64_t att_cols(const cu_att_mask &m, int64_t t, int64_t S) {
    int64_t c = m.blk > 0 ? (t / m.blk + 1) * m.blk : S;
    return c < S ? c : S;
}

#endif
