/* autocast.h - the thread-local autocast state the matrix-product front
 * ends consult (autocast.c). */
#ifndef PYGPU_AUTOCAST_H
#define PYGPU_AUTOCAST_H

#include "ops/ops.h"

/* When autocast is on for the device type of in[0] and some of in[0..n)
 * (NULL entries skipped) is float32 and not already the autocast dtype,
 * out[0..n) get new references to the inputs cast to that dtype (NULL
 * stays NULL) and 1 is returned; 0 leaves out untouched (nothing to do),
 * -1 is an error.  Costs one thread-local read when autocast is off. */
int pygpu_autocast_inputs(int n, TensorObject *const *in, TensorObject **out);
/* Release what pygpu_autocast_inputs returned. */
void pygpu_autocast_release(int n, TensorObject **out);

extern PyMethodDef pygpu_autocast_functions[];

#endif
