/* cpu_grid_sample.c — GridSample and GridSampleGrad (runtime/grid_sample.h): per grid point,
 * its taps once (bilinear and nearest: 4 at most; bicubic: 16; a volume's trilinear: 8), then
 * every channel. The gradient: dX scattered back with the taps' weights in point order
 * (deterministic), dGrid the derivative of each output along each axis summed over the
 * channels. Float32. Shapes: X [N, C, H, W], grid [N, Ho, Wo, 2], Y [N, C, Ho, Wo];
 * volumes X [N, C, D, H, W], grid [N, Do, Ho, Wo, 3], Y [N, C, Do, Ho, Wo]. */
#include <string.h>

#include "cpu_internal.h"
#include "grid_sample.h"

typedef struct gs_geo {
    int64_t N, C, D, H, W, P; /* P = (Do *) Ho * Wo; D: 1 but for a volume */
    bool vol;                 /* X [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] */
    const op_grid_sample_args *p;
} gs_geo;

static int geometry(const kernel_args *a, int xi, gs_geo *g, oc_err *err) {
    const ir_tensor *x = kernel_in(a, xi), *grid = kernel_in(a, xi + 1);
    if (kernel_want_dtype(a, x, IR_DTYPE_FLOAT, err) ||
        kernel_want_dtype(a, grid, IR_DTYPE_FLOAT, err))
        return OC_ERR;
    bool vol = x->rank == 5;
    *g = (gs_geo){.N = x->dims[0],
                  .C = x->dims[1],
                  .D = vol ? x->dims[2] : 1,
                  .H = x->dims[vol ? 3 : 2],
                  .W = x->dims[vol ? 4 : 3],
                  .P = grid->dims[1] * grid->dims[2] * (vol ? grid->dims[3] : 1),
                  .vol = vol,
                  .p = &op_args_of(a->n)->grid_sample};
    return OC_OK;
}

/* ---- volumes: trilinear or nearest, 8 taps at most ---- */

static void taps3_of(const gs_geo *g, const float *grid, int64_t n, int64_t q, oc_gs_taps3 *t) {
    oc_gs_point3(grid + (n * g->P + q) * 3, g->D, g->H, g->W, g->p->align_corners, g->p->padding,
                 g->p->mode, t);
}

static void volume_forward(const gs_geo *g, const float *x, const float *grid, float *y) {
    int64_t S = g->D * g->H * g->W;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t q = 0; q < g->P; q++) {
            oc_gs_taps3 t;
            taps3_of(g, grid, n, q, &t);
            for (int64_t c = 0; c < g->C; c++) {
                const float *vol = x + (n * g->C + c) * S;
                float s = 0.0f;
                for (int k = 0; k < 8; k++)
                    if (t.off[k] >= 0) s += t.wt[k] * vol[t.off[k]];
                y[(n * g->C + c) * g->P + q] = s;
            }
        }
}

static void volume_backward(const gs_geo *g, const float *dy, const float *x, const float *grid,
                            float *out) {
    int64_t S = g->D * g->H * g->W;
    bool dx = g->p->input == 0, near = g->p->mode == OC_GS_NEAREST;
    if (dx) memset(out, 0, (size_t)(g->N * g->C * S) * sizeof(float));
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t q = 0; q < g->P; q++) {
            oc_gs_taps3 t;
            taps3_of(g, grid, n, q, &t);
            float acc[3] = {0.0f, 0.0f, 0.0f};
            for (int64_t c = 0; c < g->C; c++) {
                float d = dy[(n * g->C + c) * g->P + q];
                if (dx) {
                    float *vol = out + (n * g->C + c) * S;
                    for (int k = 0; k < 8; k++)
                        if (t.off[k] >= 0) vol[t.off[k]] += t.wt[k] * d;
                    continue;
                }
                const float *vol = x + (n * g->C + c) * S;
                float v[8];
                for (int k = 0; k < 8; k++) v[k] = t.off[k] >= 0 ? vol[t.off[k]] : 0.0f;
                oc_gs_grid_grad3(&t, v, d, acc);
            }
            if (!dx) /* nearest: no gradient, 0 */
                for (int ax = 0; ax < 3; ax++)
                    out[(n * g->P + q) * 3 + ax] = near ? 0.0f : acc[ax] * t.g[ax];
        }
}

static void taps_of(const gs_geo *g, const float *grid, int64_t n, int64_t q, oc_gs_taps *t) {
    const float *xy = grid + (n * g->P + q) * 2;
    oc_gs_point(xy[0], xy[1], g->H, g->W, g->p->align_corners, g->p->padding, g->p->mode, t);
}

