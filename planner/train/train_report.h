/* train_report.h — `inspect --training`: bytes per tensor class, the in-core
 * peak, and each saved tensor with its bytes and backward readers; also the
 * Graphviz view of the training graph (`outcore-plan dot`). JSON keys
 * (training.saved_activation_bytes, incore_peak_bytes, saved[].name/bytes/
 * readers, bytes_by_class) are a stable interface. */
#ifndef OC_TRAIN_REPORT_H
#define OC_TRAIN_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "train/train_graph.h"

int train_report_text(const train_graph *tg, FILE *out);
/* The "training" object (new reference). */
json_t *train_report_json(const train_graph *tg);
/* Graphviz: one node per graph node, coloured by phase (phase NULL: all
 * forward); edges are tensors, red where backward reads a saved tensor. */
int ir_write_dot(const ir_graph *g, const train_phase *phase, FILE *out);

#endif
