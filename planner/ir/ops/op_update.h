/* op_update.h — the input and output slots of an optimizer update node
 * (SGDMomentum, AdamW: op_update.c). One node updates k parameters: k 1 is
 * the per-parameter node; k > 1 a multi-tensor update (train/train_graph.c
 * groups them, attribute "members": the k per-parameter nodes it stands for),
 * which every backend runs as one kernel for all k:
 *   inputs:  W1, dW1, M1 [, V1], .., Wk, dWk, Mk [, Vk] [, scale [, K1, .., Kk]]
 *   outputs: W1', M1' [, V1'], .., Wk', Mk' [, Vk'] [, K1', .., Kk']
 * (V: AdamW's second moment; K: AdamW's per-parameter step count, with loss
 * scaling only, after the scale).
 *
 *   op_update_layout l;
 *   if (op_update_layout_of(n, &l))   // an update node, its slots consistent
 *       w_i = n->inputs[l.width * i]; // member i's parameter
 */
#ifndef OC_OP_UPDATE_H
#define OC_OP_UPDATE_H

#include <stdbool.h>

#include "ir/ir.h"

typedef struct op_update_layout {
    int members;   /* k */
    int width;     /* inputs a member: 3 (W, dW, M) or 4 (AdamW: and V) */
    int out_width; /* outputs a member: 2 or 3 */
    int scale;     /* input slot of the shared scale, or -1 */
    int counts;    /* input slot of K1 (K1..Kk follow; outputs from out_width * k), or -1 */
} op_update_layout;

/* The "members" attribute of a multi-tensor update (strings), or NULL. */
const ir_attr *op_update_members(const ir_node *n);
/* False when n is no update node or its input / output counts fit no layout. */
bool op_update_layout_of(const ir_node *n, op_update_layout *l);
/* The input output o of update node n reuses (in place), or -1. */
int op_update_alias(const ir_node *n, int o);
/* Input slot `in` of update node n: its member and the slot within the
 * member's (W 0, dW 1, M 2, V 3, the scale -1, a count 4). False if out of range. */
bool op_update_slot(const ir_node *n, int in, int *member, int *slot);

#endif
