/* cuda_capture.c - the captures pygpu has underway, and the checks that
 * keep what cannot be captured out of them.
 *
 * A capture sequence (cudaStreamBeginCapture .. cudaStreamEndCapture)
 * records work instead of running it.  Anything that waits for the GPU
 * from the host (a stream or device synchronize, a copy to the host for
 * .item() or .cpu()), or that would record something a replay cannot
 * repeat, must not run inside one: CUDA refuses such calls and
 * invalidates the capture, or (a copy from pageable memory, a random
 * number's host-side offset) records a graph that replays wrongly.  So
 * those paths ask pygpu_cuda_capture_refuse first (the device runtime's
 * hook: pygpu_capture_refuse here), which raises before any CUDA call and
 * marks the captures concerned invalidated; capture_end then discards
 * them and says why.  Which captures a call concerns follows
 * CUDA's capture modes: a capture on the call's stream; for a wait, also
 * every capture in the global mode (PyTorch's default) and those in the
 * thread-local mode begun by the calling thread.
 *
 * The registry is a small table under a mutex; `underway` counts its
 * entries so that every check is one atomic read when nothing is being
 * captured.
 */
#include "cuda/cuda_graph.h"
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "cuda/stream_docs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

PYGPU_STREAM_FUNCTION_LIST(PYGPU_STREAM_DECLARE)

#define MAX_CAPTURES 64

typedef struct capture_entry {
    int used;
    unsigned long long id;
    cudaStream_t stream;
    int device;
    int mode;         /* cudaStreamCaptureMode */
    pthread_t thread; /* the thread that began it */
    int invalidated;
    char why[320];    /* the first refusal that concerned it */
} capture_entry;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static capture_entry registry[MAX_CAPTURES]; /* under registry_lock */
static atomic_int underway;

int
pygpu_capture_underway(void)
{
    return atomic_load_explicit(&underway, memory_order_relaxed);
}

unsigned long long
pygpu_capture_stream_id(cudaStream_t stream)
{
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaError_t err;
    if (stream == NULL || stream == cudaStreamLegacy) {
        return 0;
    }
#if CUDART_VERSION >= 13000
    err = cudaStreamGetCaptureInfo(stream, &status, &id, NULL, NULL, NULL,
                                   NULL);
#elif CUDART_VERSION >= 12000
    err = cudaStreamGetCaptureInfo(stream, &status, &id, NULL, NULL, NULL);
#else
    err = cudaStreamGetCaptureInfo_v2(stream, &status, &id, NULL, NULL,
                                      NULL);
#endif
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return status == cudaStreamCaptureStatusActive ? id : 0;
}

uint64_t
pygpu_capture_route(int device, void *stream)
{
    (void)device;
    if (pygpu_capture_underway() == 0) {
        return 0;
    }
    return (uint64_t)pygpu_capture_stream_id((cudaStream_t)stream);
}

int
pygpu_capture_register(int device, cudaStream_t stream, unsigned long long id,
                       int mode)
{
    int i;
    pthread_mutex_lock(&registry_lock);
    for (i = 0; i < MAX_CAPTURES && registry[i].used; i++) {
    }
    if (i == MAX_CAPTURES) {
        pthread_mutex_unlock(&registry_lock);
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu: at most %d CUDA graph captures can be underway "
                     "at once", MAX_CAPTURES);
        return -1;
    }
    memset(&registry[i], 0, sizeof(registry[i]));
    registry[i].used = 1;
    registry[i].id = id;
    registry[i].stream = stream;
    registry[i].device = device;
    registry[i].mode = mode;
    registry[i].thread = pthread_self();
    atomic_fetch_add(&underway, 1);
    pthread_mutex_unlock(&registry_lock);
    return 0;
}

int
pygpu_capture_unregister(unsigned long long id, char *why, size_t n)
{
    int invalidated = 0;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_CAPTURES; i++) {
        if (registry[i].used && registry[i].id == id) {
            invalidated = registry[i].invalidated;
            if (invalidated && why != NULL && n > 0) {
                snprintf(why, n, "%s", registry[i].why);
            }
            registry[i].used = 0;
            atomic_fetch_sub(&underway, 1);
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return invalidated;
}

/* Whether a call of `kind` on `stream` (capture sequence sid, 0: none) of
 * `device`, from this thread, would break capture e. */
static int
concerns(const capture_entry *e, unsigned long long sid, int device, int kind)
{
    if (sid != 0 && e->id == sid) {
        return 1;
    }
    if (kind == PYGPU_CAPTURE_ON_STREAM) {
        return 0;
    }
    if (e->mode == cudaStreamCaptureModeGlobal ||
        (e->mode == cudaStreamCaptureModeThreadLocal &&
         pthread_equal(e->thread, pthread_self()))) {
        return 1;
    }
    return kind == PYGPU_CAPTURE_WAITS_DEVICE && e->device == device;
}

int
pygpu_capture_refuse(int device, void *stream, int kind,
                     const char *what)
{
    unsigned long long sid;
    int hit = 0;
    if (pygpu_capture_underway() == 0) {
        return 0;
    }
    sid = pygpu_capture_stream_id((cudaStream_t)stream);
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < MAX_CAPTURES; i++) {
        capture_entry *e = &registry[i];
        if (!e->used || !concerns(e, sid, device, kind)) {
            continue;
        }
        hit = 1;
        if (!e->invalidated) {
            e->invalidated = 1;
            snprintf(e->why, sizeof(e->why), "%s", what);
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (!hit) {
        return 0;
    }
    return pygpu_raise_cuda_error(
        (long)cudaErrorStreamCaptureUnsupported,
        "cudaErrorStreamCaptureUnsupported",
        "CUDA error: operation not permitted when stream is capturing: %s "
        "cannot run while a CUDA graph is being captured%s. The capture is "
        "invalidated (capture_end() discards it and raises); do this before "
        "or after capturing.",
        what,
        kind == PYGPU_CAPTURE_ON_STREAM ? "" : " (it waits for the GPU)");
}

/* _cuda_is_current_stream_capturing(device): whether the calling thread's
 * current stream on `device` is capturing (by pygpu or anyone else). */
PyObject *
pygpu_py_cuda_is_current_stream_capturing(PyObject *m,
                                          PyObject *const *args,
                                          Py_ssize_t nargs)
{
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaStream_t stream;
    cudaError_t err;
    int device, prev;
    if (pygpu_cuda_nargs("_cuda_is_current_stream_capturing", nargs, 1) <
            0 ||
        pygpu_cuda_device_arg(args[0], &device) < 0) {
        return NULL;
    }
    stream = (cudaStream_t)pygpu_cuda_current_stream(device);
    if (stream == NULL) {
        Py_RETURN_FALSE; /* the legacy default stream cannot capture */
    }
    prev = pygpu_cuda_device_guard(device);
    if (prev < 0) {
        return NULL;
    }
    err = cudaStreamIsCapturing(stream, &status);
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaStreamIsCapturing", __FILE__,
                                __LINE__);
    }
    return PyBool_FromLong(status != cudaStreamCaptureStatusNone);
}
