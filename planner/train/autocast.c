/* autocast.c — see autocast.h. */
#include "train/autocast.h"

#include <string.h>

#include "ir/half.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"

/* Cast tensors made so far: per source tensor, one per target type. */
typedef struct cast_cache {
    int *of[3]; /* [float32, float16, bfloat16][tensor]: the cast tensor, or -1 */
    int n;
} cast_cache;

static int slot(ir_dtype dt) { return dt == IR_DTYPE_FLOAT ? 0 : dt == IR_DTYPE_FLOAT16 ? 1 : 2; }

static const char *short_name(ir_dtype dt) {
    return dt == IR_DTYPE_FLOAT ? "fp32" : dt == IR_DTYPE_FLOAT16 ? "fp16" : "bf16";
}

/* Float32 beats either half; float16 and bfloat16 together give float32. */
static ir_dtype widest(ir_dtype a, ir_dtype b) {
    if (a == IR_DTYPE_UNDEFINED) return b;
    return a == b ? a : IR_DTYPE_FLOAT;
}

/* Input k takes part in the rule: a float tensor computed at run time or a
 * parameter, not a plan-time value (shapes, an exporter's scalar) — except
 * for a LOWER op, whose kernels take one type: a constant matrix (frozen
 * weights, a fixed projection) is cast like a parameter. */
static bool castable(const ir_graph *g, const ir_node *n, int k) {
    int t = n->inputs[k];
    const op_def *d = op_def_of(n);
    if (t < 0 || op_input_role(d, k) == OP_IN_CONST) return false;
    const ir_tensor *x = &g->tensors[t];
    return ir_dtype_is_compute(x->dtype) && (d->autocast == OP_AUTOCAST_LOWER || !op_is_value(x));
}

/* A plan-time float tensor a FOLLOW node writes into, as ScatterND's data (torch.export's
 * zeros max_unpool2d scatters into, made in the activations' type by PyTorch): it takes the
 * type the activations give, without voting for it (its kernels take one type). */
static bool follows_only(const ir_graph *g, const ir_node *n, int k) {
    int t = n->inputs[k];
    return n->op == OP_SCATTER_ND && k == 0 && t >= 0 && ir_dtype_is_compute(g->tensors[t].dtype) &&
           op_is_value(&g->tensors[t]);
}

/* The type each input of node i must have (IR_DTYPE_UNDEFINED: as it is). */
static void wanted_types(const ir_graph *g, const ir_node *n, ir_dtype half, ir_dtype *want) {
    const op_def *d = op_def_of(n);
    ir_dtype act = IR_DTYPE_UNDEFINED, any = IR_DTYPE_UNDEFINED;
    for (int k = 0; k < n->n_inputs; k++) {
        want[k] = IR_DTYPE_UNDEFINED;
        if (!castable(g, n, k)) continue;
        const ir_tensor *x = &g->tensors[n->inputs[k]];
        any = widest(any, x->dtype);
        if (x->kind != IR_KIND_PARAMETER && !x->is_initializer) act = widest(act, x->dtype);
    }
    ir_dtype follow = act != IR_DTYPE_UNDEFINED ? act : any;
    for (int k = 0; k < n->n_inputs; k++) {
        if (d->autocast == OP_AUTOCAST_FOLLOW && follows_only(g, n, k)) want[k] = follow;
        if (!castable(g, n, k)) continue;
        switch (d->autocast) {
        case OP_AUTOCAST_LOWER: want[k] = half; break;
        case OP_AUTOCAST_FP32: want[k] = IR_DTYPE_FLOAT; break;
        case OP_AUTOCAST_NORM:
            if (k > 0)
                want[k] = op_input_role(d, k) == OP_IN_DATA ? g->tensors[n->inputs[0]].dtype
                                                            : IR_DTYPE_FLOAT;
            break;
        case OP_AUTOCAST_FOLLOW: want[k] = follow; break;
        }
    }
}

static void drop_consumer(ir_tensor *x, int node) {
    for (int c = 0; c < x->n_consumers; c++)
        if (x->consumers[c] == node) {
            x->consumers[c] = x->consumers[--x->n_consumers];
            return;
        }
}

/* The tensor t as type dt, made by a Cast inserted before node *at (which
 * moves up by one) unless an earlier reader made it. */
static int cast_of(ir_graph *g, cast_cache *cc, int t, ir_dtype dt, int *at, int *n_casts,
                   oc_err *err) {
    int *known = &cc->of[slot(dt)][t];
    if (*known >= 0) return *known;
    char *tname = oc_sprintf("%s/%s", g->tensors[t].name, short_name(dt));
    char *nname = oc_sprintf(AUTOCAST_PREFIX "%s", tname);
    int n = ir_node_insert(g, *at, nname, op_name(OP_CAST), "");
    g->nodes[n].op = OP_CAST;
    ir_node_add_input(g, n, t);
    int y = ir_tensor_add(g, tname, dt);
    ir_node_add_output(g, n, y);
    ir_node_add_attr(g, n, &(ir_attr){.name = "to", .type = IR_ATTR_INT, .i = dt});
    oc_free(tname);
    oc_free(nname);
    (*at)++;
    (*n_casts)++;
    if (op_infer(g, &g->nodes[n], err)) return -1;
    /* the cache grows with the graph's tensors */
    for (int s = 0; s < 3; s++) {
        cc->of[s] = oc_realloc(cc->of[s], (size_t)g->n_tensors * sizeof(int));
        for (int k = cc->n; k < g->n_tensors; k++) cc->of[s][k] = -1;
    }
    cc->n = g->n_tensors;
    cc->of[slot(dt)][t] = y;
    return y;
}

