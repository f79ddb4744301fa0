/* strmap.c — see strmap.h. FNV-1a hashes, linear probing, load <= 1/2. */
#include "ir/strmap.h"

#include <stdint.h>
#include <string.h>

#include "ir/common.h"

typedef struct slot {
    char *key; /* NULL: empty; owned */
    int value;
} slot;

struct strmap {
    slot *slots;
    size_t cap, count; /* cap a power of two */
};

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

strmap *strmap_new(void) {
    strmap *m = oc_calloc(1, sizeof *m);
    m->cap = 64;
    m->slots = oc_calloc(m->cap, sizeof *m->slots);
    return m;
}

void strmap_free(strmap *m) {
    if (!m) return;
    for (size_t i = 0; i < m->cap; i++) oc_free(m->slots[i].key);
    oc_free(m->slots);
    oc_free(m);
}

static slot *find(const strmap *m, const char *key) {
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)hash(key) & mask;; i = (i + 1) & mask)
        if (!m->slots[i].key || strcmp(m->slots[i].key, key) == 0) return &m->slots[i];
}

static void grow(strmap *m) {
    slot *old = m->slots;
    size_t old_cap = m->cap;
    m->cap *= 2;
    m->slots = oc_calloc(m->cap, sizeof *m->slots);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key) *find(m, old[i].key) = old[i];
    oc_free(old);
}

void strmap_put(strmap *m, const char *key, int value) {
    slot *s = find(m, key);
    if (!s->key) {
        if ((m->count + 1) * 2 > m->cap) {
            grow(m);
            s = find(m, key);
        }
        s->key = oc_strdup(key);
        m->count++;
    }
    s->value = value;
}

int *strmap_get(const strmap *m, const char *key) {
    slot *s = find(m, key);
    return s->key ? &s->value : NULL;
}

size_t strmap_count(const strmap *m) { return m->count; }
