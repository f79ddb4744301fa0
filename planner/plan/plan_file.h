/* plan_file.h — the plan file (plan.onnx) as both programs see it: its format,
 * digests and the one reader (plan_file_read: outcore-plan show and the runtime
 * loader). The writer is emit/plan_write.h.
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
 *    schedule), outcore.memory (lines "<t s>\t<live bytes>") and
 *    outcore.structure (phases, loss, label, kinds, gradients, saved tensors:
 *    train/train_structure.h).
 */
#ifndef OC_PLAN_FILE_H
#define OC_PLAN_FILE_H

#include "plan/profile.h"
#include "train/train_graph.h"

#define PLAN_KIND "plan"
#define PLAN_KIND_TRAINING "incore-training-graph" /* outcore-plan emit */
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

/* The one reader of what outcore-plan writes for outcore-run: a training graph
 * (outcore.kind "incore-training-graph", train_export.h) or a plan. It checks
 * the kind, imports the graph (data-less initializers back to initializers),
 * applies the overrides, infers shapes and decodes every node's arguments,
 * reads the structure back (train_structure.h; a file without it is refused)
 * and, for a plan, restores annotations and offsets (plan_file_restore). It
 * does not verify the layout: callers run plan_verify. */
typedef struct plan_read_opts {
    bool lr_set, momentum_set, weight_decay_set; /* override the file's SGDMomentum attributes */
    float lr, momentum, weight_decay;
} plan_read_opts;

typedef struct plan_read {
    train_graph *tg;
    bool is_plan;        /* else a training graph */
    int64_t batch;       /* outcore.batch */
    char *source_model;  /* outcore.source_model ("" when absent) */
    char *strategy;      /* outcore.strategy ("" when absent) */
    int64_t *offsets;    /* plans: per tensor arena offset, -1 none */
    int64_t arena_bytes; /* plans: outcore.arena_bytes */
} plan_read;

/* o may be NULL. On OC_ERR (naming path) *out is empty; otherwise
 * plan_read_free releases it. buf is not kept. */
int plan_file_read(const uint8_t *buf, size_t len, const char *path, const plan_read_opts *o,
                   plan_read *out, oc_err *err);
void plan_read_free(plan_read *r);

/* One metadata_props value of an ONNX file's bytes (owned by the caller,
 * oc_free), or NULL when absent or the bytes are not a model. */
char *plan_file_meta_get(const uint8_t *buf, size_t len, const char *key);

#endif
