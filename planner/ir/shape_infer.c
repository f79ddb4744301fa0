/* shape_infer.c — see shape_infer.h. */
#include "ir/shape_infer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ir/bag_reduce.h"
#include "ir/host_inputs.h"
#include "ir/onnx_import.h"
#include "ir/ops/op_table.h"
#include "ir/ops/op_util.h"

static bool binding_used(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        for (int d = 0; d < t->rank; d++)
            if (t->dim_params[d] && strcmp(t->dim_params[d], name) == 0) return true;
    }
    return false;
}

/* Replaces every occurrence of symbol name in the graph inputs with value. */
static void bind_symbol(ir_graph *g, const char *name, int64_t value) {
    for (int i = 0; i < g->n_inputs; i++) {
        ir_tensor *t = &g->tensors[g->inputs[i]];
        for (int d = 0; d < t->rank; d++)
            if (t->dim_params[d] && strcmp(t->dim_params[d], name) == 0) {
                oc_free(t->dim_params[d]);
                t->dim_params[d] = NULL;
                t->dims[d] = value;
            }
    }
}

int ir_bind_dims(ir_graph *g, const ir_bind_opts *o, oc_err *err) {
    const char *path = g->model_path ? g->model_path : "model";
    for (int i = 0; i < o->n_dims; i++) {
        if (o->dims[i].value < 1 || o->dims[i].value > OC_MAX_BATCH)
            return oc_fail(err, "%s: --dim %s=%" PRId64 " is out of range [1, %" PRId64 "]", path,
                           o->dims[i].name, o->dims[i].value, OC_MAX_BATCH);
        if (!binding_used(g, o->dims[i].name))
            return oc_fail(err, "%s: --dim %s: no input has a dim named '%s'", path,
                           o->dims[i].name, o->dims[i].name);
        bind_symbol(g, o->dims[i].name, o->dims[i].value);
    }
    if (o->batch) {
        if (o->batch < 1 || o->batch > OC_MAX_BATCH)
            return oc_fail(err, "%s: batch %" PRId64 " is out of range [1, %" PRId64 "]", path,
                           o->batch, OC_MAX_BATCH);
        if (g->n_inputs == 0)
            return oc_fail(err, "%s: --batch given but the model has no inputs", path);
        ir_tensor *x = &g->tensors[g->inputs[0]];
        if (x->rank < 1) return oc_fail(err, "%s: --batch: input '%s' is a scalar", path, x->name);
        if (x->dim_params[0]) {
            char *sym = oc_strdup(x->dim_params[0]);
            bind_symbol(g, sym, o->batch);
            oc_free(sym);
        } else {
            if (x->dims[0] != o->batch) g->exported_batch = x->dims[0];
            x->dims[0] = o->batch;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const ir_tensor *t = &g->tensors[g->inputs[i]];
        for (int d = 0; d < t->rank; d++)
            if (t->dim_params[d])
                return oc_fail(err, "%s: input '%s' dim %d ('%s') is not bound; pass %s", path,
                               t->name, d, t->dim_params[d],
                               (i == 0 && d == 0) ? "--batch N" : "--dim NAME=VALUE");
        int64_t bytes;
        if (!ir_tensor_bytes(t, &bytes))
            return oc_fail(err, "%s: input '%s' is too large at this batch", path, t->name);
    }
    return OC_OK;
}

/* data[t]: tensor t's values depend on a graph input's values (not only on its shape:
 * Shape's output does not). */
static bool *data_dependent(const ir_graph *g) {
    bool *data = oc_calloc((size_t)g->n_tensors + 1, sizeof(bool));
    for (int i = 0; i < g->n_inputs; i++)
        if (!g->tensors[g->inputs[i]].is_initializer) data[g->inputs[i]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        bool dep = false;
        for (int k = 0; k < n->n_inputs && n->op != OP_SHAPE; k++)
            dep = dep || (n->inputs[k] >= 0 && data[n->inputs[k]]);
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) data[n->outputs[o]] = dep;
    }
    return data;
}

/* flows[t]: a path leads from tensor t to a graph output through ops with a
 * gradient rule or rewritten at load into such (InstanceNormalization), or a
 * plan's SwapOut/SwapIn (which carry the value: a plan may
 * swap the loss's input), entering each by an input that is not a plan-time
 * constant (one pass over the nodes in reverse; before shapes are known). A
 * float initializer read as data without such a path (a causal-mask buffer
 * compared with Equal) gets no gradient: it is a constant, not a parameter.
 * scatter: ScatterND passes the flow; trig: so do Sin and Cos of values that no
 * graph input's values reach (else they do not: a position table). */
