/* cuda_blas_lt.c - the cuBLASLt call sequences of linear: the problem's
 * key, building a plan (descriptor, layouts, alignment preferences, the
 * heuristic's algorithm), running it with the bias epilogue, and which
 * problems may take it.  No Python and no state: cuda_blaslt.c keeps the
 * plans in its cache under the lock, and the self-test
 * (tests/native/blas_selftest) compiles this file and runs these very
 * calls.
 */
#include <string.h>

#include "cuda/cuda_blas_internal.h"
#include "kernels/kernels.h"

/* cuBLASLt's kernels load the bias vectorised.  The heuristic is documented
 * to look at the bias pointer's alignment, but a bias that is a view into a
 * larger buffer is rare enough that it takes the fallback path rather than
 * a plan cached for one alignment and reused at another (the alignment is
 * in the key as well).  Both paths round the biased sum once. */
#define LT_MIN_BIAS_ALIGN 16

int pygpu_lt_eligible(int kind, const pygpu_gemm_plan *p, const void *bias)
{
    /* cuBLASLt's layouts take 64-bit sizes but, as documented, only
     * int32 values are supported; bigger problems take the fallback
     * and its 64-bit entry points.  Like torch, a weight with a single
     * output or input feature (m' or k' of 1) takes the fallback too:
     * cuBLASLt has had bugs with such degenerate shapes, and these
     * matrix-vector products gain nothing from the fusion. */
    return kind == PYGPU_GEMM_CALL && pygpu_gemm_plan_fits_int(p) &&
           p->m > 1 && p->k > 1 &&
           (bias == NULL || pygpu_ptr_alignment(bias) >= LT_MIN_BIAS_ALIGN);
}

void pygpu_lt_key_make(pygpu_lt_key *key, int device, int dtype, int tf32,
                       const pygpu_gemm_plan *p, const void *out,
                       const void *bias)
{
    memset(key, 0, sizeof(*key));
    key->device = device;
    key->dtype = dtype;
    key->tf32 = tf32;
    key->epilogue =
        bias != NULL ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    key->trans_a = p->trans_a;
    key->trans_b = p->trans_b;
    key->m = p->m;
    key->n = p->n;
    key->k = p->k;
    key->lda = p->lda;
    key->ldb = p->ldb;
    key->ldc = p->ldc;
    key->align_a = pygpu_ptr_alignment(p->a);
    key->align_b = pygpu_ptr_alignment(p->b);
    key->align_c = pygpu_ptr_alignment(out);
    key->align_bias = bias != NULL ? pygpu_ptr_alignment(bias) : 0;
}

void pygpu_lt_plan_clear(pygpu_lt_plan *s)
{
    if (s->lc != NULL) {
        pygpu_cublas.cublasLtMatrixLayoutDestroy(s->lc);
    }
    if (s->lb != NULL) {
        pygpu_cublas.cublasLtMatrixLayoutDestroy(s->lb);
    }
    if (s->la != NULL) {
        pygpu_cublas.cublasLtMatrixLayoutDestroy(s->la);
    }
    if (s->desc != NULL) {
        pygpu_cublas.cublasLtMatmulDescDestroy(s->desc);
    }
    memset(s, 0, sizeof(*s));
}

static int lt_desc_set(cublasLtMatmulDesc_t desc,
                       cublasLtMatmulDescAttributes_t attr, const void *buf,
                       size_t size, pygpu_blas_err *e)
{
    return pygpu_blas_check(
        pygpu_cublas.cublasLtMatmulDescSetAttribute(desc, attr, buf, size),
        "cublasLtMatmulDescSetAttribute", e);
}

static int lt_pref_set(cublasLtMatmulPreference_t pref,
                       cublasLtMatmulPreferenceAttributes_t attr,
                       const void *buf, size_t size, pygpu_blas_err *e)
{
    return pygpu_blas_check(pygpu_cublas.cublasLtMatmulPreferenceSetAttribute(
                                pref, attr, buf, size),
                            "cublasLtMatmulPreferenceSetAttribute", e);
}

