/* cpu_scan.c - inclusive scans (cumsum, cumprod) along the middle dim of a
 * contiguous input seen as [outer, n, inner].
 *
 * inner == 1: each row is one contiguous run, scanned with one running
 * value.  inner > 1: the rows of a slab are combined into a buffer of up to
 * SCAN_COLS running values one row after the other, so memory is read and
 * written in address order.  The input is read in its own dtype: float16
 * and bfloat16 run in float (rounded once per output), bool and integers
 * in int64 (the output's dtype), wrapping modulo 2^64.
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
#define SCAN(NAME, T, OUT, ACC, LD, ST, OP, ID)                              \
    static void scan_##NAME(void *outv, const void *inv, int64_t outer,      \
                            int64_t n, int64_t inner)                        \
    {                                                                        \
        ACC acc[SCAN_COLS];                                                  \
        for (int64_t o = 0; o < outer; o++) {                                \
            const T *x = (const T *)inv + o * n * inner;                     \
            OUT *y = (OUT *)outv + o * n * inner;                            \
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
                    OUT *restrict dst = y + j * inner + c0;                  \
                    for (int64_t c = 0; c < w; c++) {                        \
                        acc[c] = OP(acc[c], LD(row[c]));                     \
                        dst[c] = ST(acc[c]);                                 \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

#define SCANS(SFX, T, OUT, ACC, LD, ST, ADD, MUL)                            \
    SCAN(sum_##SFX, T, OUT, ACC, LD, ST, ADD, 0)                             \
    SCAN(prod_##SFX, T, OUT, ACC, LD, ST, MUL, 1)

#define I64(x) ((int64_t)(x))

SCANS(f32, float, float, float, AS_IS, AS_IS, F_ADD, F_MUL)
SCANS(f16, uint16_t, uint16_t, float, pygpu_half_to_float,
      pygpu_float_to_half, F_ADD, F_MUL)
SCANS(bf16, uint16_t, uint16_t, float, pygpu_bf16_to_float,
      pygpu_float_to_bf16, F_ADD, F_MUL)
SCANS(f64, double, double, double, AS_IS, AS_IS, F_ADD, F_MUL)
SCANS(i64, int64_t, int64_t, int64_t, AS_IS, AS_IS, I_ADD, I_MUL)
SCANS(b8, uint8_t, int64_t, int64_t, I64, AS_IS, I_ADD, I_MUL)
SCANS(u8, uint8_t, int64_t, int64_t, I64, AS_IS, I_ADD, I_MUL)
SCANS(i32, int32_t, int64_t, int64_t, I64, AS_IS, I_ADD, I_MUL)

typedef void (*scan_loop)(void *out, const void *in, int64_t outer,
                          int64_t n, int64_t inner);

#define SCAN_ROW(SFX) {scan_sum_##SFX, scan_prod_##SFX}
/* [input dtype][cumsum, cumprod] */
static const scan_loop scan_loops[PYGPU_NDTYPES][PYGPU_NSCANOPS] = {
    [PYGPU_FLOAT32] = SCAN_ROW(f32), [PYGPU_FLOAT16] = SCAN_ROW(f16),
    [PYGPU_FLOAT64] = SCAN_ROW(f64), [PYGPU_INT64] = SCAN_ROW(i64),
    [PYGPU_BOOL] = SCAN_ROW(b8),     [PYGPU_UINT8] = SCAN_ROW(u8),
    [PYGPU_INT32] = SCAN_ROW(i32),   [PYGPU_BFLOAT16] = SCAN_ROW(bf16),
};

void pygpu_cpu_scan(int op, int dtype, void *out, const void *in,
                    int64_t outer, int64_t n, int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n <= 0 || dtype < 0 ||
        dtype >= PYGPU_NDTYPES || op < 0 || op >= PYGPU_NSCANOPS) {
        return;
    }
    scan_loops[dtype][op](out, in, outer, n, inner);
}
