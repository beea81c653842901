/* runtime.h - the device runtime the lower floors need, as a table of
 * functions that the CUDA floor fills at the module's init.
 *
 * core/ and memory/ sit below cuda/, so they never call it: they ask for
 * CUDA's devices, its lazy initialisation, the current stream, a memset
 * and the graph captures underway through this table, which cuda/'s init
 * installs (cuda/cuda_runtime.c in a CUDA build; cuda/cuda_none.c, the
 * stand-in, in a CPU-only one, where there are no devices and every
 * request for one raises RuntimeError("pygpu was built without CUDA
 * support")).  The static inline functions below keep the call sites as
 * they read: pygpu_cuda_require() and the rest.  Included by pygpu.h.
 */
#ifndef PYGPU_RUNTIME_H
#define PYGPU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

typedef struct pygpu_device_runtime {
    int built; /* 1 in a CUDA build, 0 in a CPU-only one */
    /* The usable devices; 0 when no driver or device (or no CUDA). */
    int (*device_count)(void);
    /* Why CUDA is unusable, for messages; NULL if usable. */
    const char *(*unavailable_reason)(void);
    /* CUDA's lazy initialisation: 0 if CUDA can be used here, else -1
     * with RuntimeError saying why. */
    int (*require)(void);
    /* The current device into *dev: 0 or -1 with an exception. */
    int (*current_device)(int *dev);
    /* The calling thread's current stream on `device` (NULL: the legacy
     * default stream).  Never fails. */
    void *(*current_stream)(int device);
    /* Fill nbytes at ptr on `device` with `byte`, on its current stream:
     * 0 or -1 with an exception. */
    int (*memset)(void *ptr, int byte, size_t nbytes, int device);
    /* Graph captures (see the wrappers below). */
    int (*captures_underway)(void);
    uint64_t (*capture_route)(int device, void *stream);
    int (*capture_refuse)(int device, void *stream, int kind,
                          const char *what);
} pygpu_device_runtime;

/* The installed runtime.  Written once, by the module's init under the
 * GIL (cuda/'s init, right after the module-wide state is set and before
 * anything can call it), and read-only afterwards: no lock needed. */
extern const pygpu_device_runtime *pygpu_runtime;

/* cuda/'s init: install rt (static storage; every hook set).  Once. */
void pygpu_runtime_install(const pygpu_device_runtime *rt);

/* What a CPU-only build says to every request for CUDA, written once. */
#define PYGPU_NO_CUDA_MESSAGE "pygpu was built without CUDA support"

/* The host, where a device index is expected (copies). */
#define PYGPU_HOST (-1)

static inline int
pygpu_cuda_built(void)
{
    return pygpu_runtime->built;
}

static inline int
pygpu_cuda_device_count(void)
{
    return pygpu_runtime->device_count();
}

static inline const char *
pygpu_cuda_unavailable_reason(void)
{
    return pygpu_runtime->unavailable_reason();
}

/* CUDA's lazy initialisation, which every first use of CUDA goes through
 * (device parsing, queries, the CUDA and pinned allocators): probes the
 * driver once and, when it is usable, registers the fork handler, once.
 * 0 if CUDA can be used here, else -1 with RuntimeError saying why (no
 * driver or device, or a child forked after CUDA was initialised, in
 * torch's words). */
static inline int
pygpu_cuda_require(void)
{
    return pygpu_runtime->require();
}

static inline int
pygpu_cuda_current_device(int *dev)
{
    return pygpu_runtime->current_device(dev);
}

/* The stream ops on `device` launch on: the calling thread's current
 * stream there (NULL: the legacy default stream; see cuda/cuda_stream.h). */
static inline void *
pygpu_cuda_current_stream(int device)
{
    return pygpu_runtime->current_stream(device);
}

/* Fill nbytes at ptr on `device` with `byte` (cudaMemsetAsync on the
 * current stream).  0 or -1 with exception. */
static inline int
pygpu_cuda_memset(void *ptr, int byte, size_t nbytes, int device)
{
    return pygpu_runtime->memset(ptr, byte, nbytes, device);
}

/* CUDA graph capture (cuda/cuda_capture.c; a CPU-only build has none).
 * The number of captures pygpu has begun and not yet ended in the whole
 * process (an atomic read: when 0, the two functions below return at
 * once, so the paths that call them cost next to nothing outside
 * captures). */
static inline int
pygpu_cuda_captures_underway(void)
{
    return pygpu_runtime->captures_underway();
}

/* The allocation route of new memory for work on `stream` of `device`:
 * the id of the capture pygpu is making there (a stream joined to such a
 * capture included), whose private pool serves it; 0 for none.  Never
 * fails. */
static inline uint64_t
pygpu_cuda_capture_route(int device, void *stream)
{
    return pygpu_runtime->capture_route(device, stream);
}

/* What an operation that cannot be captured does (kinds for
 * pygpu_cuda_capture_refuse). */
#define PYGPU_CAPTURE_ON_STREAM 0    /* work on `stream` no graph can hold */
#define PYGPU_CAPTURE_WAITS 1        /* the host waits for `stream` */
#define PYGPU_CAPTURE_WAITS_DEVICE 2 /* the host waits for the device */

/* Call before such an operation, before any CUDA call: 0 when it may run;
 * -1 with CudaError (cudaErrorStreamCaptureUnsupported, naming `what`)
 * when it would break a capture pygpu is making: one on `stream`, and for
 * a wait also any capture in the global mode and any in the thread-local
 * mode begun by this thread (for a device-wide wait, any on `device`).
 * Such captures are marked invalidated: their capture_end discards them
 * and raises. */
static inline int
pygpu_cuda_capture_refuse(int device, void *stream, int kind,
                          const char *what)
{
    return pygpu_runtime->capture_refuse(device, stream, kind, what);
}

#endif /* PYGPU_RUNTIME_H */
