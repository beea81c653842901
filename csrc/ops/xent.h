/* xent.h - what cross-entropy's front end (ops_xent.c) and its backward
 * rule (autograd_xent.c) share.  Internal to ops/. */
#ifndef PYGPU_OPS_XENT_H
#define PYGPU_OPS_XENT_H

#include "ops/ops.h"

/* The reductions, as torch's Reduction enum numbers them. */
enum { PYGPU_XENT_NONE = 0, PYGPU_XENT_MEAN = 1, PYGPU_XENT_SUM = 2 };

/* The kernels' arguments (kernels.h) for x (contiguous, floating, ndim >=
 * 1: classes along dim 1, or dim 0 of a 1-d x), target (int64,
 * contiguous, one per sample), weight (x's dtype, contiguous, or NULL) and
 * stats (the accumulator's dtype, PYGPU_XENT_ROWS S + 3 elements: the
 * kernels' rows of S, then the sum of the losses, the sum of w[t], and
 * W). */
void pygpu_xent_args_for(pygpu_xent_args *a, TensorObject *x,
                         TensorObject *target, TensorObject *weight,
                         TensorObject *stats, int64_t ignore_index,
                         double smoothing);
/* Element i of stats (a pointer into its memory). */
void *pygpu_xent_stat(TensorObject *stats, int64_t i);

/* res = cross_entropy(input, ...) computed from x (input made
 * contiguous) with these arguments: recorded when input requires grad
 * (autograd_xent.c).  Steals res; new reference or NULL. */
PyObject *pygpu_ag_xent(PyObject *res, TensorObject *input, TensorObject *x,
                        TensorObject *target, TensorObject *weight,
                        TensorObject *stats, int64_t ignore_index,
                        int reduction, double smoothing);

#endif /* PYGPU_OPS_XENT_H */
