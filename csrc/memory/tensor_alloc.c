/* tensor_alloc.c - new tensors with memory of their own: a NumPy array
 * on the CPU (so that from_numpy and .numpy() share memory), a Storage of
 * the device's caching allocator on CUDA; and two test aids: poisoning of
 * new memory, and an injected failure of the Nth allocation (so that the
 * error path of every allocation an op makes can be walked). */
#include "memory/memory.h"

#include <stdatomic.h>
#include <string.h>

static atomic_int poison = 0;
static atomic_long fail_in = 0; /* > 0: allocations until one fails */

void
pygpu_set_poison(int on)
{
    atomic_store(&poison, on ? 1 : 0);
}

void
pygpu_set_fail_allocation_in(long n)
{
    atomic_store(&fail_in, n > 0 ? n : 0);
}

/* Counts an allocation down; nonzero when it is the one to fail. */
static int
injected_failure(void)
{
    long n = atomic_load(&fail_in);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&fail_in, &n, n - 1)) {
            return n == 1;
        }
    }
    return 0;
}

/* The device's out-of-memory error for an injected failure; -1. */
static int
raise_injected(pygpu_device dev, size_t nbytes)
{
    char size[32];
    pygpu_format_size(size, sizeof(size), (uint64_t)nbytes);
    if (dev.type == PYGPU_CUDA) {
        PyErr_Format(pygpu_state->OutOfMemoryError,
                     "CUDA out of memory. Tried to allocate %s "
                     "(failure injected for testing).", size);
    }
    else {
        PyErr_Format(PyExc_RuntimeError,
                     "DefaultCPUAllocator: can't allocate memory: you tried "
                     "to allocate %lld bytes (failure injected for testing).",
                     (long long)nbytes);
    }
    return -1;
}

/* Fill a new tensor's bytes with 0xFF when poisoning is on. */
static int
maybe_poison(TensorObject *t, size_t nbytes)
{
    if (!atomic_load(&poison) || nbytes == 0) {
        return 0;
    }
    if (t->device.type == PYGPU_CPU) {
        memset(t->data, 0xFF, nbytes);
        return 0;
    }
    return pygpu_cuda_memset(t->data, 0xFF, nbytes, t->device.index);
}

/* Check a shape; bytes it needs in *nbytes.  -1 with an exception. */
static int
check_shape(int ndim, const int64_t *shape, int dtype, size_t *nbytes)
{
    int64_t n;
    if (ndim < 0 || ndim > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu tensors have at most %d dimensions, got %d",
                     PYGPU_MAX_DIMS, ndim);
        return -1;
    }
    if (pygpu_shape_numel(ndim, shape, &n) < 0) {
        return -1;
    }
    if (n > (int64_t)1 << 60) {
        PyErr_SetString(PyExc_RuntimeError,
                        "tensor size overflows: too many elements");
        return -1;
    }
    *nbytes = (size_t)n * (size_t)pygpu_dtype_table[dtype].itemsize;
    return 0;
}

/* CPU tensors of CPU_ALIGN_MIN bytes and more start on a 64-byte line, as
 * torch's do (NumPy's own arrays start 16 bytes into a page when they are
 * large): the array is a view into a NumPy byte array CPU_ALIGN - 1 bytes
 * longer, which owns the memory (so NumPy's allocator, with its huge
 * pages for large arrays, still provides it).  The sum loop over 2^24
 * float32 on two threads of the test machine, timed in C: 1.07-1.13 ms
 * from 64-byte aligned memory, 1.15-1.39 from NumPy's; pygpu's sum and
 * relu_ of 2^20: 27.5 and 33 us against 31 and 40.  Smaller tensors keep
 * one plain array, which costs one object less per op. */
#define CPU_ALIGN 64
#define CPU_ALIGN_MIN ((size_t)1 << 16)

static PyObject *
cpu_array(int ndim, npy_intp *dims, int dtype, size_t nbytes)
{
    int npy_type = pygpu_dtype_table[dtype].npy_type;
    if (nbytes < CPU_ALIGN_MIN) {
        return PyArray_SimpleNew(ndim, dims, npy_type);
    }
    npy_intp raw_len = (npy_intp)(nbytes + CPU_ALIGN - 1);
    PyObject *raw = PyArray_SimpleNew(1, &raw_len, NPY_UINT8);
    if (raw == NULL) {
        return NULL;
    }
    char *p = PyArray_BYTES((PyArrayObject *)raw);
    p += (CPU_ALIGN - (uintptr_t)p % CPU_ALIGN) % CPU_ALIGN;
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type,
                                         PyArray_DescrFromType(npy_type),
                                         ndim, dims, NULL, p,
                                         NPY_ARRAY_CARRAY, NULL);
    if (arr == NULL) {
        Py_DECREF(raw);
        return NULL;
    }
    /* takes the reference to raw, also when it fails */
    if (PyArray_SetBaseObject((PyArrayObject *)arr, raw) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* A new base-class tensor object with a contiguous geometry and no memory
 * yet (base and data NULL). */
static TensorObject *
contiguous_alloc(int ndim, const int64_t *shape, int dtype, pygpu_device dev)
{
    PyTypeObject *tp = pygpu_state->Tensor_Type;
    TensorObject *t = (TensorObject *)tp->tp_alloc(tp, 0);
    if (t == NULL) {
        return NULL;
    }
    t->dtype = dtype;
    t->ndim = ndim;
    t->device = dev;
    if (ndim > 0) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    }
    pygpu_contiguous_strides(ndim, t->shape, t->strides);
    return t;
}

TensorObject *
pygpu_tensor_on_storage(StorageObject *st, int ndim, const int64_t *shape,
                        int dtype, pygpu_device dev)
{
    TensorObject *t = contiguous_alloc(ndim, shape, dtype, dev);
    if (t == NULL) {
        return NULL;
    }
    t->base = Py_NewRef((PyObject *)st);
    t->data = st->ptr;
    return t;
}

TensorObject *
pygpu_tensor_empty(int ndim, const int64_t *shape, int dtype,
                   pygpu_device dev)
{
    TensorObject *t = NULL;
    size_t nbytes;
    if (check_shape(ndim, shape, dtype, &nbytes) < 0) {
        return NULL;
    }
    t = contiguous_alloc(ndim, shape, dtype, dev);
    if (t == NULL) {
        return NULL;
    }
    if (injected_failure()) {
        raise_injected(dev, nbytes);
        goto fail;
    }
    if (dev.type == PYGPU_CPU) {
        npy_intp dims[PYGPU_MAX_DIMS];
        for (int d = 0; d < ndim; d++) {
            dims[d] = (npy_intp)shape[d];
        }
        t->device.index = -1;
        t->base = cpu_array(ndim, dims, dtype, nbytes);
        if (t->base == NULL) {
            if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
                /* torch's CPU allocator raises a RuntimeError */
                PyErr_Clear();
                PyErr_Format(PyExc_RuntimeError,
                             "DefaultCPUAllocator: can't allocate memory: "
                             "you tried to allocate %lld bytes.",
                             (long long)nbytes);
            }
            goto fail;
        }
        t->data = PyArray_BYTES((PyArrayObject *)t->base);
    }
    else if (dev.type == PYGPU_CUDA) {
        StorageObject *st = pygpu_storage_new(dev, nbytes);
        if (st == NULL) {
            goto fail;
        }
        t->base = (PyObject *)st;
        t->data = st->ptr;
    }
    else {
        pygpu_device_resolve(&t->device); /* raises for mps */
        goto fail;
    }
    if (maybe_poison(t, nbytes) < 0) {
        goto fail;
    }
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

