/* pygpu.h - what every C file of the extension shares: the object layouts,
 * the module-wide state, and the cross-file internals (prefix pygpu_).
 *
 * NumPy's C API is shared across files through PY_ARRAY_UNIQUE_SYMBOL; only
 * module.c defines PYGPU_IMPORT_ARRAY and calls import_array().
 */
#ifndef PYGPU_H
#define PYGPU_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
/* Built against NumPy 2, loadable by NumPy 1.23 and later. */
#define NPY_TARGET_VERSION NPY_1_23_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pygpu_ARRAY_API
#ifndef PYGPU_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <stdint.h>

#include "allocator.h"
#include "kernels/kernels.h"

#ifndef PYGPU_VERSION /* setup.py passes pygpu/version.py's __version__ */
#define PYGPU_VERSION "unknown"
#endif

/* ---------------------------------------------------------------- devices */
enum pygpu_device_type {
    PYGPU_CPU = 0,
    PYGPU_CUDA = 1,
    PYGPU_MPS = 2 /* parses, so torch's selection code runs; holds nothing */
};

typedef struct pygpu_device {
    int type;  /* enum pygpu_device_type */
    int index; /* -1: none given */
} pygpu_device;

typedef struct {
    PyObject_HEAD
    pygpu_device dev;
} DeviceObject;

/* ----------------------------------------------------------------- dtypes */
typedef struct pygpu_dtype_info {
    int code;          /* enum pygpu_scalar */
    const char *name;  /* "float32" */
    int itemsize;
    int npy_type;      /* NPY_FLOAT32, ... */
    int is_floating_point;
} pygpu_dtype_info;

extern const pygpu_dtype_info pygpu_dtype_table[PYGPU_NDTYPES];

typedef struct {
    PyObject_HEAD
    int code;
} DTypeObject;

/* ---------------------------------------------------------------- storage */
/* The owner of a block of device (or pinned host) memory.  Tensors on CUDA,
 * and pinned CPU tensors, hold one as their base; it returns its block to
 * its allocator when the last tensor viewing it dies. */
typedef struct {
    PyObject_HEAD
    void *ptr;               /* NULL for a zero-byte storage */
    size_t nbytes;           /* bytes requested */
    pygpu_block *block;      /* NULL for zero bytes */
    PyObject *allocator;     /* AllocatorObject owning block (strong) */
    pygpu_device device;     /* where ptr lives: cuda:N, or cpu if pinned */
} StorageObject;

/* A Python handle on a pygpu_allocator: one per CUDA device (created on
 * first use), one for pinned host memory, and any number of host-backed
 * ones for tests. */
typedef struct {
    PyObject_HEAD
    pygpu_allocator *alloc;
    pygpu_alloc_backend backend;
    pygpu_host_backend_ctx host_ctx; /* used by the host backend only */
    pygpu_device device;             /* device its storages report */
    int caching;                     /* as given to pygpu_allocator_new */
    /* Out-of-memory events the core counted but Python does not see: the
     * gc.collect() retry makes one request two core attempts, and each
     * request should count once (see allocator_py.c). */
    int64_t uncounted_ooms;
    int64_t uncounted_retries;
} AllocatorObject;

/* ----------------------------------------------------------------- tensor */
typedef struct {
    PyObject_HEAD
    char *data;            /* address of element 0 */
    PyObject *base;        /* ndarray (plain CPU) or Storage (CUDA, pinned) */
    int dtype;             /* enum pygpu_scalar */
    int ndim;
    pygpu_device device;   /* index always set for CUDA */
    int64_t shape[PYGPU_MAX_DIMS];
    int64_t strides[PYGPU_MAX_DIMS]; /* in elements */
    int readonly;          /* over immutable memory: every write refused */
    PyObject *dict;
    PyObject *weakreflist;
} TensorObject;

/* ----------------------------------------------------------- module state */
/* Set once by the module's exec slot while holding the GIL and read-only
 * afterwards; the extension refuses to be initialised twice in a process
 * (its CUDA context and allocators are process-wide), as NumPy does. */
