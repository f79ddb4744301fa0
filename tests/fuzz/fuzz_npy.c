/* fuzz_npy.c — libFuzzer target: outcore-run's NumPy reader (--data, --labels,
 * --eval-data, --eval-labels: rt_npy_open), binding a data and a label file to
 * a float (N, 3, 2, 2) input and labels of 4 classes (rt_dataset_bind), and
 * gathering a batch of the first and last samples when they bind. The input
 * is split in two files (its first two bytes give the data file's length: a
 * seed is a pair of .npy files, make_seeds.sh), as the reader maps paths. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) abort();
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t k = (size_t)data[0] | (size_t)data[1] << 8;
    if (k > size - 2) k = size - 2;
    write_file("x.npy", data + 2, k);
    write_file("y.npy", data + 2 + k, size - 2 - k);
    oc_err err;
    rt_npy x, y;
    int rx = rt_npy_open("x.npy", &x, &err), ry = rt_npy_open("y.npy", &y, &err);
    ir_tensor xt = {.name = "input", .dtype = IR_DTYPE_FLOAT, .rank = 4, .dims = {2, 3, 2, 2}};
    ir_tensor yt = {.name = "labels", .dtype = IR_DTYPE_INT64, .rank = 1, .dims = {2}};
    rt_dataset d;
    const rt_npy *xs[] = {&x};
    const ir_tensor *xts[] = {&xt};
    if (rx == OC_OK && ry == OC_OK &&
        rt_dataset_bind(&d, 1, xs, &y, xts, &yt, 4, -100, &err) == OC_OK && d.n >= 1) {
        float xb[24];
        int64_t yb[2], idx[2] = {0, d.n - 1};
        void *bufs[] = {xb};
        rt_dataset_gather(&d, idx, 2, bufs, yb);
        int64_t *order = rt_dataset_order(d.n < 64 ? d.n : 64, 7, 1);
        oc_free(order);
    }
    if (rx == OC_OK) rt_npy_close(&x);
    if (ry == OC_OK) rt_npy_close(&y);
    return 0;
}
