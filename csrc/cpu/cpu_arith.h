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

/* The narrow integer dtypes are computed in int64 and stored back:
 * bool as x != 0, uint8 and int32 keeping the low bits (rules.h). */
#define ST_BOOL(x) ((uint8_t)((x) != 0))
#define ST_U8(x) ((uint8_t)(x))

/* Conversions between dtypes, in two steps: LD_<from> gives the source's
 * natural value (float for float32, float16 and bfloat16, double for
 * float64, int64 for the integers and bool), KIND_<from> says which (F, D
 * or I), and ST<kind>_<to> stores such a value as the destination (one
 * rounding, the rules of rules.h for floating -> integer). */
#define LD_f32(x) (x)
#define LD_f16(x) pygpu_half_to_float(x)
#define LD_f64(x) (x)
#define LD_i64(x) (x)
#define LD_b8(x) ((int64_t)(x))
#define LD_u8(x) ((int64_t)(x))
#define LD_i32(x) ((int64_t)(x))
#define LD_bf16(x) pygpu_bf16_to_float(x)
#define KIND_f32 F
#define KIND_f16 F
#define KIND_f64 D
#define KIND_i64 I
#define KIND_b8 I
#define KIND_u8 I
#define KIND_i32 I
#define KIND_bf16 F

#define STF_f32(x) (x)
#define STF_f16(x) pygpu_float_to_half(x)
#define STF_f64(x) ((double)(x))
#define STF_i64(x) pygpu_f32_to_i64(x)
#define STF_b8(x) ST_BOOL(x)
#define STF_u8(x) pygpu_f64_to_u8((double)(x))
#define STF_i32(x) pygpu_f64_to_i32((double)(x))
#define STF_bf16(x) pygpu_float_to_bf16(x)
#define STD_f32(x) ((float)(x))
#define STD_f16(x) pygpu_double_to_half(x)
#define STD_f64(x) (x)
#define STD_i64(x) pygpu_f64_to_i64(x)
#define STD_b8(x) ST_BOOL(x)
#define STD_u8(x) pygpu_f64_to_u8(x)
#define STD_i32(x) pygpu_f64_to_i32(x)
#define STD_bf16(x) pygpu_double_to_bf16(x)
#define STI_f32(x) ((float)(x))
#define STI_f16(x) i64_to_half(x)
#define STI_f64(x) ((double)(x))
#define STI_i64(x) (x)
#define STI_b8(x) ST_BOOL(x)
#define STI_u8(x) ST_U8(x)
#define STI_i32(x) pygpu_i64_to_i32(x)
#define STI_bf16(x) pygpu_double_to_bf16((double)(x))

#define PYGPU_CAT3_(a, b, c) a##b##c
#define PYGPU_CAT3(a, b, c) PYGPU_CAT3_(a, b, c)
/* x of dtype `from` converted to dtype `to` (short names as above). */
#define PYGPU_CONVERT(to, from, x)                                           \
    PYGPU_CAT3(ST, KIND_##from, _##to)(LD_##from(x))

#endif /* PYGPU_CPU_ARITH_H */