typedef struct pygpu_module_state {
    PyTypeObject *Device_Type;
    PyTypeObject *DType_Type;
    PyTypeObject *Tensor_Type;
    PyTypeObject *Size_Type;
    PyTypeObject *Storage_Type;
    PyTypeObject *Allocator_Type;
    PyObject *OutOfMemoryError; /* RuntimeError subclass */
    PyObject *CudaError;        /* RuntimeError subclass */
    PyTypeObject *MaxResult_Type; /* (values, indices) struct sequence */
    PyObject *dtypes[PYGPU_NDTYPES];
    PyObject *cpu_device;       /* device('cpu') */
    PyObject *np_matmul;        /* numpy.matmul, the CPU matrix product */
    PyObject *out_kwnames;      /* ("out",) for vectorcalls */
} pygpu_module_state;

extern pygpu_module_state *pygpu_state;

#define Tensor_Check(op) PyObject_TypeCheck((op), pygpu_state->Tensor_Type)
#define Device_Check(op) PyObject_TypeCheck((op), pygpu_state->Device_Type)
#define DType_Check(op) PyObject_TypeCheck((op), pygpu_state->DType_Type)

/* Registration hooks called by module exec; each adds its types/functions
 * to the module and fills its part of pygpu_state.  Return 0 or -1. */
int pygpu_device_register(PyObject *m);
int pygpu_dtype_register(PyObject *m);
int pygpu_tensor_register(PyObject *m);
int pygpu_allocator_register(PyObject *m);
int pygpu_size_register(PyObject *m);
int pygpu_reduce_register(PyObject *m);
int pygpu_matmul_register(PyObject *m);
/* Module-level functions of each file (PyMethodDef arrays ending NULL). */
extern PyMethodDef pygpu_create_functions[];  /* tensor_create.c */
extern PyMethodDef pygpu_ops_functions[];     /* ops_elementwise.c */
extern PyMethodDef pygpu_reduce_functions[];  /* ops_reduce.c */
extern PyMethodDef pygpu_matmul_functions[];  /* ops_matmul.c */
extern PyMethodDef pygpu_linear_functions[];  /* ops_linear.c */
extern PyMethodDef pygpu_random_functions[];  /* ops_random.c */
extern PyMethodDef pygpu_cuda_functions[];    /* cuda_runtime.c/cuda_none.c */
/* Tensor methods, getset and number slots (tensor_methods.c). */
extern PyMethodDef pygpu_tensor_methods[];
extern PyGetSetDef pygpu_tensor_getset[];

/* ------------------------------------------------------------- arguments */
/* Parse vectorcall arguments by name into out[0..nnames): positional ones
 * first (at most max_pos), then keywords; missing ones stay NULL.  The
 * first `required` must be given.  -1 with TypeError in Python's words. */
int pygpu_parse_args(const char *fname, PyObject *const *args,
                     Py_ssize_t nargs, PyObject *kwnames,
                     const char *const *names, int nnames, int max_pos,
                     int required, PyObject **out);
/* Python int -> int64 dim index in [0, ndim) (negative counts from the
 * end); IndexError in torch's words otherwise. */
int pygpu_parse_dim(PyObject *obj, int ndim, int *dim);
int pygpu_parse_bool(PyObject *obj, int def, int *out);
/* `*args` or one tuple/list argument as items[0..n); *seq holds the
 * reference to release (NULL when args itself was used).  n is checked
 * against PYGPU_MAX_DIMS.  -1 with an exception. */
int pygpu_unpack_dims(PyObject *const *args, Py_ssize_t nargs,
                      PyObject **seq, PyObject *const **items,
                      Py_ssize_t *n);
/* One size: a Python int or an object with __index__ (not a bool or a
 * tensor).  1 with *out set; 0 (no exception) when obj is no integer; -1
 * with RuntimeError("Overflow when unpacking long") past int64. */
int pygpu_parse_size_item(PyObject *obj, int64_t *out);
/* items[0..n) as sizes (signs unchecked); TypeError "<what> must be a tuple
 * of ints, ..." for a non-integer.  0 or -1 with an exception. */
int pygpu_parse_sizes(const char *what, PyObject *const *items,
                      Py_ssize_t n, int64_t *out);

/* ---------------------------------------------------------------- devices */
/* Parse "cpu" | "cuda" | "cuda:N" | ("cuda", N) | device | int (cuda:N).
 * Raises RuntimeError/ValueError/TypeError naming what was given. */
