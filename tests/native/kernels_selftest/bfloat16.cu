/* bfloat16.cu - the shared bfloat16 rule (kernels/bfloat16.h) run on the
 * device against CUDA's own __float2bfloat16_rn / __bfloat162float and
 * against the same rule on the host, and the copy launcher's float32 ->
 * bfloat16 output against the rule (selftest.h). */
#include "selftest.h"

#include <cuda_bf16.h>

#include "kernels/bfloat16.h"

__global__ static void bf16_both(const float *in, uint16_t *rule,
                                 uint16_t *cuda, float *widened, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        rule[i] = pygpu_float_to_bf16(in[i]);
        cuda[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
        /* 1 where the bits differ (a difference would be NaN at +-inf) */
        widened[i] = __float_as_uint(pygpu_bf16_to_float((uint16_t)i)) !=
                     __float_as_uint(__bfloat162float(
                         __ushort_as_bfloat16((uint16_t)i)));
    }
}

static bool is_nan_bits(uint16_t h)
{
    return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
}

void test_bfloat16(void)
{
    Case c("bfloat16 rule vs __float2bfloat16_rn and the host");
    /* every 16-bit top half with low halves around the rounding tie */
    const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
    const int64_t n = 65536 * 6;
    std::vector<float> in((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = ((uint32_t)(i / 6) << 16) | lows[i % 6];
        memcpy(&in[(size_t)i], &bits, 4);
    }
    float *d_in = nullptr, *d_wide = nullptr;
    uint16_t *d_rule = nullptr, *d_cuda = nullptr;
    c.expect_success(cudaMalloc(&d_in, n * sizeof(float)), "cudaMalloc");
    c.expect_success(cudaMalloc(&d_wide, n * sizeof(float)), "cudaMalloc");
    c.expect_success(cudaMalloc(&d_rule, n * sizeof(uint16_t)), "cudaMalloc");
    c.expect_success(cudaMalloc(&d_cuda, n * sizeof(uint16_t)), "cudaMalloc");
    std::vector<uint16_t> rule((size_t)n), cuda((size_t)n);
    std::vector<float> wide((size_t)n);
    if (c.ok) {
        c.expect_success(cudaMemcpy(d_in, in.data(), n * sizeof(float),
                                    cudaMemcpyHostToDevice), "upload");
        bf16_both<<<256, 256>>>(d_in, d_rule, d_cuda, d_wide, n);
        c.expect_success(cudaGetLastError(), "bf16_both");
        c.expect_success(cudaMemcpy(rule.data(), d_rule, n * 2,
                                    cudaMemcpyDeviceToHost), "download");
        c.expect_success(cudaMemcpy(cuda.data(), d_cuda, n * 2,
                                    cudaMemcpyDeviceToHost), "download");
        c.expect_success(cudaMemcpy(wide.data(), d_wide, n * 4,
                                    cudaMemcpyDeviceToHost), "download");
    }
    for (int64_t i = 0; c.ok && i < n; i++) {
        const float x = in[(size_t)i];
        const uint16_t host = pygpu_float_to_bf16(x);
        const uint16_t r = rule[(size_t)i], g = cuda[(size_t)i];
        const bool nan = isnan(x);
        /* NaN: both NaN (CUDA may make it canonical; the rule keeps the
         * sign and top payload bits). */
        if (r != host || (nan ? !is_nan_bits(r) || !is_nan_bits(g)
                              : r != g)) {
            c.fail("x=%a: rule 0x%04x on the device, 0x%04x on the host, "
                   "cuda 0x%04x", (double)x, r, host, g);
        }
        if (i < 65536 && !is_nan_bits((uint16_t)i) && wide[(size_t)i] != 0) {
            c.fail("widening 0x%04x differs from __bfloat162float",
                   (unsigned)i);
        }
    }
    /* The copy launcher: float32 -> bfloat16 by the rule. */
    pygpu_geom g = {};
    g.ndim = 1;
    g.shape[0] = n;
    g.stride[0][0] = g.stride[1][0] = 1;
    if (c.ok) {
        c.expect_success(pygpu_cuda_copy(PYGPU_BFLOAT16, d_cuda,
                                         PYGPU_FLOAT32, d_in, &g, g_stream),
                         "pygpu_cuda_copy");
        c.expect_success(cudaStreamSynchronize(g_stream), "synchronize");
        c.expect_success(cudaMemcpy(cuda.data(), d_cuda, n * 2,
                                    cudaMemcpyDeviceToHost), "download");
    }
    for (int64_t i = 0; c.ok && i < n; i++) {
        if (cuda[(size_t)i] != rule[(size_t)i]) {
            c.fail("copy of x=%a gave 0x%04x, the rule 0x%04x",
                   (double)in[(size_t)i], cuda[(size_t)i], rule[(size_t)i]);
        }
    }
    cudaFree(d_in);
    cudaFree(d_wide);
    cudaFree(d_rule);
    cudaFree(d_cuda);
    report(c);
}
