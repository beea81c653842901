/* cuda_copy.c - copies between host and device memory, or between two
 * devices, ordered on the current stream: the path of .to(), .cpu(),
 * .cuda() and copy_ across devices, synchronous or (non_blocking, from or
 * into page-locked memory) only queued. */
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "cuda/stream_docs.h"

#include <cuda_runtime_api.h>

/* Wait for the work queued on `device`'s current stream. */
static int
wait_for_device(int device)
{
    cudaError_t err;
    int prev = pygpu_cuda_device_guard(device);
    cudaStream_t stream = (cudaStream_t)pygpu_cuda_current_stream(device);
    if (prev < 0) {
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    err = cudaStreamSynchronize(stream);
    Py_END_ALLOW_THREADS
    pygpu_cuda_device_restore(device, prev);
    if (err != cudaSuccess) {
        pygpu_cuda_raise((int)err, "cudaStreamSynchronize", __FILE__,
                         __LINE__);
        return -1;
    }
    return 0;
}

int
pygpu_cuda_memcpy_on_stream(void *dst, int dst_device, const void *src,
                            int src_device, size_t nbytes, int sync)
{
    cudaError_t err;
    int peer = dst_device != PYGPU_HOST && src_device != PYGPU_HOST;
    int dev = src_device != PYGPU_HOST ? src_device : dst_device;
    int prev;
    cudaStream_t stream;
    /* A copy to or from the host cannot be captured: a synchronous one
     * waits for the GPU, and a queued one would read host memory at every
     * replay that nothing keeps alive; one between GPUs waits too. */
    if (pygpu_cuda_capture_refuse(
            dev, pygpu_cuda_current_stream(dev),
            sync || peer ? PYGPU_CAPTURE_WAITS : PYGPU_CAPTURE_ON_STREAM,
            peer ? "a copy between two GPUs"
                 : "a copy between host and GPU memory (.item(), .cpu(), "
                   ".tolist(), .to() or copy_() across devices)") < 0) {
        return -1;
    }
    prev = pygpu_cuda_device_guard(dev);
    if (prev < 0) {
        return -1;
    }
    stream = (cudaStream_t)pygpu_cuda_current_stream(dev);
    if (peer && dst_device != src_device) {
        /* the destination device's pending work (a last reader of dst)
         * first; the copy is waited for, as the destination's stream
         * does not see this one */
        if (wait_for_device(dst_device) < 0) {
            pygpu_cuda_device_restore(dev, prev);
            return -1;
        }
        sync = 1;
    }
    /* Page-locked or pageable, the copy may wait for earlier work: let
     * other Python threads run meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    if (peer) {
        err = cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes,
                                  stream);
    }
    else {
        err = cudaMemcpyAsync(dst, src, nbytes,
                              src_device == PYGPU_HOST
                                  ? cudaMemcpyHostToDevice
                                  : cudaMemcpyDeviceToHost,
                              stream);
    }
    if (err == cudaSuccess && sync) {
        err = cudaStreamSynchronize(stream);
    }
    Py_END_ALLOW_THREADS
    pygpu_cuda_device_restore(dev, prev);
    if (err != cudaSuccess) {
        pygpu_cuda_raise((int)err,
                         peer ? "cudaMemcpyPeerAsync" : "cudaMemcpyAsync",
                         __FILE__, __LINE__);
        return -1;
    }
    return 0;
}

/* _cuda_memcpy(dst, dst_device, src, src_device, nbytes, sync) */
PyObject *
pygpu_py_cuda_memcpy(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    void *dst, *src;
    int devs[2];
    size_t nbytes;
    int sync;
    if (pygpu_cuda_nargs("_cuda_memcpy", nargs, 6) < 0 ||
        pygpu_cuda_handle_arg(args[0], &dst) < 0 ||
        pygpu_cuda_handle_arg(args[2], &src) < 0) {
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        long d = PyLong_AsLong(args[1 + 2 * i]);
        if (d == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (d != PYGPU_HOST && pygpu_cuda_device_arg(args[1 + 2 * i],
                                                     &devs[i]) < 0) {
            return NULL;
        }
        devs[i] = (int)d;
    }
    nbytes = PyLong_AsSize_t(args[4]);
    if (nbytes == (size_t)-1 && PyErr_Occurred()) {
        return NULL;
    }
    sync = PyObject_IsTrue(args[5]);
    if (sync < 0) {
        return NULL;
    }
    if (devs[0] == PYGPU_HOST && devs[1] == PYGPU_HOST) {
        PyErr_SetString(PyExc_ValueError,
                        "_cuda_memcpy: one side must be a CUDA device");
        return NULL;
    }
    if (pygpu_cuda_memcpy_on_stream(dst, devs[0], src, devs[1], nbytes,
                                    sync) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}
