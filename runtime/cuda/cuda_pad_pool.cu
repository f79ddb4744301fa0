// cuda_pad_pool.cu — Pad and its gradient, row copies, pooling (max, average, global) and their
// gradients.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

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
