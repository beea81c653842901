/* fastdiv.h - division by a divisor fixed for a launch, as a multiply and
 * a shift: for 1 <= d < 2^31 and 0 <= n < 2^31, with s = ceil(log2 d),
 * p = 31 + s and m = ceil(2^p / d) (m < 2^32),
 *     n / d == (n * m) >> p        (the product taken in 64 bits).
 * Why: m = 2^p / d + e with 0 <= e < 1, so n * m / 2^p = n / d + n e / 2^p
 * and n e / 2^p < 2^31 * 1 / 2^p = 2^-s <= 1 / d, while n / d's fraction
 * is at most (d - 1) / d: the floor does not move.
 * The index loops whose sizes fit in 31 bits use it instead of 64-bit
 * division, which the GPU does in software (tens of instructions).
 * Plain C; tests/native/fastdiv_check.c checks it on the host. */
#ifndef PYGPU_KERNELS_FASTDIV_H
#define PYGPU_KERNELS_FASTDIV_H
#include <stdint.h>

#ifdef __CUDACC__
#define PYGPU_HD __host__ __device__ __forceinline__
#else
#define PYGPU_HD static inline
#endif

typedef struct pygpu_fastdiv {
    uint32_t d, m;
    int p;
} pygpu_fastdiv;

/* The constants for divisor d (1 <= d < 2^31). */
PYGPU_HD pygpu_fastdiv pygpu_fastdiv_make(uint32_t d)
{
    int s = 0;
    while (s < 31 && ((uint32_t)1 << s) < d) {
        s++;
    }
    pygpu_fastdiv f;
    f.d = d;
    f.p = 31 + s;
    f.m = (uint32_t)((((uint64_t)1 << f.p) + d - 1) / d);
    return f;
}

/* n / d for 0 <= n < 2^31. */
PYGPU_HD uint32_t pygpu_fastdiv_div(pygpu_fastdiv f, uint32_t n)
{
    return (uint32_t)(((uint64_t)n * f.m) >> f.p);
}

/* n / d into *q, and n % d returned. */
PYGPU_HD uint32_t pygpu_fastdiv_divmod(pygpu_fastdiv f, uint32_t n,
                                       uint32_t *q)
{
    *q = pygpu_fastdiv_div(f, n);
    return n - *q * f.d;
}

#endif /* PYGPU_KERNELS_FASTDIV_H */
