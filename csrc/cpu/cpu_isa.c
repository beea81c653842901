/* cpu_isa.c - which version of the cloned loops (cpu/simd.h) runs: the
 * best capability the CPU has, or less when PYGPU_CPU_CAPABILITY asks. */
#include <stdlib.h>
#include <string.h>

#include "cpu/simd.h"

int pygpu_cpu_isa = PYGPU_ISA_DEFAULT;

static int
cpu_best(void)
{
#if PYGPU_HAVE_CLONES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2")) {
        return PYGPU_ISA_AVX512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2")) {
        return PYGPU_ISA_AVX2;
    }
#endif
    return PYGPU_ISA_DEFAULT;
}

const char *
pygpu_cpu_isa_name(int isa)
{
    return isa == PYGPU_ISA_AVX512 ? "AVX512"
         : isa == PYGPU_ISA_AVX2 ? "AVX2" : "DEFAULT";
}

int
pygpu_cpu_isa_init(const char **bad)
{
    static const char *const names[] = {"default", "avx2", "avx512"};
    int best = cpu_best(), want = best;
    const char *env = getenv("PYGPU_CPU_CAPABILITY");
    *bad = NULL;
    if (env != NULL && env[0] != '\0') {
        want = -1;
        for (int i = 0; i < 3; i++) {
            if (strcmp(env, names[i]) == 0) {
                want = i;
            }
        }
        if (want < 0) {
            *bad = env;
            return -1;
        }
    }
    /* Asking for more than the CPU has gives what it has. */
    pygpu_cpu_isa = want < best ? want : best;
    return 0;
}
