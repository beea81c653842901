/* compare_methods.h - the Tensor methods of ops_compare.c (eq, ne, lt,
 * le, gt, ge, isnan, isinf, isfinite); pygpu_compare_methods lists them
 * for pygpu_tensor_add_methods. */
#ifndef PYGPU_COMPARE_METHODS_H
#define PYGPU_COMPARE_METHODS_H

#include "core/pygpu.h"

PyObject *pygpu_t_eq(PyObject *op, PyObject *other);
PyObject *pygpu_t_ne(PyObject *op, PyObject *other);
PyObject *pygpu_t_lt(PyObject *op, PyObject *other);
PyObject *pygpu_t_le(PyObject *op, PyObject *other);
PyObject *pygpu_t_gt(PyObject *op, PyObject *other);
PyObject *pygpu_t_ge(PyObject *op, PyObject *other);
PyObject *pygpu_t_isnan(PyObject *op, PyObject *noargs);
PyObject *pygpu_t_isinf(PyObject *op, PyObject *noargs);
PyObject *pygpu_t_isfinite(PyObject *op, PyObject *noargs);

#endif /* PYGPU_COMPARE_METHODS_H */