static bool *float_flow_through(const ir_graph *g, bool scatter, bool trig) {
    bool *flows = oc_calloc((size_t)g->n_tensors + 1, sizeof(bool));
    bool *data = trig ? NULL : data_dependent(g);
    for (int i = 0; i < g->n_outputs; i++) flows[g->outputs[i]] = true;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        const ir_node *n = &g->nodes[i];
        const op_def *d = op_def_of(n);
        bool out = false;
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0 && flows[n->outputs[o]]) out = true;
        bool copy = n->op == OP_SWAP_OUT || n->op == OP_SWAP_IN;
        /* becomes ops with gradients (InstanceNormalization), or passes values on */
        bool lowered = d->lower != NULL || d->passes_data;
        if (!out || (!d->grad && !copy && !lowered) || (!scatter && n->op == OP_SCATTER_ND))
            continue;
        /* (arity is checked later: a Sin without its input flows nothing) */
        if (data && (n->op == OP_SIN || n->op == OP_COS) &&
            (n->n_inputs < 1 || n->inputs[0] < 0 || !data[n->inputs[0]]))
            continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && op_input_role(d, k) != OP_IN_CONST) flows[n->inputs[k]] = true;
        int nc = 0, *cap = d->captures ? d->captures(g, n, &nc) : NULL; /* a body's reads */
        for (int k = 0; k < nc; k++) flows[cap[k]] = true;
        oc_free(cap);
    }
    oc_free(data);
    return flows;
}

/* Names up to two of n tensors into names (cap bytes), for a notice. */
static void name_some(char *names, size_t cap, int n, const char *name) {
    if (n <= 2)
        snprintf(names + strlen(names), cap - strlen(names), "%s'%s'", n > 1 ? ", " : "", name);
}

/* float_flow_through with ScatterND passing flow to a non-scalar only: a scalar
 * float initializer whose one path to an output is a ScatterND's update (Swin's
 * window-mask numbers, slice-assigned into a zeros buffer; torch.export lifts
 * each into an initializer) is a constant, as it was while ScatterND ran at plan
 * time only; a tensor one there trains (MViTv2's relative positions, added into
 * the attention by a slice assignment). A float initializer whose paths to an
 * output all pass a Sin or Cos of values no graph input reaches (a rotary table's
 * frequencies, a buffer in PyTorch: torch.export writes buffers as initializers,
 * as it does parameters) is a constant too. Each kind taken so is named in one
 * notice. */
static bool *float_flow(ir_graph *g) {
    bool *flows = float_flow_through(g, false, false);
    bool *scatter = float_flow_through(g, true, false), *trig = float_flow_through(g, false, true);
    char s_names[256] = "", t_names[256] = "";
    int ns = 0, nt = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const ir_tensor *x = &g->tensors[t];
        int64_t numel = 0;
        if (!x->is_initializer || !ir_dtype_is_float(x->dtype) || flows[t]) continue;
        if (scatter[t] && (!ir_tensor_numel(x, &numel) || numel != 1)) {
            flows[t] = true;
        } else if (scatter[t]) {
            name_some(s_names, sizeof s_names, ++ns, x->name);
        } else if (trig[t]) {
            name_some(t_names, sizeof t_names, ++nt, x->name);
        }
    }
    if (ns)
        ir_graph_note(g,
                      "%d scalar float initializer%s (%s%s) reach%s the loss only as a "
                      "ScatterND's update (a number slice-assigned into a buffer): taken as "
                      "constant%s, not trained",
                      ns, ns > 1 ? "s" : "", s_names, ns > 2 ? ", ..." : "", ns > 1 ? "" : "es",
                      ns > 1 ? "s" : "");
    if (nt)
        ir_graph_note(g,
                      "%d float initializer%s (%s%s) reach%s the loss only through Sin / Cos "
                      "of values no input reaches (a position table's frequencies, a buffer "
                      "in PyTorch): taken as constant%s, not trained",
                      nt, nt > 1 ? "s" : "", t_names, nt > 2 ? ", ..." : "", nt > 1 ? "" : "es",
                      nt > 1 ? "s" : "");
    oc_free(scatter);
    oc_free(trig);
    return flows;
}

