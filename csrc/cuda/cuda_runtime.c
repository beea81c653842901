/* cuda_runtime.c - CUDA runtime glue for the CUDA build: whether CUDA can
 * be used (and why not), device selection and queries, memset, error
 * translation, launch checking, and cuda/'s init, which installs these as
 * the device runtime the lower floors call through (core/runtime.h).
 *
 * cudart is linked statically, so importing pygpu never needs a driver:
 * without one every query answers "0 devices" with the reason kept. */
#include "memory/memory.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_docs.h"
#include "cuda/cuda_graph.h"
#include "cuda/cuda_libs.h"
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int probed_count = 0;
static char probed_reason[4096];
static int launch_blocking = 0;
/* Set in a child forked after the driver was initialised: the child's
 * CUDA state (contexts, cached device memory) is not usable. */
static atomic_int forked_child = 0;

static void
after_fork_in_child(void)
{
    atomic_store(&forked_child, 1);
}

/* Why the runtime refused, in torch's words where torch has them. */
static void
explain(cudaError_t err, int count)
{
    int driver = 0;

    if (err == cudaErrorInsufficientDriver &&
        (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)) {
        snprintf(probed_reason, sizeof(probed_reason),
                 "Found no NVIDIA driver on your system. Please check that "
                 "you have an NVIDIA GPU and installed a driver from "
                 "http://www.nvidia.com/Download/index.aspx");
    }
    else if (err == cudaErrorInsufficientDriver) {
        snprintf(probed_reason, sizeof(probed_reason),
                 "The NVIDIA driver on your system is too old (found "
                 "version %d.%d; this CUDA %d.%d runtime needs a newer one). "
                 "Please update your GPU driver by downloading and installing "
                 "a new version from the URL: "
                 "http://www.nvidia.com/Download/index.aspx",
                 driver / 1000, (driver % 1000) / 10, CUDART_VERSION / 1000,
                 (CUDART_VERSION % 1000) / 10);
    }
    else if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
        snprintf(probed_reason, sizeof(probed_reason),
                 "No CUDA GPUs are available");
    }
    else {
        snprintf(probed_reason, sizeof(probed_reason),
                 "CUDA is not available: cudaGetDeviceCount failed: %s (%s)",
                 cudaGetErrorString(err), cudaGetErrorName(err));
    }
    (void)cudaGetLastError();
}

/* Runs once (pthread_once): counts devices, remembers why there are none,
 * and once the driver is initialised registers the fork handler. */
static void
probe(void)
{
    const char *lb = getenv("PYGPU_LAUNCH_BLOCKING");
    launch_blocking = lb != NULL && lb[0] == '1';
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    const char *why = NULL;
    if (err == cudaSuccess && count > 0 && pygpu_cublas_load(&why) < 0) {
        /* A device without cuBLAS cannot run a product: not usable. */
        snprintf(probed_reason, sizeof(probed_reason),
                 "CUDA is not available: %s", why);
        return;
    }
    if (err == cudaSuccess && count > 0) {
        probed_count = count;
        (void)pthread_atfork(NULL, NULL, after_fork_in_child);
        return;
    }
    explain(err, count);
}

static int
refuse_in_forked_child(void)
{
    if (atomic_load(&forked_child)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Cannot re-initialize CUDA in forked subprocess. To "
                        "use CUDA with multiprocessing, you must use the "
                        "'spawn' start method");
        return -1;
    }
    return 0;
}

static int
device_count(void)
{
    pthread_once(&probe_once, probe);
    return probed_count;
}

static const char *
unavailable_reason(void)
{
    pthread_once(&probe_once, probe);
    return probed_count > 0 ? NULL : probed_reason;
}

PyObject *
pygpu_cuda_raise(int err, const char *call, const char *file, int line)
{
    cudaError_t e = (cudaError_t)err;
    (void)cudaGetLastError(); /* clear it where it is not sticky */
    pygpu_raise_cuda_error((long)e, cudaGetErrorName(e),
                           "CUDA error: %s (%s) in %s at %s:%d",
                           cudaGetErrorString(e), cudaGetErrorName(e), call,
                           file, line);
    return NULL;
}

#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t err_ = (call);                                           \
        if (err_ != cudaSuccess) {                                           \
            pygpu_cuda_raise((int)err_, #call, __FILE__, __LINE__);          \
            goto fail;                                                       \
        }                                                                    \
    } while (0)

static int
require(void)
{
    if (device_count() == 0) {
        PyErr_SetString(PyExc_RuntimeError, unavailable_reason());
        return -1;
    }
    return refuse_in_forked_child();
}

