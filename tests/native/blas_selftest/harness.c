/* harness.c - the self-test's shared state and host side: the globals,
 * the random sequence, dtype conversions, operands and device buffers,
 * tolerances and the pass / fail / skip counters (blas_selftest.h). */
#include "blas_selftest.h"

#include "cpu/half.h" /* the float16 rules the extension uses */

const char *dtype_name[] = {"float32", "float16", "float64"};
const int dtype_size[] = {4, 2, 8};

int passed, failed, skipped, lt_used, lt_fallback;
cublasHandle_t handle;
cublasLtHandle_t lt_handle;
void *workspace;
size_t workspace_size;

/* ------------------------------------------------------------ host side */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

uint64_t rng(void)
{
    return test_xorshift(&rng_state);
}

double absd(double x)
{
    return x < 0.0 ? -x : x;
}

/* A value exactly representable in the dtype. */
double random_value(int dtype)
{
    if (dtype == F16) { /* k / 1024, |k| <= 1024: exact in half */
        return (double)((int64_t)(rng() % 2049) - 1024) / 1024.0;
    }
    {
        double v = (double)(rng() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        return dtype == F32 ? (double)(float)v : v;
    }
}

void *to_dtype(int dtype, const double *v, int64_t n)
{
    void *out = malloc((size_t)(n > 0 ? n : 1) * (size_t)dtype_size[dtype]);
    int64_t i;

    for (i = 0; i < n; i++) {
        if (dtype == F32) {
            ((float *)out)[i] = (float)v[i];
        } else if (dtype == F16) {
            ((uint16_t *)out)[i] = pygpu_float_to_half((float)v[i]);
        } else {
            ((double *)out)[i] = v[i];
        }
    }
    return out;
}

static double from_dtype(int dtype, const void *buf, int64_t i)
{
    if (dtype == F32) {
        return ((const float *)buf)[i];
    }
    if (dtype == F16) {
        return pygpu_half_to_float(((const uint16_t *)buf)[i]);
    }
    return ((const double *)buf)[i];
}

/* ------------------------------------------------------------- operands */
pygpu_mat dense_mat(const void *ptr, int64_t rows, int64_t cols)
{
    pygpu_mat m = {ptr, rows, cols, cols, 1, 0};
    return m;
}

void operand_make(operand *op, int dtype, int64_t rows, int64_t cols,
                  int64_t batch, int shared)
{
    int64_t rs, cs, span, bstride;
    int64_t b, i, j;
    void *tmp;

    span = test_layout(rows, cols, rng, &rs, &cs);
    bstride = (shared || batch == 1) ? 0 : span + (int64_t)(rng() % 3);
    op->base = (int64_t)(rng() % 4);
    op->len = op->base + span + (batch > 1 ? (batch - 1) * bstride : 0) + 2;
    op->host = malloc((size_t)op->len * sizeof(double));
    for (i = 0; i < op->len; i++) {
        op->host[i] = NAN;
    }
    for (b = 0; b < (shared ? 1 : batch); b++) {
        for (i = 0; i < rows; i++) {
            for (j = 0; j < cols; j++) {
                op->host[op->base + b * bstride + (rows > 1 ? i * rs : 0) +
                         (cols > 1 ? j * cs : 0)] = random_value(dtype);
            }
        }
    }
    tmp = to_dtype(dtype, op->host, op->len);
    CUDA_OK(cudaMalloc(&op->dbuf, (size_t)op->len * (size_t)dtype_size[dtype]));
    CUDA_OK(cudaMemcpy(op->dbuf, tmp,
                       (size_t)op->len * (size_t)dtype_size[dtype],
                       cudaMemcpyHostToDevice));
    free(tmp);
    op->mat.ptr = (char *)op->dbuf + op->base * dtype_size[dtype];
    op->mat.rows = rows;
    op->mat.cols = cols;
    op->mat.row_stride = rs;
    op->mat.col_stride = cs;
    op->mat.batch_stride = bstride;
}

void operand_free(operand *op)
{
    free(op->host);
    CUDA_OK(cudaFree(op->dbuf));
}

double operand_at(const operand *op, int64_t b, int64_t i, int64_t j)
{
    const pygpu_mat *x = &op->mat;

    return op->host[op->base + b * x->batch_stride +
                    (x->rows > 1 ? i * x->row_stride : 0) +
                    (x->cols > 1 ? j * x->col_stride : 0)];
}

/* A device output of n elements, NaN-filled, at an element offset. */
void *output_alloc(int dtype, int64_t n, int64_t offset, void **base)
{
    int64_t len = n + offset + 1, i;
    double *nan = malloc((size_t)len * sizeof(double));
    void *tmp;

    for (i = 0; i < len; i++) {
        nan[i] = NAN;
    }
    tmp = to_dtype(dtype, nan, len);
    CUDA_OK(cudaMalloc(base, (size_t)len * (size_t)dtype_size[dtype]));
    CUDA_OK(cudaMemcpy(*base, tmp, (size_t)len * (size_t)dtype_size[dtype],
                       cudaMemcpyHostToDevice));
    free(tmp);
    free(nan);
    return (char *)*base + offset * dtype_size[dtype];
}

double *output_fetch(int dtype, const void *dptr, int64_t n)
{
    void *tmp = malloc((size_t)(n > 0 ? n : 1) * (size_t)dtype_size[dtype]);
    double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int64_t i;

    CUDA_OK(cudaMemcpy(tmp, dptr, (size_t)n * (size_t)dtype_size[dtype],
                       cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++) {
        out[i] = from_dtype(dtype, tmp, i);
    }
    free(tmp);
    return out;
}

/* n values of a dtype at byte offset `off` into a fresh device buffer
 * (*base: what to free). */
void *upload(int dtype, const double *v, int64_t n, size_t off,
             void **base)
{
    size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)dtype_size[dtype];
    void *tmp = to_dtype(dtype, v, n);

    CUDA_OK(cudaMalloc(base, bytes + off + 16));
    CUDA_OK(cudaMemcpy((char *)*base + off, tmp, bytes,
                       cudaMemcpyHostToDevice));
    free(tmp);
    return (char *)*base + off;
}

/* The raw bytes of n device elements. */
void *fetch_raw(int dtype, const void *dptr, int64_t n)
{
    size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)dtype_size[dtype];
    void *out = malloc(bytes);

    CUDA_OK(cudaMemcpy(out, dptr, bytes, cudaMemcpyDeviceToHost));
    return out;
}

