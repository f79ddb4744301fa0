/* onnx_mutator.c — a structure-aware libFuzzer mutator for ONNX files (the
 * importer's and the plan loader's targets link it). Byte mutations rarely
 * survive protobuf decoding, so most of the time the model is decoded,
 * changed where the readers look — an attribute's value, a dim, an input's
 * wiring, an op type, a node removed or duplicated, an initializer's shape, a
 * metadata line — and encoded again. Bytes that do not decode, and one
 * mutation in eight, get libFuzzer's own byte mutations.
 *
 * Memory: the decoded model is protobuf-c's (free_unpacked with the default
 * allocator, i.e. free); every string or array put into it is malloc'ed here so
 * that free_unpacked releases it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "ir/ops/op_table.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) { /* uniform-ish in [0, n), n > 0 */
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % (n ? n : 1);
}

/* Values that break size arithmetic and bounds. */
static int64_t interesting(int64_t old) {
    static const int64_t v[] = {0,
                                -1,
                                1,
                                2,
                                3,
                                7,
                                64,
                                255,
                                256,
                                65536,
                                INT32_MAX,
                                (int64_t)1 << 31,
                                (int64_t)1 << 32,
                                (int64_t)1 << 40,
                                INT64_MAX,
                                INT64_MIN,
                                INT64_MAX / 2,
                                -((int64_t)1 << 31)};
    switch (rnd(4)) {
    case 0: return (int64_t)((uint64_t)old + 1);
    case 1: return (int64_t)((uint64_t)old - 1);
    case 2: return (int64_t)((uint64_t)old * 2);
    default: return v[rnd(sizeof v / sizeof v[0])];
    }
}

static float interesting_f(void) {
    static const float v[] = {0.0f, -1.0f, 1.0f, 1e30f, -1e30f, 1e-30f, 0.5f, 2.0f};
    uint32_t k = rnd(10);
    if (k == 8) return __builtin_nanf("");
    if (k == 9) return __builtin_inff();
    return v[k];
}

/* Frees a decoded string (protobuf-c's shared empty string is not the heap's). */
static void free_str(char *s) {
    if (s != protobuf_c_empty_string) free(s);
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) abort();
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* A string mutated by libFuzzer (replaces *s, freeing the old one). */
static void mutate_string(char **s) {
    size_t n = *s ? strlen(*s) : 0, cap = n + 64;
    char *b = malloc(cap + 1);
    if (!b) abort();
    if (n) memcpy(b, *s, n);
    size_t m = LLVMFuzzerMutate((uint8_t *)b, n, cap);
    b[m] = 0;
    free_str(*s);
    *s = b;
}

/* A number inside a metadata value's text replaced by an interesting one. */
static void mutate_number_text(char **s) {
    size_t n = *s ? strlen(*s) : 0;
    if (!n) return mutate_string(s);
    size_t at = rnd((uint32_t)n), b = at, e;
    while (b < n && !((*s)[b] >= '0' && (*s)[b] <= '9')) b++;
    if (b == n) return mutate_string(s);
    for (e = b; e < n && (*s)[e] >= '0' && (*s)[e] <= '9'; e++) {}
    char num[32];
    int k = snprintf(num, sizeof num, "%lld", (long long)interesting(strtoll(*s + b, NULL, 10)));
    char *d = malloc(n - (e - b) + (size_t)k + 1);
    if (!d) abort();
    memcpy(d, *s, b);
    memcpy(d + b, num, (size_t)k);
    memcpy(d + b + k, *s + e, n - e + 1);
    free_str(*s);
    *s = d;
}

static void mutate_attr(Onnx__AttributeProto *a) {
    switch (a->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: a->i = interesting(a->i); break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: a->f = interesting_f(); break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        if (a->n_ints && rnd(4)) {
            size_t k = rnd((uint32_t)a->n_ints);
            a->ints[k] = interesting(a->ints[k]);
        } else if (a->n_ints && rnd(2)) {
            a->n_ints--; /* one value fewer (the array stays malloc'ed) */
        } else {
            int64_t *v = realloc(a->ints, (a->n_ints + 1) * sizeof *v);
            if (!v) abort();
            v[a->n_ints] = interesting(0);
            a->ints = v;
            a->n_ints++;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        char *s = dup_bytes((const char *)a->s.data, a->s.len);
        mutate_string(&s);
        free(a->s.data);
        a->s.data = (uint8_t *)s;
        a->s.len = strlen(s);
        break;
    }
    default: a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_type = 1; break;
    }
}

