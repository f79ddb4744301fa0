/* op_sequence.c — sequences of tensors whose every element is known at load: SequenceEmpty,
 * SequenceInsert (a tensor at a plan-time position), SequenceAt (a plan-time position: the
 * element, an Identity), ConcatFromSequence (a Concat of the elements). torch's legacy
 * exporter writes tensor_split so, in a Loop (op_loop.c unrolls it). A sequence tensor
 * (ir_tensor.is_sequence) lists its elements and has no storage: its readers become reads
 * of the elements at load, and the nodes writing sequences are removed once shapes are
 * inferred (shape_infer.c). A sequence the model takes as an input, or whose position is
 * computed at run time, is refused, named. */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

/* Input i, a sequence known at load, or OC_ERR naming it. */
static int in_sequence(ir_graph *g, ir_node *n, int i, ir_tensor **s, oc_err *err) {
    ir_tensor *x = ir_node_in(g, n, i);
    if (!x) return oc_fail(err, "input %d is missing", i);
    if (!x->is_sequence)
        return oc_fail(err,
                       "input '%s' is no sequence known at load (outcore takes sequences that "
                       "SequenceEmpty, SequenceInsert, SplitToSequence or an unrolled Loop "
                       "make, not a model's input)",
                       x->name);
    *s = x;
    return OC_OK;
}

/* A position: input i's plan-time integer scalar, in [-count, count + extra), as an index. */
static int in_position(ir_graph *g, ir_node *n, int i, int count, int extra, int *at, oc_err *err) {
    const int64_t *v;
    int64_t k;
    ir_tensor *p = ir_node_in(g, n, i);
    if (!p || !ir_tensor_int64_values(p, &v, &k) || k != 1)
        return oc_fail(err,
                       "position '%s' is computed at run time; outcore takes sequence positions "
                       "known at load",
                       p ? p->name : "");
    if (v[0] < -count || v[0] >= count + extra)
        return oc_fail(err, "position %" PRId64 " is outside a sequence of %d", v[0], count);
    *at = (int)(v[0] < 0 ? v[0] + count : v[0]);
    return OC_OK;
}

static int sequence_empty_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset, (void)err;
    op_set_out_sequence(g, n, 0, (ir_dtype)ir_attr_int(n, "dtype", IR_DTYPE_FLOAT), NULL, 0);
    return OC_OK;
}

/* SequenceInsert(S, T [, position]): S with T at position (default: the end). */
static int sequence_insert_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *s, *t;
    if (in_sequence(g, n, 0, &s, err) || op_in_shaped(g, n, 1, &t, err)) return OC_ERR;
    if (t->is_sequence) return oc_fail(err, "input '%s' is a sequence, not a tensor", t->name);
    if (s->n_items > 0 && t->dtype != s->dtype)
        return oc_fail(err, "tensor '%s' is not of the sequence's element type", t->name);
    if (s->n_items >= IR_MAX_NODES)
        return oc_fail(err, "a sequence of more than %d tensors", IR_MAX_NODES);
    int at = s->n_items;
    if (ir_node_in(g, n, 2) && in_position(g, n, 2, s->n_items, 1, &at, err)) return OC_ERR;
    int *items = oc_malloc(((size_t)s->n_items + 1) * sizeof *items), tid = n->inputs[1];
    memcpy(items, s->items, (size_t)at * sizeof *items);
    items[at] = tid;
    memcpy(items + at + 1, s->items + at, (size_t)(s->n_items - at) * sizeof *items);
    op_set_out_sequence(g, n, 0, g->tensors[tid].dtype, items, s->n_items + 1);
    oc_free(items);
    return OC_OK;
}

/* SequenceAt of a sequence known at load at a plan-time position: an Identity of that
 * element (rewritten before shapes are inferred, reading the element, not the sequence). */
static int sequence_at_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *s;
    int at;
    if (in_sequence(g, n, 0, &s, err) || in_position(g, n, 1, s->n_items, 0, &at, err))
        return OC_ERR;
    int item = s->items[at];
    op_rewrite_become(g, node, OP_IDENTITY);
    ir_node_add_input(g, node, item);
    *changed = true;
    return OC_OK;
}

/* Never reached: lowered (or refused) before. */
static int sequence_lowered_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)opset;
    return oc_fail(err, "%s reached shape inference unlowered", n->op_type);
}

/* ConcatFromSequence(S; axis, new_axis): a Concat of the elements, each Unsqueezed at axis
 * first with new_axis 1 (Concat and Unsqueeze check the shapes and the axis); past
 * OP_MAX_SPLIT elements, Concats of groups first. */
static int concat_from_sequence_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    ir_node *n = &g->nodes[node];
    ir_tensor *s;
    if (in_sequence(g, n, 0, &s, err)) return OC_ERR;
    if (s->n_items == 0) return oc_fail(err, "sequence '%s' is empty", s->name);
    if (s->n_items > OP_MAX_SPLIT * OP_MAX_SPLIT)
        return oc_fail(err, "sequence '%s' has %d tensors; outcore concatenates at most %d",
                       s->name, s->n_items, OP_MAX_SPLIT * OP_MAX_SPLIT);
    int64_t axis = ir_attr_int(n, "axis", 0);
    bool new_axis = ir_attr_int(n, "new_axis", 0) != 0;
    int count = s->n_items, *items = oc_malloc((size_t)count * sizeof *items);
    memcpy(items, s->items, (size_t)count * sizeof *items);
    char *base = oc_strdup(n->name);
    op_rewrite_become(g, node, OP_CONCAT);
    int at = node;
    for (int k = 0; k < count && new_axis; k++) {
        char what[32];
        snprintf(what, sizeof what, "unsqueezed_%d", k);
        items[k] = op_rewrite_axes(g, at, base, what, OP_UNSQUEEZE, items[k], 1, &axis, 13, -1);
        at++;
    }
    count = op_rewrite_concat_groups(g, &at, base, "items", items, count, axis);
    for (int k = 0; k < count; k++) ir_node_add_input(g, at, items[k]);
    op_rewrite_attr_int(g, at, "axis", axis);
    oc_free(items);
    oc_free(base);
    *changed = true;
    return OC_OK;
}

static const op_role seq_roles[] = {OP_IN_DATA, OP_IN_DATA, OP_IN_CONST};
static const op_role seq_at_roles[] = {OP_IN_DATA, OP_IN_CONST};

const op_def op_def_sequence_empty = {.min_inputs = 0,
                                      .max_inputs = 0,
                                      .min_outputs = 1,
                                      .max_outputs = 1,
                                      .roles = seq_roles,
                                      .n_roles = 1,
                                      .infer = sequence_empty_infer};
const op_def op_def_sequence_insert = {.min_inputs = 2,
                                       .max_inputs = 3,
                                       .min_outputs = 1,
                                       .max_outputs = 1,
                                       .roles = seq_roles,
                                       .n_roles = 3,
                                       .infer = sequence_insert_infer,
                                       .passes_data = true};
const op_def op_def_sequence_at = {.min_inputs = 2,
                                   .max_inputs = 2,
                                   .min_outputs = 1,
                                   .max_outputs = 1,
                                   .roles = seq_at_roles,
                                   .n_roles = 2,
                                   .infer = sequence_lowered_infer,
                                   .lower = sequence_at_lower};
const op_def op_def_concat_from_sequence = {.min_inputs = 1,
                                            .max_inputs = 1,
                                            .min_outputs = 1,
                                            .max_outputs = 1,
                                            .roles = seq_roles,
                                            .n_roles = 1,
                                            .infer = sequence_lowered_infer,
                                            .lower = concat_from_sequence_lower};
