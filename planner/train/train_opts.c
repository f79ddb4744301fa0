/* train_opts.c — the training options both command lines share (outcore-plan
 * and outcore-run): the optimizer, its AdamW settings, gradient clipping, the
 * loss's ignored label, frozen parameters. See train_graph.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "train/train_graph.h"

/* A finite float in [lo, hi) (hi_open) or [lo, hi]. */
static int parse_float_in(const char *flag, const char *v, double lo, double hi, bool hi_open,
                          float *out, oc_err *err) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno || !(d >= lo) || (hi_open ? !(d < hi) : !(d <= hi)))
        return oc_fail(err, "%s: '%s' is not a number in [%g, %g%c", flag, v, lo, hi,
                       hi_open ? ')' : ']');
    *out = (float)d;
    return OC_OK;
}

const char *train_precision_name(train_precision p) {
    return p == TRAIN_PRECISION_BF16 ? "bf16" : p == TRAIN_PRECISION_FP16 ? "fp16" : "fp32";
}

ir_dtype train_precision_dtype(train_precision p) {
    return p == TRAIN_PRECISION_BF16   ? IR_DTYPE_BFLOAT16
           : p == TRAIN_PRECISION_FP16 ? IR_DTYPE_FLOAT16
                                       : IR_DTYPE_FLOAT;
}

float train_loss_scale(const train_opts *o) {
    if (o->loss_scale >= 0.0f) return o->loss_scale;
    return o->precision == TRAIN_PRECISION_FP16 ? 65536.0f : 0.0f;
}

int train_opts_parse(train_opts *o, const char *flag, const char *v, oc_err *err) {
    if (strcmp(flag, "--freeze") == 0) {
        if (!*v || v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
            return oc_fail(err, "--freeze: '%s' is not a comma-separated list of name patterns", v);
        o->freeze = v;
        return 1;
    }
    if (strcmp(flag, "--optimizer") == 0) {
        if (strcmp(v, "sgd") == 0) o->optimizer = TRAIN_OPT_SGD;
        else if (strcmp(v, "adamw") == 0) o->optimizer = TRAIN_OPT_ADAMW;
        else return oc_fail(err, "--optimizer: '%s' is not one of sgd, adamw", v);
        return 1;
    }
    if (strcmp(flag, "--betas") == 0) {
        const char *comma = strchr(v, ',');
        if (!comma) return oc_fail(err, "--betas: '%s' is not B1,B2 (e.g. 0.9,0.95)", v);
        char b1[64];
        snprintf(b1, sizeof b1, "%.*s", (int)(comma - v), v);
        if (parse_float_in(flag, b1, 0, 1, true, &o->beta1, err) ||
            parse_float_in(flag, comma + 1, 0, 1, true, &o->beta2, err))
            return OC_ERR;
        return 1;
    }
    if (strcmp(flag, "--eps") == 0) {
        if (parse_float_in(flag, v, 0, 1, false, &o->epsilon, err)) return OC_ERR;
        if (!(o->epsilon > 0)) return oc_fail(err, "--eps must be positive");
        return 1;
    }
    if (strcmp(flag, "--clip-grad-norm") == 0) {
        if (parse_float_in(flag, v, 0, 1e30, false, &o->clip_grad_norm, err)) return OC_ERR;
        if (!(o->clip_grad_norm > 0)) return oc_fail(err, "--clip-grad-norm must be positive");
        return 1;
    }
    if (strcmp(flag, "--attention") == 0) {
        if (strcmp(v, "fused") == 0) o->fuse_attention = true;
        else if (strcmp(v, "unfused") == 0) o->fuse_attention = false;
        else return oc_fail(err, "--attention: '%s' is not one of fused, unfused", v);
        return 1;
    }
    if (strcmp(flag, "--fuse") == 0) {
        if (strcmp(v, "all") == 0) o->fuse = TRAIN_FUSE_ALL;
        else if (strcmp(v, "forward") == 0) o->fuse = TRAIN_FUSE_FORWARD;
        else if (strcmp(v, "none") == 0) o->fuse = TRAIN_FUSE_NONE;
        else return oc_fail(err, "--fuse: '%s' is not one of all, forward, none", v);
        return 1;
    }
    if (strcmp(flag, "--layout") == 0) {
        if (strcmp(v, "nchw") == 0) o->channels_last = false;
        else if (strcmp(v, "nhwc") == 0) o->channels_last = true;
        else return oc_fail(err, "--layout: '%s' is not one of nchw, nhwc", v);
        return 1;
    }
    if (strcmp(flag, "--precision") == 0) {
        if (strcmp(v, "fp32") == 0) o->precision = TRAIN_PRECISION_FP32;
        else if (strcmp(v, "bf16") == 0) o->precision = TRAIN_PRECISION_BF16;
        else if (strcmp(v, "fp16") == 0) o->precision = TRAIN_PRECISION_FP16;
        else return oc_fail(err, "--precision: '%s' is not one of fp32, bf16, fp16", v);
        return 1;
    }
    if (strcmp(flag, "--loss-scale") == 0) {
        if (strcmp(v, "auto") == 0) o->loss_scale = -1.0f;
        else if (strcmp(v, "none") == 0) o->loss_scale = 0.0f;
        else if (parse_float_in(flag, v, 1, 3.4028234e38, false, &o->loss_scale, err))
            return oc_fail(err, "--loss-scale: '%s' is not auto, none or a scale >= 1", v);
        return 1;
    }
    if (strcmp(flag, "--loss-scale-interval") == 0) {
        char *end;
        errno = 0;
        long long k = strtoll(v, &end, 10);
        if (end == v || *end || errno || k < 1 || k > (1 << 24))
            return oc_fail(err, "--loss-scale-interval: '%s' is not an integer in [1, 2^24]", v);
        o->loss_scale_interval = k;
        return 1;
    }
    if (strcmp(flag, "--ignore-index") == 0) {
        char *end;
        errno = 0;
        long long k = strtoll(v, &end, 10);
        if (end == v || *end || errno)
            return oc_fail(err, "--ignore-index: '%s' is not an integer", v);
        o->ignore_index = k;
        return 1;
    }
    return 0;
}
