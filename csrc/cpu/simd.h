/* simd.h - how the CPU loops ask for wider vectors.  Plain C.
 *
 * The extension is built for baseline x86-64 (SSE2, four floats per
 * instruction).  A loop marked WIDE_VECTORS is also compiled for
 * x86-64-v3 (AVX2 and FMA, eight floats), and the dynamic loader picks
 * that version on CPUs that have it.  Both versions compute the same
 * values: C11 mode keeps a * b + c unfused, so FMA changes no result.
 *
 * vec8f / vec8i are eight floats / int32s as one value, vec4d / vec4l
 * four doubles / int64s, vec4f / vec2d one SSE register of floats /
 * doubles (gcc and clang vector extensions): their
 * operators compile to vector instructions where plain loops do not
 * vectorize (a maximum that must not lose NaN). */
#ifndef PYGPU_CPU_SIMD_H
#define PYGPU_CPU_SIMD_H

#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WIDE_VECTORS __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WIDE_VECTORS
#endif

/* A function compiled for AVX2 alone, to be called only where
 * PYGPU_CPU_HAS_AVX2() (a load and a test): for loops whose narrow and
 * wide versions are written apart. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define PYGPU_HAVE_AVX2_FN 1
#define PYGPU_AVX2_FN __attribute__((target("avx2")))
#define PYGPU_CPU_HAS_AVX2() __builtin_cpu_supports("avx2")
#else
#define PYGPU_HAVE_AVX2_FN 0
#endif

#if defined(__GNUC__)
#define PYGPU_HAVE_VEC8 1
typedef float vec8f __attribute__((vector_size(32)));
typedef int32_t vec8i __attribute__((vector_size(32)));
typedef double vec4d __attribute__((vector_size(32)));
typedef int64_t vec4l __attribute__((vector_size(32)));
typedef float vec4f __attribute__((vector_size(16)));
typedef double vec2d __attribute__((vector_size(16)));
#endif

#endif /* PYGPU_CPU_SIMD_H */
