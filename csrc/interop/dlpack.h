/* dlpack.h - pygpu's declarations of the DLPack ABI (the C structs that
 * DLPack capsules carry), written from the DLPack specification, and what
 * the DLPack files of ops/ share.
 *
 * The layouts must match the specification bit for bit: a capsule named
 * "dltensor" holds a pygpu_dl_managed (DLManagedTensor, the legacy 0.x
 * layout), one named "dltensor_versioned" a pygpu_dl_managed_v (1.x). */
#ifndef PYGPU_DLPACK_H
#define PYGPU_DLPACK_H

#include "ops/ops.h"

#include <stdint.h>

/* The version this code writes into versioned capsules. */
#define PYGPU_DLPACK_MAJOR 1
#define PYGPU_DLPACK_MINOR 0

/* DLDeviceType (the ones pygpu meets) */
enum {
    PYGPU_DL_CPU = 1,
    PYGPU_DL_CUDA = 2,
    PYGPU_DL_CUDA_HOST = 3, /* pinned host memory: read as CPU memory */
    PYGPU_DL_CUDA_MANAGED = 13
};

/* DLDataTypeCode */
enum {
    PYGPU_DL_INT = 0,
    PYGPU_DL_UINT = 1,
    PYGPU_DL_FLOAT = 2,
    PYGPU_DL_BFLOAT = 4,
    PYGPU_DL_COMPLEX = 5,
    PYGPU_DL_BOOL = 6
};

/* DLManagedTensorVersioned.flags */
#define PYGPU_DL_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define PYGPU_DL_FLAG_IS_COPIED ((uint64_t)1 << 1)

typedef struct {
    uint32_t major;
    uint32_t minor;
} pygpu_dl_version;               /* DLPackVersion */

typedef struct {
    int32_t device_type;          /* DLDeviceType (a C enum: int-sized) */
    int32_t device_id;
} pygpu_dl_device;                /* DLDevice */

typedef struct {
    uint8_t code;                 /* DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} pygpu_dl_dtype;                 /* DLDataType */

typedef struct {
    void *data;
    pygpu_dl_device device;
    int32_t ndim;
    pygpu_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;             /* in elements; NULL: row-major */
    uint64_t byte_offset;
} pygpu_dl_tensor;                /* DLTensor */

typedef struct pygpu_dl_managed {
    pygpu_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct pygpu_dl_managed *self);
} pygpu_dl_managed;               /* DLManagedTensor */

typedef struct pygpu_dl_managed_v {
    pygpu_dl_version version;
    void *manager_ctx;
    void (*deleter)(struct pygpu_dl_managed_v *self);
    uint64_t flags;
    pygpu_dl_tensor dl_tensor;
} pygpu_dl_managed_v;             /* DLManagedTensorVersioned */

/* Capsule names the protocol fixes. */
#define PYGPU_DL_NAME "dltensor"
#define PYGPU_DL_NAME_V "dltensor_versioned"
#define PYGPU_DL_USED "used_dltensor"
#define PYGPU_DL_USED_V "used_dltensor_versioned"

/* pygpu's dtype as a DLDataType; -1 (no exception) if it has none. */
int pygpu_dl_from_dtype(int dtype, pygpu_dl_dtype *out);
/* A DLDataType as a pygpu dtype; -1 with BufferError if pygpu has none. */
int pygpu_dl_to_dtype(pygpu_dl_dtype dt);

/* Functions of the module (from_dlpack, ...) and Tensor methods
 * (__dlpack__, __dlpack_device__, __cuda_array_interface__). */
extern PyMethodDef pygpu_dlpack_functions[];
PyObject *pygpu_t_dlpack(PyObject *op, PyObject *const *args,
                         Py_ssize_t nargs, PyObject *kwnames);
PyObject *pygpu_t_dlpack_device(PyObject *op, PyObject *noargs);
/* Tensor.record_stream (tensor_stream.c). */
PyObject *pygpu_t_record_stream(PyObject *op, PyObject *stream);
PyObject *pygpu_t_cuda_array_interface(PyObject *op, void *closure);
PyObject *pygpu_from_cuda_array_interface(PyObject *m, PyObject *obj);
/* For pygpu.tensor(): whether obj (not a tensor, sequence, array or
 * number) has __cuda_array_interface__; and a copy of such an object with
 * dtype (-1: its own) on device (NULL or None: its own). */
int pygpu_has_cuda_array_interface(PyObject *obj);
PyObject *pygpu_tensor_copy_cuda_array(PyObject *obj, int dtype,
                                       PyObject *device);

#endif /* PYGPU_DLPACK_H */
