/* im2col.cu - the IM2COL kind on the GPU: an image batch to its columns
 * (torch's unfold) and the columns summed back into an image (fold);
 * shapes and layout in kernels.h (pygpu_im2col_args).
 *
 * One thread per output element, grid-strided.  im2col: a column element
 * reads its image element or writes 0.  col2im: an image element gathers
 * the column elements that hold it, in (i, j) order, summed in the
 * compute type (float for float16 and bfloat16) and rounded once: no
 * atomics, so the same bits on every call, and the CPU loop's
 * (cpu/cpu_im2col.c) order.
 */
#include "common.cuh"

// -------------------------------------------------------------- kernels

template <typename T>
__global__ void im2col_kernel(T *cols, const T *img, pygpu_im2col_args a,
                              int64_t n)
{
    const int64_t L = a.out_h * a.out_w;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += step) {
        const int64_t l = e % L, r = e / L;
        const int64_t j = r % a.kw, i = r / a.kw % a.kh;
        const int64_t plane = r / (a.kw * a.kh);
        const int64_t ih = l / a.out_w * a.sh - a.ph + i * a.dh;
        const int64_t iw = l % a.out_w * a.sw - a.pw + j * a.dw;
        T v = convert<T>(0.0f);
        if (ih >= 0 && ih < a.height && iw >= 0 && iw < a.width) {
            v = img[(plane * a.height + ih) * a.width + iw];
        }
        cols[e] = v;
    }
}

template <typename T>
__global__ void col2im_kernel(T *img, const T *cols, pygpu_im2col_args a,
                              int64_t n)
{
    using A = acc_t<T>;
    const int64_t L = a.out_h * a.out_w, hw = a.height * a.width;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += step) {
        const int64_t plane = e / hw, h = e % hw / a.width, w = e % a.width;
        const T *base = cols + plane * a.kh * a.kw * L;
        A sum = A(0);
        for (int64_t i = 0; i < a.kh; i++) {
            const int64_t t = h + a.ph - i * a.dh;
            if (t < 0 || t % a.sh != 0 || t / a.sh >= a.out_h) {
                continue;
            }
            for (int64_t j = 0; j < a.kw; j++) {
                const int64_t u = w + a.pw - j * a.dw;
                if (u < 0 || u % a.sw != 0 || u / a.sw >= a.out_w) {
                    continue;
                }
                sum += convert<A>(
                    base[(i * a.kw + j) * L + t / a.sh * a.out_w + u / a.sw]);
            }
        }
        img[e] = convert<T>(sum);
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
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral<T>::value) {
            return cudaErrorInvalidValue; /* float rows only */
        } else {
            if (col2im) {
                constexpr auto kernel = col2im_kernel<T>;
                kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
                    (T *)img, (const T *)cols, *a, n);
            } else {
                constexpr auto kernel = im2col_kernel<T>;
                kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(
                    (T *)cols, (const T *)img, *a, n);
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
