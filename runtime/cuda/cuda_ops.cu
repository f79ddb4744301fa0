// cuda_ops.cu — the cuda backend's small kernels (see cuda_launch.h for the
// contract; each mirrors a cpu kernel of runtime/cpu/, named beside it).
// Grid-stride loops, one thread per output element (a warp per row for the row
// kernels); reductions run in a fixed order (no float atomics; GatherGrad counts
// with integer ones, whose sums do not depend on order), so results are
// deterministic, and where the
// cpu kernel accumulates in double in element order so does this one (bitwise
// the same result for ReduceSumTo, GlobalAveragePool, AveragePool, pool grads).
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

extern "C" uint64_t cu_rng_u64_host(uint64_t key, uint64_t index) { return rng_u64(key, index); }

// OC_CUDA_SCALAR_SUMS=1: the column sums (ReduceSumTo, LayerNorm's dScale and dBias) one
// column a thread, not four (test_cuda_emu.sh compares the two kernels' bits).
static bool scalar_sums(void) {
    const char *e = getenv("OC_CUDA_SCALAR_SUMS");
    return e && e[0] == '1';
}

// OC_BN_MATH=float: the channels-last BatchNorm[Relu] passes' per-element arithmetic in float
// (the _nhwc kernels' FM 1: y = (x - mean) a + b in float where the default's arithmetic is
// double, the cpu kernels'; every sum still gathered in double, four rows' terms at a time).
// An experiment until a GPU times both (tools/gpu-check-headline.sh bn_sweep).
static bool bn_float_math(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("OC_BN_MATH");
        v = e && strcmp(e, "float") == 0;
    }
    return v == 1;
}

// OC_BN_V8=1: the channels-last BN passes 8 elements a thread on half data (16-byte accesses,
// not 8) where C is a multiple of 8 and every pointer (NULL ones ignored) 16-byte aligned;
// an experiment, as OC_BN_MATH.
static bool bn_v8(int64_t C, size_t es, const void *a, const void *b, const void *c) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("OC_BN_V8");
        v = e && e[0] == '1';
    }
    uintptr_t u = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c;
    return v == 1 && es == 2 && C % 8 == 0 && u % 16 == 0;
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
static int vec_of(int64_t n, size_t es, const void *a, const void *b, const void *c,
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
static unsigned warps_for(int64_t rows) {
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
static unsigned row_blocks_for(int64_t rows) {
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

static bool vec4_ok(int64_t n, const void *a, const void *b, const void *c) {
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

static void bidx_collapse(cu_bidx *b, int n_ops) {
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
static cu_bidx bidx_of(cu_shape os, const cu_shape *in, int n_ops) {
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
static bool bidx_v4(const cu_bidx *b, int n_ops) {
    if (b->d[b->rank - 1] % 4) return false;
    for (int j = 0; j < n_ops; j++)
        if (b->st[j][b->rank - 1] > 1) return false;
    return true;
}
static bool aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }
// bytes of one element of a stride-1 operand times 4 must keep its 4-group aligned
static bool bidx_v4_ok(const cu_bidx *b, int n_ops, const void *const *ptrs, const int *esize,
                       const void *out, int out_esize) {
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

// ---- Add / Sum with broadcast (cpu_add, cpu_sum) ----
/* out (op)= in: CU_BC_ASSIGN, ADD, SUB, MUL, DIV (cuda_launch.h). */
template <typename T> __device__ static inline T bc_apply(int op, T d, T s) {
    if constexpr (std::is_integral<T>::value) /* index glue: no input traps */
        if (op == CU_BC_DIV || op == CU_BC_FMOD || op == CU_BC_IMOD)
            return (T)oc_int_div_mod(d, s, op == CU_BC_DIV ? 0 : op == CU_BC_FMOD ? 1 : 2);
    switch (op) {
    case CU_BC_ASSIGN: return s;
    case CU_BC_ADD: return (T)(d + s);
    case CU_BC_SUB: return (T)(d - s);
    case CU_BC_MUL: return (T)(d * s);
    case CU_BC_DIV: return (T)(d / s);
    case CU_BC_MAX: return s != s || s > d ? s : d;
    case CU_BC_MIN: return s != s || s < d ? s : d;
    case CU_BC_FMOD: return (T)fmod((double)d, (double)s);
    case CU_BC_POW: return (T)pow((double)d, (double)s);
    default: return (double)d < 0.0 ? (T)(d * s) : d; /* PRelu: d the input, s the slope */
    }
}

template <typename T> __global__ void k_bcast(const T *in, cu_bidx bi, T *out, int64_t n, int op) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        out[i] = bc_apply<T>(op, out[i], in[o[0]]);
    }
}

// y = a (op) b, both broadcast, one pass (float, double; int64, int32 for Sub, Mul)
template <typename T>
__global__ void k_binary(const T *a, const T *b, cu_bidx bi, T *y, int64_t n, int op) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        y[i] = bc_apply<T>(op, a[o[0]], b[o[1]]);
    }
}

// k_binary four elements a thread (bidx_v4)
__global__ void k_binary4(const float *a, const float *b, cu_bidx bi, float *y, int64_t n4,
                          int op) {
    bool ua = bi.st[0][bi.rank - 1] == 1, ub = bi.st[1][bi.rank - 1] == 1;
    GRID_LOOP(q, n4) {
        int64_t o[2];
        bidx_at<2>(bi, q * 4, o);
        f4 x = ld4(a, o[0], ua), z = ld4(b, o[1], ub), r;
        for (int e = 0; e < 4; e++) r.v[e] = bc_apply<float>(op, x.v[e], z.v[e]);
        ((f4 *)y)[q] = r;
    }
}

// MinMaxGrad / PReluGrad / PowTensorGrad: dy of y's shape, a and b broadcast to it
__global__ void k_binary_grad(const float *dy, const float *a, const float *b, cu_bidx bi,
                              float *dx, int64_t n, int kind, int max, int input) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        dx[i] = kind == CU_BG_PRELU ? oc_prelu_grad(dy[i], a[o[0]], b[o[1]], input)
                : kind == CU_BG_POW ? oc_pow_grad(dy[i], a[o[0]], b[o[1]], input)
                                    : oc_min_max_grad(dy[i], a[o[0]], b[o[1]], max, input);
    }
}

static int64_t numel(cu_shape s) {
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++) n *= s.d[i];
    return n;
}

static bool same_shape(cu_shape a, cu_shape b) {
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; i++)
        if (a.d[i] != b.d[i]) return false;
    return true;
}

/* No broadcast: plain indices (no per-element div/mod over the dims). */
template <typename T> __global__ void k_acc_same(const T *in, T *out, int64_t n, int op) {
    GRID_LOOP(i, n) out[i] = bc_apply<T>(op, out[i], in[i]);
}

template <typename T> __global__ void k_add2(const T *a, const T *b, T *out, int64_t n) {
    GRID_LOOP(i, n) out[i] = (T)(a[i] + b[i]);
}

__global__ void k_add2_f4(const f4 *a, const f4 *b, f4 *out, int64_t n4) {
    GRID_LOOP(i, n4) {
        f4 x = a[i], y = b[i], r;
        for (int k = 0; k < 4; k++) r.v[k] = x.v[k] + y.v[k];
        out[i] = r;
    }
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

// Half data, V elements a thread (vec_of).
template <int V, typename T> __global__ void k_add2_h(const T *a, const T *b, T *out, int64_t n) {
    GRID_LOOP(i, n / V) {
        float x[V], y[V];
        ldv<T, V>(a, i * V, x);
        ldv<T, V>(b, i * V, y);
        for (int k = 0; k < V; k++) x[k] = x[k] + y[k];
        stv<T, V>(out, i * V, x);
    }
}

template <typename T>
static void add2_h(cudaStream_t s, const void *a, const void *b, void *out, int64_t n) {
    if (vec_of(n, sizeof(T), a, b, out, NULL) == 4)
        k_add2_h<4, T>
            <<<blocks_for(n / 4), THREADS, 0, s>>>((const T *)a, (const T *)b, (T *)out, n);
    else k_add2_h<1, T><<<blocks_for(n), THREADS, 0, s>>>((const T *)a, (const T *)b, (T *)out, n);
}

extern "C" int cu_add2_half(void *stream, int kind, const void *a, const void *b, void *out,
                            int64_t n) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (kind == 2) add2_h<oc_bf16>(s, a, b, out, n);
    else add2_h<oc_f16>(s, a, b, out, n);
    return last_error();
}

extern "C" int cu_add2(void *stream, cu_dtype dt, const void *a, const void *b, void *out,
                       int64_t n) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (dt == CU_DT_F32 && vec4_ok(n, a, b, out)) {
        k_add2_f4<<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)a, (const f4 *)b, (f4 *)out,
                                                        n / 4);
        return last_error();
    }
    unsigned bl = blocks_for(n);
#define ADD2(T) k_add2<T><<<bl, THREADS, 0, s>>>((const T *)a, (const T *)b, (T *)out, n);
    DT_SWITCH(dt, ADD2)
#undef ADD2
    return last_error();
}

extern "C" int cu_bcast_apply(void *stream, cu_dtype dt, const void *in, cu_shape is, void *out,
                              cu_shape os, int op) {
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = numel(os);
    if (n == 0) return 0;
    unsigned b = blocks_for(n);
    if (same_shape(is, os)) {
#define ACC(T) k_acc_same<T><<<b, THREADS, 0, s>>>((const T *)in, (T *)out, n, op);
        DT_SWITCH(dt, ACC)
#undef ACC
        return last_error();
    }
    cu_bidx bi = bidx_of(os, &is, 1);
    switch (dt) {
    case CU_DT_F32:
        k_bcast<<<b, THREADS, 0, s>>>((const float *)in, bi, (float *)out, n, op);
        break;
    case CU_DT_F64:
        k_bcast<<<b, THREADS, 0, s>>>((const double *)in, bi, (double *)out, n, op);
        break;
    case CU_DT_I64:
        k_bcast<<<b, THREADS, 0, s>>>((const int64_t *)in, bi, (int64_t *)out, n, op);
        break;
    case CU_DT_I32:
        k_bcast<<<b, THREADS, 0, s>>>((const int32_t *)in, bi, (int32_t *)out, n, op);
        break;
    case CU_DT_I8:
        k_bcast<<<b, THREADS, 0, s>>>((const int8_t *)in, bi, (int8_t *)out, n, op);
        break;
    case CU_DT_U8:
        k_bcast<<<b, THREADS, 0, s>>>((const uint8_t *)in, bi, (uint8_t *)out, n, op);
        break;
    }
    return last_error();
}

extern "C" int cu_bcast_accumulate(void *stream, cu_dtype dt, const void *in, cu_shape is,
                                   void *out, cu_shape os, int first) {
    return cu_bcast_apply(stream, dt, in, is, out, os, first ? CU_BC_ASSIGN : CU_BC_ADD);
}

extern "C" int cu_binary_grad(void *stream, const float *dy, cu_shape ys, const float *a,
                              cu_shape as, const float *b, cu_shape bs, float *dx, int kind,
                              int max, int input) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    k_binary_grad<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(dy, a, b, bi, dx, n, kind,
                                                                       max, input);
    return last_error();
}

extern "C" int cu_binary(void *stream, cu_dtype dt, const void *a, cu_shape as, const void *b,
                         cu_shape bs, void *y, cu_shape ys, int op) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    cudaStream_t s = (cudaStream_t)stream;
    const void *ptrs[2] = {a, b};
    const int es[2] = {4, 4};
    if (dt == CU_DT_F32 && bidx_v4_ok(&bi, 2, ptrs, es, y, 4)) {
        k_binary4<<<blocks_for(n / 4), THREADS, 0, s>>>((const float *)a, (const float *)b, bi,
                                                        (float *)y, n / 4, op);
        return last_error();
    }
    if (dt == CU_DT_F32)
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const float *)a, (const float *)b, bi,
                                                   (float *)y, n, op);
    else if (dt == CU_DT_F64)
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const double *)a, (const double *)b, bi,
                                                   (double *)y, n, op);
    else if (dt == CU_DT_I64) /* index arithmetic: Sub, Mul (cuda_binary) */
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const int64_t *)a, (const int64_t *)b, bi,
                                                   (int64_t *)y, n, op);
    else if (dt == CU_DT_I32)
        k_binary<<<blocks_for(n), THREADS, 0, s>>>((const int32_t *)a, (const int32_t *)b, bi,
                                                   (int32_t *)y, n, op);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

// ---- BroadcastTo (cpu_broadcast_to): dx = scale * dy broadcast; ks is dy's
// shape in dx's rank. ----
__global__ void k_broadcast_to(const float *dy, cu_bidx bi, float *dx, int64_t n, float scale) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        dx[i] = dy[o[0]] * scale;
    }
}

extern "C" int cu_broadcast_to(void *stream, const float *dy, cu_shape ks, float *dx, cu_shape xs,
                               float scale) {
    int64_t n = numel(xs);
    if (n == 0) return 0;
    cu_bidx bi = bidx_of(xs, &ks, 1);
    k_broadcast_to<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(dy, bi, dx, n, scale);
    return last_error();
}

// ---- ReduceSumTo (cpu_reduce_sum_to), patterns other than cu_sum_to_of's: one thread per
// dX element, loops the reduced dims in dY order, double accumulation (cu_reduce_sum_to,
// after the column sums below). ----
template <typename T>
__global__ void k_reduce_sum_to(const T *dy, cu_shape ys, cu_shape xs, T *dx, int64_t m,
                                float scale) {
    int r = ys.rank;
    int64_t stride[CU_MAX_RANK], acc = 1;
    bool red[CU_MAX_RANK];
    int64_t nred = 1;
    for (int d = r - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= ys.d[d];
        int j = d - (r - xs.rank);
        red[d] = (j < 0 || xs.d[j] == 1) && ys.d[d] != 1;
        if (red[d]) nred *= ys.d[d];
    }
    GRID_LOOP(i, m) {
        int64_t rem = i, base = 0;
        for (int d = r - 1; d >= 0; d--) {
            if (red[d]) continue;
            int j = d - (r - xs.rank);
            int64_t ext = j >= 0 ? xs.d[j] : 1;
            base += (rem % ext) * stride[d];
            rem /= ext;
        }
        double s = 0;
        for (int64_t k = 0; k < nred; k++) {
            int64_t kr = k, off = base;
            for (int d = r - 1; d >= 0; d--) {
                if (!red[d]) continue;
                off += (kr % ys.d[d]) * stride[d];
                kr /= ys.d[d];
            }
            s += ld(dy, off);
        }
        st(dx, i, (float)(s * scale));
    }
}

// ---- Clip / ClipGrad / ReluGrad (cpu_elementwise.c) ----
__device__ static double load_scalar(const void *p, cu_dtype dt) {
    switch (dt) {
    case CU_DT_F32: return *(const float *)p;
    case CU_DT_F64: return *(const double *)p;
    case CU_DT_I64: return (double)*(const int64_t *)p;
    case CU_DT_I32: return *(const int32_t *)p;
    case CU_DT_I8: return *(const int8_t *)p;
    case CU_DT_U8: return *(const uint8_t *)p;
    }
    return 0;
}

template <typename T>
__global__ void k_clip(const T *x, T *y, int64_t n, const void *lo_p, const void *hi_p, cu_dtype dt,
                       int has_lo_a, double lo_a, int has_hi_a, double hi_a) {
    bool has_lo = has_lo_a || lo_p, has_hi = has_hi_a || hi_p;
    double lo = has_lo_a ? lo_a : lo_p ? load_scalar(lo_p, dt) : 0.0;
    double hi = has_hi_a ? hi_a : hi_p ? load_scalar(hi_p, dt) : 0.0;
    GRID_LOOP(i, n) {
        T v = x[i];
        if (has_lo && (double)v < lo) v = (T)lo;
        if (has_hi && (double)v > hi) v = (T)hi;
        y[i] = v;
    }
}

extern "C" int cu_clip(void *stream, cu_dtype dt, const void *x, void *y, int64_t n,
                       const void *lo_p, const void *hi_p, int has_lo_a, double lo_a, int has_hi_a,
                       double hi_a) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
#define CLIP_CASE(E, T)                                                                            \
    case E:                                                                                        \
        k_clip<T><<<b, THREADS, 0, s>>>((const T *)x, (T *)y, n, lo_p, hi_p, dt, has_lo_a, lo_a,   \
                                        has_hi_a, hi_a);                                           \
        break;
    switch (dt) {
        CLIP_CASE(CU_DT_F32, float)
        CLIP_CASE(CU_DT_F64, double)
        CLIP_CASE(CU_DT_I64, int64_t)
        CLIP_CASE(CU_DT_I32, int32_t)
        CLIP_CASE(CU_DT_I8, int8_t)
        CLIP_CASE(CU_DT_U8, uint8_t)
    }
#undef CLIP_CASE
    return last_error();
}

__global__ void k_clip_grad(const float *dy, const float *x, float *dx, int64_t n, const void *lo_p,
                            cu_dtype lo_dt, const void *hi_p, cu_dtype hi_dt, int has_lo_a,
                            double lo_a, int has_hi_a, double hi_a) {
    bool has_lo = has_lo_a || lo_p, has_hi = has_hi_a || hi_p;
    double lo = has_lo_a ? lo_a : lo_p ? load_scalar(lo_p, lo_dt) : 0.0;
    double hi = has_hi_a ? hi_a : hi_p ? load_scalar(hi_p, hi_dt) : 0.0;
    GRID_LOOP(i, n) {
        bool pass = (!has_lo || (double)x[i] > lo) && (!has_hi || (double)x[i] < hi);
        dx[i] = pass ? dy[i] : 0.0f;
    }
}

extern "C" int cu_clip_grad(void *stream, const float *dy, const float *x, float *dx, int64_t n,
                            const void *lo_p, cu_dtype lo_dt, const void *hi_p, cu_dtype hi_dt,
                            int has_lo_a, double lo_a, int has_hi_a, double hi_a) {
    if (n == 0) return 0;
    k_clip_grad<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(
        dy, x, dx, n, lo_p, lo_dt, hi_p, hi_dt, has_lo_a, lo_a, has_hi_a, hi_a);
    return last_error();
}

// ---- pointwise ops (runtime/pointwise.h; cpu_pointwise) ----
// One kernel instance per op: the switch on the template argument folds away.
template <int OP> __device__ static inline float pw_forward(float x, float p0, float p1) {
    switch (OP) {
#define PW_EXPR(kind, expr)                                                                        \
    case OP_##kind: return (expr);
        OC_POINTWISE_FORWARD(PW_EXPR)
#undef PW_EXPR
    }
    return NAN;
}
template <int OP> __device__ static inline float pw_grad(float dy, float s, float p0, float p1) {
    switch (OP) {
#define PW_EXPR(kind, expr)                                                                        \
    case OP_##kind: return (expr);
        OC_POINTWISE_GRAD(PW_EXPR)
#undef PW_EXPR
    }
    return NAN;
}

template <int OP>
__global__ void k_pointwise(const float *x, float *y, int64_t n, float p0, float p1) {
    GRID_LOOP(i, n) y[i] = pw_forward<OP>(x[i], p0, p1);
}
template <int OP>
__global__ void k_pointwise_f4(const f4 *x, f4 *y, int64_t n4, float p0, float p1) {
    GRID_LOOP(i, n4) {
        f4 a = x[i], r;
        for (int k = 0; k < 4; k++) r.v[k] = pw_forward<OP>(a.v[k], p0, p1);
        y[i] = r;
    }
}
// dy2 (NULL: none): a second partial of the gradient, dy + dy2 for dy (fuse_grad_sum.h)
template <int OP>
__global__ void k_pointwise_grad(const float *dy, const float *dy2, const float *s, float *dx,
                                 int64_t n, float p0, float p1) {
    GRID_LOOP(i, n) dx[i] = pw_grad<OP>(dy2 ? dy[i] + dy2[i] : dy[i], s[i], p0, p1);
}
template <int OP>
__global__ void k_pointwise_grad_f4(const f4 *dy, const f4 *dy2, const f4 *s, f4 *dx, int64_t n4,
                                    float p0, float p1) {
    GRID_LOOP(i, n4) {
        f4 g = dy[i], a = s[i], r;
        if (dy2) {
            f4 e = dy2[i];
            for (int k = 0; k < 4; k++) g.v[k] += e.v[k];
        }
        for (int k = 0; k < 4; k++) r.v[k] = pw_grad<OP>(g.v[k], a.v[k], p0, p1);
        dx[i] = r;
    }
}

// Half data, V elements a thread (vec_of).
template <int OP, int V, typename T>
__global__ void k_pointwise_h(const T *x, T *y, int64_t n, float p0, float p1) {
    GRID_LOOP(i, n / V) {
        float v[V];
        ldv<T, V>(x, i * V, v);
        for (int k = 0; k < V; k++) v[k] = pw_forward<OP>(v[k], p0, p1);
        stv<T, V>(y, i * V, v);
    }
}
template <int OP, int V, typename T>
__global__ void k_pointwise_grad_h(const T *dy, const T *dy2, const T *s, T *dx, int64_t n,
                                   float p0, float p1) {
    GRID_LOOP(i, n / V) {
        float g[V], a[V];
        ldv<T, V>(dy, i * V, g);
        if (dy2) {
            float e[V];
            ldv<T, V>(dy2, i * V, e);
            for (int k = 0; k < V; k++) g[k] += e[k];
        }
        ldv<T, V>(s, i * V, a);
        for (int k = 0; k < V; k++) g[k] = pw_grad<OP>(g[k], a[k], p0, p1);
        stv<T, V>(dx, i * V, g);
    }
}
template <int OP, typename T>
static void pointwise_h(cudaStream_t s, const void *x, void *y, int64_t n, float p0, float p1) {
    if (vec_of(n, sizeof(T), x, y, NULL, NULL) == 4)
        k_pointwise_h<OP, 4, T>
            <<<blocks_for(n / 4), THREADS, 0, s>>>((const T *)x, (T *)y, n, p0, p1);
    else k_pointwise_h<OP, 1, T><<<blocks_for(n), THREADS, 0, s>>>((const T *)x, (T *)y, n, p0, p1);
}
template <int OP, typename T>
static void pointwise_grad_h(cudaStream_t s, const void *dy, const void *dy2, const void *sv,
                             void *dx, int64_t n, float p0, float p1) {
    if (vec_of(n, sizeof(T), dy, sv, dx, dy2) == 4)
        k_pointwise_grad_h<OP, 4, T><<<blocks_for(n / 4), THREADS, 0, s>>>(
            (const T *)dy, (const T *)dy2, (const T *)sv, (T *)dx, n, p0, p1);
    else
        k_pointwise_grad_h<OP, 1, T><<<blocks_for(n), THREADS, 0, s>>>(
            (const T *)dy, (const T *)dy2, (const T *)sv, (T *)dx, n, p0, p1);
}

template <int OP>
static void pointwise_launch(cudaStream_t s, int kind, const void *xv, void *yv, int64_t n,
                             float p0, float p1) {
    if (kind == 1) {
        pointwise_h<OP, oc_f16>(s, xv, yv, n, p0, p1);
        return;
    }
    if (kind == 2) {
        pointwise_h<OP, oc_bf16>(s, xv, yv, n, p0, p1);
        return;
    }
    const float *x = (const float *)xv;
    float *y = (float *)yv;
    if (vec4_ok(n, x, y, y))
        k_pointwise_f4<OP>
            <<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)x, (f4 *)y, n / 4, p0, p1);
    else k_pointwise<OP><<<blocks_for(n), THREADS, 0, s>>>(x, y, n, p0, p1);
}
template <int OP>
static void pointwise_grad_launch(cudaStream_t s, int kind, const void *dyv, const void *dy2v,
                                  const void *svv, void *dxv, int64_t n, float p0, float p1) {
    if (kind == 1) {
        pointwise_grad_h<OP, oc_f16>(s, dyv, dy2v, svv, dxv, n, p0, p1);
        return;
    }
    if (kind == 2) {
        pointwise_grad_h<OP, oc_bf16>(s, dyv, dy2v, svv, dxv, n, p0, p1);
        return;
    }
    const float *dy = (const float *)dyv, *dy2 = (const float *)dy2v, *sv = (const float *)svv;
    float *dx = (float *)dxv;
    if (vec_of(n, sizeof(float), dy, sv, dx, dy2) == 4)
        k_pointwise_grad_f4<OP><<<blocks_for(n / 4), THREADS, 0, s>>>(
            (const f4 *)dy, (const f4 *)dy2, (const f4 *)sv, (f4 *)dx, n / 4, p0, p1);
    else k_pointwise_grad<OP><<<blocks_for(n), THREADS, 0, s>>>(dy, dy2, sv, dx, n, p0, p1);
}

