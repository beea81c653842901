/* tensor.h - the Python faces: the Tensor type, its slots, attributes and
 * method tables, and the module functions of tensor/, which call
 * autograd's wrappers (autograd.h) and, for what is never recorded, the
 * ops (ops.h).  Only module.c is above. */
#ifndef PYGPU_TENSOR_H
#define PYGPU_TENSOR_H

#include "autograd/autograd.h"

/* The Tensor type, added to the module with its slots, attributes and
 * every method table (tensor_core.c).  0 or -1. */
int pygpu_tensor_register(PyObject *m);
/* Module functions (PyMethodDef arrays ending NULL), added by module.c. */
extern PyMethodDef pygpu_create_functions[];  /* tensor_create.c */
extern PyMethodDef pygpu_ops_functions[];     /* tensor_functions.c */
extern PyMethodDef pygpu_xent_functions[];    /* tensor_functions.c */
extern PyMethodDef pygpu_matmul_functions[];  /* tensor_matmul.c */
extern PyMethodDef pygpu_linear_functions[];  /* tensor_matmul.c */
extern PyMethodDef pygpu_where_functions[];   /* tensor_where.c */
extern PyMethodDef pygpu_strided_functions[]; /* tensor_strided.c */
extern PyMethodDef pygpu_row_norm_functions[];    /* tensor_norm.c */
/* Tensor methods, getset and number slots (tensor_methods.c). */
extern PyMethodDef pygpu_tensor_methods[];
extern PyGetSetDef pygpu_tensor_getset[];
/* The Tensor's protocol slots (tensor_number.c, tensor_index.c), named in
 * the type's slot table in tensor_core.c. */
/* tensor_operand.c: a NumPy array operand x as a tensor on the device of
 * other (a tensor or not), anything else as it is; new reference.  The
 * comparison and bitwise slots taking arrays that way. */
PyObject *pygpu_array_operand(PyObject *x, PyObject *other);
PyObject *pygpu_t_compare_slot(PyObject *a, PyObject *b, int op);
PyObject *pygpu_t_and_slot(PyObject *a, PyObject *b);
PyObject *pygpu_t_or_slot(PyObject *a, PyObject *b);
PyObject *pygpu_t_xor_slot(PyObject *a, PyObject *b);
PyObject *pygpu_t_iand_slot(PyObject *a, PyObject *b);
PyObject *pygpu_t_ior_slot(PyObject *a, PyObject *b);
PyObject *pygpu_t_ixor_slot(PyObject *a, PyObject *b);
PyObject *pygpu_t_add(PyObject *a, PyObject *b);
PyObject *pygpu_t_sub(PyObject *a, PyObject *b);
PyObject *pygpu_t_mul(PyObject *a, PyObject *b);
PyObject *pygpu_t_div(PyObject *a, PyObject *b);
PyObject *pygpu_t_iadd(PyObject *a, PyObject *b);
PyObject *pygpu_t_isub(PyObject *a, PyObject *b);
PyObject *pygpu_t_imul(PyObject *a, PyObject *b);
PyObject *pygpu_t_idiv(PyObject *a, PyObject *b);
PyObject *pygpu_t_matmul(PyObject *a, PyObject *b);
PyObject *pygpu_t_neg(PyObject *a);
PyObject *pygpu_t_pos(PyObject *a);
int pygpu_t_bool(PyObject *a);
PyObject *pygpu_t_nb_float(PyObject *a);
PyObject *pygpu_t_nb_int(PyObject *a);
PyObject *pygpu_t_index(PyObject *a);
Py_ssize_t pygpu_t_len(PyObject *a);
PyObject *pygpu_t_iter(PyObject *a);
Py_hash_t pygpu_t_hash(PyObject *a);
PyObject *pygpu_t_repr(PyObject *a);
PyObject *pygpu_t_getitem(PyObject *op, PyObject *key);
int pygpu_t_setitem(PyObject *op, PyObject *key, PyObject *value);
/* A CPU tensor that shares the memory of a NumPy array (from_numpy). */
TensorObject *pygpu_tensor_from_ndarray(PyArrayObject *arr);
/* pygpu.tensor(data): a new tensor holding a copy of data (nested lists,
 * scalars, arrays, tensors); dtype -1 infers it as torch does. */
