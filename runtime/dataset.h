/* dataset.h — a data set on disk for outcore-run: NumPy .npy arrays,
 * memory-mapped (any size; pages are read as batches touch them), and the
 * order samples are visited in, a pure function of (seed, epoch).
 *
 *   rt_npy x, y;
 *   if (rt_npy_open("x.npy", &x, &err) || rt_npy_open("y.npy", &y, &err)) ...
 *   rt_dataset d;
 *   const rt_npy *xs[] = {&x};
 *   if (rt_dataset_bind(&d, 1, xs, &y, &data_tensor, label_tensor, classes, ignore, &err)) ...
 *   int64_t *order = rt_dataset_order(d.n, seed, epoch);   // a permutation, oc_free it
 *   void *bufs[] = {host_x};
 *   rt_dataset_gather(&d, order + step * batch, batch, bufs, host_y);
 *   rt_npy_close(&x); rt_npy_close(&y);
 *
 * A model with several data inputs (token ids and an attention mask) takes one array
 * per input, in the model's input order, each with the same number of samples.
 * Accepted: format versions 1-3, C order, little-endian float32 ('<f4') data
 * (or int64 '<i8', for a model input that is int64: token ids, masks) of shape
 * [N, dims of the model input without its batch dim], labels int64 ('<i8') or
 * int32 ('<i4') of shape [N] or [N, dims of the label input without its batch
 * dim], every label in [0, classes) or the loss's ignored label. Anything
 * else fails naming the file and what it found. */
#ifndef OC_DATASET_H
#define OC_DATASET_H

#include "ir/ir.h"

typedef struct rt_npy {
    char *path;          /* owned */
    const uint8_t *data; /* first element, inside the mapping */
    void *map;           /* the whole file, mmap'd read-only */
    size_t map_bytes;
    ir_dtype dtype;
    int rank;
    int64_t dims[IR_MAX_RANK];
} rt_npy;

int rt_npy_open(const char *path, rt_npy *a, oc_err *err);
void rt_npy_close(rt_npy *a);

#define RT_DATA_MAX 8 /* data inputs of a model (token ids, mask, token types, ..) */

typedef struct rt_dataset {
    const rt_npy *x[RT_DATA_MAX], *y;
    int n_x;
    int64_t n;                               /* samples */
    int64_t x_sample[RT_DATA_MAX], y_sample; /* elements per sample */
} rt_dataset;

/* Checks x[0..n_x) and y against the model's data inputs and labels (shapes past
 * the batch dim, dtypes, sample counts, label range: every label is read once). y NULL:
 * no labels (a step that computes its own loss; labels and y of gather unused). */
int rt_dataset_bind(rt_dataset *d, int n_x, const rt_npy *const *x, const rt_npy *y,
                    const ir_tensor *const *data, const ir_tensor *labels, int64_t classes,
                    int64_t ignore_index, oc_err *err);
/* The visiting order of epoch e: a permutation of [0, n) (Fisher-Yates from
 * the counter-based generator keyed by seed and epoch). Caller frees. */
int64_t *rt_dataset_order(int64_t n, uint64_t seed, int64_t epoch);
/* Copies samples idx[0..count) into a batch: each data array as stored (float32
 * or int64) into x[i], labels as int64. */
void rt_dataset_gather(const rt_dataset *d, const int64_t *idx, int64_t count, void *const *x,
                       int64_t *y);

#endif
