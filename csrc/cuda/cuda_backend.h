/* cuda_backend.h - allocator backends over cudaMalloc (device memory) and
 * cudaHostAlloc (page-locked host memory), behind the caching allocator's
 * backend interface (memory/allocator.h).
 *
 * Plain C, no Python.h; compiled only in a CUDA build.  A failure other
 * than out-of-memory is remembered for the calling thread so that the
 * Python layer can report it (the backend's last_error hook) after the
 * core returns PYGPU_ALLOC_ERROR.
 */
#ifndef PYGPU_CUDA_BACKEND_H
#define PYGPU_CUDA_BACKEND_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "memory/allocator.h"

/* Fill `backend` for CUDA device `device` (pinned == 0) or for pinned host
 * memory (pinned != 0, device ignored).  Both have CUDA events for their
 * deferred frees (record_event / event_done) and report their last
 * failure (last_error). */
void pygpu_cuda_backend_init(pygpu_alloc_backend *backend, int device,
                             int pinned);

/* Make `device` current for one operation; *prev receives the device to
 * hand to pygpu_cuda_leave_device (on failure, `device` itself, so that
 * leaving does nothing).  Returns the cudaError_t of the switch. */
int pygpu_cuda_enter_device(int device, int *prev);
/* Restore `prev` if it differs from `device`; a failed switch back leaves
 * no error behind for the next check. */
void pygpu_cuda_leave_device(int device, int prev);

#endif /* PYGPU_CUDA_BACKEND_H */
