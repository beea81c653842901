/* cpu_matmul_small.c - small matrix products by a plain loop.
 *
 * Row i of the result is built as the sum over p of a[i][p] times row p of
 * b, added into the row in order of p: the inner loop runs along
 * contiguous rows of b and of the result, which the compiler vectorizes.
 * Only for b with unit column stride (otherwise NumPy, which copies or
 * picks a BLAS layout), and for products up to SMALL_MNK multiply-adds,
 * where NumPy's per-call work (wrapping three arrays, its dispatch, the
 * BLAS call) costs more than the arithmetic.  Each element is summed in
 * the output's type, in order of p: a rounding different from BLAS's
 * blocked order, within the same error bound.
 */
#include "cpu/cpu_matmul_small.h"

/* m * n * k at most.  Measured against NumPy's matmul (float32, square):
 * 8^3 0.4x, 16^3 0.3x, 24^3 about even, 32^3 2x its time. */
#define SMALL_MNK (16 * 16 * 32)

#define SMALL_LOOP(SFX, T)                                                   \
    static void small_##SFX(T *restrict out, int64_t os, const T *a,         \
                            int64_t as0, int64_t as1, const T *b,            \
                            int64_t bs0, int64_t m, int64_t n, int64_t k)    \
    {                                                                        \
        for (int64_t i = 0; i < m; i++) {                                    \
            T *restrict c = out + i * os;                                    \
            for (int64_t j = 0; j < n; j++) {                                \
                c[j] = 0;                                                    \
            }                                                                \
            for (int64_t p = 0; p < k; p++) {                                \
                T aip = a[i * as0 + p * as1];                                \
                const T *restrict brow = b + p * bs0;                        \
                for (int64_t j = 0; j < n; j++) {                            \
                    c[j] += aip * brow[j];                                   \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

SMALL_LOOP(f32, float)
SMALL_LOOP(f64, double)

int
pygpu_cpu_matmul_small(char *out, int64_t out_stride, const TensorObject *a,
                       const TensorObject *b)
{
    if (a->ndim != 2 || b->ndim != 2) {
        return 0;
    }
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    /* Each at most SMALL_MNK first, so that the product cannot overflow. */
    if (m > SMALL_MNK || n > SMALL_MNK || k > SMALL_MNK ||
        m * n * k > SMALL_MNK || (b->strides[1] != 1 && n > 1)) {
        return 0;
    }
    if (a->dtype == PYGPU_FLOAT32) {
        small_f32((float *)out, out_stride, (const float *)a->data,
                  a->strides[0], a->strides[1], (const float *)b->data,
                  b->strides[0], m, n, k);
        return 1;
    }
    if (a->dtype == PYGPU_FLOAT64) {
        small_f64((double *)out, out_stride, (const double *)a->data,
                  a->strides[0], a->strides[1], (const double *)b->data,
                  b->strides[0], m, n, k);
        return 1;
    }
    return 0;
}
