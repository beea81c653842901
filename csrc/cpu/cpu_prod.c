/* cpu_prod.c - the product over the middle dim of a contiguous input seen
 * as [outer, n, inner].
 *
 * inner == 1: each output is the product of one contiguous run, taken in 8
 * independent lanes (vector multiplies).  inner > 1: the rows of a slab are
 * multiplied into a buffer of up to PROD_COLS columns one row after the
 * other, so memory is read in address order.  The input is read in its own
 * dtype: floats multiply in float (double for float64), bool and integers
 * in int64 modulo 2^64.
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

/* prod_run_<SFX>: the product of a run; prod_<OSFX>: the loop, stored as
 * OUT by ST. */
#define PROD_RUN(SFX, T, ACC, LD, MUL)                                       \
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
    }

#define REDUCE_PROD(SFX, OSFX, T, ACC, OUT, LD, ST, MUL)                     \
    static void prod_##OSFX(void *outv, const void *inv, int64_t outer,      \
                            int64_t n, int64_t inner)                        \
    {                                                                        \
        OUT *out = outv;                                                     \
        const T *in = inv;                                                   \
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

#define I64(x) ((int64_t)(x))

PROD_RUN(f32, float, float, AS_IS, F_MUL)
PROD_RUN(f16, uint16_t, float, pygpu_half_to_float, F_MUL)
PROD_RUN(bf16, uint16_t, float, pygpu_bf16_to_float, F_MUL)
PROD_RUN(f64, double, double, AS_IS, F_MUL)
PROD_RUN(i64, int64_t, int64_t, AS_IS, WRAP_MUL)
PROD_RUN(b8, uint8_t, int64_t, I64, WRAP_MUL)
PROD_RUN(u8, uint8_t, int64_t, I64, WRAP_MUL)
PROD_RUN(i32, int32_t, int64_t, I64, WRAP_MUL)
REDUCE_PROD(f32, f32, float, float, float, AS_IS, AS_IS, F_MUL)
REDUCE_PROD(f16, f16, uint16_t, float, uint16_t, pygpu_half_to_float,
            pygpu_float_to_half, F_MUL)
REDUCE_PROD(f16, f16_acc, uint16_t, float, float, pygpu_half_to_float,
            AS_IS, F_MUL)
REDUCE_PROD(bf16, bf16, uint16_t, float, uint16_t, pygpu_bf16_to_float,
            pygpu_float_to_bf16, F_MUL)
REDUCE_PROD(bf16, bf16_acc, uint16_t, float, float, pygpu_bf16_to_float,
            AS_IS, F_MUL)
REDUCE_PROD(f64, f64, double, double, double, AS_IS, AS_IS, F_MUL)
REDUCE_PROD(i64, i64, int64_t, int64_t, int64_t, AS_IS, AS_IS, WRAP_MUL)
REDUCE_PROD(b8, b8, uint8_t, int64_t, int64_t, I64, AS_IS, WRAP_MUL)
REDUCE_PROD(u8, u8, uint8_t, int64_t, int64_t, I64, AS_IS, WRAP_MUL)
REDUCE_PROD(i32, i32, int32_t, int64_t, int64_t, I64, AS_IS, WRAP_MUL)

typedef void (*prod_loop)(void *out, const void *in, int64_t outer,
                          int64_t n, int64_t inner);

/* [input dtype][to_acc] */
static const prod_loop prod_loops[PYGPU_NDTYPES][2] = {
    [PYGPU_FLOAT32] = {prod_f32, prod_f32},
    [PYGPU_FLOAT16] = {prod_f16, prod_f16_acc},
    [PYGPU_FLOAT64] = {prod_f64, prod_f64},
    [PYGPU_INT64] = {prod_i64, prod_i64},
    [PYGPU_BOOL] = {prod_b8, prod_b8},
    [PYGPU_UINT8] = {prod_u8, prod_u8},
    [PYGPU_INT32] = {prod_i32, prod_i32},
    [PYGPU_BFLOAT16] = {prod_bf16, prod_bf16_acc},
};

void pygpu_cpu_reduce_prod(int dtype, int to_acc, void *out, const void *in,
                           int64_t outer, int64_t n, int64_t inner)
{
    if (outer <= 0 || inner <= 0 || n < 0 || dtype < 0 ||
        dtype >= PYGPU_NDTYPES) {
        return;
    }
    prod_loops[dtype][to_acc != 0](out, in, outer, n, inner);
}
