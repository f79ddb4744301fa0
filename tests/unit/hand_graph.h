/* hand_graph.h — the seven-node training graph whose timelines the simulator
 * and strategy tests work out by hand (test-only, header-only):
 *
 *   x[4] -F1-> a[1000] -F2-> b[b_bytes] -F3-> c[100] -L-> l[100]
 *   backward: B3(l) -> gc[100]; B2(gc, b) -> gb[100]; B1(gb, a) -> ga[100]
 *   saved = {a, b}: a is read by B1, b by B2.
 *
 *   int a, b;
 *   train_graph *tg = hand_graph_new(40, &a, &b);     // caller frees: train_graph_free
 *   profile *p = hand_profile_new(tg, 1000.0, 1.0);   // caller frees: profile_free
 *
 * Sizes and bandwidths are in hand units of HAND_UNIT bytes: every tensor is then whole in
 * the arena's alignment (the simulator counts memory aligned, ir_tensor_device_bytes), so the
 * hand-worked byte counts hold in units and the copy times in seconds. Tests compare bytes
 * as hand units x HAND_UNIT.
 */
#ifndef OC_TEST_HAND_GRAPH_H
#define OC_TEST_HAND_GRAPH_H

#include "ir/ops/op_table.h"
#include "plan/profile.h"
#include "train/train_graph.h"

enum { F1, F2, F3, L, B3, B2, B1, N_NODES };
#define HAND_UNIT ((int64_t)IR_DEVICE_ALIGN)

static int hand_tensor(ir_graph *g, const char *name, int64_t bytes, ir_kind k) {
    int t = ir_tensor_add(g, name, IR_DTYPE_FLOAT);
    int64_t n = bytes * HAND_UNIT / 4; /* bytes: hand units */
    ir_tensor_set_shape(&g->tensors[t], 1, &n);
    g->tensors[t].kind = k;
    return t;
}

static void hand_node(ir_graph *g, const char *name, int in0, int in1, int out) {
    int n = op_node_add(g, name, OP_RELU);
    ir_node_add_input(g, n, in0);
    if (in1 >= 0) ir_node_add_input(g, n, in1);
    ir_node_add_output(g, n, out);
}

/* Makes g's nodes a training step: the first nf forward, the next the loss l, the rest backward;
 * no aliases, gradients or forward twins; the n_saved tensors of saved. */
static void hand_train_finish(train_graph *tg, int nf, int l, const int *saved, int n_saved) {
    const ir_graph *g = tg->g;
    int nn = g->n_nodes;
    tg->n_forward = nf;
    tg->phase = oc_calloc((size_t)nn, sizeof *tg->phase);
    tg->phase[nf] = TRAIN_PHASE_LOSS;
    for (int i = nf + 1; i < nn; i++) tg->phase[i] = TRAIN_PHASE_BACKWARD;
    tg->fwd_of = oc_malloc((size_t)nn * sizeof(int));
    for (int i = 0; i < nn; i++) tg->fwd_of[i] = -1;
    tg->alias_of = oc_malloc((size_t)g->n_tensors * sizeof(int));
    tg->grad_of = oc_malloc((size_t)g->n_tensors * sizeof(int));
    for (int t = 0; t < g->n_tensors; t++) tg->alias_of[t] = tg->grad_of[t] = -1;
    tg->saved = oc_malloc((size_t)n_saved * sizeof(int));
    for (int k = 0; k < n_saved; k++) tg->saved[k] = saved[k];
    tg->n_saved = n_saved;
    tg->loss_tensor = l;
    tg->label_tensor = -1;
}

static train_graph *hand_graph_new(int64_t b_bytes, int *a_out, int *b_out) {
    train_graph *tg = oc_calloc(1, sizeof *tg);
    ir_graph *g = tg->g = ir_graph_new();
    int x = hand_tensor(g, "x", 4, IR_KIND_INPUT);
    ir_graph_add_input(g, x);
    int a = *a_out = hand_tensor(g, "a", 1000, IR_KIND_SAVED);
    int b = *b_out = hand_tensor(g, "b", b_bytes, IR_KIND_SAVED);
    int c = hand_tensor(g, "c", 100, IR_KIND_ACTIVATION);
    int l = hand_tensor(g, "l", 100, IR_KIND_ACTIVATION);
    int gc = hand_tensor(g, "gc", 100, IR_KIND_ACT_GRADIENT);
    int gb = hand_tensor(g, "gb", 100, IR_KIND_ACT_GRADIENT);
    int ga = hand_tensor(g, "ga", 100, IR_KIND_ACT_GRADIENT);
    ir_graph_add_output(g, ga);
    hand_node(g, "F1", x, -1, a);
    hand_node(g, "F2", a, -1, b);
    hand_node(g, "F3", b, -1, c);
    hand_node(g, "L", c, -1, l);
    hand_node(g, "B3", l, -1, gc);
    hand_node(g, "B2", gc, b, gb);
    hand_node(g, "B1", gb, a, ga);
    int saved[] = {a, b};
    hand_train_finish(tg, 4, l, saved, 2);
    return tg;
}

/* Every node of tg 1 s; copies at 1000 hand units a second each way. */
static inline profile *hand_profile_flat(const train_graph *tg) {
    double bw = 1000.0 * (double)HAND_UNIT;
    profile_device d = {"hand", 1 << 20, bw, bw, true, 0, 1e12, 1e12, 0, 0, 0, 0, 0, 0};
    profile *p = profile_new(&d, 1, PROFILE_SOURCE_MEASURED, tg->g->n_nodes);
    for (int i = 0; i < tg->g->n_nodes; i++) profile_node_set(p, i, tg->g->nodes[i].name, 1.0, 0);
    return p;
}

/* Every node 1 s except F1 (t_f1: the recompute cost of a); copies at bw hand units a
 * second each way. */
static profile *hand_profile_new(const train_graph *tg, double bw, double t_f1) {
    double b = bw * (double)HAND_UNIT;
    profile_device d = {"hand", 1 << 20, b, b, true, 0, 1e12, 1e12, 0, 0, 0, 0, 0, 0};
    profile *p = profile_new(&d, 1, PROFILE_SOURCE_MEASURED, N_NODES);
    for (int i = 0; i < N_NODES; i++)
        profile_node_set(p, i, tg->g->nodes[i].name, i == F1 ? t_f1 : 1.0, 0);
    return p;
}

#endif
