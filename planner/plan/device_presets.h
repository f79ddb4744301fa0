/* device_presets.h — the GPUs the analytic profile knows (DESIGN §4), and
 * device files that override them.
 *
 *   profile_device d;
 *   if (device_preset_find("v100", &d, &err)) ...          // v100 | a100 | h100 | h200
 *   if (device_read_file("my_gpu.json", &d, &err)) ...     // {"device": {...}} or {...}
 *
 * Figures are vendor data-sheet numbers (docs/profile.md cites them); copy
 * bandwidths are effective pinned-memory PCIe rates, not the link's raw rate. */
#ifndef OC_DEVICE_PRESETS_H
#define OC_DEVICE_PRESETS_H

#include <jansson.h>

#include "ir/common.h"

typedef struct profile_device {
    char name[64];
    int64_t memory_bytes;
    double h2d_bytes_per_s, d2h_bytes_per_s;
    bool duplex;           /* H2D and D2H run at once; false: one copy engine */
    double copy_latency_s; /* fixed cost per copy */
    double peak_flops;     /* FLOP/s */
    double mem_bandwidth_bytes_per_s;
    double launch_overhead_s; /* per node */
    /* Contention (docs/profile.md; fitted by tools/calibrate; 0: none): a
     * kernel's time grows by the factor (1 + compute_slowdown_h2d) while an H2D
     * copy runs, by (1 + compute_slowdown_d2h) while a D2H copy runs (the sum
     * while both run); a copy's by (1 + copy_slowdown_duplex) while a copy in
     * the other direction runs. Optional in files. */
    double compute_slowdown_h2d, compute_slowdown_d2h, copy_slowdown_duplex;
    /* Dense float16/bfloat16 tensor-core FLOP/s (--precision bf16|fp16: a node
     * whose first input is half); optional in files, 0: peak_flops. */
    double peak_flops_half;
    /* A 2-d convolution (forward or either gradient) on (N, C, H, W) tensors
     * takes (1 + conv_nchw_slowdown) times its channels-last time: tensor-core
     * kernels want (N, H, W, C), cuDNN transposes around them. What
     * `outcore-plan plan --layout auto` weighs against the layout Transposes.
     * Optional in files, 0: the layout does not matter. */
    double conv_nchw_slowdown;
} profile_device;

/* Fills *d with the preset called name. OC_ERR naming the known presets otherwise. */
int device_preset_find(const char *name, profile_device *d, oc_err *err);
/* The preset describing the GPU called gpu_name (cudaDeviceProp.name, e.g. "NVIDIA
 * H100 80GB HBM3" -> "h100"), NULL when none does. */
const char *device_preset_for_gpu(const char *gpu_name);
/* "v100, a100, h100, h200" — for usage text. */
const char *device_preset_names(void);

/* Parses a "device" object; every field is required and must be >= 0 (rates > 0).
 * what names the source in messages ("prof.json: device"). */
int device_from_json(const json_t *obj, const char *what, profile_device *d, oc_err *err);
json_t *device_to_json(const profile_device *d);
/* Reads a device file: a JSON object that is either the device object itself
 * or holds one under "device". Errors name the file and the field. */
int device_read_file(const char *path, profile_device *d, oc_err *err);

#endif
