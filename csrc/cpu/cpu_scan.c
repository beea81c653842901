/* cpu_scan.c - inclusive scans (cumsum, cumprod) along the middle dim of a
 * contiguous input seen as [outer, n, inner].
 *
 * inner == 1: each row is one contiguous run, scanned with one running
 * value.  inner > 1: the rows of a slab are combined into a buffer of up to
 * SCAN_COLS running values one row after the other, so memory is read and
 * written in address order.  float16 runs in float (rounded once per
 * output), int64 wraps modulo 2^64.
 */
#include <stdint.h>

#include "cpu/half.h"
#include "kernels/kernels.h"

/* Columns of the running-value buffer (on the stack). */
#define SCAN_COLS 512

#define AS_IS(x) (x)
#define F_ADD(a, b) ((a) + (b))
#define F_MUL(a, b) ((a) * (b))
/* int64 through uint64, whose overflow is defined. */
#define I_ADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define I_MUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))

/* scan_<NAME>: out = running OP (identity ID) of in along n. */
#define SCAN(NAME, T, ACC, LD, ST, OP, ID)                                   \
    static void scan_##NAME(T *out, const T *in, int64_t outer, int64_t n,   \
                            int64_t inner)                                   \
    {                                                                        \
        ACC acc[SCAN_COLS];                                                  \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = in + o * n * inner;                                 \
            T *y = out + o * n * inner;                                      \
            if (inner == 1) {                                                \
                ACC a = ID;                                                  \
                for (int64_t j = 0; j < n; j++) {                            \
                    a = OP(a, LD(x[j]));                                     \
                    y[j] = ST(a);                                            \
                }                                                            \
                continue;                                                    \
            }                                                                \
            for (int64_t c0 = 0; c0 < inner; c0 += SCAN_COLS) {              \
                int64_t w = inner - c0 < SCAN_COLS ? inner - c0 : SCAN_COLS; \
                for (int64_t c = 0; c < w; c++) {                            \
                    acc[c] = ID;                                             \
                }                                                            \
                for (int64_t j = 0; j < n; j++) {                            \
                    const T *restrict row = x + j * inner + c0;              \
                    T *restrict dst = y + j * inner + c0;                    \
                    for (int64_t c = 0; c < w; c++) {                        \
                        acc[c] = OP(acc[c], LD(row[c]));                     \
                        dst[c] = ST(acc[c]);                                 \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

#define SCANS(SFX, T, ACC, LD, ST, ADD, MUL)                                 \
    SCAN(sum_##SFX, T, ACC, LD, ST, ADD, 0)                                  \
    SCAN(prod_##SFX, T, ACC, LD, ST, MUL, 1)

SCANS(f32, float, float, AS_IS, AS_IS, F_ADD, F_MUL)
SCANS(f16, uint16_t, float, pygpu_half_to_float, pygpu_float_to_half, F_ADD,
      F_MUL)
SCANS(f64, double, double, AS_IS, AS_IS, F_ADD, F_MUL)
SCANS(i64, int64_t, int64_t, AS_IS, AS_IS, I_ADD, I_MUL)

void pygpu_cpu_scan(int op, int dtype, void *out, const void *in,
                    int64_t outer, int64_t n, int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n <= 0) {
        return;
    }
    int sum = op == PYGPU_CUMSUM;
    if (!sum && op != PYGPU_CUMPROD) {
        return;
    }
    switch (dtype) {
    case PYGPU_FLOAT32:
        (sum ? scan_sum_f32 : scan_prod_f32)(out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT16:
        (sum ? scan_sum_f16 : scan_prod_f16)(out, in, outer, n, inner);
        break;
    case PYGPU_FLOAT64:
        (sum ? scan_sum_f64 : scan_prod_f64)(out, in, outer, n, inner);
        break;
    case PYGPU_INT64:
        (sum ? scan_sum_i64 : scan_prod_i64)(out, in, outer, n, inner);
        break;
    default:
        break;
    }
}
