/* host_inputs.h — integer glue a model computes from its integer inputs, run
 * on the host each step (RoBERTa's, XLM-R's and MPNet's position ids: Equal,
 * Not, Cast, CumSum, Mul, Add on the token ids; the token type ids gathered
 * with them).
 *
 * At load (ir_load_model), a node whose inputs are all plan-time values or
 * tensors computed from the model's integer inputs, and which plan-time folding
 * can evaluate, moves out of the graph into g->host: a graph of its own whose
 * inputs are the integer inputs it reads and whose outputs are what the rest of
 * the model reads from it. Those become graph inputs of g (is_host_input), so
 * the planner, the simulator and the executor treat them as the data they are:
 * copied to the device with the batch. outcore-run evaluates g->host on each
 * batch with the folding code (host_inputs_eval), so no backend needs integer
 * kernels, and the values are exact.
 *
 *   host_scan *s = host_scan_new(g);        // ir_infer_shapes, load mode
 *   for each node i: host_scan_node(s, g, i, &done, &err); if (!done) op_infer(..)
 *   host_scan_finish(s, g, &err);            // g->host, host inputs
 *   ...
 *   host_inputs_eval(g->host, roots, outs, &err);   // each step (runtime)
 *
 * Files: a forward model (--save) holds the nodes inline, as the model had
 * them; a training graph or plan declares the host inputs as graph inputs and
 * holds the nodes as the model-local function HOST_INPUTS_FUNCTION
 * (onnx_export.h; read back by onnx_import_host_function). */
#ifndef OC_HOST_INPUTS_H
#define OC_HOST_INPUTS_H

#include "ir/ir.h"

#define HOST_INPUTS_FUNCTION "HostInputs" /* domain OC_DOMAIN */
/* Names of the plan-time values g->host reads (written as Constant nodes). */
#define HOST_INPUTS_PREFIX "outcore_host/"

typedef struct host_scan host_scan;

host_scan *host_scan_new(const ir_graph *g);
void host_scan_free(host_scan *s);
/* Node i of g: when every input is a plan-time value or computed from the
 * integer inputs (one at least), infers it by folding on stand-in values (the
 * integer inputs as zeros) and sets *done; else *done is false and the caller
 * infers it as usual. A node folding cannot evaluate stays in the graph. */
int host_scan_node(host_scan *s, ir_graph *g, int i, bool *done, oc_err *err);
/* Node i of g, which op_infer refused, reading a tensor computed from the integer inputs
 * (a device Slice at host bounds: *read, the first such input): inferred with the stand-in values as plan-time values, its output shapes those of the
 * stand-ins, not what a step sees: a load-time rewrite must remove it (IR_ATTR_RUN_TIME).
 * OC_ERR when it does not apply or still fails. */
int host_scan_infer_stand_in(host_scan *s, ir_graph *g, int i, int *read);
/* Whether tensor t of g was found computed from the integer inputs (its value a stand-in). */
bool host_scan_computed(const host_scan *s, int t);
/* After the last node: moves the nodes found out into g->host (the values
 * they read copied under HOST_INPUTS_PREFIX) and declares what g reads from them
 * as graph inputs. Nothing found: g unchanged. */
int host_scan_finish(host_scan *s, ir_graph *g, oc_err *err);
/* Notes g->host for the user (its node count, what it computes from which inputs), once
 * the load-time rewrites that prune it (ir/bag_reduce.h) are done; no host program: nothing. */
void host_inputs_note(ir_graph *g);

/* A host graph read from a file (its outputs' shapes unknown): evaluates it
 * once on zeros, which decodes every node and gives each output its shape.
 * OC_ERR naming the node. */
int host_inputs_infer(ir_graph *h, oc_err *err);
/* Nodes [first, end) a load-time rewrite appended to h (ir/bag_reduce.c), whose earlier
 * nodes hold their stand-in values: evaluated as each step evaluates them, giving their
 * outputs shapes and values. OC_ERR naming the node. */
int host_inputs_infer_added(ir_graph *h, int first, oc_err *err);
/* One evaluation: in[i] holds h->inputs[i]'s elements, out[j] receives
 * h->outputs[j]'s. Each output must keep the shape it was planned with. */
int host_inputs_eval(ir_graph *h, const void *const *in, void *const *out, oc_err *err);
/* A copy of h (its nodes, shapes and values). */
ir_graph *host_inputs_clone(const ir_graph *h);
/* The node of g->host that computes host input t of g, or NULL. */
const ir_node *host_inputs_producer(const ir_graph *g, int t);
/* Tensor ht of g->host given to g too (an output of the host program, a host input of g;
 * FusedAttention's padding mask): its index in g. */
int host_inputs_export(ir_graph *g, int ht);
/* Host inputs of g no node reads any more (a padding mask's float bias once FusedAttention
 * masks by its condition) stop being computed and copied: out of g's inputs and the host
 * program's outputs, and the nodes only they needed gone; an empty program is freed. */
void host_inputs_prune(ir_graph *g);

#endif