static int
current_device(int *dev)
{
    if (require() < 0) {
        return -1;
    }
    CHECK(cudaGetDevice(dev));
    return 0;
fail:
    return -1;
}

int
pygpu_cuda_set_device(int dev)
{
    int cur;
    CHECK(cudaGetDevice(&cur));
    if (cur != dev) {
        CHECK(cudaSetDevice(dev));
    }
    return 0;
fail:
    return -1;
}

/* Every CUDA op passes here, so the tensors a forked child inherited are
 * refused too. */
int
pygpu_cuda_device_guard(int dev)
{
    int prev;
    cudaError_t err;
    if (refuse_in_forked_child() < 0) {
        return -1;
    }
    err = (cudaError_t)pygpu_cuda_enter_device(dev, &prev);
    if (err != cudaSuccess) {
        pygpu_cuda_raise((int)err, "cudaSetDevice", __FILE__, __LINE__);
        return -1;
    }
    return prev;
}

void
pygpu_cuda_device_restore(int dev, int prev)
{
    pygpu_cuda_leave_device(dev, prev);
}

static void *
current_stream(int device)
{
    return pygpu_cuda_thread_stream(device); /* cuda_stream.c */
}

static int
memset_async(void *ptr, int byte, size_t nbytes, int device)
{
    cudaError_t err;
    int prev = pygpu_cuda_device_guard(device);
    if (prev < 0) {
        return -1;
    }
    err = cudaMemsetAsync(ptr, byte, nbytes,
                          (cudaStream_t)current_stream(device));
    pygpu_cuda_device_restore(device, prev);
    CHECK(err);
    return 0;
fail:
    return -1;
}

/* The device runtime of a CUDA build, which the lower floors call
 * through (core/runtime.h). */
static const pygpu_device_runtime cuda_runtime = {
    .built = 1,
    .device_count = device_count,
    .unavailable_reason = unavailable_reason,
    .require = require,
    .current_device = current_device,
    .current_stream = current_stream,
    .memset = memset_async,
    .captures_underway = pygpu_capture_underway, /* cuda_capture.c */
    .capture_route = pygpu_capture_route,
    .capture_refuse = pygpu_capture_refuse,
};

int
pygpu_cuda_init(void)
{
    pygpu_runtime_install(&cuda_runtime);
    pygpu_allocators_install(&pygpu_cuda_allocators);
    return pygpu_cuda_dispatch_register();
}

int
pygpu_cuda_check_launch(int err, const char *what)
{
    cudaError_t e = (cudaError_t)err;
    /* A capture's launches run at replay: nothing to wait for now (and
     * waiting would break the capture). */
    if (e == cudaSuccess && launch_blocking &&
        pygpu_capture_underway() == 0) {
        Py_BEGIN_ALLOW_THREADS
        e = cudaDeviceSynchronize();
        Py_END_ALLOW_THREADS
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pygpu_raise_cuda_error(
            (long)e, cudaGetErrorName(e),
            "CUDA error: %s (%s) in the %s kernel%s", cudaGetErrorString(e),
            cudaGetErrorName(e), what,
            launch_blocking ? ""
                            : " (errors may be reported late: set "
                              "PYGPU_LAUNCH_BLOCKING=1 to find the op "
                              "that caused it)");
    }
    return 0;
}

int
pygpu_cuda_oom_retry(int device, int status, int cublas)
{
    int oom;
    if (cublas) {
        /* cublasCreate reports a failed allocation as ALLOC_FAILED or
         * NOT_INITIALIZED.  EXECUTION_FAILED is a kernel that failed to
         * launch or run: the caller looks at the CUDA error behind it
         * (pygpu_blas_oom_retry). */
        oom = status == CUBLAS_STATUS_ALLOC_FAILED ||
              status == CUBLAS_STATUS_NOT_INITIALIZED;
    }
    else {
        oom = status == cudaErrorMemoryAllocation;
    }
    if (!oom) {
        return 0;
    }
    (void)cudaGetLastError(); /* the retry must not see it */
    return pygpu_cuda_allocator_release(device) > 0;
}

/* ------------------------------------------------------ Python functions */

static int
device_arg(PyObject *arg, int *dev)
{
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (require() < 0) {
        return -1;
    }
    if (v < 0 || v >= device_count()) {
        PyErr_Format(PyExc_RuntimeError,
                     "CUDA error: invalid device ordinal (device %ld, %d "
                     "available)", v, device_count());
        return -1;
    }
    *dev = (int)v;
    return 0;
}

