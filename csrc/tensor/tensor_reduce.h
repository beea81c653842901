/* tensor_reduce.h - the Python entries of the reductions (functions and
 * Tensor methods): they parse their arguments and call autograd's
 * wrappers.  module.c adds the functions to the module, tensor_core.c the
 * methods to the Tensor type (sum, mean and max are in tensor_methods.c's
 * table). */
#ifndef PYGPU_TENSOR_REDUCE_H
#define PYGPU_TENSOR_REDUCE_H

#include "tensor/tensor.h"
#include "ops/reduce.h"

/* A Tensor method (METH_FASTCALL | METH_KEYWORDS). */
typedef PyObject *(*pygpu_method_fn)(PyObject *self, PyObject *const *args,
                                     Py_ssize_t nargs, PyObject *kwnames);
/* The function form pygpu.<name>(input, ...) of a method: input.<name>(...)
 * after checking that input is a Tensor (TypeError in torch's words)
 * (tensor_reduce.c). */
PyObject *pygpu_function_form(const char *name, pygpu_method_fn method,
                              PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

/* sum, mean, prod, max, min, amax, amin, argmax, argmin (tensor_reduce.c) */
extern PyMethodDef pygpu_reduce_functions[];
extern PyMethodDef pygpu_reduce_methods[];
/* var, std, norm (tensor_stats.c) */
extern PyMethodDef pygpu_stats_functions[];
extern PyMethodDef pygpu_stats_methods[];
/* softmax, log_softmax, logsumexp (tensor_softmax.c) */
extern PyMethodDef pygpu_softmax_functions[];
extern PyMethodDef pygpu_softmax_methods[];
/* cumsum, cumprod (tensor_scan.c) */
extern PyMethodDef pygpu_scan_functions[];
extern PyMethodDef pygpu_scan_methods[];

#endif /* PYGPU_TENSOR_REDUCE_H */
