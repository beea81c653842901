/* tensor_missing.c - the Tensor's attribute lookup: the generic one, and
 * where that fails with AttributeError, a message naming the gap when the
 * name is one of torch's Tensor attributes that pygpu lacks.  Which names
 * those are is Python's business (pygpu/_missing.py, over the list of
 * torch's names): it is asked only on the failure path, so lookups that
 * succeed cost one extra C call. */
#include "tensor/tensor.h"

/* pygpu._missing.tensor_message(name): the message, or None when the name
 * is not torch's; new reference, NULL on error. */
static PyObject *
missing_message(PyObject *name)
{
    PyObject *mod = PyImport_ImportModule("pygpu._missing");
    if (mod == NULL) {
        return NULL;
    }
    PyObject *msg = PyObject_CallMethod(mod, "tensor_message", "O", name);
    Py_DECREF(mod);
    return msg;
}

PyObject *
pygpu_t_getattro(PyObject *self, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return r;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *msg = missing_message(name);
    if (msg == NULL || msg == Py_None) {
        /* not torch's (or the check itself failed): the original error */
        Py_XDECREF(msg);
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_SetObject(PyExc_AttributeError, msg);
    Py_DECREF(msg);
    return NULL;
}
