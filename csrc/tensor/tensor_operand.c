/* tensor_operand.c - a NumPy array beside a tensor in an operator.  As in
 * torch, the array counts as the tensor made from it: its own dtype (so
 * it promotes as a tensor operand does: float32 tensor + float64 array is
 * float64), on the device of the tensor beside it.  NumPy defers to the
 * tensor (Tensor.__array_priority__ = 1000, as torch's), so array <op>
 * tensor arrives here as the tensor's reflected operator and gives a
 * tensor too.  The
 * arithmetic slots convert through pygpu_array_operand (tensor_number.c,
 * tensor_math.c); the comparison and bitwise slots, whose ops live below
 * the tensor layer, are wrapped here. */
#include "tensor/tensor.h"

PyObject *
pygpu_array_operand(PyObject *x, PyObject *other)
{
    if (!PyArray_Check(x)) {
        return Py_NewRef(x);
    }
    pygpu_device dev = {PYGPU_CPU, -1};
    if (Tensor_Check(other)) {
        dev = ((TensorObject *)other)->device;
    }
    return (PyObject *)pygpu_tensor_from_data(x, -1, dev);
}

PyObject *
pygpu_t_compare_slot(PyObject *a, PyObject *b, int op)
{
    if (!PyArray_Check(b)) {
        return pygpu_t_richcompare(a, b, op);
    }
    PyObject *tb = pygpu_array_operand(b, a);
    if (tb == NULL) {
        return NULL;
    }
    PyObject *r = pygpu_t_richcompare(a, tb, op);
    Py_DECREF(tb);
    return r;
}

/* inner(a, b) with either array operand as a tensor. */
static PyObject *
with_arrays(binaryfunc inner, PyObject *a, PyObject *b)
{
    if (!PyArray_Check(a) && !PyArray_Check(b)) {
        return inner(a, b);
    }
    PyObject *ta = pygpu_array_operand(a, b), *tb = NULL, *r = NULL;
    if (ta != NULL && (tb = pygpu_array_operand(b, a)) != NULL) {
        r = inner(ta, tb);
    }
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    return r;
}

#define ARRAY_SLOT(name)                                                     \
    PyObject *pygpu_##name##_slot(PyObject *a, PyObject *b)                  \
    {                                                                        \
        return with_arrays(pygpu_##name, a, b);                              \
    }

ARRAY_SLOT(t_and)
ARRAY_SLOT(t_or)
ARRAY_SLOT(t_xor)
ARRAY_SLOT(t_iand)
ARRAY_SLOT(t_ior)
ARRAY_SLOT(t_ixor)
