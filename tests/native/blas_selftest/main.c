/* main.c - the cuBLAS / cuBLASLt self-test: setup, every case in a fixed
 * order (they share one random sequence), then the summary.  See
 * blas_selftest.h for what is checked and how to build it. */
#include "blas_selftest.h"

int main(void)
{
    static const int64_t dims[] = {1, 1, 2, 3, 5, 8, 16, 17, 31, 64, 65, 100,
                                   128, 255};
    const int ndims = (int)(sizeof(dims) / sizeof(dims[0]));
    struct cudaDeviceProp prop;
    int dev = 0, major = 0, t, dtype;

    const char *why = NULL;

    /* The call sequences reach cuBLAS through pygpu_cublas, as in the
     * extension. */
    if (pygpu_cublas_load(&why) < 0) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    printf("cuBLAS: %s\n", pygpu_cublas.cublas_path);
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
