/* tensor_core.c - the Tensor type: layout, allocation, lifetime, views.
 *
 * A tensor is (base, data, ndim, shape, strides, dtype, device).  `base`
 * owns the memory: a NumPy array for plain CPU tensors (so from_numpy and
 * .numpy() share memory), a Storage for CUDA and pinned tensors.  Views
 * share the base and differ in data/shape/strides.
 */
#include "pygpu.h"

#include <string.h>

#include <stdatomic.h>
#include <structmember.h>

static atomic_int poison = 0;

void
pygpu_set_poison(int on)
{
    atomic_store(&poison, on ? 1 : 0);
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

int64_t
pygpu_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
    }
    return n;
}

void
pygpu_format_shape(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndim; d++) {
        if (used + 32 > n) {
            PyOS_snprintf(buf + used, n - used, "...");
            return;
        }
        used += (size_t)PyOS_snprintf(buf + used, n - used,
                                      d ? ", %lld" : "%lld",
                                      (long long)shape[d]);
    }
}

int
pygpu_shape_numel(int ndim, const int64_t *shape, int64_t *out)
{
    char buf[256];
    int64_t n = 1;
    int overflow = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            pygpu_format_shape(buf, sizeof(buf), ndim, shape);
            PyErr_Format(PyExc_RuntimeError,
                         "Trying to create tensor with negative dimension "
                         "%lld: [%s]", (long long)shape[d], buf);
            return -1;
        }
        overflow |= __builtin_mul_overflow(n, shape[d], &n);
    }
    if (overflow) {
        pygpu_format_shape(buf, sizeof(buf), ndim, shape);
        PyErr_Format(PyExc_RuntimeError,
                     "numel: integer multiplication overflow for shape [%s]",
                     buf);
        return -1;
    }
    *out = n;
    return 0;
}

int
pygpu_is_contiguous(const TensorObject *t)
{
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] == 0) {
            return 1;
        }
        if (t->shape[d] != 1 && t->strides[d] != expected) {
            return 0;
        }
        expected *= t->shape[d];
    }
    return 1;
}

static void
contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
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

static TensorObject *
tensor_alloc(PyTypeObject *tp)
{
    TensorObject *t = (TensorObject *)tp->tp_alloc(tp, 0);
    return t; /* zero-filled: base, dict, weakreflist NULL */
}

/* A new base-class tensor object with a contiguous geometry and no memory
 * yet (base and data NULL). */