extern "C" int cu_pointwise(void *stream, int op, int ek, const void *x, void *y, int64_t n,
                            float p0, float p1) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (op) {
#define PW_CASE(kind, expr)                                                                        \
    case OP_##kind: pointwise_launch<OP_##kind>(s, ek, x, y, n, p0, p1); break;
        OC_POINTWISE_FORWARD(PW_CASE)
#undef PW_CASE
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

extern "C" int cu_pointwise_grad(void *stream, int op, int ek, const void *dy, const void *dy2,
                                 const void *sv, void *dx, int64_t n, float p0, float p1) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (op) {
#define PW_CASE(kind, expr)                                                                        \
    case OP_##kind: pointwise_grad_launch<OP_##kind>(s, ek, dy, dy2, sv, dx, n, p0, p1); break;
        OC_POINTWISE_GRAD(PW_CASE)
#undef PW_CASE
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

// ---- Dropout / DropoutGrad ----
template <typename T>
__global__ void k_dropout(const T *x, T *y, uint8_t *mask, int64_t n, cu_rng r, float ratio,
                          int train) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = train && ratio != 0.0f ? rng_key(r) : 0;
    GRID_LOOP(i, n) {
        if (!train || ratio == 0.0f) {
            st(y, i, ld(x, i));
            if (mask) mask[i] = 1;
        } else {
            bool keep = rng_uniform(key, (uint64_t)i) >= ratio;
            st(y, i, keep ? ld(x, i) * scale : 0.0f);
            if (mask) mask[i] = keep;
        }
    }
}

// float, training, 4 elements a thread (the same draw per element index as k_dropout)
__global__ void k_dropout4(const f4 *x, f4 *y, u8x4 *mask, int64_t n4, cu_rng r, float ratio) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    GRID_LOOP(q, n4) {
        f4 a = x[q], o;
        u8x4 m;
        for (int e = 0; e < 4; e++) {
            bool keep = rng_uniform(key, (uint64_t)(q * 4 + e)) >= ratio;
            o.v[e] = keep ? a.v[e] * scale : 0.0f;
            m.v[e] = keep;
        }
        y[q] = o;
        if (mask) mask[q] = m;
    }
}

extern "C" int cu_dropout(void *stream, int kind, const void *x, void *y, uint8_t *mask, int64_t n,
                          cu_rng key, float ratio, int train) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    if (kind == 0 && train && ratio != 0.0f && vec4_ok(n, x, y, y) && (uintptr_t)mask % 4 == 0) {
        k_dropout4<<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)x, (f4 *)y, (u8x4 *)mask,
                                                         n / 4, key, ratio);
        return last_error();
    }
    if (kind == 1)
        k_dropout<<<b, THREADS, 0, s>>>((const oc_f16 *)x, (oc_f16 *)y, mask, n, key, ratio, train);
    else if (kind == 2)
        k_dropout<<<b, THREADS, 0, s>>>((const oc_bf16 *)x, (oc_bf16 *)y, mask, n, key, ratio,
                                        train);
    else k_dropout<<<b, THREADS, 0, s>>>((const float *)x, (float *)y, mask, n, key, ratio, train);
    return last_error();
}

template <typename T> __global__ void k_transpose(const T *x, cu_bidx bi, T *y, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        y[i] = x[o[0]];
    }
}

// 4-byte elements whose innermost dim stays innermost (attention's head split, (N, T, H, D) ->
// (N, H, T, D)) with D a multiple of 4: 16 bytes a thread
__global__ void k_transpose4(const float *x, cu_bidx bi, f4 *y, int64_t n4) {
    GRID_LOOP(q, n4) {
        int64_t o[1];
        bidx_at<1>(bi, q * 4, o);
        y[q] = *(const f4 *)(x + o[0]);
    }
}

// A batched 2-d transpose, X (B, P, Q) -> Y (B, Q, P) (ViT's patch tokens (N, C, HW) -> (N, HW,
// C) and back): 32 x 32 tiles through shared memory, read along Q and written along P, both
// coalesced (one element a thread would read or write one element per 32-byte sector); a block
// of 256 threads (8 rows of 32) a tile, the tiles grid-strided. The extra column keeps a
// column's reads off one bank.
#define TILE 32
template <typename T>
__global__ void __launch_bounds__(THREADS)
    k_transpose_tiled(const T *x, T *y, int64_t B, int64_t P, int64_t Q) {
    __shared__ T sh[TILE][TILE + 1];
    int tx = (int)(threadIdx.x % TILE), ty = (int)(threadIdx.x / TILE);
    int64_t tp = (P + TILE - 1) / TILE, tq = (Q + TILE - 1) / TILE;
    for (int64_t t = blockIdx.x; t < B * tp * tq; t += gridDim.x) { // the same trips for the block
        int64_t b = t / (tp * tq), p0 = t / tq % tp * TILE, q0 = t % tq * TILE;
        const T *xb = x + b * P * Q;
        T *yb = y + b * P * Q;
        for (int j = ty; j < TILE; j += THREADS / TILE)
            if (p0 + j < P && q0 + tx < Q) sh[j][tx] = xb[(p0 + j) * Q + q0 + tx];
        __syncthreads();
        for (int j = ty; j < TILE; j += THREADS / TILE)
            if (q0 + j < Q && p0 + tx < P) yb[(q0 + j) * P + p0 + tx] = sh[tx][j];
        __syncthreads(); // before the next tile overwrites sh
    }
}

// A batched 2-d transpose with a side under a tile (--layout nhwc: the model's input (N, 3, HW)
// -> (N, HW, 3); each conv filter (K, C, RS) -> (K, RS, C) and its gradient back): a thread an
// element of the long side moves the short side's few, so reads and writes run along the long
// side across the warp; one division a thread (the generic kernel: a division per dimension an
// element; the H100 trace had ResNet-50's layout Transposes at 13.8 ms a step, fp32 and bf16).
template <typename T>
__global__ void k_transpose_narrow(const T *x, T *y, int64_t B, int64_t P, int64_t Q) {
    if (P <= Q) { // thread t = (b, q) moves x[b, :, q] to y[b, q, :]
        GRID_LOOP(t, B * Q) {
            int64_t b = t / Q;
            const T *xb = x + b * P * Q + (t - b * Q);
            for (int64_t p = 0; p < P; p++) y[t * P + p] = xb[p * Q];
        }
    } else { // thread t = (b, p) moves x[b, p, :] to y[b, :, p]
        GRID_LOOP(t, B * P) {
            int64_t b = t / P;
            T *yb = y + b * P * Q + (t - b * P);
            for (int64_t j = 0; j < Q; j++) yb[j * P] = x[t * Q + j];
        }
    }
}

// bi (collapsed, one operand) walks X as a batched 2-d transpose (B, P, Q) -> (B, Q, P): *B,
// *P, *Q.
static bool transpose_2d(const cu_bidx &bi, int64_t *B, int64_t *P, int64_t *Q) {
    int r = bi.rank;
    if (r < 2 || r > 3) return false;
    int64_t q = bi.d[r - 2], p = bi.d[r - 1];
    if (bi.st[0][r - 2] != 1 || bi.st[0][r - 1] != q || (r == 3 && bi.st[0][0] != p * q))
        return false;
    *B = r == 3 ? bi.d[0] : 1, *P = p, *Q = q;
    return true;
}

// X (B, P, Q) -> Y (B, Q, P): by the narrow kernel where a side is under a tile, else by tiles
template <typename T>
static void transpose_2d_run(cudaStream_t s, const void *x, void *y, int64_t B, int64_t P,
                             int64_t Q) {
    if (P < TILE || Q < TILE) {
        k_transpose_narrow<T>
            <<<blocks_for(B * (P > Q ? P : Q)), THREADS, 0, s>>>((const T *)x, (T *)y, B, P, Q);
        return;
    }
    int64_t tiles = B * ((P + TILE - 1) / TILE) * ((Q + TILE - 1) / TILE);
    unsigned nb = (unsigned)(tiles < 65535LL * 16 ? tiles : 65535LL * 16);
    k_transpose_tiled<T><<<nb, THREADS, 0, s>>>((const T *)x, (T *)y, B, P, Q);
}

extern "C" int cu_transpose(void *stream, int es, const void *x, cu_shape xs, void *y, cu_shape ys,
                            cu_shape perm) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    cu_bidx bi = {}; // y's dims, each walking x with the stride of the dim perm names
    int64_t in_st[CU_MAX_RANK], acc = 1;
    for (int d = xs.rank - 1; d >= 0; d--) {
        in_st[d] = acc;
        acc *= xs.d[d];
    }
    bi.rank = ys.rank;
    for (int d = 0; d < ys.rank; d++) bi.d[d] = ys.d[d], bi.st[0][d] = in_st[perm.d[d]];
    bidx_collapse(&bi, 1);
    if (es == 4 && bi.st[0][bi.rank - 1] == 1 && bidx_v4(&bi, 1) && aligned16(x) && aligned16(y)) {
        k_transpose4<<<blocks_for(n / 4), THREADS, 0, s>>>((const float *)x, bi, (f4 *)y, n / 4);
        return last_error();
    }
    int64_t B, P, Q;
    if (transpose_2d(bi, &B, &P, &Q) && (es == 1 || es == 2 || es == 4 || es == 8)) {
        if (es == 1) transpose_2d_run<uint8_t>(s, x, y, B, P, Q);
        else if (es == 2) transpose_2d_run<uint16_t>(s, x, y, B, P, Q);
        else if (es == 4) transpose_2d_run<uint32_t>(s, x, y, B, P, Q);
        else transpose_2d_run<uint64_t>(s, x, y, B, P, Q);
        return last_error();
    }
    switch (es) {
    case 1: k_transpose<<<b, THREADS, 0, s>>>((const uint8_t *)x, bi, (uint8_t *)y, n); break;
    case 2: k_transpose<<<b, THREADS, 0, s>>>((const uint16_t *)x, bi, (uint16_t *)y, n); break;
    case 4: k_transpose<<<b, THREADS, 0, s>>>((const uint32_t *)x, bi, (uint32_t *)y, n); break;
    default: k_transpose<<<b, THREADS, 0, s>>>((const uint64_t *)x, bi, (uint64_t *)y, n); break;
    }
    return last_error();
}

template <typename T>
__global__ void k_slice(const T *in, T *out, cu_shape small, cu_shape big, cu_shape start,
                        cu_shape step, int scatter, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t rem = i, off = 0, mul = 1;
        for (int d = small.rank - 1; d >= 0; d--) {
            off += (start.d[d] + (rem % small.d[d]) * step.d[d]) * mul;
            rem /= small.d[d];
            mul *= big.d[d];
        }
        if (scatter) out[off] = in[i];
        else out[i] = in[off];
    }
}

extern "C" int cu_slice(void *stream, int es, const void *in, void *out, cu_shape small,
                        cu_shape big, cu_shape start, cu_shape step, int scatter) {
    int64_t n = numel(small);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    switch (es) {
    case 1:
        k_slice<<<b, THREADS, 0, s>>>((const uint8_t *)in, (uint8_t *)out, small, big, start, step,
                                      scatter, n);
        break;
    case 2:
        k_slice<<<b, THREADS, 0, s>>>((const uint16_t *)in, (uint16_t *)out, small, big, start,
                                      step, scatter, n);
        break;
    case 4:
        k_slice<<<b, THREADS, 0, s>>>((const uint32_t *)in, (uint32_t *)out, small, big, start,
                                      step, scatter, n);
        break;
    default:
        k_slice<<<b, THREADS, 0, s>>>((const uint64_t *)in, (uint64_t *)out, small, big, start,
                                      step, scatter, n);
        break;
    }
    return last_error();
}

// ---- Softmax, LogSoftmax and their gradients (cpu_softmax): one thread per row ----
__global__ void k_softmax(const float *x, float *y, int64_t outer, int64_t D, int64_t inner,
                          int log) {
    GRID_LOOP(r, outer * inner) {
        int64_t base = (r / inner) * D * inner + r % inner;
        const float *xr = x + base;
        float *yr = y + base;
        float m = -INFINITY;
        for (int64_t i = 0; i < D; i++) m = fmaxf(m, xr[i * inner]);
        if (m == -INFINITY) m = 0.0f;
        double s = 0;
        for (int64_t i = 0; i < D; i++) s += exp((double)xr[i * inner] - m);
        double ls = log ? m + ::log(s) : 0;
        for (int64_t i = 0; i < D; i++)
            yr[i * inner] = log ? (float)((double)xr[i * inner] - ls)
                                : (float)(exp((double)xr[i * inner] - m) / s);
    }
}

__global__ void k_softmax_grad(const float *dy, const float *y, float *dx, int64_t outer, int64_t D,
                               int64_t inner, int log) {
    GRID_LOOP(r, outer * inner) {
        int64_t base = (r / inner) * D * inner + r % inner;
        double s = 0;
        for (int64_t i = 0; i < D; i++) {
            int64_t k = base + i * inner;
            s += log ? (double)dy[k] : (double)dy[k] * y[k];
        }
        for (int64_t i = 0; i < D; i++) {
            int64_t k = base + i * inner;
            dx[k] = log ? (float)((double)dy[k] - exp((double)y[k]) * s)
                        : (float)((double)y[k] * ((double)dy[k] - s));
        }
    }
}

// inner == 1, any D (ViT's 197 tokens): a warp per row, 4 rows a block, SM_R values a lane in
// registers (D <= 256 on a GPU; the rest read again), float arithmetic
#define SM_R 8
__global__ void k_softmax_rows(const float *x, float *y, int64_t rows, int64_t D, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        float c[SM_R], m = -INFINITY;
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) c[k] = xr[i], m = fmaxf(m, c[k]);
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L) m = fmaxf(m, xr[i]);
        m = lanes_max(m);
        if (m == -INFINITY) m = 0.0f;
        float sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_R; k++)
            if (lane + (int64_t)k * L < D) sum += expf(c[k] - m);
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L) sum += expf(xr[i] - m);
        sum = lanes_sum(sum);
        float ls = log ? m + logf(sum) : 0.0f, inv = 1.0f / sum;
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) yr[i] = log ? c[k] - ls : expf(c[k] - m) * inv;
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L)
            yr[i] = log ? xr[i] - ls : expf(xr[i] - m) * inv;
    }
}

__global__ void k_softmax_grad_rows(const float *dy, const float *y, float *dx, int64_t rows,
                                    int64_t D, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const float *dr = dy + r * D, *yr = y + r * D;
        float cg[SM_R], cy[SM_R], sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) cg[k] = dr[i], cy[k] = yr[i], sum += log ? cg[k] : cg[k] * cy[k];
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L)
            sum += log ? dr[i] : dr[i] * yr[i];
        sum = lanes_sum(sum);
        UNROLL
        for (int k = 0; k < SM_R; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D) dx[r * D + i] = log ? cg[k] - expf(cy[k]) * sum : cy[k] * (cg[k] - sum);
        }
        for (int64_t i = lane + (int64_t)SM_R * L; i < D; i += L)
            dx[r * D + i] = log ? dr[i] - expf(yr[i]) * sum : yr[i] * (dr[i] - sum);
    }
}

// The last axis, D a multiple of 4 and the rows 16-byte aligned (attention's scores): a warp per
// row, the row held in registers (SM_V float4s a lane: D <= 1024 on a GPU; what does not fit is
// read again), float arithmetic as PyTorch's kernel (the cpu's double sums agree to ~1e-7).
#define SM_V 8
__device__ static inline float max4(float m, f4 a) {
    return fmaxf(fmaxf(m, fmaxf(a.v[0], a.v[1])), fmaxf(a.v[2], a.v[3]));
}
__device__ static inline f4 softmax4(f4 a, float m, float ls, float inv, int log) {
    f4 o;
    for (int e = 0; e < 4; e++) o.v[e] = log ? a.v[e] - ls : expf(a.v[e] - m) * inv;
    return o;
}
__device__ static inline f4 softmax_grad4(f4 g, f4 a, float sum, int log) {
    f4 o;
    for (int e = 0; e < 4; e++)
        o.v[e] = log ? g.v[e] - expf(a.v[e]) * sum : a.v[e] * (g.v[e] - sum);
    return o;
}
__global__ void k_softmax_rows4(const float *x, float *y, int64_t rows, int64_t D4, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const f4 *xr = (const f4 *)x + r * D4;
        f4 *yr = (f4 *)y + r * D4;
        f4 c[SM_V];
        float m = -INFINITY;
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) c[k] = xr[i], m = max4(m, c[k]);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L) m = max4(m, xr[i]);
        m = lanes_max(m);
        if (m == -INFINITY) m = 0.0f;
        float sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4)
                for (int e = 0; e < 4; e++) sum += expf(c[k].v[e] - m);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L) {
            f4 a = xr[i];
            for (int e = 0; e < 4; e++) sum += expf(a.v[e] - m);
        }
        sum = lanes_sum(sum);
        float ls = log ? m + logf(sum) : 0.0f, inv = 1.0f / sum;
        UNROLL
        for (int k = 0; k < SM_V; k++) { // (constant indices keep c[] in registers)
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) yr[i] = softmax4(c[k], m, ls, inv, log);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L)
            yr[i] = softmax4(xr[i], m, ls, inv, log);
    }
}

// its gradient: dx = y (dy - sum(dy y)), or for LogSoftmax dx = dy - exp(y) sum(dy)
__global__ void k_softmax_grad_rows4(const float *dy, const float *y, float *dx, int64_t rows,
                                     int64_t D4, int log) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        const f4 *gr = (const f4 *)dy + r * D4, *yr = (const f4 *)y + r * D4;
        f4 *xr = (f4 *)dx + r * D4;
        f4 cg[SM_V], cy[SM_V];
        float sum = 0.0f;
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) {
                cg[k] = gr[i], cy[k] = yr[i];
                for (int e = 0; e < 4; e++) sum += log ? cg[k].v[e] : cg[k].v[e] * cy[k].v[e];
            }
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L) {
            f4 g = gr[i], a = yr[i];
            for (int e = 0; e < 4; e++) sum += log ? g.v[e] : g.v[e] * a.v[e];
        }
        sum = lanes_sum(sum);
        UNROLL
        for (int k = 0; k < SM_V; k++) {
            int64_t i = lane + (int64_t)k * L;
            if (i < D4) xr[i] = softmax_grad4(cg[k], cy[k], sum, log);
        }
        for (int64_t i = lane + (int64_t)SM_V * L; i < D4; i += L)
            xr[i] = softmax_grad4(gr[i], yr[i], sum, log);
    }
}

static bool softmax_rows4_ok(int64_t D, int64_t inner, const void *a, const void *b,
                             const void *c) {
    return inner == 1 && D % 4 == 0 && ((uintptr_t)a | (uintptr_t)b | (uintptr_t)c) % 16 == 0;
}

extern "C" int cu_softmax(void *stream, const float *x, float *y, int64_t outer, int64_t D,
                          int64_t inner, int log) {
    if (outer * inner == 0) return 0;
    if (softmax_rows4_ok(D, inner, x, y, y)) {
        k_softmax_rows4<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(x, y, outer,
                                                                                       D / 4, log);
        return last_error();
    }
    if (inner == 1) {
        k_softmax_rows<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(x, y, outer,
                                                                                      D, log);
        return last_error();
    }
    k_softmax<<<blocks_for(outer * inner), THREADS, 0, (cudaStream_t)stream>>>(x, y, outer, D,
                                                                               inner, log);
    return last_error();
}

extern "C" int cu_softmax_grad(void *stream, const float *dy, const float *y, float *dx,
                               int64_t outer, int64_t D, int64_t inner, int log) {
    if (outer * inner == 0) return 0;
    if (softmax_rows4_ok(D, inner, dy, y, dx)) {
        k_softmax_grad_rows4<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
            dy, y, dx, outer, D / 4, log);
        return last_error();
    }
    if (inner == 1) {
        k_softmax_grad_rows<<<row_blocks_for(outer), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
            dy, y, dx, outer, D, log);
        return last_error();
    }
    k_softmax_grad<<<blocks_for(outer * inner), THREADS, 0, (cudaStream_t)stream>>>(
        dy, y, dx, outer, D, inner, log);
    return last_error();
}

// ---- FusedAttention (cpu_attention.c): a warp per row of scores ----

// A warp per row of scores, 4 rows a block, the row in registers (ATT_V a lane: S <= 1024 on a
// GPU; the rest read again): mask, then row = exp(row - lse), lse = log(sum(exp(row))) computed
// (forward, into lse_out) or given (backward's recompute: the forward's probabilities again).
#define ATT_V 32
__global__ void k_att_softmax(float *s, int64_t rows, int64_t T, int64_t S, int64_t b0,
                              cu_att_mask m, const float *lse_in, float *lse_out) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        float *row = s + r * S;
        int64_t t = r % T, mo = att_mask_row(m, b0 + r / T, t), n = att_cols(m, t, S);
        float c[ATT_V], mx = -INFINITY;
        UNROLL
        for (int k = 0; k < ATT_V; k++) {
            int64_t j = lane + (int64_t)k * L;
            if (j < n) c[k] = att_masked(m, mo, t, j) ? m.fill : row[j], mx = fmaxf(mx, c[k]);
        }
        for (int64_t j = lane + (int64_t)ATT_V * L; j < n; j += L)
            mx = fmaxf(mx, att_masked(m, mo, t, j) ? m.fill : row[j]);
        float lse;
        if (lse_in) {
            lse = lse_in[r];
        } else {
            mx = lanes_max(mx);
            float sum = 0.0f;
            UNROLL
            for (int k = 0; k < ATT_V; k++)
                if (lane + (int64_t)k * L < n) sum += expf(c[k] - mx);
            for (int64_t j = lane + (int64_t)ATT_V * L; j < n; j += L)
                sum += expf((att_masked(m, mo, t, j) ? m.fill : row[j]) - mx);
            sum = lanes_sum(sum);
            lse = mx == -INFINITY ? -INFINITY : mx + logf(sum);
            if (lane == 0) lse_out[r] = lse;
        }
        for (int64_t j = lane + (int64_t)ATT_V * L; j < n; j += L) // the tail first: row[j] read
            row[j] = expf((att_masked(m, mo, t, j) ? m.fill : row[j]) - lse);
        UNROLL
        for (int k = 0; k < ATT_V; k++) {
            int64_t j = lane + (int64_t)k * L;
            if (j < n) row[j] = expf(c[k] - lse);
        }
    }
}

extern "C" int cu_att_softmax(void *stream, float *s, int64_t rows, int64_t T, int64_t S,
                              int64_t b0, cu_att_mask m, const float *lse_in, float *lse_out) {
    if (rows == 0) return 0;
    k_att_softmax<<<row_blocks_for(rows), ROW_BLOCK, 0, (cudaStream_t)stream>>>(s, rows, T, S, b0,
                                                                                m, lse_in, lse_out);
    return last_error();
}

__global__ void k_att_dropout(const float *p, float *out, int64_t n, cu_rng r, float ratio,
                              int64_t first) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    GRID_LOOP(i, n) out[i] = rng_uniform(key, (uint64_t)(first + i)) >= ratio ? p[i] * scale : 0.0f;
}
__global__ void k_att_dropout4(const f4 *p, f4 *out, int64_t n4, cu_rng r, float ratio,
                               int64_t first) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    GRID_LOOP(q, n4) {
        f4 a = p[q], o;
        for (int e = 0; e < 4; e++)
            o.v[e] =
                rng_uniform(key, (uint64_t)(first + q * 4 + e)) >= ratio ? a.v[e] * scale : 0.0f;
        out[q] = o;
    }
}

