/* cuda_graph.c - CUDA graphs for pygpu.cuda.CUDAGraph: capture the work
 * queued on the current stream (cudaStreamBeginCapture ..
 * cudaStreamEndCapture), instantiate it once, replay it with one
 * cudaGraphLaunch, and reset.
 *
 * A graph is a capsule holding a struct graph.  While it captures, the
 * device's caching allocator serves the capture stream (and streams joined
 * to the capture) from the graph's private pool: the capture's id is the
 * route (memory/allocator.h), so the addresses the graph recorded are
 * never handed to other work, and they stay reserved after the tensors
 * die, until the graph is reset (with every graph sharing the pool).
 * After capture only the executable graph is kept (the cudaGraph_t is
 * destroyed once instantiated, as PyTorch does).  A graph whose capture
 * recorded cuBLAS products replays ordered with the other users of the
 * device's one cuBLAS workspace (pygpu_blas_run), as a product would.
 */
#include "memory/memory.h"
#include "cuda/cuda_blas_internal.h"
#include "cuda/cuda_graph.h"
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "cuda/stream_docs.h"

#include <stdatomic.h>
#include <string.h>

PYGPU_STREAM_FUNCTION_LIST(PYGPU_STREAM_DECLARE)

#define CAPSULE "pygpu.cuda_graph"

typedef struct graph {
    int device;
    cudaStream_t stream;           /* where it was captured */
    unsigned long long capture_id; /* while capturing */
    int capturing;
    uint64_t pool;                 /* its private pool's id */
    int holds_pool;                /* from capture_begin until reset */
    pygpu_allocator *alloc;        /* the device's (lives as the process) */
    unsigned long blas_mark;       /* pygpu_blas_captured_calls at begin */
    int uses_blas;
    cudaGraphExec_t exec;          /* after a successful capture */
} graph;

/* Ids of private pools: graph_pool_handle() and graphs' own pools. */
static atomic_ulong next_pool_id = 1;

static graph *
graph_arg(PyObject *obj)
{
    return PyCapsule_GetPointer(obj, CAPSULE); /* TypeError when not one */
}

/* Stop a capture that will not be kept (a failed capture_end's cleanup,
 * a reset during capture): end it, drop what it recorded, close the
 * route.  Errors are cleared: the state must end up clean whatever. */
static void
end_and_discard(int device, cudaStream_t stream)
{
    cudaGraph_t cg = NULL;
    int prev = device;
    if (cudaGetDevice(&prev) != cudaSuccess) {
        prev = device;
    }
    if (prev == device || cudaSetDevice(device) == cudaSuccess) {
        if (cudaStreamEndCapture(stream, &cg) == cudaSuccess && cg != NULL) {
            (void)cudaGraphDestroy(cg);
        }
        if (prev != device) {
            (void)cudaSetDevice(prev);
        }
    }
    (void)cudaGetLastError();
}

static void
abandon_capture(graph *g)
{
    if (!g->capturing) {
        return;
    }
    end_and_discard(g->device, g->stream);
    (void)pygpu_capture_unregister(g->capture_id, NULL, 0);
    pygpu_allocator_end_pool(g->alloc, g->capture_id);
    g->capturing = 0;
}

/* Back to a new graph's state: no capture, no executable, no pool held. */
static void
graph_clear(graph *g)
{
    abandon_capture(g);
    if (g->exec != NULL) {
        (void)cudaGraphExecDestroy(g->exec);
        (void)cudaGetLastError();
        g->exec = NULL;
    }
    if (g->holds_pool) {
        (void)pygpu_allocator_release_pool(g->alloc, g->pool);
        g->holds_pool = 0;
    }
}

static void
graph_capsule_free(PyObject *capsule)
{
    graph *g = PyCapsule_GetPointer(capsule, CAPSULE);
    if (g != NULL) {
        graph_clear(g);
        PyMem_RawFree(g);
    }
    else {
        PyErr_Clear();
    }
}

/* _cuda_graph_new(): an empty graph. */
PyObject *
pygpu_py_cuda_graph_new(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    graph *g;
    PyObject *capsule;
    if (pygpu_cuda_nargs("_cuda_graph_new", nargs, 0) < 0 ||
        pygpu_cuda_require() < 0) {
        return NULL;
    }
    g = PyMem_RawCalloc(1, sizeof(*g));
    if (g == NULL) {
        return pygpu_raise_no_memory("a CUDA graph", sizeof(*g));
    }
    capsule = PyCapsule_New(g, CAPSULE, graph_capsule_free);
    if (capsule == NULL) {
        PyMem_RawFree(g);
    }
    return capsule;
}

