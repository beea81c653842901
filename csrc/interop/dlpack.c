/* dlpack.c - exporting tensors through DLPack: Tensor.__dlpack__ and
 * Tensor.__dlpack_device__, with the Python array API's stream handshake.
 *
 * A capsule holds one heap block: the managed tensor (legacy or versioned)
 * first, then a reference to the memory's owner (the tensor's base, so
 * that resizing or dropping the tensor cannot free what a consumer holds)
 * and the shape and strides the DLTensor points at.  The deleter drops the
 * reference under the GIL (it may run on any thread) and frees the block;
 * the capsule's destructor calls it only if no consumer renamed the
 * capsule "used_...". */
#include "interop/dlpack.h"
#include "ops/ops.h"
#include "cuda/cuda_stream.h"

typedef struct {
    union {
        pygpu_dl_managed legacy;
        pygpu_dl_managed_v versioned;
    } m;                 /* first: the capsule's pointer is the block's */
    PyObject *owner;
    int64_t shape[PYGPU_MAX_DIMS];
    int64_t strides[PYGPU_MAX_DIMS];
} export_block;

static const pygpu_dl_dtype dl_dtypes[PYGPU_NDTYPES] = {
    [PYGPU_FLOAT32] = {PYGPU_DL_FLOAT, 32, 1},
    [PYGPU_FLOAT16] = {PYGPU_DL_FLOAT, 16, 1},
    [PYGPU_FLOAT64] = {PYGPU_DL_FLOAT, 64, 1},
    [PYGPU_INT64] = {PYGPU_DL_INT, 64, 1},
    [PYGPU_BOOL] = {PYGPU_DL_BOOL, 8, 1},
    [PYGPU_UINT8] = {PYGPU_DL_UINT, 8, 1},
    [PYGPU_INT32] = {PYGPU_DL_INT, 32, 1},
    [PYGPU_BFLOAT16] = {PYGPU_DL_BFLOAT, 16, 1},
};

int
pygpu_dl_from_dtype(int dtype, pygpu_dl_dtype *out)
{
    if (dtype < 0 || dtype >= PYGPU_NDTYPES) {
        return -1;
    }
    *out = dl_dtypes[dtype];
    return 0;
}

int
pygpu_dl_to_dtype(pygpu_dl_dtype dt)
{
    for (int i = 0; i < PYGPU_NDTYPES; i++) {
        if (dl_dtypes[i].code == dt.code && dl_dtypes[i].bits == dt.bits &&
            dt.lanes == 1) {
            return i;
        }
    }
    PyErr_Format(PyExc_BufferError,
                 "DLPack data type (code %u, %u bits, %u lanes) has no pygpu "
                 "dtype", (unsigned)dt.code, (unsigned)dt.bits,
                 (unsigned)dt.lanes);
    return -1;
}

/* ------------------------------------------------------------- release */
static void
release_block(export_block *b)
{
    /* Any thread, with or without the GIL; nothing to drop once the
     * interpreter is gone. */
    if (Py_IsInitialized()) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_XDECREF(b->owner);
        PyGILState_Release(g);
    }
    PyMem_RawFree(b);
}

static void
delete_legacy(pygpu_dl_managed *self)
{
    release_block((export_block *)self->manager_ctx);
}

static void
delete_versioned(pygpu_dl_managed_v *self)
{
    release_block((export_block *)self->manager_ctx);
}

