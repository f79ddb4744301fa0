/* evaluate.h — outcore-run's evaluation of held-out data: the forward model
 * with the current weights (what --save writes), in inference form
 * (train/eval_graph.h), on the same backend, batch by batch in order (the
 * last batch padded, the padding not counted); mean cross-entropy and
 * accuracy (argmax over dim 1 against the label) computed on the host in
 * double. */
#ifndef OC_RT_EVALUATE_H
#define OC_RT_EVALUATE_H

#include "dataset.h"
#include "executor.h"

typedef struct rt_eval {
    double loss, accuracy;
    int64_t samples;
} rt_eval;

int rt_evaluate(rt_exec *x, train_graph *tg, rt_backend *b, const rt_dataset *d, int64_t batch,
                rt_eval *r, oc_err *err);

#endif
