/* onnx_torch_meta.h — what torch.onnx.export writes beside the graph (metadata_props of the
 * graph, its nodes and value infos), read while onnx_import.c imports a file: with
 * onnx_import.c the only code that sees protobuf types.
 *
 *   torch_repair *r = torch_repair_new(g, gp);         // NULL: no exported program's signature
 *   ... after each node n is imported:  torch_repair_node(r, np, n, err);
 *   torch_meta_notes(g, path, gp, r);                  // then torch_repair_free(r)
 *
 * torch_repair undoes, where the metadata proves what was done, two of the things the
 * default exporter's optimize=True does to parameters: merging initializers equal at export,
 * and folding a Linear's transposed weight into a new initializer. */
#ifndef OC_ONNX_TORCH_META_H
#define OC_ONNX_TORCH_META_H

#include "onnx.pb-c.h"
#include "ir/ir.h"

/* The value of the StringStringEntryProto with this key, among message m's unknown fields
 * of this tag (the build's older schema lacks metadata_props), when it contains needle
 * (oc_malloc'd: the caller frees); else NULL. */
char *onnx_meta_value(const ProtobufCMessage *m, uint32_t tag, const char *key, const char *needle);

/* Node np's (imported as node `node` of g) nn.Embedding padding_idx from its metadata:
 * OC_ATTR_PADDING_IDX set; OC_ERR for a bad one or scale_grad_by_freq. */
int torch_meta_padding(ir_graph *g, const char *path, const Onnx__NodeProto *np, int node,
                       oc_err *err);

typedef struct torch_repair torch_repair;

/* A repair for graph gp being imported into g (its initializers already there, no node
 * yet), or NULL when gp has no exported program's signature. */
torch_repair *torch_repair_new(ir_graph *g, const Onnx__GraphProto *gp);
/* Node np, just imported as node n of g (its inputs set, the last node), repaired: an input
 * reading a merged initializer reads the parameter's own copy; a MatMul of aten.linear
 * reading a folded transposed weight reads Transpose(the parameter), inserted before it. */
int torch_repair_node(torch_repair *r, const Onnx__NodeProto *np, int n, oc_err *err);
void torch_repair_free(torch_repair *r);

/* Notices: BatchNormalization folded into Conv; parameters folded or merged (r: those it
 * repaired are said as such, not as folded). */
void torch_meta_notes(ir_graph *g, const char *path, const Onnx__GraphProto *gp,
                      const torch_repair *r);

#endif
