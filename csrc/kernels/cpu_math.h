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

/* c e^r for |r| <= 0.349 (ln2 / 2 and the rounding of k below), c = 1
 * or 2^-64 (a constant: the coefficients are scaled by it, exactly):
 * 1 + r + r^2 Q(r), Q of degree 4 fitted (Lawson's weighted least
 * squares on Chebyshev nodes) to 3e-9 relative (0.06 ulp).  Every step
 * is c times the unscaled one, bit for bit. */
static inline float pygpu_cpu_exp_poly(float r, float c)
{
    /* Q in Estrin's order (three deep instead of five), then the last
     * two of Horner's steps, which keep the error of the result: the
     * same seven multiply-adds and products, five deep instead of seven,
     * so the vector loops wait less on one chain of latencies. */
    float r2 = r * r;
    float q0 = (1.666651726105895e-1f * c) * r + 4.9999993219586e-1f * c;
    float q1 = (8.36912366938802e-3f * c) * r + 4.166842771682894e-2f * c;
    float q = (r2 * (1.3813756072798833e-3f * c) + q1) * r2 + q0;
    return (q * r + c) * r + c;
}

/* exp in float: x = k ln2 + r with |r| <= ln2 / 2 (ln2 in two parts,
 * Cody and Waite, so k ln2 is exact), e^r by pygpu_cpu_exp_poly (six
 * multiply-adds; a Taylor polynomial to r^7 took seven, 7% more time),
 * times 2^k as 2^h 2^(k - h), h = k / 2 rounded down, two normal floats
 * built in the exponent bits for every k from -150 to 128 (2^k itself is
 * not one for k = 128 or k < -126): the first product is exact, the
 * second rounds once (subnormal results).  k is rounded by adding and
 * subtracting 1.5 * 2^23, and read as an integer off the bits of the sum
 * (no float-to-int conversion, whose result a NaN would leave undefined).
 * x is clamped to [-104, 88.8] first, where exp rounds to 0 and overflows
 * to inf, by comparisons that pass a NaN through (x86's max and min return
 * their second operand then), so a NaN stays NaN at every step.  Within
 * 2 ulp of exp, subnormal results included. */
static inline float pygpu_cpu_expf(float x)
{
    float xc = -104.0f > x ? -104.0f : x;
    xc = 88.8f < xc ? 88.8f : xc;
    union {
        float f;
        int32_t i;
    } t = {.f = xc * 1.44269504f + 12582912.0f};
    float k = t.f - 12582912.0f;
    int32_t ki = t.i - 0x4b400000; /* k, read off the bits of t */
    float r = xc - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = pygpu_cpu_exp_poly(r, 1.0f);
    int32_t h = ki >> 1;
    union {
        int32_t i;
        float f;
    } s1 = {.i = (h + 127) * (1 << 23)}, s2 = {.i = (ki - h + 127) * (1 << 23)};
    return p * s1.f * s2.f;
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

/* e^x 2^64 c in float for x <= 0 (and -inf, NaN), c = 1 or 2^-64 (a
 * constant: the coefficients are scaled by it, exactly); the softmax
 * family's exp (pygpu_cpu_expf_neg: its arguments are x - max) and that
 * of sigmoid and silu.  Cheaper than pygpu_cpu_expf (no clamps, no NaN
 * select): k = x / ln2 rounded by adding 1.5 * 2^23, whose bits then hold
 * k in their low bits; r = x - k ln2 in two parts (Cody and Waite);
 * c e^r by pygpu_cpu_exp_poly; times
 * 2^(k + 64), built in the exponent bits: a normal float for
 * -190 <= k <= 63, so for c = 1 the product is exact, and for c = 2^-64
 * it rounds once (subnormal results come out right).  Below -131 (where
 * 2^(k + 64) would leave the exponent's range) the result is 0.  NaN
 * stays NaN (every step carries it). */
static inline float pygpu_cpu_expf_neg_scaled(float x, float c)
{
    float t = x * 1.44269504f + 12582912.0f;
    float k = t - 12582912.0f;
    float r = x - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = pygpu_cpu_exp_poly(r, c);
    union {
        float f;
        uint32_t i;
    } u = {.f = t}, s;
    s.i = (u.i + (127u + 64u)) << 23; /* t's bits are 0x4b400000 + k */
    return x < -131.0f ? 0.0f : p * s.f;
}

/* e^x for x <= 0 (and -inf, NaN).  -0.0 and 0.0 give 1.  Measured over
 * every float <= 0: within 1.18 ulp (0.88 in the fused, x86-64-v3
 * version), subnormal results included (stated: 1.5).  Not for x > 0:
 * the result is wrong from x = 44 on. */
static inline float pygpu_cpu_expf_neg(float x)
{
    return pygpu_cpu_expf_neg_scaled(x, 0x1p-64f);
}

/* sigmoid and silu in float on the CPU (the CUDA kernels keep
 * 1 / (1 + expf(-x)) and x / (1 + expf(-x))): with E = e^-|x| 2^64 and
 * e = E 2^-64 (pygpu_cpu_expf_neg_scaled, never overflowing),
 * sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below;
 * silu(x) = x / (1 + e) for x >= 0 and (x E) 2^-64 / (1 + e) below (x E
 * is a normal float, so a subnormal silu keeps its digits): one division
 * each.  Measured over every float (tests/native/exp_neg_check.c, in
 * the baseline and the fused x86-64-v3 builds): sigmoid within 2.41 ulp,
 * silu within 3.35, subnormal results included (1 / (1 + exp(-x)) gives
 * 0 from x = -88.7 on; the stated bounds are 2.5 and 3.5).
 * sigmoid(+-inf) = 1 / 0, silu(+inf) = inf, silu(-inf) = NaN (-inf * 0,
 * as torch's x / (1 + exp(-x))), NaN stays NaN. */
static inline float pygpu_cpu_sigmoidf(float x)
{
    float e = pygpu_cpu_expf_neg(-fabsf(x));
    float num = x >= 0.0f ? 1.0f : e;
    return num / (1.0f + e);
}

static inline float pygpu_cpu_siluf(float x)
{
    float big = pygpu_cpu_expf_neg_scaled(-fabsf(x), 1.0f);
    float num = x >= 0.0f ? x : x * big * 0x1p-64f;
    return num / (1.0f + big * 0x1p-64f);
}

#endif /* PYGPU_CPU_MATH_H */
