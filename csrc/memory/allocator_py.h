/* allocator_py.h - internals shared by allocator_py.c (the Allocator type
 * and the process-wide allocators) and storage_py.c (the Storage type and
 * the allocation path).
 */
#ifndef PYGPU_ALLOCATOR_PY_H
#define PYGPU_ALLOCATOR_PY_H

#include "memory/memory.h"


extern PyType_Spec pygpu_storage_spec;
extern PyMethodDef pygpu_allocator_functions[]; /* _cuda_allocator, ... */

/* A non-negative int (anything with __index__) as a size_t: TypeError,
 * ValueError (negative) or OverflowError otherwise, naming `what`. */
int pygpu_to_size(PyObject *obj, const char *what, size_t *out);

/* A stream handle given as an int (a cudaStream_t's address) as a
 * pointer: TypeError or OverflowError otherwise.  0 or -1. */
int pygpu_to_stream(PyObject *obj, void **out);

/* Fill *core with hooks that call *inner's, releasing the GIL (when the
 * caller holds it) around raw_alloc; *inner must outlive the core. */
void pygpu_backend_without_gil(pygpu_alloc_backend *core,
                               const pygpu_alloc_backend *inner);

/* A Storage of nbytes from a on stream (from the private pool of
 * `route` when that route is open; 0: none): the core, then on
 * out-of-memory a gc.collect() and one more try, then OutOfMemoryError.
 * NULL with an exception. */
StorageObject *pygpu_storage_alloc(AllocatorObject *a, size_t nbytes,
                                   void *stream, uint64_t route);

/* storage_deferred.c: Storage_dealloc of a block recorded on streams
 * hands it over (block and allocator reference) to wait for them: 0, or
 * -1 when that could not be arranged (free it at once).  And whether any
 * block waits (a cheap check before pygpu_storage_free_deferred). */
int pygpu_storage_defer_free(StorageObject *self);
int pygpu_storage_deferred_waiting(void);

#endif /* PYGPU_ALLOCATOR_PY_H */
