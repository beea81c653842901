/* cuda_backend.h - allocator backends over cudaMalloc (device memory) and
 * cudaHostAlloc (page-locked host memory), for the caching allocator core.
 *
 * Plain C, no Python.h; compiled only in a CUDA build.  A failure other
 * than out-of-memory is remembered for the calling thread so that the
 * Python layer can report it after the core returns PYGPU_ALLOC_ERROR.
 */
#ifndef PYGPU_CUDA_BACKEND_H
#define PYGPU_CUDA_BACKEND_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "memory/allocator.h"

/* Fill `backend` for CUDA device `device` (pinned == 0) or for pinned host
 * memory (pinned != 0, device ignored).  Both have CUDA events for their
 * deferred frees (record_event / event_done). */
void pygpu_cuda_backend_init(pygpu_alloc_backend *backend, int device,
                             int pinned);

/* Make `device` current for one operation; *prev receives the device to
 * hand to pygpu_cuda_leave_device (on failure, `device` itself, so that
 * leaving does nothing).  Returns the cudaError_t of the switch. */
int pygpu_cuda_enter_device(int device, int *prev);
/* Restore `prev` if it differs from `device`; a failed switch back leaves
 * no error behind for the next check. */
void pygpu_cuda_leave_device(int device, int prev);

/* If `backend` is one of these backends and the calling thread's last
 * call into them failed other than for memory, write
 * "CUDA error: <string> (<name>) in <call>" into buf and return 1;
 * otherwise return 0. */
int pygpu_cuda_backend_describe(const pygpu_alloc_backend *backend, char *buf,
                                size_t n);

#endif /* PYGPU_CUDA_BACKEND_H */
