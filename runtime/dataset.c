/* dataset.c — see dataset.h. */
#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init.h"

/* The value after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ' || *p == ':') p++;
    return p;
}

/* Parses the header dict: descr, fortran_order, shape. */
static int parse_header(const char *path, const char *h, rt_npy *a, oc_err *err) {
    const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order"),
               *s = dict_value(h, "shape");
    if (!d || !f || !s) return oc_fail(err, "%s: not a NumPy .npy header: %.80s", path, h);
    if (strncmp(d, "'<f4'", 5) == 0) a->dtype = IR_DTYPE_FLOAT;
    else if (strncmp(d, "'<i8'", 5) == 0) a->dtype = IR_DTYPE_INT64;
    else if (strncmp(d, "'<i4'", 5) == 0) a->dtype = IR_DTYPE_INT32;
    else {
        const char *q = *d == '\'' ? strchr(d + 1, '\'') : NULL;
        int len = q && q - d < 24 ? (int)(q - d + 1) : 12;
        return oc_fail(err,
                       "%s: dtype %.*s is not supported (float32 '<f4' data; int64 '<i8' or "
                       "int32 '<i4' labels)",
                       path, len, d);
    }
    if (strncmp(f, "False", 5) != 0)
        return oc_fail(err, "%s: Fortran-order arrays are not supported (save a C-order array)",
                       path);
    if (*s != '(') return oc_fail(err, "%s: malformed shape in the header", path);
    s++;
    a->rank = 0;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < 0) return oc_fail(err, "%s: malformed shape", path);
        if (a->rank >= IR_MAX_RANK)
            return oc_fail(err, "%s: rank above %d is not supported", path, IR_MAX_RANK);
        a->dims[a->rank++] = v;
        s = end;
    }
    if (*s != ')') return oc_fail(err, "%s: malformed shape", path);
    return OC_OK;
}

int rt_npy_open(const char *path, rt_npy *a, oc_err *err) {
    memset(a, 0, sizeof *a);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return oc_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 12) {
        close(fd);
        return oc_fail(err, "%s: not a regular .npy file", path);
    }
    size_t bytes = (size_t)st.st_size;
    void *map = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return oc_fail(err, "%s: cannot map: %s", path, strerror(errno));
    const uint8_t *b = map;
    a->map = map, a->map_bytes = bytes;
    a->path = oc_strdup(path);
    if (memcmp(b, "\x93NUMPY", 6) != 0 || b[6] < 1 || b[6] > 3) {
        rt_npy_close(a);
        return oc_fail(err, "%s: not a NumPy .npy file (format versions 1 to 3)", path);
    }
    size_t hl = b[6] == 1
                    ? (size_t)b[8] | (size_t)b[9] << 8
                    : (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24,
           at = b[6] == 1 ? 10 : 12;
    if (hl > bytes - at || hl > 1 << 20) {
        rt_npy_close(a);
        return oc_fail(err, "%s: truncated header", path);
    }
    char *h = oc_strndup((const char *)b + at, hl);
    int rc = parse_header(path, h, a, err);
    oc_free(h);
    int64_t numel = 1;
    for (int i = 0; rc == OC_OK && i < a->rank; i++)
        if (!oc_mul_i64(numel, a->dims[i], &numel)) rc = oc_fail(err, "%s: shape overflows", path);
    int64_t data_bytes;
    if (rc == OC_OK && (!oc_mul_i64(numel, ir_dtype_size(a->dtype), &data_bytes) ||
                        (uint64_t)data_bytes > bytes - at - hl))
        rc = oc_fail(err, "%s: the file holds %zu data bytes, the header's shape needs more", path,
                     bytes - at - hl);
    if (rc) {
        rt_npy_close(a);
        return OC_ERR;
    }
    a->data = b + at + hl;
    return OC_OK;
}

void rt_npy_close(rt_npy *a) {
    if (a->map) munmap(a->map, a->map_bytes);
    oc_free(a->path);
    memset(a, 0, sizeof *a);
}

/* Elements per sample of a, which must match t's dims past the batch dim. */
static int sample_shape(const rt_npy *a, const ir_tensor *t, const char *what, int64_t *per,
                        oc_err *err) {
    bool ok = a->rank == t->rank && a->rank >= 1;
    *per = 1;
    for (int i = 1; ok && i < a->rank; i++) {
        ok = a->dims[i] == t->dims[i];
        *per *= a->dims[i];
    }
    if (!ok) {
        ir_tensor got = {.rank = a->rank};
        memcpy(got.dims, a->dims, sizeof got.dims);
        char gb[128], wb[128];
        return oc_fail(err,
                       "%s: %s of shape %s do not match the model's input '%s' %s past the "
                       "batch dim",
                       a->path, what, ir_shape_str(&got, gb, sizeof gb), t->name,
                       ir_shape_str(t, wb, sizeof wb));
    }
    return OC_OK;
}

