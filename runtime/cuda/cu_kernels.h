/* cu_kernels.h — what the cuda backend's kernel files (cuda_*.cu) share: storage types
 * and their loads / stores, vector widths, the row kernels' warp helpers, broadcast / strided
 * indexing (cu_bidx). Each kernel mirrors a cpu kernel of runtime/cpu/, named beside it.
 * Grid-stride loops, one thread per output element (a warp per row for the row kernels);
 * reductions run in a fixed order (no float atomics; GatherGrad counts with integer ones,
 * whose sums do not depend on order), so results are deterministic, and where the cpu kernel
 * accumulates in double in element order so does the cuda one (bitwise the same result for
 * ReduceSumTo, GlobalAveragePool, AveragePool, pool grads). Included by .cu files only. */
#ifndef OC_CU_KERNELS_H
#define OC_CU_KERNELS_H

#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cuda_launch.h"
#define OC_HALF_NO_IR
#include "ir/half.h"
#include "pointwise.h"
#include "cum_sum.h"
#include "grid_sample.h"
#include "predicate.h"
#include "pad_coord.h"
#include "topk_order.h"
#include "resize_coord.h"
#include "cu_device.h"

// OC_CUDA_SCALAR_SUMS=1: the column sums (ReduceSumTo, LayerNorm's dScale and dBias) one
// column a thread, not four (test_cuda_emu.sh compares the two kernels' bits).
static inline bool scalar_sums(void) {
    const char *e = getenv("OC_CUDA_SCALAR_SUMS");
    return e && e[0] == '1';
}

// Storage types of the data tensors (float, or half: widened on load, rounded once on store).
struct oc_f16 {
    uint16_t v;
};
struct oc_bf16 {
    uint16_t v;
};
__device__ static inline float ld(const float *p, int64_t i) { return p[i]; }
__device__ static inline float ld(const oc_f16 *p, int64_t i) { return f16_to_f32(p[i].v); }
__device__ static inline float ld(const oc_bf16 *p, int64_t i) { return bf16_to_f32(p[i].v); }
__device__ static inline void st(float *p, int64_t i, float v) { p[i] = v; }
__device__ static inline void st(oc_f16 *p, int64_t i, float v) { p[i].v = f16_from_f32(v); }
__device__ static inline void st(oc_bf16 *p, int64_t i, float v) { p[i].v = bf16_from_f32(v); }

// V consecutive elements of T as one access (V 4: 16 bytes of float32, 8 of a half type),
// widened / rounded one by one as ld / st do: a kernel moving V elements a thread does each
// element's arithmetic as its one-element form.
template <typename T, int V> __device__ static inline void ldv(const T *p, int64_t i, float *v) {
    if constexpr (V == 1) {
        v[0] = ld(p, i);
    } else {
        struct alignas(V * sizeof(T)) box {
            T e[V];
        } b = *(const box *)(p + i);
        for (int k = 0; k < V; k++) v[k] = ld(b.e, k);
    }
}
template <typename T, int V> __device__ static inline void stv(T *p, int64_t i, const float *v) {
    if constexpr (V == 1) {
        st(p, i, v[0]);
    } else {
        struct alignas(V * sizeof(T)) box {
            T e[V];
        } b;
        for (int k = 0; k < V; k++) st(b.e, k, v[k]);
        *(box *)(p + i) = b;
    }
}
// 4 elements a thread where n (an element count; a row's, for row kernels) is a multiple of 4
// and every pointer (NULL ones ignored) is aligned to 4 elements, as arena tensors are; else 1.
static inline int vec_of(int64_t n, size_t es, const void *a, const void *b, const void *c,
                         const void *d) {
    uintptr_t u = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d;
    return n % 4 == 0 && u % (4 * es) == 0 ? 4 : 1;
}

// GRAD 0: statistics of x; 1: the gradient sums of dz = dy (BN(x) > 0) (BatchNormRelu);
// 2: of dz = dy (BatchNormalization).

