/* blas_selftest.c - run, on a GPU, the cuBLAS / cuBLASLt call sequences of
 * csrc/cuda_blas.c and csrc/cuda_blaslt.c, with the same row-major mapping
 * (csrc/blas_layout.h), and check them against a host product in double.
 *
 * No Python: the sequences are restated here (gemm with the 32- and 64-bit
 * entry points, the k == 0 memset, cuBLASLt descriptors / layouts /
 * alignment preferences / heuristic / epilogues with a descriptor reused
 * for a second bias pointer, the workspace handed over between streams).
 * Where the extension would take the bias/relu kernel (no cuBLASLt
 * algorithm, or a bias under 16-byte alignment) the epilogue is applied on
 * the host, so the gemm part is still checked.
 *
 *   gcc -std=c99 -O2 -I csrc -I $CUDA_HOME/include \
 *       benchmarks/blas_selftest.c -o blas_selftest \
 *       -L $CUDA_HOME/lib64 -lcublasLt -lcublas -lcudart
 *
 * Prints each failure and then "N passed, M failed"; exits 1 on failure.
 */
#define _POSIX_C_SOURCE 199309L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "blas_layout.h"

/* dtype codes as in kernels.h (not included: it is the extension's). */
enum { F32 = 0, F16 = 1, F64 = 2 };
static const char *dtype_name[] = {"float32", "float16", "float64"};
static const int dtype_size[] = {4, 2, 8};

#define WORKSPACE_BYTES ((size_t)32 << 20)
#define MIN_BIAS_ALIGN 16

static int passed, failed, lt_used, lt_fallback;
static cublasHandle_t handle;
static cublasLtHandle_t lt_handle;
static void *workspace;
static size_t workspace_size;

/* A setup failure (not a test failure): report and stop. */
#define CUDA_OK(x)                                                           \
    do {                                                                     \
        cudaError_t err_ = (x);                                              \
        if (err_ != cudaSuccess) {                                           \
            printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),   \
                   __FILE__, __LINE__, #x);                                  \
            exit(2);                                                         \
        }                                                                    \
    } while (0)
#define BLAS_OK(x)                                                           \
    do {                                                                     \
        cublasStatus_t st_ = (x);                                            \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                  \
            printf("cuBLAS error %s at %s:%d: %s\n",                         \
                   cublasGetStatusName(st_), __FILE__, __LINE__, #x);        \
            exit(2);                                                         \
        }                                                                    \
    } while (0)

/* ------------------------------------------------------------ host side */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint16_t half_from_float(float f)
{
    uint32_t x, sign, absx, mant, h, rem;
    int32_t exp;

    memcpy(&x, &f, sizeof(x));
    sign = (x >> 16) & 0x8000u;
    absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    }
    if (absx >= 0x477ff000u) {
        return (uint16_t)(sign | 0x7c00u);
    }
    if (absx < 0x38800000u) { /* a half subnormal: round(v * 2^24) */
        float v;
        double t;
        memcpy(&v, &absx, sizeof(v));
        t = (double)v * 16777216.0; /* exact */
        h = (uint32_t)t;
        if (t - (double)h > 0.5 || (t - (double)h == 0.5 && (h & 1u))) {
            h++;
        }
        return (uint16_t)(sign | h);
    }
    mant = absx & 0x7fffffu;
    exp = (int32_t)(absx >> 23) - 127 + 15;
    h = ((uint32_t)exp << 10) | (mant >> 13);
    rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) {
        h++;
    }
    return (uint16_t)(sign | h);
}

/* 2^e, exactly, without libm. */
static double pow2(int e)
{
    double v = 1.0;

    for (; e > 0; e--) {
        v *= 2.0;
    }
    for (; e < 0; e++) {
        v *= 0.5;
    }
    return v;
}

static double absd(double x)
{
    return x < 0.0 ? -x : x;
}

static double half_to_double(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;

    if (exp == 0) {
        v = (double)mant * pow2(-24);
    } else if (exp == 31) {
        v = mant ? NAN : INFINITY;
    } else {
        v = (double)(mant | 0x400) * pow2(exp - 25);
    }
    return (h & 0x8000) ? -v : v;
}

