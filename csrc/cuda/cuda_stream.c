/* cuda_stream.c - CUDA streams: the calling thread's current stream per
 * device, a pool of streams per device (as torch's: created on first use,
 * never destroyed, handed out round-robin), ordering one stream after
 * another, and the module functions behind pygpu.cuda.Stream.
 *
 * A pygpu.cuda.Stream is a (device, cudaStream_t) pair: the pool's streams
 * outlive every Stream object, so a stream left current by a thread never
 * dangles.  Pool streams are created with cudaStreamNonBlocking, as
 * torch's: they do not wait for the legacy default stream, and pygpu's
 * copies and kernels run on the current stream. */
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "cuda/stream_docs.h"
#include "cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>

PYGPU_STREAM_FUNCTION_LIST(PYGPU_STREAM_DECLARE)

#define POOL_SIZE 32 /* streams per device and priority, as torch */

/* The calling thread's current stream per device (NULL: legacy default). */
static _Thread_local void *thread_streams[PYGPU_MAX_DEVICES];

/* The pool: [device][0 low priority, 1 high priority][slot].  Filled under
 * pool_lock, read under it too (creation is rare). */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaStream_t pool[PYGPU_MAX_DEVICES][2][POOL_SIZE];
static int pool_ready[PYGPU_MAX_DEVICES][2];
static atomic_uint pool_next[PYGPU_MAX_DEVICES][2];

void *
pygpu_cuda_thread_stream(int device)
{
    if (device < 0 || device >= PYGPU_MAX_DEVICES) {
        return NULL;
    }
    return thread_streams[device];
}

/* The legacy default stream has three names: NULL, 0 and 1. */
static cudaStream_t
canonical(void *s)
{
    return s == NULL ? cudaStreamLegacy : (cudaStream_t)s;
}

int
pygpu_cuda_nargs(const char *name, Py_ssize_t nargs, Py_ssize_t n)
{
    if (nargs != n) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes exactly %zd arguments (%zd given)", name, n,
                     nargs);
        return -1;
    }
    return 0;
}

int
pygpu_cuda_device_arg(PyObject *arg, int *device)
{
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (pygpu_cuda_require() < 0) {
        return -1;
    }
    if (v < 0 || v >= pygpu_cuda_device_count() ||
        v >= PYGPU_MAX_DEVICES) {
        PyErr_Format(PyExc_RuntimeError,
                     "CUDA error: invalid device ordinal (device %ld, %d "
                     "available)", v, pygpu_cuda_device_count());
        return -1;
    }
    *device = (int)v;
    return 0;
}

int
pygpu_cuda_handle_arg(PyObject *arg, void **handle)
{
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "expected an int handle, got %.100s",
                     Py_TYPE(arg)->tp_name);
        return -1;
    }
    *handle = PyLong_AsVoidPtr(arg);
    return *handle == NULL && PyErr_Occurred() ? -1 : 0;
}

int
pygpu_cuda_stream_order(int device, void *before, void *after)
{
    cudaEvent_t ev = NULL;
    cudaError_t err;
    int prev;
    if (canonical(before) == canonical(after)) {
        return 0;
    }
    /* An event recorded outside a capture cannot be waited for inside it,
     * nor one recorded inside waited for outside. */
    if (pygpu_cuda_capture_refuse(device, before, PYGPU_CAPTURE_ON_STREAM,
                                  "ordering two streams for an exchange "
                                  "(DLPack, the CUDA Array Interface)") <
            0 ||
        pygpu_cuda_capture_refuse(device, after, PYGPU_CAPTURE_ON_STREAM,
                                  "ordering two streams for an exchange "
                                  "(DLPack, the CUDA Array Interface)") <
            0) {
        return -1;
    }
    prev = pygpu_cuda_device_guard(device);
    if (prev < 0) {
        return -1;
    }
    err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err == cudaSuccess) {
        err = cudaEventRecord(ev, canonical(before));
    }
    if (err == cudaSuccess) {
        err = cudaStreamWaitEvent(canonical(after), ev, 0);
    }
    if (ev != NULL) {
        (void)cudaEventDestroy(ev); /* freed once the wait is done */
    }
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        pygpu_cuda_raise((int)err, "cudaStreamWaitEvent", __FILE__,
                         __LINE__);
        return -1;
    }
    return 0;
}

