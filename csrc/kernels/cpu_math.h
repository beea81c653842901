/* cpu_math.h - the CPU's float exp, log and tanh: branch-free, so that
 * gcc vectorizes the loops that call them (the C library's are a call per
 * element), each within 2 ulp of the C library over the whole float range
 * and equal to it at the edges (tests/ops/test_cpu_vector_math.py).
 * Plain C, for the host only: rules.h takes them as the float rules of
 * exp, log and tanh on the CPU, while the CUDA kernels keep CUDA's expf,
 * logf and tanhf. */
#ifndef PYGPU_CPU_MATH_H
#define PYGPU_CPU_MATH_H

#include <math.h>
#include <stdint.h>

/* exp in float: x = k ln2 + r with |r| <= ln2 / 2 (ln2 in two parts,
 * Cody and Waite, so k ln2 is exact), e^r by its Taylor polynomial to r^7
 * (truncation below 1e-8 relative), times 2^k as 2^h 2^(k - h), h = k / 2
 * rounded down, two normal floats built in the exponent bits for every k
 * from -150 to 128 (2^k itself is not one for k = 128 or k < -126): the
 * first product is exact, the second rounds once (subnormal results).
 * k is rounded by adding and subtracting 1.5 * 2^23.  x is clamped to
 * [-104, 88.8] first, where exp rounds to 0 and overflows to inf, and a
 * NaN (which the clamps turn into -104) is given back at the end.  Within
 * 2 ulp of exp, subnormal results included. */
static inline float pygpu_cpu_expf(float x)
{
    float xc = x > -104.0f ? x : -104.0f;
    xc = xc < 88.8f ? xc : 88.8f;
    float k = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
    float r = xc - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ki = (int32_t)k;
    int32_t h = ki >> 1;
    union {
        int32_t i;
        float f;
    } s1 = {.i = (h + 127) * (1 << 23)}, s2 = {.i = (ki - h + 127) * (1 << 23)};
    float e = p * s1.f * s2.f;
    return x != x ? x : e;
}

/* log in float: x = 2^k m with m in [sqrt(1/2), sqrt(2)) taken from
 * the bits (subnormals scaled by 2^23 first), f = m - 1 exact, log(1 + f) =
 * f - f^2/2 + f^3 R(f) with R of degree 8 fitted on Chebyshev nodes (0.84
 * ulp over every m), plus k ln2 in two parts (Cody and Waite).  Within
 * 2 ulp of log; log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN
 * stays NaN, as the C library's. */
static inline float pygpu_cpu_logf(float x)
{
    int tiny = x < 0x1p-126f;
    float xs = tiny ? x * 0x1p23f : x;
    union {
        uint32_t i;
        float f;
    } u = {.f = xs};
    /* Unsigned, so that no input (negative ones included, whose result
     * is replaced below) overflows a signed int; sqrt(1/2)'s bits. */
    int32_t k = (int32_t)(u.i - 0x3f3504f3u) >> 23;
    u.i -= (uint32_t)k << 23;
    float kf = (float)(k - (tiny ? 23 : 0));
    float f = u.f - 1.0f;
    float p = 7.150298375261994e-2f;
    p = p * f + -1.1570992493281138e-1f;
    p = p * f + 1.1661184753973225e-1f;
    p = p * f + -1.2411070160513821e-1f;
    p = p * f + 1.4249979661213613e-1f;
    p = p * f + -1.66684800768283e-1f;
    p = p * f + 2.0000705583226286e-1f;
    p = p * f + -2.4999989041302823e-1f;
    p = p * f + 3.333333121267826e-1f;
    float f2 = f * f;
    float r = f2 * f * p + kf * -2.12194440e-4f;
    r = r - 0.5f * f2;
    r = (r + f) + kf * 0.693359375f;
    r = x < 0.0f ? NAN : r;
    r = x == 0.0f ? -INFINITY : r;
    r = x == INFINITY ? INFINITY : r;
    return x != x ? x : r;
}

/* tanh in float: for |x| < 0.625, x P(x^2) with P of degree 5 fitted
 * to tanh(x)/x on Chebyshev nodes; above, 1 - 2 / (e^2|x| + 1) with x's
 * sign.  Within 2 ulp of tanh (1.3 ulp measured for each part with an
 * exact e^x); +-inf give +-1, NaN stays NaN, -0.0 stays -0.0. */
static inline float pygpu_cpu_tanhf(float x)
{
    float a = fabsf(x);
    float t = x * x;
    float p = -5.664775373541223e-3f;
    p = p * t + 2.0595679976395803e-2f;
    p = p * t + -5.3722679349167524e-2f;
    p = p * t + 1.333115016149651e-1f;
    p = p * t + -3.33332616418121e-1f;
    p = p * t + 9.999999961636131e-1f;
    float big = 1.0f - 2.0f / (pygpu_cpu_expf(2.0f * a) + 1.0f);
    return a < 0.625f ? x * p : copysignf(big, x);
}

#endif /* PYGPU_CPU_MATH_H */