int pygpu_lt_plan_build(pygpu_blas_dev *d, pygpu_lt_plan *s,
                        const pygpu_lt_key *key, const pygpu_gemm_plan *p,
                        const void *bias, pygpu_blas_err *e)
{
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t result;
    cudaDataType_t type, scale;
    cublasComputeType_t compute;
    int32_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int32_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    uint32_t epilogue = (uint32_t)key->epilogue;
    uint64_t ws = d->workspace_size;
    uint32_t align_a = (uint32_t)key->align_a, align_b = (uint32_t)key->align_b;
    uint32_t align_c = (uint32_t)key->align_c;
    int64_t rows, cols;
    int found = 0;
    cublasStatus_t st;

    memset(&result, 0, sizeof(result));
    pygpu_blas_types((int)key->dtype, (int)key->tf32, &type, &compute, &scale);
    s->key = *key;
    st = pygpu_cublas.cublasLtMatmulDescCreate(&s->desc, compute, scale);
    if (pygpu_blas_check(st, "cublasLtMatmulDescCreate", e) < 0) {
        goto fail;
    }
    if (lt_desc_set(s->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta),
                    e) < 0 ||
        lt_desc_set(s->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb),
                    e) < 0 ||
        lt_desc_set(s->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                    sizeof(epilogue), e) < 0) {
        goto fail;
    }
    /* The heuristic reads the bias pointer's value for its alignment. */
    if (bias != NULL &&
        lt_desc_set(s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                    sizeof(bias), e) < 0) {
        goto fail;
    }
    pygpu_gemm_stored_a(p, &rows, &cols);
    st = pygpu_cublas.cublasLtMatrixLayoutCreate(&s->la, type, (uint64_t)rows,
                                                 (uint64_t)cols, p->lda);
    if (pygpu_blas_check(st, "cublasLtMatrixLayoutCreate", e) < 0) {
        goto fail;
    }
    pygpu_gemm_stored_b(p, &rows, &cols);
    st = pygpu_cublas.cublasLtMatrixLayoutCreate(&s->lb, type, (uint64_t)rows,
                                                 (uint64_t)cols, p->ldb);
    if (pygpu_blas_check(st, "cublasLtMatrixLayoutCreate", e) < 0) {
        goto fail;
    }
    st = pygpu_cublas.cublasLtMatrixLayoutCreate(&s->lc, type, (uint64_t)p->m,
                                                 (uint64_t)p->n, p->ldc);
    if (pygpu_blas_check(st, "cublasLtMatrixLayoutCreate", e) < 0) {
        goto fail;
    }
    st = pygpu_cublas.cublasLtMatmulPreferenceCreate(&pref);
    if (pygpu_blas_check(st, "cublasLtMatmulPreferenceCreate", e) < 0) {
        goto fail;
    }
    if (lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                    sizeof(ws), e) < 0 ||
        lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                    &align_a, sizeof(align_a), e) < 0 ||
        lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    &align_b, sizeof(align_b), e) < 0 ||
        lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                    &align_c, sizeof(align_c), e) < 0 ||
        lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                    &align_c, sizeof(align_c), e) < 0) {
        goto fail;
    }
    st = pygpu_cublas.cublasLtMatmulAlgoGetHeuristic(
        d->lt, s->desc, s->la, s->lb, s->lc, s->lc, pref, 1, &result, &found);
    if (st == CUBLAS_STATUS_SUCCESS && found > 0 &&
        result.state == CUBLAS_STATUS_SUCCESS) {
        s->algo = result.algo;
        s->use_lt = 1;
    } else if (st == CUBLAS_STATUS_SUCCESS ||
               st == CUBLAS_STATUS_NOT_SUPPORTED ||
               st == CUBLAS_STATUS_INVALID_VALUE) {
        /* No algorithm, or a configuration cuBLASLt refuses (say, an
         * epilogue it lacks for this dtype): cublasGemmEx and the kernel
         * run it, every time, without asking again. */
        s->use_lt = 0;
    } else if (pygpu_blas_check(st, "cublasLtMatmulAlgoGetHeuristic",
                                e) < 0) {
        goto fail;
    }
    pygpu_cublas.cublasLtMatmulPreferenceDestroy(pref);
    s->used = 1;
    return 0;

fail:
    if (pref != NULL) {
        pygpu_cublas.cublasLtMatmulPreferenceDestroy(pref);
    }
    pygpu_lt_plan_clear(s);
    return -1;
}

int pygpu_lt_plan_run(pygpu_blas_dev *d, pygpu_lt_plan *s,
                      const pygpu_gemm_plan *p, void *out, const void *bias,
                      cudaStream_t stream, pygpu_blas_err *e)
{
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    int f64 = s->key.dtype == PYGPU_FLOAT64;
    const void *alpha = f64 ? (const void *)&one_d : (const void *)&one_f;
    const void *beta = f64 ? (const void *)&zero_d : (const void *)&zero_f;
    cublasStatus_t st;

    if (!s->use_lt) {
        return 0;
    }
    if (bias != NULL &&
        lt_desc_set(s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                    sizeof(bias), e) < 0) {
        return -1;
    }
    st = pygpu_cublas.cublasLtMatmul(
        d->lt, s->desc, alpha, p->a, s->la, p->b, s->lb, beta, out, s->lc, out,
        s->lc, &s->algo, d->workspace, d->workspace_size, stream);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
        st == CUBLAS_STATUS_INVALID_VALUE) {
        /* Refused before anything was queued: the fallback runs it, now
         * and from now on. */
        s->use_lt = 0;
        return 0;
    }
    return pygpu_blas_check(st, "cublasLtMatmul", e) < 0 ? -1 : 1;
}
