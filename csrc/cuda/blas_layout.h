/* blas_layout.h - how a row-major product maps onto cuBLAS's column-major
 * gemm, with no copy.
 *
 * Pure C (no Python, no CUDA) so that the same mapping is used by
 * cuda_blas.c, checked on the host by benchmarks/blas_layout_check.c and
 * run on a GPU by benchmarks/blas_selftest/.
 *
 * The swap.  cuBLAS computes C' = op(A') op(B') on column-major matrices.
 * A row-major m x n matrix read as column-major is its transpose (n x m),
 * so the row-major product C = A @ B is computed as C^T = B^T A^T:
 *     m' = n, n' = m, k' = k, A' = the row-major B, B' = the row-major A,
 * and C is written as an n x m column-major matrix with ldc = n, which is
 * exactly the contiguous row-major m x n result.
 *
 * One operand.  A row-major r x c operand X with strides (rs, cs) is
 *   - "row-major" when cs == 1: as column-major it is the c x r matrix X^T
 *     with ld = rs, which is what the swapped call wants: op N;
 *   - "column-major" when rs == 1: as column-major it is X itself (r x c)
 *     with ld = cs, so the swapped call asks for its transpose: op T.
 * cuBLAS requires ld >= max(1, rows of the stored matrix).  A dim of
 * extent 1 is never stepped along, so its stride is arbitrary (torch gives
 * such dims any stride): the unit-stride test ignores it, and an ld that
 * would be the stride of an extent-1 dim is replaced by the smallest valid
 * one.  Broadcast (stride 0), overlapping or negative layouts fit neither
 * form and are reported as unsupported; the caller makes a contiguous
 * copy of such operands.
 *
 * Degenerate sizes: m == 0, n == 0 or batch == 0 is a no-op; k == 0 means
 * C is all zeros, written by the caller (a memset: +0.0 is all-zero bits in
 * every float format) rather than by a k = 0 gemm.
 */
#ifndef PYGPU_BLAS_LAYOUT_H
#define PYGPU_BLAS_LAYOUT_H

#include <stdint.h>

#include "cuda/blas.h"

/* What pygpu_gemm_plan_make found. */
enum pygpu_gemm_kind {
    PYGPU_GEMM_CALL = 0,   /* one (batched) gemm as described by the plan */
    PYGPU_GEMM_NOOP = 1,   /* empty output: nothing to do */
    PYGPU_GEMM_ZERO = 2,   /* k == 0: fill C with zeros */
    PYGPU_GEMM_BAD_A = -1, /* the row-major left operand has no usable layout */
    PYGPU_GEMM_BAD_B = -2, /* the row-major right operand has none */
    PYGPU_GEMM_BAD_SHAPE = -3 /* inner dims differ or a size is negative */
};

/* The arguments of the column-major call, named as cuBLAS names them:
 * `a` is the row-major right operand B and `b` the row-major left operand
 * A (see the swap above).  trans_* are 0 for CUBLAS_OP_N, 1 for _OP_T. */
typedef struct pygpu_gemm_plan {
    int trans_a, trans_b;
    int64_t m, n, k;
    const void *a, *b;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c; /* batch strides, elements */
    int64_t batch;
} pygpu_gemm_plan;

/* The column-major view of a row-major rows x cols operand with strides
 * (rs, cs): 0 with *trans and *ld set, or -1 when it has no valid one.
 * Row-major is tried first: it is the common case and the one a
 * contiguous operand takes. */
static inline int pygpu_colmajor_view(int64_t rows, int64_t cols, int64_t rs,
                                      int64_t cs, int *trans, int64_t *ld)
{
    int64_t min_ld_rm = cols > 1 ? cols : 1; /* stored cols x rows */
    int64_t min_ld_cm = rows > 1 ? rows : 1; /* stored rows x cols */

    if (cs == 1 || cols == 1) {
        int64_t cand = rows == 1 ? min_ld_rm : rs;
        if (cand >= min_ld_rm) {
            *trans = 0;
            *ld = cand;
            return 0;
        }
    }
    if (rs == 1 || rows == 1) {
        int64_t cand = cols == 1 ? min_ld_cm : cs;
        if (cand >= min_ld_cm) {
            *trans = 1;
            *ld = cand;
            return 0;
        }
    }
    return -1;
}