/* A value exactly representable in the dtype. */
static double random_value(int dtype)
{
    if (dtype == F16) { /* k / 1024, |k| <= 1024: exact in half */
        return (double)((int64_t)(rng() % 2049) - 1024) / 1024.0;
    }
    {
        double v = (double)(rng() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        return dtype == F32 ? (double)(float)v : v;
    }
}

static void *to_dtype(int dtype, const double *v, int64_t n)
{
    void *out = malloc((size_t)(n > 0 ? n : 1) * (size_t)dtype_size[dtype]);
    int64_t i;

    for (i = 0; i < n; i++) {
        if (dtype == F32) {
            ((float *)out)[i] = (float)v[i];
        } else if (dtype == F16) {
            ((uint16_t *)out)[i] = half_from_float((float)v[i]);
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
        return half_to_double(((const uint16_t *)buf)[i]);
    }
    return ((const double *)buf)[i];
}

/* ------------------------------------------------------------- operands */
/* A rows x cols operand (times batch) on the device inside a buffer whose
 * other positions hold NaN, at a random element offset (to vary the
 * pointer's alignment).  host[] mirrors the device buffer in double. */
typedef struct operand {
    pygpu_mat mat; /* ptr: device address of element 0 of batch 0 */
    double *host;
    int64_t len, base;
    void *dbuf;
} operand;

static int64_t junk_stride(void)
{
    static const int64_t v[] = {0, 1, 2, 7, 1000003, -5};
    return v[rng() % 6];
}

static void operand_make(operand *op, int dtype, int64_t rows, int64_t cols,
                         int64_t batch, int shared)
{
    int layout = (int)(rng() % 4);
    int64_t pad = (int64_t)(rng() % 3), rs, cs, span, bstride, hi = 0;
    int64_t b, i, j;
    void *tmp;

    if (layout < 2) {
        cs = 1;
        rs = cols + (layout == 1 ? pad : 0);
    } else {
        rs = 1;
        cs = rows + (layout == 3 ? pad : 0);
    }
    if (rows == 1) {
        rs = junk_stride();
    }
    if (cols == 1) {
        cs = junk_stride();
    }
    hi += rows > 1 ? (rows - 1) * rs : 0;
    hi += cols > 1 ? (cols - 1) * cs : 0;
    span = rows * cols == 0 ? 1 : hi + 1;
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

static void operand_free(operand *op)
{
    free(op->host);
    CUDA_OK(cudaFree(op->dbuf));
}

static double operand_at(const operand *op, int64_t b, int64_t i, int64_t j)
{
    const pygpu_mat *x = &op->mat;

    return op->host[op->base + b * x->batch_stride +
                    (x->rows > 1 ? i * x->row_stride : 0) +
                    (x->cols > 1 ? j * x->col_stride : 0)];
}

/* A device output of n elements, NaN-filled, at an element offset. */
static void *output_alloc(int dtype, int64_t n, int64_t offset, void **base)
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

static double *output_fetch(int dtype, const void *dptr, int64_t n)
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

/* |got - ref| within what the dtype's arithmetic allows for a sum whose
 * terms have absolute sum `sumabs` over k products. */
static int close_enough(int dtype, int tf32, double got, double ref,
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

static void report(int ok, const char *what, int dtype, int tf32, int64_t m,
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

/* ------------------------------------------- the extension's sequences */
static void blas_types(int dtype, int tf32, cudaDataType_t *type,
                       cublasComputeType_t *compute, cudaDataType_t *scale)
{
    if (dtype == F32) {
        *type = CUDA_R_32F;
        *compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        *scale = CUDA_R_32F;
    } else if (dtype == F16) {
        *type = CUDA_R_16F;
        *compute = CUBLAS_COMPUTE_32F;
        *scale = CUDA_R_32F;
    } else {
        *type = CUDA_R_64F;
        *compute = CUBLAS_COMPUTE_64F;
        *scale = CUDA_R_64F;
    }
}

/* pygpu_blas_gemm: force64 takes the _64 entry points even when the sizes
 * fit an int. */
static cublasStatus_t run_gemm(int dtype, int tf32, int kind,
                               const pygpu_gemm_plan *p, void *c,
                               cudaStream_t stream, int force64)
{
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    cudaDataType_t type, scale;
    cublasComputeType_t compute;
    cublasOperation_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const void *alpha, *beta;

    if (kind == PYGPU_GEMM_ZERO) {
        size_t bytes = (size_t)(p->batch * p->m * p->n) *
                       (size_t)dtype_size[dtype];
        return cudaMemsetAsync(c, 0, bytes, stream) == cudaSuccess
                   ? CUBLAS_STATUS_SUCCESS
                   : CUBLAS_STATUS_EXECUTION_FAILED;
    }
    blas_types(dtype, tf32, &type, &compute, &scale);
    alpha = scale == CUDA_R_64F ? (const void *)&one_d : (const void *)&one_f;
    beta = scale == CUDA_R_64F ? (const void *)&zero_d : (const void *)&zero_f;
    if (pygpu_gemm_plan_fits_int(p) && !force64) {
        if (p->batch == 1) {
            return cublasGemmEx(handle, ta, tb, (int)p->m, (int)p->n,
                                (int)p->k, alpha, p->a, type, (int)p->lda,
                                p->b, type, (int)p->ldb, beta, c, type,
                                (int)p->ldc, compute, CUBLAS_GEMM_DEFAULT);
        }
        return cublasGemmStridedBatchedEx(
            handle, ta, tb, (int)p->m, (int)p->n, (int)p->k, alpha, p->a, type,
            (int)p->lda, (long long)p->stride_a, p->b, type, (int)p->ldb,
            (long long)p->stride_b, beta, c, type, (int)p->ldc,
            (long long)p->stride_c, (int)p->batch, compute,
            CUBLAS_GEMM_DEFAULT);
    }
    if (p->batch == 1) {
        return cublasGemmEx_64(handle, ta, tb, p->m, p->n, p->k, alpha, p->a,
                               type, p->lda, p->b, type, p->ldb, beta, c, type,
                               p->ldc, compute, CUBLAS_GEMM_DEFAULT);
    }
    return cublasGemmStridedBatchedEx_64(
        handle, ta, tb, p->m, p->n, p->k, alpha, p->a, type, p->lda,
        (long long)p->stride_a, p->b, type, p->ldb, (long long)p->stride_b,
        beta, c, type, p->ldc, (long long)p->stride_c, p->batch, compute,
        CUBLAS_GEMM_DEFAULT);
}

/* A cuBLASLt plan: lt_plan_build of cuda_blaslt.c. */
typedef struct lt_plan {
    int use_lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} lt_plan;

static void lt_build(lt_plan *s, int dtype, int tf32,
                     const pygpu_gemm_plan *p, const void *out,
                     const void *bias, int relu)
{
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t result;
    cudaDataType_t type, scale;
    cublasComputeType_t compute;
    int32_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int32_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    uint32_t epilogue = bias != NULL ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                             : CUBLASLT_EPILOGUE_BIAS)
                                     : (relu ? CUBLASLT_EPILOGUE_RELU
                                             : CUBLASLT_EPILOGUE_DEFAULT);
    uint64_t ws = workspace_size;
    uint32_t align_a = pygpu_ptr_alignment(p->a);
    uint32_t align_b = pygpu_ptr_alignment(p->b);
    uint32_t align_c = pygpu_ptr_alignment(out);
    int64_t rows, cols;
    int found = 0;
    cublasStatus_t st;

    memset(s, 0, sizeof(*s));
    memset(&result, 0, sizeof(result));
    blas_types(dtype, tf32, &type, &compute, &scale);
    BLAS_OK(cublasLtMatmulDescCreate(&s->desc, compute, scale));
    BLAS_OK(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &ta, sizeof(ta)));
    BLAS_OK(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                           &tb, sizeof(tb)));
    BLAS_OK(cublasLtMatmulDescSetAttribute(
        s->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (bias != NULL) {
        BLAS_OK(cublasLtMatmulDescSetAttribute(
            s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    }
    pygpu_gemm_stored_a(p, &rows, &cols);
    BLAS_OK(cublasLtMatrixLayoutCreate(&s->la, type, (uint64_t)rows,
                                       (uint64_t)cols, p->lda));
    pygpu_gemm_stored_b(p, &rows, &cols);
    BLAS_OK(cublasLtMatrixLayoutCreate(&s->lb, type, (uint64_t)rows,
                                       (uint64_t)cols, p->ldb));
    BLAS_OK(cublasLtMatrixLayoutCreate(&s->lc, type, (uint64_t)p->m,
                                       (uint64_t)p->n, p->ldc));
    BLAS_OK(cublasLtMatmulPreferenceCreate(&pref));
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
        sizeof(align_a)));
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
        sizeof(align_b)));
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
        sizeof(align_c)));
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
        sizeof(align_c)));
    st = cublasLtMatmulAlgoGetHeuristic(lt_handle, s->desc, s->la, s->lb,
                                        s->lc, s->lc, pref, 1, &result, &found);
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 &&
        result.state == CUBLAS_STATUS_SUCCESS) {
        s->algo = result.algo;
        s->use_lt = 1;
    } else if (st == CUBLAS_STATUS_INVALID_VALUE) {
        /* The extension takes the fallback, but arguments that cuBLASLt
         * calls invalid are a mapping bug: count it. */
        report(0, "cuBLASLt heuristic refused the arguments", dtype, tf32,
               p->n, p->m, p->k, 1, "CUBLAS_STATUS_INVALID_VALUE");
    } else if (st != CUBLAS_STATUS_SUCCESS &&
               st != CUBLAS_STATUS_NOT_SUPPORTED) {
        BLAS_OK(st);
    }
    BLAS_OK(cublasLtMatmulPreferenceDestroy(pref));
}

