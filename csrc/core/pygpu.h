/* pygpu.h - the core layer, what every C file of the extension shares:
 * the Device, DType and Tensor layouts, the module-wide state, argument
 * parsing, devices, dtypes, what a tensor's layout alone decides, and the
 * device runtime the core needs (core/runtime.h: a table the CUDA layer,
 * or its stand-in in a CPU-only build, fills at init).  memory.h and ops.h
 * add the layers above.
 *
 * NumPy's C API is shared across files through PY_ARRAY_UNIQUE_SYMBOL; only
 * core/state.c defines PYGPU_IMPORT_ARRAY and imports the API.
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

#include "kernels/kernels.h"

#ifndef PYGPU_VERSION /* setup.py passes pygpu/version.py's __version__ */
#define PYGPU_VERSION "unknown"
#endif

/* ---------------------------------------------------------------- devices */
enum pygpu_device_type {
    PYGPU_CPU = 0,
    PYGPU_CUDA = 1,
    PYGPU_MPS = 2, /* parses, so torch's selection code runs; holds nothing */
    PYGPU_NDEVICE_TYPES
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
    int npy_type;      /* NPY_FLOAT32, ...; the storage of CPU tensors
                          (bfloat16: NPY_UINT16, its bit patterns) */
    int is_floating_point;
    const char *scalar_name; /* torch's ScalarType name, for messages:
                                "Float", "Long", "Bool", "BFloat16" */
} pygpu_dtype_info;

extern const pygpu_dtype_info pygpu_dtype_table[PYGPU_NDTYPES];

typedef struct {
    PyObject_HEAD
    int code;
} DTypeObject;

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
    /* Autograd (autograd/).  A leaf has no grad_fn; it requires grad
     * when requires_grad is set, any other tensor when it has a grad_fn. */
    PyObject *grad;        /* Tensor or NULL */
    PyObject *grad_fn;     /* the Node that made it, or NULL */
    PyObject *grad_acc;    /* a leaf's AccumulateGrad node (a weakref) */
    PyObject *hooks;       /* a leaf's register_hook dict, or NULL */
    PyObject *post_hooks;  /* register_post_accumulate_grad_hook's */
    /* The version counter: every in-place write bumps it, so that a saved
     * tensor that was overwritten is noticed in backward.  A tensor counts
     * in `version` until a view of it is made; then both (and later views)
     * share `shared`. */
    struct pygpu_version *shared;
    uint32_t version;
    unsigned char requires_grad;
    unsigned char retains_grad;
} TensorObject;

/* A version counter shared by views (reference counted under the GIL). */
typedef struct pygpu_version {
    Py_ssize_t refs;
    uint32_t value;
} pygpu_version;

/* The version counter of t's memory. */
static inline uint32_t *
pygpu_version_counter(TensorObject *t)
{
    return t->shared != NULL ? &t->shared->value : &t->version;
}

/* view shares src's counter (made shared on first use).  -1 with
 * MemoryError. */
int pygpu_version_share(TensorObject *view, TensorObject *src);
/* t counts alone again (its memory changed, or it is dying). */
void pygpu_version_release(TensorObject *t);

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
    PyTypeObject *MinResult_Type; /* the same for min */
    PyObject *dtypes[PYGPU_NDTYPES];
    PyObject *cpu_device;       /* device('cpu') */
    PyObject *np_matmul;        /* numpy.matmul, the CPU matrix product */
    PyObject *out_kwnames;      /* ("out",) for vectorcalls */
    /* Filled in by autograd's registration: why an unrecorded write to t,
     * which takes part in autograd, is refused (torch's words for a leaf
     * and a view of one).  Ops call it from their write check and know
     * nothing else of autograd. */
    const char *(*write_refusal)(const TensorObject *t);
} pygpu_module_state;

extern pygpu_module_state *pygpu_state;
/* -------------------------------------------------------------- grad mode
 * core/grad_mode.c: grad mode and inference mode, per thread, as torch
 * keeps them in its core (a new thread records).  What autograd reads to
 * decide whether an op is recorded, and what an in-place write checks. */
/* Whether this thread records (grad mode on, inference mode off). */
int pygpu_grad_enabled(void);
/* Set this thread's grad mode; the previous mode. */
int pygpu_set_grad_enabled(int on);
extern PyMethodDef pygpu_grad_mode_functions[];
/* Whether t takes part in autograd: a leaf with requires_grad, or a
 * tensor with a grad_fn. */
