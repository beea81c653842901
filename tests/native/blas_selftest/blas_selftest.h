/* blas_selftest.h - the shared harness of the cuBLAS / cuBLASLt self-test:
 * run, on a GPU, the call sequences of csrc/cuda/cuda_blas.c and
 * csrc/cuda/cuda_blaslt.c, with the same row-major mapping (csrc/cuda/blas_layout.h),
 * and check them against a host product in double.
 *
 * No Python: the extension's call sequences live in two Python-free files,
 * csrc/cuda/cuda_blas_gemm.c and csrc/cuda/cuda_blas_lt.c, which are
 * compiled into this program and run as they are (gemm with the 32- and
 * 64-bit entry points, the k == 0 memset, cuBLASLt descriptors / layouts /
 * alignment preferences / heuristic / epilogues with a descriptor reused
 * for a second bias pointer, linear's routing, the workspace handed over
 * between streams).  Where the extension takes the fallback (no cuBLASLt
 * algorithm, or a bias under 16-byte alignment) the output is filled with
 * the bias (here by a copy from the host, in the extension by the bias_act
 * kernel's PYGPU_BIAS_FILL mode) and the real gemm accumulates into it
 * (beta 1); linear_relu's relu kernel, which follows either path, is
 * applied on the host.
 *
 * The files of tests/native/blas_selftest/:
 *   harness.c          globals, host conversions, operands and buffers,
 *                      tolerances, report / skip counters
 *   sequences.c        the extension's sequences on the self-test's handles
 *   gemm.c             matmul and linear over layouts, big batches, the
 *                      stream switch
 *   true_fp32.c        float32 without TF32 is true FP32
 *   linear_paths.c     NaN / -0.0 through the linear paths, fused against
 *                      fallback within a float64 reference's tolerance
 *   large_ld_timing.c  a leading dim past INT_MAX, host cost per call
 *   main.c             setup, the order of the cases, the summary
 *
 * Built from every .c file here (the glob is spelt [a-z]* only because a
 * slash and a star would end this comment):
 *
 *   gcc -std=c11 -O2 -I csrc -I $CUDA_HOME/include \
 *       tests/native/blas_selftest/[a-z]*.c csrc/cuda/cuda_blas_gemm.c \
 *       csrc/cuda/cuda_blas_lt.c csrc/cuda/cuda_blas_load.c \
 *       csrc/cuda/cuda_libfind.c -o blas_selftest \
 *       -L $CUDA_HOME/lib64 -lcublasLt -lcublas -lcudart -ldl
 *
 * Prints each failure ("FAIL <case> ..."), each skipped case ("SKIP <case>:
 * why"), observations that are printed but not checked ("observation:"),
 * then "S skipped" and, last, "N passed, M failed"; exits 1 when any case
 * failed (2 on a setup error).
 *
 * Every .c file of the self-test includes this header first (it sets
 * _POSIX_C_SOURCE before any system header).
 */
#ifndef PYGPU_BLAS_SELFTEST_H
#define PYGPU_BLAS_SELFTEST_H

#define _POSIX_C_SOURCE 199309L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "cuda/cuda_libs.h"
#include <cuda_runtime_api.h>

#include "cuda/blas_layout.h"
#include "cuda/cuda_blas_internal.h"
#include "../test_layouts.h"

/* dtype codes as in kernels.h (not included: it is the extension's). */
enum { F32 = 0, F16 = 1, F64 = 2 };
extern const char *dtype_name[];
extern const int dtype_size[];

#define WORKSPACE_BYTES ((size_t)32 << 20)

/* Defined in harness.c. */
extern int passed, failed, skipped, lt_used, lt_fallback;
extern cublasHandle_t handle;
extern cublasLtHandle_t lt_handle;
extern void *workspace;
extern size_t workspace_size;

/* A setup failure (not a test failure): report and stop. */
#define CUDA_OK(x)                                                           \
    do {                                                                     \
        cudaError_t err_ = (x);                                              \
        if (err_ != cudaSuccess) {                                           \
            printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),   \
                   __FILE__, __LINE__, #x);                                  \
            exit(2);                                                         \
        }                                                                    \
    } while (0)
#define BLAS_OK(x)                                                           \
    do {                                                                     \
        cublasStatus_t st_ = (x);                                            \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                  \
            printf("cuBLAS error %s at %s:%d: %s\n",                         \
                   cublasGetStatusName(st_), __FILE__, __LINE__, #x);        \
            exit(2);                                                         \
        }                                                                    \
    } while (0)

/* ------------------------------------------------- harness.c: host side */
/* The one random sequence every case draws from, in main's order. */
uint64_t rng(void);
double absd(double x);
/* A value exactly representable in the dtype. */
double random_value(int dtype);
/* n doubles as a malloc'd host buffer of the dtype. */
void *to_dtype(int dtype, const double *v, int64_t n);

/* ------------------------------------------------- harness.c: operands */
/* A rows x cols operand (times batch) on the device inside a buffer whose
 * other positions hold NaN, at a random element offset (to vary the
 * pointer's alignment).  host[] mirrors the device buffer in double. */
