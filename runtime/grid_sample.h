/* grid_sample.h — GridSample's arithmetic, written once for every backend (cpu_grid_sample.c,
 * cuda_gather.cu) as PyTorch's grid_sampler_2d computes it: a grid coordinate in [-1, 1]
 * unnormalized to the input's pixels (align_corners: -1 and 1 are the corner pixels'
 * centres; else their outer edges), then padded (zeros: taps outside read 0; border: clipped
 * to [0, size - 1]; reflection: mirrored at the edges, then clipped), each step's derivative
 * carried along for the grid's gradient. Bilinear: four taps weighted by the fractions;
 * nearest: the tap nearest (half to even). A coordinate that is not finite takes no tap.
 * Bicubic (oc_gs_cubic_*): 16 taps, the coordinate unnormalized but not padded, each tap
 * padded on its own, cubic convolution weights with A = -0.75 (PyTorch's bicubic grid_sample,
 * ONNX's cubic). Volumes (oc_gs_*3: X [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] of (x, y, z)):
 * trilinear (8 taps) or nearest, each axis padded as above. Plain C: C and CUDA C++ include
 * it alike. */
#ifndef OC_GRID_SAMPLE_H
#define OC_GRID_SAMPLE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define OC_GS_HD __host__ __device__
#else
#define OC_GS_HD
#endif

enum { OC_GS_BILINEAR, OC_GS_NEAREST, OC_GS_BICUBIC };
enum { OC_GS_ZEROS, OC_GS_BORDER, OC_GS_REFLECTION };

/* x clipped to [0, limit]; *g the derivative (0 where clipped). */
OC_GS_HD static inline float oc_gs_clip(float x, float limit, float *g) {
    if (x < 0.0f) {
        *g = 0.0f;
        return 0.0f;
    }
    if (x > limit) {
        *g = 0.0f;
        return limit;
    }
    *g = 1.0f;
    return x;
}