/* A tensor name the graph has: an input, an initializer or a node output. */
static const char *some_name(const Onnx__GraphProto *g) {
    size_t total = g->n_input + g->n_initializer + g->n_node;
    if (!total) return "";
    size_t k = rnd((uint32_t)total);
    if (k < g->n_input) return g->input[k]->name ? g->input[k]->name : "";
    k -= g->n_input;
    if (k < g->n_initializer) return g->initializer[k]->name ? g->initializer[k]->name : "";
    k -= g->n_initializer;
    const Onnx__NodeProto *n = g->node[k];
    return n->n_output ? n->output[rnd((uint32_t)n->n_output)] : "";
}

static void mutate_dims(int64_t *dims, size_t n) {
    if (n) dims[rnd((uint32_t)n)] = interesting(dims[0]);
}

/* One structural change to m; false when none applied (nothing to change). */
static int mutate_model(Onnx__ModelProto *m) {
    Onnx__GraphProto *g = m->graph;
    uint32_t what = rnd(10);
    if (what >= 8 && m->n_metadata_props) { /* a metadata value */
        Onnx__StringStringEntryProto *e = m->metadata_props[rnd((uint32_t)m->n_metadata_props)];
        if (rnd(2)) mutate_number_text(&e->value);
        else mutate_string(&e->value);
        return 1;
    }
    if (!g || !g->n_node) return 0;
    Onnx__NodeProto *n = g->node[rnd((uint32_t)g->n_node)];
    switch (what) {
    case 0:
    case 1:
    case 2: /* an attribute's value */
        if (!n->n_attribute) return 0;
        mutate_attr(n->attribute[rnd((uint32_t)n->n_attribute)]);
        return 1;
    case 3: /* an input rewired, or emptied */
        if (!n->n_input) return 0;
        {
            size_t k = rnd((uint32_t)n->n_input);
            const char *to = rnd(8) ? some_name(g) : "";
            char *s = dup_bytes(to, strlen(to));
            free_str(n->input[k]);
            n->input[k] = s;
        }
        return 1;
    case 4: { /* another op type (from the op list, or a byte-mutated one) */
        const char *t = op_name((op_kind)rnd(OP__COUNT));
        char *s = dup_bytes(t, strlen(t));
        if (!rnd(8)) mutate_string(&s);
        free_str(n->op_type);
        n->op_type = s;
        if (rnd(2)) {
            const char *dom = rnd(2) ? "ai.outcore" : "";
            free_str(n->domain);
            n->domain = dup_bytes(dom, strlen(dom));
        }
        return 1;
    }
    case 5: { /* a graph input's dim, or an initializer's */
        if (g->n_initializer && rnd(2)) {
            Onnx__TensorProto *t = g->initializer[rnd((uint32_t)g->n_initializer)];
            mutate_dims(t->dims, t->n_dims);
            return 1;
        }
        if (!g->n_input) return 0;
        Onnx__ValueInfoProto *v = g->input[rnd((uint32_t)g->n_input)];
        if (!v->type || !v->type->tensor_type || !v->type->tensor_type->shape) return 0;
        Onnx__TensorShapeProto *sh = v->type->tensor_type->shape;
        if (!sh->n_dim) return 0;
        Onnx__TensorShapeProto__Dimension *d = sh->dim[rnd((uint32_t)sh->n_dim)];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            d->dim_value = interesting(d->dim_value);
        return 1;
    }
    case 6: { /* a node removed */
        size_t k = rnd((uint32_t)g->n_node);
        onnx__node_proto__free_unpacked(g->node[k], NULL);
        memmove(g->node + k, g->node + k + 1, (g->n_node - k - 1) * sizeof *g->node);
        g->n_node--;
        return 1;
    }
    default: { /* a node duplicated (a deep copy through its encoding) */
        size_t len = onnx__node_proto__get_packed_size(n);
        uint8_t *b = malloc(len + 1);
        if (!b) abort();
        onnx__node_proto__pack(n, b);
        Onnx__NodeProto *c = onnx__node_proto__unpack(NULL, len, b);
        free(b);
        if (!c) return 0;
        Onnx__NodeProto **v = realloc(g->node, (g->n_node + 1) * sizeof *v);
        if (!v) abort();
        g->node = v;
        size_t at = rnd((uint32_t)g->n_node + 1);
        memmove(v + at + 1, v + at, (g->n_node - at) * sizeof *v);
        v[at] = c;
        g->n_node++;
        return 1;
    }
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    Onnx__ModelProto *m = size && rnd(8) ? onnx__model_proto__unpack(NULL, size, data) : NULL;
    if (!m) return LLVMFuzzerMutate(data, size, max_size);
    int changed = 0;
    for (uint32_t k = 1 + rnd(3); k > 0; k--) changed |= mutate_model(m);
    size_t len = onnx__model_proto__get_packed_size(m);
    if (changed && len <= max_size) onnx__model_proto__pack(m, data);
    onnx__model_proto__free_unpacked(m, NULL);
    return changed && len <= max_size ? len : LLVMFuzzerMutate(data, size, max_size);
}
