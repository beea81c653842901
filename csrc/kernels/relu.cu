/* relu.cu - contiguous relu, the bandwidth kernel, and the bias + relu
 * epilogue of linear.
 *
 * relu_contig moves 16 bytes per load and store (4 floats, 8 halves, 2
 * doubles or 2 int64).  Those need 16-byte aligned addresses, so the first
 * `head` elements (until `in` is aligned) and the last few (past the final
 * whole vector) are done one by one.  When out and in are misaligned by
 * different amounts no vector loop can align both, and a plain scalar kernel
 * runs instead.  out may equal in: each element is read and written by one
 * thread, read first.
 */
#include "common.cuh"

/* 16 bytes of T, aligned so that a copy is one 128-bit memory access. */
template <typename T> struct alignas(16) Pack {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

template <typename T> __device__ __forceinline__ T relu_elem(T x)
{
    return convert<T>(relu(convert<acc_t<T>>(x)));
}

// -------------------------------------------------------------- kernels

template <typename T>
__global__ void relu_scalar_kernel(T *out, const T *in, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        out[i] = relu_elem(in[i]);
    }
}

/* Vectors per thread per trip: all loads are issued before the stores, so
 * each thread keeps UNROLL * 16 bytes in flight.  (The compiler cannot do
 * this reordering itself: out may alias in.) */
constexpr int UNROLL = 4;

/* Needs in + head and out + head 16-byte aligned. */
template <typename T>
__global__ void relu_vec_kernel(T *out, const T *in, int64_t n, int64_t head)
{
    constexpr int N = Pack<T>::N;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t nvec = (n - head) / N;
    const int64_t tail = head + nvec * N;

    /* Head and tail have fewer than N elements each: the first threads. */
    if (t < head) {
        out[t] = relu_elem(in[t]);
    }
    if (t < n - tail) {
        out[tail + t] = relu_elem(in[tail + t]);
    }

    const Pack<T> *vin = reinterpret_cast<const Pack<T> *>(in + head);
    Pack<T> *vout = reinterpret_cast<Pack<T> *>(out + head);
    for (int64_t base = t; base < nvec; base += UNROLL * stride) {
        Pack<T> p[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            if (base + u * stride < nvec) {
                p[u] = vin[base + u * stride];
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            if (base + u * stride < nvec) {
#pragma unroll
                for (int k = 0; k < N; k++) {
                    p[u].v[k] = relu_elem(p[u].v[k]);
                }
                vout[base + u * stride] = p[u];
            }
        }
    }
}

/* Over rows x cols: out[r, c] = out[r, c] + bias[c] (mode 0), relu of it
 * (mode 1), or bias[c] alone (mode 2, PYGPU_BIAS_FILL).  A thread's column
 * advances by stride % cols per trip, so the modulo is taken only twice. */
template <typename T>
__global__ void bias_act_kernel(T *out, const T *bias, int64_t rows,
                                int64_t cols, int mode)
{
    using A = acc_t<T>;
    const int64_t n = rows * cols;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t step = stride % cols;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t c = i % cols;
    for (; i < n; i += stride) {
        if (mode == PYGPU_BIAS_FILL) {
            out[i] = bias[c];
        } else {
            A x = convert<A>(out[i]) + convert<A>(bias[c]);
            out[i] = convert<T>(mode ? relu(x) : x);
        }
        c += step;
        if (c >= cols) {
            c -= cols;
        }
    }
}

// ------------------------------------------------------------ launchers

template <typename T>
static cudaError_t relu_contig(T *out, const T *in, int64_t n,
                               cudaStream_t stream)
{
    constexpr uintptr_t ALIGN = sizeof(Pack<T>);
    const uintptr_t mis_in = (uintptr_t)in % ALIGN;
    const uintptr_t mis_out = (uintptr_t)out % ALIGN;
    if (mis_in != mis_out || mis_in % sizeof(T) != 0) {
        constexpr auto kernel = relu_scalar_kernel<T>;
        kernel<<<grid_for<kernel>(n), BLOCK, 0, stream>>>(out, in, n);
        return cudaGetLastError();
    }
    int64_t head = (int64_t)((ALIGN - mis_in) % ALIGN / sizeof(T));
    if (head > n) {
        head = n;
    }
    const int64_t nvec = (n - head) / Pack<T>::N;
    constexpr auto kernel = relu_vec_kernel<T>;
    kernel<<<grid_for<kernel>(nvec), BLOCK, 0, stream>>>(out, in, n, head);
    return cudaGetLastError();
}

extern "C" cudaError_t pygpu_cuda_relu_contig(int dtype, void *out,
                                              const void *in, int64_t n,
                                              cudaStream_t stream)
{
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if (n <= 0) {
            return cudaSuccess;
        }
        return relu_contig((T *)out, (const T *)in, n, stream);
    });
}

extern "C" cudaError_t pygpu_cuda_bias_act(int dtype, void *out,
                                           const void *bias, int64_t rows,
                                           int64_t cols, int mode,
                                           cudaStream_t stream)
{
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if (rows <= 0 || cols <= 0) {
            return cudaSuccess;
        }
        constexpr auto kernel = bias_act_kernel<T>;
        kernel<<<grid_for<kernel>(rows * cols), BLOCK, 0, stream>>>(
            (T *)out, (const T *)bias, rows, cols, mode);
        return cudaGetLastError();
    });
}
