/* autodiff_internal.h — state shared by autodiff.c (the grad_ctx of
 * ir/ops/grad_api.h) and train_graph.c (train_build) only. */
#ifndef OC_AUTODIFF_INTERNAL_H
#define OC_AUTODIFF_INTERNAL_H

#include "ir/ops/grad_api.h"
#include "ir/ops/op_table.h"
#include "train/train_graph.h"

typedef struct train_builder {
    ir_graph *g;
    train_graph *tg;
    oc_err *err;
    int n_fwd_tensors;   /* tensors that existed before backward: arrays below cover these */
    bool *requires_grad; /* per forward tensor */
    int **partials;      /* per forward tensor: partial gradients so far */
    int *n_partials;
    int *n_accumulated;   /* per forward tensor: its partials summed early (train_graph.c) */
    int *n_partials_seen; /* per forward tensor: partials ever added (their names' index) */
    int *n_grad_uses;     /* per forward tensor: consumers that may send it a gradient */
    int *pending;         /* per forward tensor: forward consumers not yet walked */
    int *deferred;        /* --clip-grad-norm, --loss-scale: parameters whose update waits for
                         every gradient */
    int n_deferred;
    int *group; /* --fuse all: parameters whose multi-tensor update is not yet emitted */
    int n_group;
    int64_t group_bytes;           /* their bytes */
    int loss_scale, scale_tracker; /* --loss-scale: GradScaler's state S and T, or -1 */
} train_builder;

struct grad_ctx {
    train_builder *b;
    int fwd;           /* forward node being differentiated */
    train_phase phase; /* phase of the nodes it emits */
};

/* Appends a node with its phase and forward origin. */
int tb_add_node(train_builder *b, const char *name, op_kind op, train_phase phase, int fwd_of);
/* Records g as a partial gradient of forward tensor t (the loss's seed, the rules' dX). */
void tb_add_partial(train_builder *b, int t, int g);

#endif
