/* norm.h - the contract of the row-normalisation kind (PYGPU_K_NORM):
 * layer norm and RMS norm over rows of n contiguous elements, forward and
 * backward, as the CPU loop (cpu/cpu_norm.c) and the CUDA kernels
 * (kernels/norm.cu) take them.  Plain C, no Python.h.
 *
 * The compute type A is float for float32, float16 and bfloat16 and double
 * for float64; x, y, dy and dx have the row's dtype, everything else
 * (weight, bias, the saved statistics, the partial sums and the parameter
 * gradients) is A.  The front end (ops/ops_norm.c) makes every buffer
 * contiguous and converts the parameters.
 *
 * FORWARD, per row r (xc = x - mean for layer norm, x itself for RMS):
 *   mean[r] = sum x / n (layer norm only),
 *   rstd[r] = 1 / sqrt(sum xc^2 / n + eps),
 *   y = xc * rstd * w + b        (w, b optional; RMS has no b).
 * BACKWARD, with xhat = xc * rstd and g = dy * w (dy without w):
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (layer norm),
 *   dx = rstd * (g - xhat * mean(g * xhat))             (RMS),
 *   dw = sum over rows of dy * xhat, db = sum over rows of dy.
 * The rows are cut into `parts` runs of rows_per_part rows (the last may
 * be shorter), chosen by the front end from the sizes alone; each part
 * writes its sums of dy * xhat and dy into part_sums (parts rows of 2n:
 * the first n for dw, the next n for db), and the parts' sums are added
 * in part order, so the bits do not depend on the threads or the device's
 * scheduling.
 *
 * CHANNELS_FORWARD and CHANNELS_BACKWARD are batch norm's training step
 * over a contiguous [outer, C, inner] x: rows is C, n is outer * inner
 * (the elements of a channel), and w, b, mean, rstd, var, dw and db have
 * one element per channel; FORWARD also writes the biased variance to var
 * when it is not NULL, and the backward's dw and db are whole sums:
 * dx = rstd * w * (dy - mean(dy) - xhat * mean(dy * xhat)).  parts,
 * rows_per_part and part_sums are unused: the CPU loops take a channel
 * whole, and the GPU cuts each channel into pygpu_norm_slices(n) slices
 * whose sums it keeps in the workspace the CUDA runner allocates
 * (pygpu_cuda_norm_workspace), merged in slice order.
 */
#ifndef PYGPU_NORM_H
#define PYGPU_NORM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* pygpu_kargs.op of a NORM row. */
enum pygpu_norm_op {
    PYGPU_NORM_FORWARD = 0,
    PYGPU_NORM_BACKWARD = 1,
    PYGPU_NORM_CHANNELS_FORWARD = 2,
    PYGPU_NORM_CHANNELS_BACKWARD = 3,
    PYGPU_NNORM_OPS = 4
};

typedef struct pygpu_norm_args {
    int64_t rows, n;       /* n >= 1 */
    int rms;               /* RMS norm: no mean, no bias */
    double eps;
    const void *x;         /* [rows, n] */
    const void *w, *b;     /* [n] (A), or NULL */
    void *y;               /* FORWARD: [rows, n] */
    void *mean, *rstd;     /* [rows] (A): FORWARD writes, BACKWARD reads;
                              mean unused for RMS */
    const void *dy;        /* BACKWARD: [rows, n] */
    void *dx;              /* BACKWARD: [rows, n], or NULL */
    void *dw, *db;         /* BACKWARD: [n] (A), or NULL */
    void *part_sums;       /* BACKWARD with dw or db: [parts, 2n] (A) */
    int64_t parts, rows_per_part;
    int64_t inner;         /* CHANNELS: the elements of a run, >= 1 */
    void *var;             /* CHANNELS_FORWARD: [C] (A), or NULL */
} pygpu_norm_args;

/* Rows per part: about PYGPU_NORM_PART_WORK elements each. */
#define PYGPU_NORM_PART_WORK (1 << 16)
/* Batch norm's slices of a channel of n elements on the GPU: about
 * PYGPU_NORM_SLICE_WORK elements each, at most PYGPU_NORM_MAX_SLICES,
 * from the sizes alone. */
#define PYGPU_NORM_SLICE_WORK (1 << 13)
#define PYGPU_NORM_MAX_SLICES 1024
static inline int64_t
pygpu_norm_slices(int64_t n)
{
    int64_t parts = (n + PYGPU_NORM_SLICE_WORK - 1) / PYGPU_NORM_SLICE_WORK;
    return parts < 1 ? 1
           : parts > PYGPU_NORM_MAX_SLICES ? PYGPU_NORM_MAX_SLICES : parts;
}

/* op over a on the CPU (cpu_norm.c): rows split over the thread pool. */
void pygpu_cpu_norm(int op, int dtype, const pygpu_norm_args *a);
/* The CHANNELS ops on the CPU (cpu_norm_channels.c): a task per channel. */
void pygpu_cpu_norm_channels(int op, int dtype, const pygpu_norm_args *a);

#ifdef PYGPU_WITH_CUDA
#include <cuda_runtime_api.h>
/* The same on the GPU (kernels/norm.cu): one warp or block per row, the
 * parameter gradients by parts then one pass over the parts. */
cudaError_t pygpu_cuda_norm(int op, int dtype, const pygpu_norm_args *a,
                            cudaStream_t stream);
/* The CHANNELS ops on the GPU (kernels/norm_channels.cu): a block per
 * slice of a channel, the slices merged per channel, then an elementwise
 * pass; workspace holds pygpu_cuda_norm_workspace(op, dtype, a) bytes. */
size_t pygpu_cuda_norm_workspace(int op, int dtype,
                                 const pygpu_norm_args *a);
cudaError_t pygpu_cuda_norm_channels(int op, int dtype,
                                     const pygpu_norm_args *a,
                                     void *workspace, cudaStream_t stream);
#endif

#ifdef __cplusplus
}
#endif

#endif /* PYGPU_NORM_H */
