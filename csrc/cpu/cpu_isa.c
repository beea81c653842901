/* cpu_isa.c - which version of the cloned loops (cpu/simd.h) runs: the
 * best capability the CPU has, or less when PYGPU_CPU_CAPABILITY asks. */
#include <stdlib.h>
#include <string.h>

#include "cpu/simd.h"

int pygpu_cpu_isa = PYGPU_ISA_DEFAULT;
int pygpu_cpu_isa_best = PYGPU_ISA_DEFAULT;

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
pygpu_cpu_isa_parse(const char *name)
{
    static const char *const names[] = {"default", "avx2", "avx512"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

void
pygpu_cpu_isa_set(int want)
{
    /* Asking for more than the CPU has gives what it has. */
    pygpu_cpu_isa = want < pygpu_cpu_isa_best ? want : pygpu_cpu_isa_best;
}

int
pygpu_cpu_isa_init(const char **bad)
{
    const char *env = getenv("PYGPU_CPU_CAPABILITY");
    int want;
    pygpu_cpu_isa_best = cpu_best();
    want = pygpu_cpu_isa_best;
    *bad = NULL;
    if (env != NULL && env[0] != '\0') {
        want = pygpu_cpu_isa_parse(env);
        if (want < 0) {
            *bad = env;
            return -1;
        }
    }
    pygpu_cpu_isa_set(want);
    return 0;
}
