/* large_ld_timing.c - a leading dim past INT_MAX (the _64 entry points for
 * real), and the host cost per call of the cached cuBLASLt path. */
#include "blas_selftest.h"

/* A leading dim past INT_MAX, so the plan takes the _64 entry points for
 * real: float16 x of 2 rows whose row stride is 2^31 + 64 elements
 * (about 4 GiB), when the device has room. */
void test_large_ld(void)
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
 * (small float16 linear with bias): the thin path should not cost more
 * than the plain gemm. */
void time_thin_path(void)
{
    const int64_t rows = 64, in_f = 256, out_f = 256, iters = 2000;
    pygpu_mat x = {NULL, 64, 256, 256, 1, 0}, w = {NULL, 256, 256, 256, 1, 0};
    pygpu_mat wt;
    pygpu_gemm_plan p;
    pygpu_lt_plan plan;
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
    lt_build(&plan, F16, 0, &p, dc, db);
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
    printf("timing (float16 64x256 @ 256x256^T): cuBLASLt with bias %.2f us"
           "/call, cublasGemmEx alone %.2f us/call\n", t_lt, t_gemm);
done:
    lt_free(&plan);
    CUDA_OK(cudaFree(dx));
    CUDA_OK(cudaFree(dw));
    CUDA_OK(cudaFree(db));
    CUDA_OK(cudaFree(dc));
}