static inline int
pygpu_requires_grad(const TensorObject *t)
{
    return t != NULL && (t->requires_grad || t->grad_fn != NULL);
}
/* ----------------------------------------------------------- default dtype */
/* core/default_dtype.c: torch's process-wide default floating dtype (float32
 * until set_default_dtype), read atomically by factories and promotion. */
int pygpu_default_dtype(void);
extern PyMethodDef pygpu_default_dtype_functions[];
/* ---------------------------------------------------------- default device */
/* core/default_device.c: torch's default device, per thread (the CPU until
 * set_default_device or a `with device(...)` block): what factories given
 * no device= use.  is_set: whether one was set, even to 'cpu' (then
 * tensor(t) follows it rather than t's device, as torch's does). */
pygpu_device pygpu_default_device(void);
int pygpu_default_device_is_set(void);
/* device.__enter__ / __exit__: set the default for the block, restore. */
PyObject *pygpu_device_enter(PyObject *self, PyObject *noargs);
PyObject *pygpu_device_exit(PyObject *self, PyObject *const *args,
                            Py_ssize_t nargs);
extern PyMethodDef pygpu_default_device_functions[];
/* The module's init calls this first (core/state.c): refuses a second
 * initialisation in the process, imports NumPy's C API, sets pygpu_state
 * and adds the exception types to m.  0 or -1. */
int pygpu_state_init(PyObject *m);

#define Tensor_Check(op) PyObject_TypeCheck((op), pygpu_state->Tensor_Type)
#define Device_Check(op) PyObject_TypeCheck((op), pygpu_state->Device_Type)
#define DType_Check(op) PyObject_TypeCheck((op), pygpu_state->DType_Type)

/* Registration hooks called by module exec; each adds its types/functions
 * to the module and fills its part of pygpu_state.  Return 0 or -1. */
int pygpu_device_register(PyObject *m);
int pygpu_dtype_register(PyObject *m);
int pygpu_size_register(PyObject *m);
/* A new type from spec (bases may be NULL), bound to m and added to it as
 * `name`: a new reference, or NULL with an exception (module_types.c). */
PyObject *pygpu_add_type(PyObject *m, PyType_Spec *spec, PyObject *bases,
                         const char *name);
/* The NCCL communicator type's spec and the NCCL functions of the module
 * (dist/nccl_*.c, or dist/nccl_none.c in a build without NCCL). */
extern PyType_Spec pygpu_nccl_comm_spec;
extern PyMethodDef pygpu_nccl_module_functions[];
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
/* The items of a list or tuple (any iterable) as a tuple: a tuple itself,
 * a list copied, so that items read from it stay alive while Python code
 * (an __index__) runs that may change the list.  TypeError(msg) for what
 * is no iterable.  A new reference, or NULL with an exception. */
PyObject *pygpu_sequence_tuple(PyObject *obj, const char *msg);
/* `*args` or one tuple/list argument as items[0..n); *seq holds the
 * reference to release (NULL when args itself was used): a tuple, a list
 * copied (pygpu_sequence_tuple).  n is checked against PYGPU_MAX_DIMS.
 * -1 with an exception. */
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
/* torch's categories: PYGPU_CAT_BOOL < PYGPU_CAT_INT < PYGPU_CAT_FLOAT. */
enum { PYGPU_CAT_BOOL = 0, PYGPU_CAT_INT = 1, PYGPU_CAT_FLOAT = 2 };
int pygpu_dtype_category(int dtype);

/* --------------------------------------------------------- tensor layout */
/* tensor_layout.c: what a tensor's layout alone decides. */
/* The number of elements of a shape every tensor already has (never
 * overflows: shapes are checked where they are made). */
int64_t pygpu_numel(int ndim, const int64_t *shape);
/* The number of elements of a new shape: RuntimeError for a negative dim
 * or a product past int64 (torch's "numel: integer multiplication
 * overflow"), naming the shape; also when the product of the non-zero
 * sizes passes int64 (no elements, but strides that would not fit), so
 * that every tensor's contiguous strides fit.  0 or -1. */
int pygpu_shape_numel(int ndim, const int64_t *shape, int64_t *out);
/* The bytes of a dense tensor of this shape and dtype: the one
 * overflow-checked size product, for every byte count formed from a shape
 * (numel * itemsize).  RuntimeError for a negative dim (as
 * pygpu_shape_numel) or a count past int64 (torch's "Storage size
 * calculation overflowed with sizes=[...]").  0 or -1. */
