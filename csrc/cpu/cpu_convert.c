/* cpu_convert.c - CPU loops of dtype conversion (copy between any two of
 * the eight dtypes, and same-dtype rows) and fill: the rows that the
 * strided copy (cpu_copy.c), masked copies and mixed-dtype ops call.
 *
 * A conversion loads the source's natural value and stores it with the
 * destination's rule (PYGPU_CONVERT, cpu_arith.h): float -> bool is
 * x != 0 (NaN is true), floating -> integers truncates toward zero with
 * rules.h's values out of range, integers wrap to narrower ones, and
 * float16 / bfloat16 round to nearest even once.  A same-dtype copy moves
 * the bytes (NaN payloads and signalling NaNs are kept).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_arith.h"
#include "cpu/cpu_half.h"
#include "cpu/cpu_loops.h"
#include "kernels/kernels.h"

#define T_f32 float
#define T_f16 uint16_t
#define T_f64 double
#define T_i64 int64_t
#define T_b8 uint8_t
#define T_u8 uint8_t
#define T_i32 int32_t
#define T_bf16 uint16_t
/* float32, float16 and bfloat16 by number, so that the loops below can
 * test at compile time for the conversions cpu_half.c makes whole runs
 * of (through F16C for float16). */
#define ID_f32 1
#define ID_f16 2
#define ID_f64 3
#define ID_i64 4
#define ID_b8 5
#define ID_u8 6
#define ID_i32 7
#define ID_bf16 8
#define IS(to, from, a, b) (ID_##to == ID_##a && ID_##from == ID_##b)

/* copy_<to>_<from> over one row. */
#define COPY_LOOP(to, from)                                                  \
    static void copy_##to##_##from(char *const *p, const int64_t *s,         \
                                   int64_t n, const void *ctx)               \
    {                                                                        \
        T_##to *o = (T_##to *)p[0];                                          \
        const T_##from *a = (const T_##from *)p[1];                          \
        (void)ctx;                                                           \
        if (s[0] == 1 && s[1] == 1) {                                        \
            if (IS(to, from, f32, f16) || IS(to, from, f32, bf16)) {         \
                (ID_##from == ID_f16 ? pygpu_cpu_widen_f16                   \
                                     : pygpu_cpu_widen_bf16)(                \
                    (float *)o, (const uint16_t *)a, n);                     \
                return;                                                      \
            }                                                                \
            if (IS(to, from, f16, f32) || IS(to, from, bf16, f32)) {         \
                (ID_##to == ID_f16 ? pygpu_cpu_narrow_f16                    \
                                   : pygpu_cpu_narrow_bf16)(                 \
                    (uint16_t *)o, (const float *)a, n);                     \
                return;                                                      \
            }                                                                \
            for (int64_t i = 0; i < n; i++) {                                \
                o[i] = PYGPU_CONVERT(to, from, a[i]);                        \
            }                                                                \
        } else {                                                             \
            for (int64_t i = 0; i < n; i++) {                                \
                o[i * s[0]] = PYGPU_CONVERT(to, from, a[i * s[1]]);          \
            }                                                                \
        }                                                                    \
    }

#define COPY_FROM_ALL(to)                                                    \
    COPY_LOOP(to, f32) COPY_LOOP(to, f16) COPY_LOOP(to, f64)                 \
    COPY_LOOP(to, i64) COPY_LOOP(to, b8) COPY_LOOP(to, u8)                   \
    COPY_LOOP(to, i32) COPY_LOOP(to, bf16)

COPY_FROM_ALL(f32)
COPY_FROM_ALL(f16)
COPY_FROM_ALL(f64)
COPY_FROM_ALL(i64)
COPY_FROM_ALL(b8)
COPY_FROM_ALL(u8)
COPY_FROM_ALL(i32)
COPY_FROM_ALL(bf16)

