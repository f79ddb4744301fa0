/* common.h — error reporting, the one allocation chokepoint, small helpers.
 *
 * Two kinds of errors (DESIGN §10):
 *   - bugs: OC_ASSERT(cond) aborts with file:line;
 *   - bad input / I/O: functions return OC_ERR and fill an oc_err whose message
 *     names the file, node or tensor. The caller prints it once, at the top.
 *
 * Every heap allocation goes through oc_malloc/oc_calloc/oc_realloc, which abort
 * with a message on exhaustion.
 */
#ifndef OC_COMMON_H
#define OC_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OC_OK 0
#define OC_ERR (-1)

typedef struct oc_err {
    char msg[1024];
} oc_err;

/* Formats msg into err (if err is non-NULL) and returns OC_ERR. */
int oc_fail(oc_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the existing message: "<prefix>: <old message>". Returns OC_ERR. */
int oc_fail_prefix(oc_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define OC_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) oc_assert_fail(#cond, __FILE__, __LINE__);                                    \
    } while (0)
_Noreturn void oc_assert_fail(const char *what, const char *file, int line);

/* Allocation chokepoint. These never return NULL: on exhaustion they abort with
 * a message (the planner's allocations are small; a failure is not recoverable). */
void *oc_malloc(size_t n);
void *oc_calloc(size_t count, size_t size);
void *oc_realloc(void *p, size_t n);
char *oc_strdup(const char *s);
char *oc_strndup(const char *s, size_t n);
char *oc_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *oc_vsprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
void oc_free(void *p);

/* Grows *buf (elements of elem_size) so that it holds at least need elements.
 * *cap is updated; contents are preserved. */
void oc_grow(void **buf, size_t *cap, size_t need, size_t elem_size);

/* Checked arithmetic for sizes computed from untrusted dims: false on overflow. */
bool oc_mul_i64(int64_t a, int64_t b, int64_t *out);
bool oc_add_i64(int64_t a, int64_t b, int64_t *out);

/* Files larger than this are refused: ONNX's protobuf limit (a larger model keeps
 * its weights as external data, which is read tensor by tensor). */
#define OC_MAX_FILE_BYTES ((int64_t)2 << 30)
/* Reads a whole regular file (a directory, FIFO or device is refused, as is one
 * over OC_MAX_FILE_BYTES). On success *data is owned by the caller (oc_free). */
int oc_read_file(const char *path, uint8_t **data, size_t *len, oc_err *err);

/* Human-readable byte count ("1.50 GiB") into buf. Returns buf. */
const char *oc_fmt_bytes(int64_t bytes, char *buf, size_t cap);

/* Writes s to f with control bytes (newline, ESC, ...) as \xNN: names from a
 * file cannot break an error line or drive the terminal. */
void oc_fputs_escaped(const char *s, FILE *f);

/* Parses "16GiB", "512MiB", "1e9", "123" into bytes. OC_ERR on junk/negative. */
int oc_parse_bytes(const char *s, int64_t *out, oc_err *err);

/* Parses a positive decimal integer in [lo, hi]; OC_ERR (naming what) otherwise. */
int oc_parse_int(const char *s, int64_t lo, int64_t hi, const char *what, int64_t *out,
                 oc_err *err);

#endif
