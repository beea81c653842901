/* size.c - pygpu.Size, the tuple subclass that .shape returns
 * (torch.Size): prints as pygpu.Size([2, 3]) and has numel(). */
#include "pygpu.h"

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

static PyObject *
size_numel(PyObject *self, PyObject *noargs)
{
    long long n = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self); i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(self, i));
        if (v == -1 && PyErr_Occurred()) {
            return NULL;
        }
        n *= v;
    }
    return PyLong_FromLongLong(n);
}

static PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS,
     "numel($self, /)\n--\n\nThe number of elements of this shape."},
    {NULL},
};

static PyType_Slot size_slots[] = {
    {Py_tp_repr, size_repr},
    {Py_tp_methods, size_methods},
    {Py_tp_doc, "The shape of a tensor: a tuple of ints."},
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
    PyObject *type = PyType_FromModuleAndSpec(m, &size_spec,
                                              (PyObject *)&PyTuple_Type);
    if (type == NULL) {
        return -1;
    }
    pygpu_state->Size_Type = (PyTypeObject *)type;
    return PyModule_AddObjectRef(m, "Size", type);
}
