/* cpu_parallel.h - the pool of worker threads that the CPU rows split
 * large loops over (cpu_parallel.c).  Plain C, no Python.h.
 *
 * A job is `ntasks` calls fn(ctx, 0 .. ntasks-1), made by the calling
 * thread and the workers together, in no particular order and each exactly
 * once; pygpu_parallel_run returns when all have returned.  Callers choose
 * their tasks by the size of the work, never by the number of threads, so
 * that what a task computes does not depend on how many threads run.
 *
 * The workers start on first use.  A forked child has none (fork copies
 * only the calling thread); its pool starts afresh on its first job.
 */
#ifndef PYGPU_CPU_PARALLEL_H
#define PYGPU_CPU_PARALLEL_H

#include <stdint.h>

typedef void (*pygpu_task_fn)(void *ctx, int64_t task);

/* Runs the job: in parallel when the pool is free and has more than one
 * thread, on the calling thread alone otherwise (same results). */
void pygpu_parallel_run(int64_t ntasks, pygpu_task_fn fn, void *ctx);

/* Threads a job may use (the caller included), at least 1.  By default
 * the CPUs this process may run on.  At most 1024 run (1023 workers). */
int pygpu_get_num_threads(void);
/* Sets it (n >= 1; the caller checks); waits for a running job first. */
void pygpu_set_num_threads(int n);

#endif /* PYGPU_CPU_PARALLEL_H */