/* Kind of an initializer from the role of its first consumer's input slot that reads its
 * values: CastLike's second input and Shape's read only its type or shape (torch.export's
 * clamp of SwinV2's logit scale reads the parameter's type first). */
static ir_kind initializer_kind(const ir_graph *g, const ir_tensor *t, const bool *flows) {
    for (int c = 0; c < t->n_consumers; c++) {
        const ir_node *n = &g->nodes[t->consumers[c]];
        const op_def *d = op_def_of(n);
        for (int i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] < 0 || &g->tensors[n->inputs[i]] != t) continue;
            if ((n->op == OP_CAST_LIKE && i == 1) || n->op == OP_SHAPE) continue;
            switch (op_input_role(d, i)) {
            case OP_IN_STATE: return IR_KIND_STATE;
            case OP_IN_CONST: return IR_KIND_CONSTANT;
            case OP_IN_PARAM: return IR_KIND_PARAMETER;
            case OP_IN_DATA:
                return ir_dtype_is_float(t->dtype) && flows[t - g->tensors] && !t->is_buffer &&
                               !t->is_export_constant
                           ? IR_KIND_PARAMETER
                           : IR_KIND_CONSTANT;
            }
        }
    }
    /* read inside a Loop's or If's body only (torch's legacy nn.EmbeddingBag: its weight
     * gathered per bag): a float one the loss depends on trains, as read as data */
    if (t->n_consumers == 0 && ir_dtype_is_float(t->dtype) && flows[t - g->tensors] &&
        !t->is_buffer && !t->is_export_constant)
        return IR_KIND_PARAMETER;
    return IR_KIND_CONSTANT; /* unused initializer */
}

static int check_arity(const ir_node *n, const op_def *d, oc_err *err) {
    char most[32];
    if (n->n_inputs < d->min_inputs || (d->max_inputs >= 0 && n->n_inputs > d->max_inputs)) {
        snprintf(most, sizeof most, d->max_inputs >= 0 ? "to %d" : "or more", d->max_inputs);
        return oc_fail(err, "has %d inputs; %s takes %d %s", n->n_inputs, n->op_type, d->min_inputs,
                       most);
    }
    if (n->n_outputs < d->min_outputs || (d->max_outputs >= 0 && n->n_outputs > d->max_outputs)) {
        snprintf(most, sizeof most, d->max_outputs >= 0 ? "to %d" : "or more", d->max_outputs);
        return oc_fail(err, "has %d outputs; %s produces %d %s", n->n_outputs, n->op_type,
                       d->min_outputs, most);
    }
    for (int i = 0; i < d->min_inputs; i++)
        if (n->inputs[i] < 0) return oc_fail(err, "required input %d is empty", i);
    if (n->outputs[0] < 0 && !d->output0_optional) return oc_fail(err, "output 0 is empty");
    return OC_OK;
}

/* A node whose outputs all got plan-time values and whose inputs are all
 * constants computes a constant (shape subgraphs). */
static void mark_constant_outputs(ir_graph *g, const ir_node *n) {
    for (int i = 0; i < n->n_outputs; i++) {
        ir_tensor *y = ir_node_out(g, n, i);
        if (y && y->data_src != IR_DATA_INLINE) return;
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0) g->tensors[n->outputs[i]].kind = IR_KIND_CONSTANT;
}

/* A node's failure, prefixed with the file and node; when --batch replaced a batch the
 * export fixed in the input's shape, what that likely means. */
static int node_fail(const ir_graph *g, const char *path, const ir_node *n, oc_err *err) {
    oc_fail_prefix(err, "%s: node '%s' (%s, opset %" PRId64 ")", path, n->name, n->op_type,
                   g->opset);
    if (g->exported_batch > 0) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len,
                 " (the model was exported at batch %" PRId64
                 ": input '%s' has it in its shape, and shapes computed from it may too; export "
                 "it with a dynamic batch dim, or leave --batch out)",
                 g->exported_batch, g->tensors[g->inputs[0]].name);
    }
    return OC_ERR;
}

/* Shapes of every node in order; with scan (a user's model at load), integer glue is
 * found on the way and moved to the host at the end (host_inputs.h). */
/* Sequences known at load (ops/op_sequence.c) have no storage: their readers have become
 * reads of their elements, so the nodes writing them go (and the sequences with them). A
 * sequence the model outputs is refused, named. */
