/* reduce.h - the reduction family's ops (ops_reduce.c, ops_stats.c,
 * ops_scan.c, ops_softmax.c): what they share, and what autograd's
 * wrappers and the Python entries above them call.  None of them records:
 * autograd_reduce.c, autograd_extrema.c and autograd_stats.c wrap them,
 * tensor/ parses their Python arguments. */
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
 * it first would give. */
PyObject *pygpu_reduce_over_to(int op, int to_acc, TensorObject *t,
                               PyObject *dimobj, int keepdim, int pair,
                               const char *name);
/* SUM, MEAN or PROD over dimobj with torch's dtype= (-1: not given):
 * t read as it is for its natural output dtype or the accumulator's
 * (to_acc above), else converted to dtype first. */
PyObject *pygpu_op_reduce_as(int op, TensorObject *t, PyObject *dimobj,
                             int keepdim, int dtype, const char *name);
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
/* t as `dtype` (a new reference to t itself when it already is), a plain
 * conversion. */
TensorObject *pygpu_as_dtype(TensorObject *t, int dtype);

/* var (take_sqrt 0) or std over dimobj, dividing by max(0, N -
 * correction) (ops_stats.c). */
PyObject *pygpu_op_var_std(TensorObject *t, PyObject *dimobj,
                           double correction, int keepdim, int take_sqrt,
                           const char *name);
/* The vector p-norm over dimobj, t converted to dtype first (-1: not
 * given). */
PyObject *pygpu_op_norm(TensorObject *t, double p, PyObject *dimobj,
                        int keepdim, int dtype);
/* SOFTMAX or LOG_SOFTMAX along dim (parsed), t converted to dtype first
 * (-1: not given); NotImplementedError for a dtype that is not floating
 * (ops_softmax.c). */
PyObject *pygpu_op_softmax(int op, TensorObject *t, int dim, int dtype);
/* logsumexp over dimobj (an int or a tuple); bools and integers compute
 * in the default dtype. */
PyObject *pygpu_op_logsumexp(TensorObject *t, PyObject *dimobj,
                             int keepdim);
/* CUMSUM or CUMPROD along dim (parsed): bool and integers give int64; t
 * converted to dtype first when dtype (-1: not given) is another
 * (ops_scan.c). */
PyObject *pygpu_op_scan(int op, TensorObject *t, int dim, int dtype);

#endif /* PYGPU_OPS_REDUCE_H */
