/* model_seal.c — see model_seal.h. */
#include "ir/model_seal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define FNV_INIT 0xcbf29ce484222325ULL
#define MAX_META 1024 /* metadata entries a sealed file may hold (matching is quadratic) */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* Hash of one message's protobuf encoding; *scratch grows as needed (caller frees). */
static uint64_t msg_hash(const ProtobufCMessage *msg, uint8_t **scratch, size_t *cap) {
    size_t n = protobuf_c_message_get_packed_size(msg);
    oc_grow((void **)scratch, cap, n + 1, 1);
    protobuf_c_message_pack(msg, *scratch);
    return fnv(FNV_INIT, *scratch, n);
}

static uint32_t fold(uint64_t h) { return (uint32_t)(h ^ (h >> 32)); }

typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    oc_grow((void **)&t->s, &t->cap, t->len + (size_t)n + 1, 1);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, aq);
    va_end(aq);
    t->len += (size_t)n;
}

static bool is_seal(const Onnx__StringStringEntryProto *e) {
    return e->key && strcmp(e->key, MODEL_SEAL_KEY) == 0;
}

char *model_seal_text(const Onnx__ModelProto *m) {
    uint8_t *scratch = NULL;
    size_t cap = 0;
    text body = {0};
    uint64_t all = FNV_INIT, h;
#define ITEM(msg)                                                                                  \
    (h = msg_hash((const ProtobufCMessage *)(msg), &scratch, &cap), all = fnv(all, &h, sizeof h),  \
     fold(h))
    Onnx__ModelProto head = *m;
    Onnx__GraphProto graph;
    head.n_metadata_props = 0;
    if (m->graph) {
        graph = *m->graph;
        graph.n_node = 0;
        head.graph = &graph;
    }
    put(&body, "header %08" PRIx32 "\n", ITEM(&head));
    for (size_t i = 0; m->graph && i < m->graph->n_node; i++) {
        Onnx__NodeProto node = *m->graph->node[i];
        node.n_attribute = 0;
        put(&body, "node %zu %08" PRIx32, i, ITEM(&node));
        for (size_t k = 0; k < m->graph->node[i]->n_attribute; k++)
            put(&body, " %08" PRIx32, ITEM(m->graph->node[i]->attribute[k]));
        put(&body, "\n");
    }
    for (size_t k = 0; k < m->n_metadata_props; k++) {
        const Onnx__StringStringEntryProto *e = m->metadata_props[k];
        if (is_seal(e)) continue;
        put(&body, "meta %08" PRIx32 " ", ITEM(e));
        for (const char *c = e->key ? e->key : ""; *c; c++) /* one line, whatever the key */
            put(&body, "%c", (unsigned char)*c < 0x20 ? '?' : *c);
        put(&body, "\n");
    }
#undef ITEM
    oc_free(scratch);
    char *out = oc_sprintf("outcore-seal 1 %016" PRIx64 "\n%s", all, body.s ? body.s : "");
    oc_free(body.s);
    return out;
}

/* ---- checking ---- */

/* A seal's lines, split in place. */
typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

static void split(char *s, lines *l) {
    while (s && *s) {
        char *nl = strchr(s, '\n');
        if (nl) *nl = 0;
        oc_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v);
        l->v[l->n++] = s;
        s = nl ? nl + 1 : NULL;
    }
}

static bool starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* How many of l's lines from the third on start with "node " (the node lines). */
static size_t node_lines(const lines *l) {
    size_t n = 0;
    while (2 + n < l->n && starts(l->v[2 + n], "node ")) n++;
    return n;
}

/* The k-th whitespace-separated field of a line (into buf), or "" past the end. */
static const char *field(const char *line, int k, char *buf, size_t cap) {
    const char *p = line;
    for (int i = 0;; i++) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if (i == k || !*e) {
            size_t n = i == k ? (size_t)(e - p) : 0;
            if (n >= cap) n = cap - 1;
            memcpy(buf, p, n);
            buf[n] = 0;
            return buf;
        }
        p = e;
    }
}

static int n_fields(const char *line) {
    int n = 0;
    for (const char *p = line; *p;) {
        while (*p == ' ') p++;
        if (!*p) break;
        n++;
        while (*p && *p != ' ') p++;
    }
    return n;
}