static int drop_sequences(ir_graph *g, const char *path, oc_err *err) {
    for (int i = 0; i < g->n_outputs; i++)
        if (g->tensors[g->outputs[i]].is_sequence)
            return oc_fail(err, "%s: the model's output '%s' is a sequence of tensors", path,
                           g->tensors[g->outputs[i]].name);
    bool *remove = oc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    bool any = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        bool seq = n->n_outputs > 0;
        for (int o = 0; o < n->n_outputs && seq; o++)
            seq = n->outputs[o] >= 0 && g->tensors[n->outputs[o]].is_sequence;
        remove[i] = seq;
        any = any || seq;
    }
    if (any) ir_graph_remove_nodes(g, remove);
    oc_free(remove);
    return OC_OK;
}

/* Node i's arity checked and, where its op lowers, the lowering run (*lowered: nodes were
 * inserted at i, to infer first). Fails naming the node. */
static int lower_node(ir_graph *g, int i, const char *path, bool *lowered, oc_err *err) {
    ir_node *n = &g->nodes[i];
    const op_def *d = op_def_of(n); /* the importer rejects unsupported ops */
    if (check_arity(n, d, err) || (d->lower && d->lower(g, i, lowered, err)))
        return node_fail(g, path, &g->nodes[i], err);
    return OC_OK;
}

/* After node n failed to lower or infer at load: where it is an If on a host value, what
 * writes such Ifs; where a device node reads integer values the host computes, that its shape
 * would follow them; where one of its inputs is empty and computed from a host value (the
 * integer inputs' stand-in zeros), why that shape is not what a step will see. */
static void stand_in_hint(const ir_graph *g, const host_scan *scan, const ir_node *n, oc_err *err) {
    size_t len = strlen(err->msg);
    if (n->op == OP_IF && n->n_inputs > 0 && host_scan_computed(scan, n->inputs[0])) {
        snprintf(err->msg + len, sizeof err->msg - len,
                 " (it is computed from the model's integer inputs; torch.export writes one "
                 "such If per bag of nn.EmbeddingBag with offsets given at run time, testing "
                 "the bag for emptiness: torch's legacy export, dynamo=False, of sum and mean "
                 "bags loads)");
        return;
    }
    /* a device node (its data, input 0, not the host's) at integer values the host computes */
    for (int k = 1; k < n->n_inputs && n->inputs[0] >= 0 && !host_scan_computed(scan, n->inputs[0]);
         k++) {
        int t = n->inputs[k];
        if (t < 0 || !host_scan_computed(scan, t) || ir_dtype_is_float(g->tensors[t].dtype))
            continue;
        snprintf(err->msg + len, sizeof err->msg - len,
                 " (input '%s' is computed at run time from the model's integer inputs, and "
                 "the node's shape would follow its value; torch's legacy export of "
                 "nn.EmbeddingBag with per_sample_weights slices the weights so: torch.export's "
                 "loads)",
                 g->tensors[t].name);
        return;
    }
    for (int k = 0; k < n->n_inputs; k++) {
        int t = n->inputs[k];
        int64_t count = 1;
        if (t < 0 || !ir_tensor_numel(&g->tensors[t], &count) || count != 0) continue;
        const ir_node *p = g->tensors[t].producer >= 0 ? &g->nodes[g->tensors[t].producer] : NULL;
        while (p && p->op == OP_IDENTITY && !ir_attr_find(p, IR_ATTR_RUN_TIME) &&
               g->tensors[p->inputs[0]].producer >= 0)
            p = &g->nodes[g->tensors[p->inputs[0]].producer];
        bool stand_in = host_scan_computed(scan, t) || (p && ir_attr_find(p, IR_ATTR_RUN_TIME));
        for (int j = 0; p && j < p->n_inputs && !stand_in; j++)
            stand_in = host_scan_computed(scan, p->inputs[j]);
        if (!stand_in) continue;
        snprintf(err->msg + len, sizeof err->msg - len,
                 " (input '%s' is empty at load: its shape follows the values of the model's "
                 "integer inputs, taken as zeros at load, and a plan's shapes are static; "
                 "a loop over nn.EmbeddingBag's bags that outcore did not read whole, for "
                 "one, is refused)",
                 g->tensors[t].name);
        return;
    }
}

/* Whether node i came from a branch of an If on a run-time condition that op_loop.c took
 * for a load-time rewrite to remove (the Identity it became follows, named as a prefix of
 * the branch's nodes): only there is a shape taken from stand-in values. */
