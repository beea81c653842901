/* ops_copy.c - copies: to another dtype or device (the COPY kind on one
 * device; across devices, convert and compact on the source side, then
 * one memcpy on the current stream), contiguous, copying into an existing
 * tensor, and broadcasting a source onto a destination (copy_, t[k] = v).
 * Nothing here records autograd history: autograd's pygpu_ag_to does, and
 * calls these. */
#include "ops/ops.h"
#include "cuda/cuda_stream.h"

#include <string.h>

TensorObject *
pygpu_expand_view(TensorObject *t, int ndim, const int64_t *want)
{
    int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS], numel;
    if (ndim < t->ndim || ndim > PYGPU_MAX_DIMS) {
        PyErr_Format(PyExc_RuntimeError,
                     "expand: the number of sizes provided (%d) must be "
                     "greater or equal to the number of dimensions in the "
                     "tensor (%d)", ndim, t->ndim);
        return NULL;
    }
    for (int d = ndim - 1, s = t->ndim - 1; d >= 0; d--, s--) {
        int64_t have = s >= 0 ? t->shape[s] : 1;
        int64_t w = want[d] == -1 && s >= 0 ? have : want[d];
        if (w < 0 || (have != 1 && have != w)) {
            PyErr_Format(PyExc_RuntimeError,
                         "The expanded size of the tensor (%lld) must match "
                         "the existing size (%lld) at non-singleton "
                         "dimension %d", (long long)w, (long long)have, d);
            return NULL;
        }
        shape[d] = w;
        strides[d] = (s >= 0 && have == w) ? t->strides[s] : 0;
    }
    if (pygpu_shape_numel(ndim, shape, &numel) < 0) {
        return NULL;
    }
    return pygpu_tensor_view(t, ndim, shape, strides, 0);
}

TensorObject *
pygpu_tensor_contiguous(TensorObject *src)
{
    if (pygpu_is_contiguous(src)) {
        Py_INCREF(src);
        return src;
    }
    return pygpu_tensor_to(src, src->device, src->dtype);
}

/* Same device: one elementwise copy/convert into a fresh tensor. */
static TensorObject *
to_same_device(TensorObject *src, int dtype)
{
    TensorObject *dst = pygpu_tensor_empty(src->ndim, src->shape, dtype,
                                           src->device);
    if (dst == NULL) {
        return NULL;
    }
    if (pygpu_op_copy_same_device(dst, src) < 0) {
        Py_DECREF(dst);
        return NULL;
    }
    return dst;
}

/* src as the contiguous `dtype` tensor a copy across devices sends:
 * itself, or a converted, compacted copy on its own device. */
static TensorObject *
staged_for(TensorObject *src, int dtype)
{
    if (src->dtype == dtype && pygpu_is_contiguous(src)) {
        return (TensorObject *)Py_NewRef(src);
    }
    return to_same_device(src, dtype);
}

/* A new tensor for a copy to the host: with non_blocking, in page-locked
 * memory (as torch), so that the copy can be asynchronous. */
static TensorObject *
host_destination(const TensorObject *src, int dtype, pygpu_device dev,
                 int non_blocking)
{
    StorageObject *st;
    TensorObject *t;
    size_t nbytes;
    if (!non_blocking) {
        return pygpu_tensor_empty(src->ndim, src->shape, dtype, dev);
    }
    if (pygpu_shape_nbytes(src->ndim, src->shape, dtype, &nbytes) < 0) {
        return NULL;
    }
    st = pygpu_storage_new(dev, nbytes);
    if (st == NULL) {
        return NULL;
    }
    t = pygpu_tensor_on_storage(st, src->ndim, src->shape, dtype, dev);
    Py_DECREF(st);
    return t;
}

/* A copy about to be queued without waiting on `device`'s current stream
 * reads or writes `pinned`: its block must not be reused (the tensor may
 * die at once) before the copy is done.  0 when it could not be guarded:
 * the copy must then be waited for. */
static int
guard_pinned(TensorObject *pinned, int device)
{
    return pygpu_storage_guard_copy((StorageObject *)pinned->base,
                                    pygpu_cuda_current_stream(device),
                                    device);
}

/* The bytes of contiguous `staged` into contiguous `dst` of the same
 * shape and dtype on another device, on the current stream of the GPU
 * side.  Without `sync` the copy is only queued when the page-locked side
 * could be guarded (guard_pinned); else it is waited for. */
