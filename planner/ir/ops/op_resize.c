/* op_resize.c — Resize (opset 10 on) and Upsample (opset 9): nearest, linear and
 * cubic interpolation over the spatial dims (FCN and DeepLabV3 upsample their
 * logits with F.interpolate; DINOv2 resizes its position table bicubically),
 * shapes from sizes or scales known at plan time;
 * its gradient rule and the backward op ResizeGrad (every output's weights
 * scattered back) beside it. The source coordinates: runtime/resize_coord.h. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

static int parse_mode(const ir_node *n, int64_t opset, op_resize_args *p, oc_err *err) {
    const char *mode = ir_attr_string(n, "mode", "nearest");
    if (strcmp(mode, "nearest") == 0) p->mode = OP_RESIZE_NEAREST;
    else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
        p->mode = OP_RESIZE_LINEAR;
    else if (strcmp(mode, "cubic") == 0 || strcmp(mode, "bicubic") == 0) p->mode = OP_RESIZE_CUBIC;
    else return oc_fail(err, "mode '%s' is not supported (nearest, linear, cubic)", mode);
    p->cubic_a = ir_attr_float(n, "cubic_coeff_a", -0.75f);
    p->exclude_outside = ir_attr_int(n, "exclude_outside", 0) != 0;
    if (!isfinite(p->cubic_a)) return oc_fail(err, "cubic_coeff_a is not finite");
    /* Upsample and opset-10 Resize map output to input by x / scale. */
    bool old = n->op == OP_UPSAMPLE || (n->op == OP_RESIZE && opset < 11);
    const char *ct =
        ir_attr_string(n, "coordinate_transformation_mode", old ? "asymmetric" : "half_pixel");
    static const char *const cts[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                      "asymmetric"};
    p->coord = (op_resize_coord)-1;
    for (int i = 0; i < 4; i++)
        if (strcmp(ct, cts[i]) == 0) p->coord = (op_resize_coord)i;
    if ((int)p->coord < 0)
        return oc_fail(err, "coordinate_transformation_mode '%s' is not supported", ct);
    const char *nm = ir_attr_string(n, "nearest_mode", old ? "floor" : "round_prefer_floor");
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    p->nearest = (op_resize_nearest)-1;
    for (int i = 0; i < 4; i++)
        if (strcmp(nm, nms[i]) == 0) p->nearest = (op_resize_nearest)i;
    if ((int)p->nearest < 0) return oc_fail(err, "nearest_mode '%s' is not supported", nm);
    p->antialias = ir_attr_int(n, "antialias", 0) != 0 && p->mode != OP_RESIZE_NEAREST;
    if (p->antialias && (p->coord != OP_RESIZE_HALF_PIXEL || !p->exclude_outside))
        return oc_fail(err, "antialias is supported with coordinate_transformation_mode half_pixel "
                            "and exclude_outside 1 (F.interpolate(antialias=True)'s)");
    if (p->exclude_outside && p->mode != OP_RESIZE_CUBIC && !p->antialias)
        return oc_fail(err, "exclude_outside is supported in mode cubic (or with antialias) only");
    if (ir_attr_find(n, "axes") ||
        strcmp(ir_attr_string(n, "keep_aspect_ratio_policy", "stretch"), "stretch"))
        return oc_fail(err, "axes and keep_aspect_ratio_policy are not supported");
    return OC_OK;
}

/* Output extents and per-dim scales from sizes (int64) or scales (float). */
static int resize_shape(ir_graph *g, ir_node *n, const ir_tensor *x, int64_t *y, op_resize_args *p,
                        oc_err *err) {
    int scales_in = g->opset >= 11 && n->op == OP_RESIZE ? 2 : 1;
    int sizes_in = g->opset >= 11 && n->op == OP_RESIZE ? 3 : -1;
    if (x->rank < 3 || x->rank - 2 > OP_RESIZE_MAX_SP)
        return oc_fail(err, "'%s' must have 1 to %d spatial dims after N, C", x->name,
                       OP_RESIZE_MAX_SP);
    p->nsp = x->rank - 2;
    const int64_t *sz;
    int64_t ns;
    const ir_tensor *st = ir_node_in(g, n, scales_in);
    int64_t nsc = 0;
    if (st && !ir_tensor_numel(st, &nsc)) nsc = 0;
    if (sizes_in > 0 && ir_node_in(g, n, sizes_in)) {
        if (op_in_int64s(g, n, sizes_in, &sz, &ns, err)) return OC_ERR;
        if (ns != x->rank) return oc_fail(err, "sizes has %" PRId64 " values", ns);
        for (int d = 0; d < x->rank; d++) y[d] = sz[d];
        for (int d = 0; d < p->nsp; d++)
            p->scale[d] = x->dims[2 + d] ? (double)y[2 + d] / (double)x->dims[2 + d] : 1.0;
    } else if (st && nsc > 0) {
        if (st->dtype != IR_DTYPE_FLOAT || st->data_src != IR_DATA_INLINE || nsc != x->rank)
            return oc_fail(err, "scales '%s' must be %d floats known at plan time", st->name,
                           x->rank);
        const float *sc = st->data;
        for (int d = 0; d < x->rank; d++) {
            if (!(sc[d] > 0.0f) || !isfinite(sc[d]))
                return oc_fail(err, "scale %g is not positive", (double)sc[d]);
            y[d] = (int64_t)floor((double)x->dims[d] * (double)sc[d]);
            if (d >= 2) p->scale[d - 2] = sc[d];
        }
    } else {
        return oc_fail(err, "needs sizes or scales known at plan time");
    }
    if (y[0] != x->dims[0] || y[1] != x->dims[1])
        return oc_fail(err, "only the spatial dims may be resized");
    for (int d = 2; d < x->rank; d++)
        if (y[d] < 1 || y[d] > ((int64_t)1 << 31))
            return oc_fail(err, "output extent %" PRId64 " is out of range", y[d]);
    return OC_OK;
}

