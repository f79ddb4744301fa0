/* op_update.c — the optimizer's ops, in place (each output reuses the storage
 * of its input: op_update_alias), per parameter or over k of them at once
 * (attribute "members"; the slots: op_update.h):
 *   SGDMomentum(W, dW, M [, scale]) -> W', M'        torch.optim.SGD
 *   AdamW(W, dW, M, V [, scale [, K]]) -> W', M', V' [, K']   torch.optim.AdamW
 * (K: the updates this parameter has had, one float, PyTorch's state['step'] —
 * present with --loss-scale, whose skipped steps do not count; without it the
 * training step is the count)
 * and ClipGradNorm(dW1, .., dWk) -> scale [1]: min(1, max_norm / (||dW||_2 +
 * 1e-6)) over every gradient at once (torch.nn.utils.clip_grad_norm_), which
 * each update then multiplies its dW by (the optional last input). A step
 * with clipping runs every update after the last gradient.
 *   GradScaler(S, T, dW1, .., dWk) -> coef [1], S', T'   torch.amp.GradScaler
 * (--loss-scale): the loss gradient was multiplied by the scale S; coef is
 * 1/S when every dW is finite, else 0, and a zero coefficient skips the
 * update (scaler.step); then S and the growth tracker T update in place
 * (scaler.update): on inf/NaN S *= backoff, T = 0; else T += 1 and at T ==
 * interval S *= growth, T = 0. With clipping too, ClipGradNorm (prescaled)
 * reads coef first and clips the unscaled gradients. */
#include <string.h>

#include "ir/ops/op_update.h"
#include "ir/ops/op_util.h"

const ir_attr *op_update_members(const ir_node *n) {
    const ir_attr *a =
        n->op == OP_SGD_MOMENTUM || n->op == OP_ADAMW ? ir_attr_find(n, "members") : NULL;
    return a && a->type == IR_ATTR_STRINGS ? a : NULL;
}

/* k from the "members" attribute (absent: 1). */
static int update_members(const ir_node *n) {
    const ir_attr *a = op_update_members(n);
    return a ? a->n : 1;
}

bool op_update_layout_of(const ir_node *n, op_update_layout *l) {
    bool adam = n->op == OP_ADAMW;
    if (!adam && n->op != OP_SGD_MOMENTUM) return false;
    int k = update_members(n);
    if (k < 1 || k > n->n_inputs) return false; /* (a file's count; no product overflows) */
    *l = (op_update_layout){.members = k, .width = adam ? 4 : 3, .out_width = adam ? 3 : 2};
    int64_t extra = (int64_t)n->n_inputs - (int64_t)l->width * k; /* 0, 1 (the scale), 1 + k */
    if (extra == 1 || (adam && extra == 1 + k)) l->scale = l->width * k;
    else if (extra == 0) l->scale = -1;
    else return false;
    l->counts = extra == 1 + k && extra > 1 ? l->width * k + 1 : -1;
    return (int64_t)n->n_outputs == (int64_t)l->out_width * k + (l->counts >= 0 ? k : 0);
}

int op_update_alias(const ir_node *n, int o) {
    op_update_layout l;
    if (!op_update_layout_of(n, &l) || o < 0 || o >= n->n_outputs) return -1;
    if (o >= l.out_width * l.members) return l.counts + (o - l.out_width * l.members);
    int member = o / l.out_width, j = o % l.out_width;
    return member * l.width + (j == 0 ? 0 : j + 1); /* W' <- W, M' <- M, V' <- V */
}

bool op_update_slot(const ir_node *n, int in, int *member, int *slot) {
    op_update_layout l;
    if (!op_update_layout_of(n, &l) || in < 0 || in >= n->n_inputs) return false;
    if (in < l.width * l.members) {
        *member = in / l.width, *slot = in % l.width;
    } else if (in == l.scale) {
        *member = -1, *slot = -1;
    } else {
        *member = in - l.counts, *slot = 4;
    }
    return true;
}

