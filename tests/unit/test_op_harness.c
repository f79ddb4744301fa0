/* test_op_harness.c — the op × backend harness: every case of op_cases.h,
 *
 *   1. built as a one-node model; when the op has a gradient rule, the
 *      training step is built the way every model's is (train_build) with a
 *      probe loss after the node (Reshape to [1, n] -> Gemm with a fixed
 *      random [n, 3] -> SoftmaxCrossEntropyLoss); a node whose output is a
 *      scalar loss is the loss itself (--loss model);
 *   2. on the cpu backend: every gradient the rule produces for a float input
 *      against central finite differences of f(x) = sum(Y(x) * dY), dY the
 *      gradient the step delivers to the node's output (f = the loss for a
 *      loss node), accumulated in double over the float kernels; points where
 *      the one-sided differences disagree (a kink: ReLU at 0, a max-pool tie)
 *      are skipped, at most a quarter of them; the backward reads only the
 *      tensors the op declares saved;
 *   3. every other backend built into this binary (cuda; the CUDA emulator in
 *      the CUDA=emu build): the whole step (forward, loss, backward, update)
 *      from the same initial bytes, every tensor against cpu (floats within
 *      1e-4 of the tensor's largest magnitude, other types bitwise). A backend
 *      that cannot be created (no GPU) is skipped with a line saying so,
 *      unless named by --require, which makes that a failure;
 *   4. every node output is written in full (outputs start as NaN bytes), and a
 *      plan-time folded output equals what the kernel computes;
 *   5. coverage: every op of OC_OPS_COMPUTE is reached by some case — as the
 *      case's node, a node its gradient rule emits, or its parameters' update —
 *      or is listed by OP_EXEMPT (and an exempt op must not be reached).
 *
 * Usage: test_op_harness [--require BACKEND]... (tools/gpu-check and
 * tests/cli/test_cuda_emu.sh require cuda); OC_CUDNN_CONV_API=graph: cuda's convolutions
 * through cuDNN's graph API (outcore-run --conv-api graph). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ir/half.h"
#include "ir/ops/op_table.h"
#include "train/channels_last.h"
#include "train/train_graph.h"

typedef struct op_case {
    op_kind op;
    const char *what;
    int64_t opset;
    int n_out;
    const char *inputs, *attrs;
} op_case;

static const op_case cases[] = {
#define OP_CASE(kind, what, opset, n_out, ins, attrs) {OP_##kind, what, opset, n_out, ins, attrs},
#define OP_EXEMPT(kind, why)
#include "op_cases.h"
#undef OP_CASE
#undef OP_EXEMPT
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct op_exempt {
    int op;
    const char *why;
} op_exempt;

static const op_exempt exempt[] = {
#define OP_CASE(kind, what, opset, n_out, ins, attrs)
#define OP_EXEMPT(kind, why) {OP_##kind, why},
#include "op_cases.h"
#undef OP_CASE
#undef OP_EXEMPT
    {OP_UNKNOWN, NULL},
};

#define MAX_REQUIRED 4
static const char *required[MAX_REQUIRED];
static int n_required;

static bool is_required(const char *backend) {
    for (int i = 0; i < n_required; i++)
        if (strcmp(required[i], backend) == 0) return true;
    return false;
}

/* ---- the case specification ---- */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s) { /* [0, 1) */
    return (double)(rng_next(s) >> 11) / (double)(1ULL << 53);
}

/* "[a,b,...]" at *p: up to cap numbers into v; advances *p past ']'. */
static int parse_list(const char **p, double *v, int cap, const char *spec) {
    const char *s = *p;
    if (*s != '[') fail_msg("case spec '%s': '[' expected at '%s'", spec, s);
    s++;
    int n = 0;
    while (*s && *s != ']') {
        char *end;
        double x = strtod(s, &end);
        if (end == s || n == cap) fail_msg("case spec '%s': bad list at '%s'", spec, s);
        v[n++] = x;
        s = *end == ',' ? end + 1 : end;
    }
    if (*s != ']') fail_msg("case spec '%s': ']' missing", spec);
    *p = s + 1;
    return n;
}

/* The half type of a case marked !bf16 / !fp16 (else float32). */
static ir_dtype case_half(const op_case *c);
static bool case_marked(const op_case *c, const char *marker);
static bool is_floating(const ir_tensor *x);
static void infer_or_fail(ir_graph *g, int node, const op_case *c);

/* Adds input tensor "x<slot>" from one token of the inputs spec; -1 for "-".
 * "h[..]": a float parameter cast by a Cast node to the case's half type (an
 * activation computed in half, as an earlier LOWER op would give it). */