// Blocked rows: a warp per row, its first att_cols columns alone.
__global__ void k_att_dropout_rows(const float *p, float *out, int64_t rows, int64_t T, int64_t S,
                                   cu_att_mask m, cu_rng r, float ratio, int64_t first) {
    float scale = 1.0f / (1.0f - ratio);
    uint64_t key = rng_key(r);
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(q, rows) {
        int64_t n = att_cols(m, q % T, S);
        for (int64_t j = lane; j < n; j += L) {
            int64_t i = q * S + j;
            out[i] = rng_uniform(key, (uint64_t)(first + i)) >= ratio ? p[i] * scale : 0.0f;
        }
    }
}

extern "C" int cu_att_dropout(void *stream, const float *p, float *out, int64_t rows, int64_t T,
                              int64_t S, int64_t blk, cu_rng key, float ratio, int64_t first) {
    int64_t n = rows * S;
    if (n == 0) return 0;
    if (blk > 0) {
        cu_att_mask m = {};
        m.blk = blk;
        k_att_dropout_rows<<<row_blocks_for(rows), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
            p, out, rows, T, S, m, key, ratio, first);
        return last_error();
    }
    if (vec4_ok(n, p, out, out)) {
        k_att_dropout4<<<blocks_for(n / 4), THREADS, 0, (cudaStream_t)stream>>>(
            (const f4 *)p, (f4 *)out, n / 4, key, ratio, first);
        return last_error();
    }
    k_att_dropout<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(p, out, n, key, ratio,
                                                                       first);
    return last_error();
}

__global__ void k_att_ptrs(const float **out, int64_t nblk, int64_t cb, int64_t b0, cu_att_ptrs p) {
    GRID_LOOP(x, nblk * 3 * cb) {
        int64_t i = x / (3 * cb), o = x / cb % 3, bb = b0 + x % cb - p.first[o];
        out[x] = p.base[o] + bb / p.h[o] * p.s1[o] + bb % p.h[o] * p.s2[o] + i * p.step[o];
    }
}

extern "C" int cu_att_ptrs_fill(void *stream, const float **out, int64_t nblk, int64_t cb,
                                int64_t b0, cu_att_ptrs p) {
    if (nblk * cb == 0) return 0;
    k_att_ptrs<<<blocks_for(nblk * 3 * cb), THREADS, 0, (cudaStream_t)stream>>>(out, nblk, cb, b0,
                                                                                p);
    return last_error();
}

// dS = P (dP' - D) per row, D = sum(dY Y) over the row's dv outputs, dP' = dP with the forward's
// dropout; 0 where masked. A warp per row, 4 rows a block.
__global__ void k_att_ds(float *ds, const float *p, const float *dy, const float *y, int64_t rows,
                         int64_t T, int64_t S, int64_t dv, int64_t H, int64_t b0, cu_att_mask m,
                         cu_rng r, float ratio) {
    float scale = ratio > 0.0f ? 1.0f / (1.0f - ratio) : 1.0f;
    uint64_t key = ratio > 0.0f ? rng_key(r) : 0;
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, rows) {
        int64_t b = b0 + r / T, t = r % T, mo = att_mask_row(m, b, t);
        // row t of batch b in dY and Y: [b.., T, dv] or (H > 0) [N, T, H, dv]
        int64_t yo = H ? ((b / H * T + t) * H + b % H) * dv : (b * T + t) * dv;
        float D = 0.0f;
        for (int64_t i = lane; i < dv; i += L) D += dy[yo + i] * y[yo + i];
        D = lanes_sum(D);
        uint64_t at = (uint64_t)(b * T * S + t * S);
        for (int64_t j = lane, n = att_cols(m, t, S); j < n; j += L) {
            int64_t k = r * S + j;
            float dp = ds[k];
            if (ratio > 0.0f) dp = rng_uniform(key, at + (uint64_t)j) >= ratio ? dp * scale : 0.0f;
            ds[k] = att_masked(m, mo, t, j) ? 0.0f : p[k] * (dp - D);
        }
    }
}

extern "C" int cu_att_ds(void *stream, float *ds, const float *p, const float *dy, const float *y,
                         int64_t rows, int64_t T, int64_t S, int64_t dv, int64_t H, int64_t b0,
                         cu_att_mask m, cu_rng key, float ratio) {
    if (rows == 0) return 0;
    k_att_ds<<<row_blocks_for(rows), ROW_BLOCK, 0, (cudaStream_t)stream>>>(
        ds, p, dy, y, rows, T, S, dv, H, b0, m, key, ratio);
    return last_error();
}

// ---- LayerNormalization (cpu_layer_norm): a warp per row, 4 rows a block, V elements a lane
//      a load (4: a 16-byte load where D is a multiple of 4 and the tensors aligned); the scale
//      and bias gradients by parts of the rows per column (the row statistics computed once,
//      in the caller's scratch) ----
// mean and 1/sqrt(var + eps) of row x, in double (two passes, as the cpu kernel)
template <int V>
__device__ static void ln_row_stats(const float *x, int64_t D, double eps, int lane, int L,
                                    double *m, double *is) {
    double s = 0, q = 0;
    for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
        float v[V];
        ldv<float, V>(x, i, v);
        for (int e = 0; e < V; e++) s += v[e];
    }
    s = lanes_sum(s);
    double mean = D ? s / (double)D : 0;
    for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
        float v[V];
        ldv<float, V>(x, i, v);
        for (int e = 0; e < V; e++) q += ((double)v[e] - mean) * ((double)v[e] - mean);
    }
    q = lanes_sum(q);
    *m = mean;
    *is = 1.0 / sqrt((D ? q / (double)D : 0) + eps);
}

template <int V>
__global__ void k_layer_norm(const float *x, const float *s, const float *b, float *y, int64_t R,
                             int64_t D, double eps) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, R) {
        double m, is;
        ln_row_stats<V>(x + r * D, D, eps, lane, L, &m, &is);
        for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
            float v[V], o[V];
            ldv<float, V>(x, r * D + i, v);
            for (int e = 0; e < V; e++)
                o[e] = (float)(((double)v[e] - m) * is * s[i + e] + (b ? b[i + e] : 0.0f));
            stv<float, V>(y, r * D + i, o);
        }
    }
}

// dX per row; the row's mean and 1/std into stats[2r], stats[2r + 1] for the column kernel
template <int V>
__global__ void k_layer_norm_dx(const float *dy, const float *x, const float *s, float *dx,
                                double *stats, int64_t R, int64_t D, double eps) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(r, R) {
        const float *xr = x + r * D, *dr = dy + r * D;
        double m, is, sg = 0, sgx = 0;
        ln_row_stats<V>(xr, D, eps, lane, L, &m, &is);
        if (lane == 0) stats[2 * r] = m, stats[2 * r + 1] = is;
        if (!dx) continue;
        for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
            float xv[V], dv[V];
            ldv<float, V>(xr, i, xv);
            ldv<float, V>(dr, i, dv);
            for (int e = 0; e < V; e++) {
                double xh = ((double)xv[e] - m) * is, gi = (double)dv[e] * s[i + e];
                sg += gi;
                sgx += gi * xh;
            }
        }
        sg = lanes_sum(sg);
        sgx = lanes_sum(sgx);
        for (int64_t i = (int64_t)lane * V; i < D; i += (int64_t)L * V) {
            float xv[V], dv[V], o[V];
            ldv<float, V>(xr, i, xv);
            ldv<float, V>(dr, i, dv);
            for (int e = 0; e < V; e++) {
                double xh = ((double)xv[e] - m) * is, gi = (double)dv[e] * s[i + e];
                o[e] = (float)(is / (double)D * ((double)D * gi - sg - xh * sgx));
            }
            stv<float, V>(dx + r * D, i, o);
        }
    }
}

__global__ void k_col_sums(const double *t, int64_t N, int64_t C, void *out, int kout,
                           float scale); // below, with the half kinds

// dScale's and dBias's sums of the rows of part p, column i: t[p D + i], t[(P + p) D + i]
__global__ void k_layer_norm_dsb_parts(const float *dy, const float *x, const double *stats,
                                       int64_t R, int64_t D, int64_t rows_per, int64_t P,
                                       double *t) {
    GRID_LOOP(k, P * D) {
        int64_t p = k / D, i = k % D, end = (p + 1) * rows_per < R ? (p + 1) * rows_per : R;
        double a = 0, c = 0;
        for (int64_t r = p * rows_per; r < end; r++) {
            double g = dy[r * D + i];
            a += g * (((double)x[r * D + i] - stats[2 * r]) * stats[2 * r + 1]);
            c += g;
        }
        t[k] = a;
        t[P * D + k] = c;
    }
}

// The same 4 columns a thread (D a multiple of 4, dy and x aligned), one 16-byte load of each a
// row: every column's sums in the one-column kernel's order, the same bits.
__global__ void k_layer_norm_dsb_parts4(const float *dy, const float *x, const double *stats,
                                        int64_t R, int64_t D, int64_t rows_per, int64_t P,
                                        double *t) {
    int64_t G = D / 4;
    GRID_LOOP(k, P * G) {
        int64_t p = k / G, i = k % G * 4, end = (p + 1) * rows_per < R ? (p + 1) * rows_per : R;
        double a[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0};
        for (int64_t r = p * rows_per; r < end; r++) {
            float g[4], v[4];
            ldv<float, 4>(dy, r * D + i, g);
            ldv<float, 4>(x, r * D + i, v);
            for (int e = 0; e < 4; e++) {
                a[e] += (double)g[e] * (((double)v[e] - stats[2 * r]) * stats[2 * r + 1]);
                c[e] += g[e];
            }
        }
        for (int e = 0; e < 4; e++) t[p * D + i + e] = a[e], t[(P + p) * D + i + e] = c[e];
    }
}

extern "C" int cu_layer_norm(void *stream, const float *x, const float *s, const float *b, float *y,
                             int64_t R, int64_t D, float eps) {
    if (R == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    if (vec_of(D, 4, x, y, NULL, NULL) == 4)
        k_layer_norm<4><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(x, s, b, y, R, D, eps);
    else k_layer_norm<1><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(x, s, b, y, R, D, eps);
    return last_error();
}

extern "C" int cu_layer_norm_grad(void *stream, const float *dy, const float *x, const float *s,
                                  float *dx, float *ds, float *db, double *stats, int64_t R,
                                  int64_t D, float eps) {
    cudaStream_t st = (cudaStream_t)stream;
    if (R > 0 && vec_of(D, 4, dy, x, dx, NULL) == 4)
        k_layer_norm_dx<4><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(dy, x, s, dx, stats, R, D, eps);
    else if (R > 0)
        k_layer_norm_dx<1><<<row_blocks_for(R), ROW_BLOCK, 0, st>>>(dy, x, s, dx, stats, R, D, eps);
    if ((!ds && !db) || D == 0) return last_error();
    int64_t P = cu_channel_parts(R, D);
    double *t = stats + 2 * R;
    if (R > 0 && vec_of(D, 4, dy, x, NULL, NULL) == 4 && !scalar_sums())
        k_layer_norm_dsb_parts4<<<blocks_for(P * D / 4), THREADS, 0, st>>>(dy, x, stats, R, D,
                                                                           (R + P - 1) / P, P, t);
    else if (R > 0)
        k_layer_norm_dsb_parts<<<blocks_for(P * D), THREADS, 0, st>>>(dy, x, stats, R, D,
                                                                      (R + P - 1) / P, P, t);
    int64_t parts = R > 0 ? P : 0;
    if (ds) k_col_sums<<<warps_for(D), WARP, 0, st>>>(t, parts, D, ds, 0, 1.0f);
    if (db) k_col_sums<<<warps_for(D), WARP, 0, st>>>(t + P * D, parts, D, db, 0, 1.0f);
    return last_error();
}

// ---- BatchNormalizationGrad, frozen statistics (cpu_batch_norm_grad) ----
__global__ void k_bn_frozen_sums(const float *dy, const float *x, const float *mean,
                                 const float *var, float eps, float *ds, float *db, int64_t N,
                                 int64_t C, int64_t S) {
    GRID_LOOP(c, C) { // one thread per channel, double sums in the cpu kernel's order
        double invstd = 1.0 / sqrt((double)var[c] + (double)eps), sdy = 0, sdyx = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < S; i++) {
                int64_t off = (n * C + c) * S + i;
                sdy += dy[off];
                sdyx += dy[off] * ((double)x[off] - mean[c]) * invstd;
            }
        if (ds) ds[c] = (float)sdyx;
        if (db) db[c] = (float)sdy;
    }
}

__global__ void k_bn_frozen_dx(const float *dy, const float *scale, const float *var, float eps,
                               float *dx, int64_t C, int64_t S, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t c = (i / S) % C;
        double invstd = 1.0 / sqrt((double)var[c] + (double)eps);
        dx[i] = (float)(scale[c] * invstd * dy[i]);
    }
}

extern "C" int cu_bn_frozen_grad(void *stream, const float *dy, const float *x, const float *scale,
                                 const float *mean, const float *var, float eps, float *dx,
                                 float *ds, float *db, int64_t N, int64_t C, int64_t S) {
    cudaStream_t s = (cudaStream_t)stream;
    if (C > 0 && (ds || db))
        k_bn_frozen_sums<<<blocks_for(C), THREADS, 0, s>>>(dy, x, mean, var, eps, ds, db, N, C, S);
    if (dx && N * C * S > 0)
        k_bn_frozen_dx<<<blocks_for(N * C * S), THREADS, 0, s>>>(dy, scale, var, eps, dx, C, S,
                                                                 N * C * S);
    return last_error();
}

// ---- BatchNormRelu and its gradient (cpu_norm.c bn_forward / bn_backward) ----
// Statistics: part p of channel c covers the images [N p / P, N (p + 1) / P) (P from
// cuda_norm_act.c: about 4096 elements each); one warp per part walks its rows (n, c), each S
// contiguous elements, lanes striding by 32 with four loads in flight, sums in double, a fixed
// shuffle order; a warp per channel then adds the parts in order: deterministic, and every SM
// busy (ResNet-50's stem at batch 640: 40960 warps). The elementwise passes go row by row (one
// block per (n, c) row: no division per element). Channels-last: the _nhwc kernels below.
// BN's value of x (the forward's arithmetic: the fused gradient's Relu mask is Y > 0 exactly).
__device__ static inline float bn_value(float x, double m, double a_c, double b_c) {
    return (float)(((double)x - m) * a_c + b_c);
}

// v rounded as storing it in a T rounds it.
template <typename T> __device__ static inline float stored_as(float v) {
    T t;
    st(&t, 0, v);
    return ld(&t, 0);
}

// The BN output's gradient: dy where BN(x) > 0 (BatchNormRelu; a_c = invstd scale, b_c =
// bias), BN(x) rounded as Y was stored, so the mask is Y > 0 exactly.
template <typename T>
__device__ static inline float bn_masked(float dy, float x, double m, double a_c, double b_c) {
    return oc_relu_grad(dy, stored_as<T>(bn_value(x, m, a_c, b_c)));
}

// The float forms (FM 1): channel c's mean mf, a = invstd scale and bias b as floats (rounded
// once from the double statistics); the forward and the gradient's mask share this function,
// so the mask is still Y > 0 exactly.
struct bn_fc {
    float m, a, b, is;
};
__device__ static inline bn_fc bn_fcoef(const double *stats, const float *scale, const float *bias,
                                        int64_t c) {
    double is = stats[2 * c + 1];
    return bn_fc{(float)stats[2 * c], (float)(is * scale[c]), bias ? bias[c] : 0.0f, (float)is};
}
__device__ static inline float bn_value_f(float x, const bn_fc &f) {
    return fmaf(x - f.m, f.a, f.b);
}
template <typename T>
__device__ static inline float bn_masked_f(float dy, float x, const bn_fc &f) {
    return oc_relu_grad(dy, stored_as<T>(bn_value_f(x, f)));
}

// One element's terms of the sums (GRAD 0: x and x^2; else dz and dz xhat), dy read only when
// GRAD.
template <int GRAD, typename T>
__device__ static inline void bn_acc_v(float dy, float x, double m, double is, double a_c,
                                       double b_c, double &s, double &q) {
    if (GRAD) { // sum dz, sum dz xhat
        float d = GRAD == 1 ? bn_masked<T>(dy, x, m, a_c, b_c) : dy;
        s += d;
        q += d * ((double)x - m) * is;
    } else { // sum x, sum x^2
        double v = x;
        s += v;
        q += v * v;
    }
}

// Channel c's mean, 1/sqrt(var + eps) and (GRAD 1) the mask's a_c, b_c.
#define BN_CHANNEL(c)                                                                              \
    double m = GRAD ? stats[2 * (c)] : 0, is = GRAD ? stats[2 * (c) + 1] : 0;                      \
    double a_c = GRAD == 1 ? is * scale[c] : 0, b_c = GRAD == 1 ? (double)bias[c] : 0

// V elements a lane (vec_of: S a multiple of 4, the tensors aligned): the lanes' sums then
// differ in order from V 1's, deterministic either way.
template <int GRAD, int V, typename T>
__global__ void k_bn_parts(const T *dy, const T *x, const double *stats, const float *scale,
                           const float *bias, int64_t N, int64_t C, int64_t S, int64_t P,
                           double *part) {
    ROW_LOOP(u, C * P) {
        int64_t c = u / P, p = u % P;
        BN_CHANNEL(c);
        double s0 = 0, q0 = 0, s1 = 0, q1 = 0;
        int64_t B = (int64_t)blockDim.x * V;
        float d[V] = {}, xv[V];
#define BN_AT(o, S_, Q_)                                                                           \
    do {                                                                                           \
        ldv<T, V>(x, (o), xv);                                                                     \
        if (GRAD) ldv<T, V>(dy, (o), d);                                                           \
        for (int k = 0; k < V; k++) bn_acc_v<GRAD, T>(d[k], xv[k], m, is, a_c, b_c, S_, Q_);       \
    } while (0)
        for (int64_t n = N * p / P; n < N * (p + 1) / P; n++) {
            int64_t row = (n * C + c) * S, i = (int64_t)threadIdx.x * V;
            for (; i + 3 * B < S; i += 4 * B) { // four independent loads per lane
                BN_AT(row + i, s0, q0);
                BN_AT(row + i + B, s1, q1);
                BN_AT(row + i + 2 * B, s0, q0);
                BN_AT(row + i + 3 * B, s1, q1);
            }
            for (; i < S; i += B) BN_AT(row + i, s0, q0);
        }
#undef BN_AT
        double s = warp_sum(s0 + s1), q = warp_sum(q0 + q1);
        if (threadIdx.x == 0) part[2 * u] = s, part[2 * u + 1] = q;
    }
}

// One row's V channels into the float sums of k_bn_parts_nhwc's FM 1: x and x^2 (GRAD 0),
// else dz (masked: GRAD 1) and dz xhat.
template <int GRAD, int V, typename T>
__device__ static inline void bn_row_f(const T *dy, const T *x, int64_t i, const bn_fc *f,
                                       float *fs, float *fq) {
    float d[V], xv[V];
    ldv<T, V>(x, i, xv);
    if (GRAD) ldv<T, V>(dy, i, d);
    UNROLL
    for (int k = 0; k < V; k++) {
        if (!GRAD) {
            fs[k] += xv[k];
            fq[k] = fmaf(xv[k], xv[k], fq[k]);
            continue;
        }
        float dz = GRAD == 1 ? bn_masked_f<T>(d[k], xv[k], f[k]) : d[k];
        fs[k] += dz;
        fq[k] = fmaf(dz, (xv[k] - f[k].m) * f[k].is, fq[k]);
    }
}

// The statistics' parts (x as rows of C): part p covers the rows [R p, R (p + 1)), a thread
// per (p, group of V channels) — a warp reads neighbouring channels of a row: coalesced —
// walking them four rows at a time (rows alternating between two sums per channel), sums in
// double, into the same part[2 (c P + p)] layout as k_bn_parts.
// FM 1: each element's terms in float, four rows' worth summed in float, then added to the
// double sums (the statistics too: E[x^2] - mean^2 is still taken in double, over sums whose
// terms lost at most float rounding).
template <int GRAD, int V, typename T, int FM>
__global__ void k_bn_parts_nhwc(const T *dy, const T *x, const double *stats, const float *scale,
                                const float *bias, int64_t rows, int64_t C, int64_t R, int64_t P,
                                double *part) {
    const int64_t G = C / V;
    GRID_LOOP(u, G * P) {
        int64_t c0 = u % G * V, p = u / G, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double m[V], is[V], a_c[V], b_c[V], s0[V], q0[V], s1[V], q1[V];
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = c0 + k;
            m[k] = GRAD ? stats[2 * c] : 0, is[k] = GRAD ? stats[2 * c + 1] : 0;
            a_c[k] = GRAD == 1 ? is[k] * scale[c] : 0, b_c[k] = GRAD == 1 ? (double)bias[c] : 0;
            s0[k] = q0[k] = s1[k] = q1[k] = 0;
        }
        float d[V] = {}, xv[V];
        if (FM) {
            bn_fc f[V];
            UNROLL
            for (int k = 0; k < V; k++)
                f[k] = GRAD ? bn_fcoef(stats, scale, GRAD == 1 ? bias : NULL, c0 + k) : bn_fc{};
            int64_t r = p * R;
            for (; r + 3 < end; r += 4) { // four rows' loads in flight, summed in float
                float fs[V] = {}, fq[V] = {};
                UNROLL
                for (int j = 0; j < 4; j++) bn_row_f<GRAD, V>(dy, x, (r + j) * C + c0, f, fs, fq);
                UNROLL
                for (int k = 0; k < V; k++) s0[k] += fs[k], q0[k] += fq[k];
            }
            for (; r < end; r++) {
                float fs[V] = {}, fq[V] = {};
                bn_row_f<GRAD, V>(dy, x, r * C + c0, f, fs, fq);
                UNROLL
                for (int k = 0; k < V; k++) s0[k] += fs[k], q0[k] += fq[k];
            }
        } else {
#define BN_ROW(row, S, Q)                                                                          \
    do {                                                                                           \
        ldv<T, V>(x, (row)*C + c0, xv);                                                            \
        if (GRAD) ldv<T, V>(dy, (row)*C + c0, d);                                                  \
        UNROLL for (int k = 0; k < V; k++)                                                         \
            bn_acc_v<GRAD, T>(d[k], xv[k], m[k], is[k], a_c[k], b_c[k], S[k], Q[k]);               \
    } while (0)
            int64_t r = p * R;
            for (; r + 3 < end; r += 4) { // four independent loads per thread (as k_bn_parts)
                BN_ROW(r, s0, q0);
                BN_ROW(r + 1, s1, q1);
                BN_ROW(r + 2, s0, q0);
                BN_ROW(r + 3, s1, q1);
            }
            for (; r < end; r++) BN_ROW(r, s0, q0);
#undef BN_ROW
        }
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = c0 + k;
            part[2 * (c * P + p)] = s0[k] + s1[k], part[2 * (c * P + p) + 1] = q0[k] + q1[k];
        }
    }
}

// stats[2c], stats[2c + 1]: the mean and 1 / sqrt(var + eps) BN normalises with.
// A channel's parts added up: a warp per channel, lane l adding parts l, l + 32, .. in order,
// then the lanes in warp_sum's fixed order (deterministic; channels-last nodes have up to
// cu_nhwc_threads() / C parts).
__device__ static inline void parts_sum(const double *part, int64_t c, int64_t P, double &s,
                                        double &q) {
    s = 0, q = 0;
    for (int64_t p = threadIdx.x; p < P; p += blockDim.x)
        s += part[2 * (c * P + p)], q += part[2 * (c * P + p) + 1];
    s = warp_sum(s), q = warp_sum(q);
}

