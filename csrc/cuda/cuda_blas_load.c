/* cuda_blas_load.c - cuBLAS and cuBLASLt loaded at run time into
 * pygpu_cublas, once per process.  Python-free (the cuBLAS self-test
 * compiles it). */
#define _GNU_SOURCE /* dladdr */
#include "cuda/cuda_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define MAJOR STR(CUBLAS_VER_MAJOR)

/* Filled once, under `once`; read-only after (see cuda_libs.h). */
pygpu_cublas_api pygpu_cublas;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = -1;
static char load_error[4096];

/* Where pip's packages put the libraries: nvidia/cu13/lib from CUDA 13
 * on, nvidia/cublas/lib before. */
static const char *const pip_dirs[] = {"cu" MAJOR, "cublas"};

/* Open `soname`: first from `dir` when given, then from every candidate. */
static void *
open_lib(const char *soname, const char *dir, char *why, size_t size)
{
    pygpu_lib_candidates c;
    char first[PYGPU_LIB_PATH_MAX];
    void *h = NULL;

    pygpu_cuda_lib_candidates(soname, pip_dirs, 2, &c);
    if (dir != NULL &&
        snprintf(first, sizeof(first), "%s/%s", dir, soname) <
            (int)sizeof(first)) {
        h = dlopen(first, RTLD_NOW | RTLD_LOCAL);
    }
    return h != NULL ? h : pygpu_cuda_lib_open(&c, why, size);
}

/* The file that defines sym (its folder with folder_only). */
static void
loaded_path(void *sym, char *out, size_t size, int folder_only)
{
    Dl_info info;
    char *slash;

    out[0] = '\0';
    if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL) {
        snprintf(out, size, "%s", info.dli_fname);
    }
    if (folder_only && (slash = strrchr(out, '/')) != NULL) {
        *slash = '\0';
    }
    else if (folder_only) {
        out[0] = '\0';
    }
}

static void
load(void)
{
    pygpu_cublas_api api;
    char why[sizeof(load_error)] = "", dir[PYGPU_LIB_PATH_MAX];
    const char *missing = NULL, *lib = "libcublasLt.so." MAJOR;
    void *lt, *blas = NULL;

    memset(&api, 0, sizeof(api));
    lt = open_lib(lib, NULL, why, sizeof(why));
    if (lt != NULL) {
        lib = "libcublas.so." MAJOR;
        loaded_path(dlsym(lt, "cublasLtCreate"), dir, sizeof(dir), 1);
        blas = open_lib(lib, dir[0] != '\0' ? dir : NULL, why, sizeof(why));
    }
    if (blas != NULL) {
#define RESOLVE(name)                                                        \
    api.name = (__typeof__(api.name))dlsym(HANDLE, #name);                   \
    if (api.name == NULL && missing == NULL) {                               \
        missing = #name;                                                     \
    }
#define HANDLE blas
        PYGPU_CUBLAS_FUNCTIONS(RESOLVE)
#undef HANDLE
#define HANDLE lt
        PYGPU_CUBLASLT_FUNCTIONS(RESOLVE)
#undef HANDLE
#undef RESOLVE
    }
    if (blas == NULL) {
        /* why + 2: without the leading "; " of the first reason. */
        snprintf(load_error, sizeof(load_error),
                 "%s could not be loaded (%.3000s). pygpu's CUDA build needs "
                 "cuBLAS " MAJOR ": pip install \"nvidia-cublas>=" MAJOR
                 ",<%d\", or a CUDA " MAJOR " toolkit (set CUDA_HOME to it)",
                 lib, why[0] != '\0' ? why + 2 : "not found",
                 CUBLAS_VER_MAJOR + 1);
    }
    else if (missing != NULL) {
        loaded_path(dlsym(blas, "cublasCreate_v2"), dir, sizeof(dir), 0);
        snprintf(load_error, sizeof(load_error),
                 "cuBLAS could not be used: %.2000s (or its cuBLASLt) has "
                 "no %s",
                 dir, missing);
    }
    if (blas == NULL || missing != NULL) {
        if (blas != NULL) {
            dlclose(blas);
        }
        if (lt != NULL) {
            dlclose(lt);
        }
        return;
    }
    loaded_path((void *)api.cublasCreate_v2, api.cublas_path,
                sizeof(api.cublas_path), 0);
    loaded_path((void *)api.cublasLtCreate, api.cublaslt_path,
                sizeof(api.cublaslt_path), 0);
    pygpu_cublas = api; /* the handles stay open for the process's life */
    load_rc = 0;
}

int
pygpu_cublas_load(const char **why)
{
    pthread_once(&once, load);
    if (load_rc < 0 && why != NULL) {
        *why = load_error;
    }
    return load_rc;
}
