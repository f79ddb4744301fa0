/* op_random.c — RandomUniformLike, the random source of the dropout and
 * stochastic-depth patterns torch 2.x's exporter writes
 * (RandomUniformLike -> Less -> Cast -> Div -> Mul). Its numbers are a pure
 * function of (seed, step, node name, element), as Dropout's mask is, so a
 * recomputed node draws the same ones. Not differentiable (nothing needs it:
 * its input is only a shape). */
#include <inttypes.h>
#include <math.h>

#include "ir/ops/op_util.h"

/* Y: input 0's shape, of type 'dtype' (default input 0's); float only. */
static int random_like_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    int64_t dt = ir_attr_int(n, "dtype", x->dtype);
    if (dt != IR_DTYPE_FLOAT) return oc_fail(err, "dtype %" PRId64 " is not float", dt);
    op_set_out(g, n, 0, IR_DTYPE_FLOAT, x->rank, x->dims);
    return OC_OK;
}

static int random_like_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_random_args *p = &op_args_new(n)->random;
    p->low = ir_attr_float(n, "low", 0.0f);
    p->high = ir_attr_float(n, "high", 1.0f);
    if (!isfinite(p->low) || !isfinite(p->high) || !(p->low <= p->high))
        return oc_fail(err, "low %g and high %g must be finite, low <= high", (double)p->low,
                       (double)p->high);
    if (ir_attr_find(n, "seed"))
        return oc_fail(err, "attribute 'seed' is not supported: outcore seeds every random node "
                            "from the run's --seed, the step and the node's name");
    p->key_hash = op_name_hash(ir_attr_string(n, "outcore_recompute_of", n->name));
    return OC_OK;
}

static const op_role const_role[] = {OP_IN_CONST};

const op_def op_def_random_uniform_like = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = const_role,
    .n_roles = 1,
    .infer = random_like_infer,
    .decode = random_like_decode,
    .autocast = OP_AUTOCAST_FP32,
};
