/* cuda_none.c - the CUDA floor of a CPU-only build: the device runtime it
 * installs for the lower floors (core/runtime.h), the allocators memory
 * declares, the module's CUDA, stream and event functions: no devices, and
 * every request for one says that pygpu was built without CUDA. */
#include "memory/memory.h"
#include "cuda/cuda_docs.h"
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "cuda/stream_docs.h"

static int
device_count(void)
{
    return 0;
}

static const char *
unavailable_reason(void)
{
    return PYGPU_NO_CUDA_MESSAGE;
}

static int
require(void)
{
    return pygpu_raise_no_cuda();
}

static int
current_device(int *dev)
{
    (void)dev;
    return pygpu_raise_no_cuda();
}

static void *
current_stream(int device)
{
    (void)device;
    return NULL;
}

static int
memset_refused(void *ptr, int byte, size_t nbytes, int device)
{
    (void)ptr, (void)byte, (void)nbytes, (void)device;
    return pygpu_raise_no_cuda();
}

/* Graph capture: nothing is ever captured here. */
static int
captures_underway(void)
{
    return 0;
}

static uint64_t
capture_route(int device, void *stream)
{
    (void)device, (void)stream;
    return 0;
}

static int
capture_refuse(int device, void *stream, int kind, const char *what)
{
    (void)device, (void)stream, (void)kind, (void)what;
    return 0;
}

/* The device runtime of a CPU-only build (core/runtime.h). */
static const pygpu_device_runtime no_cuda_runtime = {
    .built = 0,
    .device_count = device_count,
    .unavailable_reason = unavailable_reason,
    .require = require,
    .current_device = current_device,
    .current_stream = current_stream,
    .memset = memset_refused,
    .captures_underway = captures_underway,
    .capture_route = capture_route,
    .capture_refuse = capture_refuse,
};

/* No CUDA or pinned allocators (cuda/cuda_allocators.c in a CUDA
 * build). */
static AllocatorObject *
device_allocator(int device)
{
    (void)device;
    pygpu_raise_no_cuda();
    return NULL;
}

static AllocatorObject *
pinned_allocator(void)
{
    pygpu_raise_no_cuda();
    return NULL;
}

static const pygpu_device_allocators no_cuda_allocators = {
    .device = device_allocator,
    .pinned = pinned_allocator,
};

/* The runtime and the allocators above, and no CUDA rows: pygpu_dispatch
 * refuses every CUDA tensor. */
int
pygpu_cuda_init(void)
{
    pygpu_runtime_install(&no_cuda_runtime);
    pygpu_allocators_install(&no_cuda_allocators);
    return 0;
}

static PyObject *
refuse_o(PyObject *m, PyObject *arg)
{
    pygpu_raise_no_cuda();
    return NULL;
}

static PyObject *
refuse_noargs(PyObject *m, PyObject *noargs)
{
    pygpu_raise_no_cuda();
    return NULL;
}

static PyObject *
versions_py(PyObject *m, PyObject *noargs)
{
    return Py_BuildValue("{s:i,s:i,s:i}", "built", 0, "runtime", 0,
                         "driver", 0);
}

static PyObject *
libraries_py(PyObject *m, PyObject *noargs)
{
    return Py_BuildValue("{s:O,s:O,s:s}", "cublas", Py_None, "cublasLt",
                         Py_None, "error", "pygpu was built without CUDA");
}

PyMethodDef pygpu_cuda_functions[] = {
    {"_cuda_get_device_properties", refuse_o, METH_O,
     PYGPU_DOC_CUDA_GET_DEVICE_PROPERTIES},
    {"_cuda_set_device", refuse_o, METH_O,
     PYGPU_DOC_CUDA_SET_DEVICE},
    {"_cuda_current_device", refuse_noargs, METH_NOARGS,
     PYGPU_DOC_CUDA_CURRENT_DEVICE},
    {"_cuda_synchronize", refuse_o, METH_O,
     PYGPU_DOC_CUDA_SYNCHRONIZE},
    {"_cuda_mem_get_info", refuse_o, METH_O,
     PYGPU_DOC_CUDA_MEM_GET_INFO},
    {"_cuda_versions", versions_py, METH_NOARGS,
     PYGPU_DOC_CUDA_VERSIONS},
    {"_cuda_libraries", libraries_py, METH_NOARGS,
     PYGPU_DOC_CUDA_LIBRARIES},
    {NULL},
};

/* Streams, events and stream-ordered copies (cuda_stream.h). */
int
pygpu_cuda_stream_order(int device, void *before, void *after)
{
    (void)device, (void)before, (void)after;
    return pygpu_raise_no_cuda();
}

int
pygpu_cuda_memcpy_on_stream(void *dst, int dst_device, const void *src,
                            int src_device, size_t nbytes, int sync)
{
    (void)dst, (void)dst_device, (void)src, (void)src_device, (void)nbytes;
    (void)sync;
    return pygpu_raise_no_cuda();
}

int
pygpu_cuda_pointer_device(const void *ptr, int *device)
{
    (void)ptr, (void)device;
    return pygpu_raise_no_cuda();
}

static PyObject *
refuse_fast(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m, (void)args, (void)nargs;
    pygpu_raise_no_cuda();
    return NULL;
}

#define REFUSE_ROW(name, sig, doc)                                           \
    {#name, (PyCFunction)(void (*)(void))refuse_fast, METH_FASTCALL,         \
     #name sig "\n--\n\n" doc},

PyMethodDef pygpu_stream_functions[] = {
    PYGPU_STREAM_FUNCTION_LIST(REFUSE_ROW)
    {NULL},
};
