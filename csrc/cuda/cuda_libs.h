/* cuda_libs.h - CUDA libraries found and loaded at run time (dlopen), so
 * that importing pygpu needs none of them and a missing one is a reason,
 * not an import error.  Python-free (the cuBLAS self-test compiles it).
 *
 * Where a library is looked for, in order (pygpu_cuda_lib_candidates):
 *  1. next to pygpu, in pip's NVIDIA packages: <the folder holding the
 *     extension>/../nvidia/<dir>/lib/<soname> for each of `pip_dirs`
 *     (site-packages/nvidia/cu13/lib for CUDA 13's nvidia-cublas), as an
 *     rpath relative to the extension would;
 *  2. the soname alone: the dynamic loader's search (LD_LIBRARY_PATH, the
 *     system's ld.so.cache, a copy already loaded in the process);
 *  3. <CUDA_HOME>/lib64, <CUDA_PATH>/lib64 and /usr/local/cuda/lib64 (and
 *     their lib/).
 * No path of the machine that built pygpu is among them. */
#ifndef PYGPU_CUDA_LIBS_H
#define PYGPU_CUDA_LIBS_H

#include <cublasLt.h>
#include <cublas_v2.h>

#define PYGPU_LIB_MAX_CANDIDATES 12
#define PYGPU_LIB_PATH_MAX 1024

typedef struct pygpu_lib_candidates {
    int n;
    char path[PYGPU_LIB_MAX_CANDIDATES][PYGPU_LIB_PATH_MAX];
} pygpu_lib_candidates;

/* Fill *out with where `soname` is looked for, in the order above;
 * `pip_dirs` (n_pip of them) are the folders under site-packages/nvidia/
 * that pip's packages of the library use. */
void pygpu_cuda_lib_candidates(const char *soname,
                               const char *const *pip_dirs, int n_pip,
                               pygpu_lib_candidates *out);

/* dlopen the first candidate that loads (RTLD_NOW | RTLD_LOCAL); NULL when
 * none does, with each path's reason appended to why[0..why_size) as
 * "; <dlerror>". */
void *pygpu_cuda_lib_open(const pygpu_lib_candidates *c, char *why,
                          size_t why_size);

/* The cuBLAS and cuBLASLt entry points pygpu calls, by their symbol names
 * (cublas_v2.h maps cublasCreate to cublasCreate_v2 and so on, so
 * `pygpu_cublas.cublasCreate(...)` reaches the right field). */
#define PYGPU_CUBLAS_FUNCTIONS(X)                                            \
    X(cublasCreate_v2)                                                       \
    X(cublasDestroy_v2)                                                      \
    X(cublasSetStream_v2)                                                    \
    X(cublasSetWorkspace_v2)                                                 \
    X(cublasGemmEx)                                                          \
    X(cublasGemmEx_64)                                                       \
    X(cublasGemmStridedBatchedEx)                                            \
    X(cublasGemmStridedBatchedEx_64)                                         \
    X(cublasGetStatusName)                                                   \
    X(cublasGetStatusString)
#define PYGPU_CUBLASLT_FUNCTIONS(X)                                          \
    X(cublasLtCreate)                                                        \
    X(cublasLtDestroy)                                                       \
    X(cublasLtMatmul)                                                        \
    X(cublasLtMatmulAlgoGetHeuristic)                                        \
    X(cublasLtMatmulDescCreate)                                              \
    X(cublasLtMatmulDescDestroy)                                             \
    X(cublasLtMatmulDescSetAttribute)                                        \
    X(cublasLtMatmulPreferenceCreate)                                        \
    X(cublasLtMatmulPreferenceDestroy)                                       \
    X(cublasLtMatmulPreferenceSetAttribute)                                  \
    X(cublasLtMatrixLayoutCreate)                                            \
    X(cublasLtMatrixLayoutDestroy)

typedef struct pygpu_cublas_api {
#define PYGPU_CUBLAS_FIELD(name) __typeof__(name) *name;
    PYGPU_CUBLAS_FUNCTIONS(PYGPU_CUBLAS_FIELD)
    PYGPU_CUBLASLT_FUNCTIONS(PYGPU_CUBLAS_FIELD)
#undef PYGPU_CUBLAS_FIELD
    char cublas_path[PYGPU_LIB_PATH_MAX];
    char cublaslt_path[PYGPU_LIB_PATH_MAX];
} pygpu_cublas_api;

/* Filled once by pygpu_cublas_load (under a pthread_once), read-only
 * after: read it only after a pygpu_cublas_load that returned 0. */
extern pygpu_cublas_api pygpu_cublas;

/* Load cuBLASLt, then cuBLAS (from cuBLASLt's folder first, so that the
 * two match), once per process: 0, or -1 with *why (kept for the
 * process's life) naming the library, every place tried and how to
 * install it. */
int pygpu_cublas_load(const char **why);

#endif /* PYGPU_CUDA_LIBS_H */