static TensorObject *
contiguous_alloc(int ndim, const int64_t *shape, int dtype, pygpu_device dev)
{
    TensorObject *t = tensor_alloc(pygpu_state->Tensor_Type);
    if (t == NULL) {
        return NULL;
    }
    t->dtype = dtype;
    t->ndim = ndim;
    t->device = dev;
    if (ndim > 0) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    }
    contiguous_strides(ndim, t->shape, t->strides);
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
    if (dev.type == PYGPU_CPU) {
        npy_intp dims[PYGPU_MAX_DIMS];
        for (int d = 0; d < ndim; d++) {
            dims[d] = (npy_intp)shape[d];
        }
        t->device.index = -1;
        t->base = PyArray_SimpleNew(ndim, dims,
                                    pygpu_dtype_table[dtype].npy_type);
        if (t->base == NULL) {
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

/* A new tensor object of type tp viewing src with its own geometry. */
static TensorObject *
view_as_type(PyTypeObject *tp, TensorObject *src, int ndim,
             const int64_t *shape, const int64_t *strides,
             int64_t elem_offset)
{
    TensorObject *t = tensor_alloc(tp);
    if (t == NULL) {
        return NULL;
    }
    t->base = Py_NewRef(src->base);
    t->readonly = src->readonly;
    t->dtype = src->dtype;
    t->device = src->device;
    t->ndim = ndim;
    if (ndim > 0) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
        memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    t->data = src->data +
              elem_offset * (int64_t)pygpu_dtype_table[src->dtype].itemsize;
    return t;
}

TensorObject *
pygpu_tensor_view(TensorObject *t, int ndim, const int64_t *shape,
                  const int64_t *strides, int64_t elem_offset)
{
    return view_as_type(pygpu_state->Tensor_Type, t, ndim, shape, strides,
                        elem_offset);
}

int
pygpu_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim,
                  int64_t *shape)
{
    PyObject *seq;
    PyObject *const *items;
    Py_ssize_t n;
    int64_t numel;
    int rc = -1;
    if (pygpu_unpack_dims(args, nargs, &seq, &items, &n) < 0) {
        return -1;
    }
    if (pygpu_parse_sizes("size", items, n, shape) < 0 ||
        pygpu_shape_numel((int)n, shape, &numel) < 0) {
        goto fail;
    }
    *ndim = (int)n;
    rc = 0;
fail:
    Py_XDECREF(seq);
    return rc;
}

/* ------------------------------------------------------------- lifetime */

static int
tensor_traverse(PyObject *self, visitproc visit, void *arg)
{
    TensorObject *t = (TensorObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(t->base);
    Py_VISIT(t->dict);
    return 0;
}

static int
tensor_clear(PyObject *self)
{
    TensorObject *t = (TensorObject *)self;
    Py_CLEAR(t->dict);
    /* base is kept until dealloc: data must stay valid while the object
     * can still be reached by other objects being cleared. */
    return 0;
}

static void
tensor_dealloc(PyObject *self)
{
    TensorObject *t = (TensorObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (t->weakreflist != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    Py_CLEAR(t->dict);
    Py_CLEAR(t->base);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* Tensor(*size) / Tensor(sequence) / Tensor(tensor): torch.Tensor's legacy
 * constructor, float32 on the CPU; subclasses (nn.Parameter) get a view of
 * the given tensor. */
static PyObject *
tensor_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    PyObject *made = NULL, *result = NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError,
                        "Tensor() takes no keyword arguments; use "
                        "pygpu.tensor(data, dtype=..., device=...)");
        return NULL;
    }
    if (nargs == 1 && Tensor_Check(PyTuple_GET_ITEM(args, 0))) {
        made = Py_NewRef(PyTuple_GET_ITEM(args, 0));
    }
    else if (nargs == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0)) &&
             !PyTuple_Check(PyTuple_GET_ITEM(args, 0))) {
        pygpu_device cpu = {PYGPU_CPU, -1};
        made = (PyObject *)pygpu_tensor_from_data(PyTuple_GET_ITEM(args, 0),
                                                  PYGPU_FLOAT32, cpu);
    }
    else {
        int ndim = 1;
        int64_t shape[PYGPU_MAX_DIMS] = {0}; /* Tensor(): shape (0,) */
        pygpu_device cpu = {PYGPU_CPU, -1};
        if (nargs > 0 && pygpu_parse_shape(PySequence_Fast_ITEMS(args),
                                           nargs, &ndim, shape) < 0) {
            return NULL;
        }
        made = (PyObject *)pygpu_tensor_empty(ndim, shape, PYGPU_FLOAT32, cpu);
    }
    if (made == NULL) {
        return NULL;
    }
    if (tp == pygpu_state->Tensor_Type) {
        return made;
    }
    TensorObject *m = (TensorObject *)made;
    result = (PyObject *)view_as_type(tp, m, m->ndim, m->shape, m->strides,
                                      0);
    Py_DECREF(made);
    return result;
}

static PyMemberDef tensor_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(TensorObject, dict), READONLY},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TensorObject, weakreflist),
     READONLY},
    {NULL},
};

/* Number, mapping and other slots live in tensor_number.c and
 * tensor_methods.c; they are appended here. */
extern PyType_Slot pygpu_tensor_number_slots[];

#define NCORE_SLOTS 10
static PyType_Slot tensor_slots[NCORE_SLOTS + 40] = {
    {Py_tp_new, tensor_tp_new},
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_traverse, tensor_traverse},
    {Py_tp_clear, tensor_clear},
    {Py_tp_members, tensor_members},
    {Py_tp_methods, pygpu_tensor_methods},
    {Py_tp_getset, pygpu_tensor_getset},
    {Py_tp_doc,
     "Tensor(*args)\n--\n\n"
     "An n-dimensional array on the CPU or a CUDA device.  Create one with\n"
     "pygpu.tensor, zeros, ones, empty, full, rand, randn or from_numpy.\n\n"
     "The legacy constructor, as torch.Tensor (float32 on the CPU):\n\n"
     "    Tensor(*size)   uninitialised, of that shape (Tensor(): (0,))\n"
     "    Tensor(data)    a copy of data (nested lists, NumPy arrays)\n"
     "    Tensor(tensor)  that tensor (a subclass gets a view of it)"},
    {0, NULL},
};

static PyType_Spec tensor_spec = {
    .name = "pygpu.Tensor",
    .basicsize = sizeof(TensorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = tensor_slots,
};

int
pygpu_tensor_register(PyObject *m)
{
    int n = 0;
    while (tensor_slots[n].slot != 0) {
        n++;
    }
    for (int i = 0; pygpu_tensor_number_slots[i].slot != 0; i++) {
        tensor_slots[n++] = pygpu_tensor_number_slots[i];
    }
    tensor_slots[n].slot = 0;
    tensor_slots[n].pfunc = NULL;
    PyObject *type = PyType_FromModuleAndSpec(m, &tensor_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    pygpu_state->Tensor_Type = (PyTypeObject *)type;
    /* NumPy defers to the tensor's own (reflected) operators instead of
     * converting it and answering with an ndarray. */
    if (PyObject_SetAttrString(type, "__array_ufunc__", Py_None) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(m, "Tensor", type);
}