#define FROM_ALL(to)                                                         \
    {[PYGPU_FLOAT32] = copy_##to##_f32, [PYGPU_FLOAT16] = copy_##to##_f16,   \
     [PYGPU_FLOAT64] = copy_##to##_f64, [PYGPU_INT64] = copy_##to##_i64,     \
     [PYGPU_BOOL] = copy_##to##_b8, [PYGPU_UINT8] = copy_##to##_u8,          \
     [PYGPU_INT32] = copy_##to##_i32, [PYGPU_BFLOAT16] = copy_##to##_bf16}

/* Indexed [out dtype][in dtype]. */
static const inner_loop copy_loops[PYGPU_NDTYPES][PYGPU_NDTYPES] = {
    [PYGPU_FLOAT32] = FROM_ALL(f32), [PYGPU_FLOAT16] = FROM_ALL(f16),
    [PYGPU_FLOAT64] = FROM_ALL(f64), [PYGPU_INT64] = FROM_ALL(i64),
    [PYGPU_BOOL] = FROM_ALL(b8),     [PYGPU_UINT8] = FROM_ALL(u8),
    [PYGPU_INT32] = FROM_ALL(i32),   [PYGPU_BFLOAT16] = FROM_ALL(bf16),
};

/* Same dtype: the element's bytes, by size (memmove where the two
 * overlap). */
#define SAME_LOOP(NAME, T)                                                   \
    static void NAME(char *const *p, const int64_t *s, int64_t n,            \
                     const void *ctx)                                        \
    {                                                                        \
        T *o = (T *)p[0];                                                    \
        const T *a = (const T *)p[1];                                        \
        (void)ctx;                                                           \
        if (s[0] == 1 && s[1] == 1) {                                        \
            memmove(o, a, (size_t)n * sizeof(T));                            \
        } else {                                                             \
            for (int64_t i = 0; i < n; i++) {                                \
                o[i * s[0]] = a[i * s[1]];                                   \
            }                                                                \
        }                                                                    \
    }

SAME_LOOP(same_1, uint8_t)
SAME_LOOP(same_2, uint16_t)
SAME_LOOP(same_4, uint32_t)
SAME_LOOP(same_8, uint64_t)

inner_loop pygpu_cpu_copy_loop(int out_dtype, int in_dtype)
{
    if (out_dtype == in_dtype) {
        switch (pygpu_cpu_dtype_size[out_dtype]) {
        case 1:
            return same_1;
        case 2:
            return same_2;
        case 4:
            return same_4;
        default:
            return same_8;
        }
    }
    return copy_loops[out_dtype][in_dtype];
}

/* ----------------------------------------------------------------- fill */

#define FILL_LOOP(T, out, v, n)                                              \
    do {                                                                     \
        T *o_ = (T *)(out);                                                  \
        const T v_ = (v);                                                    \
        for (int64_t i = 0; i < (n); i++) {                                  \
            o_[i] = v_;                                                      \
        }                                                                    \
    } while (0)

/* The value as the dtype: floating ones from the double, the integers
 * from the int64 (wrapping), bool true for any nonzero value. */
void pygpu_cpu_fill(int dtype, void *out, pygpu_scalar_value value,
                    int64_t n)
{
    switch (dtype) {
    case PYGPU_FLOAT32:
        FILL_LOOP(float, out, (float)value.f, n);
        break;
    case PYGPU_FLOAT16:
        FILL_LOOP(uint16_t, out, pygpu_double_to_half(value.f), n);
        break;
    case PYGPU_FLOAT64:
        FILL_LOOP(double, out, value.f, n);
        break;
    case PYGPU_INT64:
        FILL_LOOP(int64_t, out, value.i, n);
        break;
    case PYGPU_BOOL:
        FILL_LOOP(uint8_t, out, value.f != 0 || value.i != 0, n);
        break;
    case PYGPU_UINT8:
        FILL_LOOP(uint8_t, out, ST_U8(value.i), n);
        break;
    case PYGPU_INT32:
        FILL_LOOP(int32_t, out, pygpu_i64_to_i32(value.i), n);
        break;
    case PYGPU_BFLOAT16:
        FILL_LOOP(uint16_t, out, pygpu_double_to_bf16(value.f), n);
        break;
    default:
        break;
    }
}
