/* op_rnn.c — RNN, GRU and LSTM (torch's nn.RNN, nn.GRU, nn.LSTM; timm's Sequencer2D),
 * unrolled at load (op_def.lower) over the sequence, whose length the shapes fix, into
 * what runs and differentiates already: per direction, the input's projection for every
 * step at once (X W^T + biases: one MatMul), split into steps; per step the recurrent
 * MatMul, the gates' Split, activations, Mul and Add; the steps' states concatenated into
 * Y. Gradients are those of the ops (back-propagation through time). Splits and Concats
 * over the steps go by groups of at most OP_MAX_SPLIT, so their gradients stay linear in
 * the sequence. A first state that is absent is zero: the first step's recurrent terms
 * are left out. sequence_lens (packed sequences: torch's pack_padded_sequence) makes a
 * mask per step, 1 while t is within the sequence: past its length a sequence keeps its
 * state and its Y is 0, as ONNX defines it (in reverse the state stays the first one until
 * the sequence's last element) -- from the lengths at plan time, or on the host each step
 * from the model's integer inputs. A cell clip and LSTM's input_forget are refused.
 * Nodes and tensors "<node>/d<dir>/t<step>/<what>". */
#include <inttypes.h>
#include <string.h>

#include "ir/ops/op_rewrite.h"
#include "ir/ops/op_util.h"

#define RNN_MAX_STEPS (OP_MAX_SPLIT * OP_MAX_SPLIT)

typedef enum rnn_cell { CELL_RNN, CELL_GRU, CELL_LSTM } rnn_cell;

/* An activation of the ONNX list that has a kernel, with its attributes. */
typedef struct rnn_act {
    op_kind kind;
    float alpha, beta;
    bool has_alpha, has_beta;
} rnn_act;

/* inputs: X, W, R, B, sequence_lens, initial_h, initial_c (LSTM), P (LSTM) */
enum { IN_X, IN_W, IN_R, IN_B, IN_SEQ, IN_H0, IN_C0, IN_P };

typedef struct unroll {
    ir_graph *g;
    int at;     /* the rewritten node's index */
    char *base; /* its name */
    rnn_cell cell;
    int gates, dirs, last; /* last: the last present output, written by the node itself */
    int64_t steps, batch, hidden;
    bool reverse_only, batch_first, lbr;
    bool masked; /* sequence_lens shorter than T somewhere, or known only at run time */
    int *masks;  /* masked: per step, [1, B, 1] of 1 where t < the sequence's length, else 0 */
    int in[8], out[3];
    rnn_act act[2][3];
} unroll;

/* ---- reading the node ---------------------------------------------------------------- */

/* An activation named as ONNX names it (the names of the ops that compute it), with alpha
 * and beta taken in turn by those that have them. */
static int read_act(const char *name, const float *alpha, int n_alpha, int *ia, const float *beta,
                    int n_beta, int *ib, rnn_act *a, oc_err *err) {
    static const struct {
        op_kind kind;
        bool alpha, beta;
    } known[] = {
        {OP_SIGMOID, false, false},   {OP_TANH, false, false}, {OP_RELU, false, false},
        {OP_LEAKY_RELU, true, false}, {OP_ELU, true, false},   {OP_HARD_SIGMOID, true, true},
        {OP_SOFTPLUS, false, false},
    };
    char names[160];
    size_t off = 0;
    for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
        const char *op = op_name(known[k].kind);
        if (off < sizeof names)
            off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", k ? ", " : "", op);
        if (strcmp(name, op) != 0) continue;
        memset(a, 0, sizeof *a);
        a->kind = known[k].kind;
        if (known[k].alpha && *ia < n_alpha) a->alpha = alpha[(*ia)++], a->has_alpha = true;
        if (known[k].beta && *ib < n_beta) a->beta = beta[(*ib)++], a->has_beta = true;
        return OC_OK;
    }
    return oc_fail(err, "activation '%s' is not supported (%s are)", name, names);
}

static int read_acts(const ir_node *n, unroll *u, oc_err *err) {
    static const op_kind dflt[3][3] = {
        {OP_TANH}, {OP_SIGMOID, OP_TANH}, {OP_SIGMOID, OP_TANH, OP_TANH}};
    int per = u->cell == CELL_RNN ? 1 : u->cell == CELL_GRU ? 2 : 3;
    const ir_attr *names = ir_attr_find(n, "activations");
    const ir_attr *al = ir_attr_find(n, "activation_alpha"),
                  *be = ir_attr_find(n, "activation_beta");
    int n_names = names && names->type == IR_ATTR_STRINGS ? names->n : 0;
    /* one list for both directions is taken for each (as onnxruntime does) */
    if (names && n_names != per && n_names != per * u->dirs)
        return oc_fail(err, "has %d activations; %d per direction are needed", n_names, per);
    int ia = 0, ib = 0;
    for (int d = 0; d < u->dirs; d++)
        for (int k = 0; k < per; k++) {
            const char *s = n_names ? names->strings[n_names == per ? k : d * per + k]
                                    : op_name(dflt[u->cell][k]);
            if (read_act(s, al && al->type == IR_ATTR_FLOATS ? al->floats : NULL,
                         al && al->type == IR_ATTR_FLOATS ? al->n : 0, &ia,
                         be && be->type == IR_ATTR_FLOATS ? be->floats : NULL,
                         be && be->type == IR_ATTR_FLOATS ? be->n : 0, &ib, &u->act[d][k], err))
                return OC_ERR;
        }
    return OC_OK;
}

