/* logical_methods.h - the Tensor methods of ops_logical.c (logical_*,
 * bitwise_*, any, all);
 * pygpu_logical_methods (ops_logical.c) lists them for
 * pygpu_tensor_add_methods. */
#ifndef PYGPU_LOGICAL_METHODS_H
#define PYGPU_LOGICAL_METHODS_H

#include "core/pygpu.h"

PyObject *pygpu_t_logical_not(PyObject *op, PyObject *noargs);
PyObject *pygpu_t_logical_and(PyObject *op, PyObject *other);
PyObject *pygpu_t_logical_or(PyObject *op, PyObject *other);
PyObject *pygpu_t_logical_xor(PyObject *op, PyObject *other);
PyObject *pygpu_t_bitwise_not(PyObject *op, PyObject *noargs);
PyObject *pygpu_t_bitwise_and(PyObject *op, PyObject *other);
PyObject *pygpu_t_bitwise_or(PyObject *op, PyObject *other);
PyObject *pygpu_t_bitwise_xor(PyObject *op, PyObject *other);
PyObject *pygpu_t_any(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames);
PyObject *pygpu_t_all(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames);

#endif /* PYGPU_LOGICAL_METHODS_H */
