/* tensor_methods.c - the Tensor's method table, and the small methods
 * that are neither conversions, views nor ops (attributes: tensor_attrs.c). */
#include "tensor/tensor.h"
#include "ops/op_list.h"
#include "interop/dlpack.h"

/* Defined in tensor_convert.c, tensor_views.c and the ops files. */
#define FASTKW_DECL(name)                                                    \
    PyObject *name(PyObject *, PyObject *const *, Py_ssize_t, PyObject *)
#define FAST_DECL(name) PyObject *name(PyObject *, PyObject *const *, Py_ssize_t)
#define NOARGS_DECL(name) PyObject *name(PyObject *, PyObject *)
FASTKW_DECL(pygpu_t_to);
FASTKW_DECL(pygpu_t_cuda);
FASTKW_DECL(pygpu_t_contiguous);
FASTKW_DECL(pygpu_t_numpy);
FASTKW_DECL(pygpu_t_array);
FASTKW_DECL(pygpu_t_flatten);
FASTKW_DECL(pygpu_t_sum);
FASTKW_DECL(pygpu_t_mean);
FASTKW_DECL(pygpu_t_max);
FAST_DECL(pygpu_t_view);
FAST_DECL(pygpu_t_reshape);
FAST_DECL(pygpu_t_transpose);
FAST_DECL(pygpu_t_permute);
FAST_DECL(pygpu_t_squeeze);
FAST_DECL(pygpu_t_expand);
NOARGS_DECL(pygpu_t_cpu);
NOARGS_DECL(pygpu_t_float);
NOARGS_DECL(pygpu_t_half);
NOARGS_DECL(pygpu_t_double);
NOARGS_DECL(pygpu_t_long);
NOARGS_DECL(pygpu_t_to_bool);
NOARGS_DECL(pygpu_t_to_int);
NOARGS_DECL(pygpu_t_to_byte);
NOARGS_DECL(pygpu_t_to_bfloat16);
NOARGS_DECL(pygpu_t_tolist);
NOARGS_DECL(pygpu_t_item);
NOARGS_DECL(pygpu_t_t);
NOARGS_DECL(pygpu_t_unsqueeze); /* METH_O */
#include "tensor/join_methods.h" /* their declarations and rows */

#define SELF ((TensorObject *)op)

static PyObject *
t_size(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    int dim;
    if (nargs == 0 || args[0] == Py_None) {
        return pygpu_size_new(SELF->ndim, SELF->shape);
    }
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "size() takes at most one dim");
        return NULL;
    }
    if (pygpu_parse_dim(args[0], SELF->ndim, &dim) < 0) {
        return NULL;
    }
    return PyLong_FromLongLong(SELF->ndim ? SELF->shape[dim] : 1);
}

static PyObject *
t_stride(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    int dim;
    if (nargs == 0 || args[0] == Py_None) {
        PyObject *t = PyTuple_New(SELF->ndim);
        for (int d = 0; t != NULL && d < SELF->ndim; d++) {
            PyObject *v = PyLong_FromLongLong(SELF->strides[d]);
            if (v == NULL) {
                Py_CLEAR(t);
                break;
            }
            PyTuple_SET_ITEM(t, d, v);
        }
        return t;
    }
    if (pygpu_parse_dim(args[0], SELF->ndim, &dim) < 0) {
        return NULL;
    }
    return PyLong_FromLongLong(SELF->ndim ? SELF->strides[dim] : 1);
}

static PyObject *
t_dim(PyObject *op, PyObject *noargs)
{
    return PyLong_FromLong(SELF->ndim);
}

static PyObject *
t_numel(PyObject *op, PyObject *noargs)
{
    return PyLong_FromLongLong(pygpu_numel(SELF->ndim, SELF->shape));
}

static PyObject *
t_element_size(PyObject *op, PyObject *noargs)
{
    return PyLong_FromLong(pygpu_dtype_table[SELF->dtype].itemsize);
}