/* x against the model's data input t. */
static int bind_data(const rt_npy *x, const ir_tensor *t, int64_t *per, oc_err *err) {
    if (t->dtype != IR_DTYPE_FLOAT && t->dtype != IR_DTYPE_INT64)
        return oc_fail(err, "the model's input '%s' is %s; data sets feed float32 or int64 inputs",
                       t->name, ir_dtype_name(t->dtype));
    if (x->dtype != t->dtype)
        return oc_fail(err, "%s: data must be %s ('%s'), as the model's input '%s'", x->path,
                       t->dtype == IR_DTYPE_FLOAT ? "float32" : "int64 token ids (or mask values)",
                       t->dtype == IR_DTYPE_FLOAT ? "<f4" : "<i8", t->name);
    return sample_shape(x, t, "data", per, err);
}

int rt_dataset_bind(rt_dataset *d, int n_x, const rt_npy *const *x, const rt_npy *y,
                    const ir_tensor *const *data, const ir_tensor *labels, int64_t classes,
                    int64_t ignore_index, oc_err *err) {
    memset(d, 0, sizeof *d);
    OC_ASSERT(n_x >= 1 && n_x <= RT_DATA_MAX);
    for (int i = 0; i < n_x; i++) {
        if (bind_data(x[i], data[i], &d->x_sample[i], err)) return OC_ERR;
        if (x[i]->dims[0] != x[0]->dims[0])
            return oc_fail(err, "%s has %" PRId64 " samples, %s has %" PRId64, x[i]->path,
                           x[i]->dims[0], x[0]->path, x[0]->dims[0]);
        d->x[i] = x[i];
    }
    d->n_x = n_x, d->n = x[0]->dims[0];
    if (!y) return OC_OK; /* a step computing its own loss: no labels */
    if (y->dtype == IR_DTYPE_FLOAT)
        return oc_fail(err, "%s: labels must be int64 or int32", y->path);
    if (sample_shape(y, labels, "labels", &d->y_sample, err)) return OC_ERR;
    if (x[0]->dims[0] != y->dims[0])
        return oc_fail(err, "%s has %" PRId64 " samples, %s has %" PRId64, x[0]->path,
                       x[0]->dims[0], y->path, y->dims[0]);
    d->n_x = n_x, d->y = y, d->n = x[0]->dims[0];
    int64_t n = d->n * d->y_sample;
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        if (y->dtype == IR_DTYPE_INT64) memcpy(&v, y->data + i * 8, 8);
        else {
            int32_t w;
            memcpy(&w, y->data + i * 4, 4);
            v = w;
        }
        if ((v < 0 || v >= classes) && v != ignore_index)
            return oc_fail(err,
                           "%s: label %" PRId64 " of sample %" PRId64 " is outside [0, %" PRId64
                           ") and is not the ignored label %" PRId64,
                           y->path, v, i / d->y_sample, classes, ignore_index);
    }
    return OC_OK;
}

int64_t *rt_dataset_order(int64_t n, uint64_t seed, int64_t epoch) {
    int64_t *p = oc_malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        double u = rt_init_uniform(seed ^ 0x0dea5e7, (uint64_t)epoch, (uint64_t)i);
        int64_t j = (int64_t)(u * (double)(i + 1));
        if (j > i) j = i;
        int64_t t = p[i];
        p[i] = p[j], p[j] = t;
    }
    return p;
}

void rt_dataset_gather(const rt_dataset *d, const int64_t *idx, int64_t count, void *const *x,
                       int64_t *y) {
    for (int i = 0; i < d->n_x; i++) {
        size_t xs = (size_t)d->x_sample[i] * (size_t)ir_dtype_size(d->x[i]->dtype);
        for (int64_t k = 0; k < count; k++)
            memcpy((uint8_t *)x[i] + (size_t)k * xs, d->x[i]->data + (size_t)idx[k] * xs, xs);
    }
    for (int64_t k = 0; d->y && k < count; k++) {
        for (int64_t j = 0; j < d->y_sample; j++) {
            int64_t at = idx[k] * d->y_sample + j, v;
            if (d->y->dtype == IR_DTYPE_INT64) memcpy(&v, d->y->data + at * 8, 8);
            else {
                int32_t w;
                memcpy(&w, d->y->data + at * 4, 4);
                v = w;
            }
            y[k * d->y_sample + j] = v;
        }
    }
}