// keep / keepf (may be NULL): the statistics stash's two forms (cuda_bn_stash.c).
__global__ void k_bn_finish_stats(const double *part, int64_t C, int64_t P, int64_t M, float eps,
                                  int train, const float *rm, const float *rv, float momentum,
                                  float *om, float *ov, double *stats, double *keep, float *keepf) {
    ROW_LOOP(c, C) {
        double s = 0, q = 0;
        if (train) parts_sum(part, c, P, s, q);
        if (threadIdx.x != 0) continue;
        double mean = rm ? rm[c] : 0, var = rv ? rv[c] : 1;
        if (train) {
            mean = M > 0 ? s / (double)M : 0;
            var = M > 0 ? q / (double)M - mean * mean : 0;
            if (var < 0) var = 0;
            double unbias = M > 1 ? (double)M / (double)(M - 1) : 1.0;
            // om / ov may be rm / rv: each thread reads its channel before writing it
            if (om) om[c] = momentum * rm[c] + (1.0f - momentum) * (float)mean;
            if (ov) ov[c] = momentum * rv[c] + (1.0f - momentum) * (float)(var * unbias);
        }
        stats[2 * c] = mean;
        stats[2 * c + 1] = 1.0 / sqrt(var + (double)eps);
        if (keep) keep[2 * c] = stats[2 * c], keep[2 * c + 1] = stats[2 * c + 1];
        if (keepf) keepf[c] = (float)stats[2 * c], keepf[C + c] = (float)stats[2 * c + 1];
    }
}

// One block per row (n, c), V elements a thread (4 where S is a multiple of 4 and the
// tensors aligned: vec_of); r: the residual or NULL; RELU 0: BatchNormalization alone.
template <int RELU, int V, typename T>
__global__ void k_bn_relu_apply(const T *x, const T *r, const double *stats, const float *scale,
                                const float *bias, T *y, int64_t C, int64_t S, int64_t rows) {
    ROW_LOOP(row, rows) {
        int64_t c = row % C, o = row * S;
        double m = stats[2 * c], a_c = stats[2 * c + 1] * scale[c], b_c = bias[c];
        for (int64_t i = threadIdx.x * V; i < S; i += blockDim.x * V) {
            float v[V], rv[V];
            ldv<T, V>(x, o + i, v);
            if (r) ldv<T, V>(r, o + i, rv);
            UNROLL
            for (int k = 0; k < V; k++) {
                float u = bn_value(v[k], m, a_c, b_c);
                if (r) u = u + rv[k];
                v[k] = RELU ? oc_relu(u) : u;
            }
            stv<T, V>(y, o + i, v);
        }
    }
}

// Channels-last passes over every element: the grid as gx threads across the G = C / V
// channel groups of a row by ry down the rows (threads past gx ry idle; on the emulator one
// thread walks everything), so a thread keeps its channels' coefficients in registers and
// divides nothing per element.
struct cg_walk {
    int64_t g0, gx, r0, ry;
    bool idle;
};
__device__ static inline cg_walk cg_walk_of(int64_t G) {
    int64_t T = (int64_t)gridDim.x * blockDim.x, t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t gx = G < T ? G : T, ry = T / gx;
    return cg_walk{t % gx, gx, t / gx, ry, t >= gx * ry};
}
// At most 4096 blocks of THREADS (a million threads, more than any GPU holds at once), so a
// thread walks several rows and its coefficient loads pay for themselves.
static unsigned cg_blocks(int64_t rows, int64_t G) {
    unsigned b = blocks_for(rows * G);
    return b < 4096 ? b : 4096;
}

// k_bn_relu_apply's arithmetic, channels-last.
template <int RELU, int V, typename T, int FM>
__global__ void k_bn_relu_apply_nhwc(const T *x, const T *r, const double *stats,
                                     const float *scale, const float *bias, T *y, int64_t C,
                                     int64_t rows) {
    cg_walk w = cg_walk_of(C / V);
    if (w.idle) return;
    for (int64_t g = w.g0; g < C / V; g += w.gx) {
        double m[V], a_c[V], b_c[V];
        bn_fc f[V];
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = g * V + k;
            m[k] = stats[2 * c], a_c[k] = stats[2 * c + 1] * scale[c], b_c[k] = bias[c];
            if (FM) f[k] = bn_fcoef(stats, scale, bias, c);
        }
        for (int64_t row = w.r0; row < rows; row += w.ry) {
            int64_t i = row * C + g * V;
            float v[V], rv[V];
            ldv<T, V>(x, i, v);
            if (r) ldv<T, V>(r, i, rv);
            UNROLL
            for (int k = 0; k < V; k++) {
                float o = FM ? bn_value_f(v[k], f[k]) : bn_value(v[k], m[k], a_c[k], b_c[k]);
                if (r) o = o + rv[k];
                v[k] = RELU ? oc_relu(o) : o;
            }
            stv<T, V>(y, i, v);
        }
    }
}

static unsigned row_threads(int64_t S) { // a block per row: up to 256 threads, whole warps
    int64_t t = (S + WARP - 1) / WARP * WARP;
    return (unsigned)(t > THREADS ? THREADS : t < WARP ? WARP : t);
}

// The channels-last launches, FM from OC_BN_MATH (bn_float_math).
template <int GRAD, int V, typename T>
static void bn_parts_nhwc(cudaStream_t st, bool fm, const T *dy, const T *x, const double *stats,
                          const float *scale, const float *bias, int64_t rows, int64_t C, int64_t R,
                          int64_t P, double *part) {
    if (fm)
        k_bn_parts_nhwc<GRAD, V, T, 1><<<blocks_for(C / V * P), THREADS, 0, st>>>(
            dy, x, stats, scale, bias, rows, C, R, P, part);
    else
        k_bn_parts_nhwc<GRAD, V, T, 0><<<blocks_for(C / V * P), THREADS, 0, st>>>(
            dy, x, stats, scale, bias, rows, C, R, P, part);
}
template <int RELU, int V, typename T>
static void bn_apply_nhwc(cudaStream_t st, bool fm, const T *x, const T *r, const double *stats,
                          const float *scale, const float *bias, T *y, int64_t C, int64_t rows) {
    if (fm)
        k_bn_relu_apply_nhwc<RELU, V, T, 1>
            <<<cg_blocks(rows, C / V), THREADS, 0, st>>>(x, r, stats, scale, bias, y, C, rows);
    else
        k_bn_relu_apply_nhwc<RELU, V, T, 0>
            <<<cg_blocks(rows, C / V), THREADS, 0, st>>>(x, r, stats, scale, bias, y, C, rows);
}
// The parts of the sums (statistics: GRAD 0; the gradient's: 1 or 2), either layout.
template <int GRAD, typename T>
static void bn_parts(cudaStream_t st, int nhwc, const T *dy, const T *x, const double *stats,
                     const float *scale, const float *bias, int64_t N, int64_t C, int64_t S,
                     int64_t P, double *part) {
    int64_t R = (N * S + P - 1) / P;
    bool fm = bn_float_math();
    if (nhwc && bn_v8(C, sizeof(T), x, dy, NULL)) {
        if constexpr (sizeof(T) == 2)
            bn_parts_nhwc<GRAD, 8, T>(st, fm, dy, x, stats, scale, bias, N * S, C, R, P, part);
    } else if (nhwc && vec_of(C, sizeof(T), x, dy, NULL, NULL) == 4)
        bn_parts_nhwc<GRAD, 4, T>(st, fm, dy, x, stats, scale, bias, N * S, C, R, P, part);
    else if (nhwc)
        bn_parts_nhwc<GRAD, 1, T>(st, fm, dy, x, stats, scale, bias, N * S, C, R, P, part);
    else if (vec_of(S, sizeof(T), x, dy, NULL, NULL) == 4)
        k_bn_parts<GRAD, 4, T>
            <<<warps_for(C * P), WARP, 0, st>>>(dy, x, stats, scale, bias, N, C, S, P, part);
    else
        k_bn_parts<GRAD, 1, T>
            <<<warps_for(C * P), WARP, 0, st>>>(dy, x, stats, scale, bias, N, C, S, P, part);
}

template <typename T>
static void bn_stats(cudaStream_t st, int nhwc, const T *x, const float *rm, const float *rv,
                     float momentum, float eps, int train, float *om, float *ov, int64_t N,
                     int64_t C, int64_t S, int64_t P, double *stats, double *part, double *keep,
                     float *keepf) {
    if (train) bn_parts<0, T>(st, nhwc, NULL, x, NULL, NULL, NULL, N, C, S, P, part);
    k_bn_finish_stats<<<warps_for(C), WARP, 0, st>>>(part, C, P, N * S, eps, train, rm, rv,
                                                     momentum, om, ov, stats, keep, keepf);
}

template <int RELU, typename T>
static void bn_relu_launch(cudaStream_t st, int nhwc, const T *x, const T *r, const float *scale,
                           const float *bias, const float *rm, const float *rv, float momentum,
                           float eps, int train, float *om, float *ov, T *y, int64_t N, int64_t C,
                           int64_t S, int64_t P, double *ws, double *keep, float *keepf) {
    bn_stats(st, nhwc, x, rm, rv, momentum, eps, train, om, ov, N, C, S, P, ws, ws + 4 * C, keep,
             keepf);
    if (N * C * S > 0 && nhwc && bn_v8(C, sizeof(T), x, r, y)) {
        if constexpr (sizeof(T) == 2)
            bn_apply_nhwc<RELU, 8, T>(st, bn_float_math(), x, r, ws, scale, bias, y, C, N * S);
    } else if (N * C * S > 0 && nhwc && vec_of(C, sizeof(T), x, r, y, NULL) == 4)
        bn_apply_nhwc<RELU, 4, T>(st, bn_float_math(), x, r, ws, scale, bias, y, C, N * S);
    else if (N * C * S > 0 && nhwc)
        bn_apply_nhwc<RELU, 1, T>(st, bn_float_math(), x, r, ws, scale, bias, y, C, N * S);
    else if (N * C * S > 0 && vec_of(S, sizeof(T), x, r, y, NULL) == 4)
        k_bn_relu_apply<RELU, 4, T><<<warps_for(N * C), row_threads(S / 4), 0, st>>>(
            x, r, ws, scale, bias, y, C, S, N * C);
    else if (N * C * S > 0)
        k_bn_relu_apply<RELU, 1, T>
            <<<warps_for(N * C), row_threads(S), 0, st>>>(x, r, ws, scale, bias, y, C, S, N * C);
}

extern "C" int cu_bn_relu(void *stream, int kind, int relu, const void *x, const void *r,
                          const float *scale, const float *bias, const float *rm, const float *rv,
                          float momentum, float eps, int train, float *om, float *ov, void *y,
                          int64_t N, int64_t C, int64_t S, int nhwc, int64_t P, double *ws,
                          double *keep, float *keepf) {
    if (C == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
#define BN_APPLY(R, T)                                                                             \
    bn_relu_launch<R>(st, nhwc, (const T *)x, (const T *)r, scale, bias, rm, rv, momentum, eps,    \
                      train, om, ov, (T *)y, N, C, S, P, ws, keep, keepf)
#define BN_KINDS(R)                                                                                \
    if (kind == 1) BN_APPLY(R, oc_f16);                                                            \
    else if (kind == 2) BN_APPLY(R, oc_bf16);                                                      \
    else BN_APPLY(R, float)
    if (relu) {
        BN_KINDS(1);
    } else {
        BN_KINDS(0);
    }
#undef BN_KINDS
#undef BN_APPLY
    return last_error();
}

__global__ void k_bn_saved(const double *stats, int64_t C, float eps, float *sm, float *sv) {
    GRID_LOOP(c, C) {
        double is = stats[2 * c + 1];
        sm[c] = (float)stats[2 * c];
        sv[c] = (float)(1.0 / (is * is) - (double)eps);
    }
}

extern "C" int cu_bn_saved(void *stream, const double *stats, int64_t C, float eps, float *sm,
                           float *sv) {
    if (C == 0) return 0;
    k_bn_saved<<<blocks_for(C), THREADS, 0, (cudaStream_t)stream>>>(stats, C, eps, sm, sv);
    return last_error();
}

__global__ void k_bnr_grad_finish(const double *part, int64_t C, int64_t P, double *sums, float *ds,
                                  float *db) {
    ROW_LOOP(c, C) {
        double s, q;
        parts_sum(part, c, P, s, q);
        if (threadIdx.x != 0) continue;
        sums[2 * c] = s, sums[2 * c + 1] = q;
        if (ds) ds[c] = (float)q;
        if (db) db[c] = (float)s;
    }
}

// One block per row (n, c), V elements a thread (as k_bn_relu_apply).
template <int GRAD, int V, typename T>
__global__ void k_bnr_grad_apply(const T *dy, const T *x, const double *stats, const double *sums,
                                 const float *scale, const float *bias, int train, T *dx, int64_t C,
                                 int64_t S, int64_t rows, double M) {
    ROW_LOOP(row, rows) {
        int64_t c = row % C, o = row * S;
        BN_CHANNEL(c);
        double k = train ? scale[c] * is / M : scale[c] * is;
        double sdy = sums[2 * c], sdyx = sums[2 * c + 1];
        for (int64_t i = threadIdx.x * V; i < S; i += blockDim.x * V) {
            float d[V], xv[V];
            ldv<T, V>(dy, o + i, d);
            ldv<T, V>(x, o + i, xv);
            UNROLL
            for (int j = 0; j < V; j++) {
                if (GRAD == 1) d[j] = bn_masked<T>(d[j], xv[j], m, a_c, b_c);
                if (!train) {
                    d[j] = (float)(k * d[j]);
                    continue;
                }
                double xhat = ((double)xv[j] - m) * is;
                d[j] = (float)(k * (M * d[j] - sdy - xhat * sdyx));
            }
            stv<T, V>(dx, o + i, d);
        }
    }
}

// k_bnr_grad_apply's arithmetic, channels-last (as k_bn_relu_apply_nhwc).
// FM 1: dx = a dz + (g xhat + h) in float, a = invstd scale, g = -a sum(dz xhat) / M and
// h = -a sum(dz) / M (training; else dx = a dz), xhat = (x - mean) invstd.
template <int GRAD, int V, typename T, int FM>
__global__ void k_bnr_grad_apply_nhwc(const T *dy, const T *x, const double *stats,
                                      const double *sums, const float *scale, const float *bias,
                                      int train, T *dx, int64_t C, int64_t rows, double M) {
    cg_walk w = cg_walk_of(C / V);
    if (w.idle) return;
    for (int64_t g = w.g0; g < C / V; g += w.gx) {
        double m[V], is[V], a_c[V], b_c[V], kk[V], sdy[V], sdyx[V];
        bn_fc f[V];
        float fg[V], fh[V];
        UNROLL
        for (int k = 0; k < V; k++) {
            int64_t c = g * V + k;
            m[k] = stats[2 * c], is[k] = stats[2 * c + 1];
            a_c[k] = GRAD == 1 ? is[k] * scale[c] : 0, b_c[k] = GRAD == 1 ? (double)bias[c] : 0;
            kk[k] = train ? scale[c] * is[k] / M : scale[c] * is[k];
            sdy[k] = sums[2 * c], sdyx[k] = sums[2 * c + 1];
            if (FM) {
                double a = is[k] * scale[c];
                f[k] = bn_fcoef(stats, scale, bias, c);
                fg[k] = train ? (float)(-a * sdyx[k] / M) : 0.0f;
                fh[k] = train ? (float)(-a * sdy[k] / M) : 0.0f;
            }
        }
        for (int64_t row = w.r0; row < rows; row += w.ry) {
            int64_t i = row * C + g * V;
            float d[V], xv[V];
            ldv<T, V>(dy, i, d);
            ldv<T, V>(x, i, xv);
            if (FM) {
                UNROLL
                for (int k = 0; k < V; k++) {
                    float dz = GRAD == 1 ? bn_masked_f<T>(d[k], xv[k], f[k]) : d[k];
                    float xh = (xv[k] - f[k].m) * f[k].is;
                    d[k] = fmaf(f[k].a, dz, fmaf(fg[k], xh, fh[k]));
                }
            } else {
                UNROLL
                for (int k = 0; k < V; k++) {
                    if (GRAD == 1) d[k] = bn_masked<T>(d[k], xv[k], m[k], a_c[k], b_c[k]);
                    if (!train) {
                        d[k] = (float)(kk[k] * d[k]);
                        continue;
                    }
                    double xhat = ((double)xv[k] - m[k]) * is[k];
                    d[k] = (float)(kk[k] * (M * d[k] - sdy[k] - xhat * sdyx[k]));
                }
            }
            stv<T, V>(dx, i, d);
        }
    }
}

#undef BN_CHANNEL

// (as bn_apply_nhwc)
template <int GRAD, int V, typename T>
static void bn_grad_nhwc(cudaStream_t st, bool fm, const T *dy, const T *x, const double *stats,
                         const double *sums, const float *scale, const float *bias, int train,
                         T *dx, int64_t C, int64_t rows) {
    if (fm)
        k_bnr_grad_apply_nhwc<GRAD, V, T, 1><<<cg_blocks(rows, C / V), THREADS, 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, rows, (double)rows);
    else
        k_bnr_grad_apply_nhwc<GRAD, V, T, 0><<<cg_blocks(rows, C / V), THREADS, 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, rows, (double)rows);
}

template <int GRAD, typename T>
static void bn_grad_launch(cudaStream_t st, int nhwc, const T *dy, const T *x, const float *scale,
                           const float *bias, const float *rm, const float *rv, float eps,
                           int train, T *dx, float *ds, float *db, int64_t N, int64_t C, int64_t S,
                           int64_t P, double *ws, const double *saved) {
    const double *stats = ws;
    double *sums = ws + 2 * C, *part = ws + 4 * C;
    if (train && saved) stats = saved; /* the forward's, from the stash: no pass over X */
    else
        bn_stats(st, nhwc, x, rm, rv, 0.0f, eps, train, NULL, NULL, N, C, S, P, ws, part, NULL,
                 NULL);
    bn_parts<GRAD, T>(st, nhwc, dy, x, stats, scale, bias, N, C, S, P, part);
    k_bnr_grad_finish<<<warps_for(C), WARP, 0, st>>>(part, C, P, sums, ds, db);
    if (dx && N * C * S > 0 && nhwc && bn_v8(C, sizeof(T), dy, x, dx)) {
        if constexpr (sizeof(T) == 2)
            bn_grad_nhwc<GRAD, 8, T>(st, bn_float_math(), dy, x, stats, sums, scale, bias, train,
                                     dx, C, N * S);
    } else if (dx && N * C * S > 0 && nhwc && vec_of(C, sizeof(T), dy, x, dx, NULL) == 4)
        bn_grad_nhwc<GRAD, 4, T>(st, bn_float_math(), dy, x, stats, sums, scale, bias, train, dx, C,
                                 N * S);
    else if (dx && N * C * S > 0 && nhwc)
        bn_grad_nhwc<GRAD, 1, T>(st, bn_float_math(), dy, x, stats, sums, scale, bias, train, dx, C,
                                 N * S);
    else if (dx && N * C * S > 0 && vec_of(S, sizeof(T), dy, x, dx, NULL) == 4)
        k_bnr_grad_apply<GRAD, 4, T><<<warps_for(N * C), row_threads(S / 4), 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, S, N * C, (double)(N * S));
    else if (dx && N * C * S > 0)
        k_bnr_grad_apply<GRAD, 1, T><<<warps_for(N * C), row_threads(S), 0, st>>>(
            dy, x, stats, sums, scale, bias, train, dx, C, S, N * C, (double)(N * S));
}

