/* common.c — see common.h. */
#include "ir/common.h"

#include "ir/out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int oc_fail(oc_err *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return OC_ERR;
}

int oc_fail_prefix(oc_err *err, const char *fmt, ...) {
    if (err) {
        char prefix[512], old[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof old);
        snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
    }
    return OC_ERR;
}

void oc_assert_fail(const char *what, const char *file, int line) {
    fprintf(stderr, "outcore: internal error: assertion '%s' failed at %s:%d\n", what, file, line);
    abort();
}

static void *check_alloc(void *p, size_t n) {
    if (!p && n) {
        fprintf(stderr, "outcore: out of memory allocating %zu bytes\n", n);
        abort();
    }
    return p;
}

void *oc_malloc(size_t n) { return check_alloc(malloc(n ? n : 1), n ? n : 1); }

void *oc_calloc(size_t count, size_t size) {
    if (count == 0 || size == 0) count = size = 1;
    return check_alloc(calloc(count, size), count * size);
}

void *oc_realloc(void *p, size_t n) { return check_alloc(realloc(p, n ? n : 1), n ? n : 1); }

void oc_free(void *p) { free(p); }

char *oc_strdup(const char *s) { return oc_strndup(s, strlen(s)); }

char *oc_strndup(const char *s, size_t n) {
    char *r = oc_malloc(n + 1);
    if (n) memcpy(r, s, n); /* s may be NULL when n is 0 (an empty protobuf string) */
    r[n] = '\0';
    return r;
}

char *oc_vsprintf(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    OC_ASSERT(n >= 0);
    char *r = oc_malloc((size_t)n + 1);
    vsnprintf(r, (size_t)n + 1, fmt, ap);
    return r;
}

char *oc_sprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *r = oc_vsprintf(fmt, ap);
    va_end(ap);
    return r;
}

void oc_grow(void **buf, size_t *cap, size_t need, size_t elem_size) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    *buf = oc_realloc(*buf, c * elem_size);
    *cap = c;
}

bool oc_mul_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

bool oc_add_i64(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }

int oc_read_file(const char *path, uint8_t **data, size_t *len, oc_err *err) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return oc_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        bool dir = S_ISDIR(st.st_mode);
        close(fd);
        return oc_fail(err, "%s: not a regular file%s", path, dir ? " (a directory)" : "");
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return oc_fail(err, "%s: cannot open: %s", path, strerror(errno));
    }
    oc_out_note_input(fd); /* no output of this run may replace it */
    if (st.st_size > (off_t)OC_MAX_FILE_BYTES) {
        fclose(f);
        return oc_fail(err, "%s: %lld bytes; files of more than %lld bytes are refused", path,
                       (long long)st.st_size, (long long)OC_MAX_FILE_BYTES);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = oc_malloc(size ? size : 1);
    size_t got = fread(buf, 1, size, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr || got != size) {
        oc_free(buf);
        return oc_fail(err, "%s: read error", path);
    }
    *data = buf;
    *len = size;
    return OC_OK;
}

const char *oc_fmt_bytes(int64_t bytes, char *buf, size_t cap) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while ((v >= 1024.0 || v <= -1024.0) && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, cap, "%" PRId64 " B", bytes);
    else snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

void oc_fputs_escaped(const char *s, FILE *f) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) fprintf(f, "\\x%02x", c);
        else fputc(c, f);
    }
}

int oc_parse_bytes(const char *s, int64_t *out, oc_err *err) {
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
        {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
        {"K", 1024.0},   {"M", 1048576.0},   {"G", 1073741824.0},   {"B", 1.0},
        {"", 1.0}};
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !(v >= 0))
        return oc_fail(err, "invalid byte size '%s' (expected e.g. 16GiB, 512MiB, 1e9)", s);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            double b = v * units[i].mult;
            if (b > 9.0e18) return oc_fail(err, "byte size '%s' is too large", s);
            if (b != floor(b))
                return oc_fail(err, "byte size '%s' is not a whole number of bytes", s);
            *out = (int64_t)b;
            return OC_OK;
        }
    }
    return oc_fail(err, "invalid byte size '%s': unknown unit '%s'", s, end);
}

int oc_parse_int(const char *s, int64_t lo, int64_t hi, const char *what, int64_t *out,
                 oc_err *err) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0)
        return oc_fail(err, "%s: '%s' is not an integer", what, s);
    if (v < lo || v > hi)
        return oc_fail(err, "%s: %lld is out of range [%" PRId64 ", %" PRId64 "]", what, v, lo, hi);
    *out = (int64_t)v;
    return OC_OK;
}
