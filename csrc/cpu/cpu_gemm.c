/* cpu_gemm.c - float32 / float64 products (matmul, bmm, linear) by the
 * BLAS's gemm (cpu_blas.c), split over the thread pool.
 *
 * Operands are read in place whenever the BLAS can: a matrix with unit
 * column stride as it is, one with unit row stride (a transpose, as
 * w.T or x.mT) with the transpose flag; only others are copied.  linear
 * (x @ w.T + bias) is one gemm per block: the bias row is written into
 * the block's rows of the result, then gemm adds the product to it
 * (beta = 1); relu, when fused, follows on the same block.  A product of
 * few rows and many columns (swap_worth) is computed as its transpose,
 * C^T = B^T A^T, into scratch, and each block is transposed into the
 * result as soon as it is done (the bias then runs down the rows).
 *
 * Splitting: a product of GEMM_TASK_MACS multiply-adds or more is cut
 * into blocks of whole rows of the result (when it has more rows than
 * columns) or of whole columns, at least GEMM_MIN_BLOCK wide, each one
 * gemm call on one thread; small matrices of a batch go several to a
 * task.  The cut depends on the shapes only, never on the thread count,
 * so 1 and n threads give the same bits.  Each block packs the whole of
 * the operand it shares with the others again (OpenBLAS packs the
 * operands of each call), a cost of about 1 / block of the work whatever
 * the other sizes: so a dim is cut into GEMM_FEW_BLOCKS blocks, or more
 * only as far as they stay GEMM_BIG_BLOCK wide.  On the 2-core test
 * machine, one thread, blocks of 128 against 512 rows or columns: 2048^3
 * matmul 205-220 ms against 189-199, 1024^3 linear 26-33 ms against
 * 24-28.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"
#include "cpu/cpu_blas.h"
#include "cpu/cpu_copy.h"
#include "cpu/cpu_parallel.h"
#include "kernels/kernels.h"

/* Products below this many multiply-adds keep the GIL (they take a few
 * microseconds). */
#define GEMM_NOGIL_MACS (1 << 15)
/* Multiply-adds per task at least: ~15-30 us of one core. */
#define GEMM_TASK_MACS (1 << 20)
/* Rows or columns of a block at least, and a multiple of the alignment. */
#define GEMM_MIN_BLOCK 128
#define GEMM_BLOCK_ALIGN 16
/* Blocks per dim: up to GEMM_FEW_BLOCKS of any width (enough for a few
 * threads to share), more only while each stays GEMM_BIG_BLOCK wide. */
#define GEMM_FEW_BLOCKS 4
#define GEMM_BIG_BLOCK 512
/* Products computed transposed (swap_worth): at most this many rows, and
 * sums of at least this many terms. */
#define GEMM_SWAP_ROWS 64
#define GEMM_SWAP_K 256

/* One operand as the BLAS reads it: row-major with leading dim ld, or
 * stored transposed (trans); the element strides of its batch dims, 0
 * where it is broadcast. */
typedef struct {
    const char *data;
    int trans;
    int64_t ld;
    int64_t bstrides[PYGPU_MAX_DIMS];
} gemm_operand;

typedef struct {
    int dtype;
    int64_t isz;
    int64_t m, n, k;
    gemm_operand a, b;
    char *c;           /* contiguous: batch x m x n */
    const char *bias;  /* n values (m when bias_rows) or NULL */
    int bias_rows;     /* the bias runs down the rows of c, not along */
    char *dst;         /* when set, c is scratch: each block is written
                          transposed into dst (batch x n x m) */
    int relu;
    int nb;
    const int64_t *bshape;
    int by_rows;       /* blocks of rows of c, else of columns */
    int64_t block;     /* rows or columns per block */
    int64_t blocks;    /* blocks per matrix */
    int64_t per_task;  /* matrices per task when blocks == 1 */
    int64_t batch;
} gemm_job;