static int resize_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    op_resize_args p;
    int64_t y[IR_MAX_RANK];
    if (op_in_shaped(g, n, 0, &x, err) || parse_mode(n, g->opset, &p, err) ||
        resize_shape(g, n, x, y, &p, err))
        return OC_ERR;
    if (!ir_dtype_is_compute(x->dtype)) return oc_fail(err, "input '%s' is not float", x->name);
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

static int resize_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    op_resize_args *p = &op_args_new(n)->resize;
    if (parse_mode(n, g->opset, p, err)) return OC_ERR;
    if (n->op == OP_RESIZE_GRAD) {
        const ir_tensor *dx = ir_node_out((ir_graph *)g, n, 0);
        const int64_t *s;
        p->nsp = dx->rank - 2;
        if (ir_attr_ints(n, "scales_x1e9", &s) != p->nsp || p->nsp < 1 || p->nsp > OP_RESIZE_MAX_SP)
            return oc_fail(err, "attribute 'scales_x1e9' needs one value per spatial dim");
        for (int d = 0; d < p->nsp; d++) p->scale[d] = (double)s[d] / 1e9;
        return OC_OK;
    }
    int64_t y[IR_MAX_RANK];
    return resize_shape((ir_graph *)g, n, ir_node_in((ir_graph *)g, n, 0), y, p, err);
}

/* dX = ResizeGrad(dY): the forward's mode and coordinates, scales kept exactly
 * (as integers of 1e-9: ONNX has no double attribute). */
static int resize_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    const ir_node *f = grad_fwd(c);
    const op_resize_args *p = &op_args_of(f)->resize;
    static const char *const cts[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                      "asymmetric"};
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    const char *ct = cts[p->coord], *nm = nms[p->nearest], *mode = modes[p->mode];
    int64_t sc[OP_RESIZE_MAX_SP], dims[IR_MAX_RANK];
    int nsp = p->nsp;
    for (int d = 0; d < nsp; d++) sc[d] = (int64_t)llround(p->scale[d] * 1e9);
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int rank = x->rank;
    memcpy(dims, x->dims, sizeof dims);
    int b = grad_node(c, "grad", OP_RESIZE_GRAD);
    grad_in(c, b, dy);
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "input_shape", rank, dims);
    grad_attr_ints(c, b, "scales_x1e9", nsp, sc);
    grad_attr_string(c, b, "mode", mode);
    grad_attr_string(c, b, "coordinate_transformation_mode", ct);
    grad_attr_string(c, b, "nearest_mode", nm);
    if (p->mode == OP_RESIZE_CUBIC) grad_attr_float(c, b, "cubic_coeff_a", (float)p->cubic_a);
    if (p->mode == OP_RESIZE_CUBIC || p->antialias)
        grad_attr_int(c, b, "exclude_outside", p->exclude_outside);
    if (p->antialias) grad_attr_int(c, b, "antialias", 1);
    return grad_finish(c, b);
}

static int resize_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy;
    if (op_in_shaped(g, n, 0, &dy, err)) return OC_ERR;
    const int64_t *dims;
    int r = ir_attr_ints(n, "input_shape", &dims);
    if (r != dy->rank || r < 3 || dims[0] != dy->dims[0] || dims[1] != dy->dims[1])
        return oc_fail(err, "input_shape does not match '%s' in N, C", dy->name);
    for (int d = 2; d < r; d++)
        if (dims[d] < 1 || dims[d] > ((int64_t)1 << 31))
            return oc_fail(err, "input_shape dim %d is out of range", d);
    op_set_out(g, n, 0, dy->dtype, r, dims);
    return OC_OK;
}

static const op_role data_then_const[] = {OP_IN_DATA, OP_IN_CONST};
static const op_role data_role[] = {OP_IN_DATA};

const op_def op_def_resize = {
    .min_inputs = 1,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = resize_infer,
    .decode = resize_decode,
    .grad = resize_grad,
};
const op_def op_def_upsample = {
    .min_inputs = 1,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_then_const,
    .n_roles = 2,
    .infer = resize_infer,
    .decode = resize_decode,
    .grad = resize_grad,
};
const op_def op_def_resize_grad = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = resize_grad_infer,
    .decode = resize_decode,
};
