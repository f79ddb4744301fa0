/* cuda_none.c — the cuda backend's entry points in a build without CUDA
 * (make CUDA=0, or no toolkit found): each fails with one clear line. The
 * Makefile compiles this file instead of backend_cuda.c and friends. */
#include "backend_cuda.h"

#define NOT_BUILT "backend 'cuda' is not built into this outcore-run (built without the CUDA " \
                  "toolkit; rebuild with `make CUDA=1` where /usr/local/cuda exists)"

int rt_backend_cuda_new(rt_backend **out, oc_err *err) {
    *out = NULL;
    return oc_fail(err, NOT_BUILT);
}

bool rt_backend_cuda_built(void) { return false; }

int rt_cuda_profile_start(rt_backend *b, const ir_graph *g, oc_err *err) {
    (void)b, (void)g;
    return oc_fail(err, "--profile-out needs --backend cuda: " NOT_BUILT);
}

int rt_cuda_profile_write(rt_backend *b, const train_graph *tg, int64_t batch, const char *path,
                          oc_err *err) {
    (void)b, (void)tg, (void)batch, (void)path;
    return oc_fail(err, "--profile-out needs --backend cuda: " NOT_BUILT);
}

int64_t rt_cuda_device_used(rt_backend *b) {
    (void)b;
    return -1;
}