/* _cuda_graph_pool_handle(): a new private pool id. */
PyObject *
pygpu_py_cuda_graph_pool_handle(PyObject *m, PyObject *const *args,
                                Py_ssize_t nargs)
{
    if (pygpu_cuda_nargs("_cuda_graph_pool_handle", nargs, 0) < 0 ||
        pygpu_cuda_require() < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLong(atomic_fetch_add(&next_pool_id, 1));
}

/* Begin capture sequence on g->stream and enter it everywhere it must be
 * known (the registry, the allocator's route).  0, or -1 with an
 * exception and nothing left behind. */
static int
begin(graph *g, int mode)
{
    cudaError_t err;
    int prev = pygpu_cuda_device_guard(g->device);
    if (prev < 0) {
        return -1;
    }
    err = cudaStreamBeginCapture(g->stream, (enum cudaStreamCaptureMode)mode);
    if (err != cudaSuccess) {
        pygpu_cuda_device_restore(g->device, prev);
        pygpu_cuda_raise((int)err, "cudaStreamBeginCapture", __FILE__,
                         __LINE__);
        return -1;
    }
    g->capture_id = pygpu_capture_stream_id(g->stream);
    g->capturing = 1;
    if (g->capture_id == 0) {
        abandon_capture(g);
        pygpu_cuda_device_restore(g->device, prev);
        PyErr_SetString(PyExc_RuntimeError,
                        "CUDA graph capture began but its capture id could "
                        "not be read (cudaStreamGetCaptureInfo)");
        return -1;
    }
    if (pygpu_capture_register(g->device, g->stream, g->capture_id, mode) <
        0) {
        abandon_capture(g);
        pygpu_cuda_device_restore(g->device, prev);
        return -1;
    }
    if (pygpu_allocator_begin_pool(g->alloc, g->pool, g->capture_id) !=
        PYGPU_ALLOC_OK) {
        abandon_capture(g);
        pygpu_cuda_device_restore(g->device, prev);
        PyErr_SetString(PyExc_RuntimeError,
                        "CUDA graph capture: the allocator could not open "
                        "the graph's private pool");
        return -1;
    }
    g->holds_pool = 1;
    pygpu_cuda_device_restore(g->device, prev);
    return 0;
}

/* _cuda_graph_capture_begin(graph, pool, mode): begin capturing the
 * current stream's work into graph, its memory from private pool `pool`
 * (0: a new one); returns the pool's id. */
PyObject *
pygpu_py_cuda_graph_capture_begin(PyObject *m, PyObject *const *args,
                                  Py_ssize_t nargs)
{
    graph *g;
    unsigned long long pool;
    long mode;
    AllocatorObject *a;
    if (pygpu_cuda_nargs("_cuda_graph_capture_begin", nargs, 3) < 0 ||
        (g = graph_arg(args[0])) == NULL) {
        return NULL;
    }
    pool = PyLong_AsUnsignedLongLong(args[1]);
    if (pool == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    mode = PyLong_AsLong(args[2]);
    if (mode == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (mode != cudaStreamCaptureModeGlobal &&
        mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed) {
        PyErr_Format(PyExc_ValueError, "invalid capture mode %ld", mode);
        return NULL;
    }
    if (g->capturing || g->exec != NULL || g->holds_pool) {
        PyErr_SetString(PyExc_RuntimeError,
                        "This CUDAGraph instance already owns a captured "
                        "graph. To capture a new graph, create a new "
                        "instance.");
        return NULL;
    }
    if (pygpu_cuda_current_device(&g->device) < 0) {
        return NULL;
    }
    g->stream = (cudaStream_t)pygpu_cuda_current_stream(g->device);
    if (g->stream == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "CUDA graphs must be captured on a non-default "
                        "stream. (However, after capture, it's ok to replay "
                        "them on the default stream.)");
        return NULL;
    }
    if (pygpu_capture_stream_id(g->stream) != 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Cannot begin a CUDA graph capture on a stream that "
                        "is already capturing");
        return NULL;
    }
    /* Everything that allocates or creates comes before the capture. */
    a = pygpu_cuda_allocator(g->device);
    if (a == NULL) {
        return NULL;
    }
    g->alloc = a->alloc;
    g->pool = pool != 0 ? (uint64_t)pool
                        : (uint64_t)atomic_fetch_add(&next_pool_id, 1);
    g->blas_mark = pygpu_blas_captured_calls();
    pygpu_blas_bind_for_capture(g->device, g->stream);
    if (begin(g, (int)mode) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)g->pool);
}

/* Raise capture_end's error: a refusal that invalidated the capture, or
 * the failing call. */
static PyObject *
end_failed(int invalidated, const char *why, cudaError_t err,
           const char *call)
{
    if (invalidated) {
        PyErr_Format(PyExc_RuntimeError,
                     "CUDA graph capture was invalidated and is discarded: "
                     "%s cannot be captured", why);
        return NULL;
    }
    return pygpu_cuda_raise((int)err, call, __FILE__, __LINE__);
}

