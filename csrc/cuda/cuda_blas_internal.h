/* cuda_blas_internal.h - what cuda_blas.c (handles, workspace, matmul),
 * cuda_blaslt.c (the cuBLASLt plan cache, linear) and the Python-free
 * call sequences of cuda_blas_gemm.c and cuda_blas_lt.c share (the
 * self-test in tests/native/blas_selftest runs the latter two as they are).
 * Not part of the extension's cross-file contract (that is blas.h).
 *
 * Locking.  One mutex guards every device's handles, workspace and stream
 * binding and the cuBLASLt plan cache.  pygpu_blas_acquire takes it and
 * pygpu_blas_release drops it; no Python API is called in between (a
 * Python allocation could run a finalizer that calls back into a matrix
 * product and deadlock on the mutex), so failures inside are recorded in a
 * pygpu_blas_err and raised by pygpu_blas_raise after the release.
 */
#ifndef PYGPU_CUDA_BLAS_INTERNAL_H
#define PYGPU_CUDA_BLAS_INTERNAL_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda/blas_layout.h"
#include "cuda/cuda_libs.h"

/* A failure seen while holding the mutex, raised after it is dropped. */
typedef struct pygpu_blas_err {
    int kind;         /* PYGPU_BLAS_ERR_* */
    int status;       /* a cublasStatus_t or a cudaError_t */
    const char *call; /* the failing call, e.g. "cublasGemmEx" */
    const char *file;
    int line;
    /* For CUBLAS_STATUS_EXECUTION_FAILED: the CUDA error behind it, when
     * this process's runtime can see one (pygpu_blas_explain), else 0. */
    int cuda_status;
} pygpu_blas_err;

#define PYGPU_BLAS_ERR_NONE 0
#define PYGPU_BLAS_ERR_CUBLAS 1
#define PYGPU_BLAS_ERR_CUDA 2

/* The cuBLAS state of one device, created on first use and kept until
 * the process exits (destroying it at exit can race the CUDA context's
 * own teardown, and the driver frees everything anyway). */
typedef struct pygpu_blas_dev {
    int ready;
    cublasHandle_t handle;
    cublasLtHandle_t lt;
    /* One workspace serves both handles: they only ever run on the stream
     * the device is bound to, one call after another. */
    void *workspace;
    size_t workspace_size;
    cudaStream_t stream; /* the stream handle and workspace are bound to */
    int bound;
    cudaEvent_t ws_done; /* marks the workspace's last use, see cuda_blas.c */
    int wait_pending;    /* a capture skipped the wait for ws_done */
} pygpu_blas_dev;

/* Lock, then return `device`'s state (created if needed) bound to
 * `stream` (`capturing`: which is capturing a graph; the state must exist
 * already).  NULL with *e set on failure; the mutex is held either way. */
pygpu_blas_dev *pygpu_blas_acquire(int device, cudaStream_t stream,
                                   int capturing, pygpu_blas_err *e);
/* Mark the end of this call's workspace use on `stream` (d may be NULL
 * after a failed acquire; while capturing, count the call as captured
 * instead), then unlock.  Returns -1 if e holds an error (possibly a new
 * one from the marking), else 0. */
int pygpu_blas_release(pygpu_blas_dev *d, cudaStream_t stream, int capturing,
                       pygpu_blas_err *e);
/* After a failed call (mutex not held): when e is an allocation failure
 * and emptying the device's cache gave memory back (pygpu_cuda_oom_retry),
 * clear e and return 1 so that the caller runs the whole call once more;
 * *attempts (0 at first) makes that happen once.  Else 0, e kept. */
int pygpu_blas_oom_retry(int device, pygpu_blas_err *e, int *attempts);
/* Raise e as CudaError (GIL held, mutex not held); returns -1. */
int pygpu_blas_raise(const pygpu_blas_err *e);

/* The part of a product that runs with the mutex held (no Python API), on
 * d bound to `stream`; failures go to *e. */
typedef void (*pygpu_blas_body)(pygpu_blas_dev *d, cudaStream_t stream,
                                void *ctx, pygpu_blas_err *e);
/* What runs after a successful body, on the same stream, the mutex
 * dropped and the device still current: 0, or -1 with an exception. */
typedef int (*pygpu_blas_after)(int device, cudaStream_t stream, void *ctx);
/* Run body on `device`'s current stream with its cuBLAS state (the whole
 * call once more after an allocation failure, see pygpu_blas_oom_retry),
 * then after (may be NULL), with the device made current for the
 * duration.  On a stream capturing a graph, the state must exist already
 * (else the capture is refused, see pygpu_cuda_capture_refuse).  0, or -1
 * with an exception. */
int pygpu_blas_run(int device, pygpu_blas_body body, pygpu_blas_after after,
                   void *ctx);
/* Check and plan a product of a (batch items) and b: *tf32 from dtype and
 * allow_tf32, *kind and *p from pygpu_gemm_plan_make.  1 to run it, 0 when
 * there is nothing to do, -1 with torch's error for the dtype (naming
 * dtype_op) or the layout (naming layout_op). */
