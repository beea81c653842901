/* compare_methods.h - the Tensor methods of ops_compare.c (eq, ne, lt,
 * le, gt, ge, isnan, isinf, isfinite), as entries that tensor_methods.c
 * puts in the Tensor's method table with one line. */
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

#define PYGPU_COMPARE_METHOD(name, sym)                                      \
    {#name, pygpu_t_##name, METH_O,                                          \
     #name "($self, other, /)\n--\n\n"                                       \
     "self " sym " other elementwise, broadcast, as a bool tensor."},
#define PYGPU_COMPARE_METHODS                                                \
    PYGPU_COMPARE_METHOD(eq, "==") PYGPU_COMPARE_METHOD(ne, "!=")            \
    PYGPU_COMPARE_METHOD(lt, "<") PYGPU_COMPARE_METHOD(le, "<=")             \
    PYGPU_COMPARE_METHOD(gt, ">") PYGPU_COMPARE_METHOD(ge, ">=")             \
    {"isnan", pygpu_t_isnan, METH_NOARGS,                                    \
     "isnan($self, /)\n--\n\nWhere self is NaN, as a bool tensor."},         \
    {"isinf", pygpu_t_isinf, METH_NOARGS,                                    \
     "isinf($self, /)\n--\n\nWhere self is +-inf, as a bool tensor."},       \
    {"isfinite", pygpu_t_isfinite, METH_NOARGS,                              \
     "isfinite($self, /)\n--\n\nWhere self is neither NaN nor +-inf, as a\n" \
     "bool tensor."},

#endif /* PYGPU_COMPARE_METHODS_H */