TensorObject *pygpu_tensor_from_data(PyObject *data, int dtype,
                                     pygpu_device dev);
/* t.expand(*sizes) (tensor_views.c). */
PyObject *pygpu_t_expand(PyObject *op, PyObject *const *args,
                         Py_ssize_t nargs);
/* t.T as a new view (tensor_views.c). */
PyObject *pygpu_t_get_T(PyObject *op, void *closure);
/* t.item(): the single element as a Python number (tensor_convert.c). */
PyObject *pygpu_t_item(PyObject *op, PyObject *noargs);
/* pygpu.add(input, other, alpha=...) and t.add(other, alpha=...): alpha
 * (may be NULL) scales other, as torch; TypeError for non-numbers. */
PyObject *pygpu_binary_call(int op, const char *name, PyObject *input,
                            PyObject *other, PyObject *alpha,
                            TensorObject *out);
/* tensor_math.c: pow, maximum, minimum, fmod, remainder, floor_divide
 * (functions, Tensor methods, the ** // % slots) and clamp, clip. */
extern PyMethodDef pygpu_binary_math_functions[];
extern PyMethodDef pygpu_binary_math_methods[];
extern PyMethodDef pygpu_clamp_functions[];
extern PyMethodDef pygpu_clamp_methods[];
/* Adds the PyMethodDef array defs (ending NULL) to the Tensor type
 * (tensor_core.c). */
int pygpu_tensor_add_methods(PyMethodDef *defs);
PyObject *pygpu_t_pow(PyObject *a, PyObject *b, PyObject *mod);
PyObject *pygpu_t_ipow(PyObject *a, PyObject *b, PyObject *mod);
PyObject *pygpu_t_floordiv(PyObject *a, PyObject *b);
PyObject *pygpu_t_ifloordiv(PyObject *a, PyObject *b);
PyObject *pygpu_t_mod(PyObject *a, PyObject *b);
PyObject *pygpu_t_imod(PyObject *a, PyObject *b);
/* The operator front end of tensor_number.c: a <op> b (out: in place),
 * NumPy arrays taken as tensors, NumPy scalars as Python numbers. */
PyObject *pygpu_number_binary(int op, PyObject *a, PyObject *b,
                              TensorObject *out);
extern PyMethodDef pygpu_range_functions[]; /* tensor_range.c */
extern PyMethodDef pygpu_join_functions[];  /* tensor_join.c */
/* t (a new tensor, or NULL) with requires_grad=flag (NULL: not given)
 * set through the attribute's own checks; NULL with an exception
 * (tensor_create.c). */
PyObject *pygpu_with_requires_grad(PyObject *t, PyObject *flag);
extern PyMethodDef pygpu_split_functions[]; /* tensor_split.c */
extern PyMethodDef pygpu_flip_functions[];  /* tensor_join.c */
extern PyMethodDef pygpu_index_functions[]; /* tensor_select.c */
extern PyMethodDef pygpu_sorted_functions[]; /* tensor_sort.c */
/* scatter_add, index_add as module functions (added by module.c) and,
 * with their in-place forms, Tensor methods (tensor_select.c). */
int pygpu_scatter_register(PyObject *m);
extern PyMethodDef pygpu_scatter_methods[];

/* where and masked_fill(_) (tensor_where.c). */
extern PyMethodDef pygpu_where_methods[];
PyObject *pygpu_t_where(PyObject *op, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_masked_fill(PyObject *op, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_masked_fill_(PyObject *op, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames);

/* _im2col and _col2im, unfold and fold's entries (tensor_im2col.c). */
extern PyMethodDef pygpu_im2col_functions[];

#endif /* PYGPU_TENSOR_H */
