/* train_structure.h — the training step's structure as a text record, so that
 * a file written by outcore-plan (emit, plan -o) carries it and every reader
 * reads it back instead of deriving it again (metadata outcore.structure).
 *
 *   char *s = train_structure_format(tg);                  // writer side
 *   ... train_structure_parse(tg2, s, "plan.onnx", &err)    // reader side, tg2->g set
 *
 * The record (lines; tensor names escaped: \\ \t \n for backslash, tab, newline):
 *   outcore-structure 1
 *   phases FFF...FLBB...BU...     one letter per node: forward, loss, backward, update
 *   loss <tensor>                 produced by the L node
 *   label <tensor>                the int64 label input (absent: the model's own loss)
 *   fwd_of <node>:<node> ...      backward node -> the forward node it differentiates
 *   kind <kind>\t<tensor>         every tensor whose kind is not "activation"
 *   grad <parameter>\t<gradient>  each parameter's final gradient
 *   saved <tensor>                forward activations read by backward, in order
 * In-place aliases are not recorded: they are a property of each op (op_def.aliases)
 * and train_mark_aliases recomputes them. */
#ifndef OC_TRAIN_STRUCTURE_H
#define OC_TRAIN_STRUCTURE_H

#include "train/train_graph.h"

#define TRAIN_STRUCTURE_KEY "outcore.structure"

/* The record of tg (owned by the caller, oc_free). */
char *train_structure_format(const train_graph *tg);

/* Fills tg's structure (phase, fwd_of, n_forward, loss, label, tensor kinds,
 * grad_of, saved, alias_of, the in-core peak) from a record, for tg->g as
 * imported from the same file. OC_ERR naming path and the line when the record
 * is malformed or disagrees with the graph (a name it lacks, phases out of
 * order, a loss the loss node does not produce, a label that is not an int64
 * input); tg's structure fields are then unset. */
int train_structure_parse(train_graph *tg, const char *text, const char *path, oc_err *err);

/* Before g (imported from the same file) is shape-inferred: every initializer the record
 * lists as `kind constant` marked a constant whatever reads it (ir_tensor.is_export_constant),
 * as the planner had it. Otherwise a float literal read as data (torch.export's exponent of
 * `x ** 2`) would be taken for a parameter, its node lowered as for a trainable one (Pow into
 * PowTensor), and the graph would not be the one emitted. Malformed lines are left to
 * train_structure_parse. */
void train_structure_mark_constants(ir_graph *g, const char *text);

#endif
