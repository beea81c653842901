/* cpu_crc32.c - the CRC-32 of zip and zlib (reflected polynomial
 * 0xEDB88320), which checkpoints carry per record.
 *
 * The fast path folds 64 bytes at a time in four 128-bit lanes with the
 * carry-less multiply (PCLMULQDQ), the method of Intel's "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ": each lane is
 * multiplied by x^512 mod P (split over its two 64-bit halves) and the
 * next 64 bytes are added; then the lanes fold into one by x^128 mod P.
 * Folding keeps the message's CRC: the lane's 16 bytes followed by the
 * rest of the data have the CRC of all the data, starting from a register
 * of 0 (the incoming register is added into the first 4 bytes, CRC being
 * linear).  So the last 16 bytes of state and the tail under 16 bytes
 * finish one bit at a time, with no Barrett reduction.  The constants are
 * the published ones for this polynomial (bit-reflected, already shifted
 * by the one bit a reflected product carries). */
#include "cpu/cpu_crc32.h"
#include "cpu/simd.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_FOLD 1
#else
#define HAVE_FOLD 0
#endif

static uint32_t
crc_bits(uint32_t r, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        r ^= p[i];
        for (int k = 0; k < 8; k++) {
            r = (r >> 1) ^ (0xEDB88320u & (0u - (r & 1u)));
        }
    }
    return r;
}

#if HAVE_FOLD
#define FOLD_TARGET __attribute__((target("pclmul,sse4.1")))

/* x times k (low half by k's low, high half by k's high), plus next. */
FOLD_TARGET static inline __m128i
fold(__m128i x, __m128i k, __m128i next)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)),
                         next);
}

#define LOAD(q) _mm_loadu_si128((const __m128i *)(q))

/* The register r (not inverted) after n >= 64 bytes at p. */
FOLD_TARGET static uint32_t
crc_fold(uint32_t r, const unsigned char *p, size_t n)
{
    /* x^(512+64) and x^512 mod P; x^(128+64) and x^128 mod P */
    const __m128i k512 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    __m128i x0 = _mm_xor_si128(LOAD(p), _mm_cvtsi32_si128((int)r));
    __m128i x1 = LOAD(p + 16), x2 = LOAD(p + 32), x3 = LOAD(p + 48);
    unsigned char last[16];

    for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
        x0 = fold(x0, k512, LOAD(p));
        x1 = fold(x1, k512, LOAD(p + 16));
        x2 = fold(x2, k512, LOAD(p + 32));
        x3 = fold(x3, k512, LOAD(p + 48));
    }
    x0 = fold(fold(fold(x0, k128, x1), k128, x2), k128, x3);
    for (; n >= 16; p += 16, n -= 16) {
        x0 = fold(x0, k128, LOAD(p));
    }
    _mm_storeu_si128((__m128i *)last, x0);
    return crc_bits(crc_bits(0, last, 16), p, n);
}
#endif

int
pygpu_cpu_crc32_fast(void)
{
#if HAVE_FOLD
    return pygpu_cpu_isa >= PYGPU_ISA_AVX2 &&
           __builtin_cpu_supports("pclmul");
#else
    return 0;
#endif
}

uint32_t
pygpu_cpu_crc32(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
#if HAVE_FOLD
    if (n >= 64 && pygpu_cpu_crc32_fast()) {
        return ~crc_fold(~crc, b, n);
    }
#endif
    return ~crc_bits(~crc, b, n);
}
