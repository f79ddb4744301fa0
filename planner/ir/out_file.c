/* out_file.c — see out_file.h. */
#include "ir/out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- inputs of this run ---- */

#define MAX_INPUTS 64
static struct {
    dev_t dev;
    ino_t ino;
} inputs[MAX_INPUTS];
static int n_inputs;

void oc_out_note_input(int fd) {
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino) return;
    if (n_inputs < MAX_INPUTS) inputs[n_inputs].dev = st.st_dev, inputs[n_inputs++].ino = st.st_ino;
}

void oc_out_forget_input(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino) {
            inputs[i] = inputs[--n_inputs];
            return;
        }
}

static bool is_input(const struct stat *st) {
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i].dev == st->st_dev && inputs[i].ino == st->st_ino) return true;
    return false;
}

/* ---- temporary files removed on a signal ---- */

#define MAX_TMP 8
static char *volatile tmp_paths[MAX_TMP];

static void on_signal(int sig) {
    for (int i = 0; i < MAX_TMP; i++)
        if (tmp_paths[i]) unlink(tmp_paths[i]); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static int tmp_register(char *path) {
    static bool handlers;
    if (!handlers) {
        handlers = true;
        const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
            struct sigaction sa = {.sa_handler = on_signal};
            sigemptyset(&sa.sa_mask);
            struct sigaction old;
            /* leave a handler someone else installed alone */
            if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
                sigaction(sigs[i], &sa, NULL);
        }
    }
    for (int i = 0; i < MAX_TMP; i++)
        if (!tmp_paths[i]) {
            tmp_paths[i] = path;
            return i;
        }
    return -1;
}

static void tmp_unregister(int slot) {
    if (slot >= 0) tmp_paths[slot] = NULL;
}

/* ---- open / close ---- */

static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return oc_strdup(".");
    if (slash == path) return oc_strdup("/");
    return oc_sprintf("%.*s", (int)(slash - path), path);
}

int oc_out_open(oc_out *o, const char *path, oc_err *err) {
    memset(o, 0, sizeof *o);
    o->slot = -1;
    struct stat st;
    mode_t mask = umask(0); /* read it back: files get 0666 & ~umask, as fopen's would */
    umask(mask);
    mode_t mode = 0666 & ~mask;
    if (lstat(path, &st) == 0) {
        mode = st.st_mode & 07777; /* a replaced file keeps its permissions */
        if (!S_ISREG(st.st_mode))
            return oc_fail(err, "%s: exists and is not a regular file (%s): not replacing it", path,
                           S_ISLNK(st.st_mode)    ? "a symbolic link"
                           : S_ISDIR(st.st_mode)  ? "a directory"
                           : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                  : "a device or socket");
        if (is_input(&st))
            return oc_fail(err, "%s: is an input of this run: not replacing it", path);
    }
    char *dir = folder_of(path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    o->tmp = oc_sprintf("%s/.%s.XXXXXX", dir, base);
    oc_free(dir);
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        int rc = oc_fail(err, "%s: cannot write: %s", path, strerror(errno));
        oc_free(o->tmp);
        o->tmp = NULL;
        return rc;
    }
    o->slot = tmp_register(o->tmp);
    fchmod(fd, mode); /* mkostemp made it 0600 */
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int rc = oc_fail(err, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        tmp_unregister(o->slot);
        oc_free(o->tmp);
        o->tmp = NULL;
        return rc;
    }
    o->path = oc_strdup(path);
    return OC_OK;
}

static void fsync_folder(const char *path) {
    char *dir = folder_of(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) fsync(fd), close(fd);
    oc_free(dir);
}

int oc_out_close(oc_out *o, bool ok, oc_err *err) {
    int rc = OC_OK;
    if (!o->f) return OC_OK;
    if (ok && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0)) {
        ok = false;
        rc = oc_fail(err, "%s: write error: %s", o->path, strerror(errno));
    }
    if (fclose(o->f) != 0 && ok) {
        ok = false;
        rc = oc_fail(err, "%s: write error: %s", o->path, strerror(errno));
    }
    if (ok && rename(o->tmp, o->path) != 0) {
        ok = false;
        rc = oc_fail(err, "%s: cannot rename into place: %s", o->path, strerror(errno));
    }
    if (ok) fsync_folder(o->path);
    else unlink(o->tmp);
    tmp_unregister(o->slot);
    oc_free(o->path);
    oc_free(o->tmp);
    memset(o, 0, sizeof *o);
    return rc;
}

int oc_out_write_file(const char *path, const void *buf, size_t len, oc_err *err) {
    oc_out o;
    if (oc_out_open(&o, path, err)) return OC_ERR;
    bool ok = fwrite(buf, 1, len, o.f) == len;
    if (!ok) {
        oc_out_close(&o, false, NULL);
        return oc_fail(err, "%s: write error: %s", path, strerror(errno));
    }
    return oc_out_close(&o, true, err);
}
