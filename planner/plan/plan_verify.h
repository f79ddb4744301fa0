/* plan_verify.h — checks a rewritten plan before anyone runs it (DESIGN §7):
 * the planner after rewrite + layout, the runtime loader before the first step.
 *
 *   int64_t *off = ...;   // per tensor arena offset, -1 none (layout_result.offset)
 *   if (plan_verify(ptg, off, arena_bytes, budget, &err)) { puts(err.msg); ... }
 *
 * Rules, in this order (the first violation is reported, naming the node):
 *  1. every input of a node is produced before use: an initializer, a graph
 *     input, or the output of an earlier node ("node 'X': input 'T' is
 *     produced later, by node 'Y'" / "... is never produced");
 *  2. every SwapIn reads the output of an earlier SwapOut, and no compute node
 *     reads a host tensor (a SwapOut output);
 *  3. every tensor that needs arena storage (layout.h lifetimes) has an offset
 *     >= 0, a multiple of PLAN_ALIGN, ending within arena_bytes;
 *  4. no two tensors live at a common position share a byte ("tensors 'A'
 *     (written by node 'X') and 'B' (node 'Y') overlap at bytes [..) ...");
 *  5. arena_bytes <= budget (budget <= 0: not checked).
 * Returns OC_OK or OC_ERR with the message in err. Never modifies anything. */
#ifndef OC_PLAN_VERIFY_H
#define OC_PLAN_VERIFY_H

#include "train/train_graph.h"

int plan_verify(const train_graph *tg, const int64_t *offsets, int64_t arena_bytes, int64_t budget,
                oc_err *err);

#endif