/* Create the pool of `device` for one priority class; under pool_lock. */
static cudaError_t
fill_pool(int device, int high)
{
    int least, greatest, prev;
    cudaError_t err = (cudaError_t)pygpu_cuda_enter_device(device, &prev);
    if (err != cudaSuccess) {
        return err;
    }
    err = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    for (int i = 0; i < POOL_SIZE && err == cudaSuccess; i++) {
        err = cudaStreamCreateWithPriority(&pool[device][high][i],
                                           cudaStreamNonBlocking,
                                           high ? greatest : least);
    }
    pygpu_cuda_leave_device(device, prev);
    if (err == cudaSuccess) {
        pool_ready[device][high] = 1;
    }
    return err;
}

/* _cuda_stream_new(device, priority): a stream from the pool. */
PyObject *
pygpu_py_cuda_stream_new(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int device, high;
    long priority;
    cudaError_t err = cudaSuccess;
    cudaStream_t s = NULL;
    if (pygpu_cuda_nargs("_cuda_stream_new", nargs, 2) < 0 ||
        pygpu_cuda_device_arg(args[0], &device) < 0) {
        return NULL;
    }
    priority = PyLong_AsLong(args[1]);
    if (priority == -1 && PyErr_Occurred()) {
        return NULL;
    }
    high = priority < 0; /* lower numbers are higher priorities */
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&pool_lock);
    if (!pool_ready[device][high]) {
        err = fill_pool(device, high);
    }
    if (err == cudaSuccess) {
        unsigned i = atomic_fetch_add(&pool_next[device][high], 1);
        s = pool[device][high][i % POOL_SIZE];
    }
    pthread_mutex_unlock(&pool_lock);
    Py_END_ALLOW_THREADS
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaStreamCreateWithPriority",
                                __FILE__, __LINE__);
    }
    return PyLong_FromVoidPtr(s);
}

PyObject *
pygpu_py_cuda_current_stream(PyObject *m, PyObject *const *args,
                             Py_ssize_t nargs)
{
    int device;
    if (pygpu_cuda_nargs("_cuda_current_stream", nargs, 1) < 0 ||
        pygpu_cuda_device_arg(args[0], &device) < 0) {
        return NULL;
    }
    return PyLong_FromVoidPtr(thread_streams[device]);
}

PyObject *
pygpu_py_cuda_set_stream(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int device;
    void *s;
    if (pygpu_cuda_nargs("_cuda_set_stream", nargs, 2) < 0 ||
        pygpu_cuda_device_arg(args[0], &device) < 0 ||
        pygpu_cuda_handle_arg(args[1], &s) < 0) {
        return NULL;
    }
    /* the legacy default stream is kept as NULL, whatever its name */
    thread_streams[device] = canonical(s) == cudaStreamLegacy ? NULL : s;
    Py_RETURN_NONE;
}

/* Parse (device, handle) and make the device current: the previous device
 * for pygpu_cuda_device_restore, or -1 with an exception. */
static int
enter(const char *name, PyObject *const *args, Py_ssize_t nargs, int n,
      int *device, void **s)
{
    if (pygpu_cuda_nargs(name, nargs, n) < 0 ||
        pygpu_cuda_device_arg(args[0], device) < 0 ||
        pygpu_cuda_handle_arg(args[1], s) < 0) {
        return -1;
    }
    return pygpu_cuda_device_guard(*device);
}

