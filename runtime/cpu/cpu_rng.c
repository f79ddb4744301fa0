/* cpu_rng.c — see cpu_rng.h. */
#include "cpu_rng.h"

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t cpu_rng_hash_name(const char *name) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t cpu_rng_key(uint64_t seed, int64_t step, const char *node_name) {
    uint64_t k = mix64(seed ^ 0x6a09e667f3bcc909ULL);
    k = mix64(k ^ (uint64_t)step);
    return mix64(k ^ cpu_rng_hash_name(node_name));
}

uint64_t cpu_rng_u64(uint64_t key, uint64_t index) {
    return mix64(key + 0x9e3779b97f4a7c15ULL * (index + 1));
}

float cpu_rng_uniform(uint64_t key, uint64_t index) {
    return (float)(cpu_rng_u64(key, index) >> 40) * (1.0f / 16777216.0f);
}

const char *cpu_rng_key_name(const ir_node *n) {
    return ir_attr_string(n, "outcore_recompute_of", n->name);
}
