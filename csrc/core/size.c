/* size.c - pygpu.Size, the tuple subclass that .shape returns
 * (torch.Size): prints as pygpu.Size([2, 3]) and has numel(). */
#include "core/pygpu.h"

PyObject *
pygpu_size_new(int ndim, const int64_t *shape)
{
    PyTypeObject *tp = pygpu_state->Size_Type;
    PyObject *t = tp->tp_alloc(tp, ndim);
    if (t == NULL) {
        return NULL;
    }
    for (int d = 0; d < ndim; d++) {
        PyObject *v = PyLong_FromLongLong(shape[d]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

static PyObject *
size_repr(PyObject *self)
{
    PyObject *list = PySequence_List(self);
    if (list == NULL) {
        return NULL;
    }
    PyObject *r = PyUnicode_FromFormat("pygpu.Size(%R)", list);
    Py_DECREF(list);
    return r;
}

/* Size(iterable=()): non-negative ints only, as a shape must be. */
static PyObject *
size_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    PyObject *it = NULL, *seq = NULL, *r = NULL;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) ||
        !PyArg_UnpackTuple(args, "Size", 0, 1, &it)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError,
                            "pygpu.Size() takes no keyword arguments");
        }
        return NULL;
    }
    if (it == NULL) {
        return tp->tp_alloc(tp, 0);
    }
    seq = pygpu_sequence_tuple(it, "pygpu.Size() takes an iterable of "
                                   "'int'");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    r = tp->tp_alloc(tp, n);
    if (r == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        int64_t v = 0;
        int ok = pygpu_parse_size_item(item, &v);
        if (ok == 0) {
            PyErr_Format(PyExc_TypeError,
                         "pygpu.Size() takes an iterable of 'int' (item %zd "
                         "is '%.100s')", i, Py_TYPE(item)->tp_name);
        }
        else if (ok > 0 && v < 0) {
            PyErr_Format(PyExc_ValueError,
                         "pygpu.Size() takes non-negative sizes (item %zd "
                         "is %lld)", i, (long long)v);
        }
        PyObject *num = PyErr_Occurred() ? NULL : PyLong_FromLongLong(v);
        if (num == NULL) {
            Py_CLEAR(r);
            goto fail;
        }
        PyTuple_SET_ITEM(r, i, num);
    }
fail:
    Py_DECREF(seq);
    return r;
}

static PyObject *
size_numel(PyObject *self, PyObject *noargs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(self);
    int64_t *shape = PyMem_New(int64_t, n > 0 ? n : 1), numel = 0;
    PyObject *r = NULL;
    if (shape == NULL) {
        return pygpu_raise_no_memory("the sizes of a Size",
                                     sizeof(int64_t) * (size_t)(n > 0 ? n
                                                                      : 1));
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(self, i));
        if (shape[i] == -1 && PyErr_Occurred()) {
            goto fail;
        }
    }
    if (pygpu_shape_numel((int)n, shape, &numel) == 0) {
        r = PyLong_FromLongLong(numel);
    }
fail:
    PyMem_Free(shape);
    return r;
}

static PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS,
     "numel($self, /)\n--\n\nThe number of elements of this shape."},
    {NULL},
};

static PyType_Slot size_slots[] = {
    {Py_tp_new, size_tp_new},
    {Py_tp_repr, size_repr},
    {Py_tp_methods, size_methods},
    {Py_tp_doc, "Size(iterable=(), /)\n--\n\n"
                "The shape of a tensor: a tuple of non-negative ints."},
    {0, NULL},
};

static PyType_Spec size_spec = {
    .name = "pygpu.Size",
    .basicsize = 0,
    .itemsize = 0,
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = size_slots,
};

int
pygpu_size_register(PyObject *m)
{
    PyObject *type = pygpu_add_type(m, &size_spec, (PyObject *)&PyTuple_Type,
                                    "Size");
    if (type == NULL) {
        return -1;
    }
    pygpu_state->Size_Type = (PyTypeObject *)type;
    return 0;
}