/* A capsule nobody consumed still owns its managed tensor. */
static void
capsule_destructor(PyObject *cap)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyCapsule_IsValid(cap, PYGPU_DL_NAME_V)) {
        pygpu_dl_managed_v *m = PyCapsule_GetPointer(cap, PYGPU_DL_NAME_V);
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
    else if (PyCapsule_IsValid(cap, PYGPU_DL_NAME)) {
        pygpu_dl_managed *m = PyCapsule_GetPointer(cap, PYGPU_DL_NAME);
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
    PyErr_Restore(type, value, tb);
}

/* -------------------------------------------------------------- export */
static pygpu_dl_device
dl_device_of(const pygpu_device *dev)
{
    pygpu_dl_device d = {PYGPU_DL_CPU, 0};
    if (dev->type == PYGPU_CUDA) {
        d.device_type = PYGPU_DL_CUDA;
        d.device_id = dev->index;
    }
    return d;
}

/* The capsule over t (whose memory its base owns). */
static PyObject *
make_capsule(TensorObject *t, int versioned, uint64_t flags)
{
    export_block *b = PyMem_RawCalloc(1, sizeof(export_block));
    pygpu_dl_tensor *dl;
    PyObject *cap;
    if (b == NULL) {
        return pygpu_raise_no_memory("a DLPack capsule",
                                     sizeof(export_block));
    }
    b->owner = Py_NewRef(t->base);
    for (int d = 0; d < t->ndim; d++) {
        b->shape[d] = t->shape[d];
        b->strides[d] = t->strides[d];
    }
    if (versioned) {
        b->m.versioned.version.major = PYGPU_DLPACK_MAJOR;
        b->m.versioned.version.minor = PYGPU_DLPACK_MINOR;
        b->m.versioned.manager_ctx = b;
        b->m.versioned.deleter = delete_versioned;
        b->m.versioned.flags = flags;
        dl = &b->m.versioned.dl_tensor;
    }
    else {
        b->m.legacy.manager_ctx = b;
        b->m.legacy.deleter = delete_legacy;
        dl = &b->m.legacy.dl_tensor;
    }
    dl->data = t->data; /* element 0, byte_offset 0, as torch */
    dl->device = dl_device_of(&t->device);
    dl->ndim = t->ndim;
    (void)pygpu_dl_from_dtype(t->dtype, &dl->dtype);
    dl->shape = b->shape;
    dl->strides = b->strides;
    dl->byte_offset = 0;
    cap = PyCapsule_New(b, versioned ? PYGPU_DL_NAME_V : PYGPU_DL_NAME,
                        capsule_destructor);
    if (cap == NULL) {
        release_block(b);
    }
    return cap;
}

/* max_version: None, or a (major, minor) pair.  *versioned: major >= 1. */
static int
parse_max_version(PyObject *obj, int *versioned)
{
    long major;
    *versioned = 0;
    if (obj == NULL || obj == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "max_version must be None or a (major, minor) tuple");
        return -1;
    }
    major = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    if (major == -1 && PyErr_Occurred()) {
        return -1;
    }
    *versioned = major >= 1;
    return 0;
}

/* dl_device: None (the tensor's own) or (device_type, device_id). */
static int
parse_dl_device(PyObject *obj, const pygpu_device *own, pygpu_device *out)
{
    long type, id;
    *out = *own;
    if (obj == NULL || obj == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "dl_device must be None or a (device_type, "
                        "device_id) tuple");
        return -1;
    }
    type = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    id = type == -1 && PyErr_Occurred()
             ? -1
             : PyLong_AsLong(PyTuple_GET_ITEM(obj, 1));
    if (PyErr_Occurred()) {
        return -1;
    }
    if (type == PYGPU_DL_CPU && id == 0) {
        out->type = PYGPU_CPU;
        out->index = -1;
        return 0;
    }
    if (type == PYGPU_DL_CUDA && id >= 0 && id < PYGPU_MAX_DEVICES) {
        out->type = PYGPU_CUDA;
        out->index = (int)id; /* checked when a copy is made */
        return 0;
    }
    PyErr_Format(PyExc_BufferError,
                 "pygpu cannot export to DLPack device (%ld, %ld): only "
                 "kDLCPU (1, 0) and kDLCUDA (2, n) are supported", type, id);
    return -1;
}

/* stream, checked against the device the capsule will describe; *handle
 * is the consumer's stream, *sync whether to order with it. */
