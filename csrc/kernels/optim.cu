/* optim.cu - one optimizer step (Adam or SGD) over many tensors in one
 * launch (a multi-tensor launch).
 *
 * The host cuts every tensor of the group into chunks of at most
 * PYGPU_OPTIM_CHUNK elements and lists, for each chunk, the addresses of
 * its first element in every list (parameter, gradient, states) and its
 * length.  That table is copied once to device memory the caller
 * provides, and the grid has one block per chunk: block b walks chunk b
 * with a block-stride loop, loading each element in the compute type,
 * running the rule of optim_rules.h and storing the results.
 */
#include <stdlib.h>

#include "common.cuh"
#include "optim_rules.h"

// -------------------------------------------------------------- kernels

template <typename T>
__global__ void adam_kernel(const pygpu_optim_chunk *chunks,
                            pygpu_optim_hyper h)
{
    using A = acc_t<T>;
    const pygpu_optim_chunk c = chunks[blockIdx.x];
    T *p = static_cast<T *>(c.ptr[PYGPU_OPT_PARAM]);
    const T *g = static_cast<const T *>(c.ptr[PYGPU_OPT_GRAD]);
    T *m = static_cast<T *>(c.ptr[PYGPU_OPT_STATE0]);
    T *v = static_cast<T *>(c.ptr[PYGPU_OPT_STATE1]);
    T *vm = static_cast<T *>(c.ptr[PYGPU_OPT_STATE2]);
    for (int64_t i = threadIdx.x; i < c.n; i += blockDim.x) {
        A pv = convert<A>(p[i]), mv = convert<A>(m[i]), vv = convert<A>(v[i]);
        A vmv = vm != nullptr ? convert<A>(vm[i]) : A(0);
        if constexpr (std::is_same<A, double>::value) {
            pygpu_adam_d(&h, &pv, convert<A>(g[i]), &mv, &vv, &vmv);
        } else {
            pygpu_adam_f(&h, &pv, convert<A>(g[i]), &mv, &vv, &vmv);
        }
        p[i] = convert<T>(pv);
        m[i] = convert<T>(mv);
        v[i] = convert<T>(vv);
        if (vm != nullptr) {
            vm[i] = convert<T>(vmv);
        }
    }
}

template <typename T>
__global__ void sgd_kernel(const pygpu_optim_chunk *chunks,
                           pygpu_optim_hyper h)
{
    using A = acc_t<T>;
    const pygpu_optim_chunk c = chunks[blockIdx.x];
    T *p = static_cast<T *>(c.ptr[PYGPU_OPT_PARAM]);
    const T *g = static_cast<const T *>(c.ptr[PYGPU_OPT_GRAD]);
    T *b = static_cast<T *>(c.ptr[PYGPU_OPT_STATE0]);
    for (int64_t i = threadIdx.x; i < c.n; i += blockDim.x) {
        A pv = convert<A>(p[i]);
        A bv = b != nullptr ? convert<A>(b[i]) : A(0);
        if constexpr (std::is_same<A, double>::value) {
            pygpu_sgd_d(&h, &pv, convert<A>(g[i]), &bv);
        } else {
            pygpu_sgd_f(&h, &pv, convert<A>(g[i]), &bv);
        }
        p[i] = convert<T>(pv);
        if (b != nullptr) {
            b[i] = convert<T>(bv);
        }
    }
}

// ------------------------------------------------------------ launchers

/* The chunk table of s for elements of esize bytes: nchunks entries. */
static void fill_chunks(pygpu_optim_chunk *t, const pygpu_optim_step *s,
                        size_t esize)
{
    int64_t c = 0;
    for (int64_t i = 0; i < s->n; i++) {
        for (int64_t start = 0; start < s->numel[i];
             start += PYGPU_OPTIM_CHUNK) {
            int64_t left = s->numel[i] - start;
            for (int j = 0; j < PYGPU_OPT_NLISTS; j++) {
                t[c].ptr[j] = s->lists[j] == nullptr
                                  ? nullptr
                                  : static_cast<char *>(s->lists[j][i]) +
                                        start * (int64_t)esize;
            }
            t[c].n = left < PYGPU_OPTIM_CHUNK ? left : PYGPU_OPTIM_CHUNK;
            c++;
        }
    }
}

extern "C" cudaError_t pygpu_cuda_optim(int op, int dtype,
                                        const pygpu_optim_step *s,
                                        void *workspace, cudaStream_t stream)
{
    const int64_t nchunks = pygpu_optim_chunks(s);
    if (nchunks == 0) {
        return cudaSuccess;
    }
    if (op != PYGPU_OPTIM_ADAM && op != PYGPU_OPTIM_SGD) {
        return cudaErrorInvalidValue;
    }
    return dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (!std::is_floating_point<acc_t<T>>::value) {
            return cudaErrorInvalidValue;
        } else {
            size_t bytes = (size_t)nchunks * sizeof(pygpu_optim_chunk);
            pygpu_optim_chunk *table =
                static_cast<pygpu_optim_chunk *>(malloc(bytes));
            if (table == nullptr) {
                return cudaErrorMemoryAllocation;
            }
            fill_chunks(table, s, sizeof(T));
            /* From pageable memory the copy takes the table before it
             * returns, so it can be freed right after. */
            cudaError_t e = cudaMemcpyAsync(workspace, table, bytes,
                                            cudaMemcpyHostToDevice, stream);
            free(table);
            if (e != cudaSuccess) {
                return e;
            }
            const pygpu_optim_chunk *chunks =
                static_cast<const pygpu_optim_chunk *>(workspace);
            if (op == PYGPU_OPTIM_ADAM) {
                adam_kernel<T><<<(unsigned)nchunks, BLOCK, 0, stream>>>(
                    chunks, s->h);
            } else {
                sgd_kernel<T><<<(unsigned)nchunks, BLOCK, 0, stream>>>(
                    chunks, s->h);
            }
            return cudaGetLastError();
        }
    });
}
