/* backend_cpu.h — the cpu backend's registry entry (backend.h): host memory,
 * three streams on three threads with real events, the kernels of runtime/cpu/.
 * It takes no options (every kernel is deterministic already). */
#ifndef OC_BACKEND_CPU_H
#define OC_BACKEND_CPU_H

#include "backend.h"

int rt_backend_cpu_new(const rt_backend_opts *opts, rt_backend **out, oc_err *err);

#endif