/* Input i shaped as rank and dims (-1: any) of dtype dt, or OC_ERR naming it. */
static int check_in(ir_graph *g, ir_node *n, int i, const char *what, int rank, const int64_t *dims,
                    ir_dtype dt, oc_err *err) {
    ir_tensor *t;
    if (op_in_shaped(g, n, i, &t, err)) return OC_ERR;
    bool ok = t->rank == rank && t->dtype == dt;
    for (int d = 0; ok && d < rank; d++) ok = dims[d] < 0 || t->dims[d] == dims[d];
    if (ok) return OC_OK;
    char want[128] = "", got[128];
    size_t off = 0;
    for (int d = 0; d < rank && off < sizeof want; d++)
        off +=
            (size_t)snprintf(want + off, sizeof want - off, "%s%" PRId64, d ? ", " : "", dims[d]);
    return oc_fail(err, "%s '%s' is %s %s; it must be %s [%s]", what, t->name,
                   ir_dtype_name(t->dtype), ir_shape_str(t, got, sizeof got), ir_dtype_name(dt),
                   want);
}

/* sequence_lens, when given: int32 or int64 [B]. u->masked unless it is a plan-time value
 * of the full length everywhere; a plan-time length outside [0, T] is refused. */
static int check_lengths(ir_graph *g, ir_node *n, unroll *u, oc_err *err) {
    ir_tensor *t = ir_node_in(g, n, IN_SEQ);
    u->masked = false;
    if (!t) return OC_OK;
    int64_t numel;
    size_t esz = t->dtype == IR_DTYPE_INT32 ? 4 : t->dtype == IR_DTYPE_INT64 ? 8 : 0;
    if (!esz || t->rank != 1 || !ir_tensor_numel(t, &numel) || numel != u->batch)
        return oc_fail(err, "sequence_lens '%s' must be int32 [%" PRId64 "]", t->name, u->batch);
    if (t->data_src != IR_DATA_INLINE || t->data_bytes != (size_t)numel * esz) {
        u->masked = true; /* known when the batch is: masks computed each step */
        return OC_OK;
    }
    for (int64_t b = 0; b < numel; b++) {
        int64_t v;
        if (esz == 4) {
            int32_t v32;
            memcpy(&v32, (const char *)t->data + b * 4, 4);
            v = v32;
        } else {
            memcpy(&v, (const char *)t->data + b * 8, 8);
        }
        if (v < 0 || v > u->steps)
            return oc_fail(err, "sequence %" PRId64 " has length %" PRId64 ", not 0 to %" PRId64, b,
                           v, u->steps);
        u->masked = u->masked || v < u->steps;
    }
    return OC_OK;
}

