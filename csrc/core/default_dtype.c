/* default_dtype.c - torch's default floating dtype: what factories make
 * without a dtype, what a Python float and true division of integers
 * give.  One process-wide setting, as torch's, kept in an atomic int. */
#include "core/pygpu.h"

#include <stdatomic.h>

static atomic_int default_dtype = PYGPU_FLOAT32;

int
pygpu_default_dtype(void)
{
    return atomic_load_explicit(&default_dtype, memory_order_relaxed);
}

static PyObject *
set_default_dtype_fn(PyObject *self, PyObject *arg)
{
    if (!DType_Check(arg) ||
        !pygpu_dtype_table[((DTypeObject *)arg)->code].is_floating_point) {
        PyErr_SetString(PyExc_TypeError,
                        "only floating-point types are supported as the "
                        "default type");
        return NULL;
    }
    atomic_store(&default_dtype, ((DTypeObject *)arg)->code);
    Py_RETURN_NONE;
}

static PyObject *
get_default_dtype_fn(PyObject *self, PyObject *noargs)
{
    return Py_NewRef(pygpu_state->dtypes[pygpu_default_dtype()]);
}

PyMethodDef pygpu_default_dtype_functions[] = {
    {"set_default_dtype", set_default_dtype_fn, METH_O,
     "set_default_dtype($module, d, /)\n--\n\n"
     "Make d (a floating dtype) the default: the dtype of factories given\n"
     "no dtype, of Python floats in tensors and promotion, and of true\n"
     "division and floating functions of integer tensors.  Process-wide."},
    {"get_default_dtype", get_default_dtype_fn, METH_NOARGS,
     "get_default_dtype($module, /)\n--\n\n"
     "The default floating dtype (float32 unless set_default_dtype)."},
    {NULL},
};
