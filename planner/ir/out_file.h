/* out_file.h — output files written whole or not at all, never over
 * something that is not a regular file, never over an input of this run.
 *
 *   oc_out o;
 *   if (oc_out_open(&o, "plan.onnx", &err)) ...    // a temporary file beside it
 *   fwrite(buf, 1, n, o.f);
 *   if (oc_out_close(&o, true, &err)) ...           // fsync, rename over the path, fsync the folder
 *   // oc_out_close(&o, false, NULL): the temporary file is removed, the path untouched
 *
 * A target that exists must be a regular file (a symlink, FIFO, device or
 * directory is refused) and none of the files this process has read
 * (oc_out_note_input: oc_read_file and external data note theirs). The
 * temporary file ("<folder>/.<name>.XXXXXX") is removed on every error and
 * on SIGINT, SIGTERM, SIGHUP. */
#ifndef OC_OUT_FILE_H
#define OC_OUT_FILE_H

#include <stdio.h>

#include "ir/common.h"

typedef struct oc_out {
    FILE *f;
    char *path, *tmp; /* owned until oc_out_close */
    int slot;         /* in the signal-cleanup table */
} oc_out;

int oc_out_open(oc_out *o, const char *path, oc_err *err);
/* ok: keep the result (rename it over the path); !ok: discard it. err may be
 * NULL when !ok. Returns OC_ERR when keeping failed (nothing is left behind). */
int oc_out_close(oc_out *o, bool ok, oc_err *err);
/* Records an open input file (by device and inode) that no output may replace. */
void oc_out_note_input(int fd);
/* Lets outputs replace path again: an input read whole and done with (a
 * checkpoint resumed from, which the run's next checkpoint replaces). */
void oc_out_forget_input(const char *path);
/* Writes len bytes to path through oc_out_open/close. */
int oc_out_write_file(const char *path, const void *buf, size_t len, oc_err *err);

#endif