int pygpu_shape_nbytes(int ndim, const int64_t *shape, int dtype,
                       size_t *out);
/* The bytes from element 0 to one past the last element of a layout of
 * non-negative strides (elements), 0 when it has no element; the same
 * RuntimeError ("... sizes=[...] and strides=[...]") past int64. */
int pygpu_strided_nbytes(int ndim, const int64_t *shape,
                         const int64_t *strides, int dtype, size_t *out);
/* "2, 3, 4" into buf (truncated with "..." when it does not fit). */
void pygpu_format_shape(char *buf, size_t n, int ndim,
                        const int64_t *shape);
int pygpu_is_contiguous(const TensorObject *t);
/* Row-major strides (elements) of a dense tensor of this shape. */
void pygpu_contiguous_strides(int ndim, const int64_t *shape,
                              int64_t *strides);
/* A view of t's memory with another shape/strides/offset (elements). */
TensorObject *pygpu_tensor_view(TensorObject *t, int ndim,
                                const int64_t *shape, const int64_t *strides,
                                int64_t elem_offset);
/* The same as a new object of type tp (a subclass such as Parameter). */
TensorObject *pygpu_tensor_view_as(PyTypeObject *tp, TensorObject *t,
                                   int ndim, const int64_t *shape,
                                   const int64_t *strides,
                                   int64_t elem_offset);
/* A NumPy array viewing a CPU tensor's memory. */
PyObject *pygpu_tensor_to_ndarray(TensorObject *t);
/* pygpu.Size from shape. */
PyObject *pygpu_size_new(int ndim, const int64_t *shape);
/* Parse `*size` or one sequence argument into shape; -1 with exception. */
int pygpu_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim,
                      int64_t *shape);
/* g over shape[0..ndim) (ndim up to 2 * PYGPU_MAX_DIMS) for nops operands
 * of strides st[k][0..ndim) (the others get 0): size-1 dims dropped, dims
 * every operand walks as one merged.  -1 (no exception) when more than
 * PYGPU_MAX_DIMS dims remain (tensor_layout.c). */
int pygpu_geom_build(pygpu_geom *g, int ndim, const int64_t *shape, int nops,
                     const int64_t *const *st);
/* Geometry for an elementwise op: out (contiguous result of shape
 * out_shape) and up to two inputs broadcast to it; coalesces dims. */
int pygpu_make_geom(pygpu_geom *g, int ndim, const int64_t *shape,
                    TensorObject *out, TensorObject *a, TensorObject *b);
/* Run an elementwise copy/convert dst <- src (same shape, same device)
 * through the dispatch table. */
int pygpu_op_copy_same_device(TensorObject *dst, TensorObject *src);
/* out (out_dtype) <- in (in_dtype) over an explicit geometry g on dev
 * (operands 0 and 1; strides may be negative): one copy through the
 * dispatch table, nothing when numel is 0 (tensor_layout.c). */
int pygpu_op_copy_geom(pygpu_device dev, int out_dtype, void *out,
                       int in_dtype, const void *in, const pygpu_geom *g,
                       int64_t numel);

/* ----------------------------------------------------------------- errors */
/* RuntimeError(PYGPU_NO_CUDA_MESSAGE); returns -1 (errors.c). */
int pygpu_raise_no_cuda(void);
/* MemoryError "can't allocate memory: you tried to allocate N bytes for
 * <what>" (torch's CPU allocator's words; without the figure when nbytes is
 * 0), for a failed host allocation, where PyErr_NoMemory() would leave an
 * empty message.  Returns NULL (errors.c). */
PyObject *pygpu_raise_no_memory(const char *what, size_t nbytes);
/* Raise pygpu.CudaError with the message PyUnicode_FromFormat(format, ...)
 * and the failing status as its `code` and `name` attributes (name may be
 * NULL: None).  Returns -1. */
int pygpu_raise_cuda_error(long code, const char *name, const char *format,
                           ...);

/* ------------------------------------------------------- device runtime */
/* What core/ and memory/ need of CUDA, through the table that cuda/ fills
 * at init: pygpu_cuda_require(), pygpu_cuda_current_stream(), ... */
#include "core/runtime.h"

/* A METH_FASTCALL (| METH_KEYWORDS) function's PyMethodDef fields. */
#define FASTKW(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS
#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL

#endif /* PYGPU_H */
