/* tensor_data.c - pygpu.tensor(data)'s conversion: nested sequences,
 * scalars, NumPy arrays and tensors to a new tensor, with torch's dtype
 * inference and its errors for integers that int64 cannot hold. */
#include "tensor/tensor.h"

/* The pygpu dtype for a NumPy dtype met in pygpu.tensor(): float16/32/64,
 * int64, int32, uint8 and bool map to themselves, other integers to
 * int64; anything else is refused. */
static int
dtype_for_array(PyArrayObject *arr, int from_ndarray)
{
    PyArray_Descr *d = PyArray_DESCR(arr);
    int code = pygpu_dtype_from_npy(d->type_num);
    if (code == PYGPU_FLOAT64 && !from_ndarray) {
        return pygpu_default_dtype(); /* Python floats: the default */
    }
    if (code >= 0) {
        return code;
    }
    if (PyTypeNum_ISINTEGER(d->type_num)) {
        return PYGPU_INT64;
    }
    if (d->type_num == NPY_LONGDOUBLE) {
        return PYGPU_FLOAT64;
    }
    PyErr_Format(PyExc_TypeError,
                 "can't convert data of numpy type %S to a pygpu tensor: the "
                 "supported types are float64, float32, float16, int64, "
                 "int32, uint8 and bool (and other integers, taken as "
                 "int64)", (PyObject *)d);
    return -1;
}

enum { HAS_FLOAT = 1, HAS_BIG_INT = 2 };

/* What nested lists and tuples of Python numbers hold: floats, and ints
 * outside int64 (NumPy would store those as uint64, float64 or objects). */
static int
scan_numbers(PyObject *obj, int depth)
{
    if (PyFloat_Check(obj)) {
        return HAS_FLOAT;
    }
    if (PyLong_Check(obj)) {
        int overflow;
        PyLong_AsLongLongAndOverflow(obj, &overflow);
        return overflow ? HAS_BIG_INT : 0;
    }
    int flags = 0;
    if ((PyList_Check(obj) || PyTuple_Check(obj)) && depth <= 64) {
        PyObject *seq = PySequence_Fast(obj, "");
        if (seq == NULL) {
            PyErr_Clear(); /* a list or tuple: cannot fail */
            return 0;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            flags |= scan_numbers(PySequence_Fast_GET_ITEM(seq, i),
                                  depth + 1);
        }
        Py_DECREF(seq);
    }
    return flags;
}

/* -1 with RuntimeError if a 64-bit unsigned array holds a value int64
 * cannot (NumPy's cast would wrap it round). */
