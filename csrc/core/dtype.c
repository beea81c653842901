/* dtype.c - dtype objects (pygpu.float32, ...) and their table. */
#include "core/pygpu.h"

const pygpu_dtype_info pygpu_dtype_table[PYGPU_NDTYPES] = {
    [PYGPU_FLOAT32] = {PYGPU_FLOAT32, "float32", 4, NPY_FLOAT32, 1, "Float"},
    [PYGPU_FLOAT16] = {PYGPU_FLOAT16, "float16", 2, NPY_FLOAT16, 1, "Half"},
    [PYGPU_FLOAT64] = {PYGPU_FLOAT64, "float64", 8, NPY_FLOAT64, 1,
                       "Double"},
    [PYGPU_INT64] = {PYGPU_INT64, "int64", 8, NPY_INT64, 0, "Long"},
    [PYGPU_BOOL] = {PYGPU_BOOL, "bool", 1, NPY_BOOL, 0, "Bool"},
    [PYGPU_UINT8] = {PYGPU_UINT8, "uint8", 1, NPY_UINT8, 0, "Byte"},
    [PYGPU_INT32] = {PYGPU_INT32, "int32", 4, NPY_INT32, 0, "Int"},
    /* NumPy has no bfloat16: CPU storage is uint16 bit patterns, and the
     * NumPy boundary converts (tensor_data.c, tensor_convert.c). */
    [PYGPU_BFLOAT16] = {PYGPU_BFLOAT16, "bfloat16", 2, NPY_UINT16, 1,
                        "BFloat16"},
};

int
pygpu_dtype_from_npy(int npy_type)
{
    for (int i = 0; i < PYGPU_NDTYPES; i++) {
        if (i != PYGPU_BFLOAT16 && pygpu_dtype_table[i].npy_type == npy_type) {
            return i;
        }
    }
    /* NPY_LONGLONG and NPY_LONG are both 64-bit on LP64 systems; NPY_INT
     * and NPY_LONG may be the 32-bit one. */
    if ((npy_type == NPY_LONG && sizeof(long) == 8) ||
        (npy_type == NPY_LONGLONG && sizeof(long long) == 8)) {
        return PYGPU_INT64;
    }
    if ((npy_type == NPY_INT && sizeof(int) == 4) ||
        (npy_type == NPY_LONG && sizeof(long) == 4)) {
        return PYGPU_INT32;
    }
    return -1;
}

int
pygpu_dtype_category(int dtype)
{
    if (dtype == PYGPU_BOOL) {
        return PYGPU_CAT_BOOL;
    }
    return pygpu_dtype_table[dtype].is_floating_point ? PYGPU_CAT_FLOAT
                                                      : PYGPU_CAT_INT;
}

/* torch's promotion between tensors: bool < uint8 < int32 < int64 <
 * the floats, and among floats the wider one wins; float16 with bfloat16
 * (neither holds the other) gives float32. */
int
pygpu_promote(int a, int b)
{
    static const int rank[PYGPU_NDTYPES] = {
        [PYGPU_BOOL] = 0,    [PYGPU_UINT8] = 1,    [PYGPU_INT32] = 2,
        [PYGPU_INT64] = 3,   [PYGPU_FLOAT16] = 4,  [PYGPU_BFLOAT16] = 4,
        [PYGPU_FLOAT32] = 5, [PYGPU_FLOAT64] = 6,
    };
    if (a != b && rank[a] == rank[b]) {
        return PYGPU_FLOAT32; /* float16 and bfloat16 */
    }
    return rank[a] >= rank[b] ? a : b;
}

int
pygpu_parse_dtype_opt(PyObject *obj, int def, int *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = def;
        return 0;
    }
    if (DType_Check(obj)) {
        *out = ((DTypeObject *)obj)->code;
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "dtype must be a pygpu.dtype (e.g. pygpu.float32), not "
                 "%.100s", Py_TYPE(obj)->tp_name);
    return -1;
}

static PyObject *
dtype_repr(PyObject *self)
{
    return PyUnicode_FromFormat(
        "pygpu.%s", pygpu_dtype_table[((DTypeObject *)self)->code].name);
}

static void
dtype_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
dtype_get_itemsize(PyObject *self, void *closure)
{
    return PyLong_FromLong(pygpu_dtype_table[((DTypeObject *)self)->code]
                           .itemsize);
}

static PyObject *
dtype_get_is_floating_point(PyObject *self, void *closure)
{
    return PyBool_FromLong(pygpu_dtype_table[((DTypeObject *)self)->code]
                           .is_floating_point);
}

static PyObject *
dtype_get_numpy(PyObject *self, void *closure)
{
    if (((DTypeObject *)self)->code == PYGPU_BFLOAT16) {
        PyErr_SetString(PyExc_TypeError,
                        "Got unsupported ScalarType BFloat16");
        return NULL;
    }
    return (PyObject *)PyArray_DescrFromType(
        pygpu_dtype_table[((DTypeObject *)self)->code].npy_type);
}

static PyObject *
dtype_reduce(PyObject *self, PyObject *noargs)
{
    /* dtypes are singletons: pickle by name. */
    return PyUnicode_FromString(
        pygpu_dtype_table[((DTypeObject *)self)->code].name);
}

static PyGetSetDef dtype_getset[] = {
    {"itemsize", dtype_get_itemsize, NULL, "Bytes per element.", NULL},
    {"is_floating_point", dtype_get_is_floating_point, NULL,
     "True for float16, bfloat16, float32 and float64.", NULL},
    {"numpy_dtype", dtype_get_numpy, NULL, "The matching numpy.dtype.", NULL},
    {NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyType_Slot dtype_slots[] = {
    {Py_tp_dealloc, dtype_dealloc},
    {Py_tp_repr, dtype_repr},
    {Py_tp_getset, dtype_getset},
    {Py_tp_methods, dtype_methods},
    {Py_tp_doc, "A tensor element type: pygpu.float32, float16, bfloat16, "
                "float64, int64, int32, uint8, bool."},
    {0, NULL},
};

static PyType_Spec dtype_spec = {
    .name = "pygpu.dtype",
    .basicsize = sizeof(DTypeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dtype_slots,
};

int
pygpu_dtype_register(PyObject *m)
{
    PyObject *type = pygpu_add_type(m, &dtype_spec, NULL, "dtype");
    if (type == NULL) {
        return -1;
    }
    pygpu_state->DType_Type = (PyTypeObject *)type;
    for (int i = 0; i < PYGPU_NDTYPES; i++) {
        DTypeObject *d = PyObject_New(DTypeObject, (PyTypeObject *)type);
        if (d == NULL) {
            return -1;
        }
        d->code = i;
        pygpu_state->dtypes[i] = (PyObject *)d;
        if (PyModule_AddObjectRef(m, pygpu_dtype_table[i].name,
                                  (PyObject *)d) < 0) {
            return -1;
        }
    }
    return 0;
}
