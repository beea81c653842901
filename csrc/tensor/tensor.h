/* tensor.h - the Python faces of the floor below module.c: the Tensor
 * type's extra method tables and the module functions defined in tensor/,
 * which call autograd's wrappers (autograd.h) and the ops (ops.h). */
#ifndef PYGPU_TENSOR_H
#define PYGPU_TENSOR_H

#include "autograd/autograd.h"

/* where and masked_fill(_) (tensor_where.c). */
extern PyMethodDef pygpu_where_methods[];
PyObject *pygpu_t_where(PyObject *op, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_masked_fill(PyObject *op, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_masked_fill_(PyObject *op, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames);

#endif /* PYGPU_TENSOR_H */
