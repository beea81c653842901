/* cuda_stream.h - streams, events and stream-ordered copies, for the ops
 * layer (DLPack, the CUDA Array Interface, .to(non_blocking=True)).
 *
 * Implemented in cuda_stream.c, cuda_event.c and cuda_copy.c in a CUDA
 * build; cuda_none.c's stand-ins raise "pygpu was built without CUDA
 * support".  Streams cross this boundary as void * (a cudaStream_t): NULL
 * is the legacy default stream, as are the protocol values below. */
#ifndef PYGPU_CUDA_STREAM_H
#define PYGPU_CUDA_STREAM_H

#include "core/pygpu.h"

#include <stdint.h>

/* The integers the Python array API, DLPack and the CUDA Array Interface
 * use for the two default streams (cudaStreamLegacy, cudaStreamPerThread). */
#define PYGPU_STREAM_LEGACY ((uintptr_t)1)
#define PYGPU_STREAM_PER_THREAD ((uintptr_t)2)

/* The calling thread's current stream on `device` (NULL: the legacy
 * default stream).  Never fails; read by pygpu_cuda_current_stream. */
void *pygpu_cuda_thread_stream(int device);

/* Make work queued on `after` from now on wait for the work queued so far
 * on `before` (an event recorded on `before`, waited on by `after`), both
 * streams of `device`; nothing when they are the same stream.  0 or -1
 * with an exception. */
int pygpu_cuda_stream_order(int device, void *before, void *after);

/* Copy nbytes between host memory (PYGPU_HOST) and a GPU, or between two
 * GPUs, on the current stream of the GPU side (the source's for a copy
 * between GPUs).  With `sync` the call returns once the data is there
 * (the GIL released while it waits); without, the copy is only queued
 * (cudaMemcpyAsync: asynchronous for page-locked host memory).  0 or -1
 * with an exception. */
int pygpu_cuda_memcpy_on_stream(void *dst, int dst_device, const void *src,
                                int src_device, size_t nbytes, int sync);

/* The device a CUDA pointer belongs to (cudaPointerGetAttributes);
 * -1 with ValueError when it is not device memory. */
int pygpu_cuda_pointer_device(const void *ptr, int *device);

/* The module functions behind pygpu.cuda.Stream and Event
 * (cuda_stream.c / cuda_event.c, or cuda_none.c's refusals). */
extern PyMethodDef pygpu_stream_functions[];

/* For those functions (cuda_stream.c): exactly n positional arguments
 * (TypeError otherwise); a usable device index; an int handle (0: the
 * legacy default stream).  0 or -1 with an exception. */
int pygpu_cuda_nargs(const char *name, Py_ssize_t nargs, Py_ssize_t n);
int pygpu_cuda_device_arg(PyObject *arg, int *device);
int pygpu_cuda_handle_arg(PyObject *arg, void **handle);

#endif /* PYGPU_CUDA_STREAM_H */
