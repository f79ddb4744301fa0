/* shape_infer.h — dim binding, shape inference and constant folding.
 *
 *   ir_dim_binding dims[] = {{"height", 224}};
 *   ir_bind_opts b = {.batch = 640, .dims = dims, .n_dims = 1};
 *   if (ir_bind_dims(g, &b, &err) || ir_infer_shapes(g, &err)) ...
 *
 * After both succeed every tensor in g has a static shape and a kind. */
#ifndef OC_SHAPE_INFER_H
#define OC_SHAPE_INFER_H

#include "ir/ir.h"

#define OC_MAX_BATCH ((int64_t)1 << 24)

typedef struct ir_dim_binding {
    const char *name;
    int64_t value;
} ir_dim_binding;

typedef struct ir_bind_opts {
    int64_t batch;              /* 0: keep the model's; else the data input's leading dim */
    const ir_dim_binding *dims; /* named symbols */
    int n_dims;
} ir_bind_opts;

/* Binds the symbolic dims of the graph inputs. --batch sets the leading dim of
 * the data input (the first graph input) and every dim sharing its symbol.
 * Fails, naming the input and symbol, when a binding names no symbol, a value
 * is out of range, or a symbol is left unbound. */
int ir_bind_dims(ir_graph *g, const ir_bind_opts *o, oc_err *err);

/* Runs every node's shape function in order, folding plan-time values, checks
 * input/output counts, and assigns tensor kinds. Fails naming the node. */
int ir_infer_shapes(ir_graph *g, oc_err *err);

/* Nodes [from, *to) a rewrite inserted into an inferred graph (ir/bag_reduce.c): each
 * lowered where its op lowers (*to grows by the nodes that inserts) and inferred, in order.
 * Fails naming the node. */
int ir_infer_inserted(ir_graph *g, int from, int *to, oc_err *err);
/* Import + bind + infer of a user's forward model, the pipeline every command
 * runs. A model may hold only standard ops: a node of the project's domain
 * (ai.outcore: backward, update and copy ops, whose arguments only a plan's
 * digest vouches for) is refused, named. */
int ir_load_model(const char *path, const ir_bind_opts *o, ir_graph **out, oc_err *err);
/* The same from bytes already read (path for messages and external data). */
int ir_load_model_buffer(const uint8_t *buf, size_t len, const char *path, const ir_bind_opts *o,
                         ir_graph **out, oc_err *err);

#endif
