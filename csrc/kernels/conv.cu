/* conv.cu - the IM2COL kind's direct convolution (flag 2) on the GPU:
 * out = conv2d(img, weight) + bias without columns, any float dtype,
 * stride, padding, dilation and groups (shapes in kernels.h,
 * pygpu_im2col_args).
 *
 * One thread per output element, grid-strided: it sums its products in
 * the compute type (float for float16 and bfloat16) over the group's
 * channels c, the kernel rows i and columns j in that order, starting
 * from its bias, and rounds once: the CPU loop's order (cpu/cpu_conv.c).
 */
#include "common.cuh"

template <typename T>
__global__ void conv2d_kernel(T *out, const T *img, const T *weight,
                              const T *bias, pygpu_im2col_args a, int64_t n)
{
    using A = acc_t<T>;
    const int64_t cog = a.out_channels / a.groups;
    const int64_t cg = a.channels / a.groups;
    const int64_t K = cg * a.kh * a.kw;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += step) {
        const int64_t ow = e % a.out_w, oh = e / a.out_w % a.out_h;
        const int64_t co = e / (a.out_w * a.out_h) % a.out_channels;
        const int64_t b = e / (a.out_w * a.out_h * a.out_channels);
        const T *x = img + (b * a.channels + co / cog * cg) * a.height *
                               a.width;
        const T *w = weight + co * K;
        A sum = bias != nullptr ? convert<A>(bias[co]) : A(0);
        for (int64_t c = 0; c < cg; c++) {
            for (int64_t i = 0; i < a.kh; i++) {
                const int64_t ih = oh * a.sh - a.ph + i * a.dh;
                if (ih < 0 || ih >= a.height) {
                    continue;
                }
                for (int64_t j = 0; j < a.kw; j++) {
                    const int64_t iw = ow * a.sw - a.pw + j * a.dw;
                    if (iw < 0 || iw >= a.width) {
                        continue;
                    }
                    sum += convert<A>(w[(c * a.kh + i) * a.kw + j]) *
                           convert<A>(x[(c * a.height + ih) * a.width + iw]);
                }
            }
        }
        out[e] = convert<T>(sum);
    }
}

extern "C" cudaError_t pygpu_cuda_conv2d(int dtype, void *out,
                                         const void *img, const void *weight,
                                         const pygpu_im2col_args *a,
                                         cudaStream_t stream)
{
    if (a->kh < 1 || a->kw < 1 || a->sh < 1 || a->sw < 1 || a->out_h < 1 ||
        a->out_w < 1 || a->groups < 1 || a->out_channels % a->groups != 0 ||
        a->channels % a->groups != 0) {
        return cudaErrorInvalidValue;
    }
    const int64_t n = a->batch * a->out_channels * a->out_h * a->out_w;
    if (n == 0) {
        return cudaSuccess;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* float rows only */
        } else {
            constexpr auto kernel = conv2d_kernel<T>;
            kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
                (T *)out, (const T *)img, (const T *)weight,
                (const T *)a->bias, *a, n);
            return cudaGetLastError();
        }
    });
}
