/* cpu_malloc.h - malloc's thresholds for large CPU tensors (cpu_malloc.c). */
#ifndef PYGPU_CPU_MALLOC_H
#define PYGPU_CPU_MALLOC_H

/* Once, at import: glibc keeps blocks up to 32 MiB and up to 128 MiB of
 * free heap top instead of giving them back each time (not where the
 * environment sets malloc's thresholds, nor with other C libraries). */
void pygpu_cpu_malloc_init(void);

#endif
