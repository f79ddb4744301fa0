/* emu_conv_ref.h — the CUDA emulator's reference convolution loops (emu_conv_ref.c),
 * apart from the cuDNN calls that check and enqueue them (emu_cudnn.c): float data,
 * sums in double in a fixed order, blended into the output as cuDNN does.
 *
 *   conv_job j = {K_FWD, geo, x, w, y, 1.0, 0.0, NULL, 0};
 *   emu_conv_float(&j);   // y = conv(x, w), geo checked by conv_geo
 *
 * They are the emulated step's hot spot; under make test SANITIZE=1 they are built
 * optimised and uninstrumented (Makefile): every pointer they touch was checked
 * against its cudaMalloc block before the job was enqueued. */
#ifndef OC_EMU_CONV_REF_H
#define OC_EMU_CONV_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cudnn.h"

/* dst = alpha * v + beta * dst; dst not read when beta == 0. */
static inline float blend(double alpha, double v, double beta, const float *dst) {
    return (float)(beta != 0.0 ? alpha * v + beta * (double)*dst : alpha * v);
}

enum { K_FWD, K_BWD_DATA, K_BWD_FILTER };

/* Spatial dims padded to 3 (leading unused dims of extent 1). */
typedef struct cgeo {
    int64_t N, C, K, G, cg, kg;
    int64_t in[3], out[3], k[3], pad[3], str[3], dil[3];
    int64_t xs[5], ys[5], wstr[5]; /* n, c, s0, s1, s2 (filter: k, c, s0..) */
    bool flip;                     /* CUDNN_CONVOLUTION: the kernel is flipped */
    size_t x_bytes, y_bytes, w_bytes;
    cudnnMathType_t math;
    cudnnDataType_t dt, ctype; /* data (x, w, y alike) and compute type */
} cgeo;

typedef struct conv_job {
    int kind;
    cgeo q;
    const float *in0, *in1; /* fwd: x, w; bwd data: w, dy; bwd filter: x, dy */
    float *out;             /* y, dx, dw */
    double alpha, beta;
    void *ws;
    size_t ws_need;
} conv_job;

/* calloc, aborting with a message when the host is out of memory (the emulator's cuDNN). */
void *emu_xcalloc(size_t n, size_t sz);

/* out = alpha * conv + beta * out (out not read when beta == 0), by j->kind:
 * y from x, w; dx from w, dy; dw from x, dy. */
void emu_conv_float(const conv_job *j);

#endif
