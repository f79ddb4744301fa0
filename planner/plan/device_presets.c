/* device_presets.c — see device_presets.h. */
#include "plan/device_presets.h"

#include <string.h>

#define GB 1e9
#define GIB ((int64_t)1 << 30)

/* Data-sheet figures (docs/profile.md): fp32 non-tensor peak, HBM bandwidth,
 * effective pinned-copy bandwidth each way over the PCIe generation; last, the
 * dense fp16/bf16 tensor-core peak (V100: fp16 only; its bf16 is no faster);
 * then the NCHW convolutions' slowdown. That one is measured, not a data
 * sheet's: an H100 80GB HBM3's ResNet-50 b640 fp32 step (TF32 convolutions,
 * 2026-11-27, docs/fast-step.md), convolutions 41.7 ms NCHW vs 26.7 ms
 * channels-last, their gradients 95.2 vs 61.4 ms: 1.56x and 1.55x. v100 and
 * a100: not measured, 0 (the layout Transposes alone). */
#define H100_CONV_NCHW_SLOWDOWN 0.55
/* H200 SXM (141 GB HBM3e; the same GH100 compute as the H100 SXM, so its
 * convolutions' slowdown): data-sheet FP32 67 TFLOP/s, 4.8 TB/s, dense BF16
 * 989 TFLOP/s; measured on the H200s lent here (docs/gpu-check-2026-11-28-h200.txt):
 * 143771 MiB (nvidia-smi), pinned copies 55.5 GB/s each way (52.8-55.5 in
 * three measurements), each 9-20% slower beside the other (copy_slowdown_duplex
 * 0.14), 10-13 us latency. */
#define H200_MEMORY ((int64_t)143771 << 20)

static const profile_device presets[] = {
    {"v100", 16 * GIB, 12 * GB, 12 * GB, true, 10e-6, 15.7e12, 900 * GB, 5e-6, 0, 0, 0, 125e12, 0},
    {"a100", 40 * GIB, 25 * GB, 25 * GB, true, 10e-6, 19.5e12, 1555 * GB, 5e-6, 0, 0, 0, 312e12, 0},
    {"h100", 80 * GIB, 50 * GB, 50 * GB, true, 10e-6, 51.0e12, 2000 * GB, 5e-6, 0, 0, 0, 756e12,
     H100_CONV_NCHW_SLOWDOWN},
    {"h200", H200_MEMORY, 55.5 * GB, 55.5 * GB, true, 10e-6, 67.0e12, 4800 * GB, 5e-6, 0, 0, 0.14,
     989e12, H100_CONV_NCHW_SLOWDOWN},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

const char *device_preset_names(void) { return "v100, a100, h100, h200"; }

const char *device_preset_for_gpu(const char *gpu_name) {
    /* the model as NVIDIA names it, a whole word ("H100", not "GH100"'s tail) */
    static const char *const models[][2] = {
        {"V100", "v100"}, {"A100", "a100"}, {"H100", "h100"}, {"H200", "h200"}};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        const char *at = gpu_name ? strstr(gpu_name, models[m][0]) : NULL;
        if (at && (at == gpu_name || at[-1] == ' ')) return models[m][1];
    }
    return NULL;
}

int device_preset_find(const char *name, profile_device *d, oc_err *err) {
    for (size_t i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0) {
            *d = presets[i];
            return OC_OK;
        }
    return oc_fail(err, "unknown device '%s' (presets: %s; or --device-file FILE)", name,
                   device_preset_names());
}

/* Device memory above this is not a device (1 EiB; README "Limits"). */
#define DEVICE_MAX_MEMORY_BYTES ((int64_t)1 << 60)

/* A number field >= 0 (> 0 when positive); OC_ERR naming what.key otherwise. */
static int num_field(const json_t *o, const char *what, const char *key, bool positive, double *out,
                     oc_err *err) {
    const json_t *v = json_object_get(o, key);
    if (!v) return oc_fail(err, "%s: missing field '%s'", what, key);
    if (!json_is_number(v)) return oc_fail(err, "%s: field '%s' is not a number", what, key);
    double x = json_number_value(v);
    if (!(x >= 0) || (positive && !(x > 0)) || x > 1e30)
        return oc_fail(err, "%s: field '%s' must be %s, got %g", what, key,
                       positive ? "> 0" : ">= 0", x);
    *out = x;
    return OC_OK;
}

