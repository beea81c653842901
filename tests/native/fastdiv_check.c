/* fastdiv_check.c - kernels/fastdiv.h on the host: n / d and n % d by
 * multiply and shift against the C operators, for every divisor up to
 * 4096 with a spread of dividends, the divisors around each power of two
 * and 2^31 - 1, and random pairs; dividends 0, 1, d - 1, d, d + 1,
 * multiples of d and their neighbours, and 2^31 - 1 among them.
 *
 * Prints "N passed, M failed" last; exits 1 when a case failed. */
#include <stdint.h>
#include <stdio.h>

#include "kernels/fastdiv.h"

static long passed, failed;

static uint64_t state = 0x9e3779b97f4a7c15ull;

static uint32_t next31(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 33);
}

static void one(uint32_t d, uint32_t n)
{
    pygpu_fastdiv f = pygpu_fastdiv_make(d);
    uint32_t q, r = pygpu_fastdiv_divmod(f, n, &q);
    if (q == n / d && r == n % d) {
        passed++;
    }
    else if (failed++ < 20) {
        printf("FAIL %u / %u: %u rem %u (want %u rem %u)\n", n, d, q, r,
               n / d, n % d);
    }
}

static void around(uint32_t d)
{
    const uint32_t top = 0x7fffffffu;
    uint32_t fixed[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, top,
                        top - 1, top / d * d, top / d * d - 1};
    for (unsigned k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
        if (fixed[k] <= top) {
            one(d, fixed[k]);
        }
    }
    for (int k = 0; k < 64; k++) {
        one(d, next31());
        uint32_t mult = next31() / d * d;
        one(d, mult);
        if (mult > 0) {
            one(d, mult - 1);
        }
    }
}

int main(void)
{
    for (uint32_t d = 1; d <= 4096; d++) {
        around(d);
    }
    for (int s = 12; s <= 30; s++) {
        for (int k = -3; k <= 3; k++) {
            around((uint32_t)(((int64_t)1 << s) + k));
        }
    }
    around(0x7fffffffu);
    around(0x7ffffffeu);
    for (int k = 0; k < 200000; k++) {
        uint32_t d = next31();
        one(d ? d : 1, next31());
        one((next31() & 0xffff) + 1, next31());
    }
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed != 0;
}
