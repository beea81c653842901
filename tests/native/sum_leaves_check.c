/* sum_leaves_check.c - the two versions of the contiguous sum's leaf in
 * cpu/cpu_reduce.c (narrow vectors, and AVX2 where the CPU has it) give
 * the same bits on every leaf length and on inputs holding infinities,
 * NaNs of both signs and signed zeros; a NaN sum is the positive NaN.
 * Built and run by tests/ops/test_sum_leaves.py.  Prints "P passed, F failed"
 * last, or "skipped: ..." when there is no AVX2 version to compare. */
#include "cpu/cpu_reduce.c"

#include <stdio.h>

static uint64_t state = 88172645463325252ull;

static uint64_t
next(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* A random value, now and then a special one. */
static double
value(int specials)
{
    static const double special[] = {INFINITY, -INFINITY, NAN, -NAN, 0.0,
                                     -0.0, 1e38, -1e38};
    uint64_t r = next();
    if (specials && r % 16 == 0) {
        return special[(r >> 8) % 8];
    }
    return ((double)(r >> 11) / 9007199254740992.0 - 0.5) *
           (double)(1 << (r % 20));
}

static int
same_f32(float a, float b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static int
same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

int
main(void)
{
#if PYGPU_HAVE_AVX2_FN
    static float xf[SUM_LEAF + 1];
    static double xd[SUM_LEAF + 1];
    long passed = 0, failed = 0;
    const char *bad;
    if (pygpu_cpu_isa_init(&bad) < 0 || !PYGPU_CPU_HAS_AVX2()) {
        printf("skipped: this CPU has no AVX2\n");
        return 0;
    }
    for (int round = 0; round < 40; round++) {
        int specials = round % 2;
        for (int m = 0; m <= SUM_LEAF; m++) {
            /* an odd offset too: the loads are unaligned */
            int off = round % 4 == 3;
            for (int i = 0; i < m + off; i++) {
                xd[i] = value(specials);
                xf[i] = (float)xd[i];
            }
            float a = leaf_f32(xf + off, m), b = leaf_f32_wide(xf + off, m);
            double c = leaf_f64(xd + off, m), d = leaf_f64_wide(xd + off, m);
            int ok = same_f32(a, b) && same_f64(c, d) &&
                     (a == a || !signbit(a)) && (c == c || !signbit(c));
            if (ok) {
                passed++;
            }
            else if (failed++ < 10) {
                printf("m=%d round=%d: f32 %a / %a, f64 %a / %a\n", m, round,
                       a, b, c, d);
            }
        }
    }
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed != 0;
#else
    printf("skipped: no AVX2 version in this build\n");
    return 0;
#endif
}