/* x mirrored into [twice_low / 2, twice_high / 2]; *g the derivative (+1 or -1). */
OC_GS_HD static inline float oc_gs_reflect(float x, int64_t twice_low, int64_t twice_high,
                                           float *g) {
    if (twice_low == twice_high) {
        *g = 0.0f;
        return 0.0f;
    }
    float lo = (float)twice_low / 2, span = (float)(twice_high - twice_low) / 2, sign = 1.0f;
    x -= lo;
    if (x < 0.0f) sign = -1.0f, x = -x;
    float extra = fmodf(x, span);
    int64_t flips = (int64_t)floorf(x / span);
    *g = flips % 2 == 0 ? sign : -sign;
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/* Grid coordinate v along an axis of `size` pixels in pixels (align_corners: -1 and 1 the
 * corner pixels' centres; else their outer edges); *d its derivative. */
OC_GS_HD static inline float oc_gs_unnormalize(float v, int64_t size, bool align, float *d) {
    if (align) {
        *d = (float)(size - 1) / 2.0f;
        return (v + 1.0f) / 2.0f * (float)(size - 1);
    }
    *d = (float)size / 2.0f;
    return ((v + 1.0f) * (float)size - 1.0f) / 2.0f;
}

/* The source coordinate along an axis of `size` pixels of grid coordinate v; *g its
 * derivative with respect to v. */
OC_GS_HD static inline float oc_gs_source(float v, int64_t size, bool align, int padding,
                                          float *g) {
    float d, gp = 1.0f, gc = 1.0f;
    float x = oc_gs_unnormalize(v, size, align, &d);
    if (padding == OC_GS_BORDER) {
        x = oc_gs_clip(x, (float)(size - 1), &gc);
    } else if (padding == OC_GS_REFLECTION) {
        x = align ? oc_gs_reflect(x, 0, 2 * (size - 1), &gp)
                  : oc_gs_reflect(x, -1, 2 * size - 1, &gp);
        x = oc_gs_clip(x, (float)(size - 1), &gc);
    }
    *g = d * gp * gc;
    return x;
}

/* One grid point's taps in a plane of h x w pixels: off[k] the row-major offset of tap k
 * (-1 outside), wt[k] its weight; bilinear: nw, ne, sw, se; nearest: tap 0 only. fx, fy:
 * the fractions past the north-west tap; gx, gy: d(source)/d(grid). Returns the taps. */
typedef struct oc_gs_taps {
    int64_t off[4];
    float wt[4], fx, fy, gx, gy;
} oc_gs_taps;

OC_GS_HD static inline int64_t oc_gs_at(int64_t x, int64_t y, int64_t w, int64_t h) {
    return x >= 0 && x < w && y >= 0 && y < h ? y * w + x : -1;
}

OC_GS_HD static inline void oc_gs_point(float gx, float gy, int64_t h, int64_t w, bool align,
                                        int padding, int mode, oc_gs_taps *t) {
    float ix = oc_gs_source(gx, w, align, padding, &t->gx);
    float iy = oc_gs_source(gy, h, align, padding, &t->gy);
    for (int k = 0; k < 4; k++) t->off[k] = -1, t->wt[k] = 0.0f;
    t->fx = t->fy = 0.0f;
    /* far outside (or not finite): no tap; within, the int64 conversions are exact */
    if (!(ix > -2.0f && ix < (float)w + 1.0f && iy > -2.0f && iy < (float)h + 1.0f)) return;
    if (mode == OC_GS_NEAREST) {
        t->off[0] = oc_gs_at((int64_t)nearbyintf(ix), (int64_t)nearbyintf(iy), w, h);
        t->wt[0] = 1.0f;
        return;
    }
    float x0 = floorf(ix), y0 = floorf(iy);
    int64_t x = (int64_t)x0, y = (int64_t)y0;
    t->fx = ix - x0, t->fy = iy - y0;
    t->off[0] = oc_gs_at(x, y, w, h), t->wt[0] = (1.0f - t->fx) * (1.0f - t->fy);
    t->off[1] = oc_gs_at(x + 1, y, w, h), t->wt[1] = t->fx * (1.0f - t->fy);
    t->off[2] = oc_gs_at(x, y + 1, w, h), t->wt[2] = (1.0f - t->fx) * t->fy;
    t->off[3] = oc_gs_at(x + 1, y + 1, w, h), t->wt[3] = t->fx * t->fy;
}

/* The cell of a point's first tap (bilinear: the north-west one, (x0, y0) in [-1, w) x
 * [-1, h); nearest: its tap) in a (w + 1) x (h + 1) grid of cells, (x0 + 1, y0 + 1): the
 * bucket cuda's deterministic dX finds a pixel's points in. -1: no tap inside. */
OC_GS_HD static inline int64_t oc_gs_cell(float gx, float gy, int64_t h, int64_t w, bool align,
                                          int padding, int mode) {
    float g;
    float ix = oc_gs_source(gx, w, align, padding, &g),
          iy = oc_gs_source(gy, h, align, padding, &g);
    if (!(ix > -2.0f && ix < (float)w + 1.0f && iy > -2.0f && iy < (float)h + 1.0f)) return -1;
    bool near = mode == OC_GS_NEAREST;
    int64_t x = (int64_t)(near ? nearbyintf(ix) : floorf(ix));
    int64_t y = (int64_t)(near ? nearbyintf(iy) : floorf(iy));
    int64_t lo = near ? 0 : -1;
    if (x < lo || x >= w || y < lo || y >= h) return -1;
    return (y + 1) * (w + 1) + (x + 1);
}

/* d(loss)/d(grid x, y) of one point in one plane: v the four taps' values (0 outside), d the
 * output's gradient; accumulated into *ax, *ay (before the points' gx, gy factors). */
OC_GS_HD static inline void oc_gs_grid_grad(const oc_gs_taps *t, const float v[4], float d,
                                            float *ax, float *ay) {
    *ax += ((v[1] - v[0]) * (1.0f - t->fy) + (v[3] - v[2]) * t->fy) * d;
    *ay += ((v[2] - v[0]) * (1.0f - t->fx) + (v[3] - v[1]) * t->fx) * d;
}

/* ---- bicubic ---- */

/* One grid point's 16 taps: off[4 j + i] the offset of column x0 - 1 + i, row y0 - 1 + j
 * (x0, y0 the floors of the source coordinates) after padding (-1: none), wx, wy the taps'
 * weights along x and y, dwx, dwy their derivatives along the source coordinate, gx, gy:
 * d(source)/d(grid) (padding does not enter, as in PyTorch's). */
typedef struct oc_gs_cubic {
    int64_t off[16];
    float wx[4], wy[4], dwx[4], dwy[4], gx, gy;
} oc_gs_cubic;

/* The cubic convolution weights (A = -0.75) of taps -1, 0, 1, 2 at fraction t, and their
 * derivatives along t. */
OC_GS_HD static inline void oc_gs_cubic_coeffs(float t, float w[4], float d[4]) {
    const float A = -0.75f;
    float x = t + 1.0f, u = 1.0f - t, z = 2.0f - t;
    w[0] = ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
    w[1] = ((A + 2.0f) * t - (A + 3.0f)) * t * t + 1.0f;
    w[2] = ((A + 2.0f) * u - (A + 3.0f)) * u * u + 1.0f;
    w[3] = ((A * z - 5.0f * A) * z + 8.0f * A) * z - 4.0f * A;
    d[0] = (3.0f * A * x - 10.0f * A) * x + 8.0f * A;
    d[1] = (3.0f * (A + 2.0f) * t - 2.0f * (A + 3.0f)) * t;
    d[2] = -(3.0f * (A + 2.0f) * u - 2.0f * (A + 3.0f)) * u;
    d[3] = -((3.0f * A * z - 10.0f * A) * z + 8.0f * A);
}

/* Pixel c of an axis of `size` after padding (zeros: as it is; border: clipped; reflection:
 * mirrored, then clipped), or -1 outside. */
OC_GS_HD static inline int64_t oc_gs_cubic_tap(int64_t c, int64_t size, bool align, int padding) {
    float x = (float)c, g;
    if (padding == OC_GS_REFLECTION)
        x = align ? oc_gs_reflect(x, 0, 2 * (size - 1), &g)
                  : oc_gs_reflect(x, -1, 2 * size - 1, &g);
    if (padding != OC_GS_ZEROS) x = oc_gs_clip(x, (float)(size - 1), &g);
    int64_t i = (int64_t)x;
    return i >= 0 && i < size ? i : -1;
}

/* A coordinate beyond 2^30 pixels or not finite takes no tap (no weights either). */
OC_GS_HD static inline void oc_gs_cubic_point(float gx, float gy, int64_t h, int64_t w, bool align,
                                              int padding, oc_gs_cubic *t) {
    float ix = oc_gs_unnormalize(gx, w, align, &t->gx);
    float iy = oc_gs_unnormalize(gy, h, align, &t->gy);
    for (int k = 0; k < 16; k++) t->off[k] = -1;
    for (int k = 0; k < 4; k++) t->wx[k] = t->wy[k] = t->dwx[k] = t->dwy[k] = 0.0f;
    if (!(fabsf(ix) < 1073741824.0f && fabsf(iy) < 1073741824.0f)) return;
    float x0 = floorf(ix), y0 = floorf(iy);
    oc_gs_cubic_coeffs(ix - x0, t->wx, t->dwx);
    oc_gs_cubic_coeffs(iy - y0, t->wy, t->dwy);
    for (int j = 0; j < 4; j++) {
        int64_t r = oc_gs_cubic_tap((int64_t)y0 - 1 + j, h, align, padding);
        for (int i = 0; i < 4; i++) {
            int64_t c = oc_gs_cubic_tap((int64_t)x0 - 1 + i, w, align, padding);
            t->off[4 * j + i] = r >= 0 && c >= 0 ? r * w + c : -1;
        }
    }
}

/* The point's value in one plane: each row of taps along x, then the rows along y (PyTorch's
 * order). */
OC_GS_HD static inline float oc_gs_cubic_value(const oc_gs_cubic *t, const float *plane) {
    float row[4];
    for (int j = 0; j < 4; j++) {
        float v[4];
        for (int i = 0; i < 4; i++) v[i] = t->off[4 * j + i] >= 0 ? plane[t->off[4 * j + i]] : 0.0f;
        row[j] = v[0] * t->wx[0] + v[1] * t->wx[1] + v[2] * t->wx[2] + v[3] * t->wx[3];
    }
    return row[0] * t->wy[0] + row[1] * t->wy[1] + row[2] * t->wy[2] + row[3] * t->wy[3];
}

/* d(loss)/d(source x, y) of one point in one plane, d the output's gradient, accumulated into
 * *ax, *ay (before the point's gx, gy factors). */
OC_GS_HD static inline void oc_gs_cubic_grid_grad(const oc_gs_cubic *t, const float *plane, float d,
                                                  float *ax, float *ay) {
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            int64_t o = t->off[4 * j + i];
            float v = o >= 0 ? plane[o] : 0.0f;
            *ax += v * t->dwx[i] * t->wy[j] * d;
            *ay += v * t->dwy[j] * t->wx[i] * d;
        }
}