/* How the BLAS reads a rows x cols matrix of element strides rs, cs: 1
 * and *trans, *ld when it can (a stride along a dim of one element does
 * not matter), 0 when it cannot. */
static int
layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *trans,
       int64_t *ld)
{
    int64_t r1 = rows > 1 ? rows : 1, c1 = cols > 1 ? cols : 1;
    if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= c1)) {
        *trans = 0;
        *ld = rows <= 1 ? c1 : rs;
        return 1;
    }
    if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= r1)) {
        *trans = 1;
        *ld = cols <= 1 ? r1 : cs;
        return 1;
    }
    return 0;
}

/* The matrix of t's last two dims (swapped when swap: linear's weight,
 * read as its transpose) as the BLAS reads it, and its batch strides over
 * bshape's nb dims.  0 when it fits as it is. */
static int
describe(TensorObject *t, int swap, int nb, const int64_t *bshape,
         gemm_operand *op)
{
    int d = t->ndim;
    int64_t rows = t->shape[d - 2], cols = t->shape[d - 1];
    int64_t rs = t->strides[d - 2], cs = t->strides[d - 1];
    if (swap) {
        int64_t s = rows;
        rows = cols;
        cols = s;
        s = rs;
        rs = cs;
        cs = s;
    }
    if (!layout(rows, cols, rs, cs, &op->trans, &op->ld)) {
        return -1;
    }
    op->data = t->data;
    for (int i = 0; i < nb; i++) {
        int td = i - (nb - (d - 2)); /* t's batch dims are right-aligned */
        op->bstrides[i] =
            td < 0 || t->shape[td] != bshape[i] ? 0 : t->strides[td];
    }
    return 0;
}

/* describe, after copying t to a contiguous *copy if need be (which the
 * BLAS always reads).  -1 with an exception. */
static int
operand(TensorObject *t, int swap, int nb, const int64_t *bshape,
        TensorObject **copy, gemm_operand *op)
{
    if (describe(t, swap, nb, bshape, op) == 0) {
        return 0;
    }
    *copy = pygpu_tensor_empty(t->ndim, t->shape, t->dtype, t->device);
    if (*copy == NULL || pygpu_op_copy_same_device(*copy, t) < 0) {
        return -1;
    }
    return describe(*copy, swap, nb, bshape, op) == 0 ? 0 : -1;
}

/* Element offset of matrix i of the batch in op. */
static int64_t
batch_offset(const gemm_job *j, const gemm_operand *op, int64_t i)
{
    int64_t off = 0;
    for (int d = j->nb - 1; d >= 0; d--) {
        off += (i % j->bshape[d]) * op->bstrides[d];
        i /= j->bshape[d];
    }
    return off;
}

/* count copies of the element at v (isz bytes) from dst on. */
static void
fill_row(char *dst, const char *v, int64_t count, int64_t isz)
{
    if (isz == 4) {
        float f;
        memcpy(&f, v, 4);
        for (int64_t c = 0; c < count; c++) {
            ((float *)dst)[c] = f;
        }
    }
    else {
        double d;
        memcpy(&d, v, 8);
        for (int64_t c = 0; c < count; c++) {
            ((double *)dst)[c] = d;
        }
    }
}