PyObject *
pygpu_py_cuda_stream_query(PyObject *m, PyObject *const *args,
                           Py_ssize_t nargs)
{
    int device, prev;
    void *s;
    cudaError_t err;
    if ((prev = enter("_cuda_stream_query", args, nargs, 2, &device, &s)) <
        0) {
        return NULL;
    }
    if (pygpu_cuda_capture_refuse(device, s, PYGPU_CAPTURE_ON_STREAM,
                                  "Stream.query() of a capturing stream") <
        0) {
        pygpu_cuda_device_restore(device, prev);
        return NULL;
    }
    err = cudaStreamQuery(canonical(s));
    pygpu_cuda_device_restore(device, prev);
    if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        Py_RETURN_FALSE;
    }
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaStreamQuery", __FILE__,
                                __LINE__);
    }
    Py_RETURN_TRUE;
}

PyObject *
pygpu_py_cuda_stream_synchronize(PyObject *m, PyObject *const *args,
                                 Py_ssize_t nargs)
{
    int device, prev;
    void *s;
    cudaError_t err;
    if ((prev = enter("_cuda_stream_synchronize", args, nargs, 2, &device,
                      &s)) < 0) {
        return NULL;
    }
    if (pygpu_cuda_capture_refuse(device, s, PYGPU_CAPTURE_WAITS,
                                  "Stream.synchronize()") < 0) {
        pygpu_cuda_device_restore(device, prev);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = cudaStreamSynchronize(canonical(s));
    Py_END_ALLOW_THREADS
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaStreamSynchronize", __FILE__,
                                __LINE__);
    }
    Py_RETURN_NONE;
}

PyObject *
pygpu_py_cuda_stream_wait_event(PyObject *m, PyObject *const *args,
                                Py_ssize_t nargs)
{
    int device, prev;
    void *s, *ev;
    cudaError_t err;
    if ((prev = enter("_cuda_stream_wait_event", args, nargs, 3, &device,
                      &s)) < 0) {
        return NULL;
    }
    if (pygpu_cuda_handle_arg(args[2], &ev) < 0) {
        pygpu_cuda_device_restore(device, prev);
        return NULL;
    }
    err = cudaStreamWaitEvent(canonical(s), (cudaEvent_t)ev, 0);
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaStreamWaitEvent", __FILE__,
                                __LINE__);
    }
    Py_RETURN_NONE;
}

PyObject *
pygpu_py_cuda_stream_priority(PyObject *m, PyObject *const *args,
                              Py_ssize_t nargs)
{
    int device, prev, priority = 0;
    void *s;
    cudaError_t err;
    if ((prev = enter("_cuda_stream_priority", args, nargs, 2, &device,
                      &s)) < 0) {
        return NULL;
    }
    err = cudaStreamGetPriority(canonical(s), &priority);
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaStreamGetPriority", __FILE__,
                                __LINE__);
    }
    return PyLong_FromLong(priority);
}

PyObject *
pygpu_py_cuda_stream_priority_range(PyObject *m, PyObject *const *args,
                                    Py_ssize_t nargs)
{
    int least, greatest;
    cudaError_t err;
    if (pygpu_cuda_nargs("_cuda_stream_priority_range", nargs, 0) < 0 ||
        pygpu_cuda_require() < 0) {
        return NULL;
    }
    err = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaDeviceGetStreamPriorityRange",
                                __FILE__, __LINE__);
    }
    return Py_BuildValue("(ii)", least, greatest);
}

int
pygpu_cuda_pointer_device(const void *ptr, int *device)
{
    struct cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
    if (err != cudaSuccess) {
        pygpu_cuda_raise((int)err, "cudaPointerGetAttributes", __FILE__,
                         __LINE__);
        return -1;
    }
    if (attr.type != cudaMemoryTypeDevice &&
        attr.type != cudaMemoryTypeManaged) {
        PyErr_Format(PyExc_ValueError,
                     "pointer %p is not CUDA device memory", ptr);
        return -1;
    }
    *device = attr.device;
    return 0;
}

PyMethodDef pygpu_stream_functions[] = {
    PYGPU_STREAM_FUNCTION_LIST(PYGPU_STREAM_ROW)
    {NULL},
};