/* ---- volumes ---- */

/* One grid point's taps in a volume of d x h x w voxels: tap k = (k & 1, (k >> 1) & 1, k >> 2)
 * steps along (x, y, z) past the low corner (trilinear; nearest: tap 0 only), off[k] its
 * row-major offset (-1 outside), wt[k] its weight; f: the fractions past the low corner; g:
 * d(source)/d(grid) along x, y, z. */
typedef struct oc_gs_taps3 {
    int64_t off[8];
    float wt[8], f[3], g[3];
} oc_gs_taps3;

OC_GS_HD static inline int64_t oc_gs_at3(int64_t x, int64_t y, int64_t z, int64_t w, int64_t h,
                                         int64_t d) {
    return x >= 0 && x < w && y >= 0 && y < h && z >= 0 && z < d ? (z * h + y) * w + x : -1;
}

/* The weight of tap k along axis a (0 x, 1 y, 2 z) of fractions f. */
OC_GS_HD static inline float oc_gs_w3(const float f[3], int k, int a) {
    return (k >> a) & 1 ? f[a] : 1.0f - f[a];
}

OC_GS_HD static inline void oc_gs_point3(const float *xyz, int64_t d, int64_t h, int64_t w,
                                         bool align, int padding, int mode, oc_gs_taps3 *t) {
    float ix = oc_gs_source(xyz[0], w, align, padding, &t->g[0]);
    float iy = oc_gs_source(xyz[1], h, align, padding, &t->g[1]);
    float iz = oc_gs_source(xyz[2], d, align, padding, &t->g[2]);
    for (int k = 0; k < 8; k++) t->off[k] = -1, t->wt[k] = 0.0f;
    t->f[0] = t->f[1] = t->f[2] = 0.0f;
    /* far outside (or not finite): no tap; within, the int64 conversions are exact */
    if (!(ix > -2.0f && ix < (float)w + 1.0f && iy > -2.0f && iy < (float)h + 1.0f && iz > -2.0f &&
          iz < (float)d + 1.0f))
        return;
    if (mode == OC_GS_NEAREST) {
        t->off[0] = oc_gs_at3((int64_t)nearbyintf(ix), (int64_t)nearbyintf(iy),
                              (int64_t)nearbyintf(iz), w, h, d);
        t->wt[0] = 1.0f;
        return;
    }
    float x0 = floorf(ix), y0 = floorf(iy), z0 = floorf(iz);
    t->f[0] = ix - x0, t->f[1] = iy - y0, t->f[2] = iz - z0;
    for (int k = 0; k < 8; k++) {
        t->off[k] = oc_gs_at3((int64_t)x0 + (k & 1), (int64_t)y0 + ((k >> 1) & 1),
                              (int64_t)z0 + (k >> 2), w, h, d);
        t->wt[k] = oc_gs_w3(t->f, k, 0) * oc_gs_w3(t->f, k, 1) * oc_gs_w3(t->f, k, 2);
    }
}

