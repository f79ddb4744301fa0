/* op_col2im.c — Col2Im (opset 18: torch's F.fold, VOLO's outlook attention): columns
 * (N, C * prod(block), L) of blocks summed back into an image (N, C, image_shape..),
 * each block at its sliding position (strides, pads, dilations).
 * Rewritten at load (op_def.lower) into what runs and differentiates already: the
 * columns reshaped to (N, C * B, L_1, .., L_k), then a ConvTranspose of group C whose
 * plan-time weight (C * B, 1, block..) is one-hot, input channel c * B + j writing block
 * offset j of channel c; output_padding makes up the rows no block reaches. Its gradient
 * is the convolution with that weight: F.unfold, as PyTorch's. Nodes "<node>/<step>". */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* An attribute's k values, or `dflt` each when absent; false when it has another count. */
static bool attr_k(const ir_node *n, const char *name, int k, int64_t dflt, int64_t *out) {
    const int64_t *v;
    int c = ir_attr_ints(n, name, &v);
    if (c < 0) {
        for (int i = 0; i < k; i++) out[i] = dflt;
        return true;
    }
    if (c != k) return false;
    memcpy(out, v, (size_t)k * sizeof *v);
    return true;
}

static int col2im_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *x;
    const int64_t *img, *blk;
    int64_t ni, nb;
    if (op_in_shaped(g, n, 0, &x, err) || op_in_int64s(g, n, 1, &img, &ni, err) ||
        op_in_int64s(g, n, 2, &blk, &nb, err))
        return OC_ERR;
    int k = (int)ni;
    if (ni != nb || ni < 1 || ni + 2 > IR_MAX_RANK)
        return oc_fail(err, "image_shape has %" PRId64 " values, block_shape %" PRId64, ni, nb);
    if (x->rank != 3 || x->dtype != IR_DTYPE_FLOAT)
        return oc_fail(err, "input '%s' must be float32 (N, C * prod(block_shape), L)", x->name);
    int64_t dil[IR_MAX_RANK], str[IR_MAX_RANK], pads[2 * IR_MAX_RANK], blocks = 1, l = 1;
    if (!attr_k(n, "dilations", k, 1, dil) || !attr_k(n, "strides", k, 1, str) ||
        !attr_k(n, "pads", 2 * k, 0, pads))
        return oc_fail(err, "dilations, strides and pads must have %d, %d and %d values", k, k,
                       2 * k);
    int64_t rows[IR_MAX_RANK], opad[IR_MAX_RANK], kernel[IR_MAX_RANK];
    for (int d = 0; d < k; d++) {
        if (blk[d] < 1 || img[d] < 1 || dil[d] < 1 || str[d] < 1 || pads[d] < 0 ||
            pads[d + k] < 0 || blk[d] > 64 || img[d] > (INT64_C(1) << 32) || dil[d] > 64 ||
            str[d] > 64 || pads[d] > 64 || pads[d + k] > 64)
            return oc_fail(err,
                           "dim %d: image %" PRId64 ", block %" PRId64 ", dilation %" PRId64
                           ", stride %" PRId64 " and pads %" PRId64 ", %" PRId64
                           " must be positive (pads >= 0) and at most 64 (the image 2^32)",
                           d, img[d], blk[d], dil[d], str[d], pads[d], pads[d + k]);
        int64_t span = img[d] + pads[d] + pads[d + k] - dil[d] * (blk[d] - 1) - 1;
        if (span < 0)
            return oc_fail(err, "dim %d: a block of %" PRId64 " does not fit the image", d, blk[d]);
        rows[d] = span / str[d] + 1;
        opad[d] = span % str[d];
        kernel[d] = blk[d];
        blocks *= blk[d]; /* at most 64^6 */
        if (!oc_mul_i64(l, rows[d], &l))
            return oc_fail(err, "the blocks' positions overflow int64 at dim %d", d);
    }
    int64_t cb = x->dims[1];
    if (cb % blocks || x->dims[2] != l)
        return oc_fail(err,
                       "input '%s' is [%" PRId64 ", %" PRId64 ", %" PRId64
                       "]; these blocks need [N, C * %" PRId64 ", %" PRId64 "]",
                       x->name, x->dims[0], cb, x->dims[2], blocks, l);
    int64_t c = cb / blocks, wn = 0;
    if (!oc_mul_i64(cb, blocks, &wn) || wn > OP_FOLD_MAX_BYTES / (int64_t)sizeof(float))
        return oc_fail(err, "its one-hot weight (%" PRId64 " x %" PRId64 ") is too large", cb,
                       blocks);
    int64_t xshape[IR_MAX_RANK], wdims[IR_MAX_RANK];
    xshape[0] = x->dims[0];
    xshape[1] = cb;
    memcpy(xshape + 2, rows, (size_t)k * sizeof *rows);
    wdims[0] = cb;
    wdims[1] = 1;
    memcpy(wdims + 2, kernel, (size_t)k * sizeof *kernel);
    float *w = oc_calloc((size_t)wn, sizeof *w);
    for (int64_t i = 0; i < cb; i++) w[i * blocks + i % blocks] = 1.0f;
    int xt = n->inputs[0];
    char *base = oc_strdup(n->name);
    int wt = op_rewrite_constant(g, base, "weight", IR_DTYPE_FLOAT, k + 2, wdims, w);
    oc_free(w);
    int grid = op_rewrite_reshape(g, node, base, "grid", xt, k + 2, xshape);
    op_rewrite_become(g, node + 1, OP_CONV_TRANSPOSE);
    ir_node_add_input(g, node + 1, grid);
    ir_node_add_input(g, node + 1, wt);
    ir_attr a[] = {
        {.name = "group", .type = IR_ATTR_INT, .i = c},
        {.name = "kernel_shape", .type = IR_ATTR_INTS, .n = k, .ints = kernel},
        {.name = "strides", .type = IR_ATTR_INTS, .n = k, .ints = str},
        {.name = "dilations", .type = IR_ATTR_INTS, .n = k, .ints = dil},
        {.name = "pads", .type = IR_ATTR_INTS, .n = 2 * k, .ints = pads},
        {.name = "output_padding", .type = IR_ATTR_INTS, .n = k, .ints = opad},
    };
    for (size_t i = 0; i < sizeof a / sizeof *a; i++) ir_node_add_attr(g, node + 1, &a[i]);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

/* Never reached: the node is rewritten before its shapes are inferred. */
static int col2im_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)n, (void)opset;
    return oc_fail(err, "Col2Im reached shape inference unrewritten");
}

static const op_role col2im_roles[] = {OP_IN_DATA, OP_IN_CONST, OP_IN_CONST};

const op_def op_def_col2im = {
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = col2im_roles,
    .n_roles = 3,
    .infer = col2im_infer,
    .lower = col2im_lower,
};