static int read_node(ir_graph *g, ir_node *n, unroll *u, oc_err *err) {
    const char *dir = ir_attr_string(n, "direction", "forward");
    u->dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    u->reverse_only = strcmp(dir, "reverse") == 0;
    if (u->dirs == 1 && !u->reverse_only && strcmp(dir, "forward") != 0)
        return oc_fail(err, "direction '%s' is none of forward, reverse and bidirectional", dir);
    int64_t layout = ir_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1) return oc_fail(err, "layout %" PRId64 " is not 0 or 1", layout);
    u->batch_first = layout == 1;
    if (ir_attr_find(n, "clip")) return oc_fail(err, "a cell clip is not supported");
    if (ir_attr_int(n, "input_forget", 0) != 0)
        return oc_fail(err, "input_forget (coupled input and forget gates) is not supported");
    int64_t lbr = ir_attr_int(n, "linear_before_reset", 0);
    if (lbr != 0 && lbr != 1)
        return oc_fail(err, "linear_before_reset %" PRId64 " is not 0 or 1", lbr);
    u->lbr = lbr == 1;
    ir_tensor *x, *r;
    if (op_in_shaped(g, n, IN_X, &x, err) || op_in_shaped(g, n, IN_R, &r, err)) return OC_ERR;
    if (!ir_dtype_is_float(x->dtype) || x->rank != 3)
        return oc_fail(err, "input '%s' must be a float [seq, batch, input] tensor", x->name);
    u->steps = x->dims[u->batch_first ? 1 : 0];
    u->batch = x->dims[u->batch_first ? 0 : 1];
    int64_t in = x->dims[2], gh;
    u->hidden = ir_attr_int(n, "hidden_size", r->rank == 3 ? r->dims[2] : -1);
    if (u->hidden < 1 || u->hidden > (INT64_C(1) << 30))
        return oc_fail(err, "hidden_size %" PRId64 " is not from 1 to 2^30", u->hidden);
    if (u->steps < 1 || u->steps > RNN_MAX_STEPS)
        return oc_fail(err, "a sequence of %" PRId64 " steps: from 1 to %d are supported", u->steps,
                       RNN_MAX_STEPS);
    gh = u->gates * u->hidden;
    int64_t h = u->hidden, d = u->dirs, b = u->batch;
    const int64_t w_dims[] = {d, gh, in}, r_dims[] = {d, gh, h}, b_dims[] = {d, 2 * gh},
                  h0_dims[] = {u->batch_first ? b : d, u->batch_first ? d : b, h},
                  p_dims[] = {d, 3 * h};
    if (check_in(g, n, IN_W, "W", 3, w_dims, x->dtype, err) ||
        check_in(g, n, IN_R, "R", 3, r_dims, x->dtype, err) ||
        (ir_node_in(g, n, IN_B) && check_in(g, n, IN_B, "B", 2, b_dims, x->dtype, err)) ||
        (ir_node_in(g, n, IN_H0) &&
         check_in(g, n, IN_H0, "initial_h", 3, h0_dims, x->dtype, err)) ||
        (u->cell == CELL_LSTM && ir_node_in(g, n, IN_C0) &&
         check_in(g, n, IN_C0, "initial_c", 3, h0_dims, x->dtype, err)) ||
        (u->cell == CELL_LSTM && ir_node_in(g, n, IN_P) &&
         check_in(g, n, IN_P, "P", 2, p_dims, x->dtype, err)))
        return OC_ERR;
    if (check_lengths(g, n, u, err) || read_acts(n, u, err)) return OC_ERR;
    for (int i = 0; i < 8; i++) u->in[i] = i < n->n_inputs ? n->inputs[i] : -1;
    u->last = -1;
    for (int o = 0; o < 3; o++) {
        u->out[o] = o < n->n_outputs ? n->outputs[o] : -1;
        if (u->out[o] >= 0) u->last = o;
    }
    if (u->last < 0) return oc_fail(err, "has no output");
    return OC_OK;
}

/* ---- emitting nodes -------------------------------------------------------------------- */

/* A node of kind k added last (rnn_lower moves them before the rewritten node), or, when
 * y is the last output, the rewritten node become it; reads in0 (and in1 >= 0), writes y
 * or a new tensor "<base>/<what>". Returns the node's index; *out the tensor written. */
static int emit(unroll *u, const char *what, op_kind k, int in0, int in1, int y, int *out) {
    ir_graph *g = u->g;
    if (y >= 0 && y == u->out[u->last]) {
        op_rewrite_become(g, u->at, k);
        ir_node_add_input(g, u->at, in0);
        if (in1 >= 0) ir_node_add_input(g, u->at, in1);
        ir_node_add_output(g, u->at, y);
        if (out) *out = y;
        return u->at;
    }
    int t = op_rewrite_insert(g, g->n_nodes, u->base, what, k, in0, in1, y);
    if (out) *out = t;
    return g->n_nodes - 1;
}

static int op2(unroll *u, const char *what, op_kind k, int a, int b) {
    int y;
    emit(u, what, k, a, b, -1, &y);
    return y;
}

/* Unsqueeze or Squeeze of one axis, its axes an input from opset 13. */
static int axis_op(unroll *u, const char *what, op_kind k, int x, int64_t axis, int y) {
    int a = -1, node;
    if (u->g->opset >= 13) {
        char *s = oc_sprintf("%s_axes", what);
        a = op_rewrite_ints(u->g, u->base, s, 1, &axis);
        oc_free(s);
    }
    node = emit(u, what, k, x, a, y, &y);
    if (a < 0) op_rewrite_attr_ints(u->g, node, "axes", 1, &axis);
    return y;
}

static int transpose(unroll *u, const char *what, int x, int rank, const int64_t *perm, int y) {
    int node = emit(u, what, OP_TRANSPOSE, x, -1, y, &y);
    op_rewrite_attr_ints(u->g, node, "perm", rank, perm);
    return y;
}

