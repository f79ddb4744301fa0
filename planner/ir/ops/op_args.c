/* op_args.c — see op_args.h. */
#include "ir/ops/op_args.h"

#include "ir/ops/op_table.h"

const op_args *op_args_of(const ir_node *n) {
    OC_ASSERT(n->args); /* op_infer decodes every op that has a decoder */
    return n->args;
}

op_args *op_args_new(ir_node *n) {
    oc_free(n->args);
    n->args = oc_calloc(1, sizeof(op_args));
    return n->args;
}

uint64_t op_name_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return h;
}