int pygpu_parse_device(PyObject *obj, pygpu_device *out);
/* As above, but None gives *def (returns 0). */
int pygpu_parse_device_opt(PyObject *obj, const pygpu_device *def,
                           pygpu_device *out);
PyObject *pygpu_device_new(pygpu_device dev);
/* Fill a missing CUDA index with the current device; check the ordinal is
 * valid and CUDA usable.  mps raises.  0 or -1 with an exception. */
int pygpu_device_resolve(pygpu_device *dev);
/* "cpu", "cuda:0" into buf. */
void pygpu_device_str(const pygpu_device *dev, char *buf, size_t n);
int pygpu_device_equal(const pygpu_device *a, const pygpu_device *b);

/* ----------------------------------------------------------------- dtypes */
/* DType object, or None -> def.  -1 with TypeError otherwise. */
int pygpu_parse_dtype_opt(PyObject *obj, int def, int *out);
/* Map a NumPy type number to a pygpu code; -1 (no exception) if none. */
int pygpu_dtype_from_npy(int npy_type);
/* torch's promotion of two tensor dtypes. */
int pygpu_promote(int a, int b);

/* ---------------------------------------------------------------- storage */
/* New Storage of nbytes on a CUDA device (through its caching allocator,
 * with out-of-memory retry and OutOfMemoryError) or, for pinned host
 * memory, pass dev.type == PYGPU_CPU.  NULL with an exception. */
StorageObject *pygpu_storage_new(pygpu_device dev, size_t nbytes);
/* The allocator of a CUDA device, created on first use (borrowed). */
AllocatorObject *pygpu_cuda_allocator(int device);
/* CUDA build: give the cached blocks of `device`'s allocator (if it exists
 * yet) back to the driver, as empty_cache does; the bytes given back.
 * Calls no Python API.  Use pygpu_cuda_oom_retry rather than this. */
size_t pygpu_cuda_allocator_release(int device);

/* ----------------------------------------------------------------- tensor */
/* An uninitialised contiguous tensor.  shape may be NULL when ndim == 0. */
TensorObject *pygpu_tensor_empty(int ndim, const int64_t *shape, int dtype,
                                 pygpu_device dev);
/* Test aid: when set, every new tensor's memory is filled with 0xFF bytes
 * (NaN for floats, -1 for int64) so that tests see unwritten outputs. */
void pygpu_set_poison(int on);
/* A contiguous tensor over a storage (which it references). */
TensorObject *pygpu_tensor_on_storage(StorageObject *st, int ndim,
                                      const int64_t *shape, int dtype,
                                      pygpu_device dev);
/* A view of t's memory with another shape/strides/offset (elements). */
TensorObject *pygpu_tensor_view(TensorObject *t, int ndim,
                                const int64_t *shape, const int64_t *strides,
                                int64_t elem_offset);
/* The number of elements of a shape every tensor already has (never
 * overflows: shapes are checked where they are made). */
int64_t pygpu_numel(int ndim, const int64_t *shape);
/* The number of elements of a new shape: RuntimeError for a negative dim
 * or a product past int64 (torch's "numel: integer multiplication
 * overflow"), naming the shape.  0 or -1. */
int pygpu_shape_numel(int ndim, const int64_t *shape, int64_t *out);
/* "2, 3, 4" into buf (truncated with "..." when it does not fit). */
void pygpu_format_shape(char *buf, size_t n, int ndim,
                        const int64_t *shape);
int pygpu_is_contiguous(const TensorObject *t);
/* A CPU tensor that shares the memory of a NumPy array (from_numpy). */
TensorObject *pygpu_tensor_from_ndarray(PyArrayObject *arr);
/* pygpu.tensor(data): a new tensor holding a copy of data (nested lists,
 * scalars, arrays, tensors); dtype -1 infers it as torch does. */
TensorObject *pygpu_tensor_from_data(PyObject *data, int dtype,
                                     pygpu_device dev);
/* A NumPy array viewing a CPU tensor's memory. */
PyObject *pygpu_tensor_to_ndarray(TensorObject *t);
/* Copy/convert between any two tensors of equal shape, any devices
 * (unchecked: copy_ and t[k] = v go through pygpu_tensor_assign). */