/* Split of x along axis into n parts of the given sizes, written to outs. */
static void split(unroll *u, const char *what, int x, int64_t axis, int n, const int64_t *sizes,
                  int *outs) {
    ir_graph *g = u->g;
    int s = -1;
    if (g->opset >= 13) {
        char *w = oc_sprintf("%s_sizes", what);
        s = op_rewrite_ints(g, u->base, w, n, sizes);
        oc_free(w);
    }
    int node = emit(u, what, OP_SPLIT, x, s, -1, &outs[0]);
    for (int i = 1; i < n; i++) {
        char *w = oc_sprintf("%s/%s_%d", u->base, what, i);
        outs[i] = ir_tensor_add(g, w, IR_DTYPE_UNDEFINED);
        oc_free(w);
        ir_node_add_output(g, node, outs[i]);
    }
    op_rewrite_attr_int(u->g, node, "axis", axis);
    if (s < 0) op_rewrite_attr_ints(u->g, node, "split", n, sizes);
}

/* Concat of the n tensors ins along axis, writing y (or a new tensor). */
static int concat(unroll *u, const char *what, int n, const int *ins, int64_t axis, int y) {
    int node = emit(u, what, OP_CONCAT, ins[0], n > 1 ? ins[1] : -1, y, &y);
    for (int i = 2; i < n; i++) ir_node_add_input(u->g, node, ins[i]);
    op_rewrite_attr_int(u->g, node, "axis", axis);
    return y;
}

/* x [steps, ..] split along axis 0 into steps of 1: by groups of OP_MAX_SPLIT. */
static void split_steps(unroll *u, const char *what, int x, int *outs) {
    int64_t t = u->steps, sizes[OP_MAX_SPLIT];
    if (t == 1) {
        outs[0] = x;
        return;
    }
    int groups = (int)((t + OP_MAX_SPLIT - 1) / OP_MAX_SPLIT);
    if (groups == 1) {
        for (int i = 0; i < t; i++) sizes[i] = 1;
        split(u, what, x, 0, (int)t, sizes, outs);
        return;
    }
    int grp[OP_MAX_SPLIT];
    for (int k = 0; k < groups; k++)
        sizes[k] = t - k * OP_MAX_SPLIT < OP_MAX_SPLIT ? t - k * OP_MAX_SPLIT : OP_MAX_SPLIT;
    char *w = oc_sprintf("%s_groups", what);
    split(u, w, x, 0, groups, sizes, grp);
    oc_free(w);
    for (int k = 0; k < groups; k++) {
        int64_t n = sizes[k], ones[OP_MAX_SPLIT];
        for (int i = 0; i < n; i++) ones[i] = 1;
        w = oc_sprintf("%s_%d", what, k);
        split(u, w, grp[k], 0, (int)n, ones, outs + k * OP_MAX_SPLIT);
        oc_free(w);
    }
}

/* The steps' [1, ..] tensors concatenated along axis 0, by groups of OP_MAX_SPLIT. */
static int concat_steps(unroll *u, const char *what, const int *ins) {
    int t = (int)u->steps, groups = (t + OP_MAX_SPLIT - 1) / OP_MAX_SPLIT;
    if (t == 1) return ins[0];
    if (groups == 1) return concat(u, what, t, ins, 0, -1);
    int grp[OP_MAX_SPLIT];
    for (int k = 0; k < groups; k++) {
        int n = t - k * OP_MAX_SPLIT < OP_MAX_SPLIT ? t - k * OP_MAX_SPLIT : OP_MAX_SPLIT;
        char *w = oc_sprintf("%s_%d", what, k);
        grp[k] = concat(u, w, n, ins + k * OP_MAX_SPLIT, 0, -1);
        oc_free(w);
    }
    return concat(u, what, groups, grp, 0, -1);
}

/* x's part for direction d: [1, ..] (squeezed: [..]). parts caches the Split. */
static int dir_part(unroll *u, const char *what, int x, int d, bool squeeze, int *parts) {
    if (u->dirs == 2 && parts[0] < 0) {
        static const int64_t ones[2] = {1, 1};
        split(u, what, x, 0, 2, ones, parts);
    }
    int p = u->dirs == 2 ? parts[d] : x;
    if (!squeeze) return p;
    char *w = oc_sprintf("d%d/%s", d, what);
    int y = axis_op(u, w, OP_SQUEEZE, p, 0, -1);
    oc_free(w);
    return y;
}

static int activation(unroll *u, const char *what, const rnn_act *a, int x) {
    ir_attr at;
    int y, node = emit(u, what, a->kind, x, -1, -1, &y);
    if (a->has_alpha) {
        at = (ir_attr){.name = "alpha", .type = IR_ATTR_FLOAT, .f = a->alpha};
        ir_node_add_attr(u->g, node, &at);
    }
    if (a->has_beta) {
        at = (ir_attr){.name = "beta", .type = IR_ATTR_FLOAT, .f = a->beta};
        ir_node_add_attr(u->g, node, &at);
    }
    return y;
}

