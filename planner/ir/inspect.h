/* inspect.h — `outcore-plan inspect`: the tensors of a model with shapes, sizes,
 * kinds and producers, and byte totals per kind. The JSON keys (tensors[].name,
 * shape, dtype, bytes, kind, producer; totals.parameter_bytes, activation_bytes,
 * ...) are a stable interface that build pipelines parse. */
#ifndef OC_INSPECT_H
#define OC_INSPECT_H

#include <jansson.h>
#include <stdio.h>

#include "ir/ir.h"

typedef struct inspect_totals {
    int64_t bytes[IR_KIND__COUNT]; /* per kind */
    int64_t parameter_count;       /* elements of trainable parameters */
    int n_tensors, n_nodes;
} inspect_totals;

/* batch: the bound batch (for the header). Writes to out; returns OC_ERR on I/O error. */
int inspect_print_text(const ir_graph *g, const int *alias_of, int64_t batch, FILE *out);
/* extra: optional object merged into the root (its reference is stolen). */
int inspect_print_json(const ir_graph *g, const int *alias_of, int64_t batch, json_t *extra,
                       FILE *out);

#endif
