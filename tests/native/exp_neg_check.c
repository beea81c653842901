/* exp_neg_check.c - kernels/cpu_math.h's exp of x <= 0 (the softmax
 * family's), sigmoid and silu against double references, over every
 * STRIDE-th float bit pattern and the edges, in a baseline build and, on
 * a CPU with AVX2 and FMA, one compiled as the x86-64-v3 clones are
 * (cpu/simd.h: fused multiply-adds).  Prints the worst errors in ulp of
 * the correctly rounded result (subnormal results in units of the
 * smallest subnormal) and, last, "P passed, F failed".
 *
 *     cc -std=c11 -O3 -fno-trapping-math -fno-math-errno -I csrc \
 *        tests/native/exp_neg_check.c -lm && ./a.out [STRIDE]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_math.h"

#define FNS 3
static const char *const names[FNS] = {"exp_neg", "sigmoid", "silu"};
/* The bounds the header states, in ulp. */
static const double bounds[FNS] = {1.5, 2.5, 3.5};

#define LOOP(y, x, n, fn)                                                    \
    do {                                                                     \
        if ((fn) == 0) {                                                     \
            for (int i = 0; i < (n); i++) {                                  \
                (y)[i] = pygpu_cpu_expf_neg((x)[i]);                         \
            }                                                                \
        }                                                                    \
        else if ((fn) == 1) {                                                \
            for (int i = 0; i < (n); i++) {                                  \
                (y)[i] = pygpu_cpu_sigmoidf((x)[i]);                         \
            }                                                                \
        }                                                                    \
        else {                                                               \
            for (int i = 0; i < (n); i++) {                                  \
                (y)[i] = pygpu_cpu_siluf((x)[i]);                            \
            }                                                                \
        }                                                                    \
    } while (0)

static __attribute__((noinline)) void
run_base(float *y, const float *x, int n, int fn)
{
    LOOP(y, x, n, fn);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define HAVE_V3 1
__attribute__((noinline, target("arch=x86-64-v3"),
               optimize("fp-contract=fast"))) static void
run_v3(float *y, const float *x, int n, int fn)
{
    LOOP(y, x, n, fn);
}
#else
#define HAVE_V3 0
#endif

static double reference(int fn, double x)
{
    if (fn == 0) {
        return exp(x);
    }
    if (fn == 1) {
        return 1 / (1 + exp(-x));
    }
    return isinf(x) && x < 0 ? NAN : x / (1 + exp(-x));
}

/* |got - ref| in ulp of ref's binade (the smallest subnormal below
 * 2^-126); -1 where got is wrong outright (a NaN missing or extra, a
 * wrong infinity). */
static double ulps(float got, double ref)
{
    if (isnan(ref) || isnan(got)) {
        return isnan(ref) && isnan(got) ? 0 : -1;
    }
    if (isinf((float)ref) || isinf(got)) {
        return got == (float)ref ? 0 : -1;
    }
    double ulp = 0x1p-149;
    if (fabs(ref) >= 0x1p-126) {
        int e;
        frexp(fabs(ref), &e);
        ulp = ldexp(1.0, e - 24);
    }
    return fabs((double)got - ref) / ulp;
}

#define BLOCK 4096

int main(int argc, char **argv)
{
    uint64_t stride = argc > 1 ? strtoull(argv[1], NULL, 10) : 97;
    static const float edges[] = {
        0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN,
        0x1p-149f, -0x1p-149f, 0x1p-126f, -0x1p-126f, 3.4e38f, -3.4e38f,
        -87.3f, -87.7f, -88.7f, -88.8f, -103.9f, -104.0f, -104.1f, -108.0f,
        -131.0f, -132.0f, 44.0f, 88.8f, 89.0f, 17.0f, -17.0f};
    int isas = 1;
#if HAVE_V3
    __builtin_cpu_init();
    isas = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
               ? 2
               : 1;
#endif
    long passed = 0, failed = 0;
    static float x[BLOCK], y[BLOCK];
    for (int isa = 0; isa < isas; isa++) {
        for (int fn = 0; fn < FNS; fn++) {
            double worst = 0;
            float at = 0;
            int n = 0;
            uint64_t b = 0;
            size_t e = 0;
            for (;;) {
                /* the edges first, then the sweep */
                int more = 0;
                while (n < BLOCK) {
                    float v;
                    if (e < sizeof edges / sizeof edges[0]) {
                        v = edges[e++];
                    }
                    else if (b < (1ull << 32)) {
                        uint32_t bits = (uint32_t)b;
                        memcpy(&v, &bits, sizeof v);
                        b += stride;
                    }
                    else {
                        break;
                    }
                    if (fn == 0 && v > 0) {
                        continue; /* exp_neg takes x <= 0 only */
                    }
                    x[n++] = v;
                    more = 1;
                }
                if (!more && n == 0) {
                    break;
                }
#if HAVE_V3
                if (isa == 1) {
                    run_v3(y, x, n, fn);
                }
                else
#endif
                {
                    run_base(y, x, n, fn);
                }
                for (int i = 0; i < n; i++) {
                    double u = ulps(y[i], reference(fn, x[i]));
                    if (u < 0 || u > bounds[fn]) {
                        if (failed < 20) {
                            printf("%s %s x=%.9g got %.9g want %.9g\n",
                                   names[fn], isa ? "v3" : "base", x[i],
                                   y[i], reference(fn, x[i]));
                        }
                        failed++;
                    }
                    else {
                        passed++;
                    }
                    if (u > worst) {
                        worst = u;
                        at = x[i];
                    }
                }
                n = 0;
            }
            printf("%s %s: worst %.3f ulp at x=%.9g\n", names[fn],
                   isa ? "v3" : "base", worst, at);
        }
    }
    printf("%ld passed, %ld failed\n", passed, failed);
    return 0;
}