// Row kernels with one warp per row (launched with blockDim.x = WARP): the lanes read a row
// with coalesced strides and reduce with shuffles, in a fixed order (deterministic; the
// emulator runs the 32 lanes and their shuffles too: tests/emu/emu_grid.c).
#define WARP 32
#define ROW_LOOP(r, rows) for (int64_t r = blockIdx.x; r < (rows); r += gridDim.x)
static inline unsigned warps_for(int64_t rows) {
    return (unsigned)(rows < 1 ? 1 : rows > 65535LL * 16 ? 65535LL * 16 : rows);
}
// Under the emulator, a launch with other than WARP threads a block is an error (on a GPU the
// shuffles would add lanes of other rows, or the same lane twice).
#ifdef OC_CUDA_EMU
#define WARP_BLOCK_ONLY() emu_require_block(WARP, __func__)
#else
#define WARP_BLOCK_ONLY() ((void)0)
#endif
__device__ static inline double warp_sum(double v) {
    WARP_BLOCK_ONLY();
    for (int o = (int)blockDim.x / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Row kernels with several rows a block: ROW_BLOCK threads, a warp (WARP lanes) per row, so a
// block is not one warp (an SM holds at most 32 blocks: one-warp blocks fill half of it).
#define ROW_BLOCK 128
#ifdef OC_CUDA_EMU
#define ROW_BLOCK_ONLY() emu_require_block(ROW_BLOCK, __func__)
#else
#define ROW_BLOCK_ONLY() ((void)0)
#endif
__device__ static inline int row_lanes() { return blockDim.x < WARP ? (int)blockDim.x : WARP; }
__device__ static inline int row_warps() { return blockDim.x < WARP ? 1 : (int)blockDim.x / WARP; }
#define MROW_LOOP(r, rows)                                                                         \
    for (int64_t r = (int64_t)blockIdx.x * row_warps() + threadIdx.x / WARP; r < (rows);           \
         r += (int64_t)gridDim.x * row_warps())
static inline unsigned row_blocks_for(int64_t rows) {
    return warps_for((rows + ROW_BLOCK / WARP - 1) / (ROW_BLOCK / WARP));
}
__device__ static inline float lanes_max(float v) {
    ROW_BLOCK_ONLY();
    for (int o = row_lanes() / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ static inline float lanes_sum(float v) {
    ROW_BLOCK_ONLY();
    for (int o = row_lanes() / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ static inline double lanes_sum(double v) {
    ROW_BLOCK_ONLY();
    for (int o = row_lanes() / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static inline bool vec4_ok(int64_t n, const void *a, const void *b, const void *c) {
    return n % 4 == 0 && ((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) % 16 == 0;
}

// ---- Broadcast / strided indexing shared by the elementwise kernels: the output's dims with
// each operand's stride per dim (0 where it is broadcast), unit dims dropped and neighbouring
// dims merged where every operand walks them as one (a bias over (N T, C) is 2 dims, a scalar
// times (N, H, T, T) 1), so an element's offsets cost one div/mod per merged dim, shared by the
// operands, in 32 bits when the output has under 2^31 elements. ----
#define CU_BIDX_MAX CU_SUM_MAX
struct cu_bidx {
    int rank, small;
    int64_t d[CU_MAX_RANK];
    int64_t st[CU_BIDX_MAX][CU_MAX_RANK];
};

static inline void bidx_collapse(cu_bidx *b, int n_ops) {
    int r = 0;
    for (int k = 0; k < b->rank; k++) {
        if (b->d[k] == 1) continue;
        bool merge = r > 0;
        for (int j = 0; j < n_ops && merge; j++) merge = b->st[j][r - 1] == b->st[j][k] * b->d[k];
        if (merge) {
            b->d[r - 1] *= b->d[k];
            for (int j = 0; j < n_ops; j++) b->st[j][r - 1] = b->st[j][k];
            continue;
        }
        b->d[r] = b->d[k];
        for (int j = 0; j < n_ops; j++) b->st[j][r] = b->st[j][k];
        r++;
    }
    if (r == 0) { // a single element
        b->d[0] = 1;
        for (int j = 0; j < n_ops; j++) b->st[j][0] = 0;
        r = 1;
    }
    b->rank = r;
    int64_t n = 1;
    for (int k = 0; k < r; k++) n *= b->d[k];
    b->small = n < ((int64_t)1 << 31);
}

// operands broadcast (numpy rules, right-aligned) into the output shape os
static inline cu_bidx bidx_of(cu_shape os, const cu_shape *in, int n_ops) {
    cu_bidx b = {};
    b.rank = os.rank;
    for (int k = 0; k < os.rank; k++) b.d[k] = os.d[k];
    for (int j = 0; j < n_ops; j++) {
        int64_t acc = 1;
        for (int k = os.rank - 1; k >= 0; k--) {
            int q = k - (os.rank - in[j].rank);
            int64_t e = q >= 0 ? in[j].d[q] : 1;
            b.st[j][k] = e == 1 ? 0 : acc;
            acc *= e;
        }
    }
    bidx_collapse(&b, n_ops);
    return b;
}

// the offsets of output element i in each of the N operands, index arithmetic in I
template <typename I, int N>
__device__ static inline void bidx_walk(const cu_bidx &b, I u, int64_t (&off)[N]) {
    for (int j = 0; j < N; j++) off[j] = 0;
    for (int k = b.rank - 1; k > 0; k--) {
        I e = (I)b.d[k], c = u % e;
        u /= e;
        for (int j = 0; j < N; j++) off[j] += (int64_t)c * b.st[j][k];
    }
    for (int j = 0; j < N; j++) off[j] += (int64_t)u * b.st[j][0];
}
template <int N>
__device__ static inline void bidx_at(const cu_bidx &b, int64_t i, int64_t (&off)[N]) {
    if (b.small) bidx_walk<uint32_t, N>(b, (uint32_t)i, off);
    else bidx_walk<int64_t, N>(b, i, off);
}

// Four output elements a thread where the innermost merged dim is a multiple of 4 and every
// operand walks it with stride 1 or 0 (a same-shape operand, a scalar, a bias along it, a mask
// repeated over heads): the 4 offsets are one walk, a stride-1 operand's 4 values one 16-byte
// load (its offset is then a multiple of 4: its other strides are multiples of that dim) and a
// broadcast operand's one value. The pointers must be 16-byte aligned (bidx_v4_ok).
static inline bool bidx_v4(const cu_bidx *b, int n_ops) {
    if (b->d[b->rank - 1] % 4) return false;
    for (int j = 0; j < n_ops; j++)
        if (b->st[j][b->rank - 1] > 1) return false;
    return true;
}
static inline bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }
// bytes of one element of a stride-1 operand times 4 must keep its 4-group aligned
static inline bool bidx_v4_ok(const cu_bidx *b, int n_ops, const void *const *ptrs,
                              const int *esize, const void *out, int out_esize) {
    if (!bidx_v4(b, n_ops) || (uintptr_t)out % (4 * out_esize)) return false;
    for (int j = 0; j < n_ops; j++)
        if (b->st[j][b->rank - 1] == 1 && (uintptr_t)ptrs[j] % (4 * esize[j])) return false;
    return true;
}
// the 4 values at off of an operand walking the inner dim with stride unit (1) or 0
__device__ static inline f4 ld4(const float *p, int64_t off, bool unit) {
    if (unit) return *(const f4 *)(p + off);
    float v = p[off];
    return f4{{v, v, v, v}};
}
struct alignas(4) u8x4 {
    uint8_t v[4];
};
__device__ static inline u8x4 ld4(const uint8_t *p, int64_t off, bool unit) {
    if (unit) return *(const u8x4 *)(p + off);
    uint8_t v = p[off];
    return u8x4{{v, v, v, v}};
}

static inline int64_t numel(cu_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++) n *= s.d[i];
    return n;
}

static inline bool same_shape(cu_shape a, cu_shape b) {
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; i++)
        if (a.d[i] != b.d[i]) return false;
    return true;
}

/* LAUNCH(T) is a whole statement (its `;` included: tests/emu/cu2cpp.pl
 * rewrites a launch up to its `;`). */
#define DT_SWITCH(dt, LAUNCH)                                                                      \
    switch (dt) {                                                                                  \
    case CU_DT_F32: LAUNCH(float) break;                                                           \
    case CU_DT_F64: LAUNCH(double) break;                                                          \
    case CU_DT_I64: LAUNCH(int64_t) break;                                                         \
    case CU_DT_I32: LAUNCH(int32_t) break;                                                         \
    case CU_DT_I8: LAUNCH(int8_t) break;                                                           \
    case CU_DT_U8: LAUNCH(uint8_t) break;                                                          \
    }

static inline unsigned row_threads(int64_t S) { // a block per row: up to 256 threads, whole warps
    int64_t t = (S + WARP - 1) / WARP * WARP;
    return (unsigned)(t > THREADS ? THREADS : t < WARP ? WARP : t);
}

// kinds: 0 float32, 1 float16, 2 bfloat16; rounding to nearest even (ir/half.h).
__device__ static inline float half_load(const void *p, int kind, int64_t i) {
    if (kind == 0) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return kind == 2 ? bf16_to_f32(h) : f16_to_f32(h);
}

__device__ static inline void half_store(void *p, int kind, int64_t i, float v) {
    if (kind == 0) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = kind == 2 ? bf16_from_f32(v) : f16_from_f32(v);
}

#endif
