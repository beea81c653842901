/* sequences.c - the extension's cuBLAS / cuBLASLt call sequences, run
 * as they are: pygpu_blas_gemm (csrc/cuda/cuda_blas_gemm.c) and the
 * cuBLASLt key, plan, run and routing of linear (csrc/cuda/cuda_blas_lt.c),
 * on a device state made of the self-test's handles and workspace.  Only
 * the fallback's bias fill is done here (a copy from the host instead of
 * the bias_act kernel, which the kernel self-test checks). */
#include "blas_selftest.h"

/* The handles and workspace of main.c, as the extension holds a device's. */
static pygpu_blas_dev *device_state(void)
{
    static pygpu_blas_dev d;

    d.ready = 1;
    d.handle = handle;
    d.lt = lt_handle;
    d.workspace = workspace;
    d.workspace_size = workspace_size;
    return &d;
}

/* A recorded failure as a cuBLAS status (a CUDA failure as
 * EXECUTION_FAILED, after printing it). */
static cublasStatus_t status_of(const pygpu_blas_err *e)
{
    if (e->kind == PYGPU_BLAS_ERR_CUBLAS) {
        return (cublasStatus_t)e->status;
    }
    if (e->kind == PYGPU_BLAS_ERR_CUDA) {
        printf("CUDA error %s in %s\n",
               cudaGetErrorName((cudaError_t)e->status), e->call);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* A setup failure inside a plan call: report and stop. */
static void plan_ok(int rc, const pygpu_blas_err *e)
{
    if (rc < 0) {
        printf("cuBLASLt error %s in %s\n",
               cublasGetStatusName(status_of(e)), e->call);
        exit(2);
    }
}

cublasStatus_t run_gemm(int dtype, int tf32, int kind,
                        const pygpu_gemm_plan *p, void *c,
                        cudaStream_t stream, int force64, int accumulate)
{
    pygpu_blas_err e = {PYGPU_BLAS_ERR_NONE, 0, NULL, NULL, 0};

    pygpu_blas_gemm(device_state(), dtype, tf32, kind, p, c, accumulate,
                    force64, stream, &e);
    return status_of(&e);
}

void lt_build(pygpu_lt_plan *s, int dtype, int tf32, const pygpu_gemm_plan *p,
              const void *out, const void *bias)
{
    pygpu_blas_err e = {PYGPU_BLAS_ERR_NONE, 0, NULL, NULL, 0};
    pygpu_lt_key key;

    memset(s, 0, sizeof(*s));
    pygpu_lt_key_make(&key, 0, dtype, tf32, p, out, bias);
    plan_ok(pygpu_lt_plan_build(device_state(), s, &key, p, bias, &e), &e);
}

void lt_build_relu_bias(pygpu_lt_plan *s, int dtype, int tf32,
                        const pygpu_gemm_plan *p, const void *out,
                        const void *bias)
{
    pygpu_blas_err e = {PYGPU_BLAS_ERR_NONE, 0, NULL, NULL, 0};
    pygpu_lt_key key;

    memset(s, 0, sizeof(*s));
    pygpu_lt_key_make(&key, 0, dtype, tf32, p, out, bias);
    key.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
    plan_ok(pygpu_lt_plan_build(device_state(), s, &key, p, bias, &e), &e);
}

void lt_free(pygpu_lt_plan *s)
{
    pygpu_lt_plan_clear(s);
}

int lt_exec(pygpu_lt_plan *s, const pygpu_gemm_plan *p, void *out,
            const void *bias, cudaStream_t stream)
{
    pygpu_blas_err e = {PYGPU_BLAS_ERR_NONE, 0, NULL, NULL, 0};
    int had_algo = s->use_lt;
    int rc = pygpu_lt_plan_run(device_state(), s, p, out, bias, stream, &e);

    plan_ok(rc, &e);
    if (rc == 0 && had_algo) {
        report(0, "cublasLtMatmul refused the heuristic's plan",
               (int)s->key.dtype, (int)s->key.tf32, p->n, p->m, p->k, 1,
               "NOT_SUPPORTED or INVALID_VALUE");
    }
    return rc;
}

/* The fallback of pygpu_cuda_linear (cublasGemmEx and the bias_act
 * kernel) as cuda_blaslt.c runs it: with a bias, out is first set to
 * bias[col] in every row (the kernel's PYGPU_BIAS_FILL mode; here a copy
 * from the host of the same values) and the gemm accumulates into it
 * (beta 1), so the bias is added in the FP32 accumulator and the sum is
 * rounded once; for k == 0 out is left holding the bias.  linear_relu's
 * relu (the relu kernel, after either path) is left to the caller, which
 * applies it on the host. */
cublasStatus_t linear_fallback(int dtype, int tf32, int kind,
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

/* pygpu_cuda_linear on one problem with a fresh plan, before its relu:
 * its routing (pygpu_lt_eligible), then cuBLASLt, else linear_fallback.
 * bias_d and bias_h hold the same values (device, host).  *st is the
 * fallback gemm's status (success when it did not run). */
int linear_exec(int dtype, int tf32, int kind, const pygpu_gemm_plan *p,
                void *out, const void *bias_d, const double *bias_h,
                int64_t rows, int64_t out_f, cublasStatus_t *st)
{
    int path = LIN_FALLBACK;

    *st = CUBLAS_STATUS_SUCCESS;
    if (pygpu_lt_eligible(kind, p, bias_d)) {
        pygpu_lt_plan plan;

        lt_build(&plan, dtype, tf32, p, out, bias_d);
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
