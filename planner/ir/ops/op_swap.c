/* op_swap.c — the copy ops of a rewritten plan (DESIGN §7), in OC_DOMAIN and
 * opaque to ONNX tools (no optimizer knows them, so none deletes them):
 *   SwapOut: X (device) -> X_host (host), same shape; runs on the D2H stream.
 *   SwapIn:  X_host (host) -> X' (device, a new tensor name), same shape; H2D.
 * No gradient: they only appear in plans, after autodiff. The runtime maps them
 * to copies (runtime/executor.c), never to kernels. */
#include "ir/ops/op_util.h"

static const op_role swap_roles[] = {OP_IN_DATA};

/* X -> Y with X's dtype and shape. */
static int swap_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    ir_tensor *x;
    if (op_in_shaped(g, n, 0, &x, err)) return OC_ERR;
    op_set_out_like(g, n, 0, x);
    return OC_OK;
}

/* A copy moves bytes and computes nothing. */
static void swap_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    int64_t b = 0;
    const ir_tensor *x = n->n_inputs > 0 && n->inputs[0] >= 0 ? &g->tensors[n->inputs[0]] : NULL;
    if (x && !ir_tensor_bytes(x, &b)) b = 0;
    c->flops = 0;
    c->bytes_read = c->bytes_written = (double)b;
}

const op_def op_def_swap_out = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = swap_roles,
    .n_roles = 1,
    .infer = swap_infer,
    .cost = swap_cost,
};

const op_def op_def_swap_in = {
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = swap_roles,
    .n_roles = 1,
    .infer = swap_infer,
    .cost = swap_cost,
};
