/* profile.h — per-node times and workspaces of a training graph on a device
 * (DESIGN §4; file format in docs/profile.md).
 *
 *   profile_device dev; device_preset_find("v100", &dev, &err);
 *   profile *p = profile_analytic(tg, &dev, 640);          // roofline from op costs
 *   profile_write(p, "profile.json", &err);                // or profile_write_file(p, FILE*)
 *   profile *q; profile_read("profile.json", &q, &err);    // validated
 *   profile_scale_to_batch(q, 320, stderr);                // warns, scales times by 320/640
 *   double *t = ...; int64_t *ws = ...;                    // per node of tg
 *   profile_node_costs(q, tg, "profile.json", t, ws, &err); // errors name missing nodes
 *   profile_free(p); profile_free(q);
 */
#ifndef OC_PROFILE_H
#define OC_PROFILE_H

#include <stdio.h>

#include "plan/device_presets.h"
#include "train/train_graph.h"

typedef enum profile_source {
    PROFILE_SOURCE_ANALYTIC = 0,
    PROFILE_SOURCE_MEASURED,
} profile_source;

/* One way to run a node: its time with that much workspace (a convolution's algorithm
 * under a smaller workspace cap, measured by another --profile-out run). */
typedef struct profile_alt {
    double time_s;           /* >= 0 */
    int64_t workspace_bytes; /* >= 0 */
} profile_alt;

#define PROFILE_MAX_ALTS 16 /* alternatives a node record may hold */

typedef struct profile_node {
    char *name;              /* training-graph node name, owned */
    double time_s;           /* >= 0 */
    int64_t workspace_bytes; /* >= 0 */
    /* other (time, workspace) choices of the node's kernel (profile_merge), owned; the
     * record's own is the one planned unless a workspace cap picks another
     * (profile_workspace.h) */
    profile_alt *alts;
    int n_alts;
} profile_node;

typedef struct profile {
    profile_device device;
    int64_t batch;
    profile_source source;
    profile_node *nodes;
    int n_nodes;
} profile;

/* A profile with n empty node records (names NULL), for producers and tests. */
profile *profile_new(const profile_device *d, int64_t batch, profile_source src, int n);
void profile_free(profile *p);
/* Sets record i (name copied; its alternatives kept). */
void profile_node_set(profile *p, int i, const char *name, double time_s, int64_t workspace);
/* A deep copy of p (names and alternatives). */
profile *profile_copy(const profile *p);

/* Roofline: time = max(flops / peak, bytes / bandwidth) + launch overhead per
 * node of tg (op_cost_of); 0 for an in-place view (train_view_source: the
 * executor runs nothing); workspace 0. Never fails. */
profile *profile_analytic(const train_graph *tg, const profile_device *d, int64_t batch);

/* The sum of p's node times: an in-core step's time when its kernels run one after
 * another on one stream (what the simulator predicts with nothing swapped). */
double profile_total_s(const profile *p);

/* Reads and validates a profile file: every field present, numbers >= 0,
 * node names unique, at most PROFILE_MAX_ALTS "alternatives" a node. Errors name the file and the field or node. */
int profile_read(const char *path, profile **out, oc_err *err);
/* Parses from a JSON text; path is used in messages only. */
int profile_parse(const char *text, const char *path, profile **out, oc_err *err);
/* *nhwc: whether the profile file at path was taken of a channels-last step
 * (it times layout Transposes: channels_last.h). Errors as profile_read's. */
int profile_layout_nhwc(const char *path, bool *nhwc, oc_err *err);
/* Writes p as JSON to f. OC_ERR on a write error. */
int profile_write_file(const profile *p, FILE *f, oc_err *err);

/* Maps p onto tg's nodes: time[i], workspace[i] for node i of tg->g. Fails
 * naming the node when a graph node has no record, or a record names a node
 * the graph does not have (what = the profile's file name, for messages). A
 * multi-tensor update without a record of its own takes the sum of its
 * members' (a profile of per-parameter updates), all of which must be there. */
int profile_node_costs(const profile *p, const train_graph *tg, const char *what, double *time,
                       int64_t *workspace, oc_err *err);

/* Applies a profile taken at p->batch to batch: times (and the alternatives') scale by
 * batch/p->batch (workspaces are kept). Prints a warning to warn (if non-NULL) when the
 * batches differ; no-op otherwise. */
void profile_scale_to_batch(profile *p, int64_t batch, FILE *warn);

#endif
