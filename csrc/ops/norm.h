/* norm.h - what layer norm's and RMS norm's front end (ops_norm.c), their
 * backward rule (autograd_norm.c) and their Python entries share. */
#ifndef PYGPU_OPS_NORM_H
#define PYGPU_OPS_NORM_H

#include "ops/ops.h"

/* What the forward hands to autograd's rule (new references): x made
 * contiguous, the parameters in the compute type (or NULL), and the rows'
 * statistics (the compute type, one per row; mean NULL for RMS). */
typedef struct {
    TensorObject *x, *w, *mean, *rstd;
} pygpu_row_norm_saved;

/* Layer norm (rms = 0) or RMS norm over the last dims of x holding n
 * elements (n >= 1, x floating; w and b of n elements, x's dtype or, for
 * a float16 / bfloat16 x, float32, or NULL: checked by the caller).  The
 * result has x's shape and dtype; with saved, what the backward needs is
 * handed over there.  New reference or NULL. */
PyObject *pygpu_op_row_norm(TensorObject *x, TensorObject *w, TensorObject *b,
                        int64_t n, double eps, int rms,
                        pygpu_row_norm_saved *saved);

/* The gradients from dy (x's shape) and what the forward saved: dx (x's
 * dtype and shape), dw and db (the compute type, n elements; C for
 * CHANNELS) for those asked for (want[0..3)); the others are left NULL.
 * rms is the mode (PYGPU_ROW_NORM_*).  0 or -1. */
int pygpu_op_row_norm_backward(TensorObject *dy, const pygpu_row_norm_saved *s,
                           int64_t n, int rms, const int want[3],
                           TensorObject *grads[3]);

/* The modes of the rule and the backward (their `rms` argument). */
enum { PYGPU_ROW_NORM_LAYER = 0, PYGPU_ROW_NORM_RMS = 1,
       PYGPU_ROW_NORM_CHANNELS = 2 };

/* Batch norm's training step over the channels (dim 1) of x (ndim >= 2,
 * floating, at least one element; w and b of C elements with
 * pygpu_op_row_norm's dtype rule, or NULL): the result, x's shape and
 * dtype; the channels' mean and biased variance (the compute type, C
 * elements) into *mean and *var (new references); with saved, what the
 * backward (mode PYGPU_ROW_NORM_CHANNELS) needs.  New reference or NULL. */
PyObject *pygpu_op_channel_norm(TensorObject *x, TensorObject *w,
                                TensorObject *b, double eps,
                                TensorObject **mean, TensorObject **var,
                                pygpu_row_norm_saved *saved);

/* The compute type of a floating dtype: float64 for float64, else
 * float32. */
int pygpu_row_norm_acc_dtype(int dtype);

#endif /* PYGPU_OPS_NORM_H */