int pygpu_blas_plan(int dtype, int allow_tf32, const pygpu_mat *a,
                    const pygpu_mat *b, int64_t batch, const char *dtype_op,
                    const char *layout_op, int *tf32, int *kind,
                    pygpu_gemm_plan *p);

/* Record a failing status: they return -1 when the status is a failure
 * (and set *e), 0 otherwise. */
int pygpu_blas_check(cublasStatus_t st, const char *call, pygpu_blas_err *e);
int pygpu_blas_cuda_check(cudaError_t err, const char *call,
                          const char *file, int line, pygpu_blas_err *e);
/* After a call that ran on `stream`: when e holds EXECUTION_FAILED (a
 * kernel of cuBLAS failed to launch or run), record in e->cuda_status the
 * CUDA error behind it that this process can see: the runtime's last
 * error, else a fault the stream reports.  cuBLAS has its own copy of the
 * runtime, so a launch error it met leaves none here, and cuda_status
 * stays 0. */
void pygpu_blas_explain(pygpu_blas_err *e, cudaStream_t stream);

/* (cuda_blas_gemm.c, no Python.)  Run a planned gemm, C = op(A) op(B) (accumulate 0) or C += op(A) op(B)
 * (accumulate 1: beta 1, the sum rounded once), on d bound to `stream`.
 * For PYGPU_GEMM_ZERO (k == 0) C is zero-filled, or left as it is when
 * accumulating.  dtype is a supported pygpu_scalar.  force64 takes the
 * 64-bit entry points even where the sizes fit an int (the self-test's
 * way to check them; the extension passes 0).  0, or -1 with *e. */
int pygpu_blas_gemm(pygpu_blas_dev *d, int dtype, int tf32, int kind,
                    const pygpu_gemm_plan *p, void *c, int accumulate,
                    int force64, cudaStream_t stream, pygpu_blas_err *e);

/* The cuda data type, cuBLAS compute type and scale type of a dtype;
 * -1 for a dtype cuBLAS products do not support. */
int pygpu_blas_types(int dtype, int tf32, cudaDataType_t *data,
                     cublasComputeType_t *compute, cudaDataType_t *scale);

/* Raise torch's error for a dtype without a CUDA product ("addmm_cuda"
 * etc. as `op`); returns -1. */
int pygpu_blas_raise_dtype(const char *op, int dtype);
/* Raise RuntimeError for a plan kind below 0 (a layout or shape cuBLAS
 * cannot take); returns -1. */
int pygpu_blas_raise_layout(const char *op, int kind, const pygpu_mat *a,
                            const pygpu_mat *b);

/* ------------------------------------ cuda_blas_lt.c (no Python) */
/* A linear problem as cuBLASLt's heuristic sees it: all int64_t, so no
 * padding and memcmp compares keys. */
typedef struct pygpu_lt_key {
    int64_t device, dtype, tf32, epilogue;
    int64_t trans_a, trans_b, m, n, k, lda, ldb, ldc;
    int64_t align_a, align_b, align_c, align_bias;
} pygpu_lt_key;

/* A built plan (a cache slot of cuda_blaslt.c). */
typedef struct pygpu_lt_plan {
    pygpu_lt_key key;
    int used;
    int use_lt; /* 0: cuBLASLt cannot run this problem: use the fallback */
    uint64_t last_use;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc; /* lc describes both C and D */
    cublasLtMatmulAlgo_t algo;
} pygpu_lt_plan;

/* Whether linear may try cuBLASLt for this plan kind, sizes and bias. */
int pygpu_lt_eligible(int kind, const pygpu_gemm_plan *p, const void *bias);
/* The key of out = op(A) op(B) (+ bias) on `device`: the BIAS epilogue
 * with a bias, DEFAULT without.  linear's relu is never cuBLASLt's: its
 * RELU epilogues compute max(x, 0), which turns NaN into 0, where torch's
 * relu keeps NaN; the relu kernel runs after the product instead. */
void pygpu_lt_key_make(pygpu_lt_key *key, int device, int dtype, int tf32,
                       const pygpu_gemm_plan *p, const void *out,
                       const void *bias);
/* Fill s for `key`: descriptors, layouts, and one algorithm from the
 * heuristic (or use_lt = 0 when there is none).  0, or -1 with *e and s
 * emptied. */
int pygpu_lt_plan_build(pygpu_blas_dev *d, pygpu_lt_plan *s,
                        const pygpu_lt_key *key, const pygpu_gemm_plan *p,
                        const void *bias, pygpu_blas_err *e);
/* Destroy s's descriptors and zero it. */
void pygpu_lt_plan_clear(pygpu_lt_plan *s);
/* Run s (with this bias pointer) on `stream`: 1 done, 0 when the fallback
 * must run it (no algorithm, or refused: then use_lt is cleared), -1
 * with *e. */
int pygpu_lt_plan_run(pygpu_blas_dev *d, pygpu_lt_plan *s,
                      const pygpu_gemm_plan *p, void *out, const void *bias,
                      cudaStream_t stream, pygpu_blas_err *e);

#endif /* PYGPU_CUDA_BLAS_INTERNAL_H */
