/* cuda_event.c - CUDA events for pygpu.cuda.Event: created on a device
 * (the Python object creates its event lazily, at the first record, as
 * torch's), recorded on a stream, queried, waited for, timed, and shared
 * with other processes (interprocess events, through IPC handles). */
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "cuda/stream_docs.h"

#include <cuda_runtime_api.h>
#include <string.h>

enum { TIMING = 1, BLOCKING = 2, INTERPROCESS = 4 };

/* (device, event[, extra...]): the event handle and the device made
 * current (the previous one, or -1 with an exception). */
static int
enter(const char *name, PyObject *const *args, Py_ssize_t nargs, int n,
      int *device, void **ev)
{
    if (pygpu_cuda_nargs(name, nargs, n) < 0 ||
        pygpu_cuda_device_arg(args[0], device) < 0 ||
        pygpu_cuda_handle_arg(args[1], ev) < 0) {
        return -1;
    }
    return pygpu_cuda_device_guard(*device);
}

static PyObject *
done(int device, int prev, cudaError_t err, const char *call)
{
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, call, __FILE__, __LINE__);
    }
    Py_RETURN_NONE;
}

PyObject *
pygpu_py_cuda_event_new(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int device, prev;
    long flags;
    unsigned int cuda_flags = 0;
    cudaEvent_t ev = NULL;
    cudaError_t err;
    if (pygpu_cuda_nargs("_cuda_event_new", nargs, 2) < 0 ||
        pygpu_cuda_device_arg(args[0], &device) < 0) {
        return NULL;
    }
    flags = PyLong_AsLong(args[1]);
    if (flags == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!(flags & TIMING)) {
        cuda_flags |= cudaEventDisableTiming;
    }
    if (flags & BLOCKING) {
        cuda_flags |= cudaEventBlockingSync;
    }
    if (flags & INTERPROCESS) {
        /* with TIMING too, CUDA refuses (invalid argument), as in torch */
        cuda_flags |= cudaEventInterprocess;
    }
    prev = pygpu_cuda_device_guard(device);
    if (prev < 0) {
        return NULL;
    }
    err = cudaEventCreateWithFlags(&ev, cuda_flags);
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaEventCreateWithFlags",
                                __FILE__, __LINE__);
    }
    return PyLong_FromVoidPtr(ev);
}

PyObject *
pygpu_py_cuda_event_destroy(PyObject *m, PyObject *const *args,
                            Py_ssize_t nargs)
{
    int device, prev;
    void *ev;
    if ((prev = enter("_cuda_event_destroy", args, nargs, 2, &device, &ev)) <
        0) {
        return NULL;
    }
    return done(device, prev, cudaEventDestroy((cudaEvent_t)ev),
                "cudaEventDestroy");
}

PyObject *
pygpu_py_cuda_event_record(PyObject *m, PyObject *const *args,
                           Py_ssize_t nargs)
{
    int device, prev;
    void *ev, *s;
    if ((prev = enter("_cuda_event_record", args, nargs, 3, &device, &ev)) <
        0) {
        return NULL;
    }
    if (pygpu_cuda_handle_arg(args[2], &s) < 0) {
        pygpu_cuda_device_restore(device, prev);
        return NULL;
    }
    return done(device, prev, cudaEventRecord((cudaEvent_t)ev,
                                              (cudaStream_t)s),
                "cudaEventRecord");
}

PyObject *
pygpu_py_cuda_event_query(PyObject *m, PyObject *const *args,
                          Py_ssize_t nargs)
{
    int device, prev;
    void *ev;
    cudaError_t err;
    if ((prev = enter("_cuda_event_query", args, nargs, 2, &device, &ev)) <
        0) {
        return NULL;
    }
    err = cudaEventQuery((cudaEvent_t)ev);
    if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        pygpu_cuda_device_restore(device, prev);
        Py_RETURN_FALSE;
    }
    PyObject *r = done(device, prev, err, "cudaEventQuery");
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    Py_RETURN_TRUE;
}

