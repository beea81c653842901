/* cuda_blaslt.c - linear on CUDA: out = x @ w^T (+ bias) (relu) in one
 * cuBLASLt call with a fused epilogue, falling back to cublasGemmEx and
 * the bias/relu kernel where cuBLASLt has no algorithm.
 *
 * The bias.  Through the swap of blas_layout.h the row-major rows x out_f
 * result is the column-major out_f x rows matrix D of the call, so the
 * bias, one value per output feature (per column of the row-major result),
 * is one value per row of D: exactly what cuBLASLt's BIAS epilogues take
 * (a packed vector of D's row count, broadcast along D's columns), added
 * before the relu.
 *
 * The plan cache.  Building descriptors and running the heuristic costs
 * far more than the product itself for small shapes, so each problem's
 * descriptors and chosen algorithm are kept in a small fixed table keyed
 * by everything the heuristic saw: device, dtype, TF32, epilogue,
 * transposes, sizes, leading dims and the alignment of each pointer (the
 * heuristic assumes what the alignment preferences promise).  A repeated
 * call only sets the bias pointer and calls cublasLtMatmul.  A problem
 * cuBLASLt cannot run is cached too, as "use the fallback".  The least
 * recently used entry is replaced when the table is full.  The table is
 * guarded by the mutex held between pygpu_blas_acquire and _release.
 */
#include "core/pygpu.h"

#include <string.h>

#include "cuda/blas.h"
#include "cuda/cuda_blas_internal.h"

#define LT_SLOTS 64

/* All int64_t, so no padding and memcmp compares keys. */
typedef struct lt_key {
    int64_t device, dtype, tf32, epilogue;
    int64_t trans_a, trans_b, m, n, k, lda, ldb, ldc;
    int64_t align_a, align_b, align_c, align_bias;
} lt_key;

typedef struct lt_plan {
    lt_key key;
    int used;
    int use_lt; /* 0: cuBLASLt cannot run this problem: use the fallback */
    uint64_t last_use;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc; /* lc describes both C and D */
    cublasLtMatmulAlgo_t algo;
} lt_plan;

static lt_plan lt_cache[LT_SLOTS];
static uint64_t lt_clock;
static int lt_last; /* the slot hit last: checked first */

/* cuBLASLt's kernels load the bias vectorised.  The heuristic is documented
 * to look at the bias pointer's alignment, but a bias that is a view into a
 * larger buffer is rare enough that it takes the fallback path rather than
 * a plan cached for one alignment and reused at another (the alignment is
 * in the key as well).  Both paths round the biased sum once. */
#define LT_MIN_BIAS_ALIGN 16

static void lt_plan_clear(lt_plan *s)
{
    if (s->lc != NULL) {
        cublasLtMatrixLayoutDestroy(s->lc);
    }
    if (s->lb != NULL) {
        cublasLtMatrixLayoutDestroy(s->lb);
    }
    if (s->la != NULL) {
        cublasLtMatrixLayoutDestroy(s->la);
    }
    if (s->desc != NULL) {
        cublasLtMatmulDescDestroy(s->desc);
    }
    memset(s, 0, sizeof(*s));
}

static lt_plan *lt_find(const lt_key *key)
{
    int i;

    if (lt_cache[lt_last].used &&
        memcmp(&lt_cache[lt_last].key, key, sizeof(*key)) == 0) {
        return &lt_cache[lt_last];
    }
    for (i = 0; i < LT_SLOTS; i++) {
        if (lt_cache[i].used &&
            memcmp(&lt_cache[i].key, key, sizeof(*key)) == 0) {
            lt_last = i;
            return &lt_cache[i];
        }
    }
    return NULL;
}

/* A free slot, else the least recently used one, emptied. */
static lt_plan *lt_victim(void)
{
    int i, best = 0;

    for (i = 0; i < LT_SLOTS; i++) {
        if (!lt_cache[i].used) {
            best = i;
            break;
        }
        if (lt_cache[i].last_use < lt_cache[best].last_use) {
            best = i;
        }
    }
    lt_plan_clear(&lt_cache[best]);
    lt_last = best;
    return &lt_cache[best];
}

static int lt_desc_set(cublasLtMatmulDesc_t desc,
                       cublasLtMatmulDescAttributes_t attr, const void *buf,
                       size_t size, pygpu_blas_err *e)
{
    return pygpu_blas_check(cublasLtMatmulDescSetAttribute(desc, attr, buf,
                                                           size),
                            "cublasLtMatmulDescSetAttribute", e);
}