static void cubic_of(const gs_geo *g, const float *grid, int64_t n, int64_t q, oc_gs_cubic *t) {
    const float *xy = grid + (n * g->P + q) * 2;
    oc_gs_cubic_point(xy[0], xy[1], g->H, g->W, g->p->align_corners, g->p->padding, t);
}

/* Bicubic: Y, or (grad) dX or dGrid, as the bilinear paths below with 16 taps. */
static void cubic_forward(const gs_geo *g, const float *x, const float *grid, float *y) {
    int64_t S = g->H * g->W;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t q = 0; q < g->P; q++) {
            oc_gs_cubic t;
            cubic_of(g, grid, n, q, &t);
            for (int64_t c = 0; c < g->C; c++)
                y[(n * g->C + c) * g->P + q] = oc_gs_cubic_value(&t, x + (n * g->C + c) * S);
        }
}

static void cubic_backward(const gs_geo *g, const float *dy, const float *x, const float *grid,
                           float *out) {
    int64_t S = g->H * g->W;
    bool dx = g->p->input == 0;
    if (dx) memset(out, 0, (size_t)(g->N * g->C * S) * sizeof(float));
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t q = 0; q < g->P; q++) {
            oc_gs_cubic t;
            cubic_of(g, grid, n, q, &t);
            float ax = 0.0f, ay = 0.0f;
            for (int64_t c = 0; c < g->C; c++) {
                float d = dy[(n * g->C + c) * g->P + q];
                if (!dx) {
                    oc_gs_cubic_grid_grad(&t, x + (n * g->C + c) * S, d, &ax, &ay);
                    continue;
                }
                float *plane = out + (n * g->C + c) * S;
                for (int k = 0; k < 16; k++)
                    if (t.off[k] >= 0) plane[t.off[k]] += t.wx[k % 4] * t.wy[k / 4] * d;
            }
            if (!dx) out[(n * g->P + q) * 2] = ax * t.gx, out[(n * g->P + q) * 2 + 1] = ay * t.gy;
        }
}

int cpu_grid_sample(const kernel_args *a, oc_err *err) {
    gs_geo g;
    if (geometry(a, 0, &g, err)) return OC_ERR;
    const float *x = a->in[0], *grid = a->in[1];
    float *y = a->out[0];
    if (g.vol || g.p->mode == OC_GS_BICUBIC) {
        (g.vol ? volume_forward : cubic_forward)(&g, x, grid, y);
        return OC_OK;
    }
    int64_t S = g.H * g.W;
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t q = 0; q < g.P; q++) {
            oc_gs_taps t;
            taps_of(&g, grid, n, q, &t);
            for (int64_t c = 0; c < g.C; c++) {
                const float *plane = x + (n * g.C + c) * S;
                float s = 0.0f;
                for (int k = 0; k < 4; k++)
                    if (t.off[k] >= 0) s += t.wt[k] * plane[t.off[k]];
                y[(n * g.C + c) * g.P + q] = s;
            }
        }
    return OC_OK;
}

/* GridSampleGrad(dY, X, grid) -> dX (input 0) or dGrid (input 1). */
int cpu_grid_sample_grad(const kernel_args *a, oc_err *err) {
    gs_geo g;
    if (geometry(a, 1, &g, err)) return OC_ERR;
    const float *dy = a->in[0], *x = a->in[1], *grid = a->in[2];
    float *out = a->out[0];
    if (g.vol || g.p->mode == OC_GS_BICUBIC) {
        (g.vol ? volume_backward : cubic_backward)(&g, dy, x, grid, out);
        return OC_OK;
    }
    int64_t S = g.H * g.W;
    bool dx = g.p->input == 0;
    if (dx) memset(out, 0, (size_t)(g.N * g.C * S) * sizeof(float));
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t q = 0; q < g.P; q++) {
            oc_gs_taps t;
            taps_of(&g, grid, n, q, &t);
            float ax = 0.0f, ay = 0.0f;
            for (int64_t c = 0; c < g.C; c++) {
                float d = dy[(n * g.C + c) * g.P + q];
                if (dx) {
                    float *plane = out + (n * g.C + c) * S;
                    for (int k = 0; k < 4; k++)
                        if (t.off[k] >= 0) plane[t.off[k]] += t.wt[k] * d;
                    continue;
                }
                const float *plane = x + (n * g.C + c) * S;
                float v[4];
                for (int k = 0; k < 4; k++) v[k] = t.off[k] >= 0 ? plane[t.off[k]] : 0.0f;
                oc_gs_grid_grad(&t, v, d, &ax, &ay);
            }
            if (!dx) {
                bool near = g.p->mode == OC_GS_NEAREST; /* no gradient: 0 */
                out[(n * g.P + q) * 2] = near ? 0.0f : ax * t.gx;
                out[(n * g.P + q) * 2 + 1] = near ? 0.0f : ay * t.gy;
            }
        }
    return OC_OK;
}
