/* cpu_arith.h - the per-dtype scalar arithmetic of the CPU loops
 * (cpu_elementwise.c, cpu_linear.c): int64 wraps around instead of
 * overflowing, division by zero gives 0, float to int64 gives INT64_MIN
 * where C leaves it undefined, relu keeps NaN and -0.0.  Everything is a
 * macro or static inline, so the loops that use it still vectorize.
 */
#ifndef PYGPU_CPU_ARITH_H
#define PYGPU_CPU_ARITH_H

#include <stdint.h>

#include "half.h"

#define AS_IS(x) (x)

#define F_ADD(x, y) ((x) + (y))
#define F_SUB(x, y) ((x) - (y))
#define F_MUL(x, y) ((x) * (y))
#define F_DIV(x, y) ((x) / (y))

/* int64 through uint64, whose arithmetic is defined to wrap. */
static inline int64_t i64_add(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x + (uint64_t)y);
}

static inline int64_t i64_sub(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x - (uint64_t)y);
}

static inline int64_t i64_mul(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x * (uint64_t)y);
}

/* Truncating division.  x / 0 is defined as 0, and x / -1 is negation so
 * that INT64_MIN / -1 wraps instead of raising SIGFPE. */
static inline int64_t i64_div(int64_t x, int64_t y)
{
    if (y == 0) {
        return 0;
    }
    if (y == -1) {
        return i64_sub(0, x);
    }
    return x / y;
}

/* float -> int64 truncates toward zero.  C leaves NaN and values outside
 * the int64 range undefined; they give INT64_MIN, as x86 and PyTorch's CPU
 * conversion do, on every platform. */
static inline int64_t f64_to_i64(double x)
{
    if (x >= -0x1p63 && x < 0x1p63) {
        return (int64_t)x;
    }
    return INT64_MIN;
}

/* int64 -> float16: an int64 beyond 2^53 rounds in the double, but all of
 * those are far above 65520 and become Inf either way, so the result is
 * still correctly rounded. */
static inline uint16_t i64_to_half(int64_t x)
{
    return pygpu_double_to_half((double)x);
}

/* x < 0 is false for NaN, so NaN passes through, and -0.0 stays -0.0, both
 * as in PyTorch.  A plain compare and select: gcc vectorizes it without
 * -ffast-math. */
#define F_RELU(x) ((x) < 0 ? 0 : (x))

#endif /* PYGPU_CPU_ARITH_H */
