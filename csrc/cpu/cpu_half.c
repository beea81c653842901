/* cpu_half.c - float16 / bfloat16 <-> float over runs, and half-type
 * elementwise loops run as float32 ones (cpu_half.h).
 *
 * With F16C (every x86-64-v3 CPU: pygpu_cpu_isa >= PYGPU_ISA_AVX2) a run
 * of float16 converts eight at a time with vcvtph2ps / vcvtps2ph (round
 * to nearest even, the same results as half.h's rules: conversions are
 * exact one way and correctly rounded the other; only a signalling NaN
 * comes out quiet, as it does through any arithmetic).  Without it,
 * half.h's integer rules.  bfloat16 needs no instruction: its loops are
 * cloned (cpu/simd.h) and vectorize.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu/cpu_half.h"
#include "cpu/half.h"
#include "cpu/simd.h"

#if PYGPU_HAVE_CLONES
#include <immintrin.h>

#define F16C_FN __attribute__((target("avx2,f16c")))

F16C_FN static void
widen_f16c(float *y, const uint16_t *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(x + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(x + i + 8));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(a));
        _mm256_storeu_ps(y + i + 8, _mm256_cvtph_ps(b));
    }
    for (; i + 8 <= n; i += 8) {
        __m128i a = _mm_loadu_si128((const __m128i *)(x + i));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(a));
    }
    if (i < n) {
        /* The tail through the same instruction, so that every element
         * converts alike. */
        uint16_t t[8] = {0};
        float u[8];
        memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
        _mm256_storeu_ps(u, _mm256_cvtph_ps(_mm_loadu_si128(
                                (const __m128i *)t)));
        memcpy(y + i, u, (size_t)(n - i) * sizeof *u);
    }
}

F16C_FN static void
narrow_f16c(uint16_t *y, const float *x, int64_t n)
{
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), rn);
        __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(x + i + 8), rn);
        _mm_storeu_si128((__m128i *)(y + i), a);
        _mm_storeu_si128((__m128i *)(y + i + 8), b);
    }
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), rn));
    }
    if (i < n) {
        float t[8] = {0};
        uint16_t u[8];
        memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
        _mm_storeu_si128((__m128i *)u,
                         _mm256_cvtps_ph(_mm256_loadu_ps(t), rn));
        memcpy(y + i, u, (size_t)(n - i) * sizeof *u);
    }
}
#endif

void
pygpu_cpu_widen_f16(float *y, const uint16_t *x, int64_t n)
{
#if PYGPU_HAVE_CLONES
    if (pygpu_cpu_isa >= PYGPU_ISA_AVX2) {
        widen_f16c(y, x, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        y[i] = pygpu_half_to_float(x[i]);
    }
}

void
pygpu_cpu_narrow_f16(uint16_t *y, const float *x, int64_t n)
{
#if PYGPU_HAVE_CLONES
    if (pygpu_cpu_isa >= PYGPU_ISA_AVX2) {
        narrow_f16c(y, x, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) {
        y[i] = pygpu_float_to_half(x[i]);
    }
}

PYGPU_CLONES(, void, pygpu_cpu_widen_bf16,
             (float *y, const uint16_t *x, int64_t n), (y, x, n))
{
    for (int64_t i = 0; i < n; i++) {
        y[i] = pygpu_bf16_to_float(x[i]);
    }
}

PYGPU_CLONES(, void, pygpu_cpu_narrow_bf16,
             (uint16_t *y, const float *x, int64_t n), (y, x, n))
{
    for (int64_t i = 0; i < n; i++) {
        y[i] = pygpu_float_to_bf16(x[i]);
    }
}

/* Elements per chunk: three float buffers on the stack, in L1. */
#define CHUNK 512

/* x[i * s], i < n, widened into y. */
static void
widen_strided(float *y, const uint16_t *x, int64_t s, int64_t n, int bf16)
{
    if (s == 1) {
        (bf16 ? pygpu_cpu_widen_bf16 : pygpu_cpu_widen_f16)(y, x, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        y[i] = bf16 ? pygpu_bf16_to_float(x[i * s])
                    : pygpu_half_to_float(x[i * s]);
    }
}

void
pygpu_cpu_half_via_float(inner_loop f32, int nin, int bf16, char *const *p,
                         const int64_t *s, int64_t n, const void *ctx)
{
    float in[2][CHUNK], out[CHUNK];
    uint16_t *o = (uint16_t *)p[0];
    const uint16_t *a[2] = {(const uint16_t *)p[1],
                            (const uint16_t *)p[2]};
    char *q[3] = {(char *)out, (char *)in[0], (char *)in[1]};
    int64_t fs[3] = {1, 1, 1};
    for (int k = 0; k < nin; k++) {
        if (s[k + 1] == 0) {
            /* a broadcast operand: one value, stride 0 */
            widen_strided(in[k], a[k], 1, 1, bf16);
            fs[k + 1] = 0;
        }
    }
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t w = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (int k = 0; k < nin; k++) {
            if (s[k + 1] != 0) {
                widen_strided(in[k], a[k] + i0 * s[k + 1], s[k + 1], w,
                              bf16);
            }
        }
        f32(q, fs, w, ctx);
        uint16_t *oi = o + i0 * s[0];
        if (s[0] == 1) {
            (bf16 ? pygpu_cpu_narrow_bf16 : pygpu_cpu_narrow_f16)(oi, out, w);
        } else {
            uint16_t h[CHUNK];
            (bf16 ? pygpu_cpu_narrow_bf16 : pygpu_cpu_narrow_f16)(h, out, w);
            for (int64_t i = 0; i < w; i++) {
                oi[i * s[0]] = h[i];
            }
        }
    }
}
