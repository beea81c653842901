/* cuda_runtime.h - what the module's init calls of the CUDA floor, and
 * what cuda/'s files (and dist/, above it) share of its runtime: device
 * guards, launch checks, error translation.
 *
 * pygpu_cuda_init and pygpu_cuda_functions are defined in both flavours
 * (cuda_runtime.c in a CUDA build, cuda_none.c, the stand-in, in a
 * CPU-only one); the rest only in a CUDA build.  What the lower floors
 * need of CUDA is not here: they call through core/runtime.h's table,
 * which pygpu_cuda_init fills. */
#ifndef PYGPU_CUDA_RUNTIME_H
#define PYGPU_CUDA_RUNTIME_H

#include "core/pygpu.h"

/* Installs the device runtime the lower floors call through
 * (core/runtime.h) and registers the CUDA rows in the dispatch table
 * (none in a CPU-only build, whose runtime reports no devices).  Called
 * once by the module's init, under the GIL, right after the module-wide
 * state is set and before anything else.  0 or -1 with an exception. */
int pygpu_cuda_init(void);

/* The CUDA functions of the module (cuda_runtime.c, or cuda_none.c's
 * refusals). */
extern PyMethodDef pygpu_cuda_functions[];

/* ------------------------------------------------ a CUDA build only */
/* cuda_dispatch.c: registers the CUDA rows for device type cuda; called
 * by pygpu_cuda_init.  0 or -1 with an exception. */
int pygpu_cuda_dispatch_register(void);

int pygpu_cuda_set_device(int dev); /* 0 or -1 with exception */
/* Make `dev` current for one operation: returns the device that was current
 * (to hand to pygpu_cuda_device_restore afterwards), or -1 with exception.
 * Like torch's device guard, an op on cuda:1 leaves cuda:0 current. */
int pygpu_cuda_device_guard(int dev);
void pygpu_cuda_device_restore(int dev, int prev); /* never fails */
/* After an op's launch: translate `err` (a cudaError_t) into CudaError
 * naming `what`; with PYGPU_LAUNCH_BLOCKING=1 also synchronize and check. */
int pygpu_cuda_check_launch(int err, const char *what);
/* Memory the caching allocator does not see: a kernel's code is loaded
 * into device memory at its first launch, cuBLAS handles and workspaces on
 * first use.  When `status` (a cudaError_t, or a cublasStatus_t if
 * `cublas`) says such an allocation failed and emptying `device`'s cache
 * gave memory back, returns 1: the caller tries once more.  Otherwise 0.
 * Calls no Python API, takes no lock but the allocator's. */
int pygpu_cuda_oom_retry(int device, int status, int cublas);
/* rc = the launch (an expression giving a cudaError_t) on `device`,
 * launched once more if pygpu_cuda_oom_retry says so, then checked by
 * pygpu_cuda_check_launch: 0 or -1 with exception.  A launch that failed
 * queued nothing, so launching again is safe. */
#define PYGPU_CUDA_LAUNCH(rc, device, what, launch)                          \
    do {                                                                     \
        int err_ = (int)(launch);                                            \
        if (err_ != 0 && pygpu_cuda_oom_retry((device), err_, 0)) {          \
            err_ = (int)(launch);                                            \
        }                                                                    \
        (rc) = pygpu_cuda_check_launch(err_, (what));                        \
    } while (0)
/* Raise CudaError for `err` from `call`; clears the sticky error. */
PyObject *pygpu_cuda_raise(int err, const char *call, const char *file,
                           int line);

/* cuda_allocators.c: the allocators of the devices and of pinned memory,
 * which pygpu_cuda_init installs for memory/ (memory.h's
 * pygpu_device_allocators). */
extern const struct pygpu_device_allocators pygpu_cuda_allocators;
/* Give the cached blocks of `device`'s allocator (if it exists yet) back
 * to the driver, as empty_cache does; the bytes given back.  Calls no
 * Python API.  Use pygpu_cuda_oom_retry rather than this. */
size_t pygpu_cuda_allocator_release(int device);

#endif /* PYGPU_CUDA_RUNTIME_H */
