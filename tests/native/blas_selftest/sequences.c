/* sequences.c - the extension's cuBLAS / cuBLASLt call sequences,
 * restated: pygpu_blas_gemm (csrc/cuda/cuda_blas.c), the cuBLASLt plan, its run
 * and the linear fallback with their routing (csrc/cuda/cuda_blaslt.c). */
#include "blas_selftest.h"

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
cublasStatus_t run_gemm(int dtype, int tf32, int kind,
                        const pygpu_gemm_plan *p, void *c,
                        cudaStream_t stream, int force64, int accumulate)
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

/* lt_plan_build of cuda_blaslt.c: descriptor, layouts, alignment
 * preferences, heuristic (lt_plan: blas_selftest.h). */
void lt_build(lt_plan *s, int dtype, int tf32, const pygpu_gemm_plan *p,
              const void *out, const void *bias, int relu)
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

void lt_free(lt_plan *s)
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
int lt_exec(lt_plan *s, const pygpu_gemm_plan *p, void *out,
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

/* pygpu_cuda_linear on one problem with a fresh plan: its routing (sizes
 * that fit an int, m' and k' over 1, no bias or one aligned to 16 bytes),
 * then cuBLASLt, else linear_fallback (whose relu the caller applies).
 * bias_d and bias_h hold the same values (device, host).  *st is the
 * fallback gemm's status (success when it did not run). */
int linear_exec(int dtype, int tf32, int kind, const pygpu_gemm_plan *p,
                void *out, const void *bias_d, const double *bias_h,
                int64_t rows, int64_t out_f, int relu, cublasStatus_t *st)
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