int autocast_graph(ir_graph *g, ir_dtype half, int *n_casts, oc_err *err) {
    OC_ASSERT(ir_dtype_is_half(half));
    *n_casts = 0;
    cast_cache cc = {.n = g->n_tensors};
    for (int s = 0; s < 3; s++) {
        cc.of[s] = oc_malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof(int));
        for (int k = 0; k < g->n_tensors; k++) cc.of[s][k] = -1;
    }
    int rc = OC_OK;
    ir_dtype want[64];
    for (int i = 0; i < g->n_nodes && rc == OC_OK; i++) {
        if (g->nodes[i].n_inputs > 64) {
            rc = oc_fail(err, "node '%s': %d inputs; autocast takes at most 64", g->nodes[i].name,
                         g->nodes[i].n_inputs);
            break;
        }
        wanted_types(g, &g->nodes[i], half, want);
        if (g->nodes[i].op == OP_CAST) /* the model's own casts stay what they are */
            for (int k = 0; k < g->nodes[i].n_inputs; k++) want[k] = IR_DTYPE_UNDEFINED;
        for (int k = 0; k < g->nodes[i].n_inputs && rc == OC_OK; k++) {
            int t = g->nodes[i].inputs[k];
            if (want[k] == IR_DTYPE_UNDEFINED || g->tensors[t].dtype == want[k]) continue;
            int c = cast_of(g, &cc, t, want[k], &i, n_casts, err);
            if (c < 0) {
                rc = OC_ERR;
                break;
            }
            ir_node *n = &g->nodes[i];
            drop_consumer(&g->tensors[t], i);
            n->inputs[k] = c;
            ir_tensor *ct = &g->tensors[c];
            oc_grow((void **)&ct->consumers, &ct->cap_consumers, (size_t)ct->n_consumers + 1,
                    sizeof(int));
            ct->consumers[ct->n_consumers++] = i;
        }
        /* every node again: outputs follow the inputs' new types */
        if (rc == OC_OK && op_infer(g, &g->nodes[i], err))
            rc = oc_fail_prefix(err, "node '%s' (%s) under autocast to %s", g->nodes[i].name,
                                g->nodes[i].op_type, ir_dtype_name(half));
    }
    for (int s = 0; s < 3; s++) oc_free(cc.of[s]);
    return rc;
}

bool autocast_is_cast(const ir_node *n) {
    return n->op == OP_CAST && strncmp(n->name, AUTOCAST_PREFIX, strlen(AUTOCAST_PREFIX)) == 0;
}

int autocast_float_masters(ir_graph *g, ir_dtype *stored, oc_err *err) {
    *stored = IR_DTYPE_UNDEFINED;
    for (int t = 0; t < g->n_tensors; t++) {
        ir_tensor *x = &g->tensors[t];
        bool weight =
            x->is_initializer && (x->kind == IR_KIND_PARAMETER || x->kind == IR_KIND_STATE);
        if (!ir_dtype_is_half(x->dtype) || !(weight || x->is_graph_input)) continue;
        *stored = x->dtype;
        if (x->data_src == IR_DATA_INLINE) {
            int64_t numel = 0;
            ir_tensor_numel(x, &numel);
            float *f = oc_malloc((size_t)(numel ? numel : 1) * sizeof(float));
            for (int64_t i = 0; i < numel; i++) {
                uint16_t h;
                memcpy(&h, (const uint8_t *)x->data + 2 * i, 2);
                f[i] = half_to_f32(x->dtype, h);
            }
            ir_tensor_set_data(x, f, (size_t)numel * sizeof(float));
            oc_free(f);
        } else if (x->data_src == IR_DATA_EXTERNAL) {
            return oc_fail(err,
                           "%s: '%s' is %s in an external data file; outcore reads float32 "
                           "master weights from it only as float32",
                           g->model_path ? g->model_path : "model", x->name,
                           ir_dtype_name(x->dtype));
        }
        x->dtype = IR_DTYPE_FLOAT;
    }
    if (*stored == IR_DTYPE_UNDEFINED) return OC_OK;
    for (int i = 0; i < g->n_nodes; i++)
        if (op_infer(g, &g->nodes[i], err))
            return oc_fail_prefix(err, "node '%s' (%s) with float32 master weights",
                                  g->nodes[i].name, g->nodes[i].op_type);
    return OC_OK;
}
