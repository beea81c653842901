/* dtype_switch.cuh - element types chosen at launch: loads and stores
 * through a switch on a dtype code, for the kernels that serve several
 * dtypes with one instantiation (elementwise.cuh's generic functors, the
 * int_any kernels of reduce.cu and scan.cu).  The code is the same for
 * every thread of a launch, so the switch never diverges; each case is the
 * conversion of common.cuh (ld, store_rule, load_as) that a kernel per
 * dtype would have made, so the values are the same.
 */
#ifndef PYGPU_KERNELS_DTYPE_SWITCH_CUH
#define PYGPU_KERNELS_DTYPE_SWITCH_CUH

#include "common.cuh"

/* int_any stands for "bool, uint8 or int32, the dtype a launch-wide
 * value" where a kernel's element type is a template parameter: one
 * kernel for the three (see int_any_ptr below), computed in int64. */
struct int_any {};
template <> struct acc_of<int_any> { using type = int64_t; };

/* Element i of an input of dtype `src` as an operand whose result is
 * stored in dtype `as`, in as's compute type A: converted to as's storage
 * type first (load_as, as a copy would), then loaded as A.  Both codes are
 * launch-wide values and `as`'s compute type must be A (the launcher
 * checks), so one kernel per compute type serves every pair of dtypes. */
template <typename A>
__device__ __forceinline__ A load_in(const void *p, int src, int as,
                                     int64_t i)
{
    if constexpr (std::is_same<A, float>::value) {
        switch (as) {
        case PYGPU_FLOAT16:
            return convert<A>(load_as<__half>(p, src, i));
        case PYGPU_BFLOAT16:
            return convert<A>(load_as<pygpu_bf16_t>(p, src, i));
        default:
            return load_as<float>(p, src, i);
        }
    } else if constexpr (std::is_same<A, double>::value) {
        return load_as<double>(p, src, i);
    } else {
        switch (as) {
        case PYGPU_BOOL:
            return convert<A>(load_as<bool>(p, src, i));
        case PYGPU_UINT8:
            return convert<A>(load_as<uint8_t>(p, src, i));
        case PYGPU_INT32:
            return convert<A>(load_as<int32_t>(p, src, i));
        default:
            return load_as<int64_t>(p, src, i);
        }
    }
}

/* Element i of an array of dtype `dtype`, whose compute type is A, as A:
 * load_in without a conversion. */
template <typename A>
__device__ __forceinline__ A load_acc(const void *p, int dtype, int64_t i)
{
    if constexpr (std::is_same<A, float>::value) {
        switch (dtype) {
        case PYGPU_FLOAT16:
            return convert<A>(static_cast<const __half *>(p)[i]);
        case PYGPU_BFLOAT16:
            return convert<A>(static_cast<const pygpu_bf16_t *>(p)[i]);
        default:
            return static_cast<const float *>(p)[i];
        }
    } else if constexpr (std::is_same<A, double>::value) {
        return static_cast<const double *>(p)[i];
    } else {
        switch (dtype) {
        case PYGPU_BOOL:
            return convert<A>(static_cast<const bool *>(p)[i]);
        case PYGPU_UINT8:
            return convert<A>(static_cast<const uint8_t *>(p)[i]);
        case PYGPU_INT32:
            return convert<A>(static_cast<const int32_t *>(p)[i]);
        default:
            return static_cast<const int64_t *>(p)[i];
        }
    }
}

/* Stores v, of compute type A, as element i of an array of dtype `dtype`
 * (whose compute type is A), rounded as convert<T> would. */
template <typename A>
__device__ __forceinline__ void store_acc(void *p, int dtype, int64_t i, A v)
{
    if constexpr (std::is_same<A, float>::value) {
        switch (dtype) {
        case PYGPU_FLOAT16:
            static_cast<__half *>(p)[i] = convert<__half>(v);
            return;
        case PYGPU_BFLOAT16:
            static_cast<pygpu_bf16_t *>(p)[i] = convert<pygpu_bf16_t>(v);
            return;
        default:
            static_cast<float *>(p)[i] = v;
            return;
        }
    } else if constexpr (std::is_same<A, double>::value) {
        static_cast<double *>(p)[i] = v;
    } else {
        switch (dtype) {
        case PYGPU_BOOL:
            static_cast<bool *>(p)[i] = convert<bool>(v);
            return;
        case PYGPU_UINT8:
            static_cast<uint8_t *>(p)[i] = convert<uint8_t>(v);
            return;
        case PYGPU_INT32:
            static_cast<int32_t *>(p)[i] = convert<int32_t>(v);
            return;
        default:
            static_cast<int64_t *>(p)[i] = v;
            return;
        }
    }
}

/* A pointer to bool, uint8 or int32 elements (int64 works too), the dtype
 * a launch-wide value: in[i] is element i as int64, in + off the array
 * from element off on.  The input of a kernel over element type T is an
 * in_ptr<T>: `const T *` for the dtypes with kernels of their own, this
 * for T = int_any, which the three share (the switch on the dtype never
 * diverges). */
struct int_any_ptr {
    const void *p;
    int dtype;
    __device__ __forceinline__ int64_t operator[](int64_t i) const
    {
        return load_acc<int64_t>(p, dtype, i);
    }
    __device__ __forceinline__ int_any_ptr operator+(int64_t off) const
    {
        const int size = dtype == PYGPU_INT32   ? 4
                         : dtype == PYGPU_INT64 ? 8
                                                : 1;
        return int_any_ptr{static_cast<const char *>(p) + off * size, dtype};
    }
};
template <typename T> struct in_ptr_of { using type = const T *; };
template <> struct in_ptr_of<int_any> { using type = int_any_ptr; };
template <typename T> using in_ptr = typename in_ptr_of<T>::type;

template <typename T> in_ptr<T> make_in_ptr(const void *p, int)
{
    return static_cast<const T *>(p);
}
template <> inline int_any_ptr make_in_ptr<int_any>(const void *p, int dtype)
{
    return int_any_ptr{p, dtype};
}

/* Calls f with a value of the element type T of a kernel over an input of
 * `dtype` (in_ptr<T>, make_in_ptr): the storage type for float32,
 * float16, bfloat16, float64 and int64 (their own kernels), int_any for
 * bool, uint8 and int32. */
template <typename F> cudaError_t dispatch_dtype_read(int dtype, F &&f)
{
    switch (dtype) {
    case PYGPU_FLOAT32:
        return f(float());
    case PYGPU_FLOAT16:
        return f(__half());
    case PYGPU_FLOAT64:
        return f(double());
    case PYGPU_INT64:
        return f(int64_t());
    case PYGPU_BFLOAT16:
        return f(pygpu_bf16_t());
    case PYGPU_BOOL:
    case PYGPU_UINT8:
    case PYGPU_INT32:
        return f(int_any());
    default:
        return cudaErrorInvalidValue;
    }
}

/* Calls f with a value of the compute type of `dtype` (float, double or
 * int64: acc_t, pygpu_reduce_acc_dtype); an unknown code is invalid. */
template <typename F> cudaError_t dispatch_acc(int dtype, F &&f)
{
    if (dtype < 0 || dtype >= PYGPU_NDTYPES) {
        return cudaErrorInvalidValue;
    }
    switch (pygpu_reduce_acc_dtype(dtype)) {
    case PYGPU_FLOAT32:
        return f(float());
    case PYGPU_FLOAT64:
        return f(double());
    default:
        return f(int64_t());
    }
}

#endif /* PYGPU_KERNELS_DTYPE_SWITCH_CUH */
