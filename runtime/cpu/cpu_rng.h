/* cpu_rng.h — the counter-based random numbers of Dropout.
 *
 * A value is a pure function of (seed, step, node name, element index): no
 * state, so a recomputed Dropout (or a kernel run on another thread, or a
 * later run with the same seed) reproduces the mask bit for bit.
 *
 *   uint64_t key = cpu_rng_key(seed, step, node->name);
 *   for (i...) keep[i] = cpu_rng_uniform(key, i) >= ratio;
 *
 * The generator is splitmix64's finaliser (a bijective 64-bit mixer) applied
 * to key + golden-ratio * (index + 1); the key mixes seed, step and a 64-bit
 * FNV-1a hash of the node name through the same finaliser. */
#ifndef OC_CPU_RNG_H
#define OC_CPU_RNG_H

#include <stdint.h>

#include "ir/ir.h"

/* 64-bit FNV-1a of a NUL-terminated string. */
uint64_t cpu_rng_hash_name(const char *name);
/* Key of one node at one training step of one run. */
uint64_t cpu_rng_key(uint64_t seed, int64_t step, const char *node_name);
/* The name a Dropout node's mask is keyed by: its own, or for a recompute clone
 * (planner/rewrite.h) the original's (attribute outcore_recompute_of), so the
 * clone reproduces the original mask on every backend. */
const char *cpu_rng_key_name(const ir_node *n);
/* The 64-bit random value of element index under key. */
uint64_t cpu_rng_u64(uint64_t key, uint64_t index);
/* Uniform float in [0, 1) with 24 random bits. */
float cpu_rng_uniform(uint64_t key, uint64_t index);

#endif