extern "C" int cu_bn_relu_grad(void *stream, int kind, int relu, const void *dy, const void *x,
                               const float *scale, const float *bias, const float *rm,
                               const float *rv, float eps, int train, void *dx, float *ds,
                               float *db, int64_t N, int64_t C, int64_t S, int nhwc, int64_t P,
                               double *ws, const double *saved) {
    if (C == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
#define BN_GRAD(G, T)                                                                              \
    bn_grad_launch<G>(st, nhwc, (const T *)dy, (const T *)x, scale, bias, rm, rv, eps, train,      \
                      (T *)dx, ds, db, N, C, S, P, ws, saved)
#define BN_KINDS(G)                                                                                \
    if (kind == 1) BN_GRAD(G, oc_f16);                                                             \
    else if (kind == 2) BN_GRAD(G, oc_bf16);                                                       \
    else BN_GRAD(G, float)
    if (relu) {
        BN_KINDS(1);
    } else {
        BN_KINDS(2);
    }
#undef BN_KINDS
#undef BN_GRAD
    return last_error();
}

// GatherGrad as a counting sort of the indices (deterministic, and the cpu kernel's order):
// bucket e holds the positions j with idx[j] == e, ascending; dx[o, e, i] sums dy over them.
// O(ni log c) for buckets of c positions (the placement was O(ni^2) before 2026-11-30: a
// scatter-add of millions of elements, a graph network's messages, would not finish).
// index j's bucket, or -1: outside the extent, or skip (an nn.Embedding's padding_idx)
__device__ static inline int64_t gg_index(const void *idx, int idx64, int64_t j, int64_t extent,
                                          int64_t skip) {
    int64_t k = idx64 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
    if (k < 0) k += extent;
    return k >= 0 && k < extent && k != skip ? k : -1;
}

__global__ void k_gg_zero(unsigned long long *c, int64_t n) { GRID_LOOP(i, n) c[i] = 0; }

__global__ void k_gg_count(const void *idx, int idx64, int64_t ni, int64_t extent, int64_t skip,
                           unsigned long long *count) {
    GRID_LOOP(j, ni) {
        int64_t k = gg_index(idx, idx64, j, extent, skip);
        if (k >= 0) atomicAdd(&count[k + 1], 1ULL);
    }
}

// one step of an inclusive scan (Hillis-Steele): out[i] = in[i] + in[i - d]
__global__ void k_gg_scan(const unsigned long long *in, unsigned long long *out, int64_t n,
                          int64_t d) {
    GRID_LOOP(i, n) out[i] = i >= d ? in[i] + in[i - d] : in[i];
}

// position j goes into its bucket, at a slot the bucket's cursor hands out (in any order)
__global__ void k_gg_fill(const void *idx, int idx64, int64_t ni, int64_t extent, int64_t skip,
                          const unsigned long long *start, unsigned long long *cursor,
                          int64_t *order) {
    GRID_LOOP(j, ni) {
        int64_t k = gg_index(idx, idx64, j, extent, skip);
        if (k >= 0) order[start[k] + atomicAdd(&cursor[k], 1ULL)] = j;
    }
}

// each bucket's positions sorted ascending (a heapsort in its thread: O(c log c) for a
// bucket of c), so the sums run in index order whatever order the slots were handed out in
__device__ static inline void gg_sift(int64_t *a, int64_t root, int64_t n) {
    for (int64_t c = 2 * root + 1; c < n; root = c, c = 2 * root + 1) {
        if (c + 1 < n && a[c + 1] > a[c]) c++;
        if (a[root] >= a[c]) return;
        int64_t t = a[root];
        a[root] = a[c], a[c] = t;
    }
}

__global__ void k_gg_sort(const unsigned long long *start, int64_t *order, int64_t extent) {
    GRID_LOOP(e, extent) {
        int64_t *a = order + start[e], n = (int64_t)(start[e + 1] - start[e]);
        for (int64_t r = n / 2 - 1; r >= 0; r--) gg_sift(a, r, n);
        for (int64_t end = n - 1; end > 0; end--) {
            int64_t t = a[0];
            a[0] = a[end], a[end] = t;
            gg_sift(a, 0, end);
        }
    }
}

__global__ void k_gg_sum(const float *dy, const unsigned long long *start, const int64_t *order,
                         float *dx, int64_t extent, int64_t ni, int64_t inner, int64_t n) {
    GRID_LOOP(t, n) {
        int64_t i = t % inner, e = (t / inner) % extent, o = t / (inner * extent);
        float s = 0.0f;
        for (unsigned long long q = start[e]; q < start[e + 1]; q++)
            s += dy[(o * ni + order[q]) * inner + i];
        dx[t] = s;
    }
}

// The counting sort of ni indices into extent buckets, in ws (2 (extent + 1) counters, then
// ni positions): returns the buckets' starts; *order the positions, each bucket's ascending.
static unsigned long long *gg_buckets(cudaStream_t st, const void *idx, int idx64, int64_t ni,
                                      int64_t extent, int64_t skip, int64_t *ws, int64_t **order) {
    int64_t m = extent + 1;
    unsigned long long *a = (unsigned long long *)ws, *b = a + m;
    int64_t *ord = ws + 2 * m; /* a plain value in the launches (they may run later) */
    *order = ord;
    k_gg_zero<<<blocks_for(m), THREADS, 0, st>>>(a, m);
    if (ni > 0) k_gg_count<<<blocks_for(ni), THREADS, 0, st>>>(idx, idx64, ni, extent, skip, a);
    for (int64_t d = 1; d < m; d *= 2) {
        k_gg_scan<<<blocks_for(m), THREADS, 0, st>>>(a, b, m, d);
        unsigned long long *t = a;
        a = b, b = t;
    }
    if (ni > 0) { /* b, the scan's other buffer, is free: the buckets' cursors */
        k_gg_zero<<<blocks_for(m), THREADS, 0, st>>>(b, m);
        k_gg_fill<<<blocks_for(ni), THREADS, 0, st>>>(idx, idx64, ni, extent, skip, a, b, ord);
        k_gg_sort<<<blocks_for(extent), THREADS, 0, st>>>(a, ord, extent);
    }
    return a;
}

extern "C" int cu_gather_grad(void *stream, const float *dy, const void *idx, int idx64, float *dx,
                              int64_t outer, int64_t extent, int64_t ni, int64_t inner,
                              int64_t skip, int64_t *ws) {
    int64_t n = outer * extent * inner;
    if (n == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    int64_t *order;
    unsigned long long *start = gg_buckets(st, idx, idx64, ni, extent, skip, ws, &order);
    k_gg_sum<<<blocks_for(n), THREADS, 0, st>>>(dy, start, order, dx, extent, ni, inner, n);
    return last_error();
}

// ---- CumSum (cpu_cum_sum.c; the scan: runtime/cum_sum.h) ----
// one thread a line: neighbouring threads read neighbouring elements when the axis is not last
__global__ void k_cum_sum(const float *x, float *y, int64_t lines, int64_t len, int64_t inner,
                          bool exclusive, bool reverse) {
    GRID_LOOP(line, lines) {
        int64_t at = oc_cum_sum_line_start(line, len, inner);
        oc_cum_sum_line(x + at, y + at, len, inner, exclusive, reverse);
    }
}

extern "C" int cu_cum_sum(void *stream, const float *x, float *y, int64_t lines, int64_t len,
                          int64_t inner, bool exclusive, bool reverse) {
    if (lines == 0 || len == 0) return 0;
    k_cum_sum<<<blocks_for(lines), THREADS, 0, (cudaStream_t)stream>>>(x, y, lines, len, inner,
                                                                       exclusive, reverse);
    return last_error();
}

// ---- GridSample / GridSampleGrad (cpu_grid_sample.c; arithmetic: runtime/grid_sample.h) ----
__device__ static inline void gs_taps(const cu_gs_geo &g, const float *grid, int64_t n, int64_t q,
                                      oc_gs_taps *t) {
    const float *xy = grid + (n * g.P + q) * 2;
    oc_gs_point(xy[0], xy[1], g.H, g.W, g.align, g.padding, g.mode, t);
}

__global__ void k_grid_sample(const float *x, const float *grid, float *y, cu_gs_geo g,
                              int64_t total) {
    GRID_LOOP(i, total) {
        int64_t q = i % g.P, nc = i / g.P, n = nc / g.C;
        oc_gs_taps t;
        gs_taps(g, grid, n, q, &t);
        const float *plane = x + nc * g.H * g.W;
        float s = 0.0f;
        for (int k = 0; k < 4; k++)
            if (t.off[k] >= 0) s += t.wt[k] * plane[t.off[k]];
        y[i] = s;
    }
}

// dGrid: one thread a point, its channels summed in order
__global__ void k_grid_sample_dgrid(const float *dy, const float *x, const float *grid,
                                    float *dgrid, cu_gs_geo g, int64_t total) {
    GRID_LOOP(j, total) {
        int64_t n = j / g.P, q = j % g.P;
        oc_gs_taps t;
        gs_taps(g, grid, n, q, &t);
        float ax = 0.0f, ay = 0.0f;
        for (int64_t c = 0; c < g.C; c++) {
            const float *plane = x + (n * g.C + c) * g.H * g.W;
            float v[4];
            for (int k = 0; k < 4; k++) v[k] = t.off[k] >= 0 ? plane[t.off[k]] : 0.0f;
            oc_gs_grid_grad(&t, v, dy[(n * g.C + c) * g.P + q], &ax, &ay);
        }
        bool near = g.mode == OC_GS_NEAREST;
        dgrid[j * 2] = near ? 0.0f : ax * t.gx;
        dgrid[j * 2 + 1] = near ? 0.0f : ay * t.gy;
    }
}

// each point's bucket: the cell of its first tap in its image (extent: no tap, skipped)
__global__ void k_gs_keys(const float *grid, cu_gs_geo g, int64_t *keys, int64_t total) {
    int64_t cells = (g.H + 1) * (g.W + 1);
    GRID_LOOP(j, total) {
        int64_t cell =
            oc_gs_cell(grid[j * 2], grid[j * 2 + 1], g.H, g.W, g.align, g.padding, g.mode);
        keys[j] = cell < 0 ? g.N * cells : (j / g.P) * cells + cell;
    }
}

// dX: one thread a pixel; the points whose tap k is that pixel sit in the bucket of the cell
// k steps up and left of it, each bucket's in point order: a fixed order, run to run
__global__ void k_gs_dx(const float *dy, const float *grid, const unsigned long long *start,
                        const int64_t *order, float *dx, cu_gs_geo g, int64_t total) {
    int64_t cells = (g.H + 1) * (g.W + 1), taps = g.mode == OC_GS_NEAREST ? 1 : 4;
    GRID_LOOP(i, total) {
        int64_t xx = i % g.W, yy = (i / g.W) % g.H, nc = i / (g.W * g.H), n = nc / g.C;
        float s = 0.0f;
        for (int k = 0; k < taps; k++) {
            int64_t x0 = xx - (k & 1), y0 = yy - (k >> 1);
            int64_t b = n * cells + (y0 + 1) * (g.W + 1) + (x0 + 1);
            for (unsigned long long r = start[b]; r < start[b + 1]; r++) {
                int64_t q = order[r] % g.P;
                oc_gs_taps t;
                gs_taps(g, grid, n, q, &t);
                if (t.off[k] == yy * g.W + xx) s += t.wt[k] * dy[nc * g.P + q];
            }
        }
        dx[i] = s;
    }
}

extern "C" int64_t cu_grid_sample_scratch(cu_gs_geo g) {
    int64_t np = g.N * g.P, m = g.N * (g.H + 1) * (g.W + 1) + 1;
    return np + 2 * m + np; /* int64s: the keys, the counters, the order */
}

extern "C" int cu_grid_sample(void *stream, const float *x, const float *grid, float *y,
                              cu_gs_geo g) {
    int64_t total = g.N * g.C * g.P;
    if (total == 0) return 0;
    k_grid_sample<<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(x, grid, y, g, total);
    return last_error();
}

extern "C" int cu_grid_sample_grad(void *stream, int input, const float *dy, const float *x,
                                   const float *grid, float *out, cu_gs_geo g, int64_t *ws) {
    cudaStream_t st = (cudaStream_t)stream;
    int64_t np = g.N * g.P;
    if (input == 1) {
        if (np > 0)
            k_grid_sample_dgrid<<<blocks_for(np), THREADS, 0, st>>>(dy, x, grid, out, g, np);
        return last_error();
    }
    int64_t total = g.N * g.C * g.H * g.W, extent = g.N * (g.H + 1) * (g.W + 1);
    if (total == 0) return 0;
    int64_t *keys = ws, *order;
    if (np > 0) k_gs_keys<<<blocks_for(np), THREADS, 0, st>>>(grid, g, keys, np);
    unsigned long long *start = gg_buckets(st, keys, 1, np, extent, -1, ws + np, &order);
    k_gs_dx<<<blocks_for(total), THREADS, 0, st>>>(dy, grid, start, order, out, g, total);
    return last_error();
}

// ---- Resize / ResizeGrad (cpu_resize.c; taps: runtime/resize_coord.h) ----
struct resize_geo {
    int nsp;
    oc_resize_kind k;
    int64_t n[3], m[3]; // input and output extents of the spatial dims
    double scale[3];
};

// Antialiased: each dim's span of taps (oc_resize_aa_span), weights computed per tap.
__global__ void k_resize_aa(const float *x, float *y, resize_geo g, int64_t planes, int64_t sin,
                            int64_t sout) {
    GRID_LOOP(t, planes * sout) {
        int64_t pl = t / sout, o = t % sout, oi[3], rem = o, first[3], count[3] = {1, 1, 1};
        double center[3], inv[3], total[3];
        for (int d = g.nsp - 1; d >= 0; d--) oi[d] = rem % g.m[d], rem /= g.m[d];
        int64_t combos = 1;
        for (int d = 0; d < g.nsp; d++) {
            total[d] = oc_resize_aa_span(oi[d], g.n[d], g.scale[d], &g.k, &first[d], &count[d],
                                         &center[d], &inv[d]);
            combos *= total[d] != 0.0 ? count[d] : 0;
        }
        double acc = 0;
        for (int64_t c = 0; c < combos; c++) {
            double wt = 1;
            int64_t off = 0, cr = c;
            for (int d = 0; d < g.nsp; d++) {
                int64_t i = first[d] + cr % count[d];
                cr /= count[d];
                wt *= oc_resize_aa_filter(((double)i + 0.5 - center[d]) * inv[d], &g.k) / total[d];
                off = off * g.n[d] + i;
            }
            if (wt != 0.0) acc += wt * x[pl * sin + off];
        }
        y[t] = (float)acc;
    }
}

__global__ void k_resize(const float *x, float *y, resize_geo g, int64_t planes, int64_t sin,
                         int64_t sout) {
    GRID_LOOP(t, planes * sout) {
        int64_t pl = t / sout, o = t % sout, oi[3], rem = o;
        for (int d = g.nsp - 1; d >= 0; d--) oi[d] = rem % g.m[d], rem /= g.m[d];
        int64_t idx[3][OC_RESIZE_MAX_TAPS];
        double w[3][OC_RESIZE_MAX_TAPS];
        int taps[3], combos = 1;
        for (int d = 0; d < g.nsp; d++) {
            taps[d] = oc_resize_taps(oi[d], g.n[d], g.m[d], g.scale[d], &g.k, idx[d], w[d]);
            combos *= taps[d];
        }
        double acc = 0;
        for (int c = 0; c < combos; c++) {
            double wt = 1;
            int64_t off = 0;
            for (int d = 0, cr = c; d < g.nsp; d++) {
                int j = cr % taps[d];
                cr /= taps[d];
                wt *= w[d][j];
                off = off * g.n[d] + idx[d][j];
            }
            if (wt != 0.0) acc += wt * x[pl * sin + off];
        }
        y[t] = (float)acc;
    }
}

/* The weight output index o of dim d gives input index i. */
__device__ static double resize_coef(const resize_geo &g, int d, int64_t o, int64_t i) {
    if (g.k.antialias) {
        int64_t first, count;
        double center, inv;
        double total =
            oc_resize_aa_span(o, g.n[d], g.scale[d], &g.k, &first, &count, &center, &inv);
        if (total == 0.0 || i < first || i >= first + count) return 0.0;
        return oc_resize_aa_filter(((double)i + 0.5 - center) * inv, &g.k) / total;
    }
    int64_t idx[OC_RESIZE_MAX_TAPS];
    double w[OC_RESIZE_MAX_TAPS], sum = 0.0;
    int taps = oc_resize_taps(o, g.n[d], g.m[d], g.scale[d], &g.k, idx, w);
    for (int j = 0; j < taps; j++) sum += idx[j] == i ? w[j] : 0.0;
    return sum;
}

// One thread per input element: the outputs that read it (a contiguous range
// per dim, found by a scan), their weights multiplied over the dims.
__global__ void k_resize_grad(const float *dy, float *dx, resize_geo g, int64_t planes, int64_t sin,
                              int64_t sout) {
    GRID_LOOP(t, planes * sin) {
        int64_t pl = t / sin, rem = t % sin, ii[3], lo[3], hi[3];
        for (int d = g.nsp - 1; d >= 0; d--) ii[d] = rem % g.n[d], rem /= g.n[d];
        bool any = true;
        for (int d = 0; d < g.nsp && any; d++) {
            lo[d] = -1, hi[d] = -2;
            for (int64_t o = 0; o < g.m[d]; o++)
                if (resize_coef(g, d, o, ii[d]) != 0.0) {
                    if (lo[d] < 0) lo[d] = o;
                    hi[d] = o;
                }
            any = lo[d] >= 0;
        }
        double acc = 0;
        if (any) {
            int64_t o[3] = {lo[0], lo[1], lo[2]};
            for (;;) {
                double wt = 1;
                int64_t off = 0;
                for (int d = 0; d < g.nsp; d++) {
                    wt *= resize_coef(g, d, o[d], ii[d]);
                    off = off * g.m[d] + o[d];
                }
                if (wt != 0.0) acc += wt * dy[pl * sout + off];
                int d = g.nsp - 1;
                while (d >= 0 && ++o[d] > hi[d]) o[d] = lo[d], d--;
                if (d < 0) break;
            }
        }
        dx[t] = (float)acc;
    }
}

extern "C" int cu_resize(void *stream, const float *in, float *out, int grad, int nsp,
                         const oc_resize_kind *k, const int64_t *n, const int64_t *m,
                         const double *scale, int64_t planes) {
    resize_geo g;
    g.nsp = nsp, g.k = *k;
    int64_t sin = 1, sout = 1;
    for (int d = 0; d < 3; d++) {
        g.n[d] = d < nsp ? n[d] : 1, g.m[d] = d < nsp ? m[d] : 1;
        g.scale[d] = d < nsp ? scale[d] : 1.0;
        sin *= g.n[d], sout *= g.m[d];
    }
    int64_t total = planes * (grad ? sin : sout);
    if (total == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (grad) k_resize_grad<<<blocks_for(total), THREADS, 0, s>>>(in, out, g, planes, sin, sout);
    else if (k->antialias)
        k_resize_aa<<<blocks_for(total), THREADS, 0, s>>>(in, out, g, planes, sin, sout);
    else k_resize<<<blocks_for(total), THREADS, 0, s>>>(in, out, g, planes, sin, sout);
    return last_error();
}

__global__ void k_random_uniform(float *y, int64_t n, cu_rng r, float low, float span) {
    uint64_t key = rng_key(r);
    GRID_LOOP(i, n) y[i] = low + span * rng_uniform(key, (uint64_t)i);
}

extern "C" int cu_random_uniform(void *stream, float *y, int64_t n, cu_rng key, float low,
                                 float high) {
    if (n == 0) return 0;
    k_random_uniform<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(y, n, key, low,
                                                                          high - low);
    return last_error();
}

// ---- casts of masks and indices (runtime/cast_rule.h) ----
__global__ void k_int_convert(int from, const void *x, int to, void *y, int64_t n) {
    GRID_LOOP(i, n) {
        float f = from == CU_DT_F32 ? ((const float *)x)[i] : 0.0f;
        int64_t v = from == CU_DT_I64   ? ((const int64_t *)x)[i]
                    : from == CU_DT_I32 ? ((const int32_t *)x)[i]
                    : from == CU_DT_F32 ? (to == CU_DT_U8 ? f != 0.0f : oc_float_to_int(f))
                                        : ((const uint8_t *)x)[i] != 0;
        if (to == CU_DT_F32) ((float *)y)[i] = (float)v;
        else if (to == CU_DT_I64) ((int64_t *)y)[i] = v;
        else if (to == CU_DT_I32)
            ((int32_t *)y)[i] = (int32_t)(v > INT32_MAX   ? INT32_MAX
                                          : v < INT32_MIN ? INT32_MIN
                                                          : v);
        else ((uint8_t *)y)[i] = v != 0;
    }
}

extern "C" int cu_int_convert(void *stream, cu_dtype from, const void *x, cu_dtype to, void *y,
                              int64_t n) {
    if (n == 0) return 0;
    bool ints_from = from == CU_DT_U8 || from == CU_DT_I32 || from == CU_DT_I64;
    bool ok = ints_from
                  ? (to == CU_DT_U8 || to == CU_DT_I32 || to == CU_DT_I64 || to == CU_DT_F32)
                  : from == CU_DT_F32 && (to == CU_DT_U8 || to == CU_DT_I32 || to == CU_DT_I64);
    if (!ok) return (int)cudaErrorInvalidValue;
    k_int_convert<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(from, x, to, y, n);
    return last_error();
}

// ---- float32 <-> float16 / bfloat16 (Cast; the widened run of a half node) ----
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

__global__ void k_float_convert(const void *x, int kx, void *y, int ky, int64_t n) {
    GRID_LOOP(i, n) half_store(y, ky, i, half_load(x, kx, i));
}

extern "C" int cu_float_convert(void *stream, const void *x, int kx, void *y, int ky, int64_t n) {
    if (n == 0) return 0;
    k_float_convert<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(x, kx, y, ky, n);
    return last_error();
}

// ---- the channel bias of a convolution (+ ConvRelu's Relu) and its gradient (cuda_dnn.c) ----
__global__ void k_channel_bias(void *y, int ky, const void *b, int kb, int64_t C, int64_t S,
                               int64_t n, int relu) {
    GRID_LOOP(i, n) {
        float v = half_load(y, ky, i) + half_load(b, kb, (i / S) % C);
        half_store(y, ky, i, relu ? oc_relu(v) : v);
    }
}

// Channels-last y (rows, C) += b, then the Relu (relu): a thread per V channels and row
// block, its biases in registers, every rb-th row from its block's first (k_rows_fill's
// walk: no division per element), V-wide accesses where C and the pointers allow.
template <typename T, int V>
__global__ void k_bias_rows(T *y, const T *b, int64_t rows, int64_t C, int64_t rb, int relu) {
    int64_t groups = C / V;
    GRID_LOOP(i, groups * rb) {
        int64_t g = i % groups;
        float bv[V], v[V];
        ldv<T, V>(b, g * V, bv);
        for (int64_t r = i / groups; r < rows; r += rb) {
            ldv<T, V>(y, r * C + g * V, v);
            UNROLL
            for (int k = 0; k < V; k++) v[k] = relu ? oc_relu(v[k] + bv[k]) : v[k] + bv[k];
            stv<T, V>(y, r * C + g * V, v);
        }
    }
}

// (N C, S) planes: a block per (n, c) plane, V elements a thread.
template <typename T, int V>
__global__ void k_bias_planes(T *y, const T *b, int64_t C, int64_t S, int64_t planes, int relu) {
    ROW_LOOP(pl, planes) {
        float bc = ld(b, pl % C), v[V];
        for (int64_t i = threadIdx.x * V; i < S; i += blockDim.x * V) {
            ldv<T, V>(y, pl * S + i, v);
            UNROLL
            for (int k = 0; k < V; k++) v[k] = relu ? oc_relu(v[k] + bc) : v[k] + bc;
            stv<T, V>(y, pl * S + i, v);
        }
    }
}

template <typename T>
static void bias_act(cudaStream_t s, void *y, const void *b, int64_t N, int64_t C, int64_t S,
                     int relu) {
    if (S == 1) { // rows of C: channels-last, or (N, C, 1, ..)
        int V = vec_of(C, sizeof(T), y, b, NULL, NULL);
        int64_t groups = C / V, rb = ((int64_t)1 << 18) / groups;
        rb = rb < 1 ? 1 : rb > N ? N : rb;
        unsigned nb = blocks_for(groups * rb);
        if (V == 4) k_bias_rows<T, 4><<<nb, THREADS, 0, s>>>((T *)y, (const T *)b, N, C, rb, relu);
        else k_bias_rows<T, 1><<<nb, THREADS, 0, s>>>((T *)y, (const T *)b, N, C, rb, relu);
        return;
    }
    int V = vec_of(S, sizeof(T), y, NULL, NULL, NULL);
    unsigned nb = warps_for(N * C), nt = row_threads(S / V);
    if (V == 4) k_bias_planes<T, 4><<<nb, nt, 0, s>>>((T *)y, (const T *)b, C, S, N * C, relu);
    else k_bias_planes<T, 1><<<nb, nt, 0, s>>>((T *)y, (const T *)b, C, S, N * C, relu);
}

extern "C" int cu_channel_bias(void *stream, void *y, int ky, const void *b, int kb, int64_t N,
                               int64_t C, int64_t S, int relu) {
    int64_t n = N * C * S;
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (ky != kb) {
        k_channel_bias<<<blocks_for(n), THREADS, 0, s>>>(y, ky, b, kb, C, S, n, relu);
    } else if (ky == 1) {
        bias_act<oc_f16>(s, y, b, N, C, S, relu);
    } else if (ky == 2) {
        bias_act<oc_bf16>(s, y, b, N, C, S, relu);
    } else {
        bias_act<float>(s, y, b, N, C, S, relu);
    }
    return last_error();
}

// t[r] = sum of row r's S elements (a warp per row, in double)
__global__ void k_row_sums(const void *x, int kx, int64_t rows, int64_t S, double *t) {
    ROW_LOOP(r, rows) {
        double acc = 0;
        for (int64_t i = threadIdx.x; i < S; i += blockDim.x) acc += half_load(x, kx, r * S + i);
        acc = warp_sum(acc);
        if (threadIdx.x == 0) t[r] = acc;
    }
}

// out[c] = scale * sum over n of t[n C + c]: a warp per column, lane l adding n = l, l + 32,
// .. in order, then the lanes' sums in warp_sum's fixed order (deterministic)
__global__ void k_col_sums(const double *t, int64_t N, int64_t C, void *out, int kout,
                           float scale) {
    ROW_LOOP(c, C) {
        double acc = 0;
        for (int64_t n = threadIdx.x; n < N; n += blockDim.x) acc += t[n * C + c];
        acc = warp_sum(acc);
        if (threadIdx.x == 0) half_store(out, kout, c, (float)(acc * scale));
    }
}

// scale * the sums of x (N, C, S) over N and S: per-(n, c) rows (a warp each) into ws, then
// over n per column (cu_channel_sum, ReduceSumTo)
static int sum_nsc(cudaStream_t st, const void *x, int kx, int64_t N, int64_t C, int64_t S,
                   double *ws, void *out, int kout, float scale) {
    if (C == 0) return 0;
    if (N * C > 0) k_row_sums<<<warps_for(N * C), WARP, 0, st>>>(x, kx, N * C, S, ws);
    k_col_sums<<<warps_for(C), WARP, 0, st>>>(ws, N, C, out, kout, scale);
    return last_error();
}

extern "C" int cu_channel_sum(void *stream, const void *x, int kx, int64_t N, int64_t C, int64_t S,
                              double *ws, void *out, int kout) {
    return sum_nsc((cudaStream_t)stream, x, kx, N, C, S, ws, out, kout, 1.0f);
}

// ReluGradBias: dz = relu'(y) dy written, and its per-(n, c) row sums in double into t
// (a warp per row), as k_row_sums adds x
__global__ void k_relu_grad_rows(const void *dy, const void *y, void *dz, int k, int64_t rows,
                                 int64_t S, double *t) {
    ROW_LOOP(r, rows) {
        double acc = 0;
        for (int64_t i = threadIdx.x; i < S; i += blockDim.x) {
            int64_t o = r * S + i;
            float d = oc_relu_grad(half_load(dy, k, o), half_load(y, k, o));
            half_store(dz, k, o, d);
            acc += d;
        }
        acc = warp_sum(acc);
        if (threadIdx.x == 0) t[r] = acc;
    }
}

// Channels-last: the same per (part, channel), as k_part_channel_sums adds x
__global__ void k_relu_grad_parts(const void *dy, const void *y, void *dz, int k, int64_t rows,
                                  int64_t C, int64_t R, int64_t P, double *t) {
    GRID_LOOP(i, P * C) {
        int64_t p = i / C, c = i % C, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double acc = 0;
        for (int64_t r = p * R; r < end; r++) {
            int64_t o = r * C + c;
            float d = oc_relu_grad(half_load(dy, k, o), half_load(y, k, o));
            half_store(dz, k, o, d);
            acc += d;
        }
        t[i] = acc;
    }
}

extern "C" int cu_relu_grad_bias(void *stream, int k, const void *dy, const void *y, void *dz,
                                 void *db, int kb, int64_t N, int64_t C, int64_t S, int nhwc,
                                 double *ws) {
    if (C == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    int64_t rows = N * S, P = nhwc ? cu_channel_parts(rows, C) : N;
    if (nhwc && rows > 0)
        k_relu_grad_parts<<<blocks_for(P * C), THREADS, 0, st>>>(dy, y, dz, k, rows, C,
                                                                 (rows + P - 1) / P, P, ws);
    else if (!nhwc && N * C > 0)
        k_relu_grad_rows<<<warps_for(N * C), WARP, 0, st>>>(dy, y, dz, k, N * C, S, ws);
    k_col_sums<<<warps_for(C), WARP, 0, st>>>(ws, rows > 0 ? P : 0, C, db, kb, 1.0f);
    return last_error();
}

// Channels-last: t[p C + c] = sum of x (rows, C) over the rows of part p, a
// thread per (p, c), the rows four at a time into two sums; then over the parts (k_col_sums).
__global__ void k_part_channel_sums(const void *x, int kx, int64_t rows, int64_t C, int64_t R,
                                    int64_t P, double *t) {
    GRID_LOOP(i, P * C) {
        int64_t p = i / C, c = i % C, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double a0 = 0, a1 = 0;
        int64_t r = p * R;
        for (; r + 3 < end; r += 4) { // four independent loads per thread
            a0 += half_load(x, kx, r * C + c);
            a1 += half_load(x, kx, (r + 1) * C + c);
            a0 += half_load(x, kx, (r + 2) * C + c);
            a1 += half_load(x, kx, (r + 3) * C + c);
        }
        for (; r < end; r++) a0 += half_load(x, kx, r * C + c);
        t[i] = a0 + a1;
    }
}

// The same with 4 channels a thread, one 16-byte (float32) or 8-byte (half) load a row, where C
// is a multiple of 4 and x aligned (vec_of): each channel's two sums take its rows in the
// one-channel kernel's order, so the result is the same to the bit, with 4 times the bytes in
// flight a load (a GEMM's bias gradient: ~1.25 TB/s on an H200 one channel a thread).
template <typename T>
__global__ void k_part_channel_sums4(const T *x, int64_t rows, int64_t C, int64_t R, int64_t P,
                                     double *t) {
    int64_t G = C / 4;
    GRID_LOOP(i, P * G) {
        int64_t p = i / G, c = i % G * 4, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double a0[4] = {0, 0, 0, 0}, a1[4] = {0, 0, 0, 0};
        int64_t r = p * R;
        for (; r + 3 < end; r += 4) { // four independent loads per thread
            float v0[4], v1[4], v2[4], v3[4];
            ldv<T, 4>(x, r * C + c, v0);
            ldv<T, 4>(x, (r + 1) * C + c, v1);
            ldv<T, 4>(x, (r + 2) * C + c, v2);
            ldv<T, 4>(x, (r + 3) * C + c, v3);
            for (int e = 0; e < 4; e++) a0[e] += v0[e], a1[e] += v1[e];
            for (int e = 0; e < 4; e++) a0[e] += v2[e], a1[e] += v3[e];
        }
        for (; r < end; r++) {
            float v[4];
            ldv<T, 4>(x, r * C + c, v);
            for (int e = 0; e < 4; e++) a0[e] += v[e];
        }
        for (int e = 0; e < 4; e++) t[p * C + c + e] = a0[e] + a1[e];
    }
}

// scale * the column sums of x (rows, C): parts of rows per column (cu_channel_parts) into ws,
// then the parts per column (cu_channel_sum_nhwc, ReduceSumTo)
static int sum_cols(cudaStream_t st, const void *x, int kx, int64_t rows, int64_t C, double *ws,
                    void *out, int kout, float scale) {
    if (C == 0) return 0;
    int64_t P = cu_channel_parts(rows, C), R = (rows + P - 1) / P;
    unsigned b4 = blocks_for(P * C / 4);
    if (rows > 0 && vec_of(C, kx ? 2 : 4, x, NULL, NULL, NULL) == 4 && !scalar_sums()) {
        if (kx == 1)
            k_part_channel_sums4<<<b4, THREADS, 0, st>>>((const oc_f16 *)x, rows, C, R, P, ws);
        else if (kx == 2)
            k_part_channel_sums4<<<b4, THREADS, 0, st>>>((const oc_bf16 *)x, rows, C, R, P, ws);
        else k_part_channel_sums4<<<b4, THREADS, 0, st>>>((const float *)x, rows, C, R, P, ws);
    } else if (rows > 0) {
        k_part_channel_sums<<<blocks_for(P * C), THREADS, 0, st>>>(x, kx, rows, C, R, P, ws);
    }
    k_col_sums<<<warps_for(C), WARP, 0, st>>>(ws, rows > 0 ? P : 0, C, out, kout, scale);
    return last_error();
}

extern "C" int cu_channel_sum_nhwc(void *stream, const void *x, int kx, int64_t rows, int64_t C,
                                   double *ws, void *out, int kout) {
    return sum_cols((cudaStream_t)stream, x, kx, rows, C, ws, out, kout, 1.0f);
}

// ReduceSumTo: the bias gradient of a GEMM (rows summed), of a convolution (N and S), a
// row's tail, with the kernels of the bias gradients above; anything else one thread per
// dX element
extern "C" int cu_reduce_sum_to(void *stream, int kind, const void *dy, cu_shape ys, void *dx,
                                cu_shape xs, float scale, double *ws) {
    int64_t m = numel(xs);
    if (m == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    cu_sum_to k = cu_sum_to_of(ys, xs);
    if (k.kind == CU_SUM_TO_COLS) return sum_cols(s, dy, kind, k.a, k.b, ws, dx, kind, scale);
    if (k.kind == CU_SUM_TO_MID) return sum_nsc(s, dy, kind, k.a, k.b, k.c, ws, dx, kind, scale);
    unsigned b = blocks_for(m);
    if (kind == 1)
        k_reduce_sum_to<<<b, THREADS, 0, s>>>((const oc_f16 *)dy, ys, xs, (oc_f16 *)dx, m, scale);
    else if (kind == 2)
        k_reduce_sum_to<<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, ys, xs, (oc_bf16 *)dx, m, scale);
    else k_reduce_sum_to<<<b, THREADS, 0, s>>>((const float *)dy, ys, xs, (float *)dx, m, scale);
    return last_error();
}

// (N, S, C) <-> (N, C, S) with a change of float kind: i indexes the (N, C, S) side.
__global__ void k_nhwc_convert(const void *x, int kx, void *y, int ky, int64_t C, int64_t S,
                               int64_t n, int to_nchw) {
    GRID_LOOP(i, n) {
        int64_t s = i % S, c = i / S % C, b = i / (S * C), j = (b * S + s) * C + c;
        if (to_nchw) half_store(y, ky, i, half_load(x, kx, j));
        else half_store(y, ky, j, half_load(x, kx, i));
    }
}

extern "C" int cu_nhwc_convert(void *stream, const void *x, int kx, void *y, int ky, int64_t N,
                               int64_t C, int64_t S, int to_nchw) {
    int64_t n = N * C * S;
    if (n == 0) return 0;
    k_nhwc_convert<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(x, kx, y, ky, C, S, n,
                                                                        to_nchw);
    return last_error();
}

// Add / Sub / Mul / Div of two broadcast operands into a half y, one pass: each operand of
// y's type or float32 (a plan-time scalar), the value computed in float32, rounded once.
template <typename TA, typename TB, typename TO>
__global__ void k_binary_h(const TA *a, const TB *b, cu_bidx bi, TO *y, int64_t n, int op) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        st(y, i, bc_apply<float>(op, ld(a, o[0]), ld(b, o[1])));
    }
}

template <typename TO>
static void binary_launch(cudaStream_t s, int ka, const void *a, int kb, const void *b, cu_bidx bi,
                          void *y, int64_t n, int op) {
    unsigned g = blocks_for(n);
    if (ka && kb)
        k_binary_h<<<g, THREADS, 0, s>>>((const TO *)a, (const TO *)b, bi, (TO *)y, n, op);
    else if (ka)
        k_binary_h<<<g, THREADS, 0, s>>>((const TO *)a, (const float *)b, bi, (TO *)y, n, op);
    else if (kb)
        k_binary_h<<<g, THREADS, 0, s>>>((const float *)a, (const TO *)b, bi, (TO *)y, n, op);
    else k_binary_h<<<g, THREADS, 0, s>>>((const float *)a, (const float *)b, bi, (TO *)y, n, op);
}

extern "C" int cu_binary_half(void *stream, int ka, const void *a, cu_shape as, int kb,
                              const void *b, cu_shape bs, int ky, void *y, cu_shape ys, int op) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    if ((ka && ka != ky) || (kb && kb != ky)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    if (ky == 1) binary_launch<oc_f16>(s, ka, a, kb, b, bi, y, n, op);
    else if (ky == 2) binary_launch<oc_bf16>(s, ka, a, kb, b, bi, y, n, op);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

// Sum of up to CU_SUM_MAX broadcast operands into a half y: accumulated in float32 in input
// order (cpu_sum's), rounded once; each operand of y's kind or float32.
template <typename TO>
__device__ static inline float sum_ld(const cu_sum_in &in, int j, int64_t o) {
    return in.kind[j] ? ld((const TO *)in.p[j], o) : ld((const float *)in.p[j], o);
}

template <typename TO> __global__ void k_sum_h(cu_sum_in in, cu_bidx bi, TO *y, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[CU_SUM_MAX];
        bidx_at<CU_SUM_MAX>(bi, i, o);
        float acc = sum_ld<TO>(in, 0, o[0]);
        for (int j = 1; j < in.n; j++) acc += sum_ld<TO>(in, j, o[j]);
        st(y, i, acc);
    }
}

extern "C" int cu_sum_half(void *stream, cu_sum_in in, int ky, void *y, cu_shape ys) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    if (in.n < 1 || in.n > CU_SUM_MAX) return (int)cudaErrorInvalidValue;
    for (int j = 0; j < in.n; j++)
        if (in.kind[j] && in.kind[j] != ky) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    cu_bidx bi = bidx_of(ys, in.shape, in.n);
    if (ky == 1) k_sum_h<<<blocks_for(n), THREADS, 0, s>>>(in, bi, (oc_f16 *)y, n);
    else if (ky == 2) k_sum_h<<<blocks_for(n), THREADS, 0, s>>>(in, bi, (oc_bf16 *)y, n);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

__device__ static inline bool pred_of(int code, float a, float b) {
    return oc_pred_f32(code, a, b);
}
__device__ static inline bool pred_of(int code, int64_t a, int64_t b) {
    return oc_pred_i64(code, a, b);
}
__device__ static inline bool pred_of(int code, int32_t a, int32_t b) {
    return oc_pred_i32(code, a, b);
}
__device__ static inline bool pred_of(int code, uint8_t a, uint8_t b) {
    return oc_pred_u8(code, a, b);
}

template <typename T>
__global__ void k_predicate(int code, const T *a, const T *b, cu_bidx bi, uint8_t *y, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[2];
        bidx_at<2>(bi, i, o);
        y[i] = pred_of(code, a[o[0]], b[o[1]]);
    }
}

template <typename T>
__global__ void k_predicate_unary(int code, const T *x, uint8_t *y, int64_t n, bool pos, bool neg) {
    GRID_LOOP(i, n) y[i] = oc_pred_of(code, (float)x[i], pos, neg);
}

extern "C" int cu_predicate(void *stream, int code, cu_dtype dt, const void *a, cu_shape as,
                            const void *b, cu_shape bs, uint8_t *y, cu_shape ys, int detect_pos,
                            int detect_neg) {
    int64_t n = numel(ys);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (oc_pred_unary(code)) {
        if (code == OC_PRED_NOT && dt == CU_DT_U8)
            k_predicate_unary<<<blocks_for(n), THREADS, 0, s>>>(code, (const uint8_t *)a, y, n,
                                                                false, false);
        else if (code != OC_PRED_NOT && dt == CU_DT_F32)
            k_predicate_unary<<<blocks_for(n), THREADS, 0, s>>>(code, (const float *)a, y, n,
                                                                detect_pos != 0, detect_neg != 0);
        else return (int)cudaErrorInvalidValue;
        return last_error();
    }
    cu_shape in[2] = {as, bs};
    cu_bidx bi = bidx_of(ys, in, 2);
    switch (dt) {
    case CU_DT_F32:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const float *)a, (const float *)b, bi,
                                                      y, n);
        break;
    case CU_DT_I64:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const int64_t *)a, (const int64_t *)b,
                                                      bi, y, n);
        break;
    case CU_DT_I32:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const int32_t *)a, (const int32_t *)b,
                                                      bi, y, n);
        break;
    case CU_DT_U8:
        k_predicate<<<blocks_for(n), THREADS, 0, s>>>(code, (const uint8_t *)a, (const uint8_t *)b,
                                                      bi, y, n);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