typedef struct operand {
    pygpu_mat mat; /* ptr: device address of element 0 of batch 0 */
    double *host;
    int64_t len, base;
    void *dbuf;
} operand;

/* A dense row-major rows x cols matrix at ptr, not batched. */
pygpu_mat dense_mat(const void *ptr, int64_t rows, int64_t cols);
void operand_make(operand *op, int dtype, int64_t rows, int64_t cols,
                  int64_t batch, int shared);
void operand_free(operand *op);
double operand_at(const operand *op, int64_t b, int64_t i, int64_t j);

/* ------------------------------------------ harness.c: device buffers */
/* A device output of n elements, NaN-filled, at an element offset. */
void *output_alloc(int dtype, int64_t n, int64_t offset, void **base);
/* n device elements, read back as doubles (malloc'd). */
double *output_fetch(int dtype, const void *dptr, int64_t n);
/* n values of a dtype at byte offset `off` into a fresh device buffer
 * (*base: what to free). */
void *upload(int dtype, const double *v, int64_t n, size_t off, void **base);
/* The raw bytes of n device elements. */
void *fetch_raw(int dtype, const void *dptr, int64_t n);

/* ------------------------------------------ harness.c: checks, counts */
/* |got - ref| within what the dtype's arithmetic allows for a sum whose
 * terms have absolute sum `sumabs` over k products. */
int close_enough(int dtype, int tf32, double got, double ref, double sumabs,
                 int64_t k);
/* Counts a case as passed or failed; a failure prints its FAIL line. */
void report(int ok, const char *what, int dtype, int tf32, int64_t m,
            int64_t n, int64_t k, int64_t batch, const char *detail);
/* A case that cannot run here: not a failure, but named and counted. */
void skip(const char *what, const char *why);

/* ------------------- sequences.c: the extension's sequences, run as-is */
/* pygpu_blas_gemm: force64 takes the _64 entry points even when the sizes
 * fit an int; accumulate gives C += op(A) op(B) (beta 1, one rounding),
 * and leaves C as it is for k == 0. */
cublasStatus_t run_gemm(int dtype, int tf32, int kind,
                        const pygpu_gemm_plan *p, void *c,
                        cudaStream_t stream, int force64, int accumulate);

/* A cuBLASLt plan (pygpu_lt_plan, cuda_blas_internal.h), built fresh. */
void lt_build(pygpu_lt_plan *s, int dtype, int tf32, const pygpu_gemm_plan *p,
              const void *out, const void *bias);
/* The same with cuBLASLt's RELU_BIAS epilogue, which the extension does
 * not use (its relu is the relu kernel, which keeps NaN): built only to
 * observe what cuBLASLt's relu does. */
void lt_build_relu_bias(pygpu_lt_plan *s, int dtype, int tf32,
                        const pygpu_gemm_plan *p, const void *out,
                        const void *bias);
void lt_free(pygpu_lt_plan *s);
/* lt_run of cuda_blaslt.c on a built plan: 1 done, 0 fallback. */
int lt_exec(pygpu_lt_plan *s, const pygpu_gemm_plan *p, void *out,
            const void *bias, cudaStream_t stream);
/* The fallback of pygpu_cuda_linear: bias fill, then gemm with beta 1. */
cublasStatus_t linear_fallback(int dtype, int tf32, int kind,
                               const pygpu_gemm_plan *p, void *out,
                               const double *bias_h, int64_t rows,
                               int64_t out_f);

/* Which path linear_exec took. */
enum {
    LIN_FALLBACK = 0, /* routed to the fallback (shape, size or bias) */
    LIN_FUSED = 1,    /* cuBLASLt with the fused epilogue */
    LIN_NO_ALGO = 2,  /* eligible for cuBLASLt, which had no algorithm:
                       * the fallback ran it, as in the extension */
    LIN_REFUSED = 3   /* cublasLtMatmul refused the heuristic's plan: a
                       * failure, already reported by lt_exec; the
                       * fallback ran it, as in the extension */
};

/* pygpu_cuda_linear on one problem with a fresh plan, before its relu
 * (see sequences.c). */
int linear_exec(int dtype, int tf32, int kind, const pygpu_gemm_plan *p,
                void *out, const void *bias_d, const double *bias_h,
                int64_t rows, int64_t out_f, cublasStatus_t *st);

/* ---------------------------------------------------------------- cases */
/* gemm.c */
void test_matmul(int dtype, int tf32, int64_t m, int64_t n, int64_t k,
                 int64_t batch, int force64);
void test_linear(int dtype, int tf32, int64_t rows, int64_t out_f,
                 int64_t in_f, int with_bias, int relu);
void test_big_batch(int dtype, int bcast);
void test_stream_switch(void);
/* true_fp32.c */
void test_true_fp32(int use_lt, int tf32);
/* linear_paths.c */
void test_linear_nan(void);
void test_fused_vs_fallback(int dtype);
/* large_ld_timing.c */
void test_large_ld(void);
void time_thin_path(void);

#endif /* PYGPU_BLAS_SELFTEST_H */
