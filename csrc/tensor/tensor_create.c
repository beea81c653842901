/* tensor_create.c - pygpu.tensor, from_numpy, empty, zeros, ones, full,
 * rand, randn and their *_like forms.  Data to tensor is tensor_data.c. */
#include "tensor/tensor.h"
#include "interop/dlpack.h"

static const pygpu_device cpu_device = {PYGPU_CPU, -1};

PyObject *
pygpu_with_requires_grad(PyObject *t, PyObject *flag)
{
    if (t == NULL || flag == NULL || flag == Py_False) {
        return t;
    }
    if (PyObject_SetAttrString(t, "requires_grad", flag) < 0) {
        Py_CLEAR(t);
    }
    return t;
}

TensorObject *
pygpu_tensor_from_ndarray(PyArrayObject *arr)
{
    int nd = PyArray_NDIM(arr);
    int code = pygpu_dtype_from_npy(PyArray_TYPE(arr));
    if (code < 0) {
        PyErr_Format(PyExc_TypeError,
                     "can't convert np.ndarray of type %S. The only "
                     "supported types are: float64, float32, float16, int64, "
                     "int32, uint8, and bool.",
                     (PyObject *)PyArray_DESCR(arr));
        return NULL;
    }
    if (!PyArray_ISNOTSWAPPED(arr) || !PyArray_ISALIGNED(arr)) {
        PyErr_SetString(PyExc_TypeError,
                        "can't convert a byte-swapped or unaligned "
                        "np.ndarray; make a native copy first");
        return NULL;
    }
    if (nd > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu tensors have at most %d dimensions, got %d",
                     PYGPU_MAX_DIMS, nd);
        return NULL;
    }
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
    npy_intp itemsize = PyArray_ITEMSIZE(arr);
    for (int d = 0; d < nd; d++) {
        npy_intp s = PyArray_STRIDES(arr)[d];
        shape[d] = PyArray_DIMS(arr)[d];
        if (s < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "At least one stride in the given numpy array "
                            "is negative, and tensors with negative strides "
                            "are not currently supported. (You can probably "
                            "work around this by making a copy of your array "
                            " with array.copy().)");
            return NULL;
        }
        if (s % itemsize != 0) {
            PyErr_SetString(PyExc_ValueError,
                            "given numpy array strides not a multiple of the "
                            "element byte size. Copy the numpy array to "
                            "reallocate the memory.");
            return NULL;
        }
        strides[d] = s / itemsize;
    }
    TensorObject *t = (TensorObject *)pygpu_state->Tensor_Type->tp_alloc(
        pygpu_state->Tensor_Type, 0);
    if (t == NULL) {
        return NULL;
    }
    t->base = Py_NewRef((PyObject *)arr);
    t->data = PyArray_BYTES(arr);
    t->dtype = code;
    t->ndim = nd;
    t->device = cpu_device;
    for (int d = 0; d < nd; d++) {
        t->shape[d] = shape[d];
        t->strides[d] = strides[d];
    }
    return t;
}