/* Plan C[i] = A[i] @ B[i] for i in [0, batch), with C contiguous m x n
 * (batch stride m * n).  Returns an enum pygpu_gemm_kind; the plan is
 * complete only for PYGPU_GEMM_CALL (m, n, k, batch are set for every
 * non-negative kind). */
static inline int pygpu_gemm_plan_make(const pygpu_mat *a, const pygpu_mat *b,
                                       int64_t batch, pygpu_gemm_plan *p)
{
    int64_t m = a->rows, k = a->cols, n = b->cols;

    p->trans_a = 0;
    p->trans_b = 0;
    p->m = n;
    p->n = m;
    p->k = k;
    p->a = b->ptr;
    p->b = a->ptr;
    p->lda = 1;
    p->ldb = 1;
    p->ldc = n > 1 ? n : 1;
    p->stride_a = b->batch_stride;
    p->stride_b = a->batch_stride;
    p->stride_c = m * n;
    p->batch = batch;

    if (m < 0 || n < 0 || k < 0 || batch < 0 || b->rows != k) {
        return PYGPU_GEMM_BAD_SHAPE;
    }
    if (m == 0 || n == 0 || batch == 0) {
        return PYGPU_GEMM_NOOP;
    }
    if (k == 0) {
        return PYGPU_GEMM_ZERO;
    }
    if (pygpu_colmajor_view(b->rows, b->cols, b->row_stride, b->col_stride,
                            &p->trans_a, &p->lda) < 0) {
        return PYGPU_GEMM_BAD_B;
    }
    if (pygpu_colmajor_view(a->rows, a->cols, a->row_stride, a->col_stride,
                            &p->trans_b, &p->ldb) < 0) {
        return PYGPU_GEMM_BAD_A;
    }
    return PYGPU_GEMM_CALL;
}

/* The transpose of a row-major operand as another descriptor (a view, no
 * data moves): linear's w^T. */
static inline pygpu_mat pygpu_mat_transpose(const pygpu_mat *w)
{
    pygpu_mat t = *w;

    t.rows = w->cols;
    t.cols = w->rows;
    t.row_stride = w->col_stride;
    t.col_stride = w->row_stride;
    return t;
}

/* Rows and cols of the matrix stored in memory for the call's A (before
 * op): m' x k' for op N, k' x m' for op T.  cuBLASLt layouts describe
 * these. */
static inline void pygpu_gemm_stored_a(const pygpu_gemm_plan *p,
                                       int64_t *rows, int64_t *cols)
{
    *rows = p->trans_a ? p->k : p->m;
    *cols = p->trans_a ? p->m : p->k;
}

/* The same for B: k' x n' for op N, n' x k' for op T. */
static inline void pygpu_gemm_stored_b(const pygpu_gemm_plan *p,
                                       int64_t *rows, int64_t *cols)
{
    *rows = p->trans_b ? p->n : p->k;
    *cols = p->trans_b ? p->k : p->n;
}

/* Whether every size the 32-bit cuBLAS entry points take fits an int;
 * otherwise the _64 entry points are used. */
static inline int pygpu_gemm_plan_fits_int(const pygpu_gemm_plan *p)
{
    const int64_t lim = 2147483647;

    return p->m <= lim && p->n <= lim && p->k <= lim && p->lda <= lim &&
           p->ldb <= lim && p->ldc <= lim && p->batch <= lim;
}

/* The alignment of an address in bytes, capped at 256 (the most that
 * cuBLASLt's alignment preferences distinguish): the largest power of two
 * dividing it. */
static inline uint32_t pygpu_ptr_alignment(const void *ptr)
{
    uintptr_t v = (uintptr_t)ptr;
    uint32_t align = 256;

    while (align > 1 && (v % align) != 0) {
        align /= 2;
    }
    return align;
}

#endif /* PYGPU_BLAS_LAYOUT_H */