int pygpu_tensor_copy_into(TensorObject *dst, TensorObject *src);
/* A new contiguous tensor on dev with dtype, holding src's values. */
TensorObject *pygpu_tensor_to(TensorObject *src, pygpu_device dev,
                              int dtype);
/* src itself (new reference) if contiguous, else a contiguous copy. */
TensorObject *pygpu_tensor_contiguous(TensorObject *src);
/* dst <- src broadcast to dst's shape, any devices (copy_, t[k] = v),
 * after pygpu_check_write. */
int pygpu_tensor_assign(TensorObject *dst, TensorObject *src);
/* t.expand(*sizes) (tensor_views.c). */
PyObject *pygpu_t_expand(PyObject *op, PyObject *const *args,
                         Py_ssize_t nargs);
/* t.T as a new view (tensor_views.c). */
PyObject *pygpu_t_get_T(PyObject *op, void *closure);
/* t.item(): the single element as a Python number (tensor_convert.c). */
PyObject *pygpu_t_item(PyObject *op, PyObject *noargs);
/* pygpu.Size from shape. */
PyObject *pygpu_size_new(int ndim, const int64_t *shape);
/* Parse `*size` or one sequence argument into shape; -1 with exception. */
int pygpu_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim,
                      int64_t *shape);

/* -------------------------------------------------------------------- ops */
/* a <op> b where either may be a Python scalar (at least one a tensor);
 * `out` non-NULL makes it in place (out is a, broadcasting must not change
 * its shape, its dtype is kept).  New reference or NULL. */
PyObject *pygpu_op_binary(int op, PyObject *a, PyObject *b,
                          TensorObject *out);
/* pygpu.add(input, other, alpha=...) and t.add(other, alpha=...): alpha
 * (may be NULL) scales other, as torch; TypeError for non-numbers. */
PyObject *pygpu_binary_call(int op, const char *name, PyObject *input,
                            PyObject *other, PyObject *alpha,
                            TensorObject *out);
PyObject *pygpu_op_unary(int op, TensorObject *a, int inplace);
/* op over dim (NULL/None: all elements). MAX over a dim gives a
 * (values, indices) pair, as torch. */
PyObject *pygpu_op_reduce(int op, TensorObject *t, PyObject *dim,
                          int keepdim);
PyObject *pygpu_op_matmul(PyObject *a, PyObject *b);
/* torch.backends.cuda.matmul.allow_tf32 (ops_matmul.c): an atomic flag the
 * products' front ends read at each call and pass down to cuBLAS. */
void pygpu_set_allow_tf32(int allow);
int pygpu_get_allow_tf32(void);
/* x @ w.T (+ bias) (relu); bias may be NULL. */
PyObject *pygpu_op_linear(TensorObject *x, TensorObject *w,
                          TensorObject *bias, int relu);
/* numpy.matmul(a, b, out=out) over the tensors' memory (CPU). */
int pygpu_cpu_matmul(TensorObject *out, TensorObject *a, TensorObject *b);
/* A matrix operand cuBLAS can read in place (itself, or a contiguous copy
 * expanded to the batch shape bshape[0..nb)), described in *mat (a
 * pygpu_mat from blas.h). */
struct pygpu_mat;
TensorObject *pygpu_blas_operand(TensorObject *t, int nb,
                                 const int64_t *bshape,
                                 struct pygpu_mat *mat);
/* Same device and dtype for a matrix product's operands, torch's words. */
int pygpu_check_matmul_pair(const TensorObject *a, const TensorObject *b);
/* TypeError "<fname>(): argument '<arg>' must be Tensor" unless x is one. */
int pygpu_tensor_arg(PyObject *x, const char *fname, const char *arg);
/* Run an elementwise copy/convert dst <- src (same shape, same device). */
int pygpu_op_copy_same_device(TensorObject *dst, TensorObject *src);
/* Fill a contiguous tensor with a value. */
int pygpu_op_fill(TensorObject *t, double value);
/* Fill a contiguous float tensor with random numbers from the device's
 * generator (normal != 0: standard normal). */
int pygpu_op_random(TensorObject *t, int normal);
/* Geometry for an elementwise op: out (contiguous result of shape
 * out_shape) and up to two inputs broadcast to it; coalesces dims. */
