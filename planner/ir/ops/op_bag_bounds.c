/* op_bag_bounds.c — BagBounds (ai.outcore): the run-time bounds E of nn.EmbeddingBag's bags
 * (bag i reads ids E[i] to E[i + 1]: the offsets, then the ids' count), checked each step
 * where the host program computes them (ir/bag_reduce.c) and passed on unchanged. The
 * scatter-add that reduces the bags there gives each id one bag; it is the exported loop's
 * per-bag slices, and PyTorch's bags, only for bounds ascending from 0 or more to at most
 * the ids' count (attribute ids). Others are refused, naming the offsets (attribute input):
 * a negative offset the slices would count from the end, one past the ids PyTorch refuses,
 * and descending ones would make overlapping or reversed slices. Host program only: no
 * kernel. */
#include <inttypes.h>
#include <string.h>

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
