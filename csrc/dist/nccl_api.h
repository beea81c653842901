/* nccl_api.h - the NCCL layer of a CUDA build: NCCL is not linked but
 * loaded at run time (nccl_loader.c), so that importing pygpu never needs
 * it.  The function pointers have the types of the declarations in the
 * nccl.h the build found; the communicator type (nccl_comm.c) and its
 * operations (nccl_ops.c) call NCCL only through them. */
#ifndef PYGPU_NCCL_API_H
#define PYGPU_NCCL_API_H

#include "core/pygpu.h"

#include <nccl.h>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 7, 0)
#error "pygpu needs nccl.h of NCCL 2.7 or later (ncclSend and ncclRecv)"
#endif
/* ncclGetLastError: 2.13; ncclCommInitRankConfig (nonblocking
 * initialisation) and ncclCommFinalize: 2.14. */
#define PYGPU_NCCL_HAS_LAST_ERROR (NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0))
#define PYGPU_NCCL_HAS_CONFIG (NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0))
/* ncclAvg and ncclBfloat16 came with NCCL 2.10, whose ABI fixes their
 * values (ncclAvg 4, ncclBfloat16 9).  Headers of 2.10 to 2.18 declare
 * ncclBfloat16 only where cuda_bf16.h defined its type, which it does for
 * C++ alone, and this layer is C: so both are written here by value, and
 * whether the library takes them is decided by its version at run time
 * (pygpu_nccl_at_least), never by the header. */
#define PYGPU_NCCL_AVG ((ncclRedOp_t)4)
#define PYGPU_NCCL_BFLOAT16 ((ncclDataType_t)9)
#define PYGPU_NCCL_AVG_BF16_MAJOR 2
#define PYGPU_NCCL_AVG_BF16_MINOR 10

/* The functions every NCCL pygpu loads must have. */
#define PYGPU_NCCL_REQUIRED(X)                                               \
    X(ncclGetVersion) X(ncclGetUniqueId) X(ncclGetErrorString)               \
    X(ncclCommInitRank) X(ncclCommDestroy) X(ncclCommAbort)                  \
    X(ncclCommGetAsyncError) X(ncclAllReduce) X(ncclBroadcast)               \
    X(ncclReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclSend)          \
    X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)

/* Those used when the library has them (NULL otherwise). */
#if PYGPU_NCCL_HAS_CONFIG
#define PYGPU_NCCL_OPTIONAL(X)                                               \
    X(ncclGetLastError) X(ncclCommInitRankConfig) X(ncclCommFinalize)
#elif PYGPU_NCCL_HAS_LAST_ERROR
#define PYGPU_NCCL_OPTIONAL(X) X(ncclGetLastError)
#else
#define PYGPU_NCCL_OPTIONAL(X)
#endif

#define PYGPU_NCCL_FIELD(name) __typeof__(name) *name;
typedef struct pygpu_nccl_api {
    PYGPU_NCCL_REQUIRED(PYGPU_NCCL_FIELD)
    PYGPU_NCCL_OPTIONAL(PYGPU_NCCL_FIELD)
    int version;      /* ncclGetVersion's code */
    char path[512];   /* the file it was loaded from */
} pygpu_nccl_api;
#undef PYGPU_NCCL_FIELD

/* The loaded library (loaded by the default search on first use), or NULL
 * with RuntimeError saying why (nccl_loader.c). */
const pygpu_nccl_api *pygpu_nccl_api_get(void);
/* (major, minor, patch) of an ncclGetVersion code. */
void pygpu_nccl_version_split(int code, int *major, int *minor, int *patch);
/* Nonzero when the loaded library is NCCL major.minor or later. */
int pygpu_nccl_at_least(const pygpu_nccl_api *api, int major, int minor);
/* RuntimeError "NCCL error in <call>: <ncclGetErrorString> (<code>),
 * NCCL version x.y.z; last error: <ncclGetLastError>".  Returns -1. */
int pygpu_nccl_raise(const pygpu_nccl_api *api, ncclComm_t comm,
                     ncclResult_t rc, const char *call);

/* ------------------------------------------------------------ NcclComm */
typedef struct {
    PyObject_HEAD
    ncclComm_t comm;            /* NULL once destroyed or aborted */
    const pygpu_nccl_api *api;
    int world_size;
    int rank;
    int device;
    double timeout;             /* seconds; <= 0: none */
    int busy;                   /* a call is under way without the GIL */
    /* A call failed or timed out, or NCCL reported an asynchronous error
     * (a peer may be gone): releasing it aborts rather than finalizes,
     * which would wait for the peers. */
    int failed;
    long pid;                   /* the process that made it (see close) */
} NcclCommObject;

/* For an NCCL call on self's communicator that returned rc: when rc is
 * ncclInProgress (a nonblocking communicator), poll the communicator until
 * the call is done or self->timeout has passed (then ncclInProgress stays).
 * Calls no Python API. */
ncclResult_t pygpu_nccl_settle(const NcclCommObject *self, ncclResult_t rc);
/* 0 if self can take a call now; -1 with RuntimeError if it is closed or
 * in use by another thread. */
int pygpu_nccl_check_open(NcclCommObject *self, const char *fname);
/* -1 with the exception for an rc that is not ncclSuccess after settling
 * (a timeout named as one), 0 for success. */
int pygpu_nccl_check(NcclCommObject *self, ncclResult_t rc,
                     const char *call);

/* The collective methods (nccl_ops.c). */
#define PYGPU_NCCL_DECLARE_FASTKW(name)                                      \
    PyObject *pygpu_nccl_##name(NcclCommObject *self, PyObject *const *args, \
                                Py_ssize_t nargs, PyObject *kwnames);
PYGPU_NCCL_DECLARE_FASTKW(all_reduce)
PYGPU_NCCL_DECLARE_FASTKW(broadcast)
PYGPU_NCCL_DECLARE_FASTKW(reduce)
PYGPU_NCCL_DECLARE_FASTKW(all_gather_into_tensor)
PYGPU_NCCL_DECLARE_FASTKW(reduce_scatter_tensor)
PYGPU_NCCL_DECLARE_FASTKW(send)
PYGPU_NCCL_DECLARE_FASTKW(recv)
#undef PYGPU_NCCL_DECLARE_FASTKW
/* {"dtypes": [names], "ops": [names]}: the dtypes and reduce ops the
 * loaded library serves, in pygpu's order (nccl_ops.c). */
PyObject *pygpu_nccl_capabilities(const pygpu_nccl_api *api);

/* The module functions (nccl_loader.c) and the type's spec (nccl_comm.c)
 * are declared in core/pygpu.h: module.c registers them. */

#endif
