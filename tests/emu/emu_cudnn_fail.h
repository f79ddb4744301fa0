/* emu_cudnn_fail.h — how the emulator's cuDNN calls refuse (emu_cudnn.c,
 * emu_cudnn_graph.c): the reason printed as "emu cudnn: <call>: ... -> <status>"
 * (cuDNN keeps it for cudnnGetLastErrorString), the status returned.
 *
 *   if (!x) return emu_cudnn_fail(CUDNN_STATUS_BAD_PARAM, call, "x is NULL");
 */
#ifndef OC_EMU_CUDNN_FAIL_H
#define OC_EMU_CUDNN_FAIL_H

#include "cudnn.h"

cudnnStatus_t emu_cudnn_fail(cudnnStatus_t st, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
