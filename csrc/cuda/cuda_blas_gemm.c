/* cuda_blas_gemm.c - the cuBLAS call sequence of a planned product and
 * the recording of failing statuses.  No Python here: the self-test
 * (tests/native/blas_selftest) compiles this file and runs these very
 * calls; cuda_blas.c takes the lock, binds the stream and raises.
 */
#include <stddef.h>

#include "cuda/cuda_blas_internal.h"
#include "kernels/kernels.h"

/* Bytes per element of the dtypes cuBLAS products take. */
static size_t itemsize(int dtype)
{
    return dtype == PYGPU_FLOAT64 ? 8 : dtype == PYGPU_FLOAT32 ? 4 : 2;
}

int pygpu_blas_check(cublasStatus_t st, const char *call, pygpu_blas_err *e)
{
    if (st == CUBLAS_STATUS_SUCCESS) {
        return 0;
    }
    if (e->kind == PYGPU_BLAS_ERR_NONE) { /* keep the first failure */
        e->kind = PYGPU_BLAS_ERR_CUBLAS;
        e->status = (int)st;
        e->call = call;
        e->file = NULL; /* the call's name is what the message needs */
        e->line = 0;
    }
    return -1;
}

int pygpu_blas_cuda_check(cudaError_t err, const char *call,
                          const char *file, int line, pygpu_blas_err *e)
{
    if (err == cudaSuccess) {
        return 0;
    }
    if (e->kind == PYGPU_BLAS_ERR_NONE) {
        e->kind = PYGPU_BLAS_ERR_CUDA;
        e->status = (int)err;
        e->call = call;
        e->file = file;
        e->line = line;
    }
    return -1;
}

void pygpu_blas_explain(pygpu_blas_err *e, cudaStream_t stream)
{
    cudaError_t err;

    if (e->kind != PYGPU_BLAS_ERR_CUBLAS ||
        e->status != (int)CUBLAS_STATUS_EXECUTION_FAILED ||
        e->cuda_status != 0) {
        return;
    }
    err = cudaGetLastError();
    if (err == cudaSuccess) {
        /* A sticky fault (an illegal address, say) is what any call on
         * the context returns from now on. */
        err = cudaStreamQuery(stream);
        if (err == cudaErrorNotReady) {
            err = cudaSuccess;
        }
    }
    e->cuda_status = (int)err;
}

int pygpu_blas_types(int dtype, int tf32, cudaDataType_t *data,
                     cublasComputeType_t *compute, cudaDataType_t *scale)
{
    switch (dtype) {
    case PYGPU_FLOAT32:
        /* CUBLAS_COMPUTE_32F is true FP32 under the handle's default math
         * mode (never changed here); _FAST_TF32 lets tensor cores round
         * the inputs to TF32. */
        *data = CUDA_R_32F;
        *compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        *scale = CUDA_R_32F;
        return 0;
    case PYGPU_FLOAT16:
        /* Tensor cores with FP32 accumulation; alpha/beta are floats. */
        *data = CUDA_R_16F;
        *compute = CUBLAS_COMPUTE_32F;
        *scale = CUDA_R_32F;
        return 0;
    case PYGPU_BFLOAT16:
        /* As float16: tensor cores, FP32 accumulation, float alpha/beta. */
        *data = CUDA_R_16BF;
        *compute = CUBLAS_COMPUTE_32F;
        *scale = CUDA_R_32F;
        return 0;
    case PYGPU_FLOAT64:
        *data = CUDA_R_64F;
        *compute = CUBLAS_COMPUTE_64F;
        *scale = CUDA_R_64F;
        return 0;
    default:
        return -1;
    }
}

int pygpu_blas_gemm(pygpu_blas_dev *d, int dtype, int tf32, int kind,
                    const pygpu_gemm_plan *p, void *c, int accumulate,
                    int force64, cudaStream_t stream, pygpu_blas_err *e)
{
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    cudaDataType_t type, scale;
    cublasComputeType_t compute;
    cublasOperation_t ta, tb;
    const void *alpha, *beta;
    cublasStatus_t st;
    const char *call;

    if (pygpu_blas_types(dtype, tf32, &type, &compute, &scale) < 0) {
        return pygpu_blas_check(CUBLAS_STATUS_NOT_SUPPORTED, "gemm dtype", e);
    }
    if (kind == PYGPU_GEMM_ZERO && accumulate) {
        return 0; /* C + (empty sum) is C */
    }
    if (kind == PYGPU_GEMM_ZERO) {
        /* k == 0: the product is all zeros, and +0.0 is all-zero bits. */
        size_t bytes = (size_t)(p->batch * p->m * p->n) * itemsize(dtype);
        return pygpu_blas_cuda_check(cudaMemsetAsync(c, 0, bytes, stream),
                                     "cudaMemsetAsync", __FILE__, __LINE__,
                                     e);
    }
    alpha = scale == CUDA_R_64F ? (const void *)&one_d : (const void *)&one_f;
    beta = scale == CUDA_R_64F ? (const void *)(accumulate ? &one_d : &zero_d)
                               : (const void *)(accumulate ? &one_f : &zero_f);
    ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (pygpu_gemm_plan_fits_int(p) && !force64) {
        if (p->batch == 1) {
            call = "cublasGemmEx";
            st = pygpu_cublas.cublasGemmEx(
                d->handle, ta, tb, (int)p->m, (int)p->n, (int)p->k, alpha, p->a,
                type, (int)p->lda, p->b, type, (int)p->ldb, beta, c, type,
                (int)p->ldc, compute, CUBLAS_GEMM_DEFAULT);
        } else {
            call = "cublasGemmStridedBatchedEx";
            st = pygpu_cublas.cublasGemmStridedBatchedEx(
                d->handle, ta, tb, (int)p->m, (int)p->n, (int)p->k, alpha, p->a,
                type, (int)p->lda, (long long)p->stride_a, p->b, type,
                (int)p->ldb, (long long)p->stride_b, beta, c, type, (int)p->ldc,
                (long long)p->stride_c, (int)p->batch, compute,
                CUBLAS_GEMM_DEFAULT);
        }
    } else {
        /* A size past INT_MAX: the 64-bit entry points, never a silent
         * truncation.  They report NOT_SUPPORTED where cuBLAS has no
         * kernel for such sizes, and that is raised. */
        if (p->batch == 1) {
            call = "cublasGemmEx_64";
            st = pygpu_cublas.cublasGemmEx_64(
                d->handle, ta, tb, p->m, p->n, p->k, alpha, p->a, type, p->lda,
                p->b, type, p->ldb, beta, c, type, p->ldc, compute,
                CUBLAS_GEMM_DEFAULT);
        } else {
            call = "cublasGemmStridedBatchedEx_64";
            st = pygpu_cublas.cublasGemmStridedBatchedEx_64(
                d->handle, ta, tb, p->m, p->n, p->k, alpha, p->a, type, p->lda,
                (long long)p->stride_a, p->b, type, p->ldb,
                (long long)p->stride_b, beta, c, type, p->ldc,
                (long long)p->stride_c, p->batch, compute, CUBLAS_GEMM_DEFAULT);
        }
    }
    return pygpu_blas_check(st, call, e);
}
