/* model_seal.h — what outcore-plan writes for outcore-run (plans, training
 * graphs) sealed against edits: the metadata entry outcore.seal, added last by
 * the writer (onnx_export_spec.seal) and checked first by the reader
 * (plan_file_read), lists a hash of every item of the file:
 *
 *   outcore-seal 1 <64-bit digest of everything below, hex>
 *   header <h>                  the model without its nodes and metadata:
 *                               ir_version, opsets, graph inputs/outputs,
 *                               initializers (names, types, shapes, data)
 *   node <i> <h> <h1> <h2> ...  node i without attributes (name, op, domain,
 *                               inputs, outputs), then each attribute in order
 *   meta <h> <key>              each metadata entry but outcore.seal (key, value)
 *
 * <h> is the item's protobuf encoding hashed with FNV-1a 64, folded to 32 bits.
 * A file whose content differs is refused with the item named: the node and
 * attribute, the metadata key, or the header. The seal is an integrity check
 * against edits and corruption, not a signature: whoever can write the file can
 * recompute it, so everything it vouches for is still checked on load (shapes,
 * decoded arguments, the verifier). */
#ifndef OC_MODEL_SEAL_H
#define OC_MODEL_SEAL_H

#include "onnx.pb-c.h"
#include "ir/common.h"

#define MODEL_SEAL_KEY "outcore.seal"

/* The seal of m's content (any MODEL_SEAL_KEY entry left out). Caller frees (oc_free). */
char *model_seal_text(const Onnx__ModelProto *m);

/* OC_OK when m carries a seal that matches its content; otherwise OC_ERR naming
 * path and the first item that differs (or the missing/malformed seal). */
int model_seal_check(const Onnx__ModelProto *m, const char *path, oc_err *err);

/* The model in buf with its seal recomputed (replacing any MODEL_SEAL_KEY entry):
 * for tests and fuzzing, which forge edited files. *out is owned by the caller
 * (oc_free). OC_ERR when buf is not a model. */
int model_seal_rewrite(const uint8_t *buf, size_t len, uint8_t **out, size_t *out_len);

#endif
