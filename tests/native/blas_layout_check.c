/* blas_layout_check.c - check csrc/blas_layout.h on the host, no GPU.
 *
 * For random shapes, strides and transposes (extent-1 dims with arbitrary
 * strides, padded leading dims, transposed views, broadcast batch strides,
 * k == 0, empty outputs) the row-major product is planned with
 * pygpu_gemm_plan_make, the plan is executed by a loop emulation of
 * cuBLAS's column-major gemm (which also enforces cuBLAS's argument rules
 * and stays inside the operands' buffers), and the result is compared with
 * a direct row-major product read through the original strides.  Every
 * buffer position that is not an element of its operand holds NaN, so a
 * plan that reads a wrong position shows up as a NaN in the result.
 * Integer-valued data keeps every sum exact.
 *
 *   cc -std=c99 -O2 -I csrc tests/native/blas_layout_check.c -o check
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/blas_layout.h"
#include "test_layouts.h"

static int passed, failed;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    return test_xorshift(&rng_state);
}

static int64_t pick(const int64_t *v, int n)
{
    return v[rng() % (uint64_t)n];
}

/* An operand in a buffer of doubles: the descriptor points into buf. */
typedef struct operand {
    pygpu_mat mat;
    double *buf;
    int64_t len;  /* elements in buf */
    int64_t base; /* offset of element 0 of batch 0 in buf */
} operand;

#define JUNK_BIG 1000003 /* the largest stride test_layout gives a dim of 1 */

/* Lay out a rows x cols operand, `batch` times, in one of several ways. */
static void operand_make(operand *op, int64_t rows, int64_t cols,
                         int64_t batch, int shared)
{
    int64_t rs, cs, span, bstride;
    int64_t b, i, j;

    span = test_layout(rows, cols, rng, &rs, &cs);
    bstride = (shared || batch == 1) ? 0 : span + (int64_t)(rng() % 3);
    if (batch == 1 && (rng() % 2)) {
        bstride = (int64_t)(rng() % 50) - 25; /* unused: anything goes */
    }
    op->mat.rows = rows;
    op->mat.cols = cols;
    op->mat.row_stride = rs;
    op->mat.col_stride = cs;
    op->mat.batch_stride = bstride;
    op->base = 3; /* a little NaN before the first element */
    op->len = op->base + span + (batch > 1 ? (batch - 1) * bstride : 0) + 3;
    op->buf = malloc((size_t)op->len * sizeof(double));
    for (i = 0; i < op->len; i++) {
        op->buf[i] = NAN;
    }
    for (b = 0; b < (shared ? 1 : batch); b++) {
        for (i = 0; i < rows; i++) {
            for (j = 0; j < cols; j++) {
                int64_t off = op->base + b * bstride + (rows > 1 ? i * rs : 0) +
                              (cols > 1 ? j * cs : 0);
                op->buf[off] = (double)((int64_t)(rng() % 9) - 4);
            }
        }
    }
    op->mat.ptr = op->buf + op->base;
}

/* Element (b, i, j) through the row-major descriptor. */
static double operand_at(const operand *op, int64_t b, int64_t i, int64_t j)
{
    const pygpu_mat *x = &op->mat;
    int64_t off = b * x->batch_stride + (x->rows > 1 ? i * x->row_stride : 0) +
                  (x->cols > 1 ? j * x->col_stride : 0);
    return ((const double *)x->ptr)[off];
}

/* cuBLAS's gemm with beta = 0 on column-major data, as a loop.  Returns
 * -1 where cuBLAS would refuse the arguments or where a read would fall
 * outside the operand's buffer. */