/* ---- one direction ----------------------------------------------------------------------- */

/* What a direction's steps read, prepared once. */
typedef struct dir_ctx {
    int d;
    const rnn_act *act;
    int rt, rt_zr, rt_h; /* R^T [H, G*H]; GRU without linear_before_reset: its zr and h parts */
    int rb;              /* GRU with linear_before_reset: R's bias [G*H], or -1 */
    int p[3];            /* LSTM peepholes i, o, f [H], or -1 */
    int h, c;            /* the state, [1, B, H], or -1 while zero */
} dir_ctx;

static char *step_name(const dir_ctx *c, int64_t t, const char *what) {
    return oc_sprintf("d%d/t%" PRId64 "/%s", c->d, t, what);
}

/* a op b named for step t (b < 0: a). */
static int step_op(unroll *u, const dir_ctx *c, int64_t t, const char *what, op_kind k, int a,
                   int b) {
    if (b < 0 && k == OP_ADD) return a;
    char *w = step_name(c, t, what);
    int y = op2(u, w, k, a, b);
    oc_free(w);
    return y;
}

static int step_act(unroll *u, const dir_ctx *c, int64_t t, const char *what, int which, int x) {
    char *w = step_name(c, t, what);
    int y = activation(u, w, &c->act[which], x);
    oc_free(w);
    return y;
}

static void step_split(unroll *u, const dir_ctx *c, int64_t t, const char *what, int x, int n,
                       const int64_t *sizes, int *outs) {
    char *w = step_name(c, t, what);
    split(u, w, x, -1, n, sizes, outs);
    oc_free(w);
}

/* prev + m (.) (next - prev): next where the mask m is 1, prev where it is 0 (a zero state
 * when prev is absent). */
static int hold(unroll *u, const dir_ctx *c, int64_t t, const char *what, int m, int next,
                int prev) {
    char *w = step_name(c, t, what);
    int y;
    if (prev < 0) {
        y = op2(u, w, OP_MUL, m, next);
    } else {
        char *d = oc_sprintf("%s_delta", w), *md = oc_sprintf("%s_masked", w);
        int delta = op2(u, d, OP_SUB, next, prev);
        y = op2(u, w, OP_ADD, prev, op2(u, md, OP_MUL, m, delta));
        oc_free(d), oc_free(md);
    }
    oc_free(w);
    return y;
}

