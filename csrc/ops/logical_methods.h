/* logical_methods.h - the Tensor methods and operator slots of
 * ops_logical.c (logical_*, bitwise_*, where, masked_fill(_), any, all,
 * & | ^ ~), as entries that tensor_methods.c puts in the Tensor's method
 * table with one line. */
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
PyObject *pygpu_t_where(PyObject *op, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_masked_fill(PyObject *op, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_masked_fill_(PyObject *op, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_any(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames);
PyObject *pygpu_t_all(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames);

#define PYGPU_LOGICAL_METHOD_O(name, doc)                                    \
    {#name, pygpu_t_##name, METH_O, #name "($self, other, /)\n--\n\n" doc},
#define PYGPU_LOGICAL_METHODS                                                \
    {"logical_not", pygpu_t_logical_not, METH_NOARGS,                        \
     "logical_not($self, /)\n--\n\nself == 0, as a bool tensor."},           \
    PYGPU_LOGICAL_METHOD_O(logical_and, "(self != 0) and (other != 0).")     \
    PYGPU_LOGICAL_METHOD_O(logical_or, "(self != 0) or (other != 0).")       \
    PYGPU_LOGICAL_METHOD_O(logical_xor, "(self != 0) xor (other != 0).")     \
    {"bitwise_not", pygpu_t_bitwise_not, METH_NOARGS,                        \
     "bitwise_not($self, /)\n--\n\n~self (bool and integer dtypes)."},       \
    PYGPU_LOGICAL_METHOD_O(bitwise_and, "self & other (bool and integers).") \
    PYGPU_LOGICAL_METHOD_O(bitwise_or, "self | other (bool and integers).")  \
    PYGPU_LOGICAL_METHOD_O(bitwise_xor, "self ^ other (bool and integers).") \
    {"where", FASTKW(pygpu_t_where),                                         \
     "where($self, condition, other)\n--\n\n"                                \
     "pygpu.where(condition, self, other)."},                                \
    {"masked_fill", FASTKW(pygpu_t_masked_fill),                             \
     "masked_fill($self, mask, value)\n--\n\n"                               \
     "A copy of self with value where the bool mask (broadcast) is true."},  \
    {"masked_fill_", FASTKW(pygpu_t_masked_fill_),                           \
     "masked_fill_($self, mask, value)\n--\n\n"                              \
     "In-place masked_fill; returns self."},                                 \
    {"any", FASTKW(pygpu_t_any),                                             \
     "any($self, /, dim=None, keepdim=False)\n--\n\n"                        \
     "Whether any element (over dim: an int or a tuple) is nonzero."},       \
    {"all", FASTKW(pygpu_t_all),                                             \
     "all($self, /, dim=None, keepdim=False)\n--\n\n"                        \
     "Whether every element (over dim: an int or a tuple) is nonzero."},

#endif /* PYGPU_LOGICAL_METHODS_H */