static int emulate_gemm(const pygpu_gemm_plan *p, const operand *opa,
                        const operand *opb, double *c, int64_t c_len)
{
    const double *a = p->a, *b = p->b;
    int64_t ar, ac, br, bc, bt, i, j, l;

    pygpu_gemm_stored_a(p, &ar, &ac);
    pygpu_gemm_stored_b(p, &br, &bc);
    if (p->m < 1 || p->n < 1 || p->k < 1 || p->batch < 1) {
        return -1;
    }
    if (p->lda < (ar > 1 ? ar : 1) || p->ldb < (br > 1 ? br : 1) ||
        p->ldc < (p->m > 1 ? p->m : 1)) {
        return -1;
    }
    for (bt = 0; bt < p->batch; bt++) {
        for (j = 0; j < p->n; j++) {
            for (i = 0; i < p->m; i++) {
                double sum = 0.0;
                for (l = 0; l < p->k; l++) {
                    int64_t ia = bt * p->stride_a +
                                 (p->trans_a ? l + i * p->lda : i + l * p->lda);
                    int64_t ib = bt * p->stride_b +
                                 (p->trans_b ? j + l * p->ldb : l + j * p->ldb);
                    int64_t pa = (a - opa->buf) + ia, pb = (b - opb->buf) + ib;
                    if (pa < 0 || pa >= opa->len || pb < 0 || pb >= opb->len) {
                        return -1;
                    }
                    sum += a[ia] * b[ib];
                }
                if (bt * p->stride_c + i + j * p->ldc >= c_len) {
                    return -1;
                }
                c[bt * p->stride_c + i + j * p->ldc] = sum;
            }
        }
    }
    return 0;
}

/* C = A @ B for one random problem; rhs_t: B is given as w (n x k) and
 * used transposed, as linear does. */
static void check_one(int64_t m, int64_t n, int64_t k, int64_t batch,
                      int rhs_t)
{
    operand oa, ob;
    pygpu_mat bmat;
    pygpu_gemm_plan p;
    int64_t c_len = batch * m * n, bt, i, j, l;
    double *c = malloc((size_t)(c_len > 0 ? c_len : 1) * sizeof(double));
    int kind, ok = 1;

    operand_make(&oa, m, k, batch, batch > 1 && rng() % 4 == 0);
    if (rhs_t) {
        operand_make(&ob, n, k, batch, batch > 1 && rng() % 4 == 0);
        bmat = pygpu_mat_transpose(&ob.mat);
    } else {
        operand_make(&ob, k, n, batch, batch > 1 && rng() % 4 == 0);
        bmat = ob.mat;
    }
    for (i = 0; i < c_len; i++) {
        c[i] = NAN;
    }
    kind = pygpu_gemm_plan_make(&oa.mat, &bmat, batch, &p);
    if (kind == PYGPU_GEMM_CALL) {
        /* The stride of an extent-1 dim never becomes a leading dim. */
        ok = emulate_gemm(&p, &ob, &oa, c, c_len) == 0 &&
             p.lda < JUNK_BIG && p.ldb < JUNK_BIG;
    } else if (kind == PYGPU_GEMM_ZERO) {
        ok = k == 0 && m > 0 && n > 0;
        memset(c, 0, (size_t)c_len * sizeof(double));
    } else if (kind == PYGPU_GEMM_NOOP) {
        ok = c_len == 0;
    } else {
        ok = 0;
    }
    for (bt = 0; ok && bt < batch; bt++) {
        for (i = 0; ok && i < m; i++) {
            for (j = 0; ok && j < n; j++) {
                double ref = 0.0;
                for (l = 0; l < k; l++) {
                    double bv = rhs_t ? operand_at(&ob, bt, j, l)
                                      : operand_at(&ob, bt, l, j);
                    ref += operand_at(&oa, bt, i, l) * bv;
                }
                /* NaN (a wrong read) never compares equal. */
                ok = c[(bt * m + i) * n + j] == ref;
            }
        }
    }
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL m=%lld n=%lld k=%lld batch=%lld rhs_t=%d kind=%d "
               "A(rs=%lld cs=%lld bs=%lld) B(rs=%lld cs=%lld bs=%lld) "
               "plan(ta=%d tb=%d lda=%lld ldb=%lld)\n",
               (long long)m, (long long)n, (long long)k, (long long)batch,
               rhs_t, kind, (long long)oa.mat.row_stride,
               (long long)oa.mat.col_stride, (long long)oa.mat.batch_stride,
               (long long)bmat.row_stride, (long long)bmat.col_stride,
               (long long)bmat.batch_stride, p.trans_a, p.trans_b,
               (long long)p.lda, (long long)p.ldb);
    }
    free(c);
    free(oa.buf);
    free(ob.buf);
}