/* Rows r0 .. r1 - 1 and columns c0 .. c1 - 1 of matrix i of the result. */
static void
gemm_block(const gemm_job *j, int64_t i, int64_t r0, int64_t r1, int64_t c0,
           int64_t c1)
{
    const gemm_operand *a = &j->a, *b = &j->b;
    int64_t rows = r1 - r0, cols = c1 - c0, n = j->n, isz = j->isz;
    const char *pa = a->data +
                     (batch_offset(j, a, i) + (a->trans ? r0 : r0 * a->ld)) *
                         isz;
    const char *pb = b->data +
                     (batch_offset(j, b, i) + (b->trans ? c0 * b->ld : c0)) *
                         isz;
    char *pc = j->c + ((i * j->m + r0) * n + c0) * isz;
    for (int64_t r = 0; r < rows && (j->bias || j->k == 0); r++) {
        if (j->bias && j->bias_rows) {
            fill_row(pc + r * n * isz, j->bias + (r0 + r) * isz, cols, isz);
        }
        else if (j->bias) {
            memcpy(pc + r * n * isz, j->bias + c0 * isz,
                   (size_t)(cols * isz));
        }
        else {
            memset(pc + r * n * isz, 0, (size_t)(cols * isz));
        }
    }
    if (j->k > 0) {
        pygpu_cpu_blas_gemm(j->dtype, a->trans, b->trans, rows, cols, j->k,
                            pa, a->ld, pb, b->ld, j->bias != NULL, pc, n);
    }
    if (j->relu && cols == n) {
        pygpu_cpu_relu_contig(j->dtype, pc, pc, rows * n);
    }
    else if (j->relu) {
        for (int64_t r = 0; r < rows; r++) {
            pygpu_cpu_relu_contig(j->dtype, pc + r * n * isz,
                                  pc + r * n * isz, cols);
        }
    }
    if (j->dst) {
        pygpu_cpu_transpose(j->dst + ((i * n + c0) * j->m + r0) * isz, j->m,
                            pc, n, rows, cols, (size_t)isz);
    }
}

static void
gemm_task(void *ctx, int64_t task)
{
    const gemm_job *j = ctx;
    if (j->blocks > 1) {
        int64_t dim = j->by_rows ? j->m : j->n;
        int64_t lo = (task % j->blocks) * j->block;
        int64_t hi = lo + j->block < dim ? lo + j->block : dim;
        int64_t i = task / j->blocks;
        if (j->by_rows) {
            gemm_block(j, i, lo, hi, 0, j->n);
        }
        else {
            gemm_block(j, i, 0, j->m, lo, hi);
        }
        return;
    }
    int64_t first = task * j->per_task;
    int64_t last = first + j->per_task < j->batch ? first + j->per_task
                                                   : j->batch;
    for (int64_t i = first; i < last; i++) {
        gemm_block(j, i, 0, j->m, 0, j->n);
    }
}

/* Whether C = A B is better computed as C^T = B^T A^T and transposed:
 * OpenBLAS's sgemm and dgemm (Haswell kernels, on the 2-core test
 * machine) ran a product of few rows and many columns with a long sum up
 * to twice as slowly as its transpose.  One thread, row-major, m x k x n:
 * 32 x 784 x 512 (linear's x @ w.T) 1610 us against 1080 for w @ x.T;
 * 1 x 784 x 512 246 against 147; 16 x 576 x 256 339 against 153; 64 x 576
 * x 3136 10.2 ms against 7.2; level from 128 rows, and at sums of 150 or
 * fewer (0.9-1.0x). */
static int
swap_worth(int64_t m, int64_t n, int64_t k)
{
    /* measured on the Haswell kernels only: others keep the plain order */
    return m < n && m <= GEMM_SWAP_ROWS && k >= GEMM_SWAP_K &&
           pygpu_cpu_blas_haswell();
}

/* The blocks of each matrix, or the matrices of each task; the number of
 * tasks. */
