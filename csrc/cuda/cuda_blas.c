/* cuda_blas.c - matrix products on CUDA through cuBLAS: per-device handles
 * and workspace, the stream binding, error translation, and matmul.
 * linear (cuBLASLt with a fused epilogue) is in cuda_blaslt.c; the
 * row-major to column-major mapping is in blas_layout.h.
 */
#include "core/pygpu.h"

#include <pthread.h>
#include <stdatomic.h>

#include "cuda/blas.h"
#include "cuda/cuda_blas_internal.h"
#include "cuda/cuda_graph.h"
#include "cuda/cuda_runtime.h"

/* More devices than any single machine has; a larger index is refused. */

/* Workspace for cuBLAS and cuBLASLt: NVIDIA's cuBLAS guide recommends
 * 32 MiB on Hopper (sm_90) and 4 MiB on earlier architectures; PyTorch uses
 * the same figures (32 MiB for every major >= 9).  It is taken with
 * cudaMalloc once per device, outside the caching allocator, so
 * memory_allocated() and memory_reserved() never count it and read the
 * same before and after a first product.  (torch takes its workspaces
 * from its caching allocator, so its figures grow by them then.) */
#define BLAS_WORKSPACE_HOPPER ((size_t)32 << 20)
#define BLAS_WORKSPACE_OTHER ((size_t)4 << 20)

static pygpu_blas_dev blas_devs[PYGPU_MAX_DEVICES];
static pthread_mutex_t blas_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Products recorded into a graph capture so far (cuda_graph.h). */
static atomic_ulong captured_calls;

unsigned long pygpu_blas_captured_calls(void)
{
    return atomic_load(&captured_calls);
}

/* ----------------------------------------------------------------- errors */
int pygpu_blas_raise(const pygpu_blas_err *e)
{
    const char *name, *text;

    if (e->kind == PYGPU_BLAS_ERR_CUDA) {
        pygpu_cuda_raise(e->status, e->call, e->file, e->line);
        return -1;
    }
    /* A failed launch inside cuBLAS may leave a (non-sticky) CUDA error
     * that the next kernel's launch check would report as its own. */
    (void)cudaGetLastError();
    /* The status enum is shared by cuBLAS and cuBLASLt. */
    name = pygpu_cublas.cublasGetStatusName((cublasStatus_t)e->status);
    text = pygpu_cublas.cublasGetStatusString((cublasStatus_t)e->status);
    name = name != NULL ? name : "CUBLAS_STATUS_UNKNOWN";
    if (e->cuda_status != 0) {
        /* EXECUTION_FAILED with the CUDA error behind it: that error is
         * what happened (a fault, say), so it is the one raised. */
        cudaError_t err = (cudaError_t)e->cuda_status;
        return pygpu_raise_cuda_error((long)err, cudaGetErrorName(err),
                                      "CUDA error: %s (%s) in %s (cuBLAS "
                                      "returned %s)", cudaGetErrorString(err),
                                      cudaGetErrorName(err), e->call, name);
    }
    return pygpu_raise_cuda_error((long)e->status, name,
                                  "cuBLAS error: %s in %s (%s)", name,
                                  e->call,
                                  text != NULL ? text : "unknown status");
}

int pygpu_blas_raise_dtype(const char *op, int dtype)
{
    const char *name = "Unknown";

    if (dtype >= 0 && dtype < PYGPU_NDTYPES) {
        name = pygpu_dtype_table[dtype].scalar_name; /* torch's name */
    }
    PyErr_Format(PyExc_RuntimeError, "\"%s\" not implemented for '%s'", op,
                 name);
    return -1;
}

int pygpu_blas_raise_layout(const char *op, int kind, const pygpu_mat *a,
                            const pygpu_mat *b)
{
    const pygpu_mat *x = kind == PYGPU_GEMM_BAD_A ? a : b;

    if (kind == PYGPU_GEMM_BAD_SHAPE) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: mat1 and mat2 shapes cannot be multiplied "
                     "(%lldx%lld and %lldx%lld)",
                     op, (long long)a->rows, (long long)a->cols,
                     (long long)b->rows, (long long)b->cols);
        return -1;
    }
    PyErr_Format(PyExc_RuntimeError,
                 "%s: %s of shape [%lld, %lld] with strides [%lld, %lld] "
                 "has no layout cuBLAS can read; it needs a contiguous copy",
                 op, kind == PYGPU_GEMM_BAD_A ? "mat1" : "mat2",
                 (long long)x->rows, (long long)x->cols,
                 (long long)x->row_stride, (long long)x->col_stride);
    return -1;
}

