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
 * INT64_MIN stays INT64_MIN; floating to int64 truncates toward zero and
 * gives INT64_MIN for NaN, the infinities and anything out of range.
 */
#ifndef PYGPU_RULES_H
#define PYGPU_RULES_H

#include <math.h>
#include <stdint.h>

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

#endif /* PYGPU_RULES_H */