template <typename T>
__global__ void k_where(const uint8_t *c, const T *x, const T *y, cu_bidx bi, T *out, int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[3];
        bidx_at<3>(bi, i, o);
        out[i] = c[o[0]] ? x[o[1]] : y[o[2]];
    }
}

__global__ void k_where4(const uint8_t *c, const float *x, const float *y, cu_bidx bi, float *out,
                         int64_t n4) {
    int L = bi.rank - 1;
    bool uc = bi.st[0][L] == 1, ux = bi.st[1][L] == 1, uy = bi.st[2][L] == 1;
    GRID_LOOP(q, n4) {
        int64_t o[3];
        bidx_at<3>(bi, q * 4, o);
        u8x4 m = ld4(c, o[0], uc);
        f4 a = ld4(x, o[1], ux), b = ld4(y, o[2], uy), r;
        for (int e = 0; e < 4; e++) r.v[e] = m.v[e] ? a.v[e] : b.v[e];
        ((f4 *)out)[q] = r;
    }
}

extern "C" int cu_where(void *stream, const uint8_t *c, cu_shape cs, const float *x, cu_shape xs,
                        const float *y, cu_shape ys, float *out, cu_shape os) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    cu_shape in[3] = {cs, xs, ys};
    cu_bidx bi = bidx_of(os, in, 3);
    const void *ptrs[3] = {c, x, y};
    const int es[3] = {1, 4, 4};
    if (bidx_v4_ok(&bi, 3, ptrs, es, out, 4)) {
        k_where4<<<blocks_for(n / 4), THREADS, 0, (cudaStream_t)stream>>>(c, x, y, bi, out, n / 4);
        return last_error();
    }
    k_where<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(c, x, y, bi, out, n);
    return last_error();
}

// Where of int64 / int32 (index glue: bucketize's search)
extern "C" int cu_where_int(void *stream, int es, const uint8_t *c, cu_shape cs, const void *x,
                            cu_shape xs, const void *y, cu_shape ys, void *out, cu_shape os) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    cu_shape in[3] = {cs, xs, ys};
    cu_bidx bi = bidx_of(os, in, 3);
    cudaStream_t s = (cudaStream_t)stream;
    if (es == 8)
        k_where<<<blocks_for(n), THREADS, 0, s>>>(c, (const int64_t *)x, (const int64_t *)y, bi,
                                                  (int64_t *)out, n);
    else if (es == 4)
        k_where<<<blocks_for(n), THREADS, 0, s>>>(c, (const int32_t *)x, (const int32_t *)y, bi,
                                                  (int32_t *)out, n);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

// Where into a half out: x and y each of out's type or float32 (a fill scalar), rounded once.
template <typename TX, typename TY, typename TO>
__global__ void k_where_h(const uint8_t *c, const TX *x, const TY *y, cu_bidx bi, TO *out,
                          int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[3];
        bidx_at<3>(bi, i, o);
        st(out, i, c[o[0]] ? ld(x, o[1]) : ld(y, o[2]));
    }
}

template <typename TO>
static void where_launch(cudaStream_t s, const uint8_t *c, int kx, const void *x, int ky,
                         const void *y, cu_bidx bi, void *out, int64_t n) {
    unsigned g = blocks_for(n);
    if (kx && ky)
        k_where_h<<<g, THREADS, 0, s>>>(c, (const TO *)x, (const TO *)y, bi, (TO *)out, n);
    else if (kx)
        k_where_h<<<g, THREADS, 0, s>>>(c, (const TO *)x, (const float *)y, bi, (TO *)out, n);
    else if (ky)
        k_where_h<<<g, THREADS, 0, s>>>(c, (const float *)x, (const TO *)y, bi, (TO *)out, n);
    else k_where_h<<<g, THREADS, 0, s>>>(c, (const float *)x, (const float *)y, bi, (TO *)out, n);
}

extern "C" int cu_where_half(void *stream, const uint8_t *c, cu_shape cs, int kx, const void *x,
                             cu_shape xs, int ky, const void *y, cu_shape ys, int ko, void *out,
                             cu_shape os) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    if ((kx && kx != ko) || (ky && ky != ko)) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    cu_shape in[3] = {cs, xs, ys};
    cu_bidx bi = bidx_of(os, in, 3);
    if (ko == 1) where_launch<oc_f16>(s, c, kx, x, ky, y, bi, out, n);
    else if (ko == 2) where_launch<oc_bf16>(s, c, kx, x, ky, y, bi, out, n);
    else return (int)cudaErrorInvalidValue;
    return last_error();
}

template <typename T>
__global__ void k_where_grad(const T *dy, const uint8_t *c, cu_bidx bi, T *dx, int select,
                             int64_t n) {
    GRID_LOOP(i, n) {
        int64_t o[1];
        bidx_at<1>(bi, i, o);
        st(dx, i, (c[o[0]] != 0) == (select != 0) ? ld(dy, i) : 0.0f);
    }
}

__global__ void k_where_grad4(const float *dy, const uint8_t *c, cu_bidx bi, float *dx, int select,
                              int64_t n4) {
    bool uc = bi.st[0][bi.rank - 1] == 1;
    GRID_LOOP(q, n4) {
        int64_t o[1];
        bidx_at<1>(bi, q * 4, o);
        u8x4 m = ld4(c, o[0], uc);
        f4 g = ((const f4 *)dy)[q], r;
        for (int e = 0; e < 4; e++) r.v[e] = (m.v[e] != 0) == (select != 0) ? g.v[e] : 0.0f;
        ((f4 *)dx)[q] = r;
    }
}

extern "C" int cu_where_grad(void *stream, int kind, const void *dy, const uint8_t *c, cu_shape cs,
                             cu_shape os, void *dx, int select) {
    int64_t n = numel(os);
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    cu_bidx bi = bidx_of(os, &cs, 1);
    const void *ptrs[1] = {c};
    const int es[1] = {1};
    if (kind == 0 && aligned16(dy) && bidx_v4_ok(&bi, 1, ptrs, es, dx, 4)) {
        k_where_grad4<<<blocks_for(n / 4), THREADS, 0, s>>>((const float *)dy, c, bi, (float *)dx,
                                                            select, n / 4);
        return last_error();
    }
    if (kind == 1)
        k_where_grad<<<b, THREADS, 0, s>>>((const oc_f16 *)dy, c, bi, (oc_f16 *)dx, select, n);
    else if (kind == 2)
        k_where_grad<<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, c, bi, (oc_bf16 *)dx, select, n);
    else k_where_grad<<<b, THREADS, 0, s>>>((const float *)dy, c, bi, (float *)dx, select, n);
    return last_error();
}

template <typename T>
__global__ void k_dropout_grad(const T *dy, const uint8_t *mask, T *dx, int64_t n, float scale) {
    GRID_LOOP(i, n) st(dx, i, mask[i] ? ld(dy, i) * scale : 0.0f);
}

__global__ void k_dropout_grad4(const f4 *dy, const u8x4 *mask, f4 *dx, int64_t n4, float scale) {
    GRID_LOOP(q, n4) {
        f4 g = dy[q], r;
        u8x4 m = mask[q];
        for (int e = 0; e < 4; e++) r.v[e] = m.v[e] ? g.v[e] * scale : 0.0f;
        dx[q] = r;
    }
}

extern "C" int cu_dropout_grad(void *stream, int kind, const void *dy, const uint8_t *mask,
                               void *dx, int64_t n, float scale) {
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    if (kind == 0 && vec4_ok(n, dy, dx, dx) && (uintptr_t)mask % 4 == 0) {
        k_dropout_grad4<<<blocks_for(n / 4), THREADS, 0, s>>>((const f4 *)dy, (const u8x4 *)mask,
                                                              (f4 *)dx, n / 4, scale);
        return last_error();
    }
    if (kind == 1)
        k_dropout_grad<<<b, THREADS, 0, s>>>((const oc_f16 *)dy, mask, (oc_f16 *)dx, n, scale);
    else if (kind == 2)
        k_dropout_grad<<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, mask, (oc_bf16 *)dx, n, scale);
    else k_dropout_grad<<<b, THREADS, 0, s>>>((const float *)dy, mask, (float *)dx, n, scale);
    return last_error();
}

// ---- Pad / PadGrad (cpu_shape.c: pad_copy) ----
struct pad_begin {
    int64_t b[CU_MAX_RANK];
};

template <typename T>
__global__ void k_pad(cu_shape od, cu_shape id, pad_begin pb, int mode, const T *in, T *out, T fill,
                      int64_t n) {
    int64_t is[CU_MAX_RANK], acc = 1;
    for (int d = id.rank - 1; d >= 0; d--) {
        is[d] = acc;
        acc *= id.d[d];
    }
    GRID_LOOP(k, n) {
        int64_t rem = k, off = 0;
        bool inside = true;
        for (int d = od.rank - 1; d >= 0; d--) {
            int64_t o = rem % od.d[d];
            rem /= od.d[d];
            int64_t s = oc_pad_source(o - pb.b[d], id.d[d], mode);
            if (s < 0) inside = false;
            else off += s * is[d];
        }
        out[k] = inside ? in[off] : fill;
    }
}

