/* cpu_simd.h - function attributes for the CPU loops that gcc vectorizes:
 * a wide clone of a loop for x86-64-v3, and the floating-point options
 * that let float compares and square roots vectorize. */
#ifndef PYGPU_CPU_SIMD_H
#define PYGPU_CPU_SIMD_H

#if defined(__GNUC__) && !defined(__clang__)
/* gcc keeps float compares as branches, so loops of them unvectorized,
 * while they may raise floating-point exception flags; no one reads those
 * flags here. */
#define NO_TRAPPING_MATH __attribute__((optimize("no-trapping-math")))
/* The same, and never a fused multiply-add (ISO C's default already), so
 * that every clone of a loop rounds each operation as the C source says.
 * (-fno-math-errno given this way does not let gcc vectorize sqrtf.) */
#define EXACT_VECTOR_MATH                                                    \
    __attribute__((optimize("no-trapping-math", "fp-contract=off")))
#else
#define NO_TRAPPING_MATH
#define EXACT_VECTOR_MATH
#endif

/* A loop also in a version for x86-64-v3 (AVX2, FMA), picked at load time
 * where the CPU has it: twice the lanes. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define WIDE_VECTORS __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WIDE_VECTORS
#endif

#endif /* PYGPU_CPU_SIMD_H */