static PyObject *
from_numpy(PyObject *self, PyObject *arg)
{
    if (!PyArray_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "expected np.ndarray (got %.100s)",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    TensorObject *t = pygpu_tensor_from_ndarray((PyArrayObject *)arg);
    if (t != NULL) {
        /* torch warns and shares anyway; here every write is refused */
        t->readonly = !PyArray_ISWRITEABLE((PyArrayObject *)arg);
    }
    return (PyObject *)t;
}

static PyObject *
tensor_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
          PyObject *kwnames)
{
    static const char *const names[] = {"data", "dtype", "device",
                                        "requires_grad"};
    PyObject *a[4];
    int dtype;
    pygpu_device dev;
    if (pygpu_parse_args("tensor", args, nargs, kwnames, names, 4, 1, 1,
                         a) < 0 ||
        pygpu_parse_dtype_opt(a[1], -1, &dtype) < 0) {
        return NULL;
    }
    if (pygpu_has_cuda_array_interface(a[0])) {
        return pygpu_with_requires_grad(
            pygpu_tensor_copy_cuda_array(a[0], dtype, a[2]), a[3]);
    }
    /* A tensor's copy stays on its device unless one is given or a
     * default device was set (torch's device context fills device=). */
    pygpu_device def_dev = pygpu_default_device();
    const pygpu_device *dflt =
        Tensor_Check(a[0]) && !pygpu_default_device_is_set()
            ? &((TensorObject *)a[0])->device
            : &def_dev;
    if (pygpu_parse_device_opt(a[2], dflt, &dev) < 0 ||
        pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    return pygpu_with_requires_grad(
        (PyObject *)pygpu_tensor_from_data(a[0], dtype, dev), a[3]);
}

/* ------------------------------------------------- factories by shape */

enum fill_kind { FILL_EMPTY, FILL_VALUE, FILL_UNIFORM, FILL_NORMAL };

/* Shared tail of all factories: make the tensor and fill it. */
static PyObject *
make_filled(int ndim, const int64_t *shape, int dtype, pygpu_device dev,
            enum fill_kind kind, double value, PyObject *generator,
            const char *fname)
{
    if ((kind == FILL_UNIFORM || kind == FILL_NORMAL) &&
        !pygpu_dtype_table[dtype].is_floating_point) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s() is only defined for floating point dtypes, got "
                     "%s", fname, pygpu_dtype_table[dtype].name);
        return NULL;
    }
    if (pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    TensorObject *t = pygpu_tensor_empty(ndim, shape, dtype, dev);
    if (t == NULL) {
        return NULL;
    }
    int rc = 0;
    if (kind == FILL_VALUE) {
        rc = pygpu_op_fill(t, value);
    }
    else if (kind != FILL_EMPTY) {
        rc = pygpu_op_random(t, kind == FILL_NORMAL, generator);
    }
    if (rc < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

/* factory(*size, [fill_value,] dtype=None, device=None, requires_grad=False)
 * For full, the last positional argument is the value.  `like` (may be
 * NULL) gives the default dtype and device: the Tensor.new_* methods. */
static PyObject *
factory(const char *fname, enum fill_kind kind, int has_value,
        const TensorObject *like, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    static const char *const names[] = {"size", "fill_value", "dtype",
                                        "device", "requires_grad",
                                        "pin_memory", "generator"};
    PyObject *kw[7] = {NULL};
    int ndim = 0, dtype;
    int64_t shape[PYGPU_MAX_DIMS];
    pygpu_device dev;
    double value = 0.0;
    /* keywords by name; positionals are the size (and the value) */
    if (pygpu_parse_args(fname, args + nargs, 0, kwnames, names, 7, 0, 0,
                         kw) < 0) {
        return NULL;
    }
    if (kw[6] != NULL && kind != FILL_UNIFORM && kind != FILL_NORMAL) {
        PyErr_Format(PyExc_TypeError,
                     "%s() got an unexpected keyword argument 'generator'",
                     fname);
        return NULL;
    }
    Py_ssize_t nsize = nargs;
    if (has_value && kw[1] == NULL) {
        if (nargs < 2) {
            PyErr_Format(PyExc_TypeError,
                         "%s() missing required arguments 'size' and "
                         "'fill_value'", fname);
            return NULL;
        }
        kw[1] = args[nargs - 1];
        nsize = nargs - 1;
    }
    if (!has_value && kw[1] != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%s() got an unexpected keyword argument 'fill_value'",
                     fname);
        return NULL;
    }
    if (kw[0] != NULL) {
        if (nsize > 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got multiple values for argument 'size'",
                         fname);
            return NULL;
        }
        if (pygpu_parse_shape(&kw[0], 1, &ndim, shape) < 0) {
            return NULL;
        }
    }
    else if (pygpu_parse_shape(args, nsize, &ndim, shape) < 0) {
        return NULL;
    }
    int def = pygpu_default_dtype();
    if (has_value) {
        PyObject *v = kw[1];
        if (PyBool_Check(v)) {
            def = PYGPU_BOOL;
        }
        else if (PyLong_Check(v)) {
            def = PYGPU_INT64;
        }
        else if (!PyFloat_Check(v) && !PyIndex_Check(v)) {
            PyObject *f = PyNumber_Float(v);
            if (f == NULL) {
                PyErr_Format(PyExc_TypeError,
                             "full(): fill_value must be a number, not "
                             "%.100s", Py_TYPE(v)->tp_name);
                return NULL;
            }
            Py_DECREF(f);
        }
        value = PyFloat_AsDouble(v);
        if (value == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    pygpu_device def_dev = pygpu_default_device();
    if (pygpu_parse_dtype_opt(kw[2], like ? like->dtype : def, &dtype) < 0 ||
        pygpu_parse_device_opt(kw[3], like ? &like->device : &def_dev,
                               &dev) < 0) {
        return NULL;
    }
    PyObject *t = make_filled(ndim, shape, dtype, dev, kind,
                              kind == FILL_VALUE ? value : 0.0, kw[6], fname);
    if (t != NULL && kw[5] != NULL && PyObject_IsTrue(kw[5])) {
        Py_SETREF(t, PyObject_CallMethod(t, "pin_memory", NULL));
    }
    return pygpu_with_requires_grad(t, kw[4]);
}

#define FACTORY(name, kind, has_value)                                       \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return factory(#name, kind, has_value, NULL, args, nargs, kwnames);  \
    }

FACTORY(empty, FILL_EMPTY, 0)
FACTORY(zeros, FILL_VALUE, 0)
FACTORY(full, FILL_VALUE, 1)
FACTORY(rand, FILL_UNIFORM, 0)
FACTORY(randn, FILL_NORMAL, 0)

static PyObject *
ones_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    /* ones == full(size, 1.0) with float32 as the default dtype */
    PyObject *t = factory("ones", FILL_EMPTY, 0, NULL, args, nargs,
                          kwnames);
    if (t != NULL && pygpu_op_fill((TensorObject *)t, 1.0) < 0) {
        Py_CLEAR(t);
    }
    return t;
}

