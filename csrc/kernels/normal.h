/* normal.h - the float Box-Muller transform, written once for the CPU
 * loops and the CUDA kernels (through philox.h), so that both make the
 * same float32 / float16 / bfloat16 normal numbers bit for bit, whatever
 * the C library.  float64 normals keep the C library's log / sin / cos
 * (philox.h).
 *
 * A pair of normal numbers comes from two words (w0, w1):
 *   u1 = ((w0 >> 8) + 1) 2^-24 in (0, 1],  u2 = (w1 >> 8) 2^-24 in [0, 1),
 *   r = sqrt(-2 ln u1),  (r cos 2 pi u2, r sin 2 pi u2).
 * ln: u1 = 2^k m with m in [sqrt(1/2), sqrt(2)) taken from the bits,
 * ln u1 = k ln2 + ln(1 + f), f = m - 1 (exact), ln(1 + f) = f - f^2 / 2 +
 * f^3 R(f), R a degree-7 polynomial (near-minimax, relative error 6e-9);
 * the large terms (k ln2 in two parts, f, f^2 / 2) are added as exact
 * sums so that only the last addition rounds much.
 * sin / cos: u2 is a fraction of a turn, so the reduction is exact in
 * integers: q = nearest integer to 4 u2, f = u2 - q / 4 in [-1/8, 1/8],
 * sin(2 pi f) = 2 pi f + f^3 S(f^2), cos(2 pi f) = 1 - 2 pi^2 f^2 +
 * f^4 C(f^2) (S, C of degree 3 and 2, relative errors below 1e-10), the
 * leading products exact by splitting f and the constants, then the
 * quarter turn q swaps and negates them.
 *
 * Every float operation is a plain IEEE one rounded to nearest, without
 * fused multiply-adds: on the device through __fmul_rn / __fadd_rn (which
 * nvcc never contracts), on the host as * and + (host C is ISO C, where
 * gcc does not contract, and the CPU loops say fp-contract=off besides);
 * the square root is correctly rounded on both.  No branches: the CPU
 * loops vectorize it.
 *
 * Accuracy against the same formula in double, checked over all 2^24
 * inputs of each part: the radius within 0.89 ulp, cos and sin of the
 * angle within 0.75 ulp.  A normal number (r cos or r sin) within 2.53
 * ulp over 10^8 sampled pairs (6% of them beyond 1 ulp, 0.007% beyond 2).
 */
#ifndef PYGPU_NORMAL_H
#define PYGPU_NORMAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Device and host functions; on the host always inlined, also into the
 * CPU loops that carry their own floating-point options. */
#ifdef __CUDACC__
#define PYGPU_HD __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define PYGPU_HD static inline __attribute__((always_inline))
#else
#define PYGPU_HD static inline
#endif

/* Float arithmetic without contraction, and bit casts. */
#ifdef __CUDA_ARCH__
#define PYGPU_FMUL(a, b) __fmul_rn((a), (b))
#define PYGPU_FADD(a, b) __fadd_rn((a), (b))
#define PYGPU_FSUB(a, b) __fsub_rn((a), (b))
#define PYGPU_FSQRT(a) __fsqrt_rn(a)
#else
#define PYGPU_FMUL(a, b) ((a) * (b))
#define PYGPU_FADD(a, b) ((a) + (b))
#define PYGPU_FSUB(a, b) ((a) - (b))
#define PYGPU_FSQRT(a) sqrtf(a)
#endif

PYGPU_HD uint32_t pygpu_nf_bits(float x)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

