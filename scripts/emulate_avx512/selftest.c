/* selftest.c - small AVX-512 functions for test_emulator.py: each of the
 * exported functions calls a clone compiled for x86-64-v4, as pygpu's
 * loops do, so that a call traps into the emulator. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define V4 __attribute__((target("arch=x86-64-v4"), noinline))

/* y = a * x + 1 over 16-float vectors, then a tail. */
V4 static void
axpy_v4(float *y, const float *x, int64_t n, float a)
{
    __m512 va = _mm512_set1_ps(a), one = _mm512_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i),
                                                one));
    }
    __mmask16 tail = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, tail,
                          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(tail,
                                                                   x + i),
                                          one));
}

void
axpy(float *y, const float *x, int64_t n, float a)
{
    axpy_v4(y, x, n, a);
}

/* The sum of a ymm argument's eight floats and of zmm work: the argument
 * arrives in ymm0, its upper half from the signal frame's XSAVE area; the
 * float result leaves in xmm0. */
V4 static float
lanes_v4(__m256 v)
{
    __m512 w = _mm512_insertf32x8(_mm512_castps256_ps512(v), v, 1);
    return _mm512_reduce_add_ps(w) * 0.5f;
}

__attribute__((target("avx2"))) float
lanes(const float *p)
{
    /* The native caller (AVX2, which the test machines have) passes a
     * ymm register. */
    __m256 v = _mm256_loadu_ps(p);
    return lanes_v4(v) + p[0];
}

/* An AVX-512 function that calls the C library (not AVX-512) and returns
 * to AVX-512 code. */
V4 static void
copy_scale_v4(float *dst, const float *src, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
    for (int64_t i = 0; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(dst + i, _mm512_mul_ps(_mm512_loadu_ps(dst + i),
                                                _mm512_set1_ps(3.0f)));
    }
}

void
copy_scale(float *dst, const float *src, int64_t n)
{
    copy_scale_v4(dst, src, n);
}