static int
parse_stream(PyObject *obj, const pygpu_device *dev, void **handle,
             int *sync)
{
    long long v;
    *sync = 0;
    *handle = NULL;
    if (dev->type == PYGPU_CPU) {
        if (obj != NULL && obj != Py_None) {
            PyErr_SetString(PyExc_ValueError,
                            "__dlpack__: stream must be None for a tensor "
                            "on the CPU");
            return -1;
        }
        return 0;
    }
    if (obj == NULL || obj == Py_None) {
        *sync = 1; /* None: the legacy default stream */
        return 0;
    }
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "stream must be ``int`` or ``none``, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v == 0 || v < -1) {
        PyErr_Format(PyExc_ValueError,
                     "__dlpack__: stream %lld is not allowed for CUDA (None "
                     "or 1: legacy default stream, 2: per-thread default "
                     "stream, -1: no synchronization, else a cudaStream_t)",
                     v);
        return -1;
    }
    *sync = v != -1;
    *handle = v == 1 ? NULL : (void *)(uintptr_t)v;
    return 0;
}

PyObject *
pygpu_t_dlpack(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    static const char *const names[] = {"stream", "max_version",
                                        "dl_device", "copy"};
    TensorObject *self = (TensorObject *)op, *t = NULL;
    PyObject *a[4], *cap = NULL;
    pygpu_device target;
    void *consumer;
    int versioned, copy = -1, sync;
    uint64_t flags = 0;
    if (pygpu_parse_args("__dlpack__", args, nargs, kwnames, names, 4, 0, 0,
                         a) < 0) {
        return NULL;
    }
    if (pygpu_requires_grad(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Can't export tensors that require gradient, use "
                        "tensor.detach()");
        return NULL;
    }
    if (a[3] != NULL && a[3] != Py_None &&
        pygpu_parse_bool(a[3], 0, &copy) < 0) {
        return NULL;
    }
    if (parse_max_version(a[1], &versioned) < 0 ||
        parse_dl_device(a[2], &self->device, &target) < 0 ||
        parse_stream(a[0], &target, &consumer, &sync) < 0) {
        return NULL;
    }
    if (!pygpu_device_equal(&target, &self->device)) {
        char from[32], to[32];
        if (copy == 0) {
            pygpu_device_str(&self->device, from, sizeof(from));
            pygpu_device_str(&target, to, sizeof(to));
            PyErr_Format(PyExc_BufferError,
                         "cannot move tensor from %s to %s without copying. "
                         "Set copy=None or copy=True.", from, to);
            return NULL;
        }
        copy = 1;
    }
    if (copy == 1) {
        t = pygpu_tensor_to(self, target, self->dtype);
        flags |= PYGPU_DL_FLAG_IS_COPIED;
    }
    else if (self->readonly && !versioned) {
        /* A legacy capsule cannot say that its memory must not be
         * written (a bytes object, a read-only mmap): refused, as NumPy
         * refuses, unless copy=True asks for a copy. */
        PyErr_SetString(PyExc_BufferError,
                        "Cannot export readonly tensor since signalling "
                        "readonly is unsupported by DLPack (supported by "
                        "newer DLPack version). Pass max_version=(1, 0), "
                        "or copy=True for a writable copy.");
        return NULL;
    }
    else {
        t = (TensorObject *)Py_NewRef(op);
        if (self->readonly) {
            flags |= PYGPU_DL_FLAG_READ_ONLY;
        }
    }
    if (t == NULL) {
        return NULL;
    }
    /* The consumer's stream waits for the work queued on ours. */
    if (sync && t->device.type == PYGPU_CUDA &&
        pygpu_cuda_stream_order(t->device.index,
                                pygpu_cuda_current_stream(t->device.index),
                                consumer) < 0) {
        goto fail;
    }
    cap = make_capsule(t, versioned, flags);
fail:
    Py_DECREF(t);
    return cap;
}

PyObject *
pygpu_t_dlpack_device(PyObject *op, PyObject *noargs)
{
    pygpu_dl_device d = dl_device_of(&((TensorObject *)op)->device);
    return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}
