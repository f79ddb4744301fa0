/* op_bags.c — the two project-domain ops of nn.EmbeddingBag's rewrite (ir/bag_reduce.c,
 * ir/bag_loop.c), neither a kernel.
 *
 * BagBounds: the run-time bounds E of the bags (bag i reads ids E[i] to E[i + 1]: the
 * offsets, then the ids' count), checked each step where the host program computes them
 * and passed on unchanged. The scatter-add that reduces the bags gives each id one bag; it
 * is the exported loop's per-bag slices, and PyTorch's bags, only for bounds ascending from
 * 0 or more to at most the ids' count (attribute ids). Others are refused, naming the
 * offsets (attribute input): a negative offset the slices would count from the end, one
 * past the ids PyTorch refuses, and descending ones would make overlapping or reversed
 * slices. Host program only (OC_OPS_FOLD).
 *
 * BagReduce(rows, E): the bags' sums (mode 0), means (1) or maxima (2) of rows [E[i], E[i + 1]),
 * [n, D..] for the n + 1 bounds E computed on the host: an exporter's whole Loop over the
 * bags as bag_loop.c recognizes it, which ir_bag_reductions turns into the scatter-add once
 * the host program is built (OC_OPS_LOWERED: it never runs). Max bags (mode 2) become
 * SegmentMax.
 *
 * SegmentMax(rows [L, D..], E [n + 1] int64) -> Y [n, D..], A [n, D..] int64: Y[i] the
 * elementwise max of rows [E[i], E[i + 1]) (0 for an empty bag, as nn.EmbeddingBag's), A[i]
 * the row each element came from (the first of equal ones; a NaN wins; -1 for an empty
 * bag). The bounds ascend within [0, L]: BagBounds checks them each step before they reach
 * it; plan-time bounds are checked here, and each backend's kernel checks (cpu: refused,
 * named) or clamps (cuda) them too, a hostile file's included. The gradient,
 * SegmentMaxGrad(dY, A) -> dRows: zeros, dY[i] at row A[i] (one bag a row: no sums).
 * A is added by the rule when absent (as Dropout's mask) and is all the backward saves. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/grad_api.h"
#include "ir/ops/op_fold_num.h"
#include "ir/ops/op_util.h"

static int bag_bounds_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *e;
    if (op_fold_need_value(g, n, 0, &e, err)) return OC_ERR;
    int64_t count, len = ir_attr_int(n, "ids", -1);
    const int64_t *v;
    if (e->rank != 1 || !ir_tensor_int64_values(e, &v, &count) || count < 1 || len < 0)
        return oc_fail(err, "input '%s' is not the 1-d int64 bounds of bags of ids", e->name);
    const char *what = ir_attr_string(n, "input", e->name);
    for (int64_t i = 0; i < count; i++) {
        if (v[i] < 0)
            return oc_fail(err,
                           "input '%s': nn.EmbeddingBag's offset %" PRId64 " is %" PRId64
                           ", negative (offsets index the ids from 0)",
                           what, i, v[i]);
        if (v[i] > len)
            return oc_fail(err,
                           "input '%s': nn.EmbeddingBag's offset %" PRId64 " is %" PRId64
                           ", past the %" PRId64 " ids",
                           what, i, v[i], len);
        if (i > 0 && v[i] < v[i - 1])
            return oc_fail(err,
                           "input '%s': nn.EmbeddingBag's offsets descend: offset %" PRId64
                           " is %" PRId64 ", below offset %" PRId64 "'s %" PRId64
                           " (a bag's ids are those from its offset to the next one)",
                           what, i, v[i], i - 1, v[i - 1]);
    }
    op_set_out_like(g, n, 0, e);
    int64_t numel;
    uint8_t *buf = op_fold_out(g, n, &numel, err);
    if (!buf) return OC_ERR;
    memcpy(buf, v, (size_t)count * sizeof *v);
    return op_fold_set(g, n, buf, numel);
}

FOLD_OP(op_def_bag_bounds, 1, bag_bounds_infer);

static int bag_reduce_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *r, *e;
    if (op_in_shaped(g, n, 0, &r, err) || op_in_shaped(g, n, 1, &e, err)) return OC_ERR;
    int64_t mode = ir_attr_int(n, "mode", -1);
    if (!ir_dtype_is_float(r->dtype) || r->rank < 1 || r->rank > IR_MAX_RANK - 1 ||
        e->dtype != IR_DTYPE_INT64 || e->rank != 1 || e->dims[0] < 2 || mode < 0 || mode > 2)
        return oc_fail(err, "rows '%s' and bounds '%s' are not float rows and int64 bounds",
                       r->name, e->name);
    int64_t dims[IR_MAX_RANK];
    dims[0] = e->dims[0] - 1;
    for (int d = 1; d < r->rank; d++) dims[d] = r->dims[d];
    op_set_out(g, n, 0, r->dtype, r->rank, dims);
    return OC_OK;
}

static const op_role bag_reduce_roles[] = {OP_IN_DATA, OP_IN_DATA};
const op_def op_def_bag_reduce = {.min_inputs = 2,
                                  .max_inputs = 2,
                                  .min_outputs = 1,
                                  .max_outputs = 1,
                                  .roles = bag_reduce_roles,
                                  .n_roles = 2,
                                  .infer = bag_reduce_infer};

/* Bounds E of bags of rows of length len, when they are a plan-time value: ascending
 * within [0, len]; else nothing to check until the kernel runs. */
