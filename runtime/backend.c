/* backend.c — backend registry (see backend.h). */
#include "backend.h"

#include <string.h>

#include "cuda/backend_cuda.h"

const char *rt_stream_id_name(rt_stream_id s) {
    switch (s) {
    case RT_STREAM_COMPUTE: return "compute";
    case RT_STREAM_D2H: return "d2h";
    case RT_STREAM_H2D: return "h2d";
    case RT_STREAM__COUNT: break;
    }
    return "?";
}

int rt_backend_new(const char *name, rt_backend **out, oc_err *err) {
    *out = NULL;
    if (strcmp(name, "cpu") == 0) {
        *out = rt_backend_cpu_new();
        return OC_OK;
    }
    if (strcmp(name, "cuda") == 0) return rt_backend_cuda_new(out, err); /* cuda/backend_cuda.h */
    return oc_fail(err, "unknown backend '%s' (known: cpu, cuda)", name);
}

void rt_backend_free(rt_backend *b) {
    if (b) b->destroy(b);
}