PyObject *
pygpu_py_cuda_event_synchronize(PyObject *m, PyObject *const *args,
                                Py_ssize_t nargs)
{
    int device, prev;
    void *ev;
    cudaError_t err;
    if ((prev = enter("_cuda_event_synchronize", args, nargs, 2, &device,
                      &ev)) < 0) {
        return NULL;
    }
    if (pygpu_cuda_capture_refuse(device, NULL, PYGPU_CAPTURE_WAITS,
                                  "Event.synchronize()") < 0) {
        pygpu_cuda_device_restore(device, prev);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = cudaEventSynchronize((cudaEvent_t)ev);
    Py_END_ALLOW_THREADS
    return done(device, prev, err, "cudaEventSynchronize");
}

PyObject *
pygpu_py_cuda_event_elapsed_time(PyObject *m, PyObject *const *args,
                                 Py_ssize_t nargs)
{
    int device, prev;
    void *start, *end;
    float ms = 0.0f;
    cudaError_t err;
    if ((prev = enter("_cuda_event_elapsed_time", args, nargs, 3, &device,
                      &start)) < 0) {
        return NULL;
    }
    if (pygpu_cuda_handle_arg(args[2], &end) < 0) {
        pygpu_cuda_device_restore(device, prev);
        return NULL;
    }
    err = cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end);
    PyObject *r = done(device, prev, err, "cudaEventElapsedTime");
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    return PyFloat_FromDouble((double)ms);
}

/* _cuda_event_ipc_handle(device, event): the bytes of its IPC handle. */
PyObject *
pygpu_py_cuda_event_ipc_handle(PyObject *m, PyObject *const *args,
                               Py_ssize_t nargs)
{
    int device, prev;
    void *ev;
    cudaIpcEventHandle_t handle;
    cudaError_t err;
    if ((prev = enter("_cuda_event_ipc_handle", args, nargs, 2, &device,
                      &ev)) < 0) {
        return NULL;
    }
    err = cudaIpcGetEventHandle(&handle, (cudaEvent_t)ev);
    PyObject *r = done(device, prev, err, "cudaIpcGetEventHandle");
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    return PyBytes_FromStringAndSize((const char *)&handle, sizeof(handle));
}

/* _cuda_event_from_ipc_handle(device, handle): the event another process
 * shared, opened on `device`. */
PyObject *
pygpu_py_cuda_event_from_ipc_handle(PyObject *m, PyObject *const *args,
                                    Py_ssize_t nargs)
{
    int device, prev;
    cudaIpcEventHandle_t handle;
    cudaEvent_t ev = NULL;
    cudaError_t err;
    if (pygpu_cuda_nargs("_cuda_event_from_ipc_handle", nargs, 2) < 0 ||
        pygpu_cuda_device_arg(args[0], &device) < 0) {
        return NULL;
    }
    if (!PyBytes_Check(args[1])) {
        PyErr_Format(PyExc_TypeError,
                     "_cuda_event_from_ipc_handle: handle must be bytes, not "
                     "%.100s", Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    if (PyBytes_GET_SIZE(args[1]) != (Py_ssize_t)sizeof(handle)) {
        PyErr_Format(PyExc_RuntimeError,
                     "cudaIpcEventHandle_t expects byte-like object of size "
                     "%zu, but got %zd", sizeof(handle),
                     PyBytes_GET_SIZE(args[1]));
        return NULL;
    }
    memcpy(&handle, PyBytes_AS_STRING(args[1]), sizeof(handle));
    prev = pygpu_cuda_device_guard(device);
    if (prev < 0) {
        return NULL;
    }
    err = cudaIpcOpenEventHandle(&ev, handle);
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        return pygpu_cuda_raise((int)err, "cudaIpcOpenEventHandle",
                                __FILE__, __LINE__);
    }
    return PyLong_FromVoidPtr(ev);
}
