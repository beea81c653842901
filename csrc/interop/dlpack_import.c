/* dlpack_import.c - tensors over DLPack capsules, without copying
 * (_from_dlpack; pygpu.from_dlpack negotiates the capsule in Python).
 *
 * The capsule's managed tensor moves into an "owner" capsule of pygpu's
 * own whose destructor calls the producer's deleter; the consumed capsule
 * is renamed "used_...".  CPU memory (kDLCPU, kDLCUDAHost) becomes a NumPy
 * array over it whose base is the owner, and the tensor's base that
 * array; CUDA memory (kDLCUDA) a Storage wrapping foreign memory with the
 * owner (never given to pygpu's allocator, not counted in its figures). */
#include "interop/dlpack.h"

#include <string.h>

#define OWNER_NAME "pygpu.dlpack_owner"
#define OWNER_NAME_V "pygpu.dlpack_owner_versioned"

static void
owner_destructor(PyObject *owner)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyCapsule_IsValid(owner, OWNER_NAME_V)) {
        pygpu_dl_managed_v *m = PyCapsule_GetPointer(owner, OWNER_NAME_V);
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
    else if (PyCapsule_IsValid(owner, OWNER_NAME)) {
        pygpu_dl_managed *m = PyCapsule_GetPointer(owner, OWNER_NAME);
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
    PyErr_Restore(type, value, tb);
}

/* What the DLTensor describes, checked before anything is consumed. */
typedef struct {
    char *data;
    pygpu_device device;
    int dtype;
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    int64_t strides[PYGPU_MAX_DIMS];
    size_t span; /* bytes from data to one past the last element */
} described;

static int
describe_device(const pygpu_dl_device *d, pygpu_device *out)
{
    if (d->device_type == PYGPU_DL_CPU ||
        d->device_type == PYGPU_DL_CUDA_HOST) {
        out->type = PYGPU_CPU;
        out->index = -1;
        return 0;
    }
    if (d->device_type == PYGPU_DL_CUDA) {
        out->type = PYGPU_CUDA;
        out->index = d->device_id;
        return pygpu_device_resolve(out);
    }
    PyErr_Format(PyExc_BufferError,
                 "pygpu cannot import DLPack device type %d (kDLCPU, "
                 "kDLCUDAHost and kDLCUDA are supported)",
                 (int)d->device_type);
    return -1;
}

static int
describe(const pygpu_dl_tensor *dl, described *out)
{
    int64_t numel = 1, bytes;
    size_t itemsize;
    if (dl->ndim < 0 || dl->ndim > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_BufferError,
                     "pygpu tensors have at most %d dimensions, the DLPack "
                     "tensor has %d", PYGPU_MAX_DIMS, (int)dl->ndim);
        return -1;
    }
    out->dtype = pygpu_dl_to_dtype(dl->dtype);
    if (out->dtype < 0 || describe_device(&dl->device, &out->device) < 0) {
        return -1;
    }
    out->ndim = dl->ndim;
    itemsize = (size_t)pygpu_dtype_table[out->dtype].itemsize;
    if (out->ndim > 0 && dl->shape == NULL) {
        PyErr_SetString(PyExc_BufferError, "DLPack tensor without a shape");
        return -1;
    }
    for (int d = 0; d < out->ndim; d++) {
        out->shape[d] = dl->shape[d];
    }
    if (pygpu_shape_numel(out->ndim, out->shape, &numel) < 0) {
        return -1;
    }
    if (dl->strides == NULL) {
        pygpu_contiguous_strides(out->ndim, out->shape, out->strides);
    }
    for (int d = 0; d < out->ndim && dl->strides != NULL; d++) {
        out->strides[d] = dl->strides[d];
    }
    for (int d = 0; d < out->ndim && numel > 0; d++) {
        if (out->strides[d] < 0) {
            PyErr_SetString(PyExc_BufferError,
                            "pygpu tensors cannot have negative strides");
            return -1;
        }
    }
    for (int d = 0; d < out->ndim; d++) {
        /* NumPy's strides are in bytes: each must fit (any stride may
         * come with a dim of one element or none). */
        if (__builtin_mul_overflow(out->strides[d], (int64_t)itemsize,
                                   &bytes)) {
            PyErr_Format(PyExc_BufferError,
                         "DLPack stride %lld overflows int64 in bytes",
                         (long long)out->strides[d]);
            return -1;
        }
    }
    out->data = (char *)dl->data + dl->byte_offset;
    if (numel > 0 && (uintptr_t)out->data % itemsize != 0) {
        PyErr_SetString(PyExc_BufferError,
                        "DLPack data is not aligned to its element size");
        return -1;
    }
    return pygpu_strided_nbytes(out->ndim, out->shape, out->strides,
                                out->dtype, &out->span);
}

