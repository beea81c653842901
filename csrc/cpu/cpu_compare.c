/* cpu_compare.c - CPU loops of == != < <= > >=: two inputs of the
 * promoted dtype in, bool (one byte, 0 or 1) out, compared in the dtype's
 * compute type by the rules of rules.h.  Inputs of other dtypes are
 * converted a chunk at a time first (cpu_mixed.c).
 */
#include <stddef.h>
#include <stdint.h>

#include "cpu/cpu_arith.h"
#include "cpu/cpu_loops.h"
#include "kernels/kernels.h"

/* NAME(o, a, b): o = OP(a, b) over one row; b broadcast (stride 0, the
 * scalar case) has its own loop. */
#define COMPARE_LOOP(NAME, T, CT, LD, OP)                                    \
    static void NAME(char *const *p, const int64_t *s, int64_t n,            \
                     const void *ctx)                                        \
    {                                                                        \
        uint8_t *o = (uint8_t *)p[0];                                        \
        const T *a = (const T *)p[1];                                        \
        const T *b = (const T *)p[2];                                        \
        (void)ctx;                                                           \
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {                           \
            for (int64_t i = 0; i < n; i++) {                                \
                o[i] = (uint8_t)OP(LD(a[i]), LD(b[i]));                      \
            }                                                                \
        } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {                    \
            const CT y = LD(b[0]);                                           \
            for (int64_t i = 0; i < n; i++) {                                \
                o[i] = (uint8_t)OP(LD(a[i]), y);                             \
            }                                                                \
        } else {                                                             \
            for (int64_t i = 0; i < n; i++) {                                \
                o[i * s[0]] =                                                \
                    (uint8_t)OP(LD(a[i * s[1]]), LD(b[i * s[2]]));           \
            }                                                                \
        }                                                                    \
    }

#define COMPARE_ROW(OP, name)                                                \
    COMPARE_LOOP(name##_f32, float, float, LD_f32, pygpu_##name##_f)         \
    COMPARE_LOOP(name##_f16, uint16_t, float, LD_f16, pygpu_##name##_f)      \
    COMPARE_LOOP(name##_f64, double, double, LD_f64, pygpu_##name##_d)       \
    COMPARE_LOOP(name##_i64, int64_t, int64_t, LD_i64, pygpu_##name##_i)     \
    COMPARE_LOOP(name##_b8, uint8_t, int64_t, LD_b8, pygpu_##name##_i)       \
    COMPARE_LOOP(name##_u8, uint8_t, int64_t, LD_u8, pygpu_##name##_i)       \
    COMPARE_LOOP(name##_i32, int32_t, int64_t, LD_i32, pygpu_##name##_i)     \
    COMPARE_LOOP(name##_bf16, uint16_t, float, LD_bf16, pygpu_##name##_f)

PYGPU_COMPARE_OPS(COMPARE_ROW)

#define COMPARE_ENTRY(OP, name)                                              \
    [PYGPU_##OP] = {[PYGPU_FLOAT32] = name##_f32, [PYGPU_FLOAT16] = name##_f16, \
                    [PYGPU_FLOAT64] = name##_f64, [PYGPU_INT64] = name##_i64, \
                    [PYGPU_BOOL] = name##_b8, [PYGPU_UINT8] = name##_u8,     \
                    [PYGPU_INT32] = name##_i32,                              \
                    [PYGPU_BFLOAT16] = name##_bf16},

static const inner_loop compare_loops[PYGPU_NCMPOPS][PYGPU_NDTYPES] = {
    PYGPU_COMPARE_OPS(COMPARE_ENTRY)
};

inner_loop pygpu_cpu_compare_loop(int op, int dtype)
{
    return compare_loops[op][dtype];
}