static bool same_shape(const ir_tensor *a, const ir_tensor *b) {
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

/* A float tensor of one element at input i. */
static int one_float(ir_graph *g, ir_node *n, int i, const char *what, oc_err *err) {
    ir_tensor *t;
    int64_t numel = 0;
    if (op_in_shaped(g, n, i, &t, err)) return OC_ERR;
    if (t->dtype != IR_DTYPE_FLOAT || !ir_tensor_numel(t, &numel) || numel != 1)
        return oc_fail(err, "the %s '%s' must be one float", what, t->name);
    return OC_OK;
}

/* Every member's W, dW, state.. alike; outputs like their inputs (the layout:
 * op_update.h). */
static int update_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    op_update_layout l;
    const ir_attr *mem = ir_attr_find(n, "members");
    if (mem && (mem->type != IR_ATTR_STRINGS || mem->n < 2))
        return oc_fail(err, "attribute 'members' must name two or more updates");
    if (!op_update_layout_of(n, &l))
        return oc_fail(err,
                       "%d inputs and %d outputs fit no update of %d parameter(s) (each W, dW, "
                       "state.. [, scale [, step counts]])",
                       n->n_inputs, n->n_outputs, update_members(n));
    for (int m = 0; m < l.members; m++) {
        ir_tensor *w;
        int base = m * l.width;
        if (op_in_shaped(g, n, base, &w, err)) return OC_ERR;
        for (int i = 1; i < l.width; i++) {
            ir_tensor *t;
            if (op_in_shaped(g, n, base + i, &t, err)) return OC_ERR;
            if (!same_shape(w, t) || t->dtype != w->dtype)
                return oc_fail(err, "'%s' and '%s' differ in shape or type", w->name, t->name);
        }
        op_set_out_like(g, n, m * l.out_width, w);
        for (int j = 1; j < l.out_width; j++)
            op_set_out_like(g, n, m * l.out_width + j, ir_node_in(g, n, base + 1 + j));
    }
    if (l.scale >= 0 && one_float(g, n, l.scale, "gradient scale", err)) return OC_ERR;
    for (int m = 0; l.counts >= 0 && m < l.members; m++) {
        if (one_float(g, n, l.counts + m, "step count", err)) return OC_ERR;
        op_set_out_like(g, n, l.out_width * l.members + m, ir_node_in(g, n, l.counts + m));
    }
    return OC_OK;
}

static int required_float(const ir_node *n, const char *name, float *v, oc_err *err) {
    const ir_attr *a = ir_attr_find(n, name);
    if (!a || a->type != IR_ATTR_FLOAT)
        return oc_fail(err, "attribute '%s' (float) is required", name);
    *v = a->f;
    return OC_OK;
}

static int sgd_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_sgd_args *p = &op_args_new(n)->sgd;
    if (required_float(n, "lr", &p->lr, err)) return OC_ERR;
    p->momentum = ir_attr_float(n, "momentum", 0.0f);
    p->weight_decay = ir_attr_float(n, "weight_decay", 0.0f);
    return OC_OK;
}

static int adamw_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_adamw_args *p = &op_args_new(n)->adamw;
    if (required_float(n, "lr", &p->lr, err)) return OC_ERR;
    p->beta1 = ir_attr_float(n, "beta1", 0.9f);
    p->beta2 = ir_attr_float(n, "beta2", 0.999f);
    p->epsilon = ir_attr_float(n, "epsilon", 1e-8f);
    p->weight_decay = ir_attr_float(n, "weight_decay", 0.01f);
    if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f) || !(p->beta2 >= 0.0f && p->beta2 < 1.0f))
        return oc_fail(err, "betas (%g, %g) must lie in [0, 1)", (double)p->beta1,
                       (double)p->beta2);
    if (!(p->epsilon > 0.0f))
        return oc_fail(err, "epsilon %g must be positive", (double)p->epsilon);
    return OC_OK;
}

/* Float inputs [from, n_inputs), the first `scalars` of them of one element. */
static int float_inputs(ir_graph *g, ir_node *n, int scalars, oc_err *err) {
    for (int i = 0; i < n->n_inputs; i++) {
        ir_tensor *t;
        int64_t numel = 0;
        if (op_in_shaped(g, n, i, &t, err)) return OC_ERR;
        if (t->dtype != IR_DTYPE_FLOAT) return oc_fail(err, "'%s' is not float", t->name);
        if (i < scalars && (!ir_tensor_numel(t, &numel) || numel != 1))
            return oc_fail(err, "'%s' must have one element", t->name);
    }
    return OC_OK;
}

