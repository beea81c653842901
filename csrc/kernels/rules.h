/* rules.h - the scalar rule of every elementwise op, written once.
 *
 * Plain C, no Python.h, like philox.h: included by the CPU loops (C), the
 * CUDA kernels (nvcc, where every rule is __host__ __device__) and the
 * kernel self-tests, so that all three compute one value the same way.
 *
 * Each op `name` of the lists in kernels.h has one rule per compute type:
 *     pygpu_<name>_f (float), pygpu_<name>_d (double), pygpu_<name>_i (int64)
 * float16 is computed in float: it is loaded exactly, the float rule runs,
 * and the result is rounded once to float16 (half.h on the CPU, the CUDA
 * intrinsics on the GPU; both round to nearest even).
 *
 * The rules the tests pin down: int64 arithmetic wraps around (two's
 * complement, through uint64) instead of overflowing; x / 0 is 0 and
 * x / -1 is the wrapped negation, so no input traps; relu keeps NaN and
 * -0.0; abs clears the sign bit (-0.0 gives 0.0, NaN stays NaN) and
 * INT64_MIN stays INT64_MIN; round is half to even; sign gives NaN for
 * NaN and 0.0 for -0.0 (NumPy's sign); floating to int64 truncates
 * toward zero and gives INT64_MIN for NaN, the infinities and anything out
 * of range.
 */
#ifndef PYGPU_RULES_H
#define PYGPU_RULES_H

#include <math.h>
#include <stdint.h>

#include "kernels.h"
#if !defined(__CUDACC__)
#include "cpu_math.h"
#endif

#if defined(__CUDACC__)
#define PYGPU_RULE static inline __host__ __device__
#else
#define PYGPU_RULE static inline
#endif

/* ------------------------------------------------------------ binary */

PYGPU_RULE float pygpu_add_f(float x, float y) { return x + y; }
PYGPU_RULE float pygpu_sub_f(float x, float y) { return x - y; }
PYGPU_RULE float pygpu_mul_f(float x, float y) { return x * y; }
PYGPU_RULE float pygpu_div_f(float x, float y) { return x / y; }

PYGPU_RULE double pygpu_add_d(double x, double y) { return x + y; }
PYGPU_RULE double pygpu_sub_d(double x, double y) { return x - y; }
PYGPU_RULE double pygpu_mul_d(double x, double y) { return x * y; }
PYGPU_RULE double pygpu_div_d(double x, double y) { return x / y; }

PYGPU_RULE int64_t pygpu_add_i(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x + (uint64_t)y);
}

PYGPU_RULE int64_t pygpu_sub_i(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x - (uint64_t)y);
}

PYGPU_RULE int64_t pygpu_mul_i(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x * (uint64_t)y);
}

/* Truncating division; INT64_MIN / -1 wraps instead of raising SIGFPE. */
PYGPU_RULE int64_t pygpu_div_i(int64_t x, int64_t y)
{
    if (y == 0) {
        return 0;
    }
    if (y == -1) {
        return pygpu_sub_i(0, x);
    }
    return x / y;
}

/* pow, maximum, minimum, fmod, remainder and floor_divide, as torch.
 * pow is the C library's in floating point (pow(nan, 0) is 1); int64 pow
 * is repeated squaring with wrap-around, and a negative exponent gives
 * 1 for a base of 1, +-1 for -1 and 0 otherwise (torch's tensor-exponent
 * rule; the front end refuses negative int scalar exponents). */
PYGPU_RULE float pygpu_pow_f(float x, float y) { return powf(x, y); }
PYGPU_RULE double pygpu_pow_d(double x, double y) { return pow(x, y); }
PYGPU_RULE int64_t pygpu_pow_i(int64_t x, int64_t y)
{
    if (y < 0) {
        return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    }
    uint64_t r = 1, b = (uint64_t)x;
    while (y) {
        if (y & 1) {
            r *= b;
        }
        y >>= 1;
        b *= b;
    }
    return (int64_t)r;
}

/* NaN in either operand gives NaN; otherwise the first operand when the
 * two compare equal (maximum(-0.0, 0.0) is -0.0), as torch. */
PYGPU_RULE float pygpu_maximum_f(float x, float y)
{
    return x != x ? x : y != y ? y : x < y ? y : x;
}
PYGPU_RULE double pygpu_maximum_d(double x, double y)
{
    return x != x ? x : y != y ? y : x < y ? y : x;
}
PYGPU_RULE int64_t pygpu_maximum_i(int64_t x, int64_t y)
{
    return x < y ? y : x;
}
PYGPU_RULE float pygpu_minimum_f(float x, float y)
{
    return x != x ? x : y != y ? y : y < x ? y : x;
}
PYGPU_RULE double pygpu_minimum_d(double x, double y)
{
    return x != x ? x : y != y ? y : y < x ? y : x;
}
PYGPU_RULE int64_t pygpu_minimum_i(int64_t x, int64_t y)
{
    return y < x ? y : x;
}

