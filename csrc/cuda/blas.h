/* blas.h - matrix products on CUDA through cuBLAS / cuBLASLt (cuda_blas.c).
 *
 * All operands are row-major matrices described by a pointer and the
 * element strides of their two dims; the caller (ops_matmul.c) guarantees
 * that each operand has a unit stride in one of its dims (otherwise it made
 * a contiguous copy), so it maps onto cuBLAS's column-major view with a
 * transpose flag and no copy.  Batched products use a batch stride per
 * operand (0 broadcasts an operand over the batch).
 *
 * Each function sets the current device, runs on that device's current
 * stream with its lazily created handle, checks every status and returns 0,
 * or -1 with a Python exception (CudaError naming the call and the cuBLAS
 * status).
 */
#ifndef PYGPU_BLAS_H
#define PYGPU_BLAS_H

#include <stdint.h>

typedef struct pygpu_mat {
    const void *ptr;
    int64_t rows, cols;      /* logical row-major shape */
    int64_t row_stride;      /* elements between rows */
    int64_t col_stride;      /* elements between columns */
    int64_t batch_stride;    /* elements between batch items (0: shared) */
} pygpu_mat;

/* C[b] = A[b] @ B[b] for b in [0, batch): A is m x k, B is k x n, C is a
 * contiguous m x n output (batch stride m * n).  float32 (true FP32 unless
 * allow_tf32, torch.backends.cuda.matmul.allow_tf32 as the caller read
 * it), float16 (tensor cores, FP32 accumulation), float64. */
int pygpu_cuda_matmul(int dtype, int device, void *c, const pygpu_mat *a,
                      const pygpu_mat *b, int64_t batch, int allow_tf32);

/* out = x @ w^T (+ bias), one cuBLASLt call with the BIAS epilogue, then
 * the relu kernel when relu != 0 (cuBLASLt's relu turns NaN into 0): x is
 * rows x in_f (any strides with a unit one), w is out_f x in_f, bias NULL
 * or contiguous out_f, out contiguous rows x out_f. */
int pygpu_cuda_linear(int dtype, int device, void *out, const pygpu_mat *x,
                      const pygpu_mat *w, const void *bias, int relu,
                      int allow_tf32);

#endif /* PYGPU_BLAS_H */
