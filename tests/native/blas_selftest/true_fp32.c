/* true_fp32.c - float32 without TF32 is true FP32, on cublasGemmEx and
 * on cuBLASLt; with TF32 allowed, which of the two was seen. */
#include "blas_selftest.h"

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
void test_true_fp32(int use_lt, int tf32)
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
        pygpu_lt_plan plan;
        lt_build(&plan, F32, tf32, &p, dc, NULL);
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
