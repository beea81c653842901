/* sort_key.h - the order of sort, argsort, topk and the selections built
 * on them, written once for the CPU loops (cpu/cpu_sort.c) and the CUDA
 * kernels (kernels/sort.cu).
 *
 * Every element becomes a uint64 key whose unsigned order is the order
 * wanted: a floating value's bits with the sign bit flipped (positive) or
 * all bits flipped (negative), so -inf < ... < 0.0 < ... < inf (-0.0 is
 * 0.0: they compare equal, so they tie), and every NaN the largest key of
 * all (torch: NaN sorts after +inf); an integer's two's complement with
 * the sign bit flipped; a bool as 0 or 1.
 * Descending order flips every bit of the key (NaN then comes first).
 * Equal keys are ordered by their index along the sorted dim, so the sort
 * is stable in both directions (torch's stable=True; stable=False may give
 * any order of ties, and this one is as good as any).
 */
#ifndef PYGPU_KERNELS_SORT_KEY_H
#define PYGPU_KERNELS_SORT_KEY_H

#include <stdint.h>

#include "kernels/kernels.h"

#ifdef __CUDACC__
#define PYGPU_SORT_RULE static inline __host__ __device__
#else
#define PYGPU_SORT_RULE static inline
#endif

/* An IEEE value of `bits` bits (16, 32 or 64) with `mant` mantissa bits,
 * as a key in the top `bits` bits of the result. */
PYGPU_SORT_RULE uint64_t
pygpu_sort_float_key(uint64_t v, int bits, int mant)
{
    const uint64_t sign = 1ull << (bits - 1);
    const uint64_t exp_mask = (sign - 1) & ~((1ull << mant) - 1);
    const uint64_t mant_mask = (1ull << mant) - 1;
    if ((v & exp_mask) == exp_mask && (v & mant_mask) != 0) {
        return ~0ull; /* NaN, of any sign or payload */
    }
    if ((v & (sign - 1)) == 0) {
        v = 0; /* -0.0 == 0.0: equal keys, as they compare equal */
    }
    v = (v & sign) ? ~v : (v | sign);
    if (bits < 64) {
        v = (v & ((1ull << bits) - 1)) << (64 - bits);
    }
    return v;
}

/* The key of element i of `p` (a dtype of enum pygpu_scalar). */
PYGPU_SORT_RULE uint64_t
pygpu_sort_key(const void *p, int dtype, int64_t i, int descending)
{
    uint64_t k;
    switch (dtype) {
    case PYGPU_FLOAT32:
        k = pygpu_sort_float_key(((const uint32_t *)p)[i], 32, 23);
        break;
    case PYGPU_FLOAT64:
        k = pygpu_sort_float_key(((const uint64_t *)p)[i], 64, 52);
        break;
    case PYGPU_FLOAT16:
        k = pygpu_sort_float_key(((const uint16_t *)p)[i], 16, 10);
        break;
    case PYGPU_BFLOAT16:
        k = pygpu_sort_float_key(((const uint16_t *)p)[i], 16, 7);
        break;
    case PYGPU_INT64:
        k = (uint64_t)((const int64_t *)p)[i] ^ (1ull << 63);
        break;
    case PYGPU_INT32:
        k = (uint64_t)(int64_t)((const int32_t *)p)[i] ^ (1ull << 63);
        break;
    default: /* bool, uint8 */
        k = ((const uint8_t *)p)[i];
        break;
    }
    return descending ? ~k : k;
}

/* Whether (ka, ia) comes before (kb, ib): the key, then the index. */
PYGPU_SORT_RULE int
pygpu_sort_before(uint64_t ka, int64_t ia, uint64_t kb, int64_t ib)
{
    return ka < kb || (ka == kb && ia < ib);
}

#endif /* PYGPU_KERNELS_SORT_KEY_H */