static void lt_free(lt_plan *s)
{
    BLAS_OK(cublasLtMatrixLayoutDestroy(s->lc));
    BLAS_OK(cublasLtMatrixLayoutDestroy(s->lb));
    BLAS_OK(cublasLtMatrixLayoutDestroy(s->la));
    BLAS_OK(cublasLtMatmulDescDestroy(s->desc));
}

/* lt_run of cuda_blaslt.c on a built plan: 1 done, 0 fallback. */
static int lt_exec(lt_plan *s, int dtype, const pygpu_gemm_plan *p,
                   void *out, const void *bias, cudaStream_t stream)
{
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    const void *alpha = dtype == F64 ? (const void *)&one_d
                                     : (const void *)&one_f;
    const void *beta = dtype == F64 ? (const void *)&zero_d
                                    : (const void *)&zero_f;
    cublasStatus_t st;

    if (!s->use_lt) {
        return 0;
    }
    if (bias != NULL) {
        BLAS_OK(cublasLtMatmulDescSetAttribute(
            s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    }
    st = cublasLtMatmul(lt_handle, s->desc, alpha, p->a, s->la, p->b, s->lb,
                        beta, out, s->lc, out, s->lc, &s->algo, workspace,
                        workspace_size, stream);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
        st == CUBLAS_STATUS_INVALID_VALUE) {
        report(0, "cublasLtMatmul refused the heuristic's plan", dtype, 0,
               p->n, p->m, p->k, 1, cublasGetStatusName(st));
        s->use_lt = 0;
        return 0;
    }
    BLAS_OK(st);
    return 1;
}

/* ---------------------------------------------------------------- tests */
/* C = A @ B, as pygpu_cuda_matmul runs it. */
static void test_matmul(int dtype, int tf32, int64_t m, int64_t n, int64_t k,
                        int64_t batch, int force64)
{
    operand oa, ob;
    pygpu_gemm_plan p;
    void *cbase = NULL, *c;
    double *got = NULL;
    int64_t total = batch * m * n, bt, i, j, l;
    int kind, ok = 1;
    char detail[160] = "";

    operand_make(&oa, dtype, m, k, batch, batch > 1 && rng() % 4 == 0);
    operand_make(&ob, dtype, k, n, batch, batch > 1 && rng() % 4 == 0);
    c = output_alloc(dtype, total, 0, &cbase);
    kind = pygpu_gemm_plan_make(&oa.mat, &ob.mat, batch, &p);
    if (kind == PYGPU_GEMM_CALL || kind == PYGPU_GEMM_ZERO) {
        cublasStatus_t st = run_gemm(dtype, tf32, kind, &p, c, 0, force64);
        if (st != CUBLAS_STATUS_SUCCESS) {
            ok = 0;
            snprintf(detail, sizeof(detail), "status %s",
                     cublasGetStatusName(st));
        }
    } else if (kind != PYGPU_GEMM_NOOP) {
        ok = 0;
        snprintf(detail, sizeof(detail), "plan kind %d", kind);
    }
    if (ok && total > 0) {
        got = output_fetch(dtype, c, total);
        for (bt = 0; ok && bt < batch; bt++) {
            for (i = 0; ok && i < m; i++) {
                for (j = 0; ok && j < n; j++) {
                    double ref = 0.0, sumabs = 0.0, g;
                    for (l = 0; l < k; l++) {
                        double t = operand_at(&oa, bt, i, l) *
                                   operand_at(&ob, bt, l, j);
                        ref += t;
                        sumabs += absd(t);
                    }
                    g = got[(bt * m + i) * n + j];
                    ok = close_enough(dtype, tf32, g, ref, sumabs, k);
                    if (!ok) {
                        snprintf(detail, sizeof(detail),
                                 "at [%lld,%lld,%lld] got %.9g want %.9g "
                                 "(ta=%d tb=%d lda=%lld ldb=%lld)",
                                 (long long)bt, (long long)i, (long long)j, g,
                                 ref, p.trans_a, p.trans_b, (long long)p.lda,
                                 (long long)p.ldb);
                    }
                }
            }
        }
    }
    report(ok, force64 ? "matmul(_64)" : "matmul", dtype, tf32, m, n, k,
           batch, detail);
    free(got);
    operand_free(&oa);
    operand_free(&ob);
    CUDA_OK(cudaFree(cbase));
}

/* out = x @ w^T (+ bias) (relu), as pygpu_cuda_linear runs it; the
 * product is run twice, the second time with the bias at another address
 * through the same descriptor, as a cache hit does. */
static void test_linear(int dtype, int tf32, int64_t rows, int64_t out_f,
                        int64_t in_f, int with_bias, int relu)
{
    operand ox, ow;
    pygpu_mat wt;
    pygpu_gemm_plan p;
    lt_plan plan;
    double *bias_h = NULL, *got = NULL;
    void *bias_tmp = NULL, *bias_base[2] = {NULL, NULL}, *bias_d[2] = {NULL, NULL};
    void *obase = NULL, *out;
    int64_t total = rows * out_f, i, j, l, bias_off = (int64_t)(rng() % 3);
    int kind, ok = 1, used_lt = 0, round;
    char detail[160] = "";

    operand_make(&ox, dtype, rows, in_f, 1, 0);
    operand_make(&ow, dtype, out_f, in_f, 1, 0);
    wt = pygpu_mat_transpose(&ow.mat);
    out = output_alloc(dtype, total, (int64_t)(rng() % 3), &obase);
    if (with_bias) {
        bias_h = malloc((size_t)(out_f > 0 ? out_f : 1) * sizeof(double));
        for (j = 0; j < out_f; j++) {
            bias_h[j] = random_value(dtype);
        }
        bias_tmp = to_dtype(dtype, bias_h, out_f);
        for (round = 0; round < 2; round++) {
            size_t bytes = (size_t)(out_f + bias_off) * (size_t)dtype_size[dtype];
            CUDA_OK(cudaMalloc(&bias_base[round], bytes + 16));
            bias_d[round] = (char *)bias_base[round] + bias_off * dtype_size[dtype];
            CUDA_OK(cudaMemcpy(bias_d[round], bias_tmp,
                               (size_t)out_f * (size_t)dtype_size[dtype],
                               cudaMemcpyHostToDevice));
        }
    }
    kind = pygpu_gemm_plan_make(&ox.mat, &wt, 1, &p);
    memset(&plan, 0, sizeof(plan));
    if (kind == PYGPU_GEMM_CALL && pygpu_gemm_plan_fits_int(&p) &&
        p.m > 1 && p.k > 1 &&
        (!with_bias || pygpu_ptr_alignment(bias_d[0]) >= MIN_BIAS_ALIGN)) {
        lt_build(&plan, dtype, tf32, &p, out, bias_d[0], relu);
        for (round = 0; round < 2; round++) {
            used_lt = lt_exec(&plan, dtype, &p, out, bias_d[round], 0);
            if (!used_lt) {
                break;
            }
        }
        lt_free(&plan);
    }
    if (!used_lt && (kind == PYGPU_GEMM_CALL || kind == PYGPU_GEMM_ZERO)) {
        cublasStatus_t st = run_gemm(dtype, tf32, kind, &p, out, 0, 0);
        if (st != CUBLAS_STATUS_SUCCESS) {
            ok = 0;
            snprintf(detail, sizeof(detail), "gemm status %s",
                     cublasGetStatusName(st));
        }
    } else if (kind < 0) {
        ok = 0;
        snprintf(detail, sizeof(detail), "plan kind %d", kind);
    }
    if (kind == PYGPU_GEMM_CALL) {
        if (used_lt) {
            lt_used++;
        } else {
            lt_fallback++;
        }
    }
    if (ok && total > 0) {
        got = output_fetch(dtype, out, total);
        for (i = 0; ok && i < rows; i++) {
            for (j = 0; ok && j < out_f; j++) {
                double ref = 0.0, sumabs = 0.0, g = got[i * out_f + j];
                for (l = 0; l < in_f; l++) {
                    double t = operand_at(&ox, 0, i, l) *
                               operand_at(&ow, 0, j, l);
                    ref += t;
                    sumabs += absd(t);
                }
                if (with_bias) {
                    ref += bias_h[j];
                    sumabs += absd(bias_h[j]);
                }
                if (relu && ref < 0.0) {
                    ref = 0.0;
                }
                if (!used_lt) { /* the extension's kernel, here on the host */
                    if (with_bias) {
                        g += bias_h[j];
                    }
                    if (relu && g < 0.0) {
                        g = 0.0;
                    }
                }
                ok = close_enough(dtype, tf32, g, ref, sumabs, in_f);
                if (!ok) {
                    snprintf(detail, sizeof(detail),
                             "at [%lld,%lld] got %.9g want %.9g lt=%d "
                             "bias=%d relu=%d",
                             (long long)i, (long long)j, g, ref, used_lt,
                             with_bias, relu);
                }
            }
        }
    }
    report(ok, "linear", dtype, tf32, rows, out_f, in_f, 1, detail);
    free(got);
    free(bias_h);
    free(bias_tmp);
    for (round = 0; round < 2; round++) {
        if (bias_base[round] != NULL) {
            CUDA_OK(cudaFree(bias_base[round]));
        }
    }
    operand_free(&ox);
    operand_free(&ow);
    CUDA_OK(cudaFree(obase));
}

/* float32 without TF32 must be true FP32: every element of A is 1 + 2^-20,
 * which TF32 (10 mantissa bits) would round to 1.  With k = 64 and B = 1,
 * FP32 gives exactly 64 + 2^-14 in every element. */
static void test_true_fp32(int use_lt)
{
    const int64_t n = 64;
    double *ones = malloc((size_t)(n * n) * sizeof(double));
    double *fine = malloc((size_t)(n * n) * sizeof(double));
    double want = 64.0 + 0x1p-14, *got;
    void *ha, *hb, *da, *db, *dc;
    pygpu_mat a = {NULL, 64, 64, 64, 1, 0}, b = {NULL, 64, 64, 64, 1, 0};
    pygpu_gemm_plan p;
    int64_t i;
    int ok = 1;

    for (i = 0; i < n * n; i++) {
        ones[i] = 1.0;
        fine[i] = 1.0 + 0x1p-20;
    }
    ha = to_dtype(F32, fine, n * n);
    hb = to_dtype(F32, ones, n * n);
    CUDA_OK(cudaMalloc(&da, (size_t)(n * n) * 4));
    CUDA_OK(cudaMalloc(&db, (size_t)(n * n) * 4));
    CUDA_OK(cudaMalloc(&dc, (size_t)(n * n) * 4));
    CUDA_OK(cudaMemcpy(da, ha, (size_t)(n * n) * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, hb, (size_t)(n * n) * 4, cudaMemcpyHostToDevice));
    a.ptr = da;
    b.ptr = db; /* symmetric, so as linear's w it is its own transpose */
    pygpu_gemm_plan_make(&a, &b, 1, &p);
    if (use_lt) {
        lt_plan plan;
        lt_build(&plan, F32, 0, &p, dc, NULL, 0);
        ok = lt_exec(&plan, F32, &p, dc, NULL, 0);
        lt_free(&plan);
    } else {
        BLAS_OK(run_gemm(F32, 0, PYGPU_GEMM_CALL, &p, dc, 0, 0));
    }
    if (ok) {
        got = output_fetch(F32, dc, n * n);
        for (i = 0; ok && i < n * n; i++) {
            ok = got[i] == want;
        }
        free(got);
    }
    report(ok, use_lt ? "true-fp32 (cuBLASLt)" : "true-fp32 (cublasGemmEx)",
           F32, 0, n, n, n, 1, "");
    free(ones);
    free(fine);
    free(ha);
    free(hb);
    CUDA_OK(cudaFree(da));
    CUDA_OK(cudaFree(db));
    CUDA_OK(cudaFree(dc));
}

/* The workspace handed between streams as blas_bind does it: the default
 * stream's use is marked by an event, the new stream waits for it, the
 * handle is rebound and given the workspace again. */
static void test_stream_switch(void)
{
    cudaStream_t side;
    cudaEvent_t ws_done;
    int r;

    CUDA_OK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreateWithFlags(&ws_done, cudaEventDisableTiming));
    for (r = 0; r < 3; r++) {
        cudaStream_t from = (r % 2 == 0) ? 0 : side;
        cudaStream_t to = (r % 2 == 0) ? side : 0;
        CUDA_OK(cudaEventRecord(ws_done, from));
        CUDA_OK(cudaStreamWaitEvent(to, ws_done, 0));
        BLAS_OK(cublasSetStream(handle, to));
        BLAS_OK(cublasSetWorkspace(handle, workspace, workspace_size));
        {
            /* a product on the new stream, checked */
            int64_t m = 33, n = 17, k = 65;
            operand oa, ob;
            pygpu_gemm_plan p;
            void *cbase, *c = output_alloc(F32, m * n, 0, &cbase);
            double *got;
            int64_t i, j, l;
            int ok = 1;

            operand_make(&oa, F32, m, k, 1, 0);
            operand_make(&ob, F32, k, n, 1, 0);
            pygpu_gemm_plan_make(&oa.mat, &ob.mat, 1, &p);
            BLAS_OK(run_gemm(F32, 0, PYGPU_GEMM_CALL, &p, c, to, 0));
            CUDA_OK(cudaStreamSynchronize(to));
            got = output_fetch(F32, c, m * n);
            for (i = 0; ok && i < m; i++) {
                for (j = 0; ok && j < n; j++) {
                    double ref = 0.0, sumabs = 0.0;
                    for (l = 0; l < k; l++) {
                        double t = operand_at(&oa, 0, i, l) *
                                   operand_at(&ob, 0, l, j);
                        ref += t;
                        sumabs += absd(t);
                    }
                    ok = close_enough(F32, 0, got[i * n + j], ref, sumabs, k);
                }
            }
            report(ok, "stream switch", F32, 0, m, n, k, 1, "");
            free(got);
            operand_free(&oa);
            operand_free(&ob);
            CUDA_OK(cudaFree(cbase));
        }
    }
    BLAS_OK(cublasSetStream(handle, 0));
    BLAS_OK(cublasSetWorkspace(handle, workspace, workspace_size));
    CUDA_OK(cudaEventDestroy(ws_done));
    CUDA_OK(cudaStreamDestroy(side));
}