static int64_t
plan(gemm_job *j)
{
    double macs = (double)j->m * (double)j->n * (double)j->k;
    int64_t dim;
    j->by_rows = j->m > j->n;
    dim = j->by_rows ? j->m : j->n;
    double parts = macs / GEMM_TASK_MACS;
    if (parts > (double)(dim / GEMM_MIN_BLOCK)) {
        parts = (double)(dim / GEMM_MIN_BLOCK);
    }
    if (parts > GEMM_FEW_BLOCKS && parts > (double)(dim / GEMM_BIG_BLOCK)) {
        parts = dim / GEMM_BIG_BLOCK > GEMM_FEW_BLOCKS
                    ? (double)(dim / GEMM_BIG_BLOCK)
                    : GEMM_FEW_BLOCKS;
    }
    if (parts >= 2) {
        int64_t p = (int64_t)parts;
        int64_t block = (dim + p - 1) / p;
        block = (block + GEMM_BLOCK_ALIGN - 1) / GEMM_BLOCK_ALIGN *
                GEMM_BLOCK_ALIGN;
        j->block = block;
        j->blocks = (dim + block - 1) / block;
        j->per_task = 1;
        return j->batch * j->blocks;
    }
    j->blocks = 1;
    j->per_task = macs * (double)j->batch <= GEMM_TASK_MACS ? j->batch
                  : macs >= GEMM_TASK_MACS ? 1
                                           : (int64_t)(GEMM_TASK_MACS / macs);
    return (j->batch + j->per_task - 1) / j->per_task;
}

static void
run_job(gemm_job *j, int64_t tasks)
{
    pygpu_cpu_blas_enter();
    if (tasks == 1) {
        gemm_task(j, 0);
    }
    else {
        pygpu_parallel_run(tasks, gemm_task, j);
    }
    pygpu_cpu_blas_leave();
}

int
pygpu_cpu_gemm(TensorObject *out, TensorObject *a, TensorObject *b,
               int b_t, int nb, const int64_t *bshape, TensorObject *bias,
               int relu)
{
    TensorObject *ac = NULL, *bc = NULL;
    char *scratch = NULL;
    int rc = -1;
    if ((out->dtype != PYGPU_FLOAT32 && out->dtype != PYGPU_FLOAT64) ||
        !pygpu_cpu_blas_ready()) {
        return 0;
    }
    gemm_job j = {
        .dtype = out->dtype,
        .isz = pygpu_dtype_table[out->dtype].itemsize,
        .m = a->shape[a->ndim - 2],
        .k = a->shape[a->ndim - 1],
        .n = b_t ? b->shape[0] : b->shape[b->ndim - 1],
        .c = out->data,
        .bias = bias ? bias->data : NULL,
        .relu = relu,
        .nb = nb,
        .bshape = bshape,
        .batch = pygpu_numel(nb, bshape),
    };
    if (operand(a, 0, nb, bshape, &ac, &j.a) < 0 ||
        operand(b, b_t, nb, bshape, &bc, &j.b) < 0) {
        goto fail;
    }
    rc = 1;
    if (j.m == 0 || j.n == 0 || j.batch == 0) {
        goto fail;
    }
    if (!pygpu_cpu_blas_fits(j.m) || !pygpu_cpu_blas_fits(j.n) ||
        !pygpu_cpu_blas_fits(j.k) || !pygpu_cpu_blas_fits(j.a.ld) ||
        !pygpu_cpu_blas_fits(j.b.ld)) {
        rc = 0;
        goto fail;
    }
    if (swap_worth(j.m, j.n, j.k)) {
        /* C^T = B^T A^T into scratch, each block transposed into out. */
        scratch = malloc((size_t)(j.batch * j.m * j.n * j.isz));
        if (scratch != NULL) {
            gemm_operand t = j.a;
            j.a = j.b;
            j.b = t;
            j.a.trans = !j.a.trans;
            j.b.trans = !j.b.trans;
            int64_t m = j.m;
            j.m = j.n;
            j.n = m;
            j.dst = j.c;
            j.c = scratch;
            j.bias_rows = 1;
        }
    }
    int64_t tasks = plan(&j);
    if ((double)j.m * (double)j.n * (double)(j.k + 1) * (double)j.batch >=
        GEMM_NOGIL_MACS) {
        Py_BEGIN_ALLOW_THREADS
        run_job(&j, tasks);
        Py_END_ALLOW_THREADS
    }
    else {
        run_job(&j, tasks);
    }
fail:
    free(scratch);
    Py_XDECREF(ac);
    Py_XDECREF(bc);
    return rc;
}