int pygpu_make_geom(pygpu_geom *g, int ndim, const int64_t *shape,
                    TensorObject *out, TensorObject *a, TensorObject *b);
/* Broadcast two shapes (torch/NumPy rules); -1 with RuntimeError. */
int pygpu_broadcast_shapes(int na, const int64_t *sa, int nb,
                           const int64_t *sb, int *nout, int64_t *out);
/* RuntimeError "Expected all tensors to be on the same device, but found at
 * least two devices, cuda:0 and cpu!" unless a and b share a device. */
int pygpu_check_same_device(const TensorObject *a, const TensorObject *b);

/* --------------------------------------------------------------- overlap */
/* overlap.c: torch's memory-overlap rules.  Only definite answers raise. */
enum { PYGPU_MEM_NO, PYGPU_MEM_YES, PYGPU_MEM_TOO_HARD };
enum {
    PYGPU_ALIAS_NONE,
    PYGPU_ALIAS_FULL,    /* the same elements at the same indices */
    PYGPU_ALIAS_PARTIAL, /* some memory shared otherwise */
    PYGPU_ALIAS_TOO_HARD
};
/* Whether two indices of t reach one address (YES: a zero stride of a
 * dim larger than 1, or a stride k times a smaller one within its size). */
int pygpu_has_internal_overlap(const TensorObject *t);
/* How the memory of a and b relates; zero-element tensors never overlap. */
int pygpu_get_overlap(const TensorObject *a, const TensorObject *b);
/* ValueError "assignment destination is read-only" for a read-only t. */
int pygpu_check_writable(const TensorObject *t);
/* Before writing out from in1/in2 (either may be NULL): writable, no
 * internal overlap, no partial overlap with an input (RuntimeError in
 * torch's words).  0 or -1 with the exception. */
int pygpu_check_write(const TensorObject *out, const TensorObject *in1,
                      const TensorObject *in2);

/* ------------------------------------------------------------------- cuda */
/* Implemented in cuda_runtime.c, or in cuda_none.c for a CPU-only build,
 * where each raises RuntimeError("pygpu was built without CUDA support")
 * or reports 0 devices. */
int pygpu_cuda_built(void);
/* RuntimeError("pygpu was built without CUDA support"); returns -1. */
int pygpu_raise_no_cuda(void);
int pygpu_cuda_device_count(void); /* 0 when no driver/device */
/* Why CUDA is unusable, for messages; NULL if usable. */
const char *pygpu_cuda_unavailable_reason(void);
int pygpu_cuda_current_device(int *dev); /* 0 or -1 with exception */
/* CUDA's lazy initialisation, which every first use of CUDA goes through
 * (device parsing, queries, the CUDA and pinned allocators): probes the
 * driver once and, when it is usable, registers the fork handler, once.
 * 0 if CUDA can be used here, else -1 with RuntimeError saying why (no
 * driver or device, or a child forked after CUDA was initialised, in
 * torch's words). */
int pygpu_cuda_require(void);
int pygpu_cuda_set_device(int dev);      /* 0 or -1 with exception */
/* Make `dev` current for one operation: returns the device that was current
 * (to hand to pygpu_cuda_device_restore afterwards), or -1 with exception.
 * Like torch's device guard, an op on cuda:1 leaves cuda:0 current. */
int pygpu_cuda_device_guard(int dev);
void pygpu_cuda_device_restore(int dev, int prev); /* never fails */
/* Copy nbytes between host memory (device PYGPU_HOST) and a GPU, or
 * between two GPUs (cudaMemcpyPeer, ordered after earlier work on both).
 * Synchronous with respect to the host for device-to-host copies (the data
 * is there on return).  0 or -1 with exception. */
#define PYGPU_HOST (-1)
int pygpu_cuda_memcpy(void *dst, int dst_device, const void *src,
                      int src_device, size_t nbytes);
/* Fill nbytes at ptr on `device` with `byte` (cudaMemsetAsync on the
 * current stream).  0 or -1 with exception. */
int pygpu_cuda_memset(void *ptr, int byte, size_t nbytes, int device);
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
/* The stream ops on `device` launch on (the legacy default stream for now). */
void *pygpu_cuda_current_stream(int device);

#endif /* PYGPU_H */
