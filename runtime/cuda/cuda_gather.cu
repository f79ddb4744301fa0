// cuda_gather.cu — Gather, GatherGrad (a counting sort, deterministic), GridSample and its
// gradient (the same sort), ScatterND, TopK's and GatherElements' offsets, SegmentMax.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

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

// ---- bicubic: 16 taps a point (grid_sample.h: oc_gs_cubic_*) ----
__device__ static inline void gs_cubic(const cu_gs_geo &g, const float *grid, int64_t j,
                                       oc_gs_cubic *t) {
    oc_gs_cubic_point(grid[j * 2], grid[j * 2 + 1], g.H, g.W, g.align, g.padding, t);
}

__global__ void k_grid_sample_cubic(const float *x, const float *grid, float *y, cu_gs_geo g,
                                    int64_t total) {
    GRID_LOOP(i, total) {
        int64_t q = i % g.P, nc = i / g.P, n = nc / g.C;
        oc_gs_cubic t;
        gs_cubic(g, grid, n * g.P + q, &t);
        y[i] = oc_gs_cubic_value(&t, x + nc * g.H * g.W);
    }
}

__global__ void k_grid_sample_cubic_dgrid(const float *dy, const float *x, const float *grid,
                                          float *dgrid, cu_gs_geo g, int64_t total) {
    GRID_LOOP(j, total) {
        int64_t n = j / g.P, q = j % g.P;
        oc_gs_cubic t;
        gs_cubic(g, grid, j, &t);
        float ax = 0.0f, ay = 0.0f;
        for (int64_t c = 0; c < g.C; c++)
            oc_gs_cubic_grid_grad(&t, x + (n * g.C + c) * g.H * g.W, dy[(n * g.C + c) * g.P + q],
                                  &ax, &ay);
        dgrid[j * 2] = ax * t.gx;
        dgrid[j * 2 + 1] = ay * t.gy;
    }
}

// ---- volumes: 8 taps a point (grid_sample.h: oc_gs_*3) ----
__device__ static inline void gs_taps3(const cu_gs_geo &g, const float *grid, int64_t j,
                                       oc_gs_taps3 *t) {
    oc_gs_point3(grid + j * 3, g.D, g.H, g.W, g.align, g.padding, g.mode, t);
}

__global__ void k_grid_sample3(const float *x, const float *grid, float *y, cu_gs_geo g,
                               int64_t total) {
    GRID_LOOP(i, total) {
        int64_t q = i % g.P, nc = i / g.P, n = nc / g.C;
        oc_gs_taps3 t;
        gs_taps3(g, grid, n * g.P + q, &t);
        const float *vol = x + nc * g.D * g.H * g.W;
        float s = 0.0f;
        for (int k = 0; k < 8; k++)
            if (t.off[k] >= 0) s += t.wt[k] * vol[t.off[k]];
        y[i] = s;
    }
}

__global__ void k_grid_sample3_dgrid(const float *dy, const float *x, const float *grid,
                                     float *dgrid, cu_gs_geo g, int64_t total) {
    GRID_LOOP(j, total) {
        int64_t n = j / g.P, q = j % g.P, S = g.D * g.H * g.W;
        oc_gs_taps3 t;
        gs_taps3(g, grid, j, &t);
        float acc[3] = {0.0f, 0.0f, 0.0f};
        for (int64_t c = 0; c < g.C; c++) {
            const float *vol = x + (n * g.C + c) * S;
            float v[8];
            for (int k = 0; k < 8; k++) v[k] = t.off[k] >= 0 ? vol[t.off[k]] : 0.0f;
            oc_gs_grid_grad3(&t, v, dy[(n * g.C + c) * g.P + q], acc);
        }
        bool near = g.mode == OC_GS_NEAREST;
        for (int ax = 0; ax < 3; ax++) dgrid[j * 3 + ax] = near ? 0.0f : acc[ax] * t.g[ax];
    }
}

// each point's bucket: the cell of its first tap in its volume (no tap: the extent, skipped)
__global__ void k_gs3_keys(const float *grid, cu_gs_geo g, int64_t *keys, int64_t total) {
    int64_t cells = (g.D + 1) * (g.H + 1) * (g.W + 1);
    GRID_LOOP(j, total) {
        int64_t cell = oc_gs_cell3(grid + j * 3, g.D, g.H, g.W, g.align, g.padding, g.mode);
        keys[j] = cell < 0 ? g.N * cells : (j / g.P) * cells + cell;
    }
}