/* One step of the cell on xw [1, B, G*H] (the input's projection and biases). */
static void step(unroll *u, dir_ctx *c, int64_t t, int xw) {
    int64_t h = u->hidden, sizes[4] = {h, h, h, h};
    int g[4], hh[3];
    bool whole = u->cell != CELL_GRU || u->lbr; /* one recurrent MatMul for every gate */
    int rec = whole && c->h >= 0 ? step_op(u, c, t, "recurrent", OP_MATMUL, c->h, c->rt) : -1;
    switch (u->cell) {
    case CELL_RNN:
        c->h = step_act(u, c, t, "h", 0, step_op(u, c, t, "pre", OP_ADD, xw, rec));
        return;
    case CELL_LSTM: { /* gates i, o, f, c */
        step_split(u, c, t, "gates", step_op(u, c, t, "pre", OP_ADD, xw, rec), 4, sizes, g);
        if (c->c >= 0 && c->p[0] >= 0) {
            g[0] = step_op(u, c, t, "i_peep", OP_ADD, g[0],
                           step_op(u, c, t, "i_peep_c", OP_MUL, c->p[0], c->c));
            g[2] = step_op(u, c, t, "f_peep", OP_ADD, g[2],
                           step_op(u, c, t, "f_peep_c", OP_MUL, c->p[2], c->c));
        }
        int i = step_act(u, c, t, "i", 0, g[0]), cc = step_act(u, c, t, "c_in", 1, g[3]);
        int cn = step_op(u, c, t, "i_c", OP_MUL, i, cc);
        if (c->c >= 0) {
            int f = step_act(u, c, t, "f", 0, g[2]);
            cn = step_op(u, c, t, "c", OP_ADD, step_op(u, c, t, "f_c", OP_MUL, f, c->c), cn);
        }
        if (c->p[1] >= 0)
            g[1] = step_op(u, c, t, "o_peep", OP_ADD, g[1],
                           step_op(u, c, t, "o_peep_c", OP_MUL, c->p[1], cn));
        int o = step_act(u, c, t, "o", 0, g[1]);
        c->c = cn;
        c->h = step_op(u, c, t, "h", OP_MUL, o, step_act(u, c, t, "c_out", 2, cn));
        return;
    }
    case CELL_GRU: { /* gates z, r, h */
        step_split(u, c, t, "x_zrh", xw, 3, sizes, g);
        int z, r, pre;
        if (u->lbr) { /* h~ = g(x_h + r (.) (H R_h^T + Rb_h)) */
            int hr = rec >= 0 ? step_op(u, c, t, "rec_bias", OP_ADD, rec, c->rb) : c->rb;
            if (hr >= 0) step_split(u, c, t, "h_zrh", hr, 3, sizes, hh);
            z = step_act(u, c, t, "z", 0,
                         step_op(u, c, t, "z_pre", OP_ADD, g[0], hr >= 0 ? hh[0] : -1));
            r = step_act(u, c, t, "r", 0,
                         step_op(u, c, t, "r_pre", OP_ADD, g[1], hr >= 0 ? hh[1] : -1));
            pre = hr >= 0 ? step_op(u, c, t, "h_pre", OP_ADD, g[2],
                                    step_op(u, c, t, "r_h", OP_MUL, r, hh[2]))
                          : g[2];
        } else { /* h~ = g(x_h + (r (.) H) R_h^T), R's biases in xw */
            if (c->h >= 0) {
                int zr = step_op(u, c, t, "rec_zr", OP_MATMUL, c->h, c->rt_zr);
                step_split(u, c, t, "h_zr", zr, 2, sizes, hh);
            }
            z = step_act(u, c, t, "z", 0,
                         step_op(u, c, t, "z_pre", OP_ADD, g[0], c->h >= 0 ? hh[0] : -1));
            r = step_act(u, c, t, "r", 0,
                         step_op(u, c, t, "r_pre", OP_ADD, g[1], c->h >= 0 ? hh[1] : -1));
            pre = c->h >= 0 ? step_op(u, c, t, "h_pre", OP_ADD, g[2],
                                      step_op(u, c, t, "rh_r", OP_MATMUL,
                                              step_op(u, c, t, "r_h", OP_MUL, r, c->h), c->rt_h))
                            : g[2];
        }
        int cand = step_act(u, c, t, "h_cand", 1, pre);
        /* H = (1 - z) (.) h~ + z (.) H_prev = h~ + z (.) (H_prev - h~) */
        int diff = c->h >= 0 ? step_op(u, c, t, "h_diff", OP_SUB, c->h, cand) : cand;
        int zd = step_op(u, c, t, "z_diff", OP_MUL, z, diff);
        c->h = step_op(u, c, t, "h", c->h >= 0 ? OP_ADD : OP_SUB, cand, zd);
        return;
    }
    }
}

/* Direction d over x [T, B, I]: its states per step (hs, time order) and last state. */
static void direction(unroll *u, int d, int x, int *parts, int *hs, int *h_last, int *c_last) {
    dir_ctx c = {.d = d,
                 .act = u->act[d],
                 .rt = -1,
                 .rt_zr = -1,
                 .rt_h = -1,
                 .rb = -1,
                 .p = {-1, -1, -1},
                 .h = -1,
                 .c = -1};
    static const int64_t perm2[] = {1, 0};
    int64_t h = u->hidden, gh = u->gates * h;
    char *w;
    /* the input's projection for every step: X W^T (+ biases) */
    w = oc_sprintf("d%d/W_t", d);
    int wt = transpose(u, w, dir_part(u, "W", u->in[IN_W], d, true, parts + 0), 2, perm2, -1);
    oc_free(w);
    w = oc_sprintf("d%d/xw", d);
    int xw = op2(u, w, OP_MATMUL, x, wt);
    oc_free(w);
    if (u->in[IN_B] >= 0) {
        int bd = dir_part(u, "B", u->in[IN_B], d, true, parts + 2), wb[2];
        const int64_t halves[] = {gh, gh};
        w = oc_sprintf("d%d/B_wr", d);
        split(u, w, bd, 0, 2, halves, wb);
        oc_free(w);
        int bias = wb[0];
        if (u->cell == CELL_GRU && u->lbr) {
            c.rb = wb[1];
        } else {
            w = oc_sprintf("d%d/bias", d);
            bias = op2(u, w, OP_ADD, wb[0], wb[1]);
            oc_free(w);
        }
        w = oc_sprintf("d%d/xw_bias", d);
        xw = op2(u, w, OP_ADD, xw, bias);
        oc_free(w);
    }
    /* what the steps read */
    int *xs = oc_malloc((size_t)u->steps * sizeof *xs);
    w = oc_sprintf("d%d/xw_steps", d);
    split_steps(u, w, xw, xs);
    oc_free(w);
    if (u->in[IN_H0] >= 0) c.h = dir_part(u, "initial_h", u->in[IN_H0], d, false, parts + 4);
    if (u->cell == CELL_LSTM && u->in[IN_C0] >= 0)
        c.c = dir_part(u, "initial_c", u->in[IN_C0], d, false, parts + 6);
    if (u->steps > 1 || c.h >= 0) {
        w = oc_sprintf("d%d/R_t", d);
        c.rt = transpose(u, w, dir_part(u, "R", u->in[IN_R], d, true, parts + 8), 2, perm2, -1);
        oc_free(w);
        if (u->cell == CELL_GRU && !u->lbr) {
            int zrh[2];
            const int64_t sizes[] = {2 * h, h};
            w = oc_sprintf("d%d/R_t_zr_h", d);
            split(u, w, c.rt, 1, 2, sizes, zrh);
            oc_free(w);
            c.rt_zr = zrh[0], c.rt_h = zrh[1];
        }
    }
    if (u->cell == CELL_LSTM && u->in[IN_P] >= 0) {
        const int64_t sizes[] = {h, h, h};
        w = oc_sprintf("d%d/P_iof", d);
        split(u, w, dir_part(u, "P", u->in[IN_P], d, true, parts + 10), 0, 3, sizes, c.p);
        oc_free(w);
    }
    bool reverse = u->reverse_only || d == 1;
    for (int64_t k = 0; k < u->steps; k++) {
        int64_t t = reverse ? u->steps - 1 - k : k;
        int h_prev = c.h, c_prev = c.c;
        step(u, &c, t, xs[t]);
        hs[t] = c.h;
        if (!u->masked) continue;
        /* past its length a sequence keeps its state (reverse: its first state until its
         * last element), and its Y is 0 */
        c.h = hold(u, &c, t, "h_held", u->masks[t], c.h, h_prev);
        if (u->cell == CELL_LSTM) c.c = hold(u, &c, t, "c_held", u->masks[t], c.c, c_prev);
        hs[t] = step_op(u, &c, t, "y", OP_MUL, u->masks[t], c.h);
    }
    oc_free(xs);
    *h_last = c.h;
    *c_last = c.c;
}