/* |got - ref| within what the dtype's arithmetic allows for a sum whose
 * terms have absolute sum `sumabs` over k products. */
int close_enough(int dtype, int tf32, double got, double ref,
                 double sumabs, int64_t k)
{
    double tol;

    if (isnan(got)) {
        return 0;
    }
    if (dtype == F64) {
        tol = 0x1p-52 * (double)(k + 2) * sumabs;
    } else if (dtype == F32 && !tf32) {
        tol = 0x1p-23 * (double)(k + 2) * sumabs;
    } else if (dtype == F32) {
        tol = 0x1p-9 * sumabs + 0x1p-23 * (double)k * sumabs;
    } else { /* half output; partial sums may be rounded to half */
        tol = 0x1p-9 * sumabs + 0x1p-10 * absd(ref);
    }
    return absd(got - ref) <= tol + 1e-300;
}

void report(int ok, const char *what, int dtype, int tf32, int64_t m,
            int64_t n, int64_t k, int64_t batch, const char *detail)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s %s%s m=%lld n=%lld k=%lld batch=%lld %s\n", what,
           dtype_name[dtype], tf32 ? "+tf32" : "", (long long)m, (long long)n,
           (long long)k, (long long)batch, detail);
}

/* A case that cannot run here: not a failure, but named and counted. */
void skip(const char *what, const char *why)
{
    skipped++;
    printf("SKIP %s: %s\n", what, why);
}
