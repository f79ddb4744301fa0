/* cpu_window.c — convolution/pooling window geometry, im2col and col2im. */
#include <string.h>

#include "cpu_internal.h"

void cpu_window_of(const op_window *ow, int nsp, const int64_t *img, const int64_t *col,
                   cpu_window *w) {
    OC_ASSERT(nsp >= 1 && nsp == ow->nsp);
    memset(w, 0, sizeof *w);
    w->nsp = nsp;
    w->img_size = w->col_size = w->k_size = 1;
    for (int i = 0; i < nsp; i++) {
        w->img[i] = img[i];
        w->col[i] = col[i];
        w->kernel[i] = ow->kernel[i];
        w->stride[i] = ow->stride[i];
        w->dilation[i] = ow->dilation[i];
        w->pad[i] = ow->pad_begin[i];
        w->pad_end[i] = ow->pad_end[i];
        w->img_size *= img[i];
        w->col_size *= col[i];
        w->k_size *= ow->kernel[i];
    }
}

/* Kernel offset kk (row-major over the kernel dims) -> per-dim offsets. */
static void kernel_index(const cpu_window *w, int64_t kk, int64_t *k) {
    for (int d = w->nsp - 1; d >= 0; d--) {
        k[d] = kk % w->kernel[d];
        kk /= w->kernel[d];
    }
}

/* Walks every (column position, kernel offset) pair of one channel; for each
 * run of the last spatial dim calls body with the image row offset (or -1 when
 * the row lies in padding). ADD selects col2im (accumulate) over im2col. */
static void window_walk(const cpu_window *w, float *img, float *col, bool add) {
    int last = w->nsp - 1;
    int64_t ncl = w->col[last], nil = w->img[last];
    int64_t st = w->stride[last], pd = w->pad[last];
    for (int64_t kk = 0; kk < w->k_size; kk++) {
        int64_t k[IR_MAX_RANK], o[IR_MAX_RANK] = {0};
        kernel_index(w, kk, k);
        int64_t kl = k[last] * w->dilation[last];
        float *dst = col + kk * w->col_size;
        for (int64_t outer = 0; outer < w->col_size / ncl; outer++) {
            bool valid = true;
            int64_t off = 0;
            for (int d = 0; d < last; d++) {
                int64_t ix = o[d] * w->stride[d] - w->pad[d] + k[d] * w->dilation[d];
                if (ix < 0 || ix >= w->img[d]) valid = false;
                off = off * w->img[d] + ix;
            }
            off *= nil;
            if (add) {
                if (valid)
                    for (int64_t ol = 0; ol < ncl; ol++) {
                        int64_t ix = ol * st - pd + kl;
                        if (ix >= 0 && ix < nil) img[off + ix] += dst[ol];
                    }
            } else {
                for (int64_t ol = 0; ol < ncl; ol++) {
                    int64_t ix = ol * st - pd + kl;
                    dst[ol] = (valid && ix >= 0 && ix < nil) ? img[off + ix] : 0.0f;
                }
            }
            dst += ncl;
            for (int d = last - 1; d >= 0; d--) {
                if (++o[d] < w->col[d]) break;
                o[d] = 0;
            }
        }
    }
}

void cpu_im2col(const float *img, int64_t channels, const cpu_window *w, float *col) {
    for (int64_t c = 0; c < channels; c++)
        window_walk(w, (float *)(uintptr_t)(img + c * w->img_size),
                    col + c * w->k_size * w->col_size, false);
}

void cpu_col2im(const float *col, int64_t channels, const cpu_window *w, float *img) {
    for (int64_t c = 0; c < channels; c++)
        window_walk(w, img + c * w->img_size,
                    (float *)(uintptr_t)(col + c * w->k_size * w->col_size), true);
}