/* ---------------------------------------------------------------- devices */
/* Create a device's handles, workspace and event.  Called with the mutex
 * held and the device current; on failure nothing is kept, so the next
 * call tries again. */
static int blas_dev_init(pygpu_blas_dev *d, int device, pygpu_blas_err *e)
{
    cublasHandle_t handle = NULL;
    cublasLtHandle_t lt = NULL;
    cudaEvent_t done = NULL;
    void *ws = NULL;
    size_t ws_size;
    int major = 0;
    cudaError_t err;

    if (pygpu_blas_check(pygpu_cublas.cublasCreate(&handle), "cublasCreate",
                         e) < 0) {
        goto fail;
    }
    if (pygpu_blas_check(pygpu_cublas.cublasLtCreate(&lt), "cublasLtCreate",
                         e) < 0) {
        goto fail;
    }
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                 device);
    if (pygpu_blas_cuda_check(err, "cudaDeviceGetAttribute", __FILE__,
                              __LINE__, e) < 0) {
        goto fail;
    }
    ws_size = major >= 9 ? BLAS_WORKSPACE_HOPPER : BLAS_WORKSPACE_OTHER;
    err = cudaMalloc(&ws, ws_size);
    if (pygpu_cuda_oom_retry(device, (int)err, 0)) {
        err = cudaMalloc(&ws, ws_size); /* the cache gave memory back */
    }
    if (err == cudaErrorMemoryAllocation) {
        /* The device is full even without cached blocks: run without a
         * workspace, which only narrows the kernels cuBLAS may pick. */
        (void)cudaGetLastError();
        ws = NULL;
        ws_size = 0;
    } else if (pygpu_blas_cuda_check(err, "cudaMalloc", __FILE__, __LINE__,
                                     e) < 0) {
        goto fail;
    }
    err = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    if (pygpu_blas_cuda_check(err, "cudaEventCreateWithFlags", __FILE__,
                              __LINE__, e) < 0) {
        goto fail;
    }
    d->handle = handle;
    d->lt = lt;
    d->workspace = ws;
    d->workspace_size = ws_size;
    d->ws_done = done;
    d->bound = 0;
    d->ready = 1;
    return 0;

fail:
    if (done != NULL) {
        cudaEventDestroy(done);
    }
    if (ws != NULL) {
        cudaFree(ws);
    }
    if (lt != NULL) {
        pygpu_cublas.cublasLtDestroy(lt);
    }
    if (handle != NULL) {
        pygpu_cublas.cublasDestroy(handle);
    }
    return -1;
}

/* The legacy default stream lives as long as the process and is one
 * stream for every thread.  Any other stream may be destroyed once its
 * work is queued, and cudaStreamPerThread names a different stream in each
 * thread. */
static int blas_stream_is_legacy(cudaStream_t s)
{
    return s == NULL || s == cudaStreamLegacy;
}

/* Point the handle and the workspace at stream s.  The workspace is one
 * buffer: work queued on the previous stream may still be using it, so s
 * first waits for the event marking that work's end.  After use on the
 * legacy stream the event is recorded here, once per switch; after use on
 * any other stream it was recorded at the end of each call
 * (pygpu_blas_release), because that stream may be gone by now.  The
 * per-thread stream always waits: the same handle value may be another
 * thread's stream.  cublasSetStream resets the handle to cuBLAS's own
 * workspace, hence cublasSetWorkspace after it.
 *
 * While s is capturing a graph no event is recorded or waited for (an
 * event recorded outside the capture cannot be waited for inside it, and
 * one recorded inside cannot be used outside): nothing runs at capture
 * time, and a replay orders itself as a product does (cuda_graph.c).  The
 * next call outside the capture then waits, even on s itself, for the
 * last use before the capture. */