static int
memcpy_across(TensorObject *dst, TensorObject *staged, int sync)
{
    size_t nbytes;
    if (pygpu_shape_nbytes(dst->ndim, dst->shape, dst->dtype, &nbytes) < 0) {
        return -1;
    }
    if (nbytes == 0) {
        return 0;
    }
    int to_host = dst->device.type == PYGPU_CPU;
    int to = to_host ? PYGPU_HOST : dst->device.index;
    int from = staged->device.type == PYGPU_CPU ? PYGPU_HOST
                                                : staged->device.index;
    if (!sync) {
        sync = !guard_pinned(to_host ? dst : staged, to_host ? from : to);
    }
    return pygpu_cuda_memcpy_on_stream(dst->data, to, staged->data, from,
                                       nbytes, sync);
}

/* Across devices: convert and compact on the source side, then copy the
 * bytes on the current stream.  With non_blocking the copy is only queued
 * when the host side is page-locked (the source itself, or a pinned
 * destination made for it), as in torch; else it is waited for.  A queued
 * copy records its stream on the pinned side, as torch's caching host
 * allocator does, so that the pinned block waits for the copy. */
static TensorObject *
to_other_device(TensorObject *src, pygpu_device dev, int dtype,
                 int non_blocking)
{
    TensorObject *staged = NULL, *dst = NULL;
    int to_host = dev.type == PYGPU_CPU;
    int sync = 1;
    staged = staged_for(src, dtype);
    if (staged == NULL) {
        goto fail;
    }
    if (to_host) {
        dst = host_destination(src, dtype, dev, non_blocking);
        sync = !non_blocking;
    }
    else {
        dst = pygpu_tensor_empty(src->ndim, src->shape, dtype, dev);
        sync = !(non_blocking && staged == src &&
                 src->device.type == PYGPU_CPU &&
                 PyObject_TypeCheck(src->base, pygpu_state->Storage_Type));
    }
    if (dst == NULL || memcpy_across(dst, staged, sync) < 0) {
        goto fail;
    }
    Py_DECREF(staged);
    return dst;
fail:
    Py_XDECREF(staged);
    Py_XDECREF(dst);
    return NULL;
}

TensorObject *
pygpu_tensor_to_async(TensorObject *src, pygpu_device dev, int dtype,
                      int non_blocking)
{
    if (pygpu_device_equal(&src->device, &dev)) {
        return to_same_device(src, dtype);
    }
    if (pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    if (pygpu_device_equal(&src->device, &dev)) {
        return to_same_device(src, dtype);
    }
    return to_other_device(src, dev, dtype, non_blocking);
}

TensorObject *
pygpu_tensor_to(TensorObject *src, pygpu_device dev, int dtype)
{
    return pygpu_tensor_to_async(src, dev, dtype, 0);
}

int
pygpu_tensor_copy_into(TensorObject *dst, TensorObject *src)
{
    if (pygpu_device_equal(&dst->device, &src->device)) {
        return pygpu_op_copy_same_device(dst, src);
    }
    if (pygpu_is_contiguous(dst) && src->ndim == dst->ndim &&
        memcmp(src->shape, dst->shape,
               (size_t)dst->ndim * sizeof(dst->shape[0])) == 0) {
        /* Straight into dst (a pinned dst then copies at the link's
         * speed): convert and compact on the source side only. */
        TensorObject *staged = staged_for(src, dst->dtype);
        int rc = staged == NULL ? -1 : memcpy_across(dst, staged, 1);
        Py_XDECREF(staged);
        return rc;
    }
    TensorObject *tmp = pygpu_tensor_to(src, dst->device, dst->dtype);
    if (tmp == NULL) {
        return -1;
    }
    int rc = pygpu_op_copy_same_device(dst, tmp);
    Py_DECREF(tmp);
    return rc;
}

int
pygpu_tensor_assign(TensorObject *dst, TensorObject *src)
{
    TensorObject *expanded = NULL;
    int rc = -1;
    if (pygpu_check_write(dst, src, NULL) < 0) {
        return -1;
    }
    if (dst->dtype == src->dtype &&
        pygpu_get_overlap(dst, src) == PYGPU_ALIAS_FULL) {
        return 0; /* x.copy_(x) */
    }
    if (src->ndim == dst->ndim &&
        memcmp(src->shape, dst->shape,
               (size_t)dst->ndim * sizeof(dst->shape[0])) == 0) {
        return pygpu_tensor_copy_into(dst, src); /* nothing to expand */
    }
    expanded = pygpu_expand_view(src, dst->ndim, dst->shape);
    if (expanded == NULL) {
        return -1;
    }
    rc = pygpu_tensor_copy_into(dst, expanded);
    Py_DECREF(expanded);
    return rc;
}

