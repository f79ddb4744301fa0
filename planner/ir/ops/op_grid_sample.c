/* op_grid_sample.c — GridSample (F.grid_sample: spatial transformers, optical-flow warping,
 * deformable attention's sampling, point sampling of mask heads): Y[n, c, p] = X[n, c] read
 * at grid[n, p] = (x, y) in [-1, 1], bilinear, nearest or bicubic, zeros / border /
 * reflection padding, align_corners either way (runtime/grid_sample.h: PyTorch's
 * arithmetic); a volume X [N, C, D, H, W] (VoxelMorph's spatial transformer, the default
 * exporter's 5-D GridSample) trilinear or nearest. GridSampleGrad(dY, X, grid; input 0 or 1) ->
 * dX or dGrid, each its own node; nearest sampling's dGrid is zeros, as PyTorch's. */
#include <string.h>

#include "grid_sample.h"
#include "ir/ops/grad_rules.h"
#include "ir/ops/op_util.h"

/* mode, padding_mode, align_corners (GridSampleGrad: the same, and which input). */
static int grid_sample_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    op_grid_sample_args *p = &op_args_new(n)->grid_sample;
    const char *mode = ir_attr_string(n, "mode", g->opset >= 20 ? "linear" : "bilinear");
    const char *pad = ir_attr_string(n, "padding_mode", "zeros");
    if (!strcmp(mode, "bilinear") || !strcmp(mode, "linear")) p->mode = OC_GS_BILINEAR;
    else if (!strcmp(mode, "nearest")) p->mode = OC_GS_NEAREST;
    else if (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic")) p->mode = OC_GS_BICUBIC;
    else
        return oc_fail(
            err, "mode '%s' is not supported (bilinear / linear, nearest, bicubic / cubic)", mode);
    if (!strcmp(pad, "zeros")) p->padding = OC_GS_ZEROS;
    else if (!strcmp(pad, "border")) p->padding = OC_GS_BORDER;
    else if (!strcmp(pad, "reflection")) p->padding = OC_GS_REFLECTION;
    else return oc_fail(err, "padding_mode '%s' is not one of zeros, border, reflection", pad);
    p->align_corners = ir_attr_int(n, "align_corners", 0) != 0;
    p->input = (int)ir_attr_int(n, "input", 0);
    if (n->op == OP_GRID_SAMPLE_GRAD && p->input != 0 && p->input != 1)
        return oc_fail(err, "input %d is not 0 (X) or 1 (grid)", p->input);
    return OC_OK;
}

/* X [N, C, H, W] and grid [N, Ho, Wo, 2], or a volume X [N, C, D, H, W] and grid
 * [N, Do, Ho, Wo, 3] (not bicubic: PyTorch's is 2-D only), both float of one type. */
static int shapes(ir_graph *g, ir_node *n, int xi, ir_tensor **x, ir_tensor **grid, oc_err *err) {
    if (op_in_shaped(g, n, xi, x, err) || op_in_shaped(g, n, xi + 1, grid, err)) return OC_ERR;
    const ir_tensor *a = *x, *b = *grid;
    if (a->rank != 4 && a->rank != 5)
        return oc_fail(err,
                       "input '%s' has rank %d; GridSample runs on [N, C, H, W] or [N, C, D, H, W]",
                       a->name, a->rank);
    if (b->rank != a->rank || b->dims[b->rank - 1] != a->rank - 2 || b->dims[0] != a->dims[0])
        return oc_fail(err, "grid '%s' is not [N, %s, %d] with N = %lld", b->name,
                       a->rank == 4 ? "Ho, Wo" : "Do, Ho, Wo", a->rank - 2, (long long)a->dims[0]);
    const char *mode = ir_attr_string(n, "mode", "");
    if (a->rank == 5 && (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic")))
        return oc_fail(err, "mode '%s' samples [N, C, H, W] only; input '%s' is a volume", mode,
                       a->name);
    if (!ir_dtype_is_compute(a->dtype) || a->dtype != b->dtype)
        return oc_fail(err, "input '%s' (%s) and grid '%s' (%s) must be float of one type", a->name,
                       ir_dtype_name(a->dtype), b->name, ir_dtype_name(b->dtype));
    return OC_OK;
}

static int grid_sample_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x, *grid;
    if (shapes(g, n, 0, &x, &grid, err)) return OC_ERR;
    int64_t y[5] = {x->dims[0], x->dims[1], grid->dims[1], grid->dims[2], grid->dims[3]};
    op_set_out(g, n, 0, x->dtype, x->rank, y);
    return OC_OK;
}

/* GridSampleGrad(dY, X, grid) -> dX (input 0) or dGrid (input 1). */
static int grid_sample_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *x, *grid;
    if (op_in_shaped(g, n, 0, &dy, err) || shapes(g, n, 1, &x, &grid, err)) return OC_ERR;
    int64_t y[5] = {x->dims[0], x->dims[1], grid->dims[1], grid->dims[2], grid->dims[3]};
    if (dy->rank != x->rank || memcmp(dy->dims, y, (size_t)x->rank * sizeof y[0]))
        return oc_fail(err, "dY '%s' is not shaped as GridSample's output", dy->name);
    op_set_out_like(g, n, 0, ir_attr_int(n, "input", 0) ? grid : x);
    return OC_OK;
}

static int grid_sample_grad(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0) return OC_OK;
    for (int i = 0; i < 2; i++) {
        if (!grad_wants(c, i)) continue;
        int b = grad_node(c, i ? "grad_grid" : "grad_x", OP_GRID_SAMPLE_GRAD);
        grad_in(c, b, dy);
        grad_in(c, b, grad_fwd_in(c, 0));
        grad_in(c, b, grad_fwd_in(c, 1));
        grad_out_dx(c, b, i);
        grad_copy_attrs(c, b);
        grad_attr_int(c, b, "input", i);
        if (grad_finish(c, b)) return OC_ERR;
    }
    return OC_OK;
}

static const op_role grid_sample_roles[] = {OP_IN_DATA, OP_IN_DATA};

const op_def op_def_grid_sample = {
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = grid_sample_roles,
    .n_roles = 2,
    .infer = grid_sample_infer,
    .decode = grid_sample_decode,
    .grad = grid_sample_grad,
    .saved_inputs = 0x3,
    .autocast = OP_AUTOCAST_FP32, /* PyTorch's list: grid_sampler in float32 */
};
const op_def op_def_grid_sample_grad = {
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = grid_sample_roles,
    .n_roles = 1,
    .infer = grid_sample_grad_infer,
    .decode = grid_sample_decode,
};