static PyObject *
t_is_contiguous(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    return PyBool_FromLong(pygpu_is_contiguous(SELF));
}

static PyObject *
t_data_ptr(PyObject *op, PyObject *noargs)
{
    return PyLong_FromVoidPtr(SELF->data);
}

static PyObject *
t_is_pinned(PyObject *op, PyObject *noargs)
{
    return PyBool_FromLong(SELF->device.type == PYGPU_CPU &&
                           PyObject_TypeCheck(SELF->base,
                                              pygpu_state->Storage_Type));
}

/* pin_memory(): a copy in page-locked host memory from the pinned pool. */
static PyObject *
t_pin_memory(PyObject *op, PyObject *noargs)
{
    TensorObject *t = NULL;
    StorageObject *st = NULL;
    if (SELF->device.type != PYGPU_CPU) {
        PyErr_SetString(PyExc_RuntimeError,
                        "cannot pin a tensor that is not on the CPU");
        return NULL;
    }
    if (PyObject_TypeCheck(SELF->base, pygpu_state->Storage_Type)) {
        return Py_NewRef(op); /* already pinned */
    }
    size_t nbytes;
    if (pygpu_shape_nbytes(SELF->ndim, SELF->shape, SELF->dtype, &nbytes) <
        0) {
        return NULL;
    }
    st = pygpu_storage_new(SELF->device, nbytes);
    if (st == NULL) {
        return NULL;
    }
    t = pygpu_tensor_on_storage(st, SELF->ndim, SELF->shape, SELF->dtype,
                                SELF->device);
    if (t == NULL) {
        goto fail;
    }
    if (pygpu_op_copy_same_device(t, SELF) < 0) {
        Py_CLEAR(t);
    }
fail:
    Py_XDECREF(st);
    return (PyObject *)t;
}

