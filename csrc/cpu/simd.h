/* simd.h - how the CPU loops ask for wider vectors.  Plain C.
 *
 * The extension is built for baseline x86-64 (SSE2, four floats per
 * instruction).  A loop written with PYGPU_CLONES is compiled three
 * times: for baseline x86-64, for x86-64-v3 (AVX2, FMA and F16C: eight
 * floats) and for x86-64-v4 (AVX-512: sixteen floats), and a call takes
 * the version for the CPU capability picked once at import
 * (pygpu_cpu_capability: the best the CPU has, or less when the
 * environment variable PYGPU_CPU_CAPABILITY says default / avx2 / avx512,
 * as torch's ATEN_CPU_CAPABILITY does).  The wide versions let the
 * compiler fuse a * b + c into one FMA (fp-contract=fast): one rounding
 * instead of two, so a result may differ from the baseline's in its last
 * bit, never by more than the documented accuracy of the op; the
 * baseline (C11 mode) keeps them unfused.  For a given capability the
 * bits do not depend on the thread count.
 *
 *     PYGPU_CLONES(static, void, name, (float *y, int64_t n), (y, n))
 *     {
 *         ... the loop, written once ...
 *     }
 *
 * defines name(y, n) (with the linkage given: static or nothing) and,
 * inside, name_v0 / name_v3 / name_v4 around an always-inlined body.
 *
 * vec8f / vec8i are eight floats / int32s as one value, vec4d / vec4l
 * four doubles / int64s, vec4f / vec2d one SSE register of floats /
 * doubles (gcc and clang vector extensions): their
 * operators compile to vector instructions where plain loops do not
 * vectorize (a maximum that must not lose NaN). */
#ifndef PYGPU_CPU_SIMD_H
#define PYGPU_CPU_SIMD_H

#include <stdint.h>

/* CPU capabilities, in order. */
#define PYGPU_ISA_DEFAULT 0
#define PYGPU_ISA_AVX2 1    /* x86-64-v3: AVX2, FMA, F16C, BMI2 */
#define PYGPU_ISA_AVX512 2  /* x86-64-v4: AVX-512 F, BW, CD, DQ, VL */

/* The capability the loops use; set by pygpu_cpu_isa_init at import
 * (under the GIL, before any worker thread exists), and read by each call.
 * pygpu_cpu_isa_best is the CPU's best, the most pygpu_cpu_isa may be
 * (an emulator raises it: scripts/emulate_avx512). */
extern int pygpu_cpu_isa;
extern int pygpu_cpu_isa_best;

/* Picks pygpu_cpu_isa from the CPU and PYGPU_CPU_CAPABILITY.  Returns 0,
 * or -1 with *bad pointing at an unknown value of the variable. */
int pygpu_cpu_isa_init(const char **bad);

/* "default" / "avx2" / "avx512" as a capability, or -1. */
int pygpu_cpu_isa_parse(const char *name);

/* Sets pygpu_cpu_isa to `want`, or to the best when that is less: for
 * tests that compare the versions in one process (_C._set_cpu_capability),
 * between ops, never while one runs. */
void pygpu_cpu_isa_set(int want);

/* "DEFAULT", "AVX2" or "AVX512", as torch.backends.cpu names them. */
const char *pygpu_cpu_isa_name(int isa);

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define PYGPU_HAVE_CLONES 1
#define PYGPU_FMA_OK optimize("fp-contract=fast")
#define PYGPU_CLONES_WITH(V3, V4, LINK, RET, NAME, PARAMS, ARGS)              \
    static inline __attribute__((always_inline)) RET NAME##_body PARAMS;    \
    __attribute__(V4) static RET NAME##_v4 PARAMS                         \
    {                                                                        \
        return NAME##_body ARGS;                                             \
    }                                                                        \
    __attribute__(V3) static RET NAME##_v3 PARAMS                         \
    {                                                                        \
        return NAME##_body ARGS;                                             \
    }                                                                        \
    static RET NAME##_v0 PARAMS { return NAME##_body ARGS; }                \
    LINK RET NAME PARAMS                                                     \
    {                                                                        \
        return pygpu_cpu_isa == PYGPU_ISA_AVX2 ? NAME##_v3 ARGS              \
             : pygpu_cpu_isa == PYGPU_ISA_AVX512 ? NAME##_v4 ARGS            \
             : NAME##_v0 ARGS;                                               \
    }                                                                        \
    static inline __attribute__((always_inline)) RET NAME##_body PARAMS
#define PYGPU_CLONES(LINK, RET, NAME, PARAMS, ARGS)                           \
    PYGPU_CLONES_WITH((target("arch=x86-64-v3"), PYGPU_FMA_OK),             \
                      (target("arch=x86-64-v4"), PYGPU_FMA_OK),             \
                      LINK, RET, NAME, PARAMS, ARGS)
/* The same, keeping a * b + c unfused in every version: loops whose bits
 * must not depend on the CPU (random numbers). */
#define PYGPU_CLONES_EXACT(LINK, RET, NAME, PARAMS, ARGS)                     \
    PYGPU_CLONES_WITH((target("arch=x86-64-v3")),                            \
                      (target("arch=x86-64-v4")),                            \
                      LINK, RET, NAME, PARAMS, ARGS)
#else
#define PYGPU_HAVE_CLONES 0
#define PYGPU_CLONES(LINK, RET, NAME, PARAMS, ARGS) LINK RET NAME PARAMS
#define PYGPU_CLONES_EXACT(LINK, RET, NAME, PARAMS, ARGS) LINK RET NAME PARAMS
#endif

/* A function compiled for AVX2 alone, to be called only where
 * PYGPU_CPU_HAS_AVX2() (a load and a test): for loops whose narrow and
 * wide versions are written apart (the same for AVX-512 CPUs). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define PYGPU_HAVE_AVX2_FN 1
#define PYGPU_AVX2_FN __attribute__((target("avx2")))
#define PYGPU_CPU_HAS_AVX2() (pygpu_cpu_isa >= PYGPU_ISA_AVX2)
#else
#define PYGPU_HAVE_AVX2_FN 0
#define PYGPU_CPU_HAS_AVX2() 0
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
