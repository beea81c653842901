/* half.h - IEEE 754 binary16 (float16) <-> float / double in portable C;
 * bfloat16's rules come with it (kernels/bfloat16.h, shared with CUDA).
 *
 * A float16 is stored as its bit pattern in a uint16_t:
 *     sign (1) | exponent (5, bias 15) | mantissa (10).
 * Everything here works on integer bit patterns, so the results do not
 * depend on the FPU's flush-to-zero / denormals-are-zero flags (which a
 * library built with -ffast-math may switch on for the whole process), and
 * conversions to float16 round to nearest, ties to even, like the hardware
 * instructions (F16C, CUDA's __float2half_rn) and NumPy.
 *
 * NaN stays NaN in both directions, quiet: narrowing keeps the top
 * mantissa bits and widening the whole payload, and both set the quiet
 * bit, as the hardware does.
 */
#ifndef PYGPU_HALF_H
#define PYGPU_HALF_H

#include <stdint.h>
#include <string.h>

#include "kernels/bfloat16.h"

/* Bit casts through memcpy: defined behaviour, and compiled to nothing. */
static inline uint32_t pygpu_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float pygpu_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint64_t pygpu_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* float16 -> float: exact (every float16 is a float).  Branch-free (the
 * cases are computed and selected, in 32-bit lanes), so that loops
 * reading float16 vectorize.  With mag = the exponent and mantissa moved
 * up to their float places:
 *  - normal: rebias the exponent 15 -> 127;
 *  - Inf or NaN: all-ones exponent, the mantissa (payload) as moved, a
 *    NaN made quiet (as F16C's vcvtph2ps does, cpu_half.c);
 *  - zero or subnormal (exponent 0): the value is m * 2^-24, m the
 *    mantissa, computed as 2^-14 * (1 + m / 2^10) - 2^-14; both are
 *    normal floats and the difference is exact, so no denormal arithmetic
 *    (which flush-to-zero flags could change) is involved. */
static inline float pygpu_half_to_float(uint16_t h)
{
    uint32_t w = (uint32_t)h << 16;
    uint32_t sign = w & 0x80000000u;
    int32_t mag = (int32_t)((w ^ sign) >> 3);
    uint32_t normal = (uint32_t)mag + ((127u - 15u) << 23);
    uint32_t quiet = mag > (0x7c00 << 13) ? 0x00400000u : 0u;
    uint32_t special = (uint32_t)mag | 0x7f800000u | quiet;
    float tiny = pygpu_f32_from_bits((uint32_t)mag + (113u << 23)) - 0x1p-14f;
    uint32_t bits = mag >= (0x7c00 << 13) ? special : normal;
    bits = mag < (0x0400 << 13) ? pygpu_f32_bits(tiny) : bits;
    return pygpu_f32_from_bits(sign | bits);
}

/* float -> float16, round to nearest even. */
static inline uint16_t pygpu_float_to_half(float f)
{
    uint32_t x = pygpu_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;   /* |f| */
    if (a >= 0x7f800000u) {
        if (a == 0x7f800000u) {
            return (uint16_t)(sign | 0x7c00u);
        }
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    }
    if (a >= 0x477ff000u) {
        /* |f| >= 65520, halfway between 65504 (the largest float16) and
         * 65536: rounds to Inf (the tie goes to the even pattern, Inf). */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (a >= 0x38800000u) {
        /* Normal result (|f| >= 2^-14).  Rebias the exponent 127 -> 15,
         * then round away the low 13 mantissa bits: adding 0xfff plus the
         * lowest kept bit rounds to nearest with ties to even, and a carry
         * out of the mantissa correctly bumps the exponent. */
        a -= (127u - 15u) << 23;
        a += 0xfffu + ((a >> 13) & 1u);
        return (uint16_t)(sign | (a >> 13));
    }
    /* Subnormal result or zero: the result is round(|f| / 2^-24).  With
     * |f| = m * 2^(e - 150) (m the 24-bit significand) that is
     * round(m >> (126 - e)).  Below 2^-25 (e < 102) everything rounds to
     * zero, ties included. */
    uint32_t e = a >> 23;
    if (e < 102u) {
        return sign;
    }
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;                      /* 14 .. 24 */
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    q += (rem > halfway) | ((rem == halfway) & q);  /* ties to even */
    return (uint16_t)(sign | q);    /* q == 0x400 is the smallest normal */
}

/* double -> float16, rounded once from the double (going through float
 * would round twice and could be off by one unit on ties). */
static inline uint16_t pygpu_double_to_half(double d)
{
    uint64_t x = pygpu_f64_bits(d);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t a = x & 0x7fffffffffffffffull;
    if (a >= 0x7ff0000000000000ull) {
        if (a == 0x7ff0000000000000ull) {
            return (uint16_t)(sign | 0x7c00u);
        }
        return (uint16_t)(sign | 0x7e00u | ((a >> 42) & 0x3ffu));
    }
    if (a >= 0x40effe0000000000ull) {
        /* |d| >= 65520: Inf, as in pygpu_float_to_half. */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (a >= 0x3f10000000000000ull) {
        /* Normal: rebias 1023 -> 15, round away the low 42 bits. */
        a -= (uint64_t)(1023 - 15) << 52;
        a += ((1ull << 41) - 1u) + ((a >> 42) & 1u);
        return (uint16_t)(sign | (uint16_t)(a >> 42));
    }
    /* Subnormal or zero: round(m >> (1051 - e)), m the 53-bit significand;
     * below 2^-25 (e < 998) the result is zero. */
    uint64_t e = a >> 52;
    if (e < 998u) {
        return sign;
    }
    uint64_t m = (a & 0xfffffffffffffull) | (1ull << 52);
    uint64_t shift = 1051u - e;                     /* 43 .. 53 */
    uint64_t q = m >> shift;
    uint64_t rem = m & ((1ull << shift) - 1u);
    uint64_t halfway = 1ull << (shift - 1u);
    q += (uint64_t)(rem > halfway) | ((uint64_t)(rem == halfway) & q);
    return (uint16_t)(sign | (uint16_t)q);
}

#endif /* PYGPU_HALF_H */
