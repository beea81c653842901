/* cpu_split.h - large CPU rows split into tasks for the thread pool
 * (cpu_split.c, cpu_split_reduce.c).  Each task runs the row's own loop
 * on a part of the work through a copy of its arguments; the loops are
 * not changed. */
#ifndef PYGPU_CPU_SPLIT_H
#define PYGPU_CPU_SPLIT_H

#include "core/dispatch.h"

/* Work a task gets at least, in elements of a cheap loop (~10 us). */
#define PYGPU_TASK_MIN (1 << 15)

/* Runs fn(k) for a row of kind BINARY, BINARY_SCALAR, UNARY, COPY, FILL,
 * RANDOM, SOFTMAX or XENT (those two with outer >= 2) split over the pool
 * into at most `parts` tasks, or OPTIM into its chunks of
 * PYGPU_OPTIM_CHUNK elements.  Returns 0,
 * or -1 (nothing run) for a kind or geometry it does not split. */
int pygpu_cpu_split_rows(int kind, pygpu_kernel_fn fn,
                         pygpu_kargs *k, int64_t parts);
/* The same for REDUCE.  Results are bit for bit those of fn(k) itself. */
int pygpu_cpu_split_reduce(pygpu_kernel_fn fn, pygpu_kargs *k,
                           int64_t parts);

#endif /* PYGPU_CPU_SPLIT_H */
