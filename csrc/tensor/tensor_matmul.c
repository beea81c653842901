/* tensor_matmul.c - the products as Python sees them: pygpu.matmul, mm
 * and bmm (with out=), the TF32 switch, and the fused linear functions
 * nn.Linear calls; recorded by autograd (pygpu_ag_matmul, pygpu_ag_linear)
 * and computed by ops/ops_matmul.c and ops/ops_linear.c. */
#include "tensor/tensor.h"

static int
out_arg(const char *fname, PyObject *x, TensorObject **out)
{
    *out = NULL;
    if (x == NULL || x == Py_None) {
        return 0;
    }
    if (pygpu_tensor_arg(x, fname, "out") < 0) {
        return -1;
    }
    *out = (TensorObject *)x;
    return 0;
}

static PyObject *
matmul_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
          PyObject *kwnames)
{
    static const char *const names[] = {"input", "other", "out"};
    PyObject *a[3];
    TensorObject *out;
    if (pygpu_parse_args("matmul", args, nargs, kwnames, names, 3, 2, 2,
                         a) < 0 ||
        pygpu_tensor_arg(a[0], "matmul", "input") < 0 ||
        pygpu_tensor_arg(a[1], "matmul", "other") < 0 ||
        out_arg("matmul", a[2], &out) < 0) {
        return NULL;
    }
    return pygpu_ag_matmul((TensorObject *)a[0], (TensorObject *)a[1], out);
}

/* mm / bmm: matmul restricted to 2-D / 3-D operands, as torch. */
static PyObject *
fixed_rank_matmul(const char *fname, int rank, PyObject *const *args,
                  Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"input", "mat2", "out"};
    PyObject *a[3];
    TensorObject *out;
    if (pygpu_parse_args(fname, args, nargs, kwnames, names, 3, 2, 2, a) < 0 ||
        pygpu_tensor_arg(a[0], fname, "input") < 0 ||
        pygpu_tensor_arg(a[1], fname, "mat2") < 0 ||
        out_arg(fname, a[2], &out) < 0) {
        return NULL;
    }
    TensorObject *x = (TensorObject *)a[0], *y = (TensorObject *)a[1];
    if (x->ndim != rank || y->ndim != rank) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: expected %dD tensors, got %dD and %dD", fname, rank,
                     x->ndim, y->ndim);
        return NULL;
    }
    if (rank == 3 && x->shape[0] != y->shape[0]) {
        PyErr_Format(PyExc_RuntimeError,
                     "batch1 and batch2 must have same number of batches, "
                     "got %lld and %lld", (long long)x->shape[0],
                     (long long)y->shape[0]);
        return NULL;
    }
    return pygpu_ag_matmul((TensorObject *)a[0], (TensorObject *)a[1], out);
}

static PyObject *
mm_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return fixed_rank_matmul("mm", 2, args, nargs, kw);
}

static PyObject *
bmm_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return fixed_rank_matmul("bmm", 3, args, nargs, kw);
}

static PyObject *
set_allow_tf32(PyObject *m, PyObject *arg)
{
    int v = PyObject_IsTrue(arg);
    if (v < 0) {
        return NULL;
    }
    pygpu_set_allow_tf32(v);
    Py_RETURN_NONE;
}

static PyObject *
get_allow_tf32(PyObject *m, PyObject *noargs)
{
    return PyBool_FromLong(pygpu_get_allow_tf32());
}


PyMethodDef pygpu_matmul_functions[] = {
    {"matmul", FASTKW(matmul_fn),
     "matmul($module, input, other, *, out=None)\n--\n\n"
     "Matrix product with torch's rules for 1-D, 2-D and batched\n"
     "(broadcast) operands."},
    {"mm", FASTKW(mm_fn), 
     "mm($module, input, mat2, *, out=None)\n--\n\n"
     "2-D matrix product."},
    {"bmm", FASTKW(bmm_fn),
     "bmm($module, input, mat2, *, out=None)\n--\n\n"
     "Batched 3-D matrix product."},
    {"_set_allow_tf32", set_allow_tf32, METH_O,
     "_set_allow_tf32($module, flag, /)\n--\n\n"
     "Allow TF32 for float32 products."},
    {"_get_allow_tf32", get_allow_tf32, METH_NOARGS,
     "_get_allow_tf32($module, /)\n--\n\n"
     "Whether TF32 is allowed for float32 products."},
    {NULL},
};

static PyObject *
linear_common(const char *fname, int relu, PyObject *const *args,
              Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"input", "weight", "bias"};
    PyObject *a[3];
    if (pygpu_parse_args(fname, args, nargs, kwnames, names, 3, 3, 2, a) < 0 ||
        pygpu_tensor_arg(a[0], fname, "input") < 0 ||
        pygpu_tensor_arg(a[1], fname, "weight") < 0) {
        return NULL;
    }
    if (a[2] == Py_None) {
        a[2] = NULL;
    }
    if (a[2] != NULL && pygpu_tensor_arg(a[2], fname, "bias") < 0) {
        return NULL;
    }
    return pygpu_ag_linear((TensorObject *)a[0], (TensorObject *)a[1],
                           (TensorObject *)a[2], relu);
}

static PyObject *
linear_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return linear_common("linear", 0, args, nargs, kw);
}

static PyObject *
linear_relu_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kw)
{
    return linear_common("linear_relu", 1, args, nargs, kw);
}

PyMethodDef pygpu_linear_functions[] = {
    {"_linear", FASTKW(linear_fn),
     "_linear($module, input, weight, bias=None)\n--\n\n"
     "input @ weight.T + bias (one cuBLASLt call with the bias epilogue)."},
    {"_linear_relu", FASTKW(linear_relu_fn),
     "_linear_relu($module, input, weight, bias=None)\n--\n\n"
     "relu(input @ weight.T + bias) in one call (on CUDA cuBLASLt's bias\n"
     "epilogue, then the relu kernel, which keeps NaN)."},
    {NULL},
};
