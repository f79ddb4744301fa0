/* plan_file.h — the plan file (plan.onnx) as both programs see it: its format,
 * digests and the one reader (outcore-plan show and the runtime loader). The
 * writer is emit/plan_write.h.
 *
 * The file: the training step as onnx_export.h writes it (nodes in execution
 * order, OC_DOMAIN declared, data-less initializers as typed inputs), with:
 *  - project-domain nodes (backward, update, SwapOut/SwapIn) carrying their
 *    annotations as attributes: outcore_stream, outcore_offsets;
 *  - standard-domain nodes (forward nodes and recompute clones) carrying none,
 *    because onnx.checker rejects unknown attributes on standard ops: their
 *    outcore_stream / outcore_offsets / outcore_recompute_of travel in the
 *    metadata entry outcore.node_annotations, one line per node
 *    "<index>\t<stream>\t<offsets, comma-separated, or ->\t<recompute_of>", and
 *    the loader puts them back as attributes (plan_file_restore);
 *  - metadata_props: outcore.version, outcore.kind = "plan", outcore.batch,
 *    outcore.lr / momentum / weight_decay, outcore.source_model,
 *    outcore.forward_nodes, outcore.data_inputs, outcore.strategy,
 *    outcore.budget_bytes, outcore.planned_budget_bytes (after re-plans),
 *    outcore.replans, outcore.predicted_time_s, outcore.predicted_ideal_s,
 *    outcore.predicted_stall_s, outcore.predicted_peak_bytes,
 *    outcore.arena_bytes, outcore.peak_live_bytes, outcore.fragmentation,
 *    outcore.device, outcore.profile_digest (FNV-1a 64 of the profile JSON),
 *    outcore.graph_digest (FNV-1a 64 of the node structure: names, ops,
 *    domains, input/output names and shapes), outcore.fixed_offsets (lines
 *    "<offset>\t<tensor>" for graph inputs and initializers),
 *    outcore.workspaces (lines "<node index>\t<offset>\t<bytes>": each node's
 *    kernel workspace region in the arena, from the profile's workspace_bytes;
 *    restored as the node attribute outcore_workspace, layout.h),
 *    outcore.timeline (lines "<node index>\t<start s>\t<end s>": the predicted
 *    schedule) and outcore.memory (lines "<t s>\t<live bytes>").
 */
#ifndef OC_PLAN_FILE_H
#define OC_PLAN_FILE_H

#include "plan/profile.h"
#include "train/train_graph.h"

#define PLAN_KIND "plan"
/* Node annotations: attributes on project-domain nodes, metadata lines for
 * standard-domain ones (see above). */
#define PLAN_ATTR_STREAM "outcore_stream"             /* "compute" | "d2h" | "h2d" */
#define PLAN_ATTR_RECOMPUTE_OF "outcore_recompute_of" /* name of the node a clone recomputes */
#define PLAN_ATTR_OFFSETS "outcore_offsets"           /* INTS: arena offset per output */
#define PLAN_ATTR_WORKSPACE "outcore_workspace"       /* INTS {offset, bytes} */

/* Digest of a profile as the JSON profile_write_file writes ("%016llx" into buf). */
void plan_profile_digest(const struct profile *p, char *buf, size_t cap);
/* Digest of a graph's node structure. */
uint64_t plan_graph_digest(const ir_graph *g);

/* Reading side (runtime loader), on a graph imported from the plan file's
 * bytes: checks outcore.graph_digest, puts the standard-domain nodes'
 * annotations back as attributes, and returns per-tensor arena offsets
 * (*offsets, owned by the caller, -1 = none; aliases carry their root's) and
 * outcore.arena_bytes. OC_ERR naming the file when an entry is missing or
 * malformed, or the metadata belongs to another graph. */
int plan_file_restore(ir_graph *g, const uint8_t *buf, size_t len, const char *path,
                      int64_t **offsets, int64_t *arena_bytes, oc_err *err);

/* The whole reading side for tools (outcore-plan show): reads path, checks
 * outcore.kind = "plan", imports (data-less initializers back to
 * initializers), infers shapes, plan_file_restore, and fills the train_graph
 * structure (plan_structure_fill). *buf and *len: the file's bytes (owned by
 * the caller) for further metadata. Everything owned by the caller. */
int plan_file_load(const char *path, train_graph **tg, int64_t **offsets, int64_t *arena_bytes,
                   uint8_t **buf, size_t *len, oc_err *err);

/* Fills a train_graph's structure for a graph in execution order whose first
 * output is the loss: phases (before the loss node: forward; SGDMomentum:
 * update; the rest backward), n_forward, alias_of from the op table, loss and
 * label tensors, an empty saved list. tg->g must be set. OC_ERR naming the
 * graph when the loss has no producer. */
int plan_structure_fill(train_graph *tg, oc_err *err);

/* One metadata_props value of an ONNX file's bytes (owned by the caller,
 * oc_free), or NULL when absent or the bytes are not a model. */
char *plan_file_meta_get(const uint8_t *buf, size_t len, const char *key);

#endif
