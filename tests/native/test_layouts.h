/* test_layouts.h - random operand layouts for the cuBLAS mapping checks,
 * shared by blas_layout_check.c (CPU emulation) and blas_selftest/ (GPU).
 *
 * A rows x cols operand is laid out row-major (unit column stride) or
 * column-major (a transposed view), either dense or with padded leading
 * dimension; a dim of extent 1 gets an arbitrary stride, since it is never
 * stepped along.  The caller's generator is consumed in a fixed order:
 * layout, pad, then one draw per extent-1 dim.
 */
#ifndef PYGPU_TEST_LAYOUTS_H
#define PYGPU_TEST_LAYOUTS_H

#include <stdint.h>

/* One xorshift64 step of *state. */
static inline uint64_t test_xorshift(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Strides *rs, *cs for a rows x cols operand drawn with next(); returns
 * the span of its elements (1 for an empty operand). */
static inline int64_t test_layout(int64_t rows, int64_t cols,
                                  uint64_t (*next)(void), int64_t *rs,
                                  int64_t *cs)
{
    static const int64_t junk[] = {0, 1, 2, 7, 1000003, -5};
    int layout = (int)(next() % 4);
    int64_t pad = (int64_t)(next() % 3), hi = 0;

    if (layout < 2) { /* row-major, maybe padded rows */
        *cs = 1;
        *rs = cols + (layout == 1 ? pad : 0);
    } else { /* column-major, maybe padded columns */
        *rs = 1;
        *cs = rows + (layout == 3 ? pad : 0);
    }
    if (rows == 1) {
        *rs = junk[next() % 6];
    }
    if (cols == 1) {
        *cs = junk[next() % 6];
    }
    hi += rows > 1 ? (rows - 1) * *rs : 0;
    hi += cols > 1 ? (cols - 1) * *cs : 0;
    return rows * cols == 0 ? 1 : hi + 1;
}

#endif /* PYGPU_TEST_LAYOUTS_H */
