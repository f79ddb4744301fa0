/* autodiff.c — the grad_ctx a gradient rule writes through, and the reverse
 * walk that builds the backward part of the training graph (train_build in
 * train_graph.c drives it). */
#include "train/autodiff_internal.h"
#include "ir/ops/op_rewrite.h"

#include <string.h>

ir_graph *grad_graph(grad_ctx *c) { return c->b->g; }
const ir_node *grad_fwd(grad_ctx *c) { return &c->b->g->nodes[c->fwd]; }
oc_err *grad_err(grad_ctx *c) { return c->b->err; }

int grad_fwd_in(grad_ctx *c, int i) {
    const ir_node *n = grad_fwd(c);
    return i < n->n_inputs ? n->inputs[i] : -1;
}

int grad_fwd_out(grad_ctx *c, int i) {
    const ir_node *n = grad_fwd(c);
    return i < n->n_outputs ? n->outputs[i] : -1;
}

int grad_dy(grad_ctx *c, int i) {
    int t = grad_fwd_out(c, i);
    return t >= 0 && t < c->b->n_fwd_tensors ? c->b->tg->grad_of[t] : -1;
}

bool grad_wants(grad_ctx *c, int i) {
    int t = grad_fwd_in(c, i);
    if (t < 0) return false;
    const op_def *d = op_def_of(grad_fwd(c));
    return c->b->requires_grad[t] && op_input_role(d, i) != OP_IN_CONST;
}

int tb_add_node(train_builder *b, const char *name, op_kind op, train_phase phase, int fwd_of) {
    int n = op_node_add(b->g, name, op);
    train_graph *tg = b->tg;
    tg->phase = oc_realloc(tg->phase, (size_t)b->g->n_nodes * sizeof *tg->phase);
    tg->fwd_of = oc_realloc(tg->fwd_of, (size_t)b->g->n_nodes * sizeof *tg->fwd_of);
    tg->phase[n] = phase;
    tg->fwd_of[n] = fwd_of;
    return n;
}

int grad_node(grad_ctx *c, const char *suffix, op_kind op) {
    char *name = oc_sprintf("%s/%s", grad_fwd(c)->name, suffix);
    int n = tb_add_node(c->b, name, op, c->phase, c->fwd);
    oc_free(name);
    return n;
}

void grad_in(grad_ctx *c, int node, int tensor) { ir_node_add_input(c->b->g, node, tensor); }

int grad_loss_scale(grad_ctx *c) { return c->b->loss_scale; }

static void grad_out_none(grad_ctx *c, int node) { ir_node_add_output(c->b->g, node, -1); }

/* Name for the next partial gradient of forward tensor t. */
static char *partial_name(train_builder *b, int t) {
    const ir_tensor *x = &b->g->tensors[t];
    if (b->n_grad_uses[t] <= 1) return oc_sprintf("%s/grad", x->name);
    return oc_sprintf("%s/grad.%d", x->name, b->n_partials_seen[t]);
}

void tb_add_partial(train_builder *b, int t, int g) {
    b->partials[t] = oc_realloc(b->partials[t], (size_t)(b->n_partials[t] + 1) * sizeof(int));
    b->partials[t][b->n_partials[t]++] = g;
    b->n_partials_seen[t]++;
}

int grad_out_dx(grad_ctx *c, int node, int i) {
    if (!grad_wants(c, i)) {
        grad_out_none(c, node);
        return -1;
    }
    train_builder *b = c->b;
    int x = grad_fwd_in(c, i);
    char *name = partial_name(b, x);
    int t = ir_tensor_add(b->g, name, b->g->tensors[x].dtype);
    oc_free(name);
    ir_node_add_output(b->g, node, t);
    tb_add_partial(b, x, t);
    return t;
}

int grad_out_tmp(grad_ctx *c, int node, const char *suffix) {
    char *name = oc_sprintf("%s/%s", grad_fwd(c)->name, suffix);
    ir_dtype dt = c->b->g->tensors[grad_fwd_in(c, 0)].dtype;
    int t = ir_tensor_add(c->b->g, name, dt);
    oc_free(name);
    ir_node_add_output(c->b->g, node, t);
    return t;
}

void grad_pass(grad_ctx *c, int i, int dy) {
    if (grad_wants(c, i)) tb_add_partial(c->b, grad_fwd_in(c, i), dy);
}

void grad_copy_attrs(grad_ctx *c, int node) {
    const ir_node *f = grad_fwd(c);
    for (int i = 0; i < f->n_attrs; i++) {
        ir_attr a = f->attrs[i]; /* shallow view; ir_node_add_attr copies */
        ir_node_add_attr(c->b->g, node, &a);
        f = grad_fwd(c); /* nodes may have moved */
    }
}

void grad_attr_int(grad_ctx *c, int node, const char *name, int64_t v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INT, .i = v};
    ir_node_add_attr(c->b->g, node, &a);
}

void grad_attr_ints(grad_ctx *c, int node, const char *name, int n, const int64_t *v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_INTS, .ints = (int64_t *)v, .n = n};
    ir_node_add_attr(c->b->g, node, &a);
}

void grad_attr_string(grad_ctx *c, int node, const char *name, const char *v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_STRING, .s = (char *)v};
    ir_node_add_attr(c->b->g, node, &a);
}

void grad_attr_float(grad_ctx *c, int node, const char *name, float v) {
    ir_attr a = {.name = (char *)name, .type = IR_ATTR_FLOAT, .f = v};
    ir_node_add_attr(c->b->g, node, &a);
}

int grad_const_i64(grad_ctx *c, const char *suffix, int n, const int64_t *vals) {
    return op_rewrite_ints(c->b->g, grad_fwd(c)->name, suffix, n, vals);
}

int grad_const_zeros(grad_ctx *c, const char *suffix, ir_dtype dt, int rank, const int64_t *dims) {
    return op_rewrite_constant(c->b->g, grad_fwd(c)->name, suffix, dt, rank, dims, NULL);
}

int grad_finish(grad_ctx *c, int node) {
    ir_graph *g = c->b->g;
    ir_node *n = &g->nodes[node];
    /* a channels-last node's gradients that read the channel axis are channels-last too */
    if (grad_fwd(c)->channels_last && op_reads_channel_axis(n->op))
        ir_node_mark_channels_last(g, node);
    if (op_infer(g, n, c->b->err))
        return oc_fail_prefix(c->b->err, "gradient node '%s' (%s)", n->name, n->op_type);
    return OC_OK;
}

int grad_fwd_add_output(grad_ctx *c, const char *suffix) {
    train_builder *b = c->b;
    ir_graph *g = b->g;
    char *name = oc_sprintf("%s/%s", grad_fwd(c)->name, suffix);
    int t = ir_tensor_add(g, name, IR_DTYPE_UNDEFINED);
    oc_free(name);
    ir_node_add_output(g, c->fwd, t);
    ir_node *n = &g->nodes[c->fwd];
    const op_def *d = op_def_of(n);
    if ((d->max_outputs >= 0 && n->n_outputs > d->max_outputs) || op_infer(g, n, b->err))
        return oc_fail_prefix(b->err, "node '%s' (%s): adding output '%s'", n->name, n->op_type,
                              g->tensors[t].name);
    return t;
}