static PyObject *
t_copy_(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    static const char *const names[] = {"src", "non_blocking"};
    PyObject *a[2];
    if (pygpu_parse_args("copy_", args, nargs, kwnames, names, 2, 2, 1,
                         a) < 0) {
        return NULL;
    }
    if (!Tensor_Check(a[0])) {
        PyErr_Format(PyExc_TypeError,
                     "copy_(): argument 'src' must be Tensor, not %.100s",
                     Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    TensorObject *src = (TensorObject *)a[0];
    if (pygpu_ag_refuse("copy_ (or t[k] = v) from a tensor that requires "
                        "grad", 1, &src) < 0 ||
        pygpu_tensor_assign(SELF, src) < 0) {
        return NULL;
    }
    return Py_NewRef(op);
}

static PyObject *
t_fill_(PyObject *op, PyObject *value)
{
    /* A contiguous tensor is filled directly; a view through a copy of a
     * filled temporary (rare). */
    double v = PyFloat_AsDouble(value);
    if ((v == -1.0 && PyErr_Occurred()) || pygpu_check_writable(SELF) < 0) {
        return NULL;
    }
    if (pygpu_is_contiguous(SELF)) {
        return pygpu_op_fill(SELF, v) < 0 ? NULL : Py_NewRef(op);
    }
    TensorObject *tmp = pygpu_tensor_empty(SELF->ndim, SELF->shape,
                                           SELF->dtype, SELF->device);
    if (tmp == NULL) {
        return NULL;
    }
    int rc = pygpu_op_fill(tmp, v);
    if (rc == 0) {
        rc = pygpu_op_copy_same_device(SELF, tmp);
    }
    Py_DECREF(tmp);
    return rc < 0 ? NULL : Py_NewRef(op);
}

static PyObject *
t_zero_(PyObject *op, PyObject *noargs)
{
    PyObject *zero = PyLong_FromLong(0);
    PyObject *r = zero ? t_fill_(op, zero) : NULL;
    Py_XDECREF(zero);
    return r;
}

static PyObject *
t_clone(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    return (PyObject *)pygpu_ag_to(SELF, SELF->device, SELF->dtype, 0);
}

static PyObject *
t_detach(PyObject *op, PyObject *noargs)
{
    return (PyObject *)pygpu_tensor_view(SELF, SELF->ndim, SELF->shape,
                                         SELF->strides, 0);
}

/* ------------------------------------------------------------- op methods */

static PyObject *
t_relu(PyObject *op, PyObject *noargs)
{
    return pygpu_ag_unary(PYGPU_RELU, SELF, NULL, 0);
}

static PyObject *
t_relu_(PyObject *op, PyObject *noargs)
{
    return pygpu_ag_unary(PYGPU_RELU, SELF, NULL, 1);
}

static PyObject *
t_neg_m(PyObject *op, PyObject *noargs)
{
    return pygpu_ag_unary(PYGPU_NEG, SELF, NULL, 0);
}

/* t.<name>() and t.<name>_() for each row of op_list.h. */
#define UNARY_METHODS(OP, name, doc)                                         \
    static PyObject *t_##name(PyObject *op, PyObject *noargs)                \
    {                                                                        \
        return pygpu_ag_unary(PYGPU_##OP, SELF, NULL, 0);                    \
    }                                                                        \
    static PyObject *t_##name##_(PyObject *op, PyObject *noargs)             \
    {                                                                        \
        return pygpu_ag_unary(PYGPU_##OP, SELF, NULL, 1);                    \
    }
PYGPU_PY_UNARY_OPS(UNARY_METHODS)

#define UNARY_METHOD_ENTRIES(OP, name, doc)                                  \
    {#name, t_##name, METH_NOARGS, #name "($self, /)\n--\n\n" doc},        \
    {#name "_", t_##name##_, METH_NOARGS,                                    \
     #name "_($self, /)\n--\n\nIn-place " #name "."},

/* add(other, *, alpha=1): alpha scales `other` as in torch. */
static PyObject *
binary_method(PyObject *op, int binop, int inplace, const char *name,
              PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"other", "alpha"};
    PyObject *a[2];
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 2, 1, 1, a) < 0) {
        return NULL;
    }
    return pygpu_binary_call(binop, name, op, a[0], a[1],
                             inplace ? SELF : NULL);
}

#define BINARY_METHOD(fname, binop, inplace)                                 \
    static PyObject *t_##fname(PyObject *op, PyObject *const *args,          \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return binary_method(op, binop, inplace, #fname, args, nargs,        \
                             kwnames);                                       \
    }

BINARY_METHOD(add, PYGPU_ADD, 0)
BINARY_METHOD(sub, PYGPU_SUB, 0)
BINARY_METHOD(mul, PYGPU_MUL, 0)
BINARY_METHOD(div, PYGPU_DIV, 0)
BINARY_METHOD(add_, PYGPU_ADD, 1)
BINARY_METHOD(sub_, PYGPU_SUB, 1)
BINARY_METHOD(mul_, PYGPU_MUL, 1)
BINARY_METHOD(div_, PYGPU_DIV, 1)

static PyObject *
t_matmul_m(PyObject *op, PyObject *other)
{
    if (!Tensor_Check(other)) {
        PyErr_Format(PyExc_TypeError,
                     "matmul(): argument 'other' must be Tensor, not %.100s",
                     Py_TYPE(other)->tp_name);
        return NULL;
    }
    return pygpu_ag_matmul(SELF, (TensorObject *)other, NULL);
}


PyMethodDef pygpu_tensor_methods[] = {
    {"size", FAST(t_size),
     "size($self, dim=None, /)\n--\n\n"
     "The shape as a pygpu.Size, or with dim the size of that dim (an int;\n"
     "negative dims count from the end)."},
    {"stride", FAST(t_stride),
     "stride($self, dim=None, /)\n--\n\n"
     "The strides in elements (a tuple), or with dim that dim's stride."},
    {"dim", t_dim, METH_NOARGS, "dim($self, /)\n--\n\n"
     "The number of dims (as .ndim)."},
    {"numel", t_numel, METH_NOARGS,
     "numel($self, /)\n--\n\nNumber of elements."},
    {"element_size", t_element_size, METH_NOARGS,
     "element_size($self, /)\n--\n\nBytes per element."},
    {"is_contiguous", FASTKW(t_is_contiguous),
     "is_contiguous($self, /, memory_format=None)\n--\n\n"
     "True when row-major contiguous.  memory_format is accepted and\n"
     "ignored (pygpu knows only row-major)."},
    {"data_ptr", t_data_ptr, METH_NOARGS,
     "data_ptr($self, /)\n--\n\nAddress of the first element."},
    {"is_pinned", t_is_pinned, METH_NOARGS,
     "is_pinned($self, /)\n--\n\nTrue for page-locked host memory."},
    {"pin_memory", t_pin_memory, METH_NOARGS,
     "pin_memory($self, /)\n--\n\nA copy in page-locked host memory."},
    {"to", FASTKW(pygpu_t_to),
     "to($self, /, *args, device=None, dtype=None, non_blocking=False,\n"
     "   copy=False, memory_format=None)\n--\n\n"
     "This tensor on another device and/or with another dtype.\n\n"
     "Overloads, as torch:\n\n"
     "    to(dtype, non_blocking=False, copy=False)\n"
     "    to(device=None, dtype=None, non_blocking=False, copy=False)\n"
     "    to(other, non_blocking=False, copy=False)\n\n"
     "device is a pygpu.device, 'cpu', 'cuda', 'cuda:N' or an int; other\n"
     "is a tensor whose device and dtype are taken.  Returns self when\n"
     "nothing changes and copy is false, else a converted copy.\n"
     "non_blocking=True copies asynchronously on the current stream from\n"
     "page-locked memory to a GPU, and from a GPU into a new page-locked\n"
     "tensor; memory_format is accepted and ignored."},
    {"cuda", FASTKW(pygpu_t_cuda),
     "cuda($self, /, device=None, non_blocking=False, memory_format=None)\n"
     "--\n\n"
     "A copy on a CUDA device (self if already there); device None is the\n"
     "current one."},
    {"cpu", pygpu_t_cpu, METH_NOARGS,
     "cpu($self, /)\n--\n\nA copy on the CPU (self if already there)."},
    {"float", pygpu_t_float, METH_NOARGS, "float($self, /)\n--\n\n"
     "self.to(pygpu.float32)."},
    {"half", pygpu_t_half, METH_NOARGS, "half($self, /)\n--\n\n"
     "self.to(pygpu.float16)."},
    {"double", pygpu_t_double, METH_NOARGS, "double($self, /)\n--\n\n"
     "self.to(pygpu.float64)."},
    {"long", pygpu_t_long, METH_NOARGS, "long($self, /)\n--\n\n"
     "self.to(pygpu.int64)."},
    {"bool", pygpu_t_to_bool, METH_NOARGS, "bool($self, /)\n--\n\n"
     "self.to(pygpu.bool)."},
    {"int", pygpu_t_to_int, METH_NOARGS, "int($self, /)\n--\n\n"
     "self.to(pygpu.int32)."},
    {"byte", pygpu_t_to_byte, METH_NOARGS, "byte($self, /)\n--\n\n"
     "self.to(pygpu.uint8)."},
    {"bfloat16", pygpu_t_to_bfloat16, METH_NOARGS,
     "bfloat16($self, /)\n--\n\nself.to(pygpu.bfloat16)."},
    {"contiguous", FASTKW(pygpu_t_contiguous),
     "contiguous($self, /, memory_format=None)\n--\n\n"
     "self if contiguous, else a contiguous copy.  memory_format is\n"
     "accepted and ignored."},
    {"clone", FASTKW(t_clone),
     "clone($self, /, memory_format=None)\n--\n\n"
     "A contiguous copy on the same device.  memory_format is accepted and\n"
     "ignored."},
    {"detach", t_detach, METH_NOARGS,
     "detach($self, /)\n--\n\n"
     "A view of the same memory without history (requires_grad False)."},
    {"detach_", pygpu_t_detach_, METH_NOARGS,
     "detach_($self, /)\n--\n\n"
     "Drop this tensor's history: it becomes a leaf not requiring grad."},
    {"requires_grad_", FASTKW(pygpu_t_requires_grad_),
     "requires_grad_($self, /, requires_grad=True)\n--\n\n"
     "Set requires_grad on this leaf in place; returns self."},
    {"retain_grad", pygpu_t_retain_grad, METH_NOARGS,
     "retain_grad($self, /)\n--\n\n"
     "Keep this non-leaf's gradient in .grad during backward()."},
    {"backward", FASTKW(pygpu_t_backward),
     "backward($self, /, gradient=None, retain_graph=None, "
     "create_graph=False, inputs=None)\n--\n\n"
     "Accumulate the gradient of this tensor into the .grad of the leaves\n"
     "it depends on.  gradient: d(something)/d(self), needed unless self\n"
     "has one element.  The graph's saved tensors are freed unless\n"
     "retain_graph=True."},
    {"numpy", FASTKW(pygpu_t_numpy),
     "numpy($self, /, *, force=False)\n--\n\n"
     "A NumPy array sharing memory (CPU tensors only)."},
    {"__array__", FASTKW(pygpu_t_array),
     "__array__($self, /, dtype=None, copy=None)\n--\n\n"
     "NumPy's array protocol (CPU tensors only)."},
    {"tolist", pygpu_t_tolist, METH_NOARGS,
     "tolist($self, /)\n--\n\nNested lists of Python numbers."},
    {"item", pygpu_t_item, METH_NOARGS,
     "item($self, /)\n--\n\nThe single element as a Python number."},
    {"copy_", FASTKW(t_copy_),
     "copy_($self, /, src, non_blocking=False)\n--\n\n"
     "Copy src (broadcast, any device or dtype) into self."},
    {"fill_", t_fill_, METH_O, "fill_($self, value, /)\n--\n\n"
     "Fill self with value, in place; returns self."},
    {"zero_", t_zero_, METH_NOARGS, "zero_($self, /)\n--\n\n"
     "Fill self with zeros, in place; returns self."},
    {"view", FAST(pygpu_t_view),
     "view($self, /, *shape)\n--\n\n"
     "A view with another shape (no copy); shape is ints or one tuple, and\n"
     "one size may be -1."},
    {"reshape", FAST(pygpu_t_reshape),
     "reshape($self, /, *shape)\n--\n\n"
     "Another shape: a view when possible, else a copy; shape is ints or\n"
     "one tuple, and one size may be -1."},
    {"transpose", FAST(pygpu_t_transpose),
     "transpose($self, dim0, dim1, /)\n--\n\n"
     "A view with dims dim0 and dim1 swapped."},
    {"t", pygpu_t_t, METH_NOARGS, "t($self, /)\n--\n\n"
     "A 2-D (or lower) tensor transposed: a view."},
    {"permute", FAST(pygpu_t_permute), "permute($self, /, *dims)\n--\n\n"
     "A view with the dims reordered (ints or one tuple)."},
    {"flatten", FASTKW(pygpu_t_flatten),
     "flatten($self, /, start_dim=0, end_dim=-1)\n--\n\n"
     "Dims start_dim to end_dim merged into one (a view when possible)."},
    {"unsqueeze", pygpu_t_unsqueeze, METH_O,
     "unsqueeze($self, dim, /)\n--\n\n"
     "A view with a dim of size 1 inserted at dim."},
    {"squeeze", FAST(pygpu_t_squeeze), "squeeze($self, dim=None, /)\n--\n\n"
     "A view without dims of size 1 (only dim, when given)."},
    {"expand", FAST(pygpu_t_expand), "expand($self, /, *sizes)\n--\n\n"
     "A broadcast view to sizes (ints or one tuple; -1 keeps a size)."},
    {"relu", t_relu, METH_NOARGS, "relu($self, /)\n--\n\n"
     "max(self, 0) as a new tensor; NaN stays NaN."},
    {"relu_", t_relu_, METH_NOARGS, "relu_($self, /)\n--\n\n"
     "In-place relu; returns self."},
    {"neg", t_neg_m, METH_NOARGS, "neg($self, /)\n--\n\n"
     "-self as a new tensor."},
    PYGPU_PY_UNARY_OPS(UNARY_METHOD_ENTRIES)
    {"add", FASTKW(t_add), "add($self, /, other, *, alpha=1)\n--\n\n"
     "self + alpha * other, broadcast."},
    {"sub", FASTKW(t_sub), "sub($self, /, other, *, alpha=1)\n--\n\n"
     "self - alpha * other, broadcast."},
    {"mul", FASTKW(t_mul), "mul($self, /, other)\n--\n\n"
     "self * other, broadcast."},
    {"div", FASTKW(t_div), "div($self, /, other)\n--\n\n"
     "self / other, broadcast (true division; int64 gives float32)."},
    {"add_", FASTKW(t_add_), "add_($self, /, other, *, alpha=1)\n--\n\n"
     "In-place add; returns self."},
    {"sub_", FASTKW(t_sub_), "sub_($self, /, other, *, alpha=1)\n--\n\n"
     "In-place sub; returns self."},
    {"mul_", FASTKW(t_mul_), "mul_($self, /, other)\n--\n\n"
     "In-place mul; returns self."},
    {"div_", FASTKW(t_div_), "div_($self, /, other)\n--\n\n"
     "In-place div; returns self."},
    {"matmul", t_matmul_m, METH_O, "matmul($self, other, /)\n--\n\n"
     "Matrix product, as pygpu.matmul(self, other)."},
    {"sum", FASTKW(pygpu_t_sum),
     "sum($self, /, dim=None, keepdim=False, *, dtype=None)\n--\n\n"
     "Sum of all elements, or over dim (an int or a tuple); with dtype the\n"
     "tensor is converted first."},
    {"mean", FASTKW(pygpu_t_mean),
     "mean($self, /, dim=None, keepdim=False, *, dtype=None)\n--\n\n"
     "Mean of all elements, or over dim (floating dtypes); with dtype the\n"
     "tensor is converted first."},
    {"max", FASTKW(pygpu_t_max),
     "max($self, /, dim=None, keepdim=False)\n--\n\n"
     "The maximum of all elements; over dim, a (values, indices) pair."},
    PYGPU_JOIN_METHOD_ROWS
    {"__dlpack__", FASTKW(pygpu_t_dlpack),
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None,\n"
     "           copy=None)\n--\n\n"
     "A DLPack capsule sharing this tensor's memory (a copy with copy=True\n"
     "or another dl_device): \"dltensor_versioned\" when max_version >=\n"
     "(1, 0), else \"dltensor\".  stream is the consumer's CUDA stream (None\n"
     "or 1 legacy default, 2 per-thread default, -1 no synchronization);\n"
     "it is made to wait for the work queued on pygpu's current stream."},
    {"__dlpack_device__", pygpu_t_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n"
     "(device_type, device_id) as DLPack numbers them: (1, 0) for the CPU,\n"
     "(2, n) for cuda:n."},
    {"record_stream", pygpu_t_record_stream, METH_O,
     "record_stream($self, stream, /)\n--\n\n"
     "Mark this CUDA tensor's memory as used by `stream`: when it is\n"
     "freed, the caching allocator reuses it only after the work queued\n"
     "on `stream` by then is done."},
    {NULL},
};
