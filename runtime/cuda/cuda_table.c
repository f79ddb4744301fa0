/* cuda_table.c — which ops the cuda backend runs, in every build (no CUDA
 * headers): tests compare it with the cpu backend's without a GPU. Every
 * computing op of the list (ir/ops/op_list.h) has its cuda_<kern> in the
 * dispatch table of cuda_kernels.c — a missing one fails to link — so support
 * is membership in the list. */
#include "backend_cuda.h"
#include "ir/ops/op_table.h"

static const bool cuda_has[OP__COUNT] = {
#define CUDA_HAS_ROW(kind, name, domain, def, kern) [OP_##kind] = true,
    OC_OPS_COMPUTE(CUDA_HAS_ROW)
#undef CUDA_HAS_ROW
};

bool cuda_kernel_supported(int op) { return op >= 0 && op < OP__COUNT && cuda_has[op]; }
