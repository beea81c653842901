/* cpu_blas.h - the CPU's BLAS: the OpenBLAS that NumPy loaded, found in
 * the process at run time (cpu_blas.c), and the float32 / float64
 * products over it, split on the thread pool (cpu_gemm.c).
 *
 * No library is linked: pygpu calls the cblas_sgemm / cblas_dgemm of the
 * library NumPy already brought into the process.  Without one (or with
 * PYGPU_CPU_BLAS=numpy in the environment, or after _C._blas_enable(False))
 * the products go through NumPy's matmul as before.
 */
#ifndef PYGPU_CPU_BLAS_H
#define PYGPU_CPU_BLAS_H

#include <stdint.h>

#include "core/pygpu.h"

/* 1 when products may call the BLAS directly: a library was found and
 * the direct path is on.  Finds the library on its first call. */
int pygpu_cpu_blas_ready(void);

/* 1 when the library's kernels are OpenBLAS's Haswell ones (its core
 * "Haswell", or "Zen", which runs them), on which cpu_gemm.c's choices
 * were measured.  After pygpu_cpu_blas_ready. */
int pygpu_cpu_blas_haswell(void);

/* 1 when every one of m, n, k and the leading dims fits the library's
 * integers (always with a 64-bit interface). */
int pygpu_cpu_blas_fits(int64_t v);

/* Brackets BLAS calls: between the first enter and the last leave the
 * library runs each call on its calling thread alone (its own thread
 * count is set to 1), and the count the program had is put back after.
 * Thread-safe; nests across threads. */
void pygpu_cpu_blas_enter(void);
void pygpu_cpu_blas_leave(void);

/* c (m x n, rows ldc apart) = a @ b (+ c when beta_one) in row-major
 * order, a being m x k (stored transposed when ta) and b k x n (likewise
 * tb); dtype float32 or float64.  Between enter and leave. */
void pygpu_cpu_blas_gemm(int dtype, int ta, int tb, int64_t m, int64_t n,
                         int64_t k, const void *a, int64_t lda,
                         const void *b, int64_t ldb, int beta_one, void *c,
                         int64_t ldc);

/* out = a @ b over the batch shape bshape (nb dims; a and b broadcast
 * over it), or for linear out = a @ b^T (b_t: b is the weight, out_f x
 * in_f), + bias (a contiguous row of n values, or NULL) then relu when
 * asked.  out is new and contiguous; a and b of out's dtype, float32 or
 * float64, any strides (operands the BLAS cannot read are copied).
 * Returns 1 when done, 0 when the direct BLAS cannot do it (the caller
 * takes NumPy's path), -1 with an exception.  Under the GIL; releases it
 * for large products. */
int pygpu_cpu_gemm(TensorObject *out, TensorObject *a, TensorObject *b,
                   int b_t, int nb, const int64_t *bshape,
                   TensorObject *bias, int relu);

/* _C._blas_info and _C._blas_enable (cpu_blas.c). */
extern PyMethodDef pygpu_cpu_blas_functions[];

#endif /* PYGPU_CPU_BLAS_H */