/* Layouts no gemm can read must be reported, never planned. */
static void check_rejects(void)
{
    static const double data[64];
    /* rows x cols, rs, cs: broadcast rows, broadcast cols, overlap,
     * negative, expanded row vector. */
    static const int64_t bad[][4] = {
        {4, 3, 0, 1}, {3, 4, 1, 0}, {4, 4, 2, 1}, {3, 3, -3, 1}, {1, 5, 9, 0},
        {5, 1, 0, 7}};
    pygpu_mat ok = {data, 3, 3, 3, 1, 0};
    pygpu_gemm_plan p;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pygpu_mat x = {data, bad[i][0], bad[i][1], bad[i][2], bad[i][3], 0};
        pygpu_mat right = ok, left = ok;
        int k1, k2;

        right.rows = x.cols;
        left.cols = x.rows;
        left.row_stride = x.rows;
        k1 = pygpu_gemm_plan_make(&x, &right, 1, &p);
        k2 = pygpu_gemm_plan_make(&left, &x, 1, &p);
        if (k1 == PYGPU_GEMM_BAD_A && k2 == PYGPU_GEMM_BAD_B) {
            passed++;
        } else {
            failed++;
            printf("FAIL reject %zu: kinds %d %d\n", i, k1, k2);
        }
    }
}

/* Spot checks of the mapping rules themselves. */
static void check_rules(void)
{
    static const float data[64];
    pygpu_gemm_plan p;
    /* contiguous 2x3 @ 3x4: B row-major -> op N, lda = 4; A -> op N,
     * ldb = 3; ldc = 4; m' = 4, n' = 2. */
    pygpu_mat a = {data, 2, 3, 3, 1, 6}, b = {data, 3, 4, 4, 1, 12};
    int kind = pygpu_gemm_plan_make(&a, &b, 1, &p);
    int ok = kind == PYGPU_GEMM_CALL && p.m == 4 && p.n == 2 && p.k == 3 &&
             !p.trans_a && !p.trans_b && p.lda == 4 && p.ldb == 3 &&
             p.ldc == 4 && p.a == b.ptr && p.b == a.ptr;
    /* A^T view of a contiguous 3x2 (strides 1, 2): op T with ldb = 2. */
    pygpu_mat at = {data, 2, 3, 1, 2, 6};

    kind = pygpu_gemm_plan_make(&at, &b, 1, &p);
    ok = ok && kind == PYGPU_GEMM_CALL && p.trans_b && p.ldb == 2;
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL rules\n");
    }
}

int main(void)
{
    static const int64_t dims[] = {0, 1, 1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 31};
    static const int64_t batches[] = {1, 1, 2, 3};
    int t;

    check_rules();
    check_rejects();
    for (t = 0; t < 20000; t++) {
        int64_t m = pick(dims, 13), n = pick(dims, 13), k = pick(dims, 13);
        check_one(m, n, k, pick(batches, 4), (int)(rng() % 3 == 0));
    }
    /* The edges on purpose. */
    check_one(1, 1, 1, 1, 0);
    check_one(1, 1, 0, 1, 0);
    check_one(0, 5, 3, 2, 0);
    check_one(5, 0, 3, 2, 1);
    check_one(3, 3, 0, 3, 1);
    check_one(1, 7, 9, 3, 1);
    check_one(7, 1, 9, 3, 0);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
