/* init.h — data for initializers that have none (structure-only models),
 * as PyTorch initialises the same layers, from a seed:
 *   Conv / ConvTranspose / Gemm weight: kaiming_uniform_(a=sqrt(5)), i.e.
 *     U(-b, b), b = 1/sqrt(fan_in), fan_in = dims[1] * prod(dims[2:]);
 *   their bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with the weight's fan_in;
 *   MatMul weights (a Linear as exporters write it, also through a Transpose):
 *     the same, fan_in = the inner dim; a vector added after them (bias) 0;
 *   BatchNormalization scale 1, bias 0, running mean 0, running var 1;
 *   LayerNormalization scale 1, bias 0;
 *   embedding tables (Gather's data) and any other parameter: uniform with
 *     std 0.02 (GPT-2's, BERT's scale);
 *   optimizer state (momentum, AdamW's moments) 0.
 * External-data initializers are read from their file. The values are a pure
 * function of (seed, tensor name), not PyTorch's generator.
 *
 *   if (rt_init_missing(tg, seed, &n_init, &err)) ...  // before rt_exec_upload_initializers
 */
#ifndef OC_INIT_H
#define OC_INIT_H

#include "train/train_graph.h"

/* Fills every initializer without data. *n_init: how many were filled.
 * OC_ERR naming the tensor when no rule applies (a float tensor no Conv, Gemm,
 * BN or SGD node explains). */
int rt_init_missing(train_graph *tg, uint64_t seed, int *n_init, oc_err *err);

/* The generator: uniform in [0, 1) from (seed, stream, counter), counter-based. */
double rt_init_uniform(uint64_t seed, uint64_t stream, uint64_t counter);

#endif