extern "C" int cu_pad(void *stream, int es, cu_shape od, cu_shape id, const int64_t *begin,
                      int mode, const void *in, void *out, uint64_t fill) {
    int64_t n = numel(od);
    if (n == 0) return 0;
    pad_begin pb;
    for (int i = 0; i < CU_MAX_RANK; i++) pb.b[i] = i < od.rank ? begin[i] : 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    switch (es) {
    case 1:
        k_pad<<<b, THREADS, 0, s>>>(od, id, pb, mode, (const uint8_t *)in, (uint8_t *)out,
                                    (uint8_t)fill, n);
        break;
    case 2:
        k_pad<<<b, THREADS, 0, s>>>(od, id, pb, mode, (const uint16_t *)in, (uint16_t *)out,
                                    (uint16_t)fill, n);
        break;
    case 4:
        k_pad<<<b, THREADS, 0, s>>>(od, id, pb, mode, (const uint32_t *)in, (uint32_t *)out,
                                    (uint32_t)fill, n);
        break;
    case 8:
        k_pad<<<b, THREADS, 0, s>>>(od, id, pb, mode, (const uint64_t *)in, (uint64_t *)out,
                                    (uint64_t)fill, n);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return last_error();
}

// Reflect / edge Pad's gradient (cpu_pad_grad): a thread per dX element sums dY at every
// index that read it, in pad_coord.h's order (the cpu backend's), in float32; kind as
// half_load's (0 float32, 1 float16, 2 bfloat16), a half sum rounded once when stored.
__global__ void k_pad_grad_sum(cu_shape od, cu_shape id, pad_begin pb, int mode, const void *dy,
                               void *dx, int kind, int64_t n) {
    int64_t os[CU_MAX_RANK], acc = 1;
    for (int d = od.rank - 1; d >= 0; d--) {
        os[d] = acc;
        acc *= od.d[d];
    }
    GRID_LOOP(k, n) {
        int64_t c[CU_MAX_RANK], rem = k;
        for (int d = id.rank - 1; d >= 0; d--) {
            c[d] = rem % id.d[d];
            rem /= id.d[d];
        }
        half_store(dx, kind, k, oc_pad_grad_sum(id.rank, id.d, od.d, os, pb.b, mode, c, dy, kind));
    }
}

extern "C" int cu_pad_grad_sum(void *stream, cu_shape od, cu_shape id, const int64_t *begin,
                               int mode, const void *dy, void *dx, int kind) {
    int64_t n = numel(id);
    if (n == 0) return 0;
    pad_begin pb;
    for (int i = 0; i < CU_MAX_RANK; i++) pb.b[i] = i < od.rank ? begin[i] : 0;
    k_pad_grad_sum<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(od, id, pb, mode, dy, dx,
                                                                        kind, n);
    return last_error();
}

// 16 bytes a thread (bits moved as they are) where the pointers, pitches and rows allow it
// (attention's q/k/v Split of rows of 3 d floats); else cudaMemcpy2DAsync
struct alignas(16) u32x4 {
    uint32_t v[4];
};
__global__ void k_copy_rows16(u32x4 *dst, int64_t dp, const u32x4 *src, int64_t sp, int64_t cw,
                              int64_t n) {
    GRID_LOOP(q, n) {
        int64_t r = q / cw, c = q % cw;
        dst[r * dp + c] = src[r * sp + c];
    }
}

extern "C" int cu_copy_rows(void *stream, void *dst, int64_t dst_pitch, const void *src,
                            int64_t src_pitch, int64_t chunk, int64_t rows) {
    if (chunk == 0 || rows == 0) return 0;
    uint64_t bits = (uintptr_t)dst | (uintptr_t)src | (uint64_t)(dst_pitch | src_pitch | chunk);
    if (bits % 16 == 0) {
        int64_t n = rows * (chunk / 16);
        k_copy_rows16<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(
            (u32x4 *)dst, dst_pitch / 16, (const u32x4 *)src, src_pitch / 16, chunk / 16, n);
        return last_error();
    }
    return (int)cudaMemcpy2DAsync(dst, (size_t)dst_pitch, src, (size_t)src_pitch, (size_t)chunk,
                                  (size_t)rows, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
}

// ---- pooling (cpu_pool.c) ----
// Planes p = n C + c of `size` cells (the image's or the output's): planar (w.chan 0) or
// channels-last (w.chan = C). A thread's element t is the element at offset t, in either
// layout (channels-last: c fastest, so a warp reads neighbouring channels).
__device__ static inline int64_t cell_at(int64_t chan, int64_t p, int64_t i, int64_t size) {
    return chan ? ((p / chan) * size + i) * chan + p % chan : p * size + i;
}

__device__ static inline void plane_cell(int64_t chan, int64_t t, int64_t size, int64_t *p,
                                         int64_t *i) {
    if (chan) {
        int64_t r = t / chan;
        *i = r % size;
        *p = r / size * chan + t % chan;
    } else {
        *p = t / size;
        *i = t % size;
    }
}

// Flat image index of kernel cell kk at output position o (decoded from oi),
// -1 in padding; *in_padded: inside the padded extent.
__device__ static int64_t win_cell(const cu_window &w, const int64_t *o, int64_t kk,
                                   bool *in_padded) {
    int64_t k[3], off = 0;
    for (int d = w.nsp - 1; d >= 0; d--) {
        k[d] = kk % w.kernel[d];
        kk /= w.kernel[d];
    }
    bool inside = true;
    *in_padded = true;
    for (int d = 0; d < w.nsp; d++) {
        int64_t ix = o[d] * w.stride[d] - w.pad[d] + k[d] * w.dilation[d];
        if (ix < 0 || ix >= w.img[d]) inside = false;
        if (ix < -w.pad[d] || ix >= w.img[d] + w.pad_end[d]) *in_padded = false;
        off = off * w.img[d] + ix;
    }
    return inside ? off : -1;
}

__device__ static void decode_pos(const cu_window &w, int64_t oi, int64_t *o) {
    for (int d = w.nsp - 1; d >= 0; d--) {
        o[d] = oi % w.col[d];
        oi /= w.col[d];
    }
}

// The first maximum of plane p's window at o: its cell, -1 for an empty window.
template <typename T>
__device__ static int64_t win_argmax(const cu_window &w, const T *x, int64_t p, const int64_t *o) {
    int64_t best = -1;
    bool ip;
    float bv = 0.0f;
    for (int64_t kk = 0; kk < w.k_size; kk++) {
        int64_t i = win_cell(w, o, kk, &ip);
        if (i < 0) continue;
        float v = ld(x, cell_at(w.chan, p, i, w.img_size));
        if (best < 0 || v > bv || (isnan(v) && !isnan(bv))) best = i, bv = v;
    }
    return best;
}

template <typename T>
__global__ void k_max_pool(const T *x, T *y, int64_t *ind, int64_t planes, cu_window w,
                           int col_major) {
    GRID_LOOP(t, planes * w.col_size) {
        int64_t p, oi, o[3];
        plane_cell(w.chan, t, w.col_size, &p, &oi);
        decode_pos(w, oi, o);
        int64_t b = win_argmax(w, x, p, o);
        st(y, t, b >= 0 ? ld(x, cell_at(w.chan, p, b, w.img_size)) : -INFINITY);
        if (ind) {
            int64_t si = b;
            if (col_major && b >= 0) {
                int64_t c[3], bb = b;
                for (int d = w.nsp - 1; d >= 0; d--) {
                    c[d] = bb % w.img[d];
                    bb /= w.img[d];
                }
                si = 0;
                for (int d = w.nsp - 1; d >= 0; d--) si = si * w.img[d] + c[d];
            }
            ind[t] = p * w.img_size + (si >= 0 ? si : 0);
        }
    }
}

// Gradients gather: one thread per input cell visits the output windows that
// cover it in ascending output order (kernel offsets descending), as the cpu
// kernel's scatter does, so the float sums match it bit for bit. MaxPool: the
// window's argmax comes from `arg` (phase 1, k_max_argmax) when given, else is
// recomputed for every covering window.
template <bool MAX, typename T>
__global__ void k_pool_grad(const T *dy, const T *x, T *dx, int64_t planes, cu_window w,
                            int include_pad, const int32_t *arg) {
    GRID_LOOP(t, planes * w.img_size) {
        int64_t p, ii, ic[3];
        plane_cell(w.chan, t, w.img_size, &p, &ii);
        int64_t rem = ii;
        for (int d = w.nsp - 1; d >= 0; d--) {
            ic[d] = rem % w.img[d];
            rem /= w.img[d];
        }
        float acc = 0.0f;
        for (int64_t kk = w.k_size - 1; kk >= 0; kk--) {
            int64_t k[3], kr = kk, o[3];
            for (int d = w.nsp - 1; d >= 0; d--) {
                k[d] = kr % w.kernel[d];
                kr /= w.kernel[d];
            }
            bool ok = true;
            int64_t oi = 0;
            for (int d = 0; d < w.nsp && ok; d++) {
                int64_t v = ic[d] + w.pad[d] - k[d] * w.dilation[d];
                if (v < 0 || v % w.stride[d]) {
                    ok = false;
                    break;
                }
                o[d] = v / w.stride[d];
                if (o[d] >= w.col[d]) ok = false;
                oi = oi * w.col[d] + o[d];
            }
            if (!ok) continue;
            float g = ld(dy, cell_at(w.chan, p, oi, w.col_size));
            if (MAX) {
                int64_t best = arg ? (int64_t)arg[p * w.col_size + oi] : win_argmax(w, x, p, o);
                if (best == ii) acc += g;
            } else {
                int64_t padded = 0, inside = 0;
                bool ip;
                for (int64_t c = 0; c < w.k_size; c++) {
                    inside += win_cell(w, o, c, &ip) >= 0;
                    padded += ip;
                }
                int64_t div = include_pad ? padded : inside;
                if (div > 0) acc += g / (float)div;
            }
        }
        st(dx, t, acc);
    }
}

// Phase 1 of MaxPoolGrad with scratch: each window's argmax (flat index in its
// plane, -1 for an empty window), found once instead of once per covered cell.
template <typename T>
__global__ void k_max_argmax(const T *x, int32_t *arg, int64_t planes, cu_window w) {
    GRID_LOOP(t, planes * w.col_size) {
        int64_t p = t / w.col_size, o[3]; // arg: planar (scratch)
        decode_pos(w, t % w.col_size, o);
        arg[t] = (int32_t)win_argmax(w, x, p, o);
    }
}

// 2-D windows with scratch (every CNN's max pooling): the same two passes with
// int32 index arithmetic and each cell's covering windows found as ranges of
// output rows/columns instead of a div/mod per kernel offset (the generic
// kernels above spend most of their time on 64-bit divisions).
struct pool2d {
    int ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t chan; // cu_window's
};

// The 2-d windows' maxima of V neighbouring planes (window order: rows, then columns, as
// win_argmax; NaN wins): each one's in-plane input index in best[v] (-1: no cell inside the
// image), its value in bv[v]. Plane v's cells are x[base + v + cell * step] (step 1 with V 1
// planar, else the channels of a channels-last layout: cell_at).
template <typename T, int V>
__device__ static inline void win_max2d(const T *x, const pool2d &q, int64_t base, int64_t step,
                                        int oy, int ox, float *bv, int *best) {
    for (int v = 0; v < V; v++) best[v] = -1, bv[v] = 0.0f;
    for (int ky = 0; ky < q.kh; ky++) {
        int iy = oy * q.sh - q.ph + ky * q.dh;
        if (iy < 0 || iy >= q.ih) continue;
        for (int kx = 0; kx < q.kw; kx++) {
            int ix = ox * q.sw - q.pw + kx * q.dw;
            if (ix < 0 || ix >= q.iw) continue;
            int64_t at = base + (int64_t)(iy * q.iw + ix) * step;
            for (int v = 0; v < V; v++) {
                float e = ld(x, at + v);
                if (best[v] < 0 || e > bv[v] || (isnan(e) && !isnan(bv[v]))) {
                    best[v] = iy * q.iw + ix;
                    bv[v] = e;
                }
            }
        }
    }
}

// Thread u's plane (planar, V 1: p = n C + c; channels-last: image n, its first channel *c0 of
// the V neighbouring ones it owns) and cell *r of the plane's `per`, in I (int32 where the
// tensor allows: six 64-bit divisions an element, the likely cost of the earlier kernels).
template <typename I, int V>
__device__ static inline void pool_cell(I u, I per, I chan, I *plane, I *c0, I *r) {
    if (chan) {
        I groups = chan / V, cell = u / groups;
        *c0 = (u - cell * groups) * V;
        *plane = cell / per;
        *r = cell - *plane * per;
    } else {
        *plane = u / per;
        *c0 = 0;
        *r = u - *plane * per;
    }
}

// Where plane `plane` (channel c0) of a tensor of `cells` cells a plane starts (cell_at's 0)
__device__ static inline int64_t plane_at(int64_t plane, int64_t c0, int64_t cells, int64_t chan) {
    return chan ? plane * cells * chan + c0 : plane * cells;
}

#define POOL_LOOP(u, n, I)                                                                         \
    for (I u = (I)(blockIdx.x * blockDim.x + threadIdx.x); u < (n);                                \
         u += (I)(gridDim.x * blockDim.x))

// y (and, given arg, each window's argmax) for every output cell, in its layout's order
template <typename T, typename I, int V>
__global__ void k_max_pool2d(const T *x, T *y, int32_t *arg, I n, pool2d q) {
    I per = (I)q.oh * q.ow, chan = (I)q.chan;
    int64_t step = chan ? chan : 1;
    POOL_LOOP(u, n, I) {
        I p, c0, rr;
        pool_cell<I, V>(u, per, chan, &p, &c0, &rr);
        int r = (int)rr, oy = r / q.ow, ox = r - oy * q.ow;
        float bv[V];
        int best[V];
        win_max2d<T, V>(x, q, plane_at(p, c0, (int64_t)q.ih * q.iw, chan), step, oy, ox, bv, best);
        int64_t at = plane_at(p, c0, per, chan) + (int64_t)r * step;
        for (int v = 0; v < V; v++) {
            if (y) st(y, at + v, best[v] >= 0 ? bv[v] : -INFINITY);
            if (arg) arg[at + v] = best[v];
        }
    }
}

// Output positions o along one dim whose window covers input position i:
// o * s - pad + k * d == i for some 0 <= k < kn; [*lo, *hi] (empty when lo > hi).
__device__ static inline void cover_range(int i, int pad, int kn, int s, int d, int on, int *lo,
                                          int *hi) {
    int top = i + pad, bot = top - (kn - 1) * d;
    *lo = bot <= 0 ? 0 : (bot + s - 1) / s;
    *hi = top / s;
    if (*hi > on - 1) *hi = on - 1;
}

template <typename T, typename I, int V>
__global__ void k_max_pool_grad2d(const T *dy, const int32_t *arg, T *dx, I n, pool2d q) {
    I per = (I)q.ih * q.iw, chan = (I)q.chan;
    int64_t step = chan ? chan : 1;
    POOL_LOOP(t, n, I) {
        I p, c0, rr;
        pool_cell<I, V>(t, per, chan, &p, &c0, &rr);
        int r = (int)rr, iy = r / q.iw, ix = r - iy * q.iw;
        int64_t ob = plane_at(p, c0, (int64_t)q.oh * q.ow, chan); // dy's and arg's plane
        int y0, y1, x0, x1;
        cover_range(iy, q.ph, q.kh, q.sh, q.dh, q.oh, &y0, &y1);
        cover_range(ix, q.pw, q.kw, q.sw, q.dw, q.ow, &x0, &x1);
        float acc[V];
        for (int v = 0; v < V; v++) acc[v] = 0.0f;
        for (int oy = y0; oy <= y1; oy++) { // ascending output order, as cpu_pool's scatter
            if (q.dh > 1 && (iy + q.ph - oy * q.sh) % q.dh) continue;
            for (int ox = x0; ox <= x1; ox++) {
                if (q.dw > 1 && (ix + q.pw - ox * q.sw) % q.dw) continue;
                int64_t o = ob + (int64_t)(oy * q.ow + ox) * step;
                for (int v = 0; v < V; v++)
                    if (arg[o + v] == r) acc[v] += ld(dy, o + v);
            }
        }
        int64_t at = plane_at(p, c0, per, chan) + (int64_t)r * step;
        for (int v = 0; v < V; v++) st(dx, at + v, acc[v]);
    }
}

static bool pool2d_of(const cu_window &w, pool2d *q) {
    if (w.nsp != 2) return false;
    const int64_t v[] = {w.img[0],    w.img[1],    w.col[0],      w.col[1],
                         w.kernel[0], w.kernel[1], w.stride[0],   w.stride[1],
                         w.pad[0],    w.pad[1],    w.dilation[0], w.dilation[1]};
    for (int64_t e : v)
        if (e < 0 || e > (1 << 24)) return false;
    if (w.img_size > INT32_MAX || w.col_size > INT32_MAX) return false;
    *q = pool2d{(int)v[0], (int)v[1], (int)v[2], (int)v[3],  (int)v[4],  (int)v[5], (int)v[6],
                (int)v[7], (int)v[8], (int)v[9], (int)v[10], (int)v[11], w.chan};
    return q->sh > 0 && q->sw > 0 && q->dh > 0 && q->dw > 0;
}

// Channels per thread: 4 where a channels-last tensor's channels come in fours, else 1. Index
// arithmetic in int32 below POOL_I32_MAX threads' elements (a grid stride past it stays in range).
static int pool2d_vec(const pool2d &q) { return q.chan > 0 && q.chan % 4 == 0 ? 4 : 1; }
#define POOL_I32_MAX (INT64_C(1) << 30)

// k_max_pool2d over the n output cells (y, arg or both)
template <typename T>
static void max_pool2d_launch(cudaStream_t s, const T *x, T *y, int32_t *arg, int64_t n,
                              const pool2d &q) {
    if (pool2d_vec(q) == 4 && n / 4 < POOL_I32_MAX)
        k_max_pool2d<T, int32_t, 4>
            <<<blocks_for(n / 4), THREADS, 0, s>>>(x, y, arg, (int32_t)(n / 4), q);
    else if (pool2d_vec(q) == 4)
        k_max_pool2d<T, int64_t, 4><<<blocks_for(n / 4), THREADS, 0, s>>>(x, y, arg, n / 4, q);
    else if (n < POOL_I32_MAX)
        k_max_pool2d<T, int32_t, 1><<<blocks_for(n), THREADS, 0, s>>>(x, y, arg, (int32_t)n, q);
    else k_max_pool2d<T, int64_t, 1><<<blocks_for(n), THREADS, 0, s>>>(x, y, arg, n, q);
}

template <typename T>
static void max_pool_launch(cudaStream_t s, const void *x, void *y, int64_t *indices,
                            int64_t planes, cu_window w, int col_major) {
    pool2d q;
    if (!indices && pool2d_of(w, &q)) {
        max_pool2d_launch<T>(s, (const T *)x, (T *)y, NULL, planes * w.col_size, q);
        return;
    }
    k_max_pool<T><<<blocks_for(planes * w.col_size), THREADS, 0, s>>>((const T *)x, (T *)y, indices,
                                                                      planes, w, col_major);
}

extern "C" int cu_max_pool(void *stream, int kind, const void *x, void *y, int64_t *indices,
                           int64_t planes, cu_window w, int col_major) {
    if (planes * w.col_size == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (kind == 1) max_pool_launch<oc_f16>(s, x, y, indices, planes, w, col_major);
    else if (kind == 2) max_pool_launch<oc_bf16>(s, x, y, indices, planes, w, col_major);
    else max_pool_launch<float>(s, x, y, indices, planes, w, col_major);
    return last_error();
}

template <typename T>
static void max_pool_grad_launch(cudaStream_t s, const T *dy, const T *x, T *dx, int64_t planes,
                                 cu_window w, int32_t *arg) {
    int64_t n = planes * w.img_size;
    pool2d q;
    if (arg && pool2d_of(w, &q)) {
        if (planes * w.col_size > 0) max_pool2d_launch<T>(s, x, NULL, arg, planes * w.col_size, q);
        int v = pool2d_vec(q);
        if (v == 4 && n / 4 < POOL_I32_MAX)
            k_max_pool_grad2d<T, int32_t, 4>
                <<<blocks_for(n / 4), THREADS, 0, s>>>(dy, arg, dx, (int32_t)(n / 4), q);
        else if (v == 4)
            k_max_pool_grad2d<T, int64_t, 4>
                <<<blocks_for(n / 4), THREADS, 0, s>>>(dy, arg, dx, n / 4, q);
        else if (n < POOL_I32_MAX)
            k_max_pool_grad2d<T, int32_t, 1>
                <<<blocks_for(n), THREADS, 0, s>>>(dy, arg, dx, (int32_t)n, q);
        else k_max_pool_grad2d<T, int64_t, 1><<<blocks_for(n), THREADS, 0, s>>>(dy, arg, dx, n, q);
        return;
    }
    if (arg && planes * w.col_size > 0)
        k_max_argmax<T><<<blocks_for(planes * w.col_size), THREADS, 0, s>>>(x, arg, planes, w);
    k_pool_grad<true, T><<<blocks_for(n), THREADS, 0, s>>>(dy, x, dx, planes, w, 0, arg);
}

extern "C" int cu_max_pool_grad(void *stream, int kind, const void *dy, const void *x, void *dx,
                                int64_t planes, cu_window w, int32_t *arg) {
    if (planes * w.img_size == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
#define MPG(T) max_pool_grad_launch(s, (const T *)dy, (const T *)x, (T *)dx, planes, w, arg)
    if (kind == 1) MPG(oc_f16);
    else if (kind == 2) MPG(oc_bf16);
    else MPG(float);
#undef MPG
    return last_error();
}

extern "C" int cu_average_pool_grad(void *stream, int kind, const void *dy, void *dx,
                                    int64_t planes, cu_window w, int include_pad) {
    int64_t n = planes * w.img_size;
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    if (kind == 1)
        k_pool_grad<false, oc_f16><<<b, THREADS, 0, s>>>((const oc_f16 *)dy, NULL, (oc_f16 *)dx,
                                                         planes, w, include_pad, NULL);
    else if (kind == 2)
        k_pool_grad<false, oc_bf16><<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, NULL, (oc_bf16 *)dx,
                                                          planes, w, include_pad, NULL);
    else
        k_pool_grad<false, float><<<b, THREADS, 0, s>>>((const float *)dy, NULL, (float *)dx,
                                                        planes, w, include_pad, NULL);
    return last_error();
}

template <typename T>
__global__ void k_avg_pool(const T *x, T *y, int64_t planes, cu_window w, int include) {
    GRID_LOOP(t, planes * w.col_size) {
        int64_t p, oi, o[3], padded = 0, inside = 0;
        plane_cell(w.chan, t, w.col_size, &p, &oi);
        decode_pos(w, oi, o);
        double s = 0;
        bool ip;
        for (int64_t kk = 0; kk < w.k_size; kk++) {
            int64_t i = win_cell(w, o, kk, &ip);
            padded += ip;
            if (i >= 0) {
                s += ld(x, cell_at(w.chan, p, i, w.img_size));
                inside++;
            }
        }
        int64_t div = include ? padded : inside;
        st(y, t, div > 0 ? (float)(s / (double)div) : 0.0f);
    }
}

extern "C" int cu_average_pool(void *stream, int kind, const void *x, void *y, int64_t planes,
                               cu_window w, int include_pad) {
    int64_t n = planes * w.col_size;
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(n);
    if (kind == 1)
        k_avg_pool<<<b, THREADS, 0, s>>>((const oc_f16 *)x, (oc_f16 *)y, planes, w, include_pad);
    else if (kind == 2)
        k_avg_pool<<<b, THREADS, 0, s>>>((const oc_bf16 *)x, (oc_bf16 *)y, planes, w, include_pad);
    else k_avg_pool<<<b, THREADS, 0, s>>>((const float *)x, (float *)y, planes, w, include_pad);
    return last_error();
}

// y[p] (plane p = n C + c: the same offset in either layout) = the mean of its S cells.
template <typename T>
__global__ void k_gap(const T *x, T *y, int64_t planes, int64_t S, int64_t chan) {
    GRID_LOOP(p, planes) {
        double s = 0;
        for (int64_t i = 0; i < S; i++) s += ld(x, cell_at(chan, p, i, S));
        st(y, p, (float)(s / (double)S));
    }
}

template <typename T>
__global__ void k_gap_grad(const T *dy, T *dx, int64_t planes, int64_t S, int64_t chan) {
    GRID_LOOP(t, planes * S) {
        int64_t p, i;
        plane_cell(chan, t, S, &p, &i);
        st(dx, t, ld(dy, p) / (float)S);
    }
}

extern "C" int cu_global_average_pool(void *stream, int kind, const void *x, void *y,
                                      int64_t planes, int64_t S, int64_t chan) {
    if (planes == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(planes);
    if (kind == 1) k_gap<<<b, THREADS, 0, s>>>((const oc_f16 *)x, (oc_f16 *)y, planes, S, chan);
    else if (kind == 2)
        k_gap<<<b, THREADS, 0, s>>>((const oc_bf16 *)x, (oc_bf16 *)y, planes, S, chan);
    else k_gap<<<b, THREADS, 0, s>>>((const float *)x, (float *)y, planes, S, chan);
    return last_error();
}

extern "C" int cu_global_average_pool_grad(void *stream, int kind, const void *dy, void *dx,
                                           int64_t planes, int64_t S, int64_t chan) {
    if (planes * S == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    unsigned b = blocks_for(planes * S);
    if (kind == 1)
        k_gap_grad<<<b, THREADS, 0, s>>>((const oc_f16 *)dy, (oc_f16 *)dx, planes, S, chan);
    else if (kind == 2)
        k_gap_grad<<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, (oc_bf16 *)dx, planes, S, chan);
    else k_gap_grad<<<b, THREADS, 0, s>>>((const float *)dy, (float *)dx, planes, S, chan);
    return last_error();
}

// ---- SoftmaxCrossEntropyLoss (cpu_loss.c) ----
__device__ static int64_t sce_label(const void *labels, int l64, int64_t i, int has_ig, int64_t ig,
                                    int64_t C) {
    int64_t l = l64 ? ((const int64_t *)labels)[i] : ((const int32_t *)labels)[i];
    if (has_ig && l == ig) return -1;
    if (l < 0 || l >= C) return -2;
    return l;
}

// A warp per row, several rows a block (a language model's rows are vocabulary-wide): the row's
// max and sum of exponentials in one pass (the sum rescaled when the max grows), log-probabilities
// in a second, float arithmetic (as PyTorch's kernel); the per-row loss in double for the total.
__global__ void k_sce_rows(const float *__restrict__ s, const void *labels, int l64, int64_t N,
                           int64_t C, int has_ig, int64_t ig, int red, float *loss,
                           float *__restrict__ lp, double *ws) {
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(i, N) {
        const float *row = s + i * C;
        float m = -INFINITY, se = 0.0f;
        for (int64_t c0 = lane; c0 < C; c0 += 4 * (int64_t)L) { // 4 loads in flight a lane
            float x[4], bm = -INFINITY;
            for (int u = 0; u < 4; u++) {
                int64_t c = c0 + (int64_t)u * L;
                x[u] = c < C ? row[c] : -INFINITY;
                bm = x[u] > bm || x[u] != x[u] ? x[u] : bm; // a NaN wins (and propagates)
            }
            if (bm == -INFINITY) continue;
            float nm = bm > m || bm != bm ? bm : m;
            se = se * expf(m - nm);
            for (int u = 0; u < 4; u++) se += expf(x[u] - nm);
            m = nm;
        }
        float mx = lanes_max(m);
        se = lanes_sum(m == -INFINITY ? 0.0f : se * expf(m - mx));
        float lse = mx + logf(se);
        if (lp)
            for (int64_t c = lane; c < C; c += L) lp[i * C + c] = row[c] - lse;
        if (lane == 0) {
            int64_t l = sce_label(labels, l64, i, has_ig, ig, C);
            double li = l >= 0 ? (double)lse - (double)row[l] : l == -2 ? NAN : 0.0;
            if (red == 2) loss[i] = (float)li;
            ws[i] = li;
        }
    }
}

__global__ void k_sce_total(const void *labels, int l64, int64_t N, int64_t C, int has_ig,
                            int64_t ig, int red, float *loss, const double *ws) {
    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) {
        total += ws[i];
        count += sce_label(labels, l64, i, has_ig, ig, C) != -1;
    }
    if (red == 0) loss[0] = (float)(total / (double)count);
    else if (red == 1) loss[0] = (float)total;
}

extern "C" int cu_sce(void *stream, const float *s, const void *labels, int labels64, int64_t N,
                      int64_t C, int has_ignore, int64_t ignore, int reduction, float *loss,
                      float *log_prob, double *ws) {
    cudaStream_t st = (cudaStream_t)stream;
    if (N > 0)
        k_sce_rows<<<row_blocks_for(N), ROW_BLOCK, 0, st>>>(s, labels, labels64, N, C, has_ignore,
                                                            ignore, reduction, loss, log_prob, ws);
    if (reduction != 2)
        k_sce_total<<<1, 1, 0, st>>>(labels, labels64, N, C, has_ignore, ignore, reduction, loss,
                                     ws);
    return last_error();
}

__global__ void k_sce_count(const void *labels, int l64, int64_t N, int64_t C, int has_ig,
                            int64_t ig, double *ws) {
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) count += sce_label(labels, l64, i, has_ig, ig, C) != -1;
    ws[0] = (double)count;
}

// a warp per row: no division per element; d = scale (exp(lp) - [c == label]) / count
__global__ void k_sce_grad(const float *__restrict__ lp, const void *labels, int l64, int64_t N,
                           int64_t C, int has_ig, int64_t ig, int red, float *__restrict__ d,
                           const double *ws, const float *scale) {
    float f = (float)((scale ? (double)*scale : 1.0) / (red == 0 ? ws[0] : 1.0));
    int L = row_lanes(), lane = threadIdx.x % L;
    MROW_LOOP(i, N) {
        int64_t l = sce_label(labels, l64, i, has_ig, ig, C);
        const float *r = lp + i * C;
        float *dr = d + i * C;
        for (int64_t c = lane; c < C; c += L)
            dr[c] = l == -2 ? NAN : l < 0 ? 0.0f : f * (expf(r[c]) - (c == l ? 1.0f : 0.0f));
    }
}

extern "C" int cu_sce_grad(void *stream, const float *lp, const void *labels, int labels64,
                           int64_t N, int64_t C, int has_ignore, int64_t ignore, int reduction,
                           float *d, double *ws, const float *scale) {
    cudaStream_t st = (cudaStream_t)stream;
    k_sce_count<<<1, 1, 0, st>>>(labels, labels64, N, C, has_ignore, ignore, ws);
    if (N * C > 0)
        k_sce_grad<<<row_blocks_for(N), ROW_BLOCK, 0, st>>>(lp, labels, labels64, N, C, has_ignore,
                                                            ignore, reduction, d, ws, scale);
    return last_error();
}

// ---- SGDMomentum, AdamW, ClipGradNorm (cpu_update.c) ----
// Multi-tensor apply: one launch updates up to CU_UPDATE_LAUNCH parameters. The table goes
// by value (kernel parameters); parameter j owns the virtual blocks [first[j], first[j + 1])
// of UPDATE_CHUNK elements each, which the grid walks (grid-stride over virtual blocks).
#define UPDATE_CHUNK (4 * THREADS)
struct update_table {
    int k;
    cu_update_member m[CU_UPDATE_LAUNCH];
    int64_t first[CU_UPDATE_LAUNCH + 1];
};

// The member and element range of virtual block vb (a linear scan: a block's, not an
// element's).
__device__ static inline int update_block(const update_table &t, int64_t vb, int64_t &lo,
                                          int64_t &hi) {
    int j = 0;
    while (vb >= t.first[j + 1]) j++;
    lo = (vb - t.first[j]) * UPDATE_CHUNK;
    hi = lo + UPDATE_CHUNK < t.m[j].n ? lo + UPDATE_CHUNK : t.m[j].n;
    return j;
}

// The grid's walk over the virtual blocks, p the block's member.
#define UPDATE_BLOCKS(t, p, lo, hi)                                                                \
    for (int64_t vb = blockIdx.x, lo, hi; vb < (t).first[(t).k]; vb += gridDim.x)                  \
        for (const cu_update_member *p = &(t).m[update_block((t), vb, lo, hi)]; p; p = NULL)

// A skipped step (GradScaler found inf/NaN): outputs = inputs (copied unless in place).
__device__ static inline void update_keep(const cu_update_member &p, int64_t lo, int64_t hi) {
    for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        if (p.wo != p.w) p.wo[i] = p.w[i];
        if (p.mo != p.m) p.mo[i] = p.m[i];
        if (p.v && p.vo != p.v) p.vo[i] = p.v[i];
    }
}

__global__ void k_sgd(update_table t, const float *scale, float lr, float mom, float wd) {
    float s = scale ? *scale : 1.0f;
    UPDATE_BLOCKS(t, p, lo, hi) {
        if (s == 0.0f) {
            update_keep(*p, lo, hi);
            continue;
        }
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            float g = p->dw[i] * s + wd * p->w[i];
            float mi = mom * p->m[i] + g;
            p->mo[i] = mi;
            p->wo[i] = p->w[i] - lr * mi;
        }
    }
}

