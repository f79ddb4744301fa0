/* cpu_rng.h — the counter-based random numbers of Dropout.
 *
 * A value is a pure function of (seed, step, node name, element index): no
 * state, so a recomputed Dropout (or a kernel run on another thread, or a
 * later run with the same seed) reproduces the mask bit for bit.
 *
 *   uint64_t key = cpu_rng_key(seed, step, op_args_of(n)->dropout.key_hash);
 *   for (i...) keep[i] = cpu_rng_uniform(key, i) >= ratio;
 *
 * The generator is splitmix64's finaliser (a bijective 64-bit mixer) applied
 * to key + golden-ratio * (index + 1); the key mixes seed, step and a 64-bit
 * FNV-1a hash of the node name (op_name_hash, decoded once at load: a
 * recompute clone carries its original's) through the same finaliser. */
#ifndef OC_CPU_RNG_H
#define OC_CPU_RNG_H

#include <stdint.h>

/* Key of one node at one training step of one run; name_hash: the node's
 * op_dropout_args.key_hash. */
uint64_t cpu_rng_key(uint64_t seed, int64_t step, uint64_t name_hash);
/* The seed's part of every key: cpu_rng_key(seed, step, h) ==
 * cpu_rng_key_from(cpu_rng_seeded(seed), step, h) (the cuda kernels finish a
 * key on the device, from the step in device memory). */
uint64_t cpu_rng_seeded(uint64_t seed);
uint64_t cpu_rng_key_from(uint64_t seeded, int64_t step, uint64_t name_hash);
/* The 64-bit random value of element index under key. */
uint64_t cpu_rng_u64(uint64_t key, uint64_t index);
/* Uniform float in [0, 1) with 24 random bits. */
float cpu_rng_uniform(uint64_t key, uint64_t index);

#endif
