/* half.h — bfloat16 and IEEE float16 storage: conversions to and from
 * float32, rounding to nearest even (NaN stays NaN, overflow goes to
 * infinity, float16 subnormals kept), as PyTorch and CUDA convert. Arithmetic
 * is never done in half: values are widened, computed in float32, rounded
 * once when stored (the cpu backend's emulation, runtime/cpu; the cuda
 * backend's widening kernels include the bit-level part, OC_HALF_NO_IR).
 *
 *   uint16_t h = half_from_f32(IR_DTYPE_BFLOAT16, 3.14159f);   // 3.140625
 *   float f = half_to_f32(IR_DTYPE_BFLOAT16, h);
 */
#ifndef OC_HALF_H
#define OC_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define OC_HALF_FN __host__ __device__ static inline
#else
#define OC_HALF_FN static inline
#endif

OC_HALF_FN uint32_t half_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

OC_HALF_FN float half_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

OC_HALF_FN uint16_t bf16_from_f32(float f) {
    uint32_t u = half_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

OC_HALF_FN float bf16_to_f32(uint16_t h) { return half_bits_f32((uint32_t)h << 16); }

OC_HALF_FN uint16_t f16_from_f32(float f) {
    uint32_t u = half_f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
    if (a < 0x38800000u) {                                   /* below 2^-14: subnormal or 0 */
        if (a < 0x33000000u) return (uint16_t)sign;          /* under half of 2^-24: 0 */
        uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23);
        uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u); /* round the 13 dropped bits to even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

OC_HALF_FN float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return half_bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) { /* subnormal: m * 2^-24 */
        float f = (float)m * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    return half_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

#ifndef OC_HALF_NO_IR
#include "ir/ir.h"

/* dt is IR_DTYPE_BFLOAT16 or IR_DTYPE_FLOAT16. */
static inline uint16_t half_from_f32(ir_dtype dt, float f) {
    return dt == IR_DTYPE_BFLOAT16 ? bf16_from_f32(f) : f16_from_f32(f);
}

static inline float half_to_f32(ir_dtype dt, uint16_t h) {
    return dt == IR_DTYPE_BFLOAT16 ? bf16_to_f32(h) : f16_to_f32(h);
}

/* Rounds f as storing it in dt would (float32 and others: unchanged). */
static inline float half_round(ir_dtype dt, float f) {
    if (dt != IR_DTYPE_BFLOAT16 && dt != IR_DTYPE_FLOAT16) return f;
    return half_to_f32(dt, half_from_f32(dt, f));
}

#endif /* OC_HALF_NO_IR */

#endif