// cpu_adamw's bias corrections, in double; t from the member's own count when it has one.
__global__ void k_adamw(update_table t, const float *scale, float b1, float b2, float eps,
                        float decay, float lr, const int64_t *step) {
    float s = scale ? *scale : 1.0f;
    UPDATE_BLOCKS(t, p, lo, hi) {
        if (s == 0.0f) {
            update_keep(*p, lo, hi);
            continue;
        }
        double tt = (p->count ? (double)*p->count : (double)*step) + 1.0;
        float step_size = (float)((double)lr / (1.0 - pow((double)b1, tt)));
        float bc2_sqrt = (float)sqrt(1.0 - pow((double)b2, tt));
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            float g = p->dw[i] * s;
            float mi = p->m[i] + (1.0f - b1) * (g - p->m[i]);
            float vi = b2 * p->v[i] + (1.0f - b2) * g * g;
            p->mo[i] = mi;
            p->vo[i] = vi;
            p->wo[i] = p->w[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
        }
    }
}

// The counts after the update (a kernel of its own: the update kernel's threads all read them).
__global__ void k_adamw_counts(update_table t, const float *scale) {
    GRID_LOOP(j, t.k) {
        float c = *t.m[j].count;
        *t.m[j].count_out = scale && *scale == 0.0f ? c : c + 1.0f;
    }
}

// Members [from, from + k) as one table.
static update_table update_table_of(const cu_update_member *mem, int k) {
    update_table t = {};
    t.k = k;
    for (int j = 0; j < k; j++) {
        t.m[j] = mem[j];
        t.first[j + 1] = t.first[j] + (mem[j].n + UPDATE_CHUNK - 1) / UPDATE_CHUNK;
    }
    return t;
}

static unsigned update_blocks(const update_table &t) {
    int64_t b = t.first[t.k];
    return (unsigned)(b < 1 ? 1 : b > 65535LL * 16 ? 65535LL * 16 : b);
}

extern "C" int cu_sgd_momentum(void *stream, const cu_update_member *mem, int k, const float *scale,
                               float lr, float mom, float wd) {
    for (int from = 0; from < k; from += CU_UPDATE_LAUNCH) {
        update_table t =
            update_table_of(mem + from, k - from < CU_UPDATE_LAUNCH ? k - from : CU_UPDATE_LAUNCH);
        if (t.first[t.k] > 0)
            k_sgd<<<update_blocks(t), THREADS, 0, (cudaStream_t)stream>>>(t, scale, lr, mom, wd);
    }
    return last_error();
}

extern "C" int cu_adamw(void *stream, const cu_update_member *mem, int k, const float *scale,
                        float b1, float b2, float eps, float decay, float lr, const int64_t *step) {
    cudaStream_t st = (cudaStream_t)stream;
    for (int from = 0; from < k; from += CU_UPDATE_LAUNCH) {
        update_table t =
            update_table_of(mem + from, k - from < CU_UPDATE_LAUNCH ? k - from : CU_UPDATE_LAUNCH);
        if (t.first[t.k] > 0)
            k_adamw<<<update_blocks(t), THREADS, 0, st>>>(t, scale, b1, b2, eps, decay, lr, step);
        if (t.m[0].count) k_adamw_counts<<<1, WARP, 0, st>>>(t, scale);
    }
    return last_error();
}

/* part[j] = sum of g[i]^2 over i = j mod P (P slots, each in index order),
 * then acc = (first ? 0 : acc) + part summed in slot order: the same bits
 * on every run and launch shape. */
__global__ void k_sumsq_part(const float *g, int64_t n, double *part, int64_t P) {
    GRID_LOOP(j, P) {
        double s = 0;
        for (int64_t i = j; i < n; i += P) s += (double)g[i] * g[i];
        part[j] = s;
    }
}

__global__ void k_sumsq_total(const double *part, int64_t P, double *acc, int first) {
    double s = first ? 0.0 : *acc;
    for (int64_t j = 0; j < P; j++) s += part[j];
    *acc = s;
}

__global__ void k_clip_scale(const double *acc, float *scale, float max_norm, const float *pre) {
    double p = pre ? (double)*pre : 1.0;
    if (p == 0.0) { // a skipped step (GradScaler)
        *scale = 0.0f;
        return;
    }
    double coef = (double)max_norm / (sqrt(*acc) * p + 1e-6);
    *scale = (float)(p * (coef < 1.0 ? coef : 1.0));
}

// cpu_grad_scaler: coef = 1/S when the sum of squares is finite, else 0; S, T updated.
__global__ void k_grad_scaler(const double *acc, const float *s_in, const float *t_in, float *coef,
                              float *s_out, float *t_out, float growth, float backoff,
                              float interval) {
    float s = *s_in, t = *t_in;
    bool finite = isfinite(*acc);
    *coef = finite ? 1.0f / s : 0.0f;
    if (!finite) {
        s *= backoff;
        t = 0.0f;
    } else if ((t += 1.0f) >= interval) {
        if (isfinite(s * growth)) s *= growth;
        t = 0.0f;
    }
    *s_out = s;
    *t_out = t;
}

extern "C" int cu_grad_scaler(void *stream, const double *acc, const float *s_in, const float *t_in,
                              float *coef, float *s_out, float *t_out, float growth, float backoff,
                              float interval) {
    k_grad_scaler<<<1, 1, 0, (cudaStream_t)stream>>>(acc, s_in, t_in, coef, s_out, t_out, growth,
                                                     backoff, interval);
    return last_error();
}

extern "C" int cu_sumsq(void *stream, const float *g, int64_t n, double *ws, int first) {
    cudaStream_t st = (cudaStream_t)stream;
    k_sumsq_part<<<blocks_for(CU_SUMSQ_SLOTS), THREADS, 0, st>>>(g, n, ws + 1, CU_SUMSQ_SLOTS);
    k_sumsq_total<<<1, 1, 0, st>>>(ws + 1, CU_SUMSQ_SLOTS, ws, first);
    return last_error();
}

extern "C" int cu_clip_scale(void *stream, const double *acc, float *scale, float max_norm,
                             const float *pre) {
    k_clip_scale<<<1, 1, 0, (cudaStream_t)stream>>>(acc, scale, max_norm, pre);
    return last_error();
}

// ---- fill (the ones vector of the conv bias gradient, cuda_dnn.c) ----
__global__ void k_fill(float *p, int64_t n, float v) { GRID_LOOP(i, n) p[i] = v; }

extern "C" int cu_fill(void *stream, float *p, int64_t n, float v) {
    if (n == 0) return 0;
    k_fill<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(p, n, v);
    return last_error();
}

// ---- Gemm bias, BN saved variance, Gather ----
__global__ void k_gemm_bias(const void *c, int kind, int64_t s0, int64_t s1, float beta, void *y,
                            int64_t M, int64_t N) {
    GRID_LOOP(t, M * N)
    half_store(y, kind, t, beta * half_load(c, kind, (t / N) * s0 + (t % N) * s1));
}

extern "C" int cu_gemm_bias(void *stream, const void *c, int kind, int64_t s0, int64_t s1,
                            float beta, void *y, int64_t M, int64_t N) {
    if (M * N == 0) return 0;
    k_gemm_bias<<<blocks_for(M * N), THREADS, 0, (cudaStream_t)stream>>>(c, kind, s0, s1, beta, y,
                                                                         M, N);
    return last_error();
}

// Y (rows, N) = b in every row (Linear's bias before its GEMM adds the product): a thread
// per V columns and row block, holding its columns in registers and writing them to every
// rb-th row from its block's first (one division per thread, not per element); V-wide
// stores where N and the pointers allow.
template <typename T, int V>
__global__ void k_rows_fill(const T *b, T *y, int64_t rows, int64_t N, int64_t rb) {
    int64_t groups = N / V;
    GRID_LOOP(i, groups * rb) {
        int64_t g = i % groups;
        float v[V];
        ldv<T, V>(b, g * V, v);
        for (int64_t r = i / groups; r < rows; r += rb) stv<T, V>(y, r * N + g * V, v);
    }
}

template <typename T>
static void rows_fill(cudaStream_t s, const void *b, void *y, int64_t rows, int64_t N) {
    int V = vec_of(N, sizeof(T), b, y, NULL, NULL);
    int64_t groups = N / V, rb = ((int64_t)1 << 18) / groups; /* about 2^18 threads */
    rb = rb < 1 ? 1 : rb > rows ? rows : rb;
    unsigned nb = blocks_for(groups * rb);
    if (V == 4) k_rows_fill<T, 4><<<nb, THREADS, 0, s>>>((const T *)b, (T *)y, rows, N, rb);
    else k_rows_fill<T, 1><<<nb, THREADS, 0, s>>>((const T *)b, (T *)y, rows, N, rb);
}

extern "C" int cu_rows_fill(void *stream, const void *b, int kind, void *y, int64_t rows,
                            int64_t N) {
    if (rows * N == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (kind == 1) rows_fill<oc_f16>(s, b, y, rows, N);
    else if (kind == 2) rows_fill<oc_bf16>(s, b, y, rows, N);
    else rows_fill<float>(s, b, y, rows, N);
    return last_error();
}

__global__ void k_invstd_to_var(float *v, int64_t n, float eps) {
    GRID_LOOP(i, n) v[i] = (float)(1.0 / ((double)v[i] * (double)v[i]) - (double)eps);
}

extern "C" int cu_invstd_to_var(void *stream, float *v, int64_t n, float eps) {
    if (n == 0) return 0;
    k_invstd_to_var<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(v, n, eps);
    return last_error();
}

/* The slab offset of index row r (k coordinates, negative from the end); -1 when a
 * coordinate lies outside dims (indices computed at run time are not checked at plan time). */
__device__ static inline int64_t scatter_row_offset(const void *idx, int idx64, int64_t r,
                                                    cu_shape dims) {
    int64_t off = 0;
    for (int j = 0; j < dims.rank; j++) {
        int64_t v = idx64 ? ((const int64_t *)idx)[r * dims.rank + j]
                          : ((const int32_t *)idx)[r * dims.rank + j];
        if (v < 0) v += dims.d[j];
        if (v < 0 || v >= dims.d[j]) return -1;
        off = off * dims.d[j] + v;
    }
    return off;
}

/* owner[slab] = the last row (+ 1) writing it: of repeated rows the last one's slab is
 * written, as the cpu kernel's sequential loop leaves it, whatever the threads' order. */
__global__ void k_scatter_owner(const void *idx, int idx64, int64_t rows, cu_shape dims,
                                unsigned *owner) {
    GRID_LOOP(r, rows) {
        int64_t off = scatter_row_offset(idx, idx64, r, dims);
        if (off >= 0) atomicMax(owner + off, (unsigned)(r + 1));
    }
}

/* gather: small[row] = big[slab]; else big[slab] = small[row] (or 0), rows outside
 * skipped (gathered as 0), and with owner only the slab's last row written. */
__global__ void k_scatter_nd(int es, const void *idx, int idx64, int64_t rows, cu_shape dims,
                             int64_t slab, uint8_t *small, uint8_t *big, int gather,
                             const unsigned *owner) {
    int64_t row_bytes = slab * es;
    GRID_LOOP(t, rows * row_bytes) {
        int64_t r = t / row_bytes, b = t % row_bytes;
        int64_t off = scatter_row_offset(idx, idx64, r, dims);
        if (gather) small[t] = off >= 0 ? big[off * row_bytes + b] : 0;
        else if (off >= 0 && (!owner || owner[off] == (unsigned)(r + 1)))
            big[off * row_bytes + b] = small ? small[t] : 0;
    }
}

extern "C" int cu_scatter_nd(void *stream, int es, const void *idx, int idx64, int64_t rows,
                             cu_shape dims, int64_t slab, void *small, void *big, int gather,
                             unsigned *owner) {
    int64_t n = rows * slab * es, slabs = numel(dims);
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0) return 0;
    if (owner) {
        cudaError_t e = cudaMemsetAsync(owner, 0, (size_t)slabs * sizeof *owner, s);
        if (e != cudaSuccess) return (int)e;
        k_scatter_owner<<<blocks_for(rows), THREADS, 0, s>>>(idx, idx64, rows, dims, owner);
    }
    k_scatter_nd<<<blocks_for(n), THREADS, 0, s>>>(es, idx, idx64, rows, dims, slab,
                                                   (uint8_t *)small, (uint8_t *)big, gather, owner);
    return last_error();
}

__global__ void k_gather(int es, const uint8_t *in, const void *idx, int idx64, uint8_t *out,
                         int64_t outer, int64_t extent, int64_t ni, int64_t inner) {
    GRID_LOOP(t, outer * ni * inner * es) {
        int64_t b = t % es, e = t / es;
        int64_t in_i = e % inner, j = (e / inner) % ni, o = e / (inner * ni);
        int64_t k = idx64 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
        if (k < 0) k += extent;
        out[t] = (k < 0 || k >= extent) ? 0 : in[((o * extent + k) * inner + in_i) * es + b];
    }
}

// TopKOffsets (cpu_top_k_offsets): a thread per line selects its k first elements in
// topk_order.h's order (the cpu backend's).
__global__ void k_top_k_offsets(const float *x, int64_t len, int64_t inner, int64_t lines,
                                int64_t k, int how, int64_t *idx, int64_t *off) {
    GRID_LOOP(l, lines) {
        int64_t o = l / inner, i = l % inner;
        oc_topk_line(x, o * len * inner + i, inner, len, k, how, idx, off, o * k * inner + i,
                     inner);
    }
}

extern "C" int cu_top_k_offsets(void *stream, const float *x, int64_t outer, int64_t len,
                                int64_t inner, int64_t k, int how, int64_t *idx, int64_t *off) {
    int64_t lines = outer * inner;
    if (lines == 0 || k == 0) return 0;
    k_top_k_offsets<<<blocks_for(lines), THREADS, 0, (cudaStream_t)stream>>>(x, len, inner, lines,
                                                                             k, how, idx, off);
    return last_error();
}

// ElementOffsets (cpu_element_offsets): an index outside the axis gives INT64_MAX, which
// Gather reads as 0 and GatherGrad skips (gg_index); the cpu backend fails there instead.
__global__ void k_element_offsets(const void *idx, int idx64, cu_shape id, cu_shape dd, int axis,
                                  int64_t *out, int64_t n) {
    GRID_LOOP(o, n) {
        int64_t v = idx64 ? ((const int64_t *)idx)[o] : ((const int32_t *)idx)[o];
        int64_t extent = dd.d[axis], rest = o, off = 0, stride = 1;
        if (v < -extent || v >= extent) {
            out[o] = INT64_MAX;
            continue;
        }
        for (int d = id.rank - 1; d >= 0; d--) {
            int64_t c = rest % id.d[d];
            rest /= id.d[d];
            off += (d == axis ? (v < 0 ? v + extent : v) : c) * stride;
            stride *= dd.d[d];
        }
        out[o] = off;
    }
}

extern "C" int cu_element_offsets(void *stream, const void *idx, int idx64, cu_shape id,
                                  cu_shape dd, int axis, int64_t *out) {
    int64_t n = numel(id);
    if (n == 0) return 0;
    k_element_offsets<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(idx, idx64, id, dd, axis,
                                                                           out, n);
    return last_error();
}

extern "C" int cu_gather(void *stream, int es, const void *in, const void *idx, int idx64,
                         void *out, int64_t outer, int64_t extent, int64_t ni, int64_t inner) {
    int64_t n = outer * ni * inner * es;
    if (n == 0) return 0;
    k_gather<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(
        es, (const uint8_t *)in, idx, idx64, (uint8_t *)out, outer, extent, ni, inner);
    return last_error();
}