int device_from_json(const json_t *o, const char *what, profile_device *d, oc_err *err) {
    memset(d, 0, sizeof *d);
    if (!json_is_object(o)) return oc_fail(err, "%s: not a JSON object", what);
    const json_t *name = json_object_get(o, "name");
    if (!json_is_string(name)) return oc_fail(err, "%s: missing string field 'name'", what);
    snprintf(d->name, sizeof d->name, "%s", json_string_value(name));
    const json_t *dup = json_object_get(o, "duplex");
    if (!json_is_boolean(dup)) return oc_fail(err, "%s: missing boolean field 'duplex'", what);
    d->duplex = json_is_true(dup);
    double mem;
    if (num_field(o, what, "memory_bytes", true, &mem, err) ||
        num_field(o, what, "h2d_bytes_per_s", true, &d->h2d_bytes_per_s, err) ||
        num_field(o, what, "d2h_bytes_per_s", true, &d->d2h_bytes_per_s, err) ||
        num_field(o, what, "copy_latency_s", false, &d->copy_latency_s, err) ||
        num_field(o, what, "peak_flops", true, &d->peak_flops, err) ||
        num_field(o, what, "mem_bandwidth_bytes_per_s", true, &d->mem_bandwidth_bytes_per_s, err) ||
        num_field(o, what, "launch_overhead_s", false, &d->launch_overhead_s, err))
        return OC_ERR;
    /* optional: contention (absent in files written before it; 0 = none) */
    static const char *const opt[] = {"compute_slowdown_h2d", "compute_slowdown_d2h",
                                      "copy_slowdown_duplex"};
    double *opt_dst[] = {&d->compute_slowdown_h2d, &d->compute_slowdown_d2h,
                         &d->copy_slowdown_duplex};
    for (int i = 0; i < 3; i++)
        if (json_object_get(o, opt[i]) && num_field(o, what, opt[i], false, opt_dst[i], err))
            return OC_ERR;
    if (json_object_get(o, "peak_flops_half") &&
        num_field(o, what, "peak_flops_half", false, &d->peak_flops_half, err))
        return OC_ERR;
    if (json_object_get(o, "conv_nchw_slowdown") &&
        num_field(o, what, "conv_nchw_slowdown", false, &d->conv_nchw_slowdown, err))
        return OC_ERR;
    if (d->compute_slowdown_h2d > 100 || d->compute_slowdown_d2h > 100 ||
        d->copy_slowdown_duplex > 100 || d->conv_nchw_slowdown > 100)
        return oc_fail(err, "%s: a slowdown factor above 100 is not a measurement", what);
    if (mem > DEVICE_MAX_MEMORY_BYTES || mem != (double)(int64_t)mem)
        return oc_fail(
            err, "%s: field 'memory_bytes' must be a whole number of bytes up to %lld, got %g",
            what, (long long)DEVICE_MAX_MEMORY_BYTES, mem);
    d->memory_bytes = (int64_t)mem;
    return OC_OK;
}

json_t *device_to_json(const profile_device *d) {
    json_t *o =
        json_pack("{s:s, s:I, s:f, s:f, s:b, s:f, s:f, s:f, s:f}", "name", d->name, "memory_bytes",
                  (json_int_t)d->memory_bytes, "h2d_bytes_per_s", d->h2d_bytes_per_s,
                  "d2h_bytes_per_s", d->d2h_bytes_per_s, "duplex", d->duplex, "copy_latency_s",
                  d->copy_latency_s, "peak_flops", d->peak_flops, "mem_bandwidth_bytes_per_s",
                  d->mem_bandwidth_bytes_per_s, "launch_overhead_s", d->launch_overhead_s);
    if (d->peak_flops_half > 0)
        json_object_set_new(o, "peak_flops_half", json_real(d->peak_flops_half));
    if (d->conv_nchw_slowdown > 0)
        json_object_set_new(o, "conv_nchw_slowdown", json_real(d->conv_nchw_slowdown));
    if (d->compute_slowdown_h2d > 0 || d->compute_slowdown_d2h > 0 || d->copy_slowdown_duplex > 0) {
        json_object_set_new(o, "compute_slowdown_h2d", json_real(d->compute_slowdown_h2d));
        json_object_set_new(o, "compute_slowdown_d2h", json_real(d->compute_slowdown_d2h));
        json_object_set_new(o, "copy_slowdown_duplex", json_real(d->copy_slowdown_duplex));
    }
    return o;
}

int device_read_file(const char *path, profile_device *d, oc_err *err) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) return oc_fail(err, "%s:%d: bad JSON: %s", path, je.line, je.text);
    const json_t *o = json_object_get(root, "device");
    char what[512];
    snprintf(what, sizeof what, "%s: device", path);
    int rc = device_from_json(o ? o : root, what, d, err);
    json_decref(root);
    return rc;
}