static int plan_time_bounds_ok(const ir_tensor *e, int64_t len, oc_err *err) {
    const int64_t *v;
    int64_t count;
    if (!op_is_value(e) || !ir_tensor_int64_values(e, &v, &count)) return OC_OK;
    for (int64_t i = 0; i < count; i++)
        if (v[i] < (i ? v[i - 1] : 0) || v[i] > len)
            return oc_fail(err,
                           "bounds '%s': bound %" PRId64 " is %" PRId64
                           ", not ascending within [0, %" PRId64 "]",
                           e->name, i, v[i], len);
    return OC_OK;
}

static int segment_max_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *r, *e;
    if (op_in_shaped(g, n, 0, &r, err) || op_in_shaped(g, n, 1, &e, err)) return OC_ERR;
    if (!ir_dtype_is_float(r->dtype) || r->rank < 1 || e->dtype != IR_DTYPE_INT64 || e->rank != 1 ||
        e->dims[0] < 2)
        return oc_fail(err, "rows '%s' and bounds '%s' are not float rows and 1-d int64 bounds",
                       r->name, e->name);
    if (plan_time_bounds_ok(e, r->dims[0], err)) return OC_ERR;
    int64_t dims[IR_MAX_RANK];
    dims[0] = e->dims[0] - 1;
    for (int d = 1; d < r->rank; d++) dims[d] = r->dims[d];
    op_set_out(g, n, 0, r->dtype, r->rank, dims);
    if (n->n_outputs > 1) op_set_out(g, n, 1, IR_DTYPE_INT64, r->rank, dims);
    return OC_OK;
}

/* dRows = SegmentMaxGrad(dY, A), the rows' shape. */
static int segment_max_grad_rule(grad_ctx *c) {
    int dy = grad_dy(c, 0);
    if (dy < 0 || !grad_wants(c, 0)) return OC_OK;
    int arg = grad_fwd_out(c, 1);
    if (arg < 0 && (arg = grad_fwd_add_output(c, "arg")) < 0) return OC_ERR;
    const ir_tensor *x = &grad_graph(c)->tensors[grad_fwd_in(c, 0)];
    int b = grad_node(c, "grad", OP_SEGMENT_MAX_GRAD);
    grad_in(c, b, dy);
    grad_in(c, b, arg);
    grad_out_dx(c, b, 0);
    grad_attr_ints(c, b, "input_shape", x->rank, x->dims);
    return grad_finish(c, b);
}

/* SegmentMaxGrad(dY [n, D..], A [n, D..] int64) -> dRows (input_shape [L, D..]). */
static int segment_max_grad_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *dy, *a;
    if (op_in_shaped(g, n, 0, &dy, err) || op_in_shaped(g, n, 1, &a, err)) return OC_ERR;
    const int64_t *dims;
    int r = ir_attr_ints(n, "input_shape", &dims);
    bool ok = ir_dtype_is_float(dy->dtype) && a->dtype == IR_DTYPE_INT64 && r == dy->rank &&
              r >= 1 && r <= IR_MAX_RANK && a->rank == r && dims[0] >= 0;
    for (int d = 0; ok && d < r; d++)
        ok = a->dims[d] == dy->dims[d] && (d == 0 || dims[d] == dy->dims[d]);
    if (!ok)
        return oc_fail(err, "'%s', the winners '%s' and input_shape do not agree", dy->name,
                       a->name);
    op_set_out(g, n, 0, dy->dtype, r, dims);
    return OC_OK;
}

static const op_role segment_max_roles[] = {OP_IN_DATA, OP_IN_CONST};
const op_def op_def_segment_max = {.min_inputs = 2,
                                   .max_inputs = 2,
                                   .min_outputs = 1,
                                   .max_outputs = 2,
                                   .roles = segment_max_roles,
                                   .n_roles = 2,
                                   .infer = segment_max_infer,
                                   .grad = segment_max_grad_rule,
                                   .saved_outputs = 0x2};
static const op_role segment_max_grad_roles[] = {OP_IN_DATA, OP_IN_DATA};
const op_def op_def_segment_max_grad = {.min_inputs = 2,
                                        .max_inputs = 2,
                                        .min_outputs = 1,
                                        .max_outputs = 1,
                                        .roles = segment_max_grad_roles,
                                        .n_roles = 2,
                                        .infer = segment_max_grad_infer};