static int lt_pref_set(cublasLtMatmulPreference_t pref,
                       cublasLtMatmulPreferenceAttributes_t attr,
                       const void *buf, size_t size, pygpu_blas_err *e)
{
    return pygpu_blas_check(cublasLtMatmulPreferenceSetAttribute(pref, attr,
                                                                 buf, size),
                            "cublasLtMatmulPreferenceSetAttribute", e);
}

/* Fill slot s for `key`: descriptors, layouts, and one algorithm from the
 * heuristic (or use_lt = 0 when there is none). */
static int lt_plan_build(pygpu_blas_dev *d, lt_plan *s, const lt_key *key,
                         const pygpu_gemm_plan *p, const void *bias,
                         pygpu_blas_err *e)
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
    st = cublasLtMatmulDescCreate(&s->desc, compute, scale);
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
    st = cublasLtMatrixLayoutCreate(&s->la, type, (uint64_t)rows,
                                    (uint64_t)cols, p->lda);
    if (pygpu_blas_check(st, "cublasLtMatrixLayoutCreate", e) < 0) {
        goto fail;
    }
    pygpu_gemm_stored_b(p, &rows, &cols);
    st = cublasLtMatrixLayoutCreate(&s->lb, type, (uint64_t)rows,
                                    (uint64_t)cols, p->ldb);
    if (pygpu_blas_check(st, "cublasLtMatrixLayoutCreate", e) < 0) {
        goto fail;
    }
    st = cublasLtMatrixLayoutCreate(&s->lc, type, (uint64_t)p->m,
                                    (uint64_t)p->n, p->ldc);
    if (pygpu_blas_check(st, "cublasLtMatrixLayoutCreate", e) < 0) {
        goto fail;
    }
    st = cublasLtMatmulPreferenceCreate(&pref);
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
    st = cublasLtMatmulAlgoGetHeuristic(d->lt, s->desc, s->la, s->lb, s->lc,
                                        s->lc, pref, 1, &result, &found);
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
    cublasLtMatmulPreferenceDestroy(pref);
    s->used = 1;
    return 0;

fail:
    if (pref != NULL) {
        cublasLtMatmulPreferenceDestroy(pref);
    }
    lt_plan_clear(s);
    return -1;
}

/* Run the problem through cuBLASLt: 1 when done, 0 when it must take the
 * fallback, -1 with *e set on failure. */
static int lt_run(pygpu_blas_dev *d, int device, int dtype, int tf32,
                  const pygpu_gemm_plan *p, void *out, const void *bias,
                  int relu, cudaStream_t stream, pygpu_blas_err *e)
{
    static const float one_f = 1.0f, zero_f = 0.0f;
    static const double one_d = 1.0, zero_d = 0.0;
    const void *alpha, *beta;
    lt_plan *s;
    lt_key key;
    cublasStatus_t st;

    memset(&key, 0, sizeof(key));
    key.device = device;
    key.dtype = dtype;
    key.tf32 = tf32;
    key.epilogue = bias != NULL ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                        : CUBLASLT_EPILOGUE_BIAS)
                                : (relu ? CUBLASLT_EPILOGUE_RELU
                                        : CUBLASLT_EPILOGUE_DEFAULT);
    key.trans_a = p->trans_a;
    key.trans_b = p->trans_b;
    key.m = p->m;
    key.n = p->n;
    key.k = p->k;
    key.lda = p->lda;
    key.ldb = p->ldb;
    key.ldc = p->ldc;
    key.align_a = pygpu_ptr_alignment(p->a);
    key.align_b = pygpu_ptr_alignment(p->b);
    key.align_c = pygpu_ptr_alignment(out);
    key.align_bias = bias != NULL ? pygpu_ptr_alignment(bias) : 0;

    s = lt_find(&key);
    if (s == NULL) {
        s = lt_victim();
        if (lt_plan_build(d, s, &key, p, bias, e) < 0) {
            return -1;
        }
    }
    s->last_use = ++lt_clock;
    if (!s->use_lt) {
        return 0;
    }
    if (bias != NULL &&
        lt_desc_set(s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                    sizeof(bias), e) < 0) {
        return -1;
    }
    alpha = dtype == PYGPU_FLOAT64 ? (const void *)&one_d
                                   : (const void *)&one_f;
    beta = dtype == PYGPU_FLOAT64 ? (const void *)&zero_d
                                  : (const void *)&zero_f;
    st = cublasLtMatmul(d->lt, s->desc, alpha, p->a, s->la, p->b, s->lb, beta,
                        out, s->lc, out, s->lc, &s->algo, d->workspace,
                        d->workspace_size, stream);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
        st == CUBLAS_STATUS_INVALID_VALUE) {
        /* Refused before anything was queued: the fallback runs it, now
         * and from now on. */
        s->use_lt = 0;
        return 0;
    }
    return pygpu_blas_check(st, "cublasLtMatmul", e) < 0 ? -1 : 1;
}

