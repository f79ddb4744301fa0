/* checkpoint.h — what outcore-run writes and reads back between runs.
 *
 * A saved model (--save) is the forward model with the trained weights and
 * running statistics, every tensor under its name in the input model: PyTorch
 * loads it back by state-dict key (tools/outcore_torch.py). A checkpoint
 * (--save with --save-every, or at the end of a --data run) is the same file
 * plus the optimizer state (each parameter's momentum, "<param>/momentum")
 * and metadata outcore.checkpoint.{step, seed, samples, batch}: --resume
 * continues from it bit for bit on the cpu backend. Files are written whole
 * or not at all (a temporary file renamed into place). */
#ifndef OC_RT_CHECKPOINT_H
#define OC_RT_CHECKPOINT_H

#include "executor.h"

typedef struct rt_checkpoint {
    int64_t step;    /* the next global step */
    uint64_t seed;   /* the run's seed (data order, dropout) */
    int64_t samples; /* size of the training set (0: synthetic or fixed batch) */
    int64_t batch;
} rt_checkpoint;

/* Writes the forward model with x's current weights; ck non-NULL: a checkpoint. */
int rt_save(rt_exec *x, train_graph *tg, const char *path, const rt_checkpoint *ck, oc_err *err);
/* The same file as bytes in memory; *buf: the caller oc_frees it. */
int rt_save_buffer(rt_exec *x, train_graph *tg, const rt_checkpoint *ck, uint8_t **buf, size_t *len,
                   oc_err *err);
/* Reads a checkpoint into tg's initializers (before rt_exec_upload_initializers):
 * every parameter, running statistic and momentum by name, and its metadata. */
int rt_resume(const char *path, train_graph *tg, rt_checkpoint *ck, oc_err *err);

#endif