static int
graph_is_empty(cudaGraph_t cg)
{
    size_t n = 0;
    if (cudaGraphGetNodes(cg, NULL, &n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n == 0;
}

/* _cuda_graph_capture_end(graph): end the capture, instantiate it. */
PyObject *
pygpu_py_cuda_graph_capture_end(PyObject *m, PyObject *const *args,
                                Py_ssize_t nargs)
{
    graph *g;
    cudaGraph_t cg = NULL;
    cudaError_t err;
    char why[320] = "";
    int prev, invalidated;
    if (pygpu_cuda_nargs("_cuda_graph_capture_end", nargs, 1) < 0 ||
        (g = graph_arg(args[0])) == NULL) {
        return NULL;
    }
    if (!g->capturing) {
        PyErr_SetString(PyExc_RuntimeError,
                        "capture_end() called without a capture_begin() "
                        "on this CUDAGraph");
        return NULL;
    }
    if ((cudaStream_t)pygpu_cuda_current_stream(g->device) != g->stream) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Capture must end on the same stream it began on.");
        return NULL;
    }
    prev = pygpu_cuda_device_guard(g->device);
    if (prev < 0) {
        return NULL;
    }
    err = cudaStreamEndCapture(g->stream, &cg);
    invalidated = pygpu_capture_unregister(g->capture_id, why, sizeof(why));
    pygpu_allocator_end_pool(g->alloc, g->capture_id);
    g->capturing = 0;
    if (err != cudaSuccess || invalidated) {
        if (cg != NULL) {
            (void)cudaGraphDestroy(cg);
        }
        pygpu_cuda_device_restore(g->device, prev);
        graph_clear(g); /* nothing kept: the graph can capture again */
        return end_failed(invalidated, why, err, "cudaStreamEndCapture");
    }
    if (graph_is_empty(cg) &&
        PyErr_WarnEx(PyExc_UserWarning,
                     "The CUDA Graph is empty. This usually means that the "
                     "graph was attempted to be captured on wrong device or "
                     "stream.", 1) < 0) {
        (void)cudaGraphDestroy(cg);
        pygpu_cuda_device_restore(g->device, prev);
        graph_clear(g);
        return NULL;
    }
    err = cudaGraphInstantiateWithFlags(&g->exec, cg, 0);
    (void)cudaGraphDestroy(cg); /* the executable is all replays need */
    if (err == cudaSuccess) {
        /* the first replay need not upload it */
        err = cudaGraphUpload(g->exec, g->stream);
        if (err != cudaSuccess) {
            (void)cudaGraphExecDestroy(g->exec);
            g->exec = NULL;
        }
    }
    else {
        g->exec = NULL;
    }
    pygpu_cuda_device_restore(g->device, prev);
    if (err != cudaSuccess) {
        graph_clear(g);
        return pygpu_cuda_raise((int)err,
                                "cudaGraphInstantiateWithFlags / "
                                "cudaGraphUpload",
                                __FILE__, __LINE__);
    }
    g->uses_blas = pygpu_blas_captured_calls() != g->blas_mark;
    Py_RETURN_NONE;
}

/* The replay as a product's body: on the stream the workspace is bound
 * to, under the cuBLAS mutex. */
static void
launch_body(pygpu_blas_dev *d, cudaStream_t stream, void *ctx,
            pygpu_blas_err *e)
{
    graph *g = ctx;
    (void)d;
    pygpu_blas_cuda_check(cudaGraphLaunch(g->exec, stream), "cudaGraphLaunch",
                          __FILE__, __LINE__, e);
}

/* _cuda_graph_replay(graph): launch it on the current stream. */
PyObject *
pygpu_py_cuda_graph_replay(PyObject *m, PyObject *const *args,
                           Py_ssize_t nargs)
{
    graph *g;
    cudaError_t err;
    int prev;
    if (pygpu_cuda_nargs("_cuda_graph_replay", nargs, 1) < 0 ||
        (g = graph_arg(args[0])) == NULL) {
        return NULL;
    }
    if (g->exec == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Called CUDAGraph::replay without a preceding "
                        "successful capture.");
        return NULL;
    }
    if (g->uses_blas) {
        if (pygpu_blas_run(g->device, launch_body, NULL, g) < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    prev = pygpu_cuda_device_guard(g->device);
    if (prev < 0) {
        return NULL;
    }
    err = cudaGraphLaunch(g->exec,
                          (cudaStream_t)pygpu_cuda_current_stream(g->device));
    pygpu_cuda_device_restore(g->device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaGraphLaunch", __FILE__,
                                __LINE__);
    }
    Py_RETURN_NONE;
}

/* _cuda_graph_reset(graph): drop the capture or executable and let go of
 * the private pool; the graph can capture again. */
PyObject *
pygpu_py_cuda_graph_reset(PyObject *m, PyObject *const *args,
                          Py_ssize_t nargs)
{
    graph *g;
    if (pygpu_cuda_nargs("_cuda_graph_reset", nargs, 1) < 0 ||
        (g = graph_arg(args[0])) == NULL) {
        return NULL;
    }
    graph_clear(g);
    g->uses_blas = 0;
    Py_RETURN_NONE;
}
