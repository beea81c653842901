/* im2col.cu - the IM2COL kind on the GPU: an image batch to its columns
 * (torch's unfold) and the columns summed back into an image (fold);
 * shapes and layout in kernels.h (pygpu_im2col_args).
 *
 * One thread per output element, grid-strided; the index arithmetic
 * divides by multiply and shift (fastdiv.h) when every index of the
 * launch is below 2^31, by 64-bit division else.  im2col: a column element
 * reads its image element or writes 0.  col2im: an image element gathers
 * the column elements that hold it, in (i, j) order, summed in the
 * compute type (float for float16 and bfloat16) and rounded once: no
 * atomics, so the same bits on every call, and the CPU loop's
 * (cpu/cpu_im2col.c) order.
 */
#include "common.cuh"
#include "fastdiv.h"

// -------------------------------------------------------------- kernels

/* Division by a size of the launch: plain 64-bit, or (every index of the
 * launch below 2^31) multiply and shift (fastdiv.h). */
struct div_wide {
    int64_t d;
    explicit div_wide(int64_t v) : d(v) {}
    __device__ __forceinline__ int64_t operator()(int64_t n) const
    {
        return n / d;
    }
};

struct div_narrow {
    pygpu_fastdiv f;
    /* a size of 0 (an empty image side) divides nothing: any divisor */
    explicit div_narrow(int64_t v)
        : f(pygpu_fastdiv_make(v < 1 ? 1u : (uint32_t)v)) {}
    __device__ __forceinline__ int64_t operator()(int64_t n) const
    {
        return (int64_t)pygpu_fastdiv_div(f, (uint32_t)n);
    }
};

/* The divisors the two kernels use. */
template <typename D> struct im2col_divs {
    D L, kw, kh, out_w; /* im2col */
    D hw, width, sh, sw; /* col2im */
};

template <typename T, typename D>
__global__ void im2col_kernel(T *cols, const T *img, pygpu_im2col_args a,
                              im2col_divs<D> v, int64_t n)
{
    const int64_t L = a.out_h * a.out_w;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += step) {
        const int64_t r = v.L(e), l = e - r * L;
        const int64_t rk = v.kw(r), j = r - rk * a.kw;
        const int64_t plane = v.kh(rk), i = rk - plane * a.kh;
        const int64_t oh = v.out_w(l), ow = l - oh * a.out_w;
        const int64_t ih = oh * a.sh - a.ph + i * a.dh;
        const int64_t iw = ow * a.sw - a.pw + j * a.dw;
        T val = convert<T>(0.0f);
        if (ih >= 0 && ih < a.height && iw >= 0 && iw < a.width) {
            val = img[(plane * a.height + ih) * a.width + iw];
        }
        cols[e] = val;
    }
}

template <typename T, typename D>
__global__ void col2im_kernel(T *img, const T *cols, pygpu_im2col_args a,
                              im2col_divs<D> v, int64_t n)
{
    using A = acc_t<T>;
    const int64_t L = a.out_h * a.out_w, hw = a.height * a.width;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += step) {
        const int64_t plane = v.hw(e), at = e - plane * hw;
        const int64_t h = v.width(at), w = at - h * a.width;
        const T *base = cols + plane * a.kh * a.kw * L;
        A sum = A(0);
        for (int64_t i = 0; i < a.kh; i++) {
            const int64_t t = h + a.ph - i * a.dh;
            if (t < 0) {
                continue;
            }
            const int64_t th = v.sh(t);
            if (th * a.sh != t || th >= a.out_h) {
                continue;
            }
            for (int64_t j = 0; j < a.kw; j++) {
                const int64_t u = w + a.pw - j * a.dw;
                if (u < 0) {
                    continue;
                }
                const int64_t uw = v.sw(u);
                if (uw * a.sw != u || uw >= a.out_w) {
                    continue;
                }
                sum += convert<A>(base[(i * a.kw + j) * L + th * a.out_w + uw]);
            }
        }
        img[e] = convert<T>(sum);
    }
}

template <typename T, typename D>
static void im2col_kernels(int col2im, void *img, void *cols,
                           const pygpu_im2col_args *a, int64_t n,
                           cudaStream_t stream)
{
    im2col_divs<D> v = {D(a->out_h * a->out_w), D(a->kw), D(a->kh),
                        D(a->out_w), D(a->height * a->width), D(a->width),
                        D(a->sh), D(a->sw)};
    if (col2im) {
        constexpr auto kernel = col2im_kernel<T, D>;
        kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
            (T *)img, (const T *)cols, *a, v, n);
    } else {
        constexpr auto kernel = im2col_kernel<T, D>;
        kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
            (T *)cols, (const T *)img, *a, v, n);
    }
}

// ------------------------------------------------------------ launchers

/* flag 0: cols = im2col(img); 1: img = col2im(cols). */
static cudaError_t im2col_launch(int col2im, int dtype, void *img,
                                 void *cols, const pygpu_im2col_args *a,
                                 cudaStream_t stream)
{
    if (a->kh < 1 || a->kw < 1 || a->sh < 1 || a->sw < 1 || a->out_h < 1 ||
        a->out_w < 1) {
        return cudaErrorInvalidValue;
    }
    const int64_t planes = a->batch * a->channels;
    const int64_t n = col2im ? planes * a->height * a->width
                             : planes * a->kh * a->kw * a->out_h * a->out_w;
    if (n == 0) {
        return cudaSuccess;
    }
    /* Every index below 2^31 (each side's elements, and the padded
     * positions a column reaches, bounded by them plus the padding and
     * the kernel's reach): divide by multiply and shift. */
    const int64_t limit = (int64_t)1 << 31;
    const int64_t cols_n = planes * a->kh * a->kw * a->out_h * a->out_w;
    const int64_t img_n = planes * a->height * a->width;
    const int narrow = cols_n < limit && img_n < limit &&
                       a->height + a->ph + a->kh * a->dh < limit &&
                       a->width + a->pw + a->kw * a->dw < limit;
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* float rows only */
        } else {
            if (narrow) {
                im2col_kernels<T, div_narrow>(col2im, img, cols, a, n,
                                              stream);
            } else {
                im2col_kernels<T, div_wide>(col2im, img, cols, a, n, stream);
            }
            return cudaGetLastError();
        }
    });
}

extern "C" cudaError_t pygpu_cuda_im2col(int dtype, void *cols,
                                         const void *img,
                                         const pygpu_im2col_args *a,
                                         cudaStream_t stream)
{
    return im2col_launch(0, dtype, (void *)img, cols, a, stream);
}

extern "C" cudaError_t pygpu_cuda_col2im(int dtype, void *img,
                                         const void *cols,
                                         const pygpu_im2col_args *a,
                                         cudaStream_t stream)
{
    return im2col_launch(1, dtype, img, (void *)cols, a, stream);
}