PYGPU_HD float pygpu_nf_from_bits(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

/* The square of the radius, -2 ln u1 >= 0, u1 = ((w0 >> 8) + 1) 2^-24. */
PYGPU_HD float pygpu_normal_radius2_f32(uint32_t w0)
{
    const float u = PYGPU_FMUL((float)(int32_t)((w0 >> 8) + 1), 0x1p-24f);
    /* u = 2^k m: subtracting sqrt(1/2)'s bits carries into the exponent
     * field exactly where m would leave [sqrt(1/2), sqrt(2)).  k is in
     * [-24, 0]; the shift is of a positive number. */
    const uint32_t b = pygpu_nf_bits(u);
    const int32_t k = (int32_t)((b - 0x3f3504f3u + 0x40000000u) >> 23) - 128;
    const float m = pygpu_nf_from_bits(b - ((uint32_t)k << 23));
    const float f = PYGPU_FSUB(m, 1.0f); /* exact, |f| < 0.415 */
    const float fk = (float)k;
    /* ln(1 + f) = f - f^2 / 2 + f^3 R(f).  f^2 / 2 = h + t exactly, with
     * h = fh^2 / 2 exact (fh: f's top 12 bits); then f - h as an exact
     * sum (|f| > h). */
    const float fh = pygpu_nf_from_bits(pygpu_nf_bits(f) & 0xfffff000u);
    const float fl = PYGPU_FSUB(f, fh);
    const float h = PYGPU_FMUL(PYGPU_FMUL(fh, fh), 0.5f);
    const float t = PYGPU_FMUL(PYGPU_FMUL(fl, PYGPU_FADD(f, fh)), 0.5f);
    const float a = PYGPU_FSUB(f, h);
    const float ea = PYGPU_FSUB(PYGPU_FSUB(f, a), h);
    float r = -0.0763449669f;
    r = PYGPU_FADD(PYGPU_FMUL(r, f), 0.127615765f);
    r = PYGPU_FADD(PYGPU_FMUL(r, f), -0.131601825f);
    r = PYGPU_FADD(PYGPU_FMUL(r, f), 0.142017573f);
    r = PYGPU_FADD(PYGPU_FMUL(r, f), -0.166233569f);
    r = PYGPU_FADD(PYGPU_FMUL(r, f), 0.200012267f);
    r = PYGPU_FADD(PYGPU_FMUL(r, f), -0.250008196f);
    r = PYGPU_FADD(PYGPU_FMUL(r, f), 0.333333313f);
    const float cube = PYGPU_FMUL(PYGPU_FMUL(f, PYGPU_FMUL(f, f)), r);
    /* k ln2, ln2 = 0.693359375 (exact times k) - 2.12194440e-4, the
     * high part added to f - h as an exact sum (|k ln2| > |f - h|, or
     * k = 0). */
    const float hi = PYGPU_FMUL(fk, 0.693359375f);
    const float sum = PYGPU_FADD(hi, a);
    const float es = PYGPU_FSUB(a, PYGPU_FSUB(sum, hi));
    const float lo = PYGPU_FADD(
        PYGPU_FADD(PYGPU_FSUB(cube, t), PYGPU_FMUL(fk, -2.12194440e-4f)),
        PYGPU_FADD(ea, es));
    const float ln = PYGPU_FADD(sum, lo);
    return PYGPU_FMUL(ln, -2.0f);
}

/* cos and sin of 2 pi u2, u2 = (w1 >> 8) 2^-24. */
PYGPU_HD void pygpu_normal_cossin_f32(uint32_t w1, float *c, float *s)
{
    const uint32_t i = w1 >> 8;
    const uint32_t q = (i + (1u << 21)) >> 22; /* 0..4 quarter turns */
    const int32_t d = (int32_t)i - (int32_t)(q << 22); /* in [-2^21, 2^21) */
    const int32_t dl = d % 2048, dh = d - dl; /* 11 bits each, one sign */
    const float f = PYGPU_FMUL((float)d, 0x1p-24f);    /* exact */
    const float g = PYGPU_FMUL(f, f);
    float ps = 41.4846764f;
    ps = PYGPU_FADD(PYGPU_FMUL(ps, g), -76.6982956f);
    ps = PYGPU_FADD(PYGPU_FMUL(ps, g), 81.6052094f);
    ps = PYGPU_FADD(PYGPU_FMUL(ps, g), -41.3417015f);
    /* 2 pi f with 2 pi = 6.283203125 (12 bits) - 1.78178e-5: d in two
     * parts of at most 11 bits each, so both products with the 12-bit
     * part are exact and only the last sum rounds a large term. */
    const float a = 6.283203125f * 0x1p-24f;
    const float sn = PYGPU_FADD(
        PYGPU_FMUL((float)dh, a),
        PYGPU_FADD(PYGPU_FMUL((float)dl, a),
                   PYGPU_FMUL(f, PYGPU_FADD(PYGPU_FMUL(ps, g),
                                            -1.78178e-5f))));
    /* cos(2 pi f) = 1 - 2 pi^2 f^2 + f^4 C(f^2), with 2 pi^2 = 19.5 (6
     * bits) + 0.239208802 and f^2 = gh + gl, gh = dh'^2 2^-48 exact (dh'
     * = d to a multiple of 2^13, 9 bits): 1 - 19.5 gh is an exact sum of
     * exact terms, then the small rest is added. */
    const int32_t dl2 = d % 8192, dh2 = d - dl2;
    const float gh =
        PYGPU_FMUL(PYGPU_FMUL((float)dh2, (float)dh2), 0x1p-48f);
    const float gl = PYGPU_FMUL(
        PYGPU_FMUL((float)dl2, (float)(d + dh2)), 0x1p-48f);
    const float x = PYGPU_FMUL(gh, -19.5f);
    const float one = PYGPU_FADD(1.0f, x);
    const float eone = PYGPU_FSUB(x, PYGPU_FSUB(one, 1.0f));
    float pc = 59.3497009f;
    pc = PYGPU_FADD(PYGPU_FMUL(pc, g), -85.4471436f);
    pc = PYGPU_FADD(PYGPU_FMUL(pc, g), 64.9393616f);
    const float rest = PYGPU_FADD(
        PYGPU_FADD(PYGPU_FMUL(gl, -19.5f), PYGPU_FMUL(g, -0.239208802f)),
        PYGPU_FADD(PYGPU_FMUL(PYGPU_FMUL(g, g), pc), eone));
    const float cs = PYGPU_FADD(one, rest);
    /* Quarter turn q: (cos, sin) = (cs, sn), (-sn, cs), (-cs, -sn),
     * (sn, -cs), (cs, sn); swapped on odd q, signs flipped by bits. */
    const uint32_t swap = 0u - (q & 1u);
    const uint32_t cb = pygpu_nf_bits(cs), sb = pygpu_nf_bits(sn);
    const uint32_t cq = (cb & ~swap) | (sb & swap);
    const uint32_t sq = (sb & ~swap) | (cb & swap);
    *c = pygpu_nf_from_bits(cq ^ (((q + 1u) >> 1 & 1u) << 31));
    *s = pygpu_nf_from_bits(sq ^ ((q >> 1 & 1u) << 31));
}

/* The pair (r cos, r sin) of words (w0, w1), r the square root of
 * pygpu_normal_radius2_f32.  (The CPU loops take these steps in arrays,
 * with the square roots in a loop of their own: gcc vectorizes sqrtf only
 * where errno is off for the whole build.) */
PYGPU_HD void pygpu_normal_pair_f32(uint32_t w0, uint32_t w1, float *z0,
                                    float *z1)
{
    const float r = PYGPU_FSQRT(pygpu_normal_radius2_f32(w0));
    float c, s;
    pygpu_normal_cossin_f32(w1, &c, &s);
    *z0 = PYGPU_FMUL(r, c);
    *z1 = PYGPU_FMUL(r, s);
}

#endif /* PYGPU_NORMAL_H */
