/* plan_file.h — a strategy's plan made runnable and written as plan.onnx
 * (DESIGN §7): strategy -> rewrite (rewrite.h) -> static layout (layout.h) ->
 * verification (plan_verify.h) -> ONNX file; and the reading side the runtime
 * loader uses.
 *
 *   plan_made pm;
 *   if (plan_make(strategy_find("hybrid"), &in, &pm, &err)) ...   // in: strategy.h
 *   if (!pm.feasible) ... pm.stats.notes / pm.stats.result.reason ...
 *   plan_file_meta m = {.strategy = "hybrid", .source_model = "resnet18.onnx", .batch = 8,
 *                       .profile_digest = d, .device = "v100"};
 *   plan_file_write(&pm, &m, "plan.onnx", &err);
 *   plan_made_free(&pm);
 *
 * plan_make: runs the strategy under in->sim.budget_bytes; rewrites and lays out
 * the plan; when the arena exceeds the budget (fragmentation, or lifetimes that
 * differ from the simulator's), re-plans with the budget lowered by the
 * overshoot (at least 0.1% of the budget), up to PLAN_MAX_REPLANS times. The
 * result is verified against the real budget. pm.feasible false: no plan fits
 * (the strategy found none, or re-planning ran out), with pm.reason set.
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

#include "emit/layout.h"
#include "emit/rewrite.h"
#include "search/strategy.h"

#define PLAN_MAX_REPLANS 8
#define PLAN_KIND "plan"

typedef struct plan_made {
    bool feasible;
    char reason[600];
    strategy_stats stats;      /* of the final strategy run */
    sim_result result;         /* scalars of its simulation (pointers invalid) */
    int64_t budget_bytes;      /* asked */
    int64_t planned_budget;    /* the budget the strategy planned under */
    int replans;
    int64_t last_arena;        /* arena of the last layout that did not fit */
    rewrite_result rw;
    layout_result layout;
    sim_timeline *tl;          /* the predicted timeline (source graph indices) */
    sim_plan *plan;            /* the final decisions (source graph); owned */
} plan_made;

int plan_make(const strategy *s, const strategy_input *in, plan_made *out, oc_err *err);
void plan_made_free(plan_made *pm);

typedef struct plan_file_meta {
    const char *tool_version;   /* NULL: OC_EXPORT_VERSION */
    const char *strategy;
    const char *source_model;
    const char *device;
    const char *profile_digest; /* hex */
    int64_t batch;
} plan_file_meta;

int plan_file_write(plan_made *pm, const plan_file_meta *m, const char *path, oc_err *err);

/* FNV-1a 64 of bytes, continuing from h (start with PLAN_FNV_INIT). */
#define PLAN_FNV_INIT 0xcbf29ce484222325ULL
uint64_t plan_fnv(uint64_t h, const void *p, size_t n);
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

/* One metadata_props value of an ONNX file's bytes (owned by the caller,
 * oc_free), or NULL when absent or the bytes are not a model. */
char *plan_file_meta_get(const uint8_t *buf, size_t len, const char *key);

#endif