// dX: one thread a voxel; the points whose tap k is that voxel sit in the bucket of the cell
// k steps back along (x, y, z), each bucket's in point order (a fixed order, run to run; one
// key a point where bicubic's entries take 16)
__global__ void k_gs3_dx(const float *dy, const float *grid, const unsigned long long *start,
                         const int64_t *order, float *dx, cu_gs_geo g, int64_t total) {
    int64_t S = g.D * g.H * g.W, cells = (g.D + 1) * (g.H + 1) * (g.W + 1);
    int taps = g.mode == OC_GS_NEAREST ? 1 : 8;
    GRID_LOOP(i, total) {
        int64_t v = i % S, nc = i / S, n = nc / g.C;
        int64_t xx = v % g.W, yy = v / g.W % g.H, zz = v / (g.W * g.H);
        float s = 0.0f;
        for (int k = 0; k < taps; k++) {
            int64_t x0 = xx - (k & 1), y0 = yy - ((k >> 1) & 1), z0 = zz - (k >> 2);
            int64_t b = n * cells + ((z0 + 1) * (g.H + 1) + (y0 + 1)) * (g.W + 1) + (x0 + 1);
            for (unsigned long long r = start[b]; r < start[b + 1]; r++) {
                int64_t j = order[r];
                oc_gs_taps3 t;
                gs_taps3(g, grid, j, &t);
                if (t.off[k] == v) s += t.wt[k] * dy[nc * g.P + j % g.P];
            }
        }
        dx[i] = s;
    }
}

// ---- bicubic's dX: each point's taps as entries (point j, tap k: j T + k), a counting sort
// of the entries by pixel, one thread a pixel summing its entries in ascending order, the cpu
// kernel's (point by point, tap by tap). Padding maps a tap anywhere (border: every point left
// of the image taps column 0), so no neighbourhood of cells holds a pixel's points. ----
struct gs_cubic_taps { // bicubic: 16 taps
    static const int T = 16;
    oc_gs_cubic t;
    __device__ void at(const cu_gs_geo &g, const float *grid, int64_t j) {
        gs_cubic(g, grid, j, &t);
    }
    __device__ int64_t off(int k) const { return t.off[k]; }
    __device__ float wt(int k) const { return t.wx[k % 4] * t.wy[k / 4]; }
};
// each entry's bucket: its pixel in its sample (S pixels; no tap: the extent N S, skipped)
template <typename Taps>
__global__ void k_gs_entry_keys(const float *grid, cu_gs_geo g, int64_t S, int64_t *keys,
                                int64_t total) {
    GRID_LOOP(j, total) {
        Taps p;
        p.at(g, grid, j);
        for (int k = 0; k < Taps::T; k++)
            keys[j * Taps::T + k] = p.off(k) < 0 ? g.N * S : (j / g.P) * S + p.off(k);
    }
}

template <typename Taps>
__global__ void k_gs_entry_dx(const float *dy, const float *grid, const unsigned long long *start,
                              const int64_t *order, float *dx, cu_gs_geo g, int64_t S,
                              int64_t total) {
    GRID_LOOP(i, total) {
        int64_t nc = i / S, b = (nc / g.C) * S + i % S;
        float s = 0.0f;
        for (unsigned long long r = start[b]; r < start[b + 1]; r++) {
            int64_t j = order[r] / Taps::T, k = order[r] % Taps::T;
            Taps p;
            p.at(g, grid, j);
            s += p.wt((int)k) * dy[nc * g.P + j % g.P];
        }
        dx[i] = s;
    }
}

// dX (X's samples of S pixels each) by entries; ws: cu_grid_sample_scratch's
template <typename Taps>
static int gs_entry_dx(cudaStream_t st, const float *dy, const float *grid, float *out, cu_gs_geo g,
                       int64_t S, int64_t *ws) {
    int64_t np = g.N * g.P, ne = np * Taps::T, total = g.N * g.C * S;
    if (total == 0) return 0;
    int64_t *order;
    if (np > 0) k_gs_entry_keys<Taps><<<blocks_for(np), THREADS, 0, st>>>(grid, g, S, ws, np);
    unsigned long long *start = gg_buckets(st, ws, 1, ne, g.N * S, -1, ws + ne, &order);
    k_gs_entry_dx<Taps>
        <<<blocks_for(total), THREADS, 0, st>>>(dy, grid, start, order, out, g, S, total);
    return last_error();
}

extern "C" int64_t cu_grid_sample_scratch(cu_gs_geo g) {
    if (g.D > 0) { /* the points' keys, the cells' counters, the points' order */
        int64_t np = g.N * g.P, m = g.N * (g.D + 1) * (g.H + 1) * (g.W + 1) + 1;
        return np + 2 * m + np;
    }
    if (g.mode == OC_GS_BICUBIC) { /* the entries' keys, the counters, their order */
        int64_t ne = g.N * g.P * gs_cubic_taps::T, m = g.N * g.H * g.W + 1;
        return ne + 2 * m + ne;
    }
    int64_t np = g.N * g.P, m = g.N * (g.H + 1) * (g.W + 1) + 1;
    return np + 2 * m + np; /* int64s: the keys, the counters, the order */
}