/* A leading dim past INT_MAX, so the plan takes the _64 entry points for
 * real: float16 x of 2 rows whose row stride is 2^31 + 64 elements
 * (about 4 GiB), when the device has room. */
static void test_large_ld(void)
{
    const int64_t rs = ((int64_t)1 << 31) + 64, k = 40, n = 24;
    size_t free_b = 0, total_b = 0, bytes = (size_t)(rs + k) * 2;
    double *xv, *wv, *got;
    void *xh, *wh, *dx, *dw, *dc;
    pygpu_mat x, w;
    pygpu_gemm_plan p;
    int64_t i, j, l;
    int ok, kind;

    CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b < bytes + ((size_t)2 << 30)) {
        printf("skip large-ld test: %zu bytes free\n", free_b);
        return;
    }
    xv = malloc((size_t)(2 * k) * sizeof(double));
    wv = malloc((size_t)(k * n) * sizeof(double));
    for (i = 0; i < 2 * k; i++) {
        xv[i] = random_value(F16);
    }
    for (i = 0; i < k * n; i++) {
        wv[i] = random_value(F16);
    }
    xh = to_dtype(F16, xv, 2 * k);
    wh = to_dtype(F16, wv, k * n);
    CUDA_OK(cudaMalloc(&dx, bytes));
    CUDA_OK(cudaMalloc(&dw, (size_t)(k * n) * 2));
    CUDA_OK(cudaMalloc(&dc, (size_t)(2 * n) * 2));
    CUDA_OK(cudaMemcpy(dx, xh, (size_t)k * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy((char *)dx + rs * 2, (char *)xh + k * 2, (size_t)k * 2,
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dw, wh, (size_t)(k * n) * 2, cudaMemcpyHostToDevice));
    x.ptr = dx;
    x.rows = 2;
    x.cols = k;
    x.row_stride = rs;
    x.col_stride = 1;
    x.batch_stride = 0;
    w.ptr = dw;
    w.rows = k;
    w.cols = n;
    w.row_stride = n;
    w.col_stride = 1;
    w.batch_stride = 0;
    kind = pygpu_gemm_plan_make(&x, &w, 1, &p);
    ok = kind == PYGPU_GEMM_CALL && !pygpu_gemm_plan_fits_int(&p);
    if (ok) {
        cublasStatus_t st = run_gemm(F16, 0, kind, &p, dc, 0, 0);
        ok = st == CUBLAS_STATUS_SUCCESS;
        if (!ok) {
            printf("large-ld: %s\n", cublasGetStatusName(st));
        }
    }
    if (ok) {
        got = output_fetch(F16, dc, 2 * n);
        for (i = 0; ok && i < 2; i++) {
            for (j = 0; ok && j < n; j++) {
                double ref = 0.0, sumabs = 0.0;
                for (l = 0; l < k; l++) {
                    double t = xv[i * k + l] * wv[l * n + j];
                    ref += t;
                    sumabs += absd(t);
                }
                ok = close_enough(F16, 0, got[i * n + j], ref, sumabs, k);
            }
        }
        free(got);
    }
    report(ok, "large ld (_64)", F16, 0, 2, n, k, 1, "");
    free(xv);
    free(wv);
    free(xh);
    free(wh);
    CUDA_OK(cudaFree(dx));
    CUDA_OK(cudaFree(dw));
    CUDA_OK(cudaFree(dc));
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Host cost per call of the cached cuBLASLt path against cublasGemmEx
 * (small float16 linear, bias + relu): the thin path should not cost
 * more than the plain gemm. */
static void time_thin_path(void)
{
    const int64_t rows = 64, in_f = 256, out_f = 256, iters = 2000;
    pygpu_mat x = {NULL, 64, 256, 256, 1, 0}, w = {NULL, 256, 256, 256, 1, 0};
    pygpu_mat wt;
    pygpu_gemm_plan p;
    lt_plan plan;
    void *dx, *dw, *db, *dc;
    double t0, t_lt, t_gemm;
    int64_t i;

    CUDA_OK(cudaMalloc(&dx, (size_t)(rows * in_f) * 2));
    CUDA_OK(cudaMalloc(&dw, (size_t)(out_f * in_f) * 2));
    CUDA_OK(cudaMalloc(&db, (size_t)out_f * 2));
    CUDA_OK(cudaMalloc(&dc, (size_t)(rows * out_f) * 2));
    CUDA_OK(cudaMemset(dx, 0, (size_t)(rows * in_f) * 2));
    CUDA_OK(cudaMemset(dw, 0, (size_t)(out_f * in_f) * 2));
    CUDA_OK(cudaMemset(db, 0, (size_t)out_f * 2));
    x.ptr = dx;
    w.ptr = dw;
    wt = pygpu_mat_transpose(&w);
    pygpu_gemm_plan_make(&x, &wt, 1, &p);
    lt_build(&plan, F16, 0, &p, dc, db, 1);
    if (!plan.use_lt) {
        printf("timing: no cuBLASLt algorithm for the float16 case\n");
        goto done;
    }
    for (i = 0; i < 50; i++) {
        lt_exec(&plan, F16, &p, dc, db, 0);
        BLAS_OK(run_gemm(F16, 0, PYGPU_GEMM_CALL, &p, dc, 0, 0));
    }
    CUDA_OK(cudaDeviceSynchronize());
    t0 = now_us();
    for (i = 0; i < iters; i++) {
        lt_exec(&plan, F16, &p, dc, db, 0);
    }
    CUDA_OK(cudaDeviceSynchronize());
    t_lt = (now_us() - t0) / (double)iters;
    t0 = now_us();
    for (i = 0; i < iters; i++) {
        BLAS_OK(run_gemm(F16, 0, PYGPU_GEMM_CALL, &p, dc, 0, 0));
    }
    CUDA_OK(cudaDeviceSynchronize());
    t_gemm = (now_us() - t0) / (double)iters;
    printf("timing (float16 64x256 @ 256x256^T): cuBLASLt bias+relu %.2f us"
           "/call, cublasGemmEx alone %.2f us/call\n", t_lt, t_gemm);
done:
    lt_free(&plan);
    CUDA_OK(cudaFree(dx));
    CUDA_OK(cudaFree(dw));
    CUDA_OK(cudaFree(db));
    CUDA_OK(cudaFree(dc));
}

int main(void)
{
    static const int64_t dims[] = {1, 1, 2, 3, 5, 8, 16, 17, 31, 64, 65, 100,
                                   128, 255};
    const int ndims = (int)(sizeof(dims) / sizeof(dims[0]));
    struct cudaDeviceProp prop;
    int dev = 0, major = 0, t, dtype;

    CUDA_OK(cudaSetDevice(dev));
    CUDA_OK(cudaGetDeviceProperties(&prop, dev));
    CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                   dev));
    workspace_size = major >= 9 ? WORKSPACE_BYTES : ((size_t)4 << 20);
    printf("device: %s (sm_%d%d), workspace %zu MiB\n", prop.name, prop.major,
           prop.minor, workspace_size >> 20);
    BLAS_OK(cublasCreate(&handle));
    BLAS_OK(cublasLtCreate(&lt_handle));
    CUDA_OK(cudaMalloc(&workspace, workspace_size));
    BLAS_OK(cublasSetStream(handle, 0));
    BLAS_OK(cublasSetWorkspace(handle, workspace, workspace_size));

    for (dtype = F32; dtype <= F64; dtype++) {
        for (t = 0; t < 150; t++) {
            int64_t m = dims[rng() % (uint64_t)ndims];
            int64_t n = dims[rng() % (uint64_t)ndims];
            int64_t k = dims[rng() % (uint64_t)ndims];
            int64_t batch = (rng() % 3 == 0) ? 1 + (int64_t)(rng() % 4) : 1;
            test_matmul(dtype, 0, m, n, k, batch, 0);
            test_linear(dtype, 0, m, n, k, (int)(rng() % 2), (int)(rng() % 2));
        }
        /* degenerate sizes */
        test_matmul(dtype, 0, 5, 7, 0, 1, 0);
        test_matmul(dtype, 0, 5, 7, 0, 3, 0);
        test_matmul(dtype, 0, 0, 7, 4, 2, 0);
        test_matmul(dtype, 0, 4, 0, 4, 1, 0);
        test_linear(dtype, 0, 6, 5, 0, 1, 1);
        test_linear(dtype, 0, 1, 1, 1, 1, 0);
        test_linear(dtype, 0, 1, 300, 200, 1, 1);
        test_linear(dtype, 0, 300, 1, 200, 1, 1);
        /* the 64-bit entry points with small sizes */
        test_matmul(dtype, 0, 9, 10, 11, 1, 1);
        test_matmul(dtype, 0, 9, 10, 11, 3, 1);
    }
    for (t = 0; t < 60; t++) { /* TF32 allowed */
        int64_t m = dims[rng() % (uint64_t)ndims];
        int64_t n = dims[rng() % (uint64_t)ndims];
        int64_t k = dims[rng() % (uint64_t)ndims];
        test_matmul(F32, 1, m, n, k, 1 + (int64_t)(rng() % 2), 0);
        test_linear(F32, 1, m, n, k, (int)(rng() % 2), (int)(rng() % 2));
    }
    test_true_fp32(0);
    test_true_fp32(1);
    test_stream_switch();
    test_large_ld();
    time_thin_path();

    printf("linear: %d via cuBLASLt, %d via the gemm fallback\n", lt_used,
           lt_fallback);
    printf("%d passed, %d failed\n", passed, failed);
    CUDA_OK(cudaFree(workspace));
    BLAS_OK(cublasLtDestroy(lt_handle));
    BLAS_OK(cublasDestroy(handle));
    return failed != 0;
}