static PyObject *
get_properties(PyObject *m, PyObject *arg)
{
    int dev;
    struct cudaDeviceProp p;
    if (device_arg(arg, &dev) < 0) {
        return NULL;
    }
    CHECK(cudaGetDeviceProperties(&p, dev));
    return Py_BuildValue(
        "{s:s,s:K,s:i,s:i,s:i,s:i,s:i,s:i}", "name", p.name, "total_memory",
        (unsigned long long)p.totalGlobalMem, "major", p.major, "minor",
        p.minor, "multi_processor_count", p.multiProcessorCount,
        "L2_cache_size", p.l2CacheSize, "max_threads_per_multi_processor",
        p.maxThreadsPerMultiProcessor, "warp_size", p.warpSize);
fail:
    return NULL;
}

static PyObject *
set_device_py(PyObject *m, PyObject *arg)
{
    int dev;
    if (device_arg(arg, &dev) < 0 || pygpu_cuda_set_device(dev) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
current_device_py(PyObject *m, PyObject *noargs)
{
    int dev;
    if (current_device(&dev) < 0) {
        return NULL;
    }
    return PyLong_FromLong(dev);
}

static PyObject *
synchronize_py(PyObject *m, PyObject *arg)
{
    int dev, prev;
    cudaError_t err;
    if (device_arg(arg, &dev) < 0 ||
        pygpu_capture_refuse(dev, NULL, PYGPU_CAPTURE_WAITS_DEVICE,
                             "pygpu.cuda.synchronize()") < 0 ||
        (prev = pygpu_cuda_device_guard(dev)) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    err = cudaDeviceSynchronize();
    Py_END_ALLOW_THREADS
    pygpu_cuda_device_restore(dev, prev);
    CHECK(err);
    Py_RETURN_NONE;
fail:
    return NULL;
}

static PyObject *
mem_get_info_py(PyObject *m, PyObject *arg)
{
    int dev, prev;
    size_t free_b, total_b;
    cudaError_t err;
    if (device_arg(arg, &dev) < 0 ||
        (prev = pygpu_cuda_device_guard(dev)) < 0) {
        return NULL;
    }
    err = cudaMemGetInfo(&free_b, &total_b);
    pygpu_cuda_device_restore(dev, prev);
    CHECK(err);
    return Py_BuildValue("(KK)", (unsigned long long)free_b,
                         (unsigned long long)total_b);
fail:
    return NULL;
}

static PyObject *
versions_py(PyObject *m, PyObject *noargs)
{
    int driver = 0, runtime = 0;
    /* Either may fail without a driver: report 0 then. */
    if (cudaDriverGetVersion(&driver) != cudaSuccess) {
        driver = 0;
    }
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) {
        runtime = 0;
    }
    (void)cudaGetLastError();
    return Py_BuildValue("{s:i,s:i,s:i}", "built", CUDART_VERSION,
                         "runtime", runtime, "driver", driver);
}

static PyObject *
libraries_py(PyObject *m, PyObject *noargs)
{
    const char *why = NULL;

    if (pygpu_cublas_load(&why) < 0) {
        return Py_BuildValue("{s:O,s:O,s:s}", "cublas", Py_None, "cublasLt",
                             Py_None, "error", why);
    }
    return Py_BuildValue("{s:s,s:s,s:O}", "cublas", pygpu_cublas.cublas_path,
                         "cublasLt", pygpu_cublas.cublaslt_path, "error",
                         Py_None);
}

PyMethodDef pygpu_cuda_functions[] = {
    {"_cuda_get_device_properties", get_properties, METH_O,
     PYGPU_DOC_CUDA_GET_DEVICE_PROPERTIES},
    {"_cuda_set_device", set_device_py, METH_O,
     PYGPU_DOC_CUDA_SET_DEVICE},
    {"_cuda_current_device", current_device_py, METH_NOARGS,
     PYGPU_DOC_CUDA_CURRENT_DEVICE},
    {"_cuda_synchronize", synchronize_py, METH_O,
     PYGPU_DOC_CUDA_SYNCHRONIZE},
    {"_cuda_mem_get_info", mem_get_info_py, METH_O,
     PYGPU_DOC_CUDA_MEM_GET_INFO},
    {"_cuda_versions", versions_py, METH_NOARGS,
     PYGPU_DOC_CUDA_VERSIONS},
    {"_cuda_libraries", libraries_py, METH_NOARGS,
     PYGPU_DOC_CUDA_LIBRARIES},
    {NULL},
};
