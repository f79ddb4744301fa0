/* emu_conv_ref.c — the CUDA emulator's reference convolutions (emu_conv_ref.h). */
#include "emu_conv_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *emu_xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fputs("emu cudnn: out of host memory\n", stderr);
        abort();
    }
    return p;
}

/* Range of o in [0, out) with 0 <= o * s - p + off < in. */
static void o_range(int64_t in, int64_t out, int64_t s, int64_t p, int64_t off, int64_t *lo,
                    int64_t *hi) {
    int64_t a = p - off; /* o * s >= a */
    *lo = a <= 0 ? 0 : (a + s - 1) / s;
    int64_t b = in - 1 + p - off; /* o * s <= b */
    *hi = b < 0 ? 0 : b / s + 1;
    if (*hi > out) *hi = out;
    if (*lo > *hi) *lo = *hi;
}

static int64_t widx(const cgeo *q, int64_t k, int64_t c, int64_t a, int64_t b, int64_t e) {
    if (q->flip) a = q->k[0] - 1 - a, b = q->k[1] - 1 - b, e = q->k[2] - 1 - e;
    return k * q->wstr[0] + c * q->wstr[1] + a * q->wstr[2] + b * q->wstr[3] + e * q->wstr[4];
}

static void conv_fwd(const conv_job *j) {
    const cgeo *q = &j->q;
    const float *x = j->in0, *w = j->in1;
    float *y = j->out;
    int64_t P = q->out[0] * q->out[1] * q->out[2];
    double *acc = emu_xcalloc((size_t)P, sizeof *acc);
    for (int64_t n = 0; n < q->N; n++)
        for (int64_t k = 0; k < q->K; k++) {
            int64_t g = k / q->kg;
            memset(acc, 0, (size_t)P * sizeof *acc);
            for (int64_t c = 0; c < q->cg; c++) {
                const float *xc = x + n * q->xs[0] + (g * q->cg + c) * q->xs[1];
                for (int64_t a = 0; a < q->k[0]; a++)
                    for (int64_t b = 0; b < q->k[1]; b++)
                        for (int64_t e = 0; e < q->k[2]; e++) {
                            double wv = w[widx(q, k, c, a, b, e)];
                            int64_t l0, h0, l1, h1, l2, h2;
                            o_range(q->in[0], q->out[0], q->str[0], q->pad[0], a * q->dil[0], &l0,
                                    &h0);
                            o_range(q->in[1], q->out[1], q->str[1], q->pad[1], b * q->dil[1], &l1,
                                    &h1);
                            o_range(q->in[2], q->out[2], q->str[2], q->pad[2], e * q->dil[2], &l2,
                                    &h2);
                            for (int64_t o0 = l0; o0 < h0; o0++) {
                                int64_t i0 = o0 * q->str[0] - q->pad[0] + a * q->dil[0];
                                for (int64_t o1 = l1; o1 < h1; o1++) {
                                    int64_t i1 = o1 * q->str[1] - q->pad[1] + b * q->dil[1];
                                    const float *xr = xc + i0 * q->xs[2] + i1 * q->xs[3];
                                    double *ar = acc + (o0 * q->out[1] + o1) * q->out[2];
                                    for (int64_t o2 = l2; o2 < h2; o2++)
                                        ar[o2] +=
                                            wv * xr[(o2 * q->str[2] - q->pad[2] + e * q->dil[2]) *
                                                    q->xs[4]];
                                }
                            }
                        }
            }
            float *yk = y + n * q->ys[0] + k * q->ys[1];
            for (int64_t o0 = 0; o0 < q->out[0]; o0++)
                for (int64_t o1 = 0; o1 < q->out[1]; o1++)
                    for (int64_t o2 = 0; o2 < q->out[2]; o2++) {
                        float *p = yk + o0 * q->ys[2] + o1 * q->ys[3] + o2 * q->ys[4];
                        *p = blend(j->alpha, acc[(o0 * q->out[1] + o1) * q->out[2] + o2], j->beta,
                                   p);
                    }
        }
    free(acc);
}

