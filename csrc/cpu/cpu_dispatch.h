/* cpu_dispatch.h - what the module's init calls of the CPU floor. */
#ifndef PYGPU_CPU_DISPATCH_H
#define PYGPU_CPU_DISPATCH_H

/* Registers the CPU rows (cpu_dispatch.c) for device type cpu in the
 * dispatch table; called once by the module's init, under the GIL.  0 or
 * -1 with an exception. */
int pygpu_cpu_init(void);

#endif /* PYGPU_CPU_DISPATCH_H */
