/* cuda_none.c — the cuda backend's entry point in a build without CUDA
 * (make CUDA=0, or no toolkit found): it fails with one clear line. The
 * Makefile compiles this file instead of backend_cuda.c and friends. */
#include "backend_cuda.h"

#define NOT_BUILT                                                                                  \
    "backend 'cuda' is not built into this outcore-run (built without the CUDA "                   \
    "toolkit; rebuild with `make CUDA=1` where /usr/local/cuda exists)"

int rt_backend_cuda_new(const rt_backend_opts *opts, rt_backend **out, oc_err *err) {
    (void)opts;
    *out = NULL;
    return oc_fail(err, NOT_BUILT);
}

bool rt_backend_cuda_built(void) { return false; }