static int
check_uint64_fits(PyArrayObject *arr)
{
    unsigned long long top;
    if (!PyTypeNum_ISUNSIGNED(PyArray_TYPE(arr)) ||
        PyArray_ITEMSIZE(arr) < 8 || PyArray_SIZE(arr) == 0) {
        return 0;
    }
    PyObject *max = PyArray_Max(arr, NPY_RAVEL_AXIS, NULL);
    PyObject *v = max ? PyNumber_Long(max) : NULL;
    Py_XDECREF(max);
    if (v == NULL) {
        return -1;
    }
    top = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (top == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (top > (unsigned long long)INT64_MAX) {
        PyErr_Format(PyExc_RuntimeError,
                     "value %llu of the %S array does not fit in int64 "
                     "(at most %lld); convert the array to float64 first",
                     top, (PyObject *)PyArray_DESCR(arr),
                     (long long)INT64_MAX);
        return -1;
    }
    return 0;
}

TensorObject *
pygpu_tensor_from_data(PyObject *data, int dtype, pygpu_device dev)
{
    PyArrayObject *arr = NULL;
    TensorObject *host = NULL, *result = NULL;
    if (Tensor_Check(data)) {
        TensorObject *t = (TensorObject *)data;
        return pygpu_tensor_to(t, dev, dtype < 0 ? t->dtype : dtype);
    }
    /* NumPy arrays and scalars keep their dtype; Python floats give float32 */
    int from_ndarray = PyArray_Check(data) || PyArray_IsScalar(data, Generic);
    if (PyUnicode_Check(data) || PyBytes_Check(data) || data == Py_None) {
        PyErr_Format(PyExc_TypeError,
                     "new(): invalid data type '%.100s'",
                     Py_TYPE(data)->tp_name);
        goto fail;
    }
    /* Python ints past int64 are torch's error unless floats are wanted */
    int found = from_ndarray ? 0 : scan_numbers(data, 0);
    int to_float = dtype >= 0 ? pygpu_dtype_table[dtype].is_floating_point
                              : (found & HAS_FLOAT) != 0;
    if ((found & HAS_BIG_INT) && !to_float) {
        PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
        goto fail;
    }
    arr = (PyArrayObject *)PyArray_FromAny(data, NULL, 0, 0, 0, NULL);
    if (arr == NULL) {
        goto fail; /* ragged lists: numpy's ValueError says why */
    }
    if ((found & HAS_BIG_INT) && PyArray_TYPE(arr) == NPY_OBJECT) {
        /* numbers numpy kept as objects: cast them to float64 */
        Py_SETREF(arr, (PyArrayObject *)PyArray_FromAny(
                           (PyObject *)arr,
                           PyArray_DescrFromType(NPY_FLOAT64), 0, 0,
                           NPY_ARRAY_FORCECAST, NULL));
        if (arr == NULL) {
            goto fail;
        }
    }
    if (PyArray_NDIM(arr) > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu tensors have at most %d dimensions, got %d",
                     PYGPU_MAX_DIMS, PyArray_NDIM(arr));
        goto fail;
    }
    if (!PyTypeNum_ISNUMBER(PyArray_TYPE(arr)) &&
        !PyTypeNum_ISBOOL(PyArray_TYPE(arr))) {
        PyErr_Format(PyExc_TypeError,
                     "new(): data must be numbers or nested sequences of "
                     "numbers, got numpy type %S",
                     (PyObject *)PyArray_DESCR(arr));
        goto fail;
    }
    if (PyTypeNum_ISCOMPLEX(PyArray_TYPE(arr))) {
        PyErr_SetString(PyExc_TypeError,
                        "pygpu has no complex dtypes");
        goto fail;
    }
    /* The array is taken in its own dtype (floats as float64 when a
     * floating dtype is asked for), then converted by pygpu's rules. */
    int natural = dtype >= 0 && pygpu_dtype_table[dtype].is_floating_point
                      ? PYGPU_FLOAT64
                      : dtype_for_array(arr, 1);
    if (natural < 0) {
        goto fail;
    }
    if (dtype < 0) {
        dtype = dtype_for_array(arr, from_ndarray);
    }
    if (natural == PYGPU_INT64 && check_uint64_fits(arr) < 0) {
        goto fail;
    }
    /* copied (and cast) into a new CPU tensor, so that the memory is
     * pygpu's (aligned as every CPU tensor's) */
    int64_t shape[PYGPU_MAX_DIMS];
    pygpu_device cpu = {PYGPU_CPU, -1};
    for (int d = 0; d < PyArray_NDIM(arr); d++) {
        shape[d] = (int64_t)PyArray_DIM(arr, d);
    }
    host = pygpu_tensor_empty(PyArray_NDIM(arr), shape, natural, cpu);
    if (host == NULL ||
        PyArray_CopyInto((PyArrayObject *)host->base, arr) < 0) {
        goto fail;
    }
    if (dev.type == PYGPU_CPU && dtype == natural) {
        result = host;
        host = NULL;
    }
    else {
        result = pygpu_tensor_to(host, dev, dtype);
    }
fail:
    Py_XDECREF(arr);
    Py_XDECREF(host);
    return result;
}