/* The cell of a point's first tap (trilinear: the low corner, in [-1, w) x [-1, h) x [-1, d);
 * nearest: its tap) in a (w + 1) x (h + 1) x (d + 1) grid of cells, as oc_gs_cell in 2-D: the
 * bucket cuda's deterministic dX finds a voxel's points in. -1: no tap inside. */
OC_GS_HD static inline int64_t oc_gs_cell3(const float *xyz, int64_t d, int64_t h, int64_t w,
                                           bool align, int padding, int mode) {
    float g;
    float ix = oc_gs_source(xyz[0], w, align, padding, &g);
    float iy = oc_gs_source(xyz[1], h, align, padding, &g);
    float iz = oc_gs_source(xyz[2], d, align, padding, &g);
    if (!(ix > -2.0f && ix < (float)w + 1.0f && iy > -2.0f && iy < (float)h + 1.0f && iz > -2.0f &&
          iz < (float)d + 1.0f))
        return -1;
    bool near = mode == OC_GS_NEAREST;
    int64_t x = (int64_t)(near ? nearbyintf(ix) : floorf(ix));
    int64_t y = (int64_t)(near ? nearbyintf(iy) : floorf(iy));
    int64_t z = (int64_t)(near ? nearbyintf(iz) : floorf(iz));
    int64_t lo = near ? 0 : -1;
    if (x < lo || x >= w || y < lo || y >= h || z < lo || z >= d) return -1;
    return ((z + 1) * (h + 1) + (y + 1)) * (w + 1) + (x + 1);
}

/* d(loss)/d(source x, y, z) of one trilinear point in one volume: v the taps' values (0
 * outside), d the output's gradient, accumulated into a[3] (before the point's g factors). */
OC_GS_HD static inline void oc_gs_grid_grad3(const oc_gs_taps3 *t, const float v[8], float d,
                                             float a[3]) {
    for (int k = 0; k < 8; k++)
        for (int ax = 0; ax < 3; ax++) {
            float s = (k >> ax) & 1 ? 1.0f : -1.0f;
            int b = ax == 0 ? 1 : 0, c = ax == 2 ? 1 : 2; /* the other two axes */
            a[ax] += s * oc_gs_w3(t->f, k, b) * oc_gs_w3(t->f, k, c) * v[k] * d;
        }
}

#endif