extern "C" int cu_grid_sample(void *stream, const float *x, const float *grid, float *y,
                              cu_gs_geo g) {
    int64_t total = g.N * g.C * g.P;
    if (total == 0) return 0;
    if (g.D > 0)
        k_grid_sample3<<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(x, grid, y, g,
                                                                                total);
    else if (g.mode == OC_GS_BICUBIC)
        k_grid_sample_cubic<<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(x, grid, y, g,
                                                                                     total);
    else
        k_grid_sample<<<blocks_for(total), THREADS, 0, (cudaStream_t)stream>>>(x, grid, y, g,
                                                                               total);
    return last_error();
}

extern "C" int cu_grid_sample_grad(void *stream, int input, const float *dy, const float *x,
                                   const float *grid, float *out, cu_gs_geo g, int64_t *ws) {
    cudaStream_t st = (cudaStream_t)stream;
    int64_t np = g.N * g.P;
    if (g.D > 0 && input == 0) { /* a volume's dX: its points sorted by cell */
        int64_t total = g.N * g.C * g.D * g.H * g.W,
                extent = g.N * (g.D + 1) * (g.H + 1) * (g.W + 1);
        if (total == 0) return 0;
        int64_t *order;
        if (np > 0) k_gs3_keys<<<blocks_for(np), THREADS, 0, st>>>(grid, g, ws, np);
        unsigned long long *start = gg_buckets(st, ws, 1, np, extent, -1, ws + np, &order);
        k_gs3_dx<<<blocks_for(total), THREADS, 0, st>>>(dy, grid, start, order, out, g, total);
        return last_error();
    }
    if (g.D > 0 || g.mode == OC_GS_BICUBIC) {
        if (input == 0) return gs_entry_dx<gs_cubic_taps>(st, dy, grid, out, g, g.H * g.W, ws);
        if (np > 0 && g.D > 0)
            k_grid_sample3_dgrid<<<blocks_for(np), THREADS, 0, st>>>(dy, x, grid, out, g, np);
        else if (np > 0)
            k_grid_sample_cubic_dgrid<<<blocks_for(np), THREADS, 0, st>>>(dy, x, grid, out, g, np);
        return last_error();
    }
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

// ---- SegmentMax / SegmentMaxGrad (cpu_bags.c): a thread per output element ----
__global__ void k_segment_max(const float *x, const int64_t *bound, float *y, int64_t *arg,
                              int64_t n, int64_t len, int64_t inner) {
    GRID_LOOP(o, n * inner) {
        int64_t i = o / inner, d = o % inner;
        int64_t lo = bound[i], hi = bound[i + 1];
        lo = lo < 0 ? 0 : lo > len ? len : lo;
        hi = hi < lo ? lo : hi > len ? len : hi;
        float best = 0.0f;
        int64_t at = -1;
        for (int64_t k = lo; k < hi; k++) {
            float v = x[k * inner + d];
            if (at < 0 || v > best || (v != v && best == best)) best = v, at = k;
        }
        y[o] = best;
        if (arg) arg[o] = at;
    }
}

extern "C" int cu_segment_max(void *stream, const float *x, const int64_t *bound, float *y,
                              int64_t *arg, int64_t n, int64_t len, int64_t inner) {
    if (n * inner == 0) return 0;
    k_segment_max<<<blocks_for(n * inner), THREADS, 0, (cudaStream_t)stream>>>(x, bound, y, arg, n,
                                                                               len, inner);
    return last_error();
}

// Each row is in one bag, so no two elements of dy write one of dx.
__global__ void k_segment_max_grad(const float *dy, const int64_t *arg, float *dx, int64_t m,
                                   int64_t len, int64_t inner) {
    GRID_LOOP(o, m) {
        int64_t k = arg[o];
        if (k >= 0 && k < len) dx[k * inner + o % inner] = dy[o];
    }
}

extern "C" int cu_segment_max_grad(void *stream, const float *dy, const int64_t *arg, float *dx,
                                   int64_t n, int64_t len, int64_t inner) {
    cudaStream_t s = (cudaStream_t)stream;
    if (len * inner > 0) {
        int rc = (int)cudaMemsetAsync(dx, 0, (size_t)(len * inner) * sizeof(float), s);
        if (rc) return rc;
    }
    if (n * inner == 0) return 0;
    k_segment_max_grad<<<blocks_for(n * inner), THREADS, 0, s>>>(dy, arg, dx, n * inner, len,
                                                                 inner);
    return last_error();
}
