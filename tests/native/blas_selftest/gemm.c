/* gemm.c - matmul and linear over random layouts, sizes and batches
 * against the host product, a batch count past 65535, and the workspace
 * handed between streams. */
#include "blas_selftest.h"

/* C = A @ B, as pygpu_cuda_matmul runs it. */
void test_matmul(int dtype, int tf32, int64_t m, int64_t n, int64_t k,
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

/* out = x @ w^T (+ bias) (relu), as pygpu_cuda_linear runs it (the relu
 * kernel's rule applied on the host after either path); the product is
 * run twice, the second time with the bias at another address through the
 * same descriptor, as a cache hit does. */
void test_linear(int dtype, int tf32, int64_t rows, int64_t out_f,
                 int64_t in_f, int with_bias, int relu)
{
    operand ox, ow;
    pygpu_mat wt;
    pygpu_gemm_plan p;
    pygpu_lt_plan plan;
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
    if (pygpu_lt_eligible(kind, &p, with_bias ? bias_d[0] : NULL)) {
        lt_build(&plan, dtype, tf32, &p, out, bias_d[0]);
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
                if (relu && g < 0.0) {
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

/* A batch count past 65535 (the CUDA grid's limit in y and z, which a
 * kernel that maps the batch onto one of them would hit): a strided
 * batched gemm of 70000 2 x 2 @ 2 x 2 products, every element of every
 * batch item checked exactly (small integers: every sum is exact in
 * float16 too).  bcast 1 or 2 shares A or B across the batch (batch
 * stride 0). */
void test_big_batch(int dtype, int bcast)
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
    a = dense_mat(upload(dtype, av, na, 0, &abase), m, k);
    a.batch_stride = bcast == 1 ? 0 : m * k;
    b = dense_mat(upload(dtype, bv, nb, 0, &bbase), k, n);
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

/* The workspace handed between streams as blas_bind does it: the default
 * stream's use is marked by an event, the new stream waits for it, the
 * handle is rebound and given the workspace again. */
void test_stream_switch(void)
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