static void conv_bwd_data(const conv_job *j) {
    const cgeo *q = &j->q;
    const float *w = j->in0, *dy = j->in1;
    float *dx = j->out;
    int64_t P = q->in[0] * q->in[1] * q->in[2];
    double *acc = emu_xcalloc((size_t)P, sizeof *acc);
    for (int64_t n = 0; n < q->N; n++)
        for (int64_t ci = 0; ci < q->C; ci++) {
            int64_t g = ci / q->cg, c = ci % q->cg;
            memset(acc, 0, (size_t)P * sizeof *acc);
            for (int64_t k = g * q->kg; k < (g + 1) * q->kg; k++) {
                const float *dyk = dy + n * q->ys[0] + k * q->ys[1];
                for (int64_t a = 0; a < q->k[0]; a++)
                    for (int64_t b = 0; b < q->k[1]; b++)
                        for (int64_t e = 0; e < q->k[2]; e++) {
                            double wv = w[widx(q, k, c, a, b, e)];
                            int64_t l0, h0, l1, h1, l2, h2;
                            o_range(q->in[0], q->out[0], q->str[0], q->pad[0], a * q->dil[0], &l0,
                                    &h0);
                            o_range(q->in[1], q->out[1], q->str[1], q->pad[1], b * q->dil[1], &l1,
                                    &h1);
                            o_range(q->in[2], q->out[2], q->str[2], q->pad[2], e * q->dil[2], &l2,
                                    &h2);
                            for (int64_t o0 = l0; o0 < h0; o0++) {
                                int64_t i0 = o0 * q->str[0] - q->pad[0] + a * q->dil[0];
                                for (int64_t o1 = l1; o1 < h1; o1++) {
                                    int64_t i1 = o1 * q->str[1] - q->pad[1] + b * q->dil[1];
                                    const float *dr = dyk + o0 * q->ys[2] + o1 * q->ys[3];
                                    double *ar = acc + (i0 * q->in[1] + i1) * q->in[2];
                                    for (int64_t o2 = l2; o2 < h2; o2++)
                                        ar[o2 * q->str[2] - q->pad[2] + e * q->dil[2]] +=
                                            wv * dr[o2 * q->ys[4]];
                                }
                            }
                        }
            }
            float *dxc = dx + n * q->xs[0] + ci * q->xs[1];
            for (int64_t i0 = 0; i0 < q->in[0]; i0++)
                for (int64_t i1 = 0; i1 < q->in[1]; i1++)
                    for (int64_t i2 = 0; i2 < q->in[2]; i2++) {
                        float *p = dxc + i0 * q->xs[2] + i1 * q->xs[3] + i2 * q->xs[4];
                        *p = blend(j->alpha, acc[(i0 * q->in[1] + i1) * q->in[2] + i2], j->beta, p);
                    }
        }
    free(acc);
}

static void conv_bwd_filter(const conv_job *j) {
    const cgeo *q = &j->q;
    const float *x = j->in0, *dy = j->in1;
    float *dw = j->out;
    for (int64_t k = 0; k < q->K; k++) {
        int64_t g = k / q->kg;
        for (int64_t c = 0; c < q->cg; c++)
            for (int64_t a = 0; a < q->k[0]; a++)
                for (int64_t b = 0; b < q->k[1]; b++)
                    for (int64_t e = 0; e < q->k[2]; e++) {
                        double acc = 0;
                        int64_t l0, h0, l1, h1, l2, h2;
                        o_range(q->in[0], q->out[0], q->str[0], q->pad[0], a * q->dil[0], &l0, &h0);
                        o_range(q->in[1], q->out[1], q->str[1], q->pad[1], b * q->dil[1], &l1, &h1);
                        o_range(q->in[2], q->out[2], q->str[2], q->pad[2], e * q->dil[2], &l2, &h2);
                        for (int64_t n = 0; n < q->N; n++) {
                            const float *xc = x + n * q->xs[0] + (g * q->cg + c) * q->xs[1];
                            const float *dyk = dy + n * q->ys[0] + k * q->ys[1];
                            for (int64_t o0 = l0; o0 < h0; o0++) {
                                int64_t i0 = o0 * q->str[0] - q->pad[0] + a * q->dil[0];
                                for (int64_t o1 = l1; o1 < h1; o1++) {
                                    int64_t i1 = o1 * q->str[1] - q->pad[1] + b * q->dil[1];
                                    const float *xr = xc + i0 * q->xs[2] + i1 * q->xs[3];
                                    const float *dr = dyk + o0 * q->ys[2] + o1 * q->ys[3];
                                    for (int64_t o2 = l2; o2 < h2; o2++)
                                        acc += (double)
                                                   xr[(o2 * q->str[2] - q->pad[2] + e * q->dil[2]) *
                                                      q->xs[4]] *
                                               dr[o2 * q->ys[4]];
                                }
                            }
                        }
                        float *p = dw + widx(q, k, c, a, b, e);
                        *p = blend(j->alpha, acc, j->beta, p);
                    }
    }
}

void emu_conv_float(const conv_job *j) {
    if (j->kind == K_FWD) conv_fwd(j);
    else if (j->kind == K_BWD_DATA) conv_bwd_data(j);
    else conv_bwd_filter(j);
}