/* Y_h or Y_c from the directions' last states [1, B, H]: [D, B, H] ([B, D, H]). */
static void final_state(unroll *u, const char *what, const int *last, int y) {
    static const int64_t perm[] = {1, 0, 2};
    int s = last[0];
    if (u->dirs == 2) s = concat(u, what, 2, last, 0, u->batch_first ? -1 : y);
    if (u->batch_first) {
        char *w = oc_sprintf("%s_batch_first", what);
        transpose(u, w, s, 3, perm, y);
        oc_free(w);
    } else if (u->dirs == 1) {
        emit(u, what, OP_IDENTITY, s, -1, y, NULL);
    }
}

/* Per step t, a float [1, B, 1]: 1 where t < sequence_lens[b], else 0 (from the lengths at
 * plan time, folded; else on the host from the model's integer inputs, host_inputs.h). */
static void step_masks(unroll *u, ir_dtype dt) {
    ir_graph *g = u->g;
    int lens = u->in[IN_SEQ], cast;
    if (g->tensors[lens].dtype != IR_DTYPE_INT64) {
        cast = emit(u, "lens_int64", OP_CAST, lens, -1, -1, &lens);
        op_rewrite_attr_int(u->g, cast, "to", IR_DTYPE_INT64);
    }
    int64_t *pos = oc_malloc((size_t)u->steps * sizeof *pos);
    for (int64_t t = 0; t < u->steps; t++) pos[t] = t;
    int steps = op_rewrite_ints(g, u->base, "step_index", (int)u->steps, pos);
    oc_free(pos);
    steps = axis_op(u, "step_index_column", OP_UNSQUEEZE, steps, 1, -1); /* [T, 1] */
    int valid = op2(u, "step_valid", OP_LESS, steps, lens);              /* [T, B] */
    int maskf;
    cast = emit(u, "step_valid_float", OP_CAST, valid, -1, -1, &maskf);
    op_rewrite_attr_int(u->g, cast, "to", dt);
    maskf = axis_op(u, "step_mask", OP_UNSQUEEZE, maskf, 2, -1); /* [T, B, 1] */
    u->masks = oc_malloc((size_t)u->steps * sizeof *u->masks);
    split_steps(u, "step_masks", maskf, u->masks);
}