static int add_input(ir_graph *g, int slot, const char *tok, uint64_t *rng, const op_case *c) {
    if (strcmp(tok, "-") == 0) return -1;
    if (tok[0] == 'h') {
        if (case_half(c) == IR_DTYPE_FLOAT)
            fail_msg("case spec '%s': a half input needs !bf16 or !fp16", tok);
        int x = add_input(g, slot, tok + 1, rng, c);
        g->tensors[x].kind = IR_KIND_PARAMETER; /* not a plan-time value: the Cast runs */
        char name[24];
        snprintf(name, sizeof name, "x%d/half", slot);
        int y = ir_tensor_add(g, name, IR_DTYPE_UNDEFINED);
        int n = op_node_add(g, name, OP_CAST);
        ir_node_add_input(g, n, x);
        ir_node_add_output(g, n, y);
        ir_attr a = {.name = "to", .type = IR_ATTR_INT, .i = case_half(c)};
        ir_node_add_attr(g, n, &a);
        infer_or_fail(g, n, c);
        return y;
    }
    double v[64];
    int64_t dims[IR_MAX_RANK];
    int rank = 0, nv = 0;
    ir_dtype dt = IR_DTYPE_FLOAT;
    enum { RAND, RAND_POS, RAND_HALF, RAND_OVER1, RAND_WIDE, RAND_INT, VALUES } fill = RAND;
    int64_t int_max = 0;
    const char *p = tok;
    if (strncmp(p, "i64", 3) == 0) dt = IR_DTYPE_INT64, p += 3;
    else if (strncmp(p, "f=", 2) == 0) p += 1;
    else if (strncmp(p, "b=", 2) == 0) dt = IR_DTYPE_BOOL, p += 1;
    else if (strncmp(p, "b[", 2) == 0) dt = IR_DTYPE_BOOL, p += 1;
    char tri = 0; /* bu[..] / bl[..]: a causal mask (cpu_attention.c), no draw */
    if (strncmp(p, "bu[", 3) == 0 || strncmp(p, "bl[", 3) == 0)
        dt = IR_DTYPE_BOOL, tri = p[1], p += 2;
    if (strncmp(p, "++", 2) == 0) fill = RAND_OVER1, p += 2;
    else if (*p == '+') fill = RAND_POS, p++;
    else if (*p == '~') fill = RAND_HALF, p++;
    else if (*p == '^') fill = RAND_WIDE, p++;
    if (*p == '<') {
        char *end;
        int_max = strtoll(p + 1, &end, 10);
        fill = RAND_INT, p = end;
    }
    if (*p == '=') {
        fill = VALUES, p++;
        if (*p == '[') {
            nv = parse_list(&p, v, 64, tok);
            rank = 1, dims[0] = nv;
            if (*p == '@') { /* i64=[values]@[dims]: the values in that shape */
                p++;
                double d[IR_MAX_RANK];
                rank = parse_list(&p, d, IR_MAX_RANK, tok);
                int64_t count = 1;
                for (int i = 0; i < rank; i++) dims[i] = (int64_t)d[i], count *= dims[i];
                if (count != nv) fail_msg("case spec '%s': %d values for that shape", tok, nv);
            }
        } else {
            char *end;
            v[0] = strtod(p, &end);
            if (end == p) fail_msg("case spec: bad value in '%s'", tok);
            nv = 1, rank = 0, p = end;
        }
    } else {
        rank = parse_list(&p, v, IR_MAX_RANK, tok);
        for (int i = 0; i < rank; i++) dims[i] = (int64_t)v[i];
    }
    if (*p) fail_msg("case spec: trailing '%s' in '%s'", p, tok);
    char name[16];
    snprintf(name, sizeof name, "x%d", slot);
    int t = ir_tensor_add(g, name, dt);
    ir_tensor *x = &g->tensors[t];
    ir_tensor_set_shape(x, rank, dims);
    int64_t n = 1, bytes = 0;
    for (int i = 0; i < rank; i++) n *= dims[i];
    assert_true(ir_tensor_bytes(x, &bytes));
    unsigned char *data = calloc(1, (size_t)bytes + 1);
    for (int64_t i = 0; i < n; i++) {
        double u = fill == VALUES ? v[i] : rng_uniform(rng);
        if (fill == RAND) u = 2 * u - 1;
        if (fill == RAND_POS) u = 0.5 + u;
        if (fill == RAND_HALF) u = u - 0.5;
        if (fill == RAND_OVER1) u = 1.5 + u;
        if (fill == RAND_WIDE) u = 3 * u - 1.5;
        if (fill == RAND_INT) u = floor(u * (double)int_max);
        if (dt == IR_DTYPE_FLOAT) ((float *)data)[i] = (float)u;
        else if (dt == IR_DTYPE_INT64) ((int64_t *)data)[i] = (int64_t)u;
        else data[i] = fill == RAND ? u > 0 : u != 0;
        if (tri) { /* true above the last two dims' diagonal (u), or at and below it (l) */
            int64_t S = dims[rank - 1], j = i % S, r = i / S % dims[rank - 2];
            data[i] = tri == 'u' ? j > r : j <= r;
        }
    }
    ir_tensor_set_data(&g->tensors[t], data, (size_t)bytes);
    free(data);
    x = &g->tensors[t];
    x->is_initializer = true;
    /* the kind import would give it: a float at a data or weight slot is trainable */
    ir_node of_op = {.op = c->op}; /* the case's node comes after its inputs */
    op_role role = op_input_role(op_def_of(&of_op), slot);
    if (dt != IR_DTYPE_FLOAT || fill == VALUES || role == OP_IN_CONST) x->kind = IR_KIND_CONSTANT;
    else x->kind = role == OP_IN_STATE ? IR_KIND_STATE : IR_KIND_PARAMETER;
    return t;
}

static void add_attr(ir_graph *g, int node, const char *tok) {
    const char *eq = strchr(tok, '=');
    if (!eq) fail_msg("case attribute '%s': name=value expected", tok);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(eq - tok), tok);
    const char *val = eq + 1;
    ir_attr a = {.name = name};
    int64_t ints[IR_MAX_RANK * 2];
    char *end;
    if (*val == '[') {
        double v[IR_MAX_RANK * 2];
        const char *p = val;
        a.type = IR_ATTR_INTS;
        a.n = parse_list(&p, v, IR_MAX_RANK * 2, tok);
        for (int i = 0; i < a.n; i++) ints[i] = (int64_t)v[i];
        a.ints = ints;
    } else if (strtoll(val, &end, 10), *end == '\0') {
        a.type = IR_ATTR_INT, a.i = strtoll(val, NULL, 10);
    } else if (strtod(val, &end), *end == '\0') {
        a.type = IR_ATTR_FLOAT, a.f = strtof(val, NULL);
    } else {
        a.type = IR_ATTR_STRING, a.s = (char *)val;
    }
    ir_node_add_attr(g, node, &a);
}

static ir_dtype case_half(const op_case *c) {
    return case_marked(c, "!bf16")   ? IR_DTYPE_BFLOAT16
           : case_marked(c, "!fp16") ? IR_DTYPE_FLOAT16
                                     : IR_DTYPE_FLOAT;
}

/* True when the case's attributes carry the marker token (e.g. "!forward",
 * "!refused:cuda"). */