static TensorObject *
tensor_over(PyObject *base, const described *d, int readonly)
{
    PyTypeObject *tp = pygpu_state->Tensor_Type;
    TensorObject *t = (TensorObject *)tp->tp_alloc(tp, 0);
    if (t == NULL) {
        Py_DECREF(base);
        return NULL;
    }
    t->base = base; /* stolen */
    t->data = d->data;
    t->dtype = d->dtype;
    t->ndim = d->ndim;
    t->device = d->device;
    t->readonly = readonly;
    for (int i = 0; i < d->ndim; i++) {
        t->shape[i] = d->shape[i];
        t->strides[i] = d->strides[i];
    }
    return t;
}

/* The base of the new tensor: an ndarray or a Storage over the memory,
 * holding `owner`. */
static PyObject *
base_over(const described *d, PyObject *owner, int readonly)
{
    npy_intp dims[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    int itemsize = pygpu_dtype_table[d->dtype].itemsize;
    PyObject *arr;
    if (d->device.type == PYGPU_CUDA) {
        return (PyObject *)pygpu_storage_foreign(d->device, d->data, d->span,
                                                 owner);
    }
    for (int i = 0; i < d->ndim; i++) {
        dims[i] = (npy_intp)d->shape[i];
        strides[i] = (npy_intp)(d->strides[i] * itemsize);
    }
    arr = PyArray_NewFromDescr(
        &PyArray_Type,
        PyArray_DescrFromType(pygpu_dtype_table[d->dtype].npy_type), d->ndim,
        dims, strides, d->data, readonly ? 0 : NPY_ARRAY_WRITEABLE, NULL);
    if (arr == NULL) {
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef(owner)) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

static PyObject *
from_dlpack_capsule(PyObject *m, PyObject *cap)
{
    const char *name = PyCapsule_CheckExact(cap) ? PyCapsule_GetName(cap)
                                                 : NULL;
    int versioned = name != NULL && strcmp(name, PYGPU_DL_NAME_V) == 0;
    void *managed;
    const pygpu_dl_tensor *dl;
    described d;
    int readonly = 0;
    PyObject *owner = NULL, *base = NULL;
    if (!PyCapsule_CheckExact(cap)) {
        PyErr_Format(PyExc_TypeError,
                     "from_dlpack(): expected an object with __dlpack__ or "
                     "a DLPack capsule, got %.100s", Py_TYPE(cap)->tp_name);
        return NULL;
    }
    if (!versioned && (name == NULL || strcmp(name, PYGPU_DL_NAME) != 0)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_RuntimeError,
                        "from_dlpack received an invalid capsule. Note that "
                        "DLTensor capsules can be consumed only once, so you "
                        "might have already constructed a tensor from it "
                        "once.");
        return NULL;
    }
    managed = PyCapsule_GetPointer(cap, name);
    if (managed == NULL) {
        return NULL;
    }
    if (versioned) {
        const pygpu_dl_managed_v *mv = managed;
        if (mv->version.major > PYGPU_DLPACK_MAJOR) {
            PyErr_Format(PyExc_BufferError,
                         "DLPack version %u.%u is not supported (pygpu reads "
                         "versions up to %d.x)", (unsigned)mv->version.major,
                         (unsigned)mv->version.minor, PYGPU_DLPACK_MAJOR);
            return NULL;
        }
        readonly = (mv->flags & PYGPU_DL_FLAG_READ_ONLY) != 0;
        dl = &mv->dl_tensor;
    }
    else {
        dl = &((const pygpu_dl_managed *)managed)->dl_tensor;
    }
    if (describe(dl, &d) < 0) {
        return NULL;
    }
    /* From here the managed tensor belongs to the owner. */
    owner = PyCapsule_New(managed, versioned ? OWNER_NAME_V : OWNER_NAME,
                          owner_destructor);
    if (owner == NULL) {
        return NULL;
    }
    if (PyCapsule_SetName(cap, versioned ? PYGPU_DL_USED_V : PYGPU_DL_USED) <
        0) {
        (void)PyCapsule_SetName(owner, "pygpu.dlpack_unowned");
        Py_DECREF(owner);
        return NULL;
    }
    base = base_over(&d, owner, readonly);
    Py_DECREF(owner);
    if (base == NULL) {
        return NULL;
    }
    if (PyArray_Check(base)) {
        d.data = PyArray_BYTES((PyArrayObject *)base); /* NULL if 0 bytes */
    }
    return (PyObject *)tensor_over(base, &d, readonly);
}

PyMethodDef pygpu_dlpack_functions[] = {
    {"_from_dlpack", from_dlpack_capsule, METH_O,
     "_from_dlpack($module, capsule, /)\n--\n\n"
     "A tensor sharing the memory of a DLPack capsule (\"dltensor\" or\n"
     "\"dltensor_versioned\"), which is consumed: renamed \"used_...\"."},
    {"_from_cuda_array_interface", pygpu_from_cuda_array_interface, METH_O,
     "_from_cuda_array_interface($module, obj, /)\n--\n\n"
     "A CUDA tensor sharing the memory described by\n"
     "obj.__cuda_array_interface__ (which it keeps alive)."},
    {NULL},
};
