/* backend.c — the backend registry (see backend.h). */
#include "backend.h"

#include <stdio.h>
#include <string.h>

#include "backend_cpu.h"
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

static bool always(void) { return true; }

static const rt_backend_kind kinds[] = {
    {"cpu", rt_backend_cpu_new, cpu_kernel_supported, always},
    {"cuda", rt_backend_cuda_new, cuda_kernel_supported, rt_backend_cuda_built}, /* cuda_none.c */
};

const rt_backend_kind *rt_backend_kinds(int *n) {
    *n = (int)(sizeof kinds / sizeof kinds[0]);
    return kinds;
}

static const rt_backend_kind *rt_backend_find(const char *name) {
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].name, name) == 0) return &kinds[i];
    return NULL;
}

int rt_backend_new(const char *name, const rt_backend_opts *opts, rt_backend **out, oc_err *err) {
    *out = NULL;
    const rt_backend_kind *k = rt_backend_find(name);
    if (!k) {
        char known[128] = "";
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                     kinds[i].name);
        return oc_fail(err, "unknown backend '%s' (known: %s)", name, known);
    }
    const rt_backend_opts defaults = {0};
    return k->create(opts ? opts : &defaults, out, err);
}

void rt_backend_free(rt_backend *b) {
    if (b) b->destroy(b);
}
