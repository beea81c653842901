/* xent.h - what cross-entropy's front end (ops_xent.c) and its backward
 * rule (autograd_xent.c) share. */
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

/* What the forward hands to autograd's rule (new references): x (input
 * made contiguous), the int64 target, the weight (or NULL) and stats. */
typedef struct {
    TensorObject *x, *target, *weight, *stats;
} pygpu_xent_saved;
/* The arguments' checks, in torch's words (label_smoothing: the argument
 * as given, for its message). */
int pygpu_xent_check_args(TensorObject *x, TensorObject *t, TensorObject *w,
                          double smoothing, PyObject *label_smoothing);
/* cross_entropy(input, target, weight, ...), after the checks; with saved,
 * what the backward needs is handed over there. */
PyObject *pygpu_op_cross_entropy(TensorObject *input, TensorObject *target,
                                 TensorObject *weight, int64_t ignore_index,
                                 int reduction, double smoothing,
                                 pygpu_xent_saved *saved);

#endif /* PYGPU_OPS_XENT_H */
