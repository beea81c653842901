/* sample.h - the draws past uniform and normal numbers (exponential,
 * integers in a range, Poisson), one element at a time, written once for
 * the CPU loops (cpu/cpu_sample.c) and the CUDA kernels (sample.cu), so
 * that both make the same numbers for the same Philox state.
 *
 * Element e of a draw belongs to counter c = offset + e / 4 and takes word
 * k = e % 4 of the blocks of c: sub-block 0 is pygpu_philox(c, seed), the
 * block of a uniform number; sub-block j > 0 runs the same rounds with j
 * in the counter's third word.  A draw of n numbers therefore takes
 * ceil(n / 4) counters, as rand does, and may be cut at multiples of 4
 * elements (the CPU's thread pool does).
 *
 * exponential: -ln(u) / lambd, u = ((w >> 8) + 1) 2^-24 in (0, 1], the
 *   logarithm normal.h's (-ln u is half the normal radius' square), so
 *   float32 / float16 / bfloat16 are the same bits on both sides; float64
 *   takes u = (w + 1) 2^-32 and the C library's (CUDA's) log, whose last
 *   bit may differ.
 * integer: low + (bits mod range), bits word k of sub-block 0 when the
 *   range fits 32 bits, else that word below word k of sub-block 1.
 * bernoulli: value when w 2^-32 < p (exact in double), else 0.
 * Poisson(rate): rate < 10: the count of uniforms u_j = (w_j + 1) 2^-32
 *   (word k of sub-block j = 0, 1, ...) whose running product stays above
 *   exp(-rate); rate >= 10: Hormann's transformed rejection (PTRS, "The
 *   transformed rejection method for generating Poisson random
 *   variables", 1993), two sub-blocks a try, ln k! by Stirling's series
 *   (a table below 10).  Plain IEEE double operations without fused
 *   multiply-adds; exp and log are the C library's (CUDA's), so a count
 *   may differ between the devices where a product or a test lands within
 *   an ulp of its bound.
 */
#ifndef PYGPU_SAMPLE_H
#define PYGPU_SAMPLE_H

#include "kernels/philox.h"

#ifdef __CUDA_ARCH__
#define PYGPU_DMUL(a, b) __dmul_rn((a), (b))
#define PYGPU_DADD(a, b) __dadd_rn((a), (b))
#else
#define PYGPU_DMUL(a, b) ((a) * (b))
#define PYGPU_DADD(a, b) ((a) + (b))
#endif

/* Exponential(lambd) from word w, as float (float32, float16, bfloat16
 * round this once more). */
PYGPU_HD float pygpu_exponential_f32(uint32_t w, double lambd)
{
    const float e = PYGPU_FMUL(pygpu_normal_radius2_f32(w), 0.5f);
    return (float)((double)e / lambd);
}

PYGPU_HD double pygpu_exponential_f64(uint32_t w, double lambd)
{
    const double u = ((double)w + 1.0) * (1.0 / 4294967296.0);
    return -log(u) / lambd;
}

/* low + (bits mod range) (range 0: 2^64), wrapping as uint64. */
PYGPU_HD int64_t pygpu_random_integer(uint32_t lo, uint32_t hi, int64_t low,
                                      uint64_t range)
{
    uint64_t bits;
    if (range != 0 && range <= 4294967296ull) {
        bits = (uint64_t)lo % range;
    }
    else {
        bits = ((uint64_t)hi << 32) | lo;
        if (range != 0) {
            bits %= range;
        }
    }
    return (int64_t)((uint64_t)low + bits);
}

/* Whether integers of this range need sub-block 1 too. */
PYGPU_HD int pygpu_integer_wide(uint64_t range)
{
    return range == 0 || range > 4294967296ull;
}

/* Whether word w falls below probability p: P = ceil(p 2^32) 2^-32. */
PYGPU_HD int pygpu_bernoulli(uint32_t w, double p)
{
    return (double)w * (1.0 / 4294967296.0) < p;
}

/* ln k! for k >= 0: a table below 10, else Stirling's series at x = k + 1
 * (error below 1e-12 there). */
