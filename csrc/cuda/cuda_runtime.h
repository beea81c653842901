/* cuda_runtime.h - what the module's init calls of the CUDA floor, and
 * what cuda/'s files share about its runtime.
 *
 * pygpu_cuda_init is defined in both flavours: cuda_runtime.c in a CUDA
 * build, cuda_none.c (the stand-in) in a CPU-only one. */
#ifndef PYGPU_CUDA_RUNTIME_H
#define PYGPU_CUDA_RUNTIME_H

#include "core/pygpu.h"

/* Registers the CUDA rows in the dispatch table (none in a CPU-only
 * build).  Called once by the module's init, under the GIL, right after
 * the module-wide state is set.  0 or -1 with an exception. */
int pygpu_cuda_init(void);

/* cuda_dispatch.c: registers the CUDA rows for device type cuda; called
 * by pygpu_cuda_init.  0 or -1 with an exception. */
int pygpu_cuda_dispatch_register(void);

#endif /* PYGPU_CUDA_RUNTIME_H */