static bool case_marked(const op_case *c, const char *marker) {
    size_t n = strlen(marker);
    for (const char *p = c->attrs; (p = strstr(p, marker)) != NULL; p += n)
        if ((p == c->attrs || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

/* ---- one case, built ---- */

typedef struct hcase {
    const op_case *c;
    ir_graph *g;     /* owned; tg->g when trained */
    train_graph *tg; /* NULL: the op has no gradient (forward only) */
    int node;        /* the case's node */
    void **init;     /* per tensor: initial bytes, or NULL (starts as NaN bytes) */
    int64_t *bytes;  /* per tensor */
} hcase;

static int node_named(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return i;
    return -1;
}

static int add_const(ir_graph *g, const char *name, ir_dtype dt, int rank, const int64_t *dims,
                     const void *data, size_t bytes) {
    int t = ir_tensor_add(g, name, dt);
    ir_tensor_set_shape(&g->tensors[t], rank, dims);
    ir_tensor_set_data(&g->tensors[t], data, bytes);
    g->tensors[t].is_initializer = true;
    g->tensors[t].kind = IR_KIND_CONSTANT;
    return t;
}

static void infer_or_fail(ir_graph *g, int node, const op_case *c) {
    oc_err err;
    if (op_infer(g, &g->nodes[node], &err))
        fail_msg("%s (%s): node '%s': %s", op_name(c->op), c->what, g->nodes[node].name, err.msg);
}

/* Appends the probe loss after y: Reshape [1, n] -> Gemm with R [n, 3] (a
 * half y cast to float32 first). */
static void add_probe(ir_graph *g, int y, uint64_t *rng, const op_case *c) {
    int64_t numel = 0;
    assert_true(ir_tensor_numel(&g->tensors[y], &numel));
    const int64_t shape[2] = {1, -1}, two = 2, rdims[2] = {numel, 3};
    int shp = add_const(g, "probe/shape", IR_DTYPE_INT64, 1, &two, shape, sizeof shape);
    float *r = malloc((size_t)numel * 3 * sizeof(float));
    for (int64_t i = 0; i < numel * 3; i++)
        r[i] = (float)((2 * rng_uniform(rng) - 1) / sqrt((double)numel));
    int rt =
        add_const(g, "probe/R", IR_DTYPE_FLOAT, 2, rdims, r, (size_t)numel * 3 * sizeof(float));
    free(r);
    int n;
    if (ir_dtype_is_half(g->tensors[y].dtype)) { /* a half output: float32 for the probe */
        int yf = ir_tensor_add(g, "probe/float", IR_DTYPE_UNDEFINED);
        n = op_node_add(g, "probe/float", OP_CAST);
        ir_node_add_input(g, n, y);
        ir_node_add_output(g, n, yf);
        ir_attr a = {.name = "to", .type = IR_ATTR_INT, .i = IR_DTYPE_FLOAT};
        ir_node_add_attr(g, n, &a);
        infer_or_fail(g, n, c);
        y = yf;
    }
    int flat = ir_tensor_add(g, "probe/flat", IR_DTYPE_UNDEFINED);
    n = op_node_add(g, "probe/reshape", OP_RESHAPE);
    ir_node_add_input(g, n, y);
    ir_node_add_input(g, n, shp);
    ir_node_add_output(g, n, flat);
    infer_or_fail(g, n, c);
    int logits = ir_tensor_add(g, "probe/logits", IR_DTYPE_UNDEFINED);
    n = op_node_add(g, "probe/gemm", OP_GEMM);
    ir_node_add_input(g, n, flat);
    ir_node_add_input(g, n, rt);
    ir_node_add_output(g, n, logits);
    infer_or_fail(g, n, c);
    ir_graph_add_output(g, logits);
}

static void case_free(hcase *h) {
    if (!h->g) return;
    for (int t = 0; t < h->g->n_tensors; t++) free(h->init[t]);
    free(h->init);
    free(h->bytes);
    if (h->tg) train_graph_free(h->tg);
    else ir_graph_free(h->g);
    memset(h, 0, sizeof *h);
}

/* The case's node alone, shape-inferred. */
static ir_graph *case_graph(const op_case *c, uint64_t *rng) {
    ir_graph *g = ir_graph_new();
    g->opset = c->opset;
    g->model_path = oc_sprintf("op_cases.h: %s (%s)", op_name(c->op), c->what);
    int ins[16], n_in = 0;
    char *spec = strdup(c->inputs), *save = NULL;
    for (char *tok = strtok_r(spec, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (n_in == 16) fail_msg("case spec '%s': more than 16 inputs", c->inputs);
        if (tok[0] == '@') { /* "@k": input k again (one tensor read at two slots) */
            int k = atoi(tok + 1);
            if (k < 0 || k >= n_in) fail_msg("case spec '%s': no input %d yet", c->inputs, k);
            ins[n_in] = ins[k];
        } else {
            ins[n_in] = add_input(g, n_in, tok, rng, c);
        }
        n_in++;
    }
    free(spec);
    int node = op_node_add(g, "case", c->op); /* after the inputs' Casts: topological */
    for (int i = 0; i < n_in; i++) ir_node_add_input(g, node, ins[i]);
    spec = strdup(c->attrs);
    for (char *tok = strtok_r(spec, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        if (tok[0] != '!') add_attr(g, node, tok); /* markers: case_marked */
    free(spec);
    for (int o = 0; o < c->n_out; o++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", o);
        ir_node_add_output(g, node, ir_tensor_add(g, name, IR_DTYPE_UNDEFINED));
    }
    infer_or_fail(g, node, c);
    return g;
}

/* A case marked !forward: its gradient rule must refuse it (else the marker
 * would hide a check). Consumes g. */
static void expect_no_gradient(const op_case *c, ir_graph *g, uint64_t rng) {
    train_opts o = train_opts_default();
    train_graph *tg = NULL;
    add_probe(g, g->nodes[node_named(g, "case")].outputs[0], &rng, c);
    oc_err err;
    if (train_build(g, &o, &tg, &err) == OC_OK) {
        train_graph_free(tg);
        fail_msg("%s (%s) is marked !forward but its gradient rule accepts it: drop the marker",
                 op_name(c->op), c->what);
    }
    printf("ok - %s (%s): no gradient, as marked: %s\n", op_name(c->op), c->what, err.msg);
}

/* A piecewise-constant op (op_def.grad_zero): the training step builds through it, and no
 * gradient reaches its input (PyTorch's is zero wherever it is defined). */
static void expect_zero_gradient(const op_case *c, ir_graph *g, uint64_t rng) {
    int node = node_named(g, "case"), x = g->nodes[node].inputs[0];
    add_probe(g, g->nodes[node].outputs[0], &rng, c);
    train_opts o = train_opts_default();
    train_graph *tg = NULL;
    oc_err err;
    if (train_build(g, &o, &tg, &err))
        fail_msg("%s (%s): train_build through a zero gradient: %s", op_name(c->op), c->what,
                 err.msg);
    if (tg->grad_of[x] >= 0)
        fail_msg("%s (%s): a gradient reaches input '%s'", op_name(c->op), c->what,
                 tg->g->tensors[x].name);
    train_graph_free(tg);
    printf("ok - %s (%s): the step builds; no gradient reaches its input\n", op_name(c->op),
           c->what);
}

static void case_build(const op_case *c, hcase *h) {
    memset(h, 0, sizeof *h);
    h->c = c;
    /* the case's own seed, from its op's name and its own (FNV-1a): a case added or
     * moved in op_cases.h, or an op added to the list, changes no other case's numbers */
    uint64_t seed = 0xcbf29ce484222325ull;
    for (const char *p = op_name(c->op); *p; p++) seed = (seed ^ (uint8_t)*p) * 0x100000001b3ull;
    for (const char *p = c->what; *p; p++) seed = (seed ^ (uint8_t)*p) * 0x100000001b3ull;
    uint64_t rng = seed;
    ir_graph *g = case_graph(c, &rng);
    const int node = node_named(g, "case");
    const ir_tensor *y = &g->tensors[g->nodes[node].outputs[0]];
    bool trains = op_def_of(&g->nodes[node])->grad && is_floating(y) && !y->data;
    if (op_def_of(&g->nodes[node])->grad_zero) {
        expect_zero_gradient(c, g, rng);
        rng = seed;
        g = case_graph(c, &rng);
    }
    if (trains && case_marked(c, "!forward")) {
        expect_no_gradient(c, g, rng);
        rng = seed;
        g = case_graph(c, &rng);
        trains = false;
    }
    if (trains) {
        train_opts o = train_opts_default();
        o.bn_frozen = case_marked(c, "!frozen");
        if (case_marked(c, "!adamw")) o.optimizer = TRAIN_OPT_ADAMW, o.weight_decay = 0.1f;
        if (case_marked(c, "!clip")) o.clip_grad_norm = 0.5f;
        if (case_marked(c, "!scaled")) o.loss_scale = 1.0f;
        if (case_marked(c, "!bf16")) o.precision = TRAIN_PRECISION_BF16;
        if (case_marked(c, "!fp16")) o.precision = TRAIN_PRECISION_FP16;
        o.channels_last = case_marked(c, "!nhwc");
        if (y->rank == 0)
            o.loss = TRAIN_LOSS_MODEL, ir_graph_add_output(g, g->nodes[node].outputs[0]);
        else add_probe(g, g->nodes[node].outputs[0], &rng, c);
        oc_err err;
        if (train_build(g, &o, &h->tg, &err)) /* g consumed */
            fail_msg("%s (%s): train_build: %s", op_name(c->op), c->what, err.msg);
        g = h->tg->g;
    } else {
        for (int o = 0; o < g->nodes[node].n_outputs; o++)
            if (g->nodes[node].outputs[o] >= 0) ir_graph_add_output(g, g->nodes[node].outputs[o]);
    }
    h->g = g;
    h->node = node_named(g, "case");
    assert_true(h->node >= 0);
    if (case_marked(c, "!nhwc") && !g->nodes[h->node].channels_last)
        fail_msg("%s (%s): --layout nhwc left the node as it was", op_name(c->op), c->what);
    h->init = calloc((size_t)g->n_tensors, sizeof(void *));
    h->bytes = calloc((size_t)g->n_tensors, sizeof(int64_t));
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        if (!ir_tensor_bytes(x, &h->bytes[t]))
            fail_msg("%s: tensor '%s' has no static shape", g->model_path, x->name);
        if (x->is_initializer) { /* data, or zeros (optimizer state) */
            h->init[t] = calloc(1, (size_t)h->bytes[t] + 1);
            if (x->data) memcpy(h->init[t], x->data, (size_t)h->bytes[t]);
        } else if (h->tg && t == h->tg->label_tensor) {
            h->init[t] = calloc(1, (size_t)h->bytes[t] + 1);
            int64_t *lab = h->init[t];
            for (int64_t i = 0; i < h->bytes[t] / 8; i++) lab[i] = (int64_t)(rng_next(&rng) % 3);
        }
    }
}

/* ---- running a case on a backend ---- */

typedef struct session {
    rt_backend *b;
    const hcase *h;
    void **dev;     /* per tensor; in-place outputs share their input's buffer */
    int *root;      /* per tensor: the tensor whose buffer it is */
    void **scratch; /* per node */
    size_t *scratch_bytes;
    void ***in, ***out;
    kernel_args *args;
} session;

static void session_open(session *s, rt_backend *b, const hcase *h) {
    const ir_graph *g = h->g;
    memset(s, 0, sizeof *s);
    s->b = b, s->h = h;
    s->dev = calloc((size_t)g->n_tensors, sizeof(void *));
    s->root = malloc((size_t)g->n_tensors * sizeof(int));
    for (int t = 0; t < g->n_tensors; t++) s->root[t] = t;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        for (int o = 0; o < n->n_outputs; o++) {
            int k = op_output_alias(n, o);
            if (k >= 0 && n->outputs[o] >= 0 && k < n->n_inputs && n->inputs[k] >= 0)
                s->root[n->outputs[o]] = s->root[n->inputs[k]];
        }
    }
    oc_err err;
    for (int t = 0; t < g->n_tensors; t++)
        if (s->root[t] == t && b->dev_alloc(b, (size_t)h->bytes[t] + 1, &s->dev[t], &err))
            fail_msg("%s: %s", b->name, err.msg);
    for (int t = 0; t < g->n_tensors; t++) s->dev[t] = s->dev[s->root[t]];
    size_t nn = (size_t)(g->n_nodes > 0 ? g->n_nodes : 0) + 1;
    s->scratch = calloc(nn, sizeof(void *));
    s->scratch_bytes = calloc(nn, sizeof(size_t));
    s->in = calloc(nn, sizeof(void **));
    s->out = calloc(nn, sizeof(void **));
    s->args = calloc(nn, sizeof(kernel_args));
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        s->in[i] = calloc((size_t)n->n_inputs + 1, sizeof(void *));
        s->out[i] = calloc((size_t)n->n_outputs + 1, sizeof(void *));
        for (int k = 0; k < n->n_inputs; k++)
            s->in[i][k] = n->inputs[k] >= 0 ? s->dev[n->inputs[k]] : NULL;
        for (int k = 0; k < n->n_outputs; k++)
            s->out[i][k] = n->outputs[k] >= 0 ? s->dev[n->outputs[k]] : NULL;
        s->scratch_bytes[i] = b->scratch_bytes(b, g, n, SIZE_MAX);
        if (s->scratch_bytes[i] && b->dev_alloc(b, s->scratch_bytes[i], &s->scratch[i], &err))
            fail_msg("%s: %s", b->name, err.msg);
        s->args[i] = (kernel_args){.g = g,
                                   .n = n,
                                   .in = s->in[i],
                                   .out = s->out[i],
                                   .seed = 42,
                                   .step = 0,
                                   .scratch = s->scratch[i],
                                   .scratch_bytes = s->scratch_bytes[i]};
    }
}

static void session_close(session *s) {
    const ir_graph *g = s->h->g;
    for (int t = 0; t < g->n_tensors; t++)
        if (s->root[t] == t) s->b->dev_free(s->b, s->dev[t]);
    for (int i = 0; i < g->n_nodes; i++) {
        if (s->scratch[i]) s->b->dev_free(s->b, s->scratch[i]);
        free(s->in[i]);
        free(s->out[i]);
    }
    free(s->dev), free(s->root), free(s->scratch), free(s->scratch_bytes);
    free(s->in), free(s->out), free(s->args);
}

static void session_sync(session *s) {
    oc_err err;
    if (s->b->sync(s->b, &err)) fail_msg("%s backend: %s", s->b->name, err.msg);
}

/* Every buffer back to the case's initial bytes (NaN bytes where none). */
static void session_reset(session *s) {
    const hcase *h = s->h;
    int64_t most = 1;
    for (int t = 0; t < h->g->n_tensors; t++) most = h->bytes[t] > most ? h->bytes[t] : most;
    void *nan_bytes = malloc((size_t)most);
    memset(nan_bytes, 0xff, (size_t)most);
    for (int t = 0; t < h->g->n_tensors; t++)
        if (s->root[t] == t && h->bytes[t])
            s->b->copy(s->b, RT_STREAM_COMPUTE, s->dev[t], h->init[t] ? h->init[t] : nan_bytes,
                       (size_t)h->bytes[t]);
    session_sync(s);
    free(nan_bytes);
}

typedef enum which_nodes { ALL_NODES, NO_UPDATE, CASE_NODE } which_nodes;

static int session_try_run(session *s, which_nodes w, oc_err *err) {
    const hcase *h = s->h;
    for (int i = 0; i < h->g->n_nodes; i++) {
        /* the case node, after the layout Transposes of its inputs (--layout nhwc) */
        if (w == CASE_NODE && i != h->node &&
            !(i < h->node && channels_last_is_conversion(&h->g->nodes[i])))
            continue;
        if (w == NO_UPDATE && h->tg && h->tg->phase[i] == TRAIN_PHASE_UPDATE) continue;
        s->b->run_node(s->b, RT_STREAM_COMPUTE, &s->args[i], 0);
    }
    return s->b->sync(s->b, err);
}

static void session_run(session *s, which_nodes w) {
    oc_err err;
    if (session_try_run(s, w, &err)) fail_msg("%s backend: %s", s->b->name, err.msg);
}

static void *session_get(session *s, int t) {
    size_t n = (size_t)s->h->bytes[t];
    void *host = malloc(n + 1);
    if (n) s->b->copy(s->b, RT_STREAM_COMPUTE, host, s->dev[t], n);
    session_sync(s);
    return host;
}

static void session_put_float(session *s, int t, int64_t i, float v) {
    s->b->copy(s->b, RT_STREAM_COMPUTE, (float *)s->dev[t] + i, &v, sizeof v);
    session_sync(s);
}

/* ---- backends ---- */

static rt_backend *backends[8];
static const char *backend_missing[8]; /* why a built-in backend could not be created */

static rt_backend *backend_get(int k, const char **why) {
    int n;
    const rt_backend_kind *kinds = rt_backend_kinds(&n);
    OC_ASSERT(k < n && k < 8);
    static char msgs[8][256];
    if (!backends[k] && !backend_missing[k]) {
        /* OC_CUDNN_CONV_API=graph: cuda's convolutions through cuDNN's graph API */
        const char *api = getenv("OC_CUDNN_CONV_API");
        rt_backend_opts o = {.deterministic = true, .conv_graph = api && strcmp(api, "graph") == 0};
        oc_err err;
        if (!kinds[k].built()) backend_missing[k] = "not built into this binary";
        else if (rt_backend_new(kinds[k].name, &o, &backends[k], &err)) {
            snprintf(msgs[k], sizeof msgs[k], "%s", err.msg);
            backend_missing[k] = msgs[k];
        }
    }
    *why = backend_missing[k];
    return backends[k];
}

static int cpu_kind(void) {
    int n;
    const rt_backend_kind *kinds = rt_backend_kinds(&n);
    for (int k = 0; k < n; k++)
        if (strcmp(kinds[k].name, "cpu") == 0) return k;
    fail_msg("no cpu backend in the registry");
    return -1;
}

/* ---- checks ---- */

/* A float32, float16 or bfloat16 tensor (the half ones widened). */
static bool is_floating(const ir_tensor *x) {
    return x->dtype == IR_DTYPE_FLOAT || ir_dtype_is_half(x->dtype);
}

static int64_t n_floating(const hcase *h, int t) {
    return h->bytes[t] / (h->g->tensors[t].dtype == IR_DTYPE_FLOAT ? 4 : 2);
}

static double floating_at(const ir_tensor *x, const void *v, int64_t e) {
    if (x->dtype == IR_DTYPE_FLOAT) return ((const float *)v)[e];
    return half_to_f32(x->dtype, ((const uint16_t *)v)[e]);
}

/* A case run in half (!bf16, !fp16): the step is compared within a few units
 * in the last place of that type, not float32's 1e-4 (both backends compute in
 * float32 and round each half value once; a float32 sum that falls the other
 * side of a rounding boundary moves a value by one unit, and what follows). */
static double step_tolerance(const hcase *h) {
    if (case_marked(h->c, "!bf16")) return 0x1p-6;
    if (case_marked(h->c, "!fp16")) return 0x1p-9;
    return 1e-4;
}

static const char *case_title(const hcase *h) {
    static char buf[160];
    snprintf(buf, sizeof buf, "%s (%s)", op_name(h->c->op), h->c->what);
    return buf;
}

/* Every output of every node that ran is free of the NaN bytes it started as,
 * and a folded output equals its plan-time value. */
static void check_outputs_written(session *s, const char *backend) {
    const hcase *h = s->h;
    const ir_graph *g = h->g;
    for (int i = 0; i < g->n_nodes; i++)
        for (int o = 0; o < g->nodes[i].n_outputs; o++) {
            int t = g->nodes[i].outputs[o];
            if (t < 0 || s->root[t] != t) continue;
            const ir_tensor *x = &g->tensors[t];
            unsigned char *v = session_get(s, t);
            if (is_floating(x))
                for (int64_t e = 0; e < n_floating(h, t); e++)
                    if (isnan(floating_at(x, v, e)))
                        fail_msg("%s on %s: node '%s' left %s[%lld] unwritten (or NaN)",
                                 case_title(h), backend, g->nodes[i].name, x->name, (long long)e);
            if (x->data && x->data_bytes == (size_t)h->bytes[t] &&
                memcmp(x->data, v, x->data_bytes) != 0)
                fail_msg("%s on %s: node '%s' computes %s unlike its plan-time value",
                         case_title(h), backend, g->nodes[i].name, x->name);
            free(v);
        }
}

/* The backward reads of the case node's tensors stay within its saved masks. */
static void check_saved(const hcase *h) {
    const ir_graph *g = h->g;
    const ir_node *f = &g->nodes[h->node];
    const op_def *d = op_def_of(f);
    uint32_t in_read = 0, out_read = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (h->tg->fwd_of[i] != h->node) continue;
        const ir_node *b = &g->nodes[i];
        for (int k = 0; k < b->n_inputs; k++) {
            for (int j = 0; j < f->n_inputs; j++)
                if (b->inputs[k] >= 0 && b->inputs[k] == f->inputs[j]) in_read |= 1u << j;
            for (int j = 0; j < f->n_outputs; j++)
                if (b->inputs[k] >= 0 && b->inputs[k] == f->outputs[j]) out_read |= 1u << j;
        }
    }
    if ((in_read & ~d->saved_inputs) || (out_read & ~d->saved_outputs))
        fail_msg("%s: the backward reads inputs 0x%x, outputs 0x%x; the op declares saved "
                 "inputs 0x%x, outputs 0x%x",
                 case_title(h), in_read, out_read, d->saved_inputs, d->saved_outputs);
}

/* f(x) = sum over the case's outputs o with a gradient of sum(Y_o * dY_o). */
typedef struct probe {
    int y[8];
    float *dy[8]; /* NULL: the output is the loss (dY = 1) */
    int n;
} probe;

static double probe_eval(session *s, const probe *p) {
    session_run(s, CASE_NODE);
    double f = 0;
    for (int k = 0; k < p->n; k++) {
        float *y = session_get(s, p->y[k]);
        int64_t n = s->h->bytes[p->y[k]] / 4;
        for (int64_t e = 0; e < n; e++) f += (double)y[e] * (p->dy[k] ? p->dy[k][e] : 1.0);
        free(y);
    }
    return f;
}

#define FD_H 1e-3
#define FD_POINTS 40

/* The central difference of the probe along element e of input x (value x0 there) with
 * step h: f(x + h), f(x - h) and the steps as float32 rounds them written out. */
static double central_difference(session *s, const probe *p, int x, int64_t e, float x0, double h,
                                 double *fu, double *fd, double *hu, double *hd) {
    float up = (float)(x0 + h), down = (float)(x0 - h);
    session_put_float(s, x, e, up);
    *fu = probe_eval(s, p);
    session_put_float(s, x, e, down);
    *fd = probe_eval(s, p);
    session_put_float(s, x, e, x0);
    *hu = (double)up - x0, *hd = (double)x0 - down;
    return (*fu - *fd) / (*hu + *hd);
}

/* One float input's gradient against central differences (session already
 * ran forward + backward from the initial bytes). */
/* Input x (a parameter the node reads, maybe through a layout Transpose) against
 * finite differences. */
static void check_input_gradient(session *s, const probe *p, int x, bool zero) {
    const hcase *h = s->h;
    const ir_graph *g = h->g;
    int dx = h->tg->grad_of[x];
    if (dx < 0)
        fail_msg("%s: no gradient reaches input '%s' though it is trainable", case_title(h),
                 g->tensors[x].name);
    float *ana = session_get(s, dx);
    const float *x0 = h->init[x];
    int64_t n = h->bytes[x] / 4;
    double scale = 0;
    for (int64_t e = 0; e < n; e++) scale = fmax(scale, fabs(ana[e]));
    double f0 = probe_eval(s, p), worst = 0;
    int checked = 0, kinks = 0;
    int64_t points = n < FD_POINTS ? n : FD_POINTS;
    for (int64_t k = 0; k < points; k++) {
        int64_t e = k * n / points + (n > points ? (k * 7) % (n / points) : 0);
        double fu, fd, hu, hd;
        double num = central_difference(s, p, x, e, x0[e], FD_H, &fu, &fd, &hu, &hd);
        double err = fabs(num - ana[e]), tol = 1e-2 * fabs(num) + 2e-3 * scale + 1e-6;
        if (err > tol) {
            /* a kink of one of the outputs X[e] reaches (a ReLU's zero, a tie) within h
             * bends the difference: again with an eighth of h, past most of them */
            double fu8, fd8, hu8, hd8;
            double num8 = central_difference(s, p, x, e, x0[e], FD_H / 8, &fu8, &fd8, &hu8, &hd8);
            double tol8 = 1e-2 * fabs(num8) + 2e-3 * scale + 1e-6;
            if (fabs(num8 - ana[e]) <= tol8) num = num8, err = fabs(num8 - ana[e]);
        }
        if (err > tol) {
            double right = (fu - f0) / hu, left = (f0 - fd) / hd;
            if (fabs(right - left) > 10 * tol) { /* a kink between x - h and x + h */
                kinks++;
                continue;
            }
            fail_msg("%s: d/d%s[%lld] numeric %.7g, analytic %.7g (tolerance %.2g, gradient "
                     "scale %.3g)",
                     case_title(h), g->tensors[x].name, (long long)e, num, (double)ana[e], tol,
                     scale);
        }
        worst = fmax(worst, err / (fabs(num) + scale + 1e-12));
        checked++;
    }
    free(ana);
    if (kinks * 4 > checked + kinks)
        fail_msg("%s: d/d%s: %d of %d points sit on a kink; choose other shapes or values",
                 case_title(h), g->tensors[x].name, kinks, checked + kinks);
    if (scale == 0 && !zero)
        fail_msg("%s: d/d%s is zero everywhere: the check would prove nothing", case_title(h),
                 g->tensors[x].name);
    if (scale != 0 && zero)
        fail_msg("%s: d/d%s is not zero everywhere (the case says it is)", case_title(h),
                 g->tensors[x].name);
    printf("ok - %s: d%s matches finite differences at %d points (%d kinks skipped; worst "
           "%.1e of scale %.2g)\n",
           case_title(h), g->tensors[x].name, checked, kinks, worst, scale);
}

static void check_gradients(session *s) {
    const hcase *h = s->h;
    const ir_graph *g = h->g;
    const ir_node *f = &g->nodes[h->node];
    session_reset(s);
    session_run(s, NO_UPDATE);
    probe p = {.n = 0};
    for (int o = 0; o < f->n_outputs && p.n < 8; o++) {
        int y = f->outputs[o];
        if (y < 0 || g->tensors[y].dtype != IR_DTYPE_FLOAT) continue;
        if (y == h->tg->loss_tensor) p.y[p.n] = y, p.dy[p.n++] = NULL;
        else if (h->tg->grad_of[y] >= 0)
            p.y[p.n] = y, p.dy[p.n++] = session_get(s, h->tg->grad_of[y]);
    }
    if (p.n == 0) fail_msg("%s: no gradient reaches the node's outputs", case_title(h));
    int n_checked = 0;
    for (int i = 0; i < f->n_inputs; i++) {
        int x = f->inputs[i]; /* --layout nhwc: the parameter behind its Transpose */
        while (x >= 0 && g->tensors[x].producer >= 0 &&
               channels_last_is_conversion(&g->nodes[g->tensors[x].producer]))
            x = g->nodes[g->tensors[x].producer].inputs[0];
        if (x < 0 || g->tensors[x].kind != IR_KIND_PARAMETER) continue;
        bool seen = false; /* one tensor at several slots ("@k"): checked once */
        for (int k = 0; k < i; k++) seen = seen || f->inputs[k] == f->inputs[i];
        char zero[16]; /* !zero:<slot>: that input's gradient is zero everywhere */
        snprintf(zero, sizeof zero, "!zero:%d", i);
        if (!seen) check_input_gradient(s, &p, x, case_marked(h->c, zero));
        n_checked++;
    }
    for (int k = 0; k < p.n; k++) free(p.dy[k]);
    if (n_checked == 0) fail_msg("%s: no trainable input to check", case_title(h));
}

/* The whole step on backend b against the same on cpu, tensor by tensor. */
static void compare_backend(session *cpu, session *other) {
    const hcase *h = cpu->h;
    const ir_graph *g = h->g;
    int n = 0;
    double worst = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        if (cpu->root[t] != t || !h->bytes[t]) continue;
        unsigned char *a = session_get(other, t), *want = session_get(cpu, t);
        const ir_tensor *x = &g->tensors[t];
        if (memcmp(a, want, (size_t)h->bytes[t]) != 0) {
            if (!is_floating(x))
                fail_msg("%s: %s differs from cpu on %s (%s, compared bitwise)", case_title(h),
                         other->b->name, x->name, ir_dtype_name(x->dtype));
            double diff = 0, big = 0, tol = step_tolerance(h);
            int64_t at = 0;
            for (int64_t e = 0; e < n_floating(h, t); e++) {
                double u = floating_at(x, a, e), v = floating_at(x, want, e);
                if (!(fabs(u - v) <= diff)) diff = isnan(u - v) ? INFINITY : fabs(u - v), at = e;
                big = fmax(big, fabs(v));
            }
            if (!(diff <= tol * big + 1e-7))
                fail_msg("%s: %s differs from cpu on %s[%lld] (%s): %.7g vs %.7g (largest |cpu| "
                         "%.3g, tolerance %.1e of it)",
                         case_title(h), other->b->name, x->name, (long long)at,
                         ir_dtype_name(x->dtype), floating_at(x, a, at), floating_at(x, want, at),
                         big, tol);
            worst = fmax(worst, diff / (big + 1e-30));
        }
        free(a), free(want);
        n++;
    }
    printf("ok - %s: %s matches cpu on all %d tensors of the step (worst %.1e)\n", case_title(h),
           other->b->name, n, worst);
}

static void run_case(void **state) {
    const op_case *c = *state;
    hcase h;
    case_build(c, &h);
    const char *why;
    int ck = cpu_kind();
    rt_backend *cpu_b = backend_get(ck, &why);
    if (!cpu_b) fail_msg("cpu backend: %s", why);
    session cpu;
    session_open(&cpu, cpu_b, &h);
    if (h.tg) {
        check_saved(&h);
        if (h.tg->opts.precision == TRAIN_PRECISION_FP32) check_gradients(&cpu);
        else /* rounding to half makes finite differences noise; the fp32 cases check them */
            printf("ok - %s: run in %s (finite differences: the float32 cases)\n", case_title(&h),
                   train_precision_name(h.tg->opts.precision));
    }
    session_reset(&cpu);
    session_run(&cpu, ALL_NODES);
    check_outputs_written(&cpu, "cpu");
    int n;
    const rt_backend_kind *kinds = rt_backend_kinds(&n);
    for (int k = 0; k < n; k++) {
        if (k == ck) continue;
        rt_backend *b = backend_get(k, &why);
        if (!b) {
            if (is_required(kinds[k].name))
                fail_msg("backend %s is required (--require) but: %s", kinds[k].name, why);
            continue;
        }
        for (int i = 0; i < h.g->n_nodes; i++)
            if (!kinds[k].supports(h.g->nodes[i].op))
                fail_msg("%s: backend %s has no kernel for %s (node '%s')", case_title(&h),
                         kinds[k].name, op_name((op_kind)h.g->nodes[i].op), h.g->nodes[i].name);
        session other;
        session_open(&other, b, &h);
        session_reset(&other);
        char marker[64];
        snprintf(marker, sizeof marker, "!refused:%s", kinds[k].name);
        if (case_marked(c, marker)) { /* it must refuse, naming the node */
            oc_err err;
            if (session_try_run(&other, ALL_NODES, &err) == OC_OK)
                fail_msg("%s: marked %s but %s runs it: drop the marker", case_title(&h), marker,
                         kinds[k].name);
            printf("ok - %s: %s refuses it, as marked: %s\n", case_title(&h), kinds[k].name,
                   err.msg);
        } else {
            session_run(&other, ALL_NODES);
            check_outputs_written(&other, kinds[k].name);
            compare_backend(&cpu, &other);
        }
        session_close(&other);
    }
    session_close(&cpu);
    case_free(&h);
}

/* Every compute op is reached by a case or exempt, never both. */
static void test_coverage(void **state) {
    (void)state;
    bool reached[OP__COUNT] = {false};
    for (int i = 0; i < N_CASES; i++) {
        hcase h;
        case_build(&cases[i], &h);
        reached[h.g->nodes[h.node].op] = true;
        for (int n = 0; h.tg && n < h.g->n_nodes; n++)
            if (h.tg->fwd_of[n] == h.node || h.tg->phase[n] == TRAIN_PHASE_UPDATE)
                reached[h.g->nodes[n].op] = true;
        case_free(&h);
    }
    int n_reached = 0, bad = 0;
#define CHECK_OP(kind, name, dom, def, kern)                                                       \
    {                                                                                              \
        const char *why = NULL;                                                                    \
        for (int e = 0; exempt[e].why; e++)                                                        \
            if (exempt[e].op == OP_##kind) why = exempt[e].why;                                    \
        if (reached[OP_##kind] && why) {                                                           \
            printf("not ok - %s is reached by a case and exempt: drop its OP_EXEMPT\n", name);     \
            bad++;                                                                                 \
        } else if (!reached[OP_##kind] && !why) {                                                  \
            printf("not ok - %s: no case reaches it (add an OP_CASE to op_cases.h)\n", name);      \
            bad++;                                                                                 \
        } else if (why) {                                                                          \
            printf("ok - %s exempt: %s\n", name, why);                                             \
        } else {                                                                                   \
            n_reached++;                                                                           \
        }                                                                                          \
    }
    OC_OPS_COMPUTE(CHECK_OP)
#undef CHECK_OP
    printf("ok - %d of %d compute ops reached by the %d cases\n", n_reached, (int)OP__COUNT - 2,
           N_CASES);
    assert_int_equal(bad, 0);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--require") == 0 && i + 1 < argc && n_required < MAX_REQUIRED) {
            required[n_required++] = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--require BACKEND]...\n", argv[0]);
            return 2;
        }
    }
    static struct CMUnitTest tests[N_CASES + 1];
    static char names[N_CASES][160];
    tests[0] = (struct CMUnitTest){.name = "coverage", .test_func = test_coverage};
    for (int i = 0; i < N_CASES; i++) {
        snprintf(names[i], sizeof names[i], "%s: %s", op_name(cases[i].op), cases[i].what);
        tests[i + 1] = (struct CMUnitTest){
            .name = names[i], .test_func = run_case, .initial_state = (void *)&cases[i]};
    }
    int rc = _cmocka_run_group_tests("op_harness", tests, N_CASES + 1, NULL, NULL);
    int n;
    const rt_backend_kind *kinds = rt_backend_kinds(&n);
    for (int k = 0; k < n && k < 8; k++) {
        if (backends[k]) rt_backend_free(backends[k]);
        else if (backend_missing[k])
            printf("# backend %s not compared: %s\n", kinds[k].name, backend_missing[k]);
    }
    return rc;
}