static int blas_bind(pygpu_blas_dev *d, cudaStream_t s, int capturing,
                     pygpu_blas_err *e)
{
    int same = d->bound && d->stream == s;
    cudaError_t err;

    if (same && s != cudaStreamPerThread &&
        (capturing || !d->wait_pending)) {
        return 0; /* the common case: nothing to do */
    }
    if (capturing) {
        if (d->bound && !same && blas_stream_is_legacy(d->stream) &&
            cudaEventRecord(d->ws_done, d->stream) != cudaSuccess) {
            (void)cudaGetLastError(); /* best effort: not the capture's */
        }
        d->wait_pending = 1;
    } else if (d->bound) {
        if (blas_stream_is_legacy(d->stream)) {
            err = cudaEventRecord(d->ws_done, d->stream);
            if (pygpu_blas_cuda_check(err, "cudaEventRecord", __FILE__,
                                      __LINE__, e) < 0) {
                return -1;
            }
        }
        err = cudaStreamWaitEvent(s, d->ws_done, 0);
        if (pygpu_blas_cuda_check(err, "cudaStreamWaitEvent", __FILE__,
                                  __LINE__, e) < 0) {
            return -1;
        }
        d->wait_pending = 0;
    }
    if (same) {
        return 0;
    }
    d->bound = 0;
    if (pygpu_blas_check(pygpu_cublas.cublasSetStream(d->handle, s),
                         "cublasSetStream", e) < 0) {
        return -1;
    }
    if (d->workspace != NULL &&
        pygpu_blas_check(pygpu_cublas.cublasSetWorkspace(
                             d->handle, d->workspace, d->workspace_size),
                         "cublasSetWorkspace", e) < 0) {
        return -1;
    }
    d->stream = s;
    d->bound = 1;
    return 0;
}

pygpu_blas_dev *pygpu_blas_acquire(int device, cudaStream_t stream,
                                   int capturing, pygpu_blas_err *e)
{
    pygpu_blas_dev *d;

    pthread_mutex_lock(&blas_mutex);
    if (device < 0 || device >= PYGPU_MAX_DEVICES) {
        pygpu_blas_cuda_check(cudaErrorInvalidDevice, "cuBLAS handle lookup",
                              __FILE__, __LINE__, e);
        return NULL;
    }
    d = &blas_devs[device];
    if (!d->ready && blas_dev_init(d, device, e) < 0) {
        return NULL;
    }
    if (blas_bind(d, stream, capturing, e) < 0) {
        return NULL;
    }
    return d;
}

void pygpu_blas_bind_for_capture(int device, cudaStream_t stream)
{
    pygpu_blas_err e = {PYGPU_BLAS_ERR_NONE, 0, NULL, NULL, 0};
    pygpu_blas_dev *d = NULL;

    if (device < 0 || device >= PYGPU_MAX_DEVICES) {
        return;
    }
    pthread_mutex_lock(&blas_mutex);
    if (blas_devs[device].ready && blas_bind(&blas_devs[device], stream, 0,
                                             &e) == 0) {
        d = &blas_devs[device];
    }
    (void)pygpu_blas_release(d, stream, 0, &e); /* unlocks */
    if (e.kind != PYGPU_BLAS_ERR_NONE) {
        (void)cudaGetLastError(); /* the capture's own binding will do */
    }
}

/* Whether device's handles and workspace exist (they never go away). */
static int blas_ready(int device)
{
    int ready;

    pthread_mutex_lock(&blas_mutex);
    ready = device >= 0 && device < PYGPU_MAX_DEVICES &&
            blas_devs[device].ready;
    pthread_mutex_unlock(&blas_mutex);
    return ready;
}

int pygpu_blas_oom_retry(int device, pygpu_blas_err *e, int *attempts)
{
    int status = e->status, cublas = e->kind == PYGPU_BLAS_ERR_CUBLAS;

    if (cublas && status == (int)CUBLAS_STATUS_EXECUTION_FAILED) {
        /* Not an allocation failure in itself.  With the CUDA error
         * behind it, that error decides; without one the context is
         * healthy and a kernel of cuBLAS failed to launch, which a kernel
         * module that could not be loaded for lack of device memory does
         * too: the one cause a second try can cure. */
        status = e->cuda_status != 0 ? e->cuda_status
                                     : (int)cudaErrorMemoryAllocation;
        cublas = 0;
    }
    if ((*attempts)++ > 0 || !pygpu_cuda_oom_retry(device, status, cublas)) {
        return 0;
    }
    e->kind = PYGPU_BLAS_ERR_NONE;
    e->cuda_status = 0;
    return 1;
}

