/* cpu_prod.c - the product over the middle dim of a contiguous input seen
 * as [outer, n, inner].
 *
 * inner == 1: each output is the product of one contiguous run, taken in 8
 * independent lanes (vector multiplies).  inner > 1: the rows of a slab are
 * multiplied into a buffer of up to PROD_COLS columns one row after the
 * other, so memory is read in address order.
 */
#include <stdint.h>

#include "cpu/cpu_reduce.h"
#include "cpu/half.h"
#include "kernels/kernels.h"

/* Columns of the row buffer (on the stack). */
#define PROD_COLS 512

#define AS_IS(x) (x)
/* int64 multiplies through uint64, whose overflow is defined. */
#define WRAP_MUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define F_MUL(a, b) ((a) * (b))

#define REDUCE_PROD(SFX, T, ACC, LD, ST, MUL)                                \
    static ACC prod_run_##SFX(const T *restrict x, int64_t n)                \
    {                                                                        \
        ACC lane[8] = {1, 1, 1, 1, 1, 1, 1, 1};                              \
        int64_t j = 0;                                                       \
        for (; j + 8 <= n; j += 8) {                                         \
            for (int k = 0; k < 8; k++) {                                    \
                lane[k] = MUL(lane[k], LD(x[j + k]));                        \
            }                                                                \
        }                                                                    \
        ACC p = MUL(MUL(MUL(lane[0], lane[1]), MUL(lane[2], lane[3])),       \
                    MUL(MUL(lane[4], lane[5]), MUL(lane[6], lane[7])));      \
        for (; j < n; j++) {                                                 \
            p = MUL(p, LD(x[j]));                                            \
        }                                                                    \
        return p;                                                            \
    }                                                                        \
    static void prod_##SFX(T *out, const T *in, int64_t outer, int64_t n,    \
                           int64_t inner)                                    \
    {                                                                        \
        ACC acc[PROD_COLS];                                                  \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = in + o * n * inner;                                 \
            if (inner == 1) {                                                \
                out[o] = ST(prod_run_##SFX(x, n));                           \
                continue;                                                    \
            }                                                                \
            for (int64_t c0 = 0; c0 < inner; c0 += PROD_COLS) {              \
                int64_t w = inner - c0 < PROD_COLS ? inner - c0 : PROD_COLS; \
                for (int64_t c = 0; c < w; c++) {                            \
                    acc[c] = 1;                                              \
                }                                                            \
                for (int64_t j = 0; j < n; j++) {                            \
                    const T *restrict row = x + j * inner + c0;              \
                    for (int64_t c = 0; c < w; c++) {                        \
                        acc[c] = MUL(acc[c], LD(row[c]));                    \
                    }                                                        \
                }                                                            \
                for (int64_t c = 0; c < w; c++) {                            \
                    out[o * inner + c0 + c] = ST(acc[c]);                    \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

REDUCE_PROD(f32, float, float, AS_IS, AS_IS, F_MUL)
REDUCE_PROD(f16, uint16_t, float, pygpu_half_to_float, pygpu_float_to_half,
            F_MUL)
REDUCE_PROD(f64, double, double, AS_IS, AS_IS, F_MUL)
REDUCE_PROD(i64, int64_t, int64_t, AS_IS, AS_IS, WRAP_MUL)

void pygpu_cpu_reduce_prod(int dtype, void *out, const void *in,
                           int64_t outer, int64_t n, int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n < 0) {
        return;
    }
    switch (dtype) {
    case PYGPU_FLOAT32:
        prod_f32(out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT16:
        prod_f16(out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT64:
        prod_f64(out, in, outer, n, inner);
        break;
    case PYGPU_INT64:
        prod_i64(out, in, outer, n, inner);
        break;
    default:
        break;
    }
}