/* name_like(t, [fill_value,] dtype=None, device=None) */
static PyObject *
like(const char *fname, enum fill_kind kind, double fixed, int has_value,
     PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"input", "fill_value", "dtype",
                                        "device", "requires_grad"};
    PyObject *a[5];
    int dtype;
    pygpu_device dev;
    double value = fixed;
    if (pygpu_parse_args(fname, args, nargs, kwnames, names, 5,
                         has_value ? 2 : 1, has_value ? 2 : 1, a) < 0) {
        return NULL;
    }
    if (!Tensor_Check(a[0])) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument 'input' must be Tensor, not %.100s",
                     fname, Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    TensorObject *t = (TensorObject *)a[0];
    if (has_value) {
        value = PyFloat_AsDouble(a[1]);
        if (value == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    if (pygpu_parse_dtype_opt(a[2], t->dtype, &dtype) < 0 ||
        pygpu_parse_device_opt(a[3], &t->device, &dev) < 0) {
        return NULL;
    }
    return pygpu_with_requires_grad(
        make_filled(t->ndim, t->shape, dtype, dev, kind, value, NULL, fname),
        a[4]);
}

#define LIKE(name, kind, fixed, has_value)                                   \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return like(#name, kind, fixed, has_value, args, nargs, kwnames);    \
    }

LIKE(empty_like, FILL_EMPTY, 0.0, 0)
LIKE(zeros_like, FILL_VALUE, 0.0, 0)
LIKE(ones_like, FILL_VALUE, 1.0, 0)
LIKE(full_like, FILL_VALUE, 0.0, 1)
LIKE(rand_like, FILL_UNIFORM, 0.0, 0)
LIKE(randn_like, FILL_NORMAL, 0.0, 0)

/* Tensor.new_*(...): the factories with self's dtype and device as the
 * defaults (tensor_methods.c lists them). */
#define NEW_METHOD(name, kind, has_value)                                    \
    PyObject *pygpu_t_##name(PyObject *op, PyObject *const *args,            \
                             Py_ssize_t nargs, PyObject *kwnames)            \
    {                                                                        \
        return factory(#name, kind, has_value, (TensorObject *)op, args,     \
                       nargs, kwnames);                                      \
    }

NEW_METHOD(new_empty, FILL_EMPTY, 0)
NEW_METHOD(new_zeros, FILL_VALUE, 0)
NEW_METHOD(new_full, FILL_VALUE, 1)

PyObject *
pygpu_t_new_ones(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    PyObject *t = factory("new_ones", FILL_EMPTY, 0, (TensorObject *)op,
                          args, nargs, kwnames);
    if (t != NULL && pygpu_op_fill((TensorObject *)t, 1.0) < 0) {
        Py_CLEAR(t);
    }
    return t;
}

/* new_tensor(data, dtype=None, device=None): a copy of data with self's
 * dtype and device unless given. */
