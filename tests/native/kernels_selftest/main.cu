/* main.cu - the kernel self-test's run: the launchers' refusal of
 * unknown codes, every area of selftest.h in turn, then the relu_contig
 * benchmark; prints "N passed, M failed" and exits 1 when a case failed. */
#include "selftest.h"

#include <algorithm>

/* Unknown codes are refused without launching anything. */
static void test_invalid_codes(void)
{
    Case c("invalid codes refused");
    pygpu_geom g;
    memset(&g, 0, sizeof g);
    g.ndim = 1;
    g.shape[0] = 4;
    pygpu_scalar_value s = {1.0, 1};
    pygpu_philox_state st = {0, 0};
    const cudaError_t got[] = {
        pygpu_cuda_binary(PYGPU_NBINOPS, PYGPU_FLOAT32, nullptr, nullptr,
                          nullptr, &g, g_stream),
        pygpu_cuda_binary(PYGPU_ADD, PYGPU_NDTYPES, nullptr, nullptr, nullptr,
                          &g, g_stream),
        pygpu_cuda_binary_scalar(-1, PYGPU_FLOAT32, nullptr, nullptr, s, 0,
                                 &g, g_stream),
        pygpu_cuda_unary(PYGPU_NUNOPS, PYGPU_FLOAT32, nullptr, nullptr, &g,
                         g_stream),
        pygpu_cuda_copy(PYGPU_FLOAT32, nullptr, PYGPU_NDTYPES, nullptr, &g,
                        g_stream),
        pygpu_cuda_fill(-1, nullptr, s, 4, g_stream),
        pygpu_cuda_reduce(PYGPU_NREDOPS, PYGPU_FLOAT32, 0, nullptr, nullptr,
                          nullptr, 1, 4, 1, nullptr, g_stream),
        pygpu_cuda_random(PYGPU_INT64, nullptr, 4, 0, st, g_stream),
        pygpu_cuda_relu_contig(9, nullptr, nullptr, 4, g_stream),
        pygpu_cuda_bias_act(9, nullptr, nullptr, 1, 4, 0, g_stream),
        pygpu_cuda_gather(3, nullptr, nullptr, nullptr, 8, &g, 1, 4, 0,
                          nullptr, g_stream),
        pygpu_cuda_gather(4, nullptr, nullptr, nullptr, 2, &g, 1, 4, 0,
                          nullptr, g_stream),
    };
    for (size_t k = 0; k < sizeof got / sizeof got[0]; k++) {
        if (got[k] != cudaErrorInvalidValue) {
            c.fail("call %zu returned %s", k, cudaGetErrorName(got[k]));
        }
    }
    if (pygpu_cuda_reduce_workspace(PYGPU_NREDOPS, PYGPU_FLOAT32, 1, 1 << 28,
                                    1) != 0) {
        c.fail("workspace for an unknown op is not 0");
    }
    c.expect_success(cudaGetLastError(), "after refusals");
    report(c);
}

// ------------------------------------------------------------- timing

/* Median milliseconds of `runs` timed calls after a warm-up. */
template <typename F> static float median_ms(F fn, int runs = 20)
{
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int r = 0; r < 3; r++) {
        CHECK(fn());
    }
    std::vector<float> ms(runs);
    for (int r = 0; r < runs; r++) {
        CHECK(cudaEventRecord(start, g_stream));
        CHECK(fn());
        CHECK(cudaEventRecord(stop, g_stream));
        CHECK(cudaEventSynchronize(stop));
        CHECK(cudaEventElapsedTime(&ms[r], start, stop));
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    std::sort(ms.begin(), ms.end());
    return ms[runs / 2];
}

static void bench(void)
{
    const int64_t n = (int64_t)1 << 28;
    const size_t bytes = (size_t)n * sizeof(float);
    float *in, *out;
    snprintf(g_case, sizeof g_case, "benchmark setup");
    CHECK(cudaMalloc((void **)&in, bytes));
    CHECK(cudaMalloc((void **)&out, bytes));
    CHECK(pygpu_cuda_random(PYGPU_FLOAT32, in, n, 1, {7, 0}, g_stream));

    /* Validate the big run before timing it. */
    Case c("relu_contig float32 n=2^28 before timing");
    CHECK(pygpu_cuda_relu_contig(PYGPU_FLOAT32, out, in, n, g_stream));
    std::vector<float> hin(n), hout(n);
    to_host(hin.data(), in, bytes);
    to_host(hout.data(), out, bytes);
    for (int64_t i = 0; c.ok && i < n; i++) {
        if (!same(hout[i], ref_relu(hin[i]))) {
            c.fail("element %lld: got %.9g from %.9g", (long long)i, hout[i],
                   hin[i]);
        }
    }
    report(c);

    snprintf(g_case, sizeof g_case, "benchmark");
    float relu_ms = median_ms([&] {
        return pygpu_cuda_relu_contig(PYGPU_FLOAT32, out, in, n, g_stream);
    });
    float inplace_ms = median_ms([&] {
        return pygpu_cuda_relu_contig(PYGPU_FLOAT32, out, out, n, g_stream);
    });
    float copy_ms = median_ms([&] {
        return cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice,
                               g_stream);
    });
    size_t wsize = pygpu_cuda_reduce_workspace(PYGPU_SUM, PYGPU_FLOAT32, 1, n, 1);
    void *ws = nullptr;
    if (wsize > 0) {
        CHECK(cudaMalloc(&ws, wsize));
    }
    float sum_ms = median_ms([&] {
        return pygpu_cuda_reduce(PYGPU_SUM, PYGPU_FLOAT32, 0, out, nullptr,
                                 in, 1, n, 1, ws, g_stream);
    });

    /* Bytes read plus bytes written, in GB/s. */
    double moved = 2.0 * (double)bytes;
    double copy_gbs = moved / copy_ms / 1e6;
    double relu_gbs = moved / relu_ms / 1e6;
    double inplace_gbs = moved / inplace_ms / 1e6;
    printf("cudaMemcpy D2D     2^28 float32: %8.1f GB/s (%.3f ms)\n", copy_gbs,
           copy_ms);
    printf("relu_contig        2^28 float32: %8.1f GB/s (%.3f ms), %.1f%% of "
           "memcpy\n",
           relu_gbs, relu_ms, 100 * relu_gbs / copy_gbs);
    printf("relu_contig in place 2^28 float32: %6.1f GB/s (%.3f ms), %.1f%% "
           "of memcpy\n",
           inplace_gbs, inplace_ms, 100 * inplace_gbs / copy_gbs);
    printf("reduce sum         2^28 float32: %8.1f GB/s read (%.3f ms)\n",
           (double)bytes / sum_ms / 1e6, sum_ms);
    CHECK(cudaStreamSynchronize(g_stream));
    CHECK(cudaFree(ws));
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
}

int main(void)
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    /* Non-blocking: it orders with no other stream, the legacy default
     * stream included, so a launcher that strayed from the stream it is
     * given would show, and every copy of harness.cu goes through it
     * explicitly. */
    CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));

    test_invalid_codes();
    test_binary();
    test_binary_scalar();
    test_unary();
    test_copy();
    test_copy_to_int64();
    test_int64_wrap();
    test_fill();
    test_relu_contig();
    test_bias_act();
    test_reduce();
    test_reduce_int64_wrap();
    test_random();
    test_bfloat16();
    test_gather();
    test_sample();

    bench();

    CHECK(cudaStreamDestroy(g_stream));
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
