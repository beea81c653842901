/* args.c - argument parsing for METH_FASTCALL | METH_KEYWORDS functions,
 * without dictionaries: names are matched against the kwnames tuple. */
#include "core/pygpu.h"

#include <string.h>

int
pygpu_parse_args(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames, const char *const *names, int nnames,
                 int max_pos, int required, PyObject **out)
{
    for (int i = 0; i < nnames; i++) {
        out[i] = NULL;
    }
    if (nargs > max_pos) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes at most %d positional argument%s (%zd given)",
                     fname, max_pos, max_pos == 1 ? "" : "s", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = args[i];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        int found = -1;
        if (key == NULL) {
            return -1;
        }
        for (int i = 0; i < nnames; i++) {
            if (strcmp(key, names[i]) == 0) {
                found = i;
                break;
            }
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument '%s'",
                         fname, key);
            return -1;
        }
        if (out[found] != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got multiple values for argument '%s'", fname,
                         key);
            return -1;
        }
        out[found] = args[nargs + k];
    }
    for (int i = 0; i < required; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() missing required argument '%s' (pos %d)",
                         fname, names[i], i + 1);
            return -1;
        }
    }
    return 0;
}

int
pygpu_parse_dim(PyObject *obj, int ndim, int *dim)
{
    /* Any integer (NumPy's too, as torch takes them), but not a bool. */
    if (PyBool_Check(obj) || PyArray_IsScalar(obj, Bool) ||
        !PyIndex_Check(obj) || PyFloat_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "dim must be an int, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    PyObject *idx = PyNumber_Index(obj);
    long d = idx != NULL ? PyLong_AsLongAndOverflow(idx, &overflow) : -1;
    Py_XDECREF(idx);
    if (d == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
        return -1;
    }
    /* A 0-d tensor accepts dims -1 and 0, as in torch. */
    int n = ndim > 0 ? ndim : 1;
    if (d < -n || d >= n) {
        PyErr_Format(PyExc_IndexError,
                     "Dimension out of range (expected to be in range of "
                     "[%d, %d], but got %ld)", -n, n - 1, d);
        return -1;
    }
    *dim = (int)(d < 0 ? d + n : d);
    return 0;
}

int
pygpu_parse_bool(PyObject *obj, int def, int *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = def;
        return 0;
    }
    int v = PyObject_IsTrue(obj);
    if (v < 0) {
        return -1;
    }
    *out = v;
    return 0;
}

PyObject *
pygpu_sequence_tuple(PyObject *obj, const char *msg)
{
    PyObject *seq = PySequence_Fast(obj, msg);
    if (seq != NULL && !PyTuple_Check(seq)) {
        Py_SETREF(seq, PyList_AsTuple(seq));
    }
    return seq;
}

int
pygpu_unpack_dims(PyObject *const *args, Py_ssize_t nargs, PyObject **seq,
                  PyObject *const **items, Py_ssize_t *n)
{
    *seq = NULL;
    *items = args;
    *n = nargs;
    if (nargs == 1 && (PyTuple_Check(args[0]) || PyList_Check(args[0]))) {
        *seq = pygpu_sequence_tuple(args[0], "expected a sequence of ints");
        if (*seq == NULL) {
            return -1;
        }
        *items = PySequence_Fast_ITEMS(*seq);
        *n = PySequence_Fast_GET_SIZE(*seq);
    }
    if (*n > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu tensors have at most %d dimensions, got %zd",
                     PYGPU_MAX_DIMS, *n);
        Py_CLEAR(*seq);
        return -1;
    }
    return 0;
}

int
pygpu_parse_size_item(PyObject *obj, int64_t *out)
{
    if (PyBool_Check(obj) || PyArray_IsScalar(obj, Bool) ||
        Tensor_Check(obj) || !PyIndex_Check(obj)) {
        return 0;
    }
    PyObject *v = PyNumber_Index(obj);
    if (v == NULL) {
        return -1;
    }
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (overflow) {
        PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long");
        return -1;
    }
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = x;
    return 1;
}

int
pygpu_parse_sizes(const char *what, PyObject *const *items, Py_ssize_t n,
                  int64_t *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = pygpu_parse_size_item(items[i], &out[i]);
        if (r < 0) {
            return -1;
        }
        if (r == 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s must be a tuple of ints, but got an element of "
                         "type %.100s", what, Py_TYPE(items[i])->tp_name);
            return -1;
        }
    }
    return 0;
}