PYGPU_HD double pygpu_log_factorial(double k)
{
    if (k < 10.0) {
        const double table[10] = {
            0.0, 0.0, 0.69314718055994531, 1.791759469228055,
            3.1780538303479458, 4.7874917427820458, 6.5792512120101012,
            8.5251613610654147, 10.604602902745251, 12.801827480081469};
        return table[(int)k];
    }
    const double x = PYGPU_DADD(k, 1.0);
    const double r = 1.0 / x, r2 = PYGPU_DMUL(r, r);
    const double series = PYGPU_DMUL(
        r, PYGPU_DADD(1.0 / 12.0,
                      PYGPU_DMUL(r2, PYGPU_DADD(-1.0 / 360.0,
                                                PYGPU_DMUL(r2, 1.0 / 1260.0)))));
    return PYGPU_DADD(
        PYGPU_DADD(PYGPU_DMUL(PYGPU_DADD(x, -0.5), log(x)), -x),
        PYGPU_DADD(0.91893853320467274, series));
}

/* Word k of sub-block j of counter c as a uniform in (0, 1]. */
PYGPU_HD double pygpu_sub_u01(uint64_t c, uint32_t j, int k, uint64_t seed)
{
    const pygpu_u32x4 w = pygpu_philox_sub(c, j, seed);
    return ((double)w.v[k] + 1.0) * (1.0 / 4294967296.0);
}

/* Poisson(rate) for word k of counter c; rate >= 0 (NaN gives NaN). */
PYGPU_HD double pygpu_poisson(double rate, uint64_t c, int k, uint64_t seed)
{
    if (!(rate > 0.0)) {
        return rate == 0.0 ? 0.0 : rate;
    }
    uint32_t j = 0;
    if (rate < 10.0) {
        const double limit = exp(-rate);
        double prod = 1.0, count = 0.0;
        for (;;) {
            prod = PYGPU_DMUL(prod, pygpu_sub_u01(c, j++, k, seed));
            if (!(prod > limit)) {
                return count;
            }
            count = PYGPU_DADD(count, 1.0);
        }
    }
    const double slam = sqrt(rate), loglam = log(rate);
    const double b = PYGPU_DADD(0.931, PYGPU_DMUL(2.53, slam));
    const double a = PYGPU_DADD(-0.059, PYGPU_DMUL(0.02483, b));
    const double invalpha = PYGPU_DADD(1.1239, 1.1328 / PYGPU_DADD(b, -3.4));
    const double vr = PYGPU_DADD(0.9277, -3.6224 / PYGPU_DADD(b, -2.0));
    for (;;) {
        /* U in (-1/2, 1/2) (never an end: us > 0), V in (0, 1]. */
        const pygpu_u32x4 wu = pygpu_philox_sub(c, j++, seed);
        const double u = PYGPU_DADD(
            PYGPU_DMUL(PYGPU_DADD((double)wu.v[k], 0.5), 1.0 / 4294967296.0),
            -0.5);
        const double v = pygpu_sub_u01(c, j++, k, seed);
        const double us = PYGPU_DADD(0.5, -fabs(u));
        const double kk = floor(PYGPU_DADD(
            PYGPU_DADD(PYGPU_DMUL(PYGPU_DADD(PYGPU_DMUL(2.0, a) / us, b), u),
                       rate),
            0.43));
        if (us >= 0.07 && v <= vr) {
            return kk;
        }
        if (kk < 0.0 || (us < 0.013 && v > us)) {
            continue;
        }
        const double lhs = PYGPU_DADD(
            PYGPU_DADD(log(v), log(invalpha)),
            -log(PYGPU_DADD(a / PYGPU_DMUL(us, us), b)));
        const double rhs = PYGPU_DADD(
            PYGPU_DADD(-rate, PYGPU_DMUL(kk, loglam)),
            -pygpu_log_factorial(kk));
        if (lhs <= rhs) {
            return kk;
        }
    }
}

#endif /* PYGPU_SAMPLE_H */