/* fmod has the sign of the dividend, remainder that of the divisor.  On
 * int64 a zero divisor gives 0 and -1 gives 0 (no trap); the front end
 * refuses a zero int scalar divisor, as torch's CPU does. */
PYGPU_RULE float pygpu_fmod_f(float x, float y) { return fmodf(x, y); }
PYGPU_RULE double pygpu_fmod_d(double x, double y) { return fmod(x, y); }
PYGPU_RULE int64_t pygpu_fmod_i(int64_t x, int64_t y)
{
    return y == 0 || y == -1 ? 0 : x % y;
}
PYGPU_RULE float pygpu_remainder_f(float x, float y)
{
    float r = fmodf(x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
PYGPU_RULE double pygpu_remainder_d(double x, double y)
{
    double r = fmod(x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
PYGPU_RULE int64_t pygpu_remainder_i(int64_t x, int64_t y)
{
    int64_t r = pygpu_fmod_i(x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

/* Division rounded toward -inf, computed as torch does: from fmod, so
 * that floor_divide(x, y) * y + remainder(x, y) is x where it can be; a
 * zero divisor gives x / 0 (+-inf or NaN).  int64: x / 0 is 0 and
 * INT64_MIN // -1 wraps (pygpu_div_i). */
PYGPU_RULE float pygpu_floor_divide_f(float x, float y)
{
    if (y == 0) {
        return x / y;
    }
    float m = fmodf(x, y);
    float d = (x - m) / y;
    if (m != 0 && (y < 0) != (m < 0)) {
        d -= 1;
    }
    if (d == 0) {
        return copysignf(0.0f, x / y);
    }
    float f = floorf(d);
    return d - f > 0.5f ? f + 1 : f;
}
PYGPU_RULE double pygpu_floor_divide_d(double x, double y)
{
    if (y == 0) {
        return x / y;
    }
    double m = fmod(x, y);
    double d = (x - m) / y;
    if (m != 0 && (y < 0) != (m < 0)) {
        d -= 1;
    }
    if (d == 0) {
        return copysign(0.0, x / y);
    }
    double f = floor(d);
    return d - f > 0.5 ? f + 1 : f;
}
PYGPU_RULE int64_t pygpu_floor_divide_i(int64_t x, int64_t y)
{
    int64_t q = pygpu_div_i(x, y);
    return y != 0 && y != -1 && (x < 0) != (y < 0) && q * y != x ? q - 1
                                                                   : q;
}

/* The bitwise ops, on int64 (bool, uint8 and int32 are computed in int64
 * and stored back, which gives their own bitwise results). */
PYGPU_RULE int64_t pygpu_bitwise_and_i(int64_t x, int64_t y) { return x & y; }
PYGPU_RULE int64_t pygpu_bitwise_or_i(int64_t x, int64_t y) { return x | y; }
PYGPU_RULE int64_t pygpu_bitwise_xor_i(int64_t x, int64_t y) { return x ^ y; }

/* ------------------------------------------------------- comparisons */

/* 1 or 0; NaN is unequal to everything (ne is 1, the others 0). */
#define PYGPU_COMPARE_RULES(name, OPER)                                      \
    PYGPU_RULE int pygpu_##name##_f(float x, float y) { return x OPER y; }   \
    PYGPU_RULE int pygpu_##name##_d(double x, double y) { return x OPER y; } \
    PYGPU_RULE int pygpu_##name##_i(int64_t x, int64_t y) { return x OPER y; }
PYGPU_COMPARE_RULES(eq, ==)
PYGPU_COMPARE_RULES(ne, !=)
PYGPU_COMPARE_RULES(lt, <)
PYGPU_COMPARE_RULES(le, <=)
PYGPU_COMPARE_RULES(gt, >)
PYGPU_COMPARE_RULES(ge, >=)

/* ------------------------------------------------------------- unary */

PYGPU_RULE float pygpu_neg_f(float x) { return -x; }
PYGPU_RULE double pygpu_neg_d(double x) { return -x; }
PYGPU_RULE int64_t pygpu_neg_i(int64_t x) { return pygpu_sub_i(0, x); }

/* x < 0 is false for NaN, so NaN passes through, and -0.0 stays -0.0, as
 * in PyTorch.  A plain compare and select: gcc vectorizes it without
 * -ffast-math. */
PYGPU_RULE float pygpu_relu_f(float x) { return x < 0 ? 0.0f : x; }
PYGPU_RULE double pygpu_relu_d(double x) { return x < 0 ? 0.0 : x; }
PYGPU_RULE int64_t pygpu_relu_i(int64_t x) { return x < 0 ? 0 : x; }

/* |x| clears the sign bit: -0.0 gives 0.0, NaN stays NaN; int64 wraps,
 * so abs(INT64_MIN) is INT64_MIN, as in torch. */
PYGPU_RULE float pygpu_abs_f(float x) { return fabsf(x); }
PYGPU_RULE double pygpu_abs_d(double x) { return fabs(x); }
PYGPU_RULE int64_t pygpu_abs_i(int64_t x)
{
    return x < 0 ? pygpu_neg_i(x) : x;
}

/* The float and double rules of `name` as the C library functions ffn
 * and dfn (CUDA's device functions on the GPU). */
#define PYGPU_LIBM_RULES(name, ffn, dfn)                                     \
    PYGPU_RULE float pygpu_##name##_f(float x) { return ffn(x); }            \
    PYGPU_RULE double pygpu_##name##_d(double x) { return dfn(x); }

/* Rounding keeps the sign of zero (floor(-0.5) is -1, ceil(-0.5) is
 * -0.0); round is half to even (rint in the default rounding mode), as
 * torch.round.  On int64 they are the identity. */
PYGPU_LIBM_RULES(floor, floorf, floor)
PYGPU_RULE int64_t pygpu_floor_i(int64_t x) { return x; }
PYGPU_LIBM_RULES(ceil, ceilf, ceil)
PYGPU_RULE int64_t pygpu_ceil_i(int64_t x) { return x; }
PYGPU_LIBM_RULES(round, rintf, rint)
PYGPU_RULE int64_t pygpu_round_i(int64_t x) { return x; }

/* -1, 0 or 1; NaN stays NaN and -0.0 gives 0.0, as NumPy's sign. */
PYGPU_RULE float pygpu_sign_f(float x)
{
    return x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x;
}
PYGPU_RULE double pygpu_sign_d(double x)
{
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x;
}
PYGPU_RULE int64_t pygpu_sign_i(int64_t x) { return (x > 0) - (x < 0); }

/* exp, log and tanh in float: CUDA's in the kernels, the CPU's own
 * vectorizable ones (cpu_math.h) in the CPU loops. */
#if defined(__CUDACC__)
#define PYGPU_CUDA_OR_CPU(cuda_fn, cpu_fn) cuda_fn
#else
#define PYGPU_CUDA_OR_CPU(cuda_fn, cpu_fn) cpu_fn
#endif
PYGPU_LIBM_RULES(exp, PYGPU_CUDA_OR_CPU(expf, pygpu_cpu_expf), exp)
PYGPU_LIBM_RULES(log, PYGPU_CUDA_OR_CPU(logf, pygpu_cpu_logf), log)
PYGPU_LIBM_RULES(tanh, PYGPU_CUDA_OR_CPU(tanhf, pygpu_cpu_tanhf), tanh)

/* The other floating functions: the C library's float and double
 * functions on the CPU, CUDA's (within 2 ulp) on the GPU.  Edge values are
 * the C library's: log(0) = -inf, log(-1) = NaN, sqrt(-1) = NaN,
 * rsqrt(0) = inf, rsqrt(-0.0) = -inf. */
PYGPU_LIBM_RULES(log1p, log1pf, log1p)
PYGPU_LIBM_RULES(expm1, expm1f, expm1)
PYGPU_LIBM_RULES(sqrt, sqrtf, sqrt)
PYGPU_RULE float pygpu_rsqrt_f(float x) { return 1.0f / sqrtf(x); }
PYGPU_RULE double pygpu_rsqrt_d(double x) { return 1.0 / sqrt(x); }
PYGPU_LIBM_RULES(sin, sinf, sin)
PYGPU_LIBM_RULES(cos, cosf, cos)
PYGPU_RULE float pygpu_reciprocal_f(float x) { return 1.0f / x; }
PYGPU_RULE double pygpu_reciprocal_d(double x) { return 1.0 / x; }

/* sigmoid(x) = 1 / (1 + exp(-x)); silu(x) = x * sigmoid(x), written as
 * x / (1 + exp(-x)), so silu(-inf) is NaN, as in torch.  In float the CPU
 * loops take cpu_math.h's (one exp of -|x|, one division, the same edge
 * values); the CUDA kernels these. */
PYGPU_RULE float pygpu_sigmoid_f(float x)
{
    return PYGPU_CUDA_OR_CPU(1.0f / (1.0f + pygpu_exp_f(-x)),
                             pygpu_cpu_sigmoidf(x));
}
PYGPU_RULE double pygpu_sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
PYGPU_RULE float pygpu_silu_f(float x)
{
    return PYGPU_CUDA_OR_CPU(x / (1.0f + pygpu_exp_f(-x)), pygpu_cpu_siluf(x));
}
PYGPU_RULE double pygpu_silu_d(double x) { return x / (1.0 + exp(-x)); }

/* The exact gelu, x * Phi(x) = x/2 * (1 + erf(x / sqrt(2))), written with
 * erfc(-x / sqrt(2)) = 1 + erf(x / sqrt(2)), which keeps its relative
 * accuracy for negative x, where 1 + erf cancels.  gelu(-inf) is NaN, as
 * in torch. */
PYGPU_RULE float pygpu_gelu_f(float x)
{
    return 0.5f * x * erfcf(-x * 0.70710678118654752f);
}
PYGPU_RULE double pygpu_gelu_d(double x)
{
    return 0.5 * x * erfc(-x * 0.70710678118654752440);
}

/* gelu's tanh approximation, torch's approximate='tanh':
 * x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). */
PYGPU_RULE float pygpu_gelu_tanh_f(float x)
{
    float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + pygpu_tanh_f(inner));
}
PYGPU_RULE double pygpu_gelu_tanh_d(double x)
{
    double inner = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + tanh(inner));
}

/* The derivatives of the two gelus (autograd's rules multiply the
 * gradient by them): Phi(x) + x phi(x), and for the tanh form, with
 * t = tanh(k (x + c x^3)), (1 + t) / 2 + x/2 (1 - t^2) k (1 + 3 c x^2). */
PYGPU_RULE float pygpu_gelu_grad_f(float x)
{
    return 0.5f * erfcf(-x * 0.70710678118654752f) +
           x * 0.39894228040143268f * expf(-0.5f * x * x);
}
PYGPU_RULE double pygpu_gelu_grad_d(double x)
{
    return 0.5 * erfc(-x * 0.70710678118654752440) +
           x * 0.39894228040143267794 * exp(-0.5 * x * x);
}
PYGPU_RULE float pygpu_gelu_tanh_grad_f(float x)
{
    float x2 = x * x;
    float t = pygpu_tanh_f(0.79788456080286536f * (x + 0.044715f * x2 * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) *
                                   0.79788456080286536f *
                                   (1.0f + 0.134145f * x2);
}
PYGPU_RULE double pygpu_gelu_tanh_grad_d(double x)
{
    double x2 = x * x;
    double t = tanh(0.79788456080286535588 * (x + 0.044715 * x2 * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) *
                                 0.79788456080286535588 *
                                 (1.0 + 0.134145 * x2);
}

/* ---------------------------------------------------------- conversion */

/* float -> int64 truncates toward zero.  C leaves NaN and values outside
 * the int64 range undefined (and the GPU saturates); they give INT64_MIN,
 * as x86 and PyTorch's CPU conversion do, everywhere. */
PYGPU_RULE int64_t pygpu_f64_to_i64(double x)
{
    if (x >= -0x1p63 && x < 0x1p63) {
        return (int64_t)x;
    }
    return INT64_MIN;
}

PYGPU_RULE int64_t pygpu_f32_to_i64(float x)
{
    return pygpu_f64_to_i64((double)x);
}

/* float -> int32 truncates toward zero; NaN, the infinities and values
 * outside the int32 range give INT32_MIN, as x86 and torch's CPU do.
 * float -> uint8 is the low byte of that int32 (300.0 -> 44, -1.0 -> 255,
 * NaN -> 0), torch's and NumPy's values on x86.  int64 -> int32 and
 * uint8 wrap (keep the low bits). */
PYGPU_RULE int32_t pygpu_f64_to_i32(double x)
{
    if (x > -2147483649.0 && x < 2147483648.0) {
        return (int32_t)x;
    }
    return INT32_MIN;
}

PYGPU_RULE uint8_t pygpu_f64_to_u8(double x)
{
    return (uint8_t)(uint32_t)pygpu_f64_to_i32(x);
}

PYGPU_RULE int32_t pygpu_i64_to_i32(int64_t x)
{
    uint32_t low = (uint32_t)(uint64_t)x;
    return low <= (uint32_t)INT32_MAX ? (int32_t)low
                                      : (int32_t)(low - 0x80000000u) +
                                            INT32_MIN;
}

/* The int64 rules of the floating functions, which the kernel tables
 * instantiate but the ops never reach (their int64 inputs promote to
 * float32): the function in double, converted back. */
#define PYGPU_INT_BY_DOUBLE(OP, name)                                        \
    PYGPU_RULE int64_t pygpu_##name##_i(int64_t x)                          \
    {                                                                        \
        return pygpu_f64_to_i64(pygpu_##name##_d((double)x));                \
    }
PYGPU_UNARY_FLOAT_OPS(PYGPU_INT_BY_DOUBLE)

#endif /* PYGPU_RULES_H */
