/* cpu_arith.h - what the CPU loops (cpu_elementwise.c, cpu_linear.c) add
 * to the scalar rules of kernels/rules.h: the float16 conversions of
 * half.h and the conversions the loops name.  Everything is a macro or
 * static inline, so the loops that use it still vectorize.
 */
#ifndef PYGPU_CPU_ARITH_H
#define PYGPU_CPU_ARITH_H

#include <stdint.h>

#include "cpu/half.h"
#include "kernels/rules.h"

#define AS_IS(x) (x)

/* int64 -> float16: an int64 beyond 2^53 rounds in the double, but all of
 * those are far above 65520 and become Inf either way, so the result is
 * still correctly rounded. */
static inline uint16_t i64_to_half(int64_t x)
{
    return pygpu_double_to_half((double)x);
}

#endif /* PYGPU_CPU_ARITH_H */
