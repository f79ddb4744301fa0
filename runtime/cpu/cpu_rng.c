/* cpu_rng.c — see cpu_rng.h. */
#include "cpu_rng.h"

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t cpu_rng_seeded(uint64_t seed) { return mix64(seed ^ 0x6a09e667f3bcc909ULL); }

uint64_t cpu_rng_key_from(uint64_t seeded, int64_t step, uint64_t name_hash) {
    return mix64(mix64(seeded ^ (uint64_t)step) ^ name_hash);
}

uint64_t cpu_rng_key(uint64_t seed, int64_t step, uint64_t name_hash) {
    return cpu_rng_key_from(cpu_rng_seeded(seed), step, name_hash);
}

uint64_t cpu_rng_u64(uint64_t key, uint64_t index) {
    return mix64(key + 0x9e3779b97f4a7c15ULL * (index + 1));
}

float cpu_rng_uniform(uint64_t key, uint64_t index) {
    return (float)(cpu_rng_u64(key, index) >> 40) * (1.0f / 16777216.0f);
}