static void unroll_node(unroll *u) {
    int x = u->in[IN_X];
    if (u->masked) step_masks(u, u->g->tensors[x].dtype);
    if (u->batch_first) { /* [B, T, I] and states [B, D, H]: sequence and directions first */
        static const int64_t perm[] = {1, 0, 2};
        x = transpose(u, "X_seq_first", x, 3, perm, -1);
        if (u->in[IN_H0] >= 0)
            u->in[IN_H0] = transpose(u, "initial_h_dirs_first", u->in[IN_H0], 3, perm, -1);
        if (u->cell == CELL_LSTM && u->in[IN_C0] >= 0)
            u->in[IN_C0] = transpose(u, "initial_c_dirs_first", u->in[IN_C0], 3, perm, -1);
    }
    int parts[12], h_last[2], c_last[2];
    for (int i = 0; i < 12; i++) parts[i] = -1;
    int *hs = oc_malloc((size_t)(2 * u->steps) * sizeof *hs);
    for (int d = 0; d < u->dirs; d++)
        direction(u, d, x, parts, hs + d * u->steps, &h_last[d], &c_last[d]);
    if (u->out[0] >= 0) { /* Y: [T, D, B, H] ([B, T, D, H]) */
        int y[2];
        bool last_op = u->dirs == 1 && !u->batch_first;
        for (int d = 0; d < u->dirs; d++) {
            char *w = oc_sprintf("d%d/Y", d);
            int cat = concat_steps(u, w, hs + d * u->steps);
            oc_free(w);
            w = oc_sprintf("d%d/Y_dir", d);
            y[d] = axis_op(u, w, OP_UNSQUEEZE, cat, 1, last_op ? u->out[0] : -1);
            oc_free(w);
        }
        int yy = y[0];
        if (u->dirs == 2) yy = concat(u, "Y_dirs", 2, y, 1, u->batch_first ? -1 : u->out[0]);
        if (u->batch_first) {
            static const int64_t perm[] = {2, 0, 1, 3};
            transpose(u, "Y_batch_first", yy, 4, perm, u->out[0]);
        }
    }
    if (u->out[1] >= 0) final_state(u, "Y_h", h_last, u->out[1]);
    if (u->out[2] >= 0) final_state(u, "Y_c", c_last, u->out[2]);
    oc_free(hs);
    oc_free(u->masks);
}

static int rnn_lower(ir_graph *g, int node, bool *changed, oc_err *err, rnn_cell cell) {
    ir_node *n = &g->nodes[node];
    unroll u = {.g = g, .at = node, .cell = cell};
    u.gates = cell == CELL_RNN ? 1 : cell == CELL_GRU ? 3 : 4;
    if (read_node(g, n, &u, err)) return OC_ERR;
    /* a step is at most 32 nodes (masks: 6 more), a direction's set-up 16, the outputs' and
     * masks' 32 + 2 per 64 steps */
    int64_t adds = u.dirs * (u.steps * 32 + 16 + 2 * (u.steps / OP_MAX_SPLIT + 1)) + 32;
    if (g->n_nodes + adds > IR_MAX_NODES)
        return oc_fail(err, "unrolled over %" PRId64 " steps, the graph would pass %d nodes",
                       u.steps, IR_MAX_NODES);
    u.base = oc_strdup(n->name);
    /* the node's outputs are written by what it becomes; its last by the node itself */
    for (int o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) g->tensors[n->outputs[o]].producer = -1;
    n->n_outputs = 0;
    int first = g->n_nodes;
    unroll_node(&u);
    ir_nodes_move_tail(g, first, node);
    oc_free(u.base);
    *changed = true;
    return OC_OK;
}

static int lstm_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    return rnn_lower(g, node, changed, err, CELL_LSTM);
}
static int gru_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    return rnn_lower(g, node, changed, err, CELL_GRU);
}
static int plain_rnn_lower(ir_graph *g, int node, bool *changed, oc_err *err) {
    return rnn_lower(g, node, changed, err, CELL_RNN);
}

/* Never reached: the node is unrolled before its shapes are inferred. */
static int rnn_infer(ir_graph *g, ir_node *n, int64_t opset, oc_err *err) {
    (void)g, (void)opset;
    return oc_fail(err, "%s reached shape inference unrolled", n->op_type);
}

static const op_role rnn_roles[] = {OP_IN_DATA,  OP_IN_PARAM, OP_IN_PARAM, OP_IN_PARAM,
                                    OP_IN_CONST, OP_IN_DATA,  OP_IN_DATA,  OP_IN_PARAM};

/* RNN and GRU take inputs X .. initial_h and write Y, Y_h; LSTM also initial_c, P and Y_c. */
#define RNN_DEF(name, inputs, outputs, lower_fn)                                                   \
    const op_def name = {.min_inputs = 3,                                                          \
                         .max_inputs = inputs,                                                     \
                         .min_outputs = 1,                                                         \
                         .output0_optional = true,                                                 \
                         .max_outputs = outputs,                                                   \
                         .roles = rnn_roles,                                                       \
                         .n_roles = inputs,                                                        \
                         .infer = rnn_infer,                                                       \
                         .lower = lower_fn}
RNN_DEF(op_def_rnn, 6, 2, plain_rnn_lower);
RNN_DEF(op_def_gru, 6, 2, gru_lower);
RNN_DEF(op_def_lstm, 8, 3, lstm_lower);
