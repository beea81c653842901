/* bfloat16.h - bfloat16 <-> float / double, written once for the CPU
 * loops, the CUDA kernels and the self-tests (like rules.h and philox.h).
 *
 * A bfloat16 is stored as its bit pattern in a uint16_t: the top half of
 * a float32, sign (1) | exponent (8, bias 127) | mantissa (7).  Widening
 * is exact (a shift).  Narrowing rounds to nearest, ties to even, as
 * CUDA's __float2bfloat16_rn and torch do; NaN stays NaN (its top
 * mantissa bits kept, the quiet bit set), and values past the largest
 * bfloat16 by half a unit become Inf.  Everything works on integer bit
 * patterns, so the results do not depend on the FPU's flush-to-zero
 * flags, and the CPU and the GPU give the same bits.
 */
#ifndef PYGPU_BFLOAT16_H
#define PYGPU_BFLOAT16_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define PYGPU_BF16_RULE static inline __host__ __device__
#else
#define PYGPU_BF16_RULE static inline
#endif

PYGPU_BF16_RULE uint32_t pygpu_bf16_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* bfloat16 -> float: exact. */
PYGPU_BF16_RULE float pygpu_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* float -> bfloat16, round to nearest even.  Adding 0x7fff plus the
 * lowest kept bit rounds the low 16 bits away; a carry correctly bumps
 * the exponent, up to Inf. */
PYGPU_BF16_RULE uint16_t pygpu_float_to_bf16(float f)
{
    uint32_t u = pygpu_bf16_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((u >> 16) | 0x0040u); /* NaN: quiet */
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* double -> bfloat16, rounded once from the double (through float would
 * round twice). */
PYGPU_BF16_RULE uint16_t pygpu_double_to_bf16(double d)
{
    uint64_t x;
    memcpy(&x, &d, sizeof x);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t a = x & 0x7fffffffffffffffull;
    if (a >= 0x7ff0000000000000ull) {
        if (a == 0x7ff0000000000000ull) {
            return (uint16_t)(sign | 0x7f80u);
        }
        return (uint16_t)(sign | 0x7fc0u | ((a >> 45) & 0x7fu));
    }
    if (a >= 0x47eff00000000000ull) {
        /* |d| >= (2 - 2^-8) * 2^127, halfway between the largest
         * bfloat16 and 2^128: Inf (the tie goes to the even pattern). */
        return (uint16_t)(sign | 0x7f80u);
    }
    if (a >= 0x3810000000000000ull) {
        /* Normal (|d| >= 2^-126): rebias 1023 -> 127, round away the low
         * 45 bits with ties to even. */
        a -= (uint64_t)(1023 - 127) << 52;
        a += ((1ull << 44) - 1u) + ((a >> 45) & 1u);
        return (uint16_t)(sign | (uint16_t)(a >> 45));
    }
    /* Subnormal or zero: round(|d| / 2^-133) = round(m >> (942 - e)), m
     * the 53-bit significand; below 2^-134 (e < 889) it is zero. */
    uint64_t e = a >> 52;
    if (e < 889u) {
        return sign;
    }
    uint64_t m = (a & 0xfffffffffffffull) | (1ull << 52);
    uint64_t shift = 942u - e;                      /* 46 .. 53 */
    uint64_t q = m >> shift;
    uint64_t rem = m & ((1ull << shift) - 1u);
    uint64_t halfway = 1ull << (shift - 1u);
    q += (uint64_t)(rem > halfway) | ((uint64_t)(rem == halfway) & q);
    return (uint16_t)(sign | (uint16_t)q);
}

#endif /* PYGPU_BFLOAT16_H */
