/* cuda_none.c - the CUDA entry points of a CPU-only build (the runtime the
 * core declares, the allocators memory declares): no devices, and every
 * request for one says that pygpu was built without CUDA. */
#include "memory/memory.h"
#include "memory/allocator_py.h"
#include "memory/cuda_backend.h"
#include "cuda/cuda_docs.h"
#include "cuda/cuda_runtime.h"
#include "cuda/cuda_stream.h"
#include "cuda/stream_docs.h"

/* No CUDA rows: pygpu_dispatch refuses every CUDA tensor. */
int
pygpu_cuda_init(void)
{
    return 0;
}

int
pygpu_cuda_built(void)
{
    return 0;
}

int
pygpu_cuda_device_count(void)
{
    return 0;
}

const char *
pygpu_cuda_unavailable_reason(void)
{
    return PYGPU_NO_CUDA_MESSAGE;
}

static int
refuse(void)
{
    return pygpu_raise_no_cuda();
}

int
pygpu_cuda_require(void)
{
    return refuse();
}

int
pygpu_cuda_current_device(int *dev)
{
    (void)dev;
    return refuse();
}

int
pygpu_cuda_set_device(int dev)
{
    (void)dev;
    return refuse();
}

int
pygpu_cuda_memset(void *ptr, int byte, size_t nbytes, int device)
{
    (void)ptr, (void)byte, (void)nbytes, (void)device;
    return refuse();
}

int
pygpu_cuda_check_launch(int err, const char *what)
{
    (void)err, (void)what;
    return refuse();
}

int
pygpu_cuda_oom_retry(int device, int status, int cublas)
{
    (void)device, (void)status, (void)cublas;
    return 0;
}

PyObject *
pygpu_cuda_raise(int err, const char *call, const char *file, int line)
{
    (void)err, (void)call, (void)file, (void)line;
    refuse();
    return NULL;
}

void *
pygpu_cuda_current_stream(int device)
{
    (void)device;
    return NULL;
}

/* Graph capture (cuda_capture.c): nothing is ever captured here. */
int
pygpu_cuda_captures_underway(void)
{
    return 0;
}

uint64_t
pygpu_cuda_capture_route(int device, void *stream)
{
    (void)device, (void)stream;
    return 0;
}

int
pygpu_cuda_capture_refuse(int device, void *stream, int kind,
                          const char *what)
{
    (void)device, (void)stream, (void)kind, (void)what;
    return 0;
}

/* The process-wide CUDA and pinned allocators (memory/cuda_allocators.c
 * in a CUDA build). */
AllocatorObject *pygpu_cuda_allocator(int device)
{
    (void)device;
    pygpu_raise_no_cuda();
    return NULL;
}

AllocatorObject *pygpu_pinned_allocator(void)
{
    pygpu_raise_no_cuda();
    return NULL;
}

int
pygpu_cuda_backend_describe(const pygpu_alloc_backend *backend, char *buf,
                            size_t n)
{
    (void)backend, (void)buf, (void)n;
    return 0;
}

static PyObject *
refuse_o(PyObject *m, PyObject *arg)
{
    refuse();
    return NULL;
}

static PyObject *
refuse_noargs(PyObject *m, PyObject *noargs)
{
    refuse();
    return NULL;
}

static PyObject *
versions_py(PyObject *m, PyObject *noargs)
{
    return Py_BuildValue("{s:i,s:i,s:i}", "built", 0, "runtime", 0,
                         "driver", 0);
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
    {NULL},
};

/* Streams, events and stream-ordered copies (cuda_stream.h). */
void *
pygpu_cuda_thread_stream(int device)
{
    (void)device;
    return NULL;
}

int
pygpu_cuda_stream_order(int device, void *before, void *after)
{
    (void)device, (void)before, (void)after;
    return refuse();
}

int
pygpu_cuda_memcpy_on_stream(void *dst, int dst_device, const void *src,
                            int src_device, size_t nbytes, int sync)
{
    (void)dst, (void)dst_device, (void)src, (void)src_device, (void)nbytes;
    (void)sync;
    return refuse();
}

int
pygpu_cuda_pointer_device(const void *ptr, int *device)
{
    (void)ptr, (void)device;
    return refuse();
}

static PyObject *
refuse_fast(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m, (void)args, (void)nargs;
    refuse();
    return NULL;
}

#define REFUSE_ROW(name, sig, doc)                                           \
    {#name, (PyCFunction)(void (*)(void))refuse_fast, METH_FASTCALL,         \
     #name sig "\n--\n\n" doc},

PyMethodDef pygpu_stream_functions[] = {
    PYGPU_STREAM_FUNCTION_LIST(REFUSE_ROW)
    {NULL},
};