static bool in_guarded_branch(const ir_graph *g, int i) {
    const char *name = g->nodes[i].name;
    for (int j = i + 1; j < g->n_nodes; j++) {
        const ir_node *n = &g->nodes[j];
        size_t len = strlen(n->name);
        if (n->op == OP_IDENTITY && ir_attr_find(n, IR_ATTR_RUN_TIME) &&
            strncmp(name, n->name, len) == 0 && name[len] == '/')
            return true;
    }
    return false;
}

static int infer_all(ir_graph *g, host_scan *scan, oc_err *err) {
    const char *path = g->model_path ? g->model_path : "model";
    bool *flows = float_flow(g);
    char buffers[256] = "";
    int nb = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        ir_tensor *x = &g->tensors[t];
        if (!x->is_initializer) continue;
        x->kind = initializer_kind(g, x, flows);
        /* a constant's bytes in an external file (torch.export's default) are read now,
         * so that what folds at plan time (buffers read as masks, indices) can */
        if (x->kind == IR_KIND_CONSTANT && x->data_src == IR_DATA_EXTERNAL &&
            x->ext_length <= OP_FOLD_MAX_BYTES && onnx_load_external(g, x, err)) {
            oc_free(flows);
            return OC_ERR;
        }
        /* a buffer a gradient would reach, read as data: it would have trained */
        if (x->is_buffer && x->kind == IR_KIND_CONSTANT && flows[t] && ir_dtype_is_float(x->dtype))
            name_some(buffers, sizeof buffers, ++nb, x->name);
    }
    oc_free(flows);
    if (nb)
        ir_graph_note(g,
                      "%d float initializer%s (%s%s) the exporter marks as module buffers "
                      "reach%s the loss: taken as constant%s, not trained, as in PyTorch",
                      nb, nb > 1 ? "s" : "", buffers, nb > 2 ? ", ..." : "", nb > 1 ? "" : "es",
                      nb > 1 ? "s" : "");
    /* Every tensor's bytes, summed: sums over any subset (liveness, totals,
     * layouts, the training graph's gradients) then stay far from int64's limit. */
    int64_t total = 0, bytes;
    for (int t = 0; t < g->n_tensors; t++) /* initializers and inputs (each checked at import) */
        if (g->tensors[t].producer < 0 && ir_tensor_bytes(&g->tensors[t], &bytes) &&
            (total += bytes) > IR_MAX_TOTAL_BYTES)
            return oc_fail(err,
                           "%s: its initializers and inputs add up to more than %" PRId64 " bytes",
                           path, IR_MAX_TOTAL_BYTES);
    for (int i = 0; i < g->n_nodes; i++) {
        ir_node *n = &g->nodes[i];
        bool lowered = false;
        if (lower_node(g, i, path, &lowered, err)) {
            if (scan) stand_in_hint(g, scan, &g->nodes[i], err);
            return OC_ERR;
        }
        if (lowered) { /* nodes inserted at i: infer them first */
            i--;
            continue;
        }
        bool on_host = false;
        if (scan && host_scan_node(scan, g, i, &on_host, err)) return node_fail(g, path, n, err);
        int read = -1;
        if (!on_host && op_infer(g, n, err) &&
            !(scan && in_guarded_branch(g, i) &&
              host_scan_infer_stand_in(scan, g, i, &read) == OC_OK)) {
            node_fail(g, path, n, err);
            if (scan) stand_in_hint(g, scan, n, err);
            return OC_ERR;
        }
        n = &g->nodes[i];
        if (read >= 0) { /* shapes from stand-ins, for a load-time rewrite to remove */
            ir_attr a = {.name = (char *)IR_ATTR_RUN_TIME,
                         .type = IR_ATTR_STRING,
                         .s = g->tensors[read].name};
            ir_node_add_attr(g, i, &a);
        }
        for (int o = 0; o < n->n_outputs; o++) {
            ir_tensor *y = ir_node_out(g, n, o);
            if (y && (!ir_tensor_bytes(y, &bytes) || bytes > IR_MAX_TENSOR_BYTES))
                return oc_fail(err,
                               "%s: node '%s' (%s): output '%s' is larger than %" PRId64
                               " bytes at this batch",
                               path, n->name, n->op_type, y->name, IR_MAX_TENSOR_BYTES);
            if (y && (total += bytes) > IR_MAX_TOTAL_BYTES)
                return oc_fail(err,
                               "%s: node '%s' (%s): the model's tensors add up to more than "
                               "%" PRId64 " bytes at this batch",
                               path, n->name, n->op_type, IR_MAX_TOTAL_BYTES);
        }
        if (!on_host) mark_constant_outputs(g, n);
    }
    int rc = scan ? host_scan_finish(scan, g, err) : OC_OK;
    return rc == OC_OK ? drop_sequences(g, path, err) : rc;
}

