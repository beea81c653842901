/* reduce.h - what the reduction front ends (ops_reduce.c, ops_stats.c,
 * ops_scan.c, ops_softmax.c) share.  Internal to ops/. */
#ifndef PYGPU_OPS_REDUCE_H
#define PYGPU_OPS_REDUCE_H

#include "ops/ops.h"

/* A shape seen as [outer, n, inner] around dim: the product of the sizes
 * before dim, shape[dim], the product of those after it (all 1 for a 0-d
 * shape) (ops_reduce.c). */
void pygpu_dim_split(int ndim, const int64_t *shape, int dim, int64_t *outer,
                     int64_t *n, int64_t *inner);
/* op (enum pygpu_redop) over dimobj: NULL or None for every element, an
 * int, or a tuple/list of ints (an empty one: every element).  With an int
 * dim, MAX and MIN give a (values, indices) pair when `pair` is set.
 * `name` names the op in errors.  New reference or NULL. */
PyObject *pygpu_reduce_over(int op, TensorObject *t, PyObject *dimobj,
                            int keepdim, int pair, const char *name);
/* The same; with to_acc, SUM, MEAN and PROD give the accumulator's dtype
 * (float32 for float16 and bfloat16) unrounded, as the input converted to
 * it first would give.  t must not need autograd then. */
PyObject *pygpu_reduce_over_to(int op, int to_acc, TensorObject *t,
                               PyObject *dimobj, int keepdim, int pair,
                               const char *name);
/* argmax (op MAX) or argmin (MIN) of t flattened (dimobj NULL or None) or
 * over an int dim: int64 indices. */
PyObject *pygpu_reduce_arg(int op, TensorObject *t, PyObject *dimobj,
                           int keepdim, const char *name);
/* The dims of dimobj (as above) marked in mark[0..ndim); returns how many
 * elements each output sums over, or -1 with an exception.  *all is set
 * when every dim is reduced (None or an empty tuple). */
int64_t pygpu_reduce_mark_dims(TensorObject *t, PyObject *dimobj,
                               const char *name, int mark[PYGPU_MAX_DIMS],
                               int *all);
/* t as `dtype` (a new reference to t itself when it already is). */
TensorObject *pygpu_as_dtype(TensorObject *t, int dtype);

/* The input an op reading t in its own dtype takes for the dtype=
 * argument (NULL or None: the op's natural output dtype `natural`): t
 * itself when dtype= is `natural`, or `acc` (the accumulator's dtype; -1:
 * none) with *to_acc set, unless autograd records t; else t converted to
 * dtype= as torch does.  New reference or NULL. */
TensorObject *pygpu_reduce_read_as(TensorObject *t, PyObject *dtype_obj,
                                   int natural, int acc, int *to_acc);

/* A Tensor method (METH_FASTCALL | METH_KEYWORDS). */
typedef PyObject *(*pygpu_method_fn)(PyObject *self, PyObject *const *args,
                                     Py_ssize_t nargs, PyObject *kwnames);
/* The function form pygpu.<name>(input, ...) of a method: input.<name>(...)
 * after checking that input is a Tensor (TypeError in torch's words). */
PyObject *pygpu_function_form(const char *name, pygpu_method_fn method,
                              PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

/* The functions and Tensor methods of the other reduction files, added by
 * pygpu_reduce_register (ops_reduce_api.c). */
extern PyMethodDef pygpu_stats_functions[];   /* ops_stats.c */
extern PyMethodDef pygpu_stats_methods[];
/* The reductions' Tensor methods (ops_reduce_api.c). */
extern PyMethodDef pygpu_reduce_methods[];
extern PyMethodDef pygpu_scan_functions[];    /* ops_scan.c */
extern PyMethodDef pygpu_scan_methods[];
extern PyMethodDef pygpu_softmax_functions[]; /* ops_softmax.c */
extern PyMethodDef pygpu_softmax_methods[];

#endif /* PYGPU_OPS_REDUCE_H */
