/* linear_paths.c - NaN and -0.0 through both linear paths (the cuBLASLt
 * bias epilogue and the fallback), what cuBLASLt's own relu epilogue does
 * (observed only: the extension's relu is its kernel), and the two paths
 * against each other within a float64 reference's tolerance. */
#include "blas_selftest.h"

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
 * pass).  RELU_BIAS: cuBLASLt documents its relu as max(x, 0), which
 * gives 0 for NaN where torch's relu keeps NaN, so the extension never
 * uses it (linear_relu is the BIAS epilogue, then the relu kernel); what
 * cuBLASLt gives is printed as an observation, never checked: for the NaN
 * row, for [2,0] and for the zeros it makes of negative values.  The sign
 * of [2,0] after BIAS is printed the same way. */
void test_linear_nan(void)
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
    x = dense_mat(upload(F32, xv, R * K, 0, &xbase), R,
                   K);
    w = dense_mat(upload(F32, wv, N * K, 0, &wbase), N,
                   K);
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
        took = linear_exec(F32, 0, kind, &p, out, bias, bv, R, N, &st);
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

    /* cuBLASLt's RELU_BIAS, which the extension does not use: observations
     * only. */
    {
        pygpu_lt_plan plan;
        int took = 0;

        out = output_alloc(F32, R * N, 0, &obase);
        lt_build_relu_bias(&plan, F32, 0, &p, out, bias_al);
        if (plan.use_lt) {
            took = lt_exec(&plan, &p, out, bias_al, 0);
        }
        if (!took) {
            printf("observation skipped: cuBLASLt did not run float32 "
                   "RELU_BIAS %dx%d @ %dx%d^T (%s)\n", R, K, N, K,
                   plan.use_lt ? "refused" : "no algorithm");
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
            printf("observation (not checked): cuBLASLt RELU_BIAS float32 "
                   "(not used: linear_relu runs the relu kernel), NaN input "
                   "row: %d of %d outputs NaN, %d +0.0, %d -0.0, %d other "
                   "(torch's relu keeps NaN)\n",
                   nan_n, N, pz, nz, other);
            printf("observation (not checked): cuBLASLt RELU_BIAS float32, "
                   "pre-activation -0.0 at [2,0] gives %s\n",
                   zero_name(got[2 * N + 0]));
            printf("observation (not checked): cuBLASLt RELU_BIAS float32, "
                   "negative pre-activations: %d give +0.0, %d give -0.0, "
                   "%d other\n", neg_pz, neg_nz, neg_other);
            free(got);
        }
        lt_free(&plan);
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
 * exact in FP32 in any order or split; float32 takes a full-precision
 * random bias, float16 a half one.  Each result is first checked against
 * the float64 reference (close_enough).  The two paths need not agree to
 * the bit: a cuBLASLt kernel may round the product to the output dtype
 * before it adds the bias, where the fallback adds the bias in the FP32
 * accumulator and rounds once (on an H100 a float16 output that cancels
 * to -0.003 came out 128 ulp apart), and either may round partial sums of
 * a split product.  So they must agree within what a float64 reference
 * check allows each: the output's rounding of the terms' size, S =
 * sum_k |x_ik w_jk| + |bias_j|, twice (the product and the biased sum),
 * plus the FP32 accumulation growing as sqrt(k):
 *     |fused - fallback| <= 2 (2 u_out S + u_acc sqrt(k) S)
 * with u_out the output dtype's unit roundoff (2^-11 for float16, 2^-24
 * for float32) and u_acc = 2^-24.  A wrong term, a missing bias or a
 * transposed operand is off by far more (a term or the bias is up to 1,
 * S/2^9 here is about 0.03 for float16).  The largest difference is
 * printed as a share of that tolerance and in ulps. */
void test_fused_vs_fallback(int dtype)
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
    const double u_out = dtype == F16 ? 0x1p-11 : 0x1p-24;
    const double u_acc = 0x1p-24;
    double worst = 0.0, worst_tol = 0.0;

    for (i = 0; i < rows * in_f; i++) {
        xv[i] = (double)((int64_t)(rng() % 129) - 64) / 64.0;
    }
    for (i = 0; i < out_f * in_f; i++) {
        wv[i] = (double)((int64_t)(rng() % 129) - 64) / 64.0;
    }
    for (j = 0; j < out_f; j++) {
        bv[j] = random_value(dtype);
    }
    x = dense_mat(upload(dtype, xv, rows * in_f, 0, &xbase), rows,
                   in_f);
    w = dense_mat(upload(dtype, wv, out_f * in_f, 0, &wbase), out_f,
                   in_f);
    bias[0] = upload(dtype, bv, out_f, 0, &bbase_al);
    bias[1] = upload(dtype, bv, out_f, 4, &bbase_un);
    wt = pygpu_mat_transpose(&w);
    kind = pygpu_gemm_plan_make(&x, &wt, 1, &p);

    for (path = 0; ok && path < 2; path++) {
        cublasStatus_t st;
        int took;

        out[path] = output_alloc(dtype, rows * out_f, 0, &obase[path]);
        took = linear_exec(dtype, 0, kind, &p, out[path], bias[path], bv, rows,
                           out_f, &st);
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
                {
                    const double tol =
                        2.0 * (2.0 * u_out * sumabs +
                               u_acc * sqrt((double)in_f) * sumabs);
                    const double diff = absd(got[0][e] - got[1][e]);
                    if (diff > tol && ok) {
                        ok = 0;
                        snprintf(detail, sizeof(detail),
                                 "at [%lld,%lld] fused %.9g fallback %.9g "
                                 "differ by %.3g > %.3g (terms' size %.3g)",
                                 (long long)i, (long long)j, got[0][e],
                                 got[1][e], diff, tol, sumabs);
                    }
                    if (diff / tol > worst) {
                        worst = diff / tol;
                        worst_tol = tol;
                        at = e;
                    }
                }
                d = ordered_bits(dtype, raw[0], e) -
                    ordered_bits(dtype, raw[1], e);
                d = d < 0 ? -d : d;
                ndiff += d != 0;
                max_ulp = d > max_ulp ? d : max_ulp;
            }
        }
        printf("fused vs fallback linear+bias %s %lldx%lld (k=%lld): %s; "
               "%lld of %lld elements differ, by at most %lld ulp",
               dtype_name[dtype], (long long)rows, (long long)out_f,
               (long long)in_f,
               ndiff == 0 ? "bit-identical" : "not bit-identical",
               (long long)ndiff, (long long)(rows * out_f),
               (long long)max_ulp);
        if (at >= 0 && worst > 0) {
            printf("; largest difference %.2f of its tolerance %.3g at "
                   "[%lld,%lld]: fused %.9g fallback %.9g",
                   worst, worst_tol, (long long)(at / out_f),
                   (long long)(at % out_f), got[0][at], got[1][at]);
        }
        printf("\n");
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