int ir_infer_shapes(ir_graph *g, oc_err *err) { return infer_all(g, NULL, err); }

int ir_infer_inserted(ir_graph *g, int from, int *to, oc_err *err) {
    const char *path = g->model_path ? g->model_path : "model";
    for (int i = from; i < *to; i++) {
        bool lowered = false;
        int before = g->n_nodes;
        if (lower_node(g, i, path, &lowered, err)) return OC_ERR;
        ir_node *n = &g->nodes[i];
        if (lowered) { /* nodes inserted at i: infer them first */
            *to += g->n_nodes - before;
            i--;
            continue;
        }
        if (op_infer(g, n, err)) return node_fail(g, path, n, err);
    }
    return OC_OK;
}

/* The project-domain ops outcore itself writes into the forward models it saves (--save):
 * FusedAttention, and the load-time rewrites' TopKOffsets (an ArgMax or TopK of
 * activations), ElementOffsets and GatherGrad (a gather or scatter-add at them), PowTensor
 * (a Pow by a run-time exponent), BagBounds (run-time bags' bounds checked, on the host),
 * SegmentMax (max bags at those bounds). */
static bool saved_forward_op(op_kind k) {
    return k == OP_FUSED_ATTENTION || k == OP_TOP_K_OFFSETS || k == OP_ELEMENT_OFFSETS ||
           k == OP_GATHER_GRAD || k == OP_POW_TENSOR || k == OP_BAG_BOUNDS || k == OP_SEGMENT_MAX;
}

/* A user's model holds no project-domain node but those, no Loop or If with the attributes
 * their unrolling keeps its state in (op_loop.c: outcore_iterations, outcore_scope), and no
 * node marked for a load-time rewrite (IR_ATTR_RUN_TIME). */
static int refuse_project_ops(const ir_graph *g, const char *path, oc_err *err) {
    for (int i = 0; i < g->n_nodes; i++) {
        const ir_node *n = &g->nodes[i];
        if (strcmp(n->domain, OC_DOMAIN) == 0 && !saved_forward_op(n->op))
            return oc_fail(err,
                           "%s: node '%s' is %s of the domain %s, which only outcore's own "
                           "training graphs and plans hold; a model may use standard ONNX ops only",
                           path, n->name, n->op_type, OC_DOMAIN);
        for (int a = 0; a < n->n_attrs; a++)
            if ((n->op == OP_LOOP || n->op == OP_IF ||
                 strcmp(n->attrs[a].name, IR_ATTR_RUN_TIME) == 0) &&
                strncmp(n->attrs[a].name, "outcore_", 8) == 0)
                return oc_fail(err,
                               "%s: node '%s' (%s): attribute '%s' is outcore's own (it unrolls "
                               "control flow with it); a model may not set it",
                               path, n->name, n->op_type, n->attrs[a].name);
    }
    return OC_OK;
}

int ir_load_model_buffer(const uint8_t *buf, size_t len, const char *path, const ir_bind_opts *o,
                         ir_graph **out, oc_err *err) {
    ir_graph *g;
    *out = NULL;
    if (onnx_import_buffer(buf, len, path, &g, err)) return OC_ERR;
    host_scan *scan = NULL;
    if (refuse_project_ops(g, path, err) || ir_bind_dims(g, o, err) ||
        infer_all(g, scan = host_scan_new(g), err) || ir_bag_reductions(g, err)) {
        host_scan_free(scan);
        ir_graph_free(g);
        return OC_ERR;
    }
    host_inputs_note(g);
    host_scan_free(scan);
    *out = g;
    return OC_OK;
}

int ir_load_model(const char *path, const ir_bind_opts *o, ir_graph **out, oc_err *err) {
    uint8_t *buf;
    size_t len;
    *out = NULL;
    if (oc_read_file(path, &buf, &len, err)) return OC_ERR;
    int rc = ir_load_model_buffer(buf, len, path, o, out, err);
    oc_free(buf);
    return rc;
}