int pygpu_blas_release(pygpu_blas_dev *d, cudaStream_t stream,
                       int capturing, pygpu_blas_err *e)
{
    if (d != NULL && capturing) {
        atomic_fetch_add(&captured_calls, 1); /* no event in a capture */
    } else if (d != NULL && d->bound && d->stream == stream &&
               !blas_stream_is_legacy(stream)) {
        /* Even after a failure: a kernel may have been queued. */
        pygpu_blas_cuda_check(cudaEventRecord(d->ws_done, stream),
                              "cudaEventRecord", __FILE__, __LINE__, e);
    }
    pthread_mutex_unlock(&blas_mutex);
    return e->kind == PYGPU_BLAS_ERR_NONE ? 0 : -1;
}

/* ------------------------------------------------------ a product's call */
int pygpu_blas_run(int device, pygpu_blas_body body, pygpu_blas_after after,
                   void *ctx)
{
    pygpu_blas_err e = {PYGPU_BLAS_ERR_NONE, 0, NULL, NULL, 0};
    pygpu_blas_dev *d;
    cudaStream_t stream;
    int prev, rc, capturing, attempts = 0;
    const char *why = NULL;

    /* Loaded already when a device was found (cuda_runtime.c's probe). */
    if (pygpu_cublas_load(&why) < 0) {
        PyErr_SetString(PyExc_RuntimeError, why);
        return -1;
    }
    prev = pygpu_cuda_device_guard(device);
    if (prev < 0) {
        return -1;
    }
    stream = (cudaStream_t)pygpu_cuda_current_stream(device);
    capturing = pygpu_cuda_captures_underway() > 0 &&
                pygpu_capture_stream_id(stream) != 0;
    /* Creating handles and the workspace (cudaMalloc) cannot be
     * captured: the first product on a device must come before. */
    if (capturing && !blas_ready(device) &&
        pygpu_cuda_capture_refuse(
            device, stream, PYGPU_CAPTURE_ON_STREAM,
            "the first matrix product on a device, which creates its cuBLAS "
            "handles and workspace,") < 0) {
        pygpu_cuda_device_restore(device, prev);
        return -1;
    }
    do { /* twice at most: see pygpu_blas_oom_retry */
        d = pygpu_blas_acquire(device, stream, capturing, &e);
        if (d != NULL) {
            body(d, stream, ctx, &e);
            pygpu_blas_explain(&e, stream);
        }
        rc = pygpu_blas_release(d, stream, capturing, &e);
    } while (rc < 0 && pygpu_blas_oom_retry(device, &e, &attempts));
    rc = rc < 0 ? pygpu_blas_raise(&e) : 0;
    if (rc == 0 && after != NULL) {
        rc = after(device, stream, ctx);
    }
    pygpu_cuda_device_restore(device, prev);
    return rc;
}

int pygpu_blas_plan(int dtype, int allow_tf32, const pygpu_mat *a,
                    const pygpu_mat *b, int64_t batch, const char *dtype_op,
                    const char *layout_op, int *tf32, int *kind,
                    pygpu_gemm_plan *p)
{
    cudaDataType_t type, scale;
    cublasComputeType_t compute;

    *tf32 = dtype == PYGPU_FLOAT32 && allow_tf32;
    if (pygpu_blas_types(dtype, *tf32, &type, &compute, &scale) < 0) {
        return pygpu_blas_raise_dtype(dtype_op, dtype);
    }
    *kind = pygpu_gemm_plan_make(a, b, batch, p);
    if (*kind < 0) {
        return pygpu_blas_raise_layout(layout_op, *kind, a, b);
    }
    return *kind != PYGPU_GEMM_NOOP;
}

/* ---------------------------------------------------------------- matmul */
typedef struct matmul_call {
    int dtype, tf32, kind;
    const pygpu_gemm_plan *p;
    void *c;
} matmul_call;

static void matmul_body(pygpu_blas_dev *d, cudaStream_t stream, void *ctx,
                        pygpu_blas_err *e)
{
    matmul_call *m = ctx;

    pygpu_blas_gemm(d, m->dtype, m->tf32, m->kind, m->p, m->c, 0, 0, stream,
                    e);
}

int pygpu_cuda_matmul(int dtype, int device, void *c, const pygpu_mat *a,
                      const pygpu_mat *b, int64_t batch, int allow_tf32)
{
    pygpu_gemm_plan p;
    matmul_call m = {dtype, 0, 0, &p, c};
    int r;

    r = pygpu_blas_plan(dtype, allow_tf32, a, b, batch,
                        batch > 1 ? "bmm_cuda" : "addmm_cuda", "matmul",
                        &m.tf32, &m.kind, &p);
    if (r <= 0) {
        return r;
    }
    return pygpu_blas_run(device, matmul_body, NULL, &m);
}
