/* philox.h - the Philox4x32-10 counter-based generator (Salmon et al.,
 * "Parallel random numbers: as easy as 1, 2, 3", SC 2011), shared by the CPU
 * loops and the CUDA kernels so that both make the same numbers.
 *
 * Element e of a call with state (seed, offset) takes word e % 4 of
 * philox(counter = offset + e / 4, key = seed).  Normal numbers come from
 * Box-Muller on the word pairs (0, 1) and (2, 3) of the same block: in
 * float (for float32, float16 and bfloat16) by normal.h's own logarithm
 * and sine / cosine, the same bits on the CPU and CUDA; in double by the
 * C library's (CUDA's) log, sin and cos.
 */
#ifndef PYGPU_PHILOX_H
#define PYGPU_PHILOX_H

#include <math.h>
#include <stdint.h>

#include "kernels/normal.h" /* PYGPU_HD and the float normal transform */

typedef struct pygpu_u32x4 {
    uint32_t v[4];
} pygpu_u32x4;

PYGPU_HD uint32_t pygpu_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi)
{
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

/* The generator's constants: round multipliers and key increments. */
#define PYGPU_PHILOX_M0 0xD2511F53u
#define PYGPU_PHILOX_M1 0xCD9E8D57u
#define PYGPU_PHILOX_W0 0x9E3779B9u
#define PYGPU_PHILOX_W1 0xBB67AE85u
#define PYGPU_PHILOX_ROUNDS 10

/* One round on the counter words c[0..3] under key words (k0, k1). */
PYGPU_HD void pygpu_philox_round(uint32_t *c0, uint32_t *c1, uint32_t *c2,
                                 uint32_t *c3, uint32_t k0, uint32_t k1)
{
    uint32_t hi0, hi1;
    uint32_t lo0 = pygpu_mulhilo32(PYGPU_PHILOX_M0, *c0, &hi0);
    uint32_t lo1 = pygpu_mulhilo32(PYGPU_PHILOX_M1, *c2, &hi1);
    uint32_t n0 = hi1 ^ *c1 ^ k0;
    uint32_t n2 = hi0 ^ *c3 ^ k1;
    *c0 = n0;
    *c1 = lo1;
    *c2 = n2;
    *c3 = lo0;
}

/* Sub-block `sub` of counter `counter`: the third counter word, so that
 * a draw needing more than four words per counter (kernels/sample.h) takes
 * them from sub-blocks 1, 2, ... without moving the offset. */
PYGPU_HD pygpu_u32x4 pygpu_philox_sub(uint64_t counter, uint32_t sub,
                                      uint64_t seed)
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
    uint32_t c2 = sub, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < PYGPU_PHILOX_ROUNDS; r++) {
        pygpu_philox_round(&c0, &c1, &c2, &c3, k0, k1);
        k0 += PYGPU_PHILOX_W0;
        k1 += PYGPU_PHILOX_W1;
    }
    pygpu_u32x4 out;
    out.v[0] = c0;
    out.v[1] = c1;
    out.v[2] = c2;
    out.v[3] = c3;
    return out;
}

/* Block `counter` of the stream of `seed` (sub-block 0). */
PYGPU_HD pygpu_u32x4 pygpu_philox(uint64_t counter, uint64_t seed)
{
    return pygpu_philox_sub(counter, 0, seed);
}

/* Uniform [0, 1) with 24 random bits (exact in float32). */
PYGPU_HD float pygpu_u01_f32(uint32_t x)
{
    return (float)(x >> 8) * (1.0f / 16777216.0f);
}

/* Uniform [0, 1) with 11 random bits (exact in float16, never rounds to 1). */
PYGPU_HD float pygpu_u01_f16(uint32_t x)
{
    return (float)(x >> 21) * (1.0f / 2048.0f);
}

/* Uniform [0, 1) with 8 random bits (exact in bfloat16, never rounds
 * to 1). */
PYGPU_HD float pygpu_u01_bf16(uint32_t x)
{
    return (float)(x >> 24) * (1.0f / 256.0f);
}

/* Uniform [0, 1) with 32 random bits. */
PYGPU_HD double pygpu_u01_f64(uint32_t x)
{
    return (double)x * (1.0 / 4294967296.0);
}

/* Standard normal from two words (Box-Muller): the radius from w0, the
 * angle from w1; `second` picks the sine branch.  u1 is taken in (0, 1] so
 * the logarithm is finite.  Both numbers of a pair share radius and angle,
 * which the CPU computes once per pair. */
PYGPU_HD double pygpu_normal_radius_f64(uint32_t w0)
{
    double u1 = ((double)w0 + 1.0) * (1.0 / 4294967296.0);
    return sqrt(-2.0 * log(u1));
}

PYGPU_HD double pygpu_normal_angle_f64(uint32_t w1)
{
    double u2 = (double)w1 * (1.0 / 4294967296.0);
    return 6.283185307179586 * u2;
}

PYGPU_HD double pygpu_normal_f64(uint32_t w0, uint32_t w1, int second)
{
    double r = pygpu_normal_radius_f64(w0);
    double t = pygpu_normal_angle_f64(w1);
    return second ? r * sin(t) : r * cos(t);
}

/* Element `second` (0: r cos, 1: r sin) of the float pair of (w0, w1),
 * normal.h's; the CPU and CUDA loops compute each pair once. */
PYGPU_HD float pygpu_normal_f32(uint32_t w0, uint32_t w1, int second)
{
    float z0, z1;
    pygpu_normal_pair_f32(w0, w1, &z0, &z1);
    return second ? z1 : z0;
}

#endif /* PYGPU_PHILOX_H */