/* Localizes the difference between the stored seal and the content's. */
static int explain(const Onnx__ModelProto *m, char *stored, char *actual, const char *path,
                   oc_err *err) {
    lines s = {0}, a = {0};
    split(stored, &s);
    split(actual, &a);
    char f1[64], f2[64];
    /* The content's text has one line per node of m, in order, then one per entry. */
    const size_t s_nodes = node_lines(&s), a_nodes = node_lines(&a);
    OC_ASSERT(a_nodes == (m->graph ? m->graph->n_node : 0));
    if (s.n < 2 || strcmp(field(s.v[0], 0, f1, sizeof f1), "outcore-seal") != 0 ||
        strcmp(field(s.v[0], 1, f2, sizeof f2), "1") != 0 || !starts(s.v[1], "header ")) {
        oc_fail(err, "%s: its outcore.seal is malformed (not a seal outcore-plan writes)", path);
        goto done;
    }
    if (strcmp(s.v[1], a.v[1]) != 0) {
        oc_fail(err,
                "%s: the model header (IR version, opsets, graph inputs, outputs or "
                "initializers) changed after it was written",
                path);
        goto done;
    }
    /* Nodes, by position. */
    for (size_t i = 0; i < s_nodes && i < a_nodes; i++) {
        const char *sl = s.v[2 + i], *al = a.v[2 + i];
        if (strcmp(sl, al) == 0) continue;
        const Onnx__NodeProto *n = m->graph->node[i];
        const char *name = n->name ? n->name : "";
        if (strcmp(field(sl, 2, f1, sizeof f1), field(al, 2, f2, sizeof f2)) != 0) {
            oc_fail(err,
                    "%s: node %zu ('%s') changed after it was written: its name, op, domain, "
                    "inputs or outputs",
                    path, i, name);
            goto done;
        }
        int sa = n_fields(sl) - 3, aa = n_fields(al) - 3;
        for (int k = 0; k < sa && k < aa; k++)
            if (strcmp(field(sl, 3 + k, f1, sizeof f1), field(al, 3 + k, f2, sizeof f2)) != 0) {
                oc_fail(err, "%s: node %zu ('%s'): attribute '%s' changed after it was written",
                        path, i, name, n->attribute[k]->name ? n->attribute[k]->name : "");
                goto done;
            }
        oc_fail(err,
                "%s: node %zu ('%s'): attributes added or removed after it was written (%d now, "
                "%d sealed)",
                path, i, name, aa, sa);
        goto done;
    }
    if (s_nodes != a_nodes) {
        oc_fail(err, "%s: nodes added or removed after it was written (%zu now, %zu sealed)", path,
                a_nodes, s_nodes);
        goto done;
    }
    /* Metadata, by key: each entry of the content against the first unused sealed one. */
    size_t s0 = 2 + s_nodes, a0 = 2 + a_nodes;
    bool *used = oc_calloc(s.n + 1, 1), said = false;
    for (size_t j = a0; j < a.n && !said; j++) {
        const char *key = a.v[j] + 14; /* after "meta xxxxxxxx " */
        size_t hit = 0;
        for (size_t i = s0; i < s.n && !hit; i++)
            if (!used[i] && starts(s.v[i], "meta ") && strlen(s.v[i]) >= 14 &&
                strcmp(s.v[i] + 14, key) == 0)
                hit = i;
        if (hit) used[hit] = true;
        if (!hit || strncmp(s.v[hit], a.v[j], 13) != 0) {
            oc_fail(err, "%s: metadata entry '%s' %s after it was written", path, key,
                    hit ? "changed" : "added");
            said = true;
        }
    }
    for (size_t i = s0; i < s.n && !said; i++)
        if (!used[i]) {
            oc_fail(err, "%s: metadata entry '%s' removed after it was written", path,
                    strlen(s.v[i]) >= 14 ? s.v[i] + 14 : "");
            said = true;
        }
    oc_free(used);
    if (!said)
        oc_fail(err,
                "%s: its outcore.seal was edited (every item matches, the digest over them does "
                "not)",
                path);
done:
    oc_free(s.v), oc_free(a.v);
    return OC_ERR;
}

int model_seal_check(const Onnx__ModelProto *m, const char *path, oc_err *err) {
    if (m->n_metadata_props > MAX_META)
        return oc_fail(err, "%s: %zu metadata entries (at most %d)", path, m->n_metadata_props,
                       MAX_META);
    const char *stored = NULL;
    for (size_t k = 0; k < m->n_metadata_props; k++)
        if (is_seal(m->metadata_props[k])) {
            if (stored) return oc_fail(err, "%s: more than one %s entry", path, MODEL_SEAL_KEY);
            stored = m->metadata_props[k]->value ? m->metadata_props[k]->value : "";
        }
    if (!stored)
        return oc_fail(err,
                       "%s: no %s metadata: written by an older outcore-plan, or stripped "
                       "(write it again with outcore-plan)",
                       path, MODEL_SEAL_KEY);
    char *actual = model_seal_text(m);
    int rc = OC_OK;
    if (strcmp(actual, stored) != 0) {
        char *copy = oc_strdup(stored);
        rc = explain(m, copy, actual, path, err);
        oc_free(copy);
    }
    oc_free(actual);
    return rc;
}

int model_seal_rewrite(const uint8_t *buf, size_t len, uint8_t **out, size_t *out_len) {
    Onnx__ModelProto *m = len ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
    if (!m) return OC_ERR;
    /* Entries without the seal, plus a new one (the unpacked array is libc-owned). */
    Onnx__StringStringEntryProto **keep = oc_malloc((m->n_metadata_props + 1) * sizeof *keep);
    Onnx__StringStringEntryProto **orig = m->metadata_props;
    size_t n_orig = m->n_metadata_props, n = 0;
    for (size_t k = 0; k < n_orig; k++)
        if (!is_seal(orig[k])) keep[n++] = orig[k];
    m->metadata_props = keep;
    m->n_metadata_props = n;
    char *seal = model_seal_text(m);
    Onnx__StringStringEntryProto e = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    e.key = MODEL_SEAL_KEY;
    e.value = seal;
    keep[n] = &e;
    m->n_metadata_props = n + 1;
    *out_len = onnx__model_proto__get_packed_size(m);
    *out = oc_malloc(*out_len + 1);
    onnx__model_proto__pack(m, *out);
    m->metadata_props = orig, m->n_metadata_props = n_orig;
    oc_free(keep), oc_free(seal);
    onnx__model_proto__free_unpacked(m, NULL);
    return OC_OK;
}