/* One try at linear on d (mutex held): 1 if the fused path did it all,
 * 0 if the unfused path ran (relu still to apply), -1 with *e. */
static int linear_once(pygpu_blas_dev *d, int device, int dtype, int tf32,
                       int kind, const pygpu_gemm_plan *p, void *out,
                       const pygpu_mat *x, const pygpu_mat *w,
                       const void *bias, int relu, cudaStream_t stream,
                       pygpu_blas_err *e)
{
    cudaError_t err;
    int done = 0;

    /* cuBLASLt's layouts take 64-bit sizes but, as documented, only
     * int32 values are supported; bigger problems take the fallback
     * and its 64-bit entry points.  Like torch, a weight with a single
     * output or input feature (m' or k' of 1) takes the fallback too:
     * cuBLASLt has had bugs with such degenerate shapes, and these
     * matrix-vector products gain nothing from the fusion. */
    if (kind == PYGPU_GEMM_CALL && pygpu_gemm_plan_fits_int(p) &&
        p->m > 1 && p->k > 1 &&
        (bias == NULL ||
         pygpu_ptr_alignment(bias) >= LT_MIN_BIAS_ALIGN)) {
        done = lt_run(d, device, dtype, tf32, p, out, bias, relu, stream, e);
    }
    if (done == 0) {
        /* The unfused path, as torch's addmm: out starts as the bias
         * and the product accumulates onto it (beta 1), so the sum is
         * rounded once, as in the fused epilogue. */
        int ok = 0;
        if (bias != NULL) {
            err = pygpu_cuda_bias_act(dtype, out, bias, x->rows, w->rows,
                                      PYGPU_BIAS_FILL, stream);
            ok = pygpu_blas_cuda_check(err, "bias_act", __FILE__,
                                       __LINE__, e);
        }
        if (ok == 0) {
            pygpu_blas_gemm(d, dtype, tf32, kind, p, out, bias != NULL,
                            stream, e);
        }
    }
    return done < 0 || e->kind != PYGPU_BLAS_ERR_NONE ? -1 : done;
}

int pygpu_cuda_linear(int dtype, int device, void *out, const pygpu_mat *x,
                      const pygpu_mat *w, const void *bias, int relu,
                      int allow_tf32)
{
    pygpu_blas_err e = {PYGPU_BLAS_ERR_NONE, 0, NULL, NULL, 0};
    pygpu_mat wt = pygpu_mat_transpose(w);
    cudaDataType_t type, scale;
    cublasComputeType_t compute;
    pygpu_gemm_plan p;
    pygpu_blas_dev *d;
    cudaStream_t stream;
    int tf32, kind, prev, rc, done = 0, attempts = 0;

    tf32 = dtype == PYGPU_FLOAT32 && allow_tf32;
    if (pygpu_blas_types(dtype, tf32, &type, &compute, &scale) < 0) {
        return pygpu_blas_raise_dtype("addmm_cuda", dtype);
    }
    kind = pygpu_gemm_plan_make(x, &wt, 1, &p);
    if (kind < 0) {
        return pygpu_blas_raise_layout("linear", kind, x, &wt);
    }
    if (kind == PYGPU_GEMM_NOOP) {
        return 0;
    }
    prev = pygpu_cuda_device_guard(device);
    if (prev < 0) {
        return -1;
    }
    stream = (cudaStream_t)pygpu_cuda_current_stream(device);
    do { /* twice at most, see pygpu_blas_oom_retry: the bias refilled */
        done = 0;
        d = pygpu_blas_acquire(device, stream, &e);
        if (d != NULL) {
            done = linear_once(d, device, dtype, tf32, kind, &p, out, x, w,
                               bias, relu, stream, &e);
        }
        rc = pygpu_blas_release(d, stream, &e);
    } while (rc < 0 && pygpu_blas_oom_retry(device, &e, &attempts));
    rc = rc < 0 ? pygpu_blas_raise(&e) : 0;
    if (rc == 0 && done == 0 && relu) {
        PYGPU_CUDA_LAUNCH(rc, device, "relu",
                          pygpu_cuda_relu_contig(dtype, out, out,
                                                 x->rows * w->rows, stream));
    }
    pygpu_cuda_device_restore(device, prev);
    return rc;
}
