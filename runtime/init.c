/* init.c — see init.h. */
#include "init.h"

#include <math.h>
#include <string.h>

#include "ir/onnx_import.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_update.h"
#include "train/autocast.h"
#include "train/channels_last.h"

static uint64_t mix64(uint64_t z) { /* splitmix64 finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double rt_init_uniform(uint64_t seed, uint64_t stream, uint64_t counter) {
    uint64_t z = mix64(seed + 0x9e3779b97f4a7c15ULL * (stream + 1));
    z = mix64(z ^ (counter + 0x632be59bd9b4e019ULL));
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

typedef enum fill { FILL_NONE = 0, FILL_UNIFORM, FILL_CONST } fill;

/* GPT-2's and BERT's initialisation scale: std 0.02 (uniform: half-width 0.02 sqrt 3). */
#define OC_INIT_STD_HALF_WIDTH (0.02 * 1.7320508075688772)

/* How to fill tensor t, from the first consumer that explains it (looking through
 * autocast's Casts and the layout Transposes, so a model initialises alike in every
 * precision and layout):
 *   Conv / ConvTranspose / Gemm weight and bias: uniform +-1/sqrt(fan_in) (PyTorch's);
 *   MatMul weight (K, N), or a (N, K) weight read through a Transpose into
 *   MatMul (a Linear as exporters write it), or a Linear's: the same with fan_in K;
 *   LayerNormalization scale 1, bias 0; BN scale and var 1, bias and mean 0;
 *   a vector added by Add (a Linear's bias after MatMul) or Linear's bias 0;
 *   an embedding table read by Gather, and any other trainable tensor (a class
 *   token, position embeddings): uniform with std 0.02 (GPT-2's, BERT's);
 *   optimizer state 0. */
static fill rule_for(const ir_graph *g, int t, double *a) {
    const ir_tensor *x = &g->tensors[t];
    for (int c = 0; c < x->n_consumers; c++) {
        const ir_node *n = &g->nodes[x->consumers[c]];
        /* through what the training graph put between a parameter and its reader: autocast's
         * Cast to the half type, --layout nhwc's filter Transpose (the reader's rule sees the
         * same fan-in: its weight input is the transposed copy) */
        if ((autocast_is_cast(n) || channels_last_is_conversion(n)) && n->n_outputs > 0 &&
            n->outputs[0] >= 0) {
            fill f = rule_for(g, n->outputs[0], a);
            if (f != FILL_NONE) return f;
            continue;
        }
        int slot = -1;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) slot = k;
        if (n->op == OP_MATMUL && slot == 1 && x->rank == 2) {
            *a = x->dims[0] > 0 ? 1.0 / sqrt((double)x->dims[0]) : 0;
            return FILL_UNIFORM;
        }
        if (n->op == OP_TRANSPOSE && x->rank == 2) {
            const ir_tensor *y = ir_node_out((ir_graph *)g, n, 0);
            for (int k = 0; y && k < y->n_consumers; k++) {
                const ir_node *m = &g->nodes[y->consumers[k]];
                if (m->op == OP_MATMUL && m->n_inputs > 1 && m->inputs[1] == n->outputs[0]) {
                    *a = x->dims[1] > 0 ? 1.0 / sqrt((double)x->dims[1]) : 0;
                    return FILL_UNIFORM;
                }
            }
        }
        if (n->op == OP_LINEAR && slot >= 1) { /* W: fan_in K; B: 0 (as the chain's) */
            bool tw = ir_attr_int(n, "trans_w", 1) != 0;
            int64_t k = x->rank == 2 ? x->dims[tw ? 1 : 0] : 0;
            *a = slot == 2 ? 0.0 : k > 0 ? 1.0 / sqrt((double)k) : 0;
            return slot == 2 ? FILL_CONST : FILL_UNIFORM;
        }
        if (n->op == OP_LAYER_NORM && slot >= 1) {
            *a = slot == 1 ? 1.0 : 0.0;
            return FILL_CONST;
        }
        if (n->op == OP_ADD && x->rank <= 1) {
            *a = 0;
            return FILL_CONST;
        }
        if (n->op == OP_GATHER && slot == 0) {
            *a = OC_INIT_STD_HALF_WIDTH;
            return FILL_UNIFORM;
        }
        if ((n->op == OP_CONV || n->op == OP_CONV_RELU || n->op == OP_CONV_TRANSPOSE ||
             n->op == OP_GEMM) &&
            (slot == 1 || slot == 2)) {
            const ir_tensor *w = ir_node_in((ir_graph *)g, n, 1);
            if (!w || w->rank < 2) continue;
            double fan_in = (double)w->dims[1];
            for (int d = 2; d < w->rank; d++) fan_in *= (double)w->dims[d];
            *a = fan_in > 0 ? 1.0 / sqrt(fan_in) : 0;
            return FILL_UNIFORM;
        }
        if ((n->op == OP_BATCH_NORM || n->op == OP_BATCH_NORM_RELU) && slot >= 1 && slot <= 4) {
            *a = (slot == 1 || slot == 4) ? 1.0 : 0.0; /* scale, var: 1; bias, mean: 0 */
            return FILL_CONST;
        }
        int member, in_member;
        if (op_update_slot(n, slot, &member, &in_member) && (in_member == 2 || in_member == 3)) {
            *a = 0; /* the optimizer's moments start at 0 */
            return FILL_CONST;
        }
    }
    if (x->kind == IR_KIND_PARAMETER) {
        *a = OC_INIT_STD_HALF_WIDTH;
        return FILL_UNIFORM;
    }
    return FILL_NONE;
}

int rt_init_missing(train_graph *tg, uint64_t seed, int *n_init, oc_err *err) {
    ir_graph *g = tg->g;
    *n_init = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        ir_tensor *x = &g->tensors[t];
        if (!x->is_initializer || x->data_src == IR_DATA_INLINE) continue;
        if (x->data_src == IR_DATA_EXTERNAL) {
            if (onnx_load_external(g, x, err)) return OC_ERR;
            continue;
        }
        int64_t numel;
        if (!ir_tensor_numel(x, &numel))
            return oc_fail(err, "initializer '%s' has no static shape", x->name);
        double a = 0;
        fill f = x->dtype == IR_DTYPE_FLOAT ? rule_for(g, t, &a) : FILL_NONE;
        if (f == FILL_NONE)
            return oc_fail(err,
                           "%s: initializer '%s' has no data and no initialisation rule "
                           "(it is not trained: parameters, BN statistics and optimizer "
                           "state have rules)",
                           g->model_path ? g->model_path : "model", x->name);
        float *v = oc_malloc((size_t)(numel ? numel : 1) * sizeof(float));
        uint64_t stream = name_hash(x->name);
        for (int64_t i = 0; i < numel; i++)
            v[i] = f == FILL_CONST
                       ? (float)a
                       : (float)((2.0 * rt_init_uniform(seed, stream, (uint64_t)i) - 1.0) * a);
        ir_tensor_set_data(x, v, (size_t)numel * sizeof(float));
        oc_free(v);
        (*n_init)++;
    }
    return OC_OK;
}