PyObject *
pygpu_t_new_tensor(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames)
{
    static const char *const names[] = {"data", "dtype", "device",
                                        "requires_grad"};
    TensorObject *self = (TensorObject *)op;
    PyObject *a[4];
    int dtype;
    pygpu_device dev;
    if (pygpu_parse_args("new_tensor", args, nargs, kwnames, names, 4, 1, 1,
                         a) < 0 ||
        pygpu_parse_dtype_opt(a[1], self->dtype, &dtype) < 0 ||
        pygpu_parse_device_opt(a[2], &self->device, &dev) < 0 ||
        pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    return pygpu_with_requires_grad(
        (PyObject *)pygpu_tensor_from_data(a[0], dtype, dev), a[3]);
}


PyMethodDef pygpu_create_functions[] = {
    {"tensor", FASTKW(tensor_fn),
     "tensor($module, data, *, dtype=None, device=None,\n"
     "       requires_grad=False)\n--\n\n"
     "A new tensor holding a copy of data (nested lists, scalars, NumPy\n"
     "arrays, tensors).  Floats give float32, ints int64, unless dtype.\n"
     "requires_grad=True makes it a leaf that autograd tracks."},
    {"from_numpy", from_numpy, METH_O,
     "from_numpy($module, ndarray, /)\n--\n\n"
     "A CPU tensor sharing memory with a NumPy array."},
    {"empty", FASTKW(empty_fn),
     "empty($module, *size, dtype=None, device=None, requires_grad=False,\n"
     "      pin_memory=False)\n--\n\n"
     "An uninitialised tensor.  size is ints or one tuple/Size:\n"
     "empty(2, 3) or empty((2, 3))."},
    {"zeros", FASTKW(zeros_fn),
     "zeros($module, *size, dtype=None, device=None, requires_grad=False,\n"
     "      pin_memory=False)\n--\n\n"
     "A tensor of zeros.  size is ints or one tuple/Size."},
    {"ones", FASTKW(ones_fn),
     "ones($module, *size, dtype=None, device=None, requires_grad=False,\n"
     "     pin_memory=False)\n--\n\n"
     "A tensor of ones.  size is ints or one tuple/Size."},
    {"full", FASTKW(full_fn),
     "full($module, size, fill_value, *, dtype=None, device=None,\n"
     "     requires_grad=False, pin_memory=False)\n--\n\n"
     "A tensor of the shape size (a tuple/Size) filled with fill_value\n"
     "(int64 for an int value, float32 for a float, unless dtype)."},
    {"rand", FASTKW(rand_fn),
     "rand($module, *size, generator=None, dtype=None, device=None,\n"
     "     requires_grad=False, pin_memory=False)\n--\n\n"
     "Uniform random numbers in [0, 1), from the device's generator."},
    {"randn", FASTKW(randn_fn),
     "randn($module, *size, generator=None, dtype=None, device=None,\n"
     "      requires_grad=False, pin_memory=False)\n--\n\n"
     "Standard normal random numbers, from the device's generator."},
    {"empty_like", FASTKW(empty_like_fn),
     "empty_like($module, input, *, dtype=None, device=None,\n"
     "           requires_grad=False)\n--\n\n"
     "An uninitialised tensor of input's shape (and dtype and device, unless\n"
     "given)."},
    {"zeros_like", FASTKW(zeros_like_fn),
     "zeros_like($module, input, *, dtype=None, device=None,\n"
     "           requires_grad=False)\n--\n\n"
     "Zeros of input's shape (and dtype and device, unless given)."},
    {"ones_like", FASTKW(ones_like_fn),
     "ones_like($module, input, *, dtype=None, device=None,\n"
     "          requires_grad=False)\n--\n\n"
     "Ones of input's shape (and dtype and device, unless given)."},
    {"full_like", FASTKW(full_like_fn),
     "full_like($module, input, fill_value, *, dtype=None, device=None,\n"
     "          requires_grad=False)\n--\n\n"
     "fill_value in input's shape (and dtype and device, unless given)."},
    {"rand_like", FASTKW(rand_like_fn),
     "rand_like($module, input, *, dtype=None, device=None,\n"
     "          requires_grad=False)\n--\n\n"
     "Uniform [0, 1) numbers of input's shape (and dtype and device, unless\n"
     "given)."},
    {"randn_like", FASTKW(randn_like_fn),
     "randn_like($module, input, *, dtype=None, device=None,\n"
     "           requires_grad=False)\n--\n\n"
     "Standard normal numbers of input's shape (and dtype and device,\n"
     "unless given)."},
    {NULL},
};
