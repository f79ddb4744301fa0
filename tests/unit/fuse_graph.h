/* fuse_graph.h — small forward graphs for the fusion passes' tests (test-only,
 * header-only): nodes by op type, counts, and the model a saved graph reloads as.
 *
 *   int y = op(g, "fc/MatMul", "MatMul", x, w, END);   // output "fc/MatMul_y"
 *   ir_graph *r = saved_and_reloaded(g);               // caller frees: ir_graph_free
 */
#ifndef OC_TEST_FUSE_GRAPH_H
#define OC_TEST_FUSE_GRAPH_H

#include <stdarg.h>
#include <stdio.h>

#include "ir/onnx_export.h"
#include "ir/ops/op_table.h"
#include "ir/shape_infer.h"

#define END (-2)

/* Node op(inputs..., END) of a standard op, one fresh output "<name>_y"; returns it. */
static inline int op(ir_graph *g, const char *name, const char *type, ...) {
    int n = ir_node_add(g, name, type, "");
    g->nodes[n].op = op_lookup("", type);
    va_list ap;
    va_start(ap, type);
    for (int t; (t = va_arg(ap, int)) != END;) ir_node_add_input(g, n, t);
    va_end(ap);
    char buf[128];
    snprintf(buf, sizeof buf, "%s_y", name);
    int y = ir_tensor_add(g, buf, IR_DTYPE_UNDEFINED);
    ir_node_add_output(g, n, y);
    return y;
}

static inline int count(const ir_graph *g, int kind) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += g->nodes[i].op == kind;
    return c;
}

static inline const ir_node *find(const ir_graph *g, int kind) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == kind) return &g->nodes[i];
    return NULL;
}

/* g (one input, one output) written as --save writes it (fused nodes as their chains),
 * then loaded back. */
static inline ir_graph *saved_and_reloaded(const ir_graph *g) {
    int in = g->inputs[0], out = g->outputs[0];
    onnx_export_spec s = {.node_end = g->n_nodes,
                          .inputs = &in,
                          .n_inputs = 1,
                          .outputs = &out,
                          .n_outputs = 1,
                          .unfuse = true};
    uint8_t *buf;
    size_t len;
    oc_err err;
    if (onnx_export_graph_buffer(g, &s, &buf, &len, &err)) fail_msg("%s", err.msg);
    ir_graph *r;
    ir_bind_opts bo = {0};
    if (ir_load_model_buffer(buf, len, "saved", &bo, &r, &err)) fail_msg("%s", err.msg);
    oc_free(buf);
    return r;
}

#endif