/* [coef,] dW1..dWk (float) -> scale [1]. */
static int clip_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    bool prescaled = ir_attr_int(n, "prescaled", 0) != 0;
    if (float_inputs(g, n, prescaled ? 1 : 0, err)) return OC_ERR;
    if (prescaled && n->n_inputs < 2) return oc_fail(err, "prescaled, but no gradient");
    int64_t one = 1;
    op_set_out(g, n, 0, IR_DTYPE_FLOAT, 1, &one);
    return OC_OK;
}

static int clip_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_clip_norm_args *p = &op_args_new(n)->clip_norm;
    if (required_float(n, "max_norm", &p->max_norm, err)) return OC_ERR;
    if (!(p->max_norm > 0.0f))
        return oc_fail(err, "max_norm %g must be positive", (double)p->max_norm);
    p->prescaled = ir_attr_int(n, "prescaled", 0) != 0;
    return OC_OK;
}

/* S [1], T [1], dW1..dWk (float) -> coef [1], S' like S, T' like T. */
static int scaler_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)opset;
    if (float_inputs(g, n, 2, err)) return OC_ERR;
    int64_t one = 1;
    op_set_out(g, n, 0, IR_DTYPE_FLOAT, 1, &one);
    op_set_out_like(g, n, 1, ir_node_in(g, n, 0));
    op_set_out_like(g, n, 2, ir_node_in(g, n, 1));
    return OC_OK;
}

static int scaler_decode(const ir_graph *g, ir_node *n, oc_err *err) {
    (void)g;
    op_grad_scaler_args *p = &op_args_new(n)->grad_scaler;
    p->growth = ir_attr_float(n, "growth_factor", 2.0f);
    p->backoff = ir_attr_float(n, "backoff_factor", 0.5f);
    p->interval = ir_attr_int(n, "growth_interval", 2000);
    /* the tracker counts in a float32: exact to 2^24 */
    if (!(p->growth > 1.0f) || !(p->backoff > 0.0f && p->backoff < 1.0f) || p->interval < 1 ||
        p->interval > ((int64_t)1 << 24))
        return oc_fail(err,
                       "growth_factor %g must exceed 1, backoff_factor %g lie in (0, 1), "
                       "growth_interval %lld lie in [1, 2^24]",
                       (double)p->growth, (double)p->backoff, (long long)p->interval);
    return OC_OK;
}

/* Every gradient read once, squared and summed. */
static void clip_cost(const ir_graph *g, const ir_node *n, op_cost *c) {
    op_cost_default(g, n, c);
    c->flops = 2.0 * c->bytes_read / 4.0;
}

static const op_role data_role[] = {OP_IN_DATA};
static const int8_t scaler_aliases[] = {-1, 0, 1};

const op_def op_def_sgd_momentum = {
    .min_inputs = 3,
    .max_inputs = -1,
    .min_outputs = 2,
    .max_outputs = -1,
    .roles = data_role,
    .n_roles = 1,
    .infer = update_infer,
    .alias = op_update_alias,
    .decode = sgd_decode,
};
const op_def op_def_adamw = {
    .min_inputs = 4,
    .max_inputs = -1,
    .min_outputs = 3,
    .max_outputs = -1,
    .roles = data_role,
    .n_roles = 1,
    .infer = update_infer,
    .alias = op_update_alias,
    .decode = adamw_decode,
};
const op_def op_def_clip_grad_norm = {
    .min_inputs = 1,
    .max_inputs = -1,
    .min_outputs = 1,
    .max_outputs = 1,
    .roles = data_role,
    .n_roles = 1,
    .infer = clip_infer,
    .decode = clip_decode,
    .cost = clip_cost,
};
const op_def op_def_grad_scaler = {
    .min_inputs = 3,
    .max_inputs = -1,
    .min_outputs = 3,
    .max_outputs = 3,
    .roles = data_role,
    .n_roles = 1,
    .infer = scaler_infer,
    .decode = scaler_decode,
    .cost = clip_cost,
    .aliases = scaler_aliases,
    .n_aliases = 3,
};
