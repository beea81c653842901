/* blas_selftest.c - run, on a GPU, the cuBLAS / cuBLASLt call sequences of
 * csrc/cuda_blas.c and csrc/cuda_blaslt.c, with the same row-major mapping
 * (csrc/blas_layout.h), and check them against a host product in double.
 *
 * No Python: the sequences are restated here (gemm with the 32- and 64-bit
 * entry points, the k == 0 memset, cuBLASLt descriptors / layouts /
 * alignment preferences / heuristic / epilogues with a descriptor reused
 * for a second bias pointer, the workspace handed over between streams).
 * Where the extension takes the fallback (no cuBLASLt algorithm, or a
 * bias under 16-byte alignment) the fallback's sequence is restated too:
 * the output is filled with the bias (here by a copy from the host, in the
 * extension by the bias_act kernel's PYGPU_BIAS_FILL mode) and the gemm
 * accumulates into it (beta 1); only the relu kernel is applied on the
 * host, so the gemm part is still checked.
 *
 *   gcc -std=c11 -O2 -I csrc -I $CUDA_HOME/include \
 *       benchmarks/blas_selftest.c -o blas_selftest \
 *       -L $CUDA_HOME/lib64 -lcublasLt -lcublas -lcudart
 *
 * Prints each failure ("FAIL <case> ..."), each skipped case ("SKIP <case>:
 * why"), observations that are printed but not checked ("observation:"),
 * then "S skipped" and, last, "N passed, M failed"; exits 1 when any case
 * failed (2 on a setup error).
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

static int passed, failed, skipped, lt_used, lt_fallback;
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

/* A case that cannot run here: not a failure, but named and counted. */
static void skip(const char *what, const char *why)
{
    skipped++;
    printf("SKIP %s: %s\n", what, why);
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
 * fit an int; accumulate gives C += op(A) op(B) (beta 1, one rounding),
 * and leaves C as it is for k == 0. */
static cublasStatus_t run_gemm(int dtype, int tf32, int kind,
                               const pygpu_gemm_plan *p, void *c,
                               cudaStream_t stream, int force64,
                               int accumulate)
{
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    cudaDataType_t type, scale;
    cublasComputeType_t compute;
    cublasOperation_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const void *alpha, *beta;

    if (kind == PYGPU_GEMM_ZERO && accumulate) {
        return CUBLAS_STATUS_SUCCESS; /* C + (empty sum) is C */
    }
    if (kind == PYGPU_GEMM_ZERO) {
        size_t bytes = (size_t)(p->batch * p->m * p->n) *
                       (size_t)dtype_size[dtype];
        return cudaMemsetAsync(c, 0, bytes, stream) == cudaSuccess
                   ? CUBLAS_STATUS_SUCCESS
                   : CUBLAS_STATUS_EXECUTION_FAILED;
    }
    blas_types(dtype, tf32, &type, &compute, &scale);
    alpha = scale == CUDA_R_64F ? (const void *)&one_d : (const void *)&one_f;
    beta = scale == CUDA_R_64F
               ? (const void *)(accumulate ? &one_d : &zero_d)
               : (const void *)(accumulate ? &one_f : &zero_f);
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
    int dtype, tf32; /* to name a failure */
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
    s->dtype = dtype;
    s->tf32 = tf32;
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

/* lt_run of cuda_blaslt.c on a built plan: 1 done, 0 fallback.  A plan
 * without an algorithm (use_lt 0) is the extension's ordinary fallback and
 * is not reported here (each caller decides what it means for its case);
 * a plan the heuristic gave that cublasLtMatmul then refuses is reported
 * as a failure here, once. */
static int lt_exec(lt_plan *s, const pygpu_gemm_plan *p, void *out,
                   const void *bias, cudaStream_t stream)
{
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    const void *alpha = s->dtype == F64 ? (const void *)&one_d
                                        : (const void *)&one_f;
    const void *beta = s->dtype == F64 ? (const void *)&zero_d
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
        report(0, "cublasLtMatmul refused the heuristic's plan", s->dtype,
               s->tf32, p->n, p->m, p->k, 1, cublasGetStatusName(st));
        s->use_lt = 0;
        return 0;
    }
    BLAS_OK(st);
    return 1;
}

/* The fallback of pygpu_cuda_linear (cublasGemmEx and the bias_act
 * kernel) as cuda_blaslt.c runs it: with a bias, out is first set to
 * bias[col] in every row (the kernel's PYGPU_BIAS_FILL mode; here a copy
 * from the host of the same values) and the gemm accumulates into it
 * (beta 1), so the bias is added in the FP32 accumulator and the sum is
 * rounded once, as in the fused epilogue; for k == 0 out is left holding
 * the bias.  A relu (the relu kernel) is left to the caller, which applies
 * it on the host. */
static cublasStatus_t linear_fallback(int dtype, int tf32, int kind,
                                      const pygpu_gemm_plan *p, void *out,
                                      const double *bias_h, int64_t rows,
                                      int64_t out_f)
{
    int64_t i, j;

    if (bias_h != NULL && rows * out_f > 0) {
        double *fill = malloc((size_t)(rows * out_f) * sizeof(double));
        void *tmp;

        for (i = 0; i < rows; i++) {
            for (j = 0; j < out_f; j++) {
                fill[i * out_f + j] = bias_h[j];
            }
        }
        tmp = to_dtype(dtype, fill, rows * out_f);
        CUDA_OK(cudaMemcpy(out, tmp,
                           (size_t)(rows * out_f) * (size_t)dtype_size[dtype],
                           cudaMemcpyHostToDevice));
        free(tmp);
        free(fill);
    }
    return run_gemm(dtype, tf32, kind, p, out, 0, 0, bias_h != NULL);
}

/* Which path linear_exec took. */
enum {
    LIN_FALLBACK = 0, /* routed to the fallback (shape, size or bias) */
    LIN_FUSED = 1,    /* cuBLASLt with the fused epilogue */
    LIN_NO_ALGO = 2,  /* eligible for cuBLASLt, which had no algorithm:
                       * the fallback ran it, as in the extension */
    LIN_REFUSED = 3   /* cublasLtMatmul refused the heuristic's plan: a
                       * failure, already reported by lt_exec; the
                       * fallback ran it, as in the extension */
};

/* pygpu_cuda_linear on one problem with a fresh plan: its routing (sizes
 * that fit an int, m' and k' over 1, no bias or one aligned to 16 bytes),
 * then cuBLASLt, else linear_fallback (whose relu the caller applies).
 * bias_d and bias_h hold the same values (device, host).  *st is the
 * fallback gemm's status (success when it did not run). */
static int linear_exec(int dtype, int tf32, int kind, const pygpu_gemm_plan *p,
                       void *out, const void *bias_d, const double *bias_h,
                       int64_t rows, int64_t out_f, int relu,
                       cublasStatus_t *st)
{
    int path = LIN_FALLBACK;

    *st = CUBLAS_STATUS_SUCCESS;
    if (kind == PYGPU_GEMM_CALL && pygpu_gemm_plan_fits_int(p) && p->m > 1 &&
        p->k > 1 &&
        (bias_d == NULL || pygpu_ptr_alignment(bias_d) >= MIN_BIAS_ALIGN)) {
        lt_plan plan;

        lt_build(&plan, dtype, tf32, p, out, bias_d, relu);
        if (!plan.use_lt) {
            path = LIN_NO_ALGO;
        } else {
            path = lt_exec(&plan, p, out, bias_d, 0) ? LIN_FUSED : LIN_REFUSED;
        }
        lt_free(&plan);
    }
    if (path != LIN_FUSED &&
        (kind == PYGPU_GEMM_CALL || kind == PYGPU_GEMM_ZERO)) {
        *st = linear_fallback(dtype, tf32, kind, p, out,
                              bias_d != NULL ? bias_h : NULL, rows, out_f);
    }
    return path;
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
        cublasStatus_t st = run_gemm(dtype, tf32, kind, &p, c, 0, force64,
                                     0);
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
            used_lt = lt_exec(&plan, &p, out, bias_d[round], 0);
            if (!used_lt) {
                break;
            }
        }
        lt_free(&plan);
    }
    if (!used_lt && (kind == PYGPU_GEMM_CALL || kind == PYGPU_GEMM_ZERO)) {
        cublasStatus_t st = linear_fallback(dtype, tf32, kind, &p, out,
                                            bias_h, rows, out_f);
        if (st != CUBLAS_STATUS_SUCCESS) {
            ok = 0;
            snprintf(detail, sizeof(detail), "fallback gemm status %s",
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
                if (!used_lt && relu && g < 0.0) {
                    g = 0.0; /* the extension's relu kernel, on the host */
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

/* float32 without TF32 must be true FP32.  Every element of A is 1 + 2^-12
 * and of B is 1, k = 64.  Each product is 1 + 2^-12, and every partial sum,
 * in any order or split, is j (1 + 2^-12) = j + j 2^-12 for some j <= 64:
 * below 128, where FP32's spacing is 2^-17, and a multiple of 2^-12, so
 * it is exact.  FP32 gives exactly 64 + 2^-6 in every element.  TF32 keeps
 * 10 mantissa bits: 1 + 2^-12 becomes 1 (2^-12 is under half the spacing
 * 2^-10, so both rounding and truncation drop it) and the sum is exactly
 * 64.  Without TF32 only 64 + 2^-6 passes; with TF32 allowed either value
 * passes (TF32 is a permission, not an obligation: cuBLAS may still run
 * FP32 kernels) and the counts of each are printed.
 *
 * On the cuBLASLt path the point is the compute type, not that cuBLASLt
 * has an algorithm: without one the extension runs cublasGemmEx, whose
 * FP32 is checked by use_lt 0, so that case is a skip, not a failure. */
static void test_true_fp32(int use_lt, int tf32)
{
    const int64_t n = 64;
    const double want_fp32 = 64.0 + 0x1p-6, want_tf32 = 64.0;
    double *ones = malloc((size_t)(n * n) * sizeof(double));
    double *fine = malloc((size_t)(n * n) * sizeof(double));
    double *got = NULL;
    void *ha, *hb, *da, *db, *dc, *cbase;
    pygpu_mat a = {NULL, 64, 64, 64, 1, 0}, b = {NULL, 64, 64, 64, 1, 0};
    pygpu_gemm_plan p;
    int64_t i, n_fp32 = 0, n_tf32 = 0, bad = 0, first_bad = -1;
    int ran = 1;
    char name[64], detail[256] = "";

    snprintf(name, sizeof(name), "%s (%s)",
             tf32 ? "fp32-or-tf32" : "true-fp32",
             use_lt ? "cuBLASLt" : "cublasGemmEx");
    for (i = 0; i < n * n; i++) {
        ones[i] = 1.0;
        fine[i] = 1.0 + 0x1p-12;
    }
    ha = to_dtype(F32, fine, n * n);
    hb = to_dtype(F32, ones, n * n);
    CUDA_OK(cudaMalloc(&da, (size_t)(n * n) * 4));
    CUDA_OK(cudaMalloc(&db, (size_t)(n * n) * 4));
    dc = output_alloc(F32, n * n, 0, &cbase); /* NaN: unwritten shows */
    CUDA_OK(cudaMemcpy(da, ha, (size_t)(n * n) * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, hb, (size_t)(n * n) * 4, cudaMemcpyHostToDevice));
    a.ptr = da;
    b.ptr = db; /* symmetric, so as linear's w it is its own transpose */
    pygpu_gemm_plan_make(&a, &b, 1, &p);
    if (use_lt) {
        lt_plan plan;
        lt_build(&plan, F32, tf32, &p, dc, NULL, 0);
        if (!plan.use_lt) {
            skip(name, "no cuBLASLt algorithm for this problem; the "
                       "extension runs it with cublasGemmEx, checked by "
                       "the cublasGemmEx case");
            ran = 0;
        } else if (!lt_exec(&plan, &p, dc, NULL, 0)) {
            ran = 0; /* refused: lt_exec reported the failure */
        }
        lt_free(&plan);
    } else {
        BLAS_OK(run_gemm(F32, tf32, PYGPU_GEMM_CALL, &p, dc, 0, 0, 0));
    }
    if (ran) {
        got = output_fetch(F32, dc, n * n);
        for (i = 0; i < n * n; i++) {
            if (got[i] == want_fp32) {
                n_fp32++;
            } else if (got[i] == want_tf32) {
                n_tf32++;
            } else {
                bad++;
            }
            if (first_bad < 0 &&
                !(got[i] == want_fp32 || (tf32 && got[i] == want_tf32))) {
                first_bad = i;
            }
        }
        if (first_bad >= 0) {
            snprintf(detail, sizeof(detail),
                     "at %lld got %.10g want %s (%lld elements 64+2^-6, "
                     "%lld exactly 64 as TF32 gives, %lld other)",
                     (long long)first_bad, got[first_bad],
                     tf32 ? "64+2^-6 or 64" : "64+2^-6 = 64.015625",
                     (long long)n_fp32, (long long)n_tf32, (long long)bad);
        }
        if (tf32) {
            printf("%s, TF32 allowed: %lld of %lld elements 64+2^-6 (FP32 "
                   "seen), %lld exactly 64 (TF32 seen), %lld other\n",
                   name, (long long)n_fp32, (long long)(n * n),
                   (long long)n_tf32, (long long)bad);
        }
        report(first_bad < 0, name, F32, tf32, n, n, n, 1, detail);
    }
    free(got);
    free(ones);
    free(fine);
    free(ha);
    free(hb);
    CUDA_OK(cudaFree(da));
    CUDA_OK(cudaFree(db));
    CUDA_OK(cudaFree(cbase));
}

/* n values of a dtype at byte offset `off` into a fresh device buffer
 * (*base: what to free). */
static void *upload(int dtype, const double *v, int64_t n, size_t off,
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
static void *fetch_raw(int dtype, const void *dptr, int64_t n)
{
    size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)dtype_size[dtype];
    void *out = malloc(bytes);

    CUDA_OK(cudaMemcpy(out, dptr, bytes, cudaMemcpyDeviceToHost));
    return out;
}

/* An element's bits as an integer ordered as the values are, so that the
 * difference of two finite values is their distance in ulps of the dtype
 * (+0.0 and -0.0 are both 0). */
static int64_t ordered_bits(int dtype, const void *raw, int64_t i)
{
    if (dtype == F16) {
        uint16_t h = ((const uint16_t *)raw)[i];
        return (h & 0x8000u) ? -(int64_t)(h & 0x7fffu) : (int64_t)h;
    }
    if (dtype == F32) {
        uint32_t u;
        memcpy(&u, (const char *)raw + 4 * i, 4);
        return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
    }
    {
        uint64_t u;
        memcpy(&u, (const char *)raw + 8 * i, 8);
        return (u >> 63) ? -(int64_t)(u & 0x7fffffffffffffffull)
                         : (int64_t)u;
    }
}

static const char *zero_name(double v)
{
    if (isnan(v)) {
        return "NaN";
    }
    if (v != 0.0) {
        return "nonzero";
    }
    return signbit(v) ? "-0.0" : "+0.0";
}

/* A batch count past 65535 (the CUDA grid's limit in y and z, which a
 * kernel that maps the batch onto one of them would hit): a strided
 * batched gemm of 70000 2 x 2 @ 2 x 2 products, every element of every
 * batch item checked exactly (small integers: every sum is exact in
 * float16 too).  bcast 1 or 2 shares A or B across the batch (batch
 * stride 0). */
static void test_big_batch(int dtype, int bcast)
{
    const int64_t batch = 70000, m = 2, n = 2, k = 2;
    const int64_t na = (bcast == 1 ? 1 : batch) * m * k;
    const int64_t nb = (bcast == 2 ? 1 : batch) * k * n;
    const char *name = bcast == 1   ? "big batch, A broadcast"
                       : bcast == 2 ? "big batch, B broadcast"
                                    : "big batch";
    double *av = malloc((size_t)na * sizeof(double));
    double *bv = malloc((size_t)nb * sizeof(double));
    double *got = NULL;
    void *abase, *bbase, *cbase, *c;
    pygpu_mat a, b;
    pygpu_gemm_plan p;
    int64_t i, j, l, bt, nbad = 0;
    int kind, ok = 1;
    char detail[200] = "";

    for (i = 0; i < na; i++) {
        av[i] = (double)((int64_t)(rng() % 17) - 8);
    }
    for (i = 0; i < nb; i++) {
        bv[i] = (double)((int64_t)(rng() % 17) - 8);
    }
    a.ptr = upload(dtype, av, na, 0, &abase);
    a.rows = m;
    a.cols = k;
    a.row_stride = k;
    a.col_stride = 1;
    a.batch_stride = bcast == 1 ? 0 : m * k;
    b.ptr = upload(dtype, bv, nb, 0, &bbase);
    b.rows = k;
    b.cols = n;
    b.row_stride = n;
    b.col_stride = 1;
    b.batch_stride = bcast == 2 ? 0 : k * n;
    c = output_alloc(dtype, batch * m * n, 0, &cbase);
    kind = pygpu_gemm_plan_make(&a, &b, batch, &p);
    if (kind != PYGPU_GEMM_CALL || p.batch != batch ||
        !pygpu_gemm_plan_fits_int(&p)) {
        ok = 0;
        snprintf(detail, sizeof(detail), "plan kind %d batch %lld fits_int %d",
                 kind, (long long)p.batch, pygpu_gemm_plan_fits_int(&p));
    } else {
        cublasStatus_t st = run_gemm(dtype, 0, kind, &p, c, 0, 0, 0);
        if (st != CUBLAS_STATUS_SUCCESS) {
            ok = 0;
            snprintf(detail, sizeof(detail), "status %s",
                     cublasGetStatusName(st));
        }
    }
    if (ok) {
        got = output_fetch(dtype, c, batch * m * n);
        for (bt = 0; bt < batch; bt++) {
            const double *ab = av + (bcast == 1 ? 0 : bt * m * k);
            const double *bb = bv + (bcast == 2 ? 0 : bt * k * n);
            for (i = 0; i < m; i++) {
                for (j = 0; j < n; j++) {
                    double ref = 0.0, g = got[(bt * m + i) * n + j];
                    for (l = 0; l < k; l++) {
                        ref += ab[i * k + l] * bb[l * n + j];
                    }
                    if (g != ref) { /* NaN too */
                        if (nbad++ == 0) {
                            snprintf(detail, sizeof(detail),
                                     "first at [%lld,%lld,%lld] got %.9g "
                                     "want %.9g",
                                     (long long)bt, (long long)i,
                                     (long long)j, g, ref);
                        }
                    }
                }
            }
        }
        if (nbad > 0) {
            size_t len = strlen(detail);
            ok = 0;
            snprintf(detail + len, sizeof(detail) - len,
                     "; %lld wrong elements", (long long)nbad);
        }
    }
    report(ok, name, dtype, 0, m, n, k, batch, detail);
    free(got);
    free(av);
    free(bv);
    CUDA_OK(cudaFree(abase));
    CUDA_OK(cudaFree(bbase));
    CUDA_OK(cudaFree(cbase));
}

/* NaN and -0.0 through a float32 linear (4 rows, 8 in, 8 out), on the
 * fused cuBLASLt path (bias 256-byte aligned) and on the fallback (the same
 * bias values 4 bytes into a buffer: under the 16-byte rule of
 * cuda_blaslt.c, so the extension takes the fallback).  Row 1 of x holds a
 * NaN, row 2 is all -0.0, the others small integers; w holds integers 1..3
 * and the bias small integers with bias[0] = -0.0, so [2,0] is exactly
 * -0.0 in IEEE arithmetic (a sum of -0.0 terms plus -0.0).
 *
 * BIAS epilogue, checked on both paths: row 1 is NaN throughout and every
 * other element equals the host's value (==, so zeros of either sign
 * pass).  RELU_BIAS: cuBLASLt does not document its relu on NaN or signed
 * zeros, so on the fused path what it gives is printed as an observation,
 * never checked: for the NaN row, for [2,0] and for the zeros it makes of
 * negative values.  The sign of [2,0] after BIAS is printed the same way. */
static void test_linear_nan(void)
{
    enum { R = 4, K = 8, N = 8 };
    double xv[R * K], wv[N * K], bv[N], ref[R * N];
    void *xbase, *wbase, *bbase_al, *bbase_un, *obase, *out;
    const void *bias_al, *bias_un;
    pygpu_mat x, w, wt;
    pygpu_gemm_plan p;
    int64_t i, j, l;
    int kind, path;

    for (i = 0; i < R; i++) {
        for (l = 0; l < K; l++) {
            xv[i * K + l] = i == 2 ? -0.0 : (double)((int64_t)(rng() % 7) - 3);
        }
    }
    xv[1 * K + 3] = NAN;
    for (i = 0; i < N * K; i++) {
        wv[i] = (double)(1 + (int64_t)(rng() % 3));
    }
    for (j = 0; j < N; j++) {
        bv[j] = (double)((int64_t)(rng() % 9) - 4);
    }
    bv[0] = -0.0;
    for (i = 0; i < R; i++) {
        for (j = 0; j < N; j++) {
            double acc = -0.0; /* the IEEE sum: -0.0 is its identity */
            for (l = 0; l < K; l++) {
                acc += xv[i * K + l] * wv[j * K + l];
            }
            ref[i * N + j] = acc + bv[j];
        }
    }
    x.ptr = upload(F32, xv, R * K, 0, &xbase);
    x.rows = R;
    x.cols = K;
    x.row_stride = K;
    x.col_stride = 1;
    x.batch_stride = 0;
    w.ptr = upload(F32, wv, N * K, 0, &wbase);
    w.rows = N;
    w.cols = K;
    w.row_stride = K;
    w.col_stride = 1;
    w.batch_stride = 0;
    bias_al = upload(F32, bv, N, 0, &bbase_al);
    bias_un = upload(F32, bv, N, 4, &bbase_un);
    wt = pygpu_mat_transpose(&w);
    kind = pygpu_gemm_plan_make(&x, &wt, 1, &p);

    for (path = 0; path < 2; path++) { /* 0: fused, 1: fallback */
        const char *name = path == 0 ? "linear NaN, BIAS epilogue (fused)"
                                     : "linear NaN, BIAS epilogue (fallback)";
        const void *bias = path == 0 ? bias_al : bias_un;
        cublasStatus_t st;
        double *got;
        int took, ok = 1;
        char detail[200] = "";

        out = output_alloc(F32, R * N, 0, &obase);
        took = linear_exec(F32, 0, kind, &p, out, bias, bv, R, N, 0, &st);
        if (path == 0 && took != LIN_FUSED) {
            if (took == LIN_NO_ALGO) {
                skip(name, "no cuBLASLt algorithm; the extension takes the "
                           "fallback, checked by the fallback case");
            } /* else a failure lt_exec has reported */
            CUDA_OK(cudaFree(obase));
            continue;
        }
        if (path == 1 && took != LIN_FALLBACK) {
            ok = 0;
            snprintf(detail, sizeof(detail),
                     "a bias aligned to %u bytes did not take the fallback",
                     pygpu_ptr_alignment(bias));
        } else if (st != CUBLAS_STATUS_SUCCESS) {
            ok = 0;
            snprintf(detail, sizeof(detail), "fallback gemm status %s",
                     cublasGetStatusName(st));
        }
        if (ok) {
            got = output_fetch(F32, out, R * N);
            for (i = 0; ok && i < R; i++) {
                for (j = 0; ok && j < N; j++) {
                    double g = got[i * N + j], r = ref[i * N + j];
                    ok = isnan(r) ? isnan(g) : g == r;
                    if (!ok) {
                        snprintf(detail, sizeof(detail),
                                 "at [%lld,%lld] got %.9g want %.9g%s",
                                 (long long)i, (long long)j, g, r,
                                 isnan(r) ? " (the NaN must propagate)" : "");
                    }
                }
            }
            printf("observation (not checked): %s: [2,0], -0.0 in IEEE "
                   "arithmetic, comes out %s\n",
                   name, zero_name(got[2 * N + 0]));
            free(got);
        }
        report(ok, name, F32, 0, R, N, K, 1, detail);
        CUDA_OK(cudaFree(obase));
    }

    /* RELU_BIAS on the fused path: observations only. */
    {
        cublasStatus_t st;
        int took;

        out = output_alloc(F32, R * N, 0, &obase);
        took = linear_exec(F32, 0, kind, &p, out, bias_al, bv, R, N, 1, &st);
        if (took != LIN_FUSED) {
            printf("observation skipped: cuBLASLt did not run float32 "
                   "RELU_BIAS %dx%d @ %dx%d^T (%s)\n", R, K, N, K,
                   took == LIN_NO_ALGO ? "no algorithm" : "refused");
        } else {
            double *got = output_fetch(F32, out, R * N);
            int nan_n = 0, pz = 0, nz = 0, other = 0, neg_pz = 0, neg_nz = 0;
            int neg_other = 0;

            for (j = 0; j < N; j++) {
                double g = got[1 * N + j];
                if (isnan(g)) {
                    nan_n++;
                } else if (g == 0.0) {
                    if (signbit(g)) {
                        nz++;
                    } else {
                        pz++;
                    }
                } else {
                    other++;
                }
            }
            for (i = 0; i < R; i++) {
                for (j = 0; j < N; j++) {
                    double g = got[i * N + j];
                    if (i == 1 || !(ref[i * N + j] < 0.0)) {
                        continue;
                    }
                    if (g == 0.0 && !signbit(g)) {
                        neg_pz++;
                    } else if (g == 0.0) {
                        neg_nz++;
                    } else {
                        neg_other++;
                    }
                }
            }
            printf("observation (not checked): cuBLASLt RELU_BIAS float32, "
                   "NaN input row: %d of %d outputs NaN, %d +0.0, %d -0.0, "
                   "%d other (torch's relu keeps NaN)\n",
                   nan_n, N, pz, nz, other);
            printf("observation (not checked): cuBLASLt RELU_BIAS float32, "
                   "pre-activation -0.0 at [2,0] gives %s\n",
                   zero_name(got[2 * N + 0]));
            printf("observation (not checked): cuBLASLt RELU_BIAS float32, "
                   "negative pre-activations: %d give +0.0, %d give -0.0, "
                   "%d other\n", neg_pz, neg_nz, neg_other);
            free(got);
        }
        CUDA_OK(cudaFree(obase));
    }
    CUDA_OK(cudaFree(xbase));
    CUDA_OK(cudaFree(wbase));
    CUDA_OK(cudaFree(bbase_al));
    CUDA_OK(cudaFree(bbase_un));
}

/* The same linear with bias (48 rows, 64 in, 40 out) on the fused path and
 * on the fallback (the bias 4 bytes into its buffer), compared element by
 * element.  x and w are multiples of 2^-6 in [-1, 1], so each product is a
 * multiple of 2^-12 and every partial sum over k = 64 (|sum| <= 64) is
 * exact in FP32 in any order or split: the two paths, whatever their
 * kernels, reach the same exact sum.  Both then add the bias in the FP32
 * accumulator (the epilogue; beta 1 over the bias-filled output) and round
 * once to the output dtype, so they should agree bit for bit: float32 with
 * a full-precision random bias (so that add rounds), float16 with a half
 * bias (the rounding to half is where a fallback that rounded the product
 * before adding the bias would be off by an ulp).  The largest difference
 * is printed in ulps; more than 1 ulp of the output dtype fails, and so
 * does either result being off the host's value. */
static void test_fused_vs_fallback(int dtype)
{
    const int64_t rows = 48, in_f = 64, out_f = 40;
    double *xv = malloc((size_t)(rows * in_f) * sizeof(double));
    double *wv = malloc((size_t)(out_f * in_f) * sizeof(double));
    double *bv = malloc((size_t)out_f * sizeof(double));
    double *got[2] = {NULL, NULL};
    void *raw[2] = {NULL, NULL}, *obase[2] = {NULL, NULL}, *out[2];
    void *xbase, *wbase, *bbase_al, *bbase_un;
    const void *bias[2];
    pygpu_mat x, w, wt;
    pygpu_gemm_plan p;
    int64_t i, j, l, max_ulp = 0, at = -1, ndiff = 0;
    int kind, path, ok = 1;
    char detail[200] = "";
    const char *name = "fused vs fallback linear+bias";

    for (i = 0; i < rows * in_f; i++) {
        xv[i] = (double)((int64_t)(rng() % 129) - 64) / 64.0;
    }
    for (i = 0; i < out_f * in_f; i++) {
        wv[i] = (double)((int64_t)(rng() % 129) - 64) / 64.0;
    }
    for (j = 0; j < out_f; j++) {
        bv[j] = random_value(dtype);
    }
    x.ptr = upload(dtype, xv, rows * in_f, 0, &xbase);
    x.rows = rows;
    x.cols = in_f;
    x.row_stride = in_f;
    x.col_stride = 1;
    x.batch_stride = 0;
    w.ptr = upload(dtype, wv, out_f * in_f, 0, &wbase);
    w.rows = out_f;
    w.cols = in_f;
    w.row_stride = in_f;
    w.col_stride = 1;
    w.batch_stride = 0;
    bias[0] = upload(dtype, bv, out_f, 0, &bbase_al);
    bias[1] = upload(dtype, bv, out_f, 4, &bbase_un);
    wt = pygpu_mat_transpose(&w);
    kind = pygpu_gemm_plan_make(&x, &wt, 1, &p);

    for (path = 0; ok && path < 2; path++) {
        cublasStatus_t st;
        int took;

        out[path] = output_alloc(dtype, rows * out_f, 0, &obase[path]);
        took = linear_exec(dtype, 0, kind, &p, out[path], bias[path], bv, rows,
                           out_f, 0, &st);
        if (path == 0 && took != LIN_FUSED) {
            if (took == LIN_NO_ALGO) {
                skip(dtype == F16 ? "fused vs fallback linear+bias float16"
                                  : "fused vs fallback linear+bias float32",
                     "no cuBLASLt algorithm, so no fused result to compare");
            } /* else a failure lt_exec has reported */
            goto done;
        }
        if (path == 1 && took != LIN_FALLBACK) {
            ok = 0;
            snprintf(detail, sizeof(detail),
                     "a bias aligned to %u bytes did not take the fallback",
                     pygpu_ptr_alignment(bias[1]));
        } else if (st != CUBLAS_STATUS_SUCCESS) {
            ok = 0;
            snprintf(detail, sizeof(detail), "fallback gemm status %s",
                     cublasGetStatusName(st));
        }
    }
    if (ok) {
        for (path = 0; path < 2; path++) {
            raw[path] = fetch_raw(dtype, out[path], rows * out_f);
            got[path] = output_fetch(dtype, out[path], rows * out_f);
        }
        for (i = 0; i < rows; i++) {
            for (j = 0; j < out_f; j++) {
                int64_t e = i * out_f + j, d;
                double ref = bv[j], sumabs = absd(bv[j]);

                for (l = 0; l < in_f; l++) {
                    double t = xv[i * in_f + l] * wv[j * in_f + l];
                    ref += t;
                    sumabs += absd(t);
                }
                for (path = 0; path < 2; path++) {
                    if (ok && !close_enough(dtype, 0, got[path][e], ref,
                                            sumabs, in_f)) {
                        ok = 0;
                        snprintf(detail, sizeof(detail),
                                 "%s at [%lld,%lld] got %.9g want %.9g",
                                 path == 0 ? "fused" : "fallback",
                                 (long long)i, (long long)j, got[path][e],
                                 ref);
                    }
                }
                if (isnan(got[0][e]) || isnan(got[1][e])) {
                    continue; /* failed above */
                }
                d = ordered_bits(dtype, raw[0], e) -
                    ordered_bits(dtype, raw[1], e);
                d = d < 0 ? -d : d;
                ndiff += d != 0;
                if (d > max_ulp) {
                    max_ulp = d;
                    at = e;
                }
            }
        }
        printf("fused vs fallback linear+bias %s %lldx%lld (k=%lld): %s; "
               "max difference %lld ulp (%lld of %lld elements differ)",
               dtype_name[dtype], (long long)rows, (long long)out_f,
               (long long)in_f,
               ndiff == 0 ? "bit-identical" : "not bit-identical",
               (long long)max_ulp, (long long)ndiff,
               (long long)(rows * out_f));
        if (at >= 0) {
            printf(", largest at [%lld,%lld]: fused %.9g fallback %.9g",
                   (long long)(at / out_f), (long long)(at % out_f),
                   got[0][at], got[1][at]);
        }
        printf("\n");
        if (ok && max_ulp > 1) {
            ok = 0;
            snprintf(detail, sizeof(detail),
                     "max difference %lld ulp > 1 at [%lld,%lld]: fused "
                     "%.9g fallback %.9g",
                     (long long)max_ulp, (long long)(at / out_f),
                     (long long)(at % out_f), got[0][at], got[1][at]);
        }
    }
    report(ok, name, dtype, 0, rows, out_f, in_f, 1, detail);
done:
    for (path = 0; path < 2; path++) {
        free(raw[path]);
        free(got[path]);
        if (obase[path] != NULL) {
            CUDA_OK(cudaFree(obase[path]));
        }
    }
    free(xv);
    free(wv);
    free(bv);
    CUDA_OK(cudaFree(xbase));
    CUDA_OK(cudaFree(wbase));
    CUDA_OK(cudaFree(bbase_al));
    CUDA_OK(cudaFree(bbase_un));
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
            char detail[160] = "";

            operand_make(&oa, F32, m, k, 1, 0);
            operand_make(&ob, F32, k, n, 1, 0);
            pygpu_gemm_plan_make(&oa.mat, &ob.mat, 1, &p);
            BLAS_OK(run_gemm(F32, 0, PYGPU_GEMM_CALL, &p, c, to, 0, 0));
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
                    if (!ok) {
                        snprintf(detail, sizeof(detail),
                                 "switch %d (%s) at [%lld,%lld] got %.9g "
                                 "want %.9g", r,
                                 to == 0 ? "to the legacy stream"
                                         : "to a side stream",
                                 (long long)i, (long long)j, got[i * n + j],
                                 ref);
                    }
                }
            }
            report(ok, "stream switch", F32, 0, m, n, k, 1, detail);
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
    char detail[160] = "";

    CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b < bytes + ((size_t)2 << 30)) {
        snprintf(detail, sizeof(detail), "needs %zu bytes free, %zu are",
                 bytes + ((size_t)2 << 30), free_b);
        skip("large ld (_64)", detail);
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
    if (!ok) {
        snprintf(detail, sizeof(detail),
                 "plan kind %d fits_int %d (want a call past INT_MAX)", kind,
                 pygpu_gemm_plan_fits_int(&p));
    } else {
        cublasStatus_t st = run_gemm(F16, 0, kind, &p, dc, 0, 0, 0);
        ok = st == CUBLAS_STATUS_SUCCESS;
        if (!ok) {
            snprintf(detail, sizeof(detail), "status %s",
                     cublasGetStatusName(st));
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
                if (!ok) {
                    snprintf(detail, sizeof(detail),
                             "at [%lld,%lld] got %.9g want %.9g",
                             (long long)i, (long long)j, got[i * n + j], ref);
                }
            }
        }
        free(got);
    }
    report(ok, "large ld (_64)", F16, 0, 2, n, k, 1, detail);
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
        lt_exec(&plan, &p, dc, db, 0);
        BLAS_OK(run_gemm(F16, 0, PYGPU_GEMM_CALL, &p, dc, 0, 0, 0));
    }
    CUDA_OK(cudaDeviceSynchronize());
    t0 = now_us();
    for (i = 0; i < iters; i++) {
        lt_exec(&plan, &p, dc, db, 0);
    }
    CUDA_OK(cudaDeviceSynchronize());
    t_lt = (now_us() - t0) / (double)iters;
    t0 = now_us();
    for (i = 0; i < iters; i++) {
        BLAS_OK(run_gemm(F16, 0, PYGPU_GEMM_CALL, &p, dc, 0, 0, 0));
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
    test_true_fp32(0, 0);
    test_true_fp32(1, 0);
    test_true_fp32(0, 1);
    test_true_fp32(1, 1);
    for (dtype = F32; dtype <= F16; dtype++) {
        int bcast;
        for (bcast = 0; bcast < 3; bcast++) {
            test_big_batch(dtype, bcast);
        }
    }
    test_linear_nan();
    test_fused_vs_fallback(F32);
    test_fused_vs_fallback(F16);
    test_stream_switch();
    test_large_ld();
    time_thin_path();

    printf("linear: %d via cuBLASLt, %d via the gemm fallback\n", lt_used,
           lt_fallback);
    printf("%d skipped\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    CUDA_OK(cudaFree(workspace));
    BLAS_OK(cublasLtDestroy(lt_handle));
    BLAS_OK(cublasDestroy(handle));
    return failed != 0;
}
