/* profile_workspace.h — a convolution's workspace as a planning choice (MONeT's joint
 * choice of operator implementation and checkpointing, DESIGN §4). cuDNN's fastest
 * algorithms can want gigabytes of workspace (VGG-16's first convolutions at batch 256:
 * 6 GiB); under a smaller cap it takes a slower one. A profile measured once per cap
 * (`outcore-run --profile-out --workspace-limit W`) times each; profile_merge makes one
 * profile whose nodes hold every (time, workspace) pair worth having, and the planner
 * tries caps (profile_capped) to trade a node's speed against memory for swaps.
 *
 *   profile *m;  profile_merge(ps, paths, 3, &m, &err);   // alternatives per node
 *   int64_t caps[8]; int n = profile_workspace_levels(m, caps, 8);
 *   profile *q = profile_capped(m, caps[i], &changed);    // each node's pick under caps[i]
 */
#ifndef OC_PROFILE_WORKSPACE_H
#define OC_PROFILE_WORKSPACE_H

#include "plan/profile.h"

/* One profile of n (n >= 1) of the same step (same nodes, batch and device name; errors name
 * the file and node): each node's (time, workspace) pairs of every profile and alternative,
 * the times of one workspace averaged, then only those no other pair beats in both (smaller
 * or equal workspace and less time): the fastest is the record, the others (largest workspace
 * first) its alternatives. paths name the profiles in messages. */
int profile_merge(profile *const *ps, const char *const *paths, int n, profile **out, oc_err *err);

/* A copy of p where each node with alternatives runs the fastest of its pairs whose
 * workspace is at most cap (none: the one of least workspace), the pair it gives up kept as
 * an alternative; *changed (may be NULL): the nodes whose record changed. */
profile *profile_capped(const profile *p, int64_t cap, int *changed);

/* The caps worth trying on p: the distinct workspaces of the nodes that have alternatives,
 * largest first, at most max of them (spread over the list, its largest and smallest kept).
 * Returns how many (0: no node has an alternative). */
int profile_workspace_levels(const profile *p, int64_t *levels, int max);

#endif
