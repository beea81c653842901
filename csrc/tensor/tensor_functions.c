/* tensor_functions.c - the module-level elementwise functions (pygpu.add,
 * sub, mul, div, relu, relu_, neg, the unary functions of op_list.h),
 * through autograd's pygpu_ag_binary / pygpu_ag_unary to
 * ops/ops_elementwise.c. */
#include "tensor/tensor.h"
#include "ops/op_list.h"
#include "ops/xent.h"

PyObject *
pygpu_binary_call(int op, const char *name, PyObject *input,
                  PyObject *other, PyObject *alpha, TensorObject *out)
{
    PyObject *scaled = NULL, *r;
    if (alpha != NULL) {
        if (op != PYGPU_ADD && op != PYGPU_SUB) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument 'alpha'",
                         name);
            return NULL;
        }
        /* pygpu_op_binary sees the scaled copy; other itself is read. */
        if (out != NULL && Tensor_Check(other) &&
            pygpu_check_write(out, NULL, (TensorObject *)other) < 0) {
            return NULL;
        }
        other = scaled = PyNumber_Multiply(other, alpha);
        if (scaled == NULL) {
            return NULL;
        }
    }
    r = pygpu_ag_binary(op, input, other, out);
    if (r == Py_NotImplemented) {
        Py_DECREF(r);
        PyErr_Format(PyExc_TypeError,
                     "%s(): expected Tensor or Number arguments, got %.100s "
                     "and %.100s", name, Py_TYPE(input)->tp_name,
                     Py_TYPE(other)->tp_name);
        r = NULL;
    }
    Py_XDECREF(scaled);
    return r;
}

static PyObject *
binary_fn(int op, const char *name, PyObject *const *args, Py_ssize_t nargs,
          PyObject *kwnames)
{
    static const char *const names[] = {"input", "other", "alpha", "out"};
    PyObject *a[4];
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 4, 2, 2, a) < 0) {
        return NULL;
    }
    int has_out = a[3] != NULL && a[3] != Py_None;
    if (has_out && pygpu_tensor_arg(a[3], name, "out") < 0) {
        return NULL;
    }
    return pygpu_binary_call(op, name, a[0], a[1], a[2],
                             has_out ? (TensorObject *)a[3] : NULL);
}

#define BINARY_FN(name, op)                                                  \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return binary_fn(op, #name, args, nargs, kwnames);                   \
    }

BINARY_FN(add, PYGPU_ADD)
BINARY_FN(sub, PYGPU_SUB)
BINARY_FN(mul, PYGPU_MUL)
BINARY_FN(div, PYGPU_DIV)

static int
check_tensor(PyObject *x, const char *fname)
{
    return pygpu_tensor_arg(x, fname, "input");
}

static PyObject *
relu_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    static const char *const names[] = {"input", "inplace"};
    PyObject *a[2];
    int inplace;
    if (pygpu_parse_args("relu", args, nargs, kwnames, names, 2, 2, 1, a) < 0 ||
        check_tensor(a[0], "relu") < 0 ||
        pygpu_parse_bool(a[1], 0, &inplace) < 0) {
        return NULL;
    }
    return pygpu_ag_unary(PYGPU_RELU, (TensorObject *)a[0], NULL, inplace);
}

static PyObject *
relu__fn(PyObject *self, PyObject *arg)
{
    if (check_tensor(arg, "relu_") < 0) {
        return NULL;
    }
    return pygpu_ag_unary(PYGPU_RELU, (TensorObject *)arg, NULL, 1);
}

/* pygpu.<name>(input, *, out=None) of a unary op. */
static PyObject *
unary_fn(int op, const char *name, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    static const char *const names[] = {"input", "out"};
    PyObject *a[2];
    if (nargs == 1 && kwnames == NULL) { /* the common call, parsed fast */
        return check_tensor(args[0], name) < 0
                   ? NULL
                   : pygpu_ag_unary(op, (TensorObject *)args[0], NULL, 0);
    }
    if (pygpu_parse_args(name, args, nargs, kwnames, names, 2, 1, 1, a) < 0 ||
        check_tensor(a[0], name) < 0) {
        return NULL;
    }
    int has_out = a[1] != NULL && a[1] != Py_None;
    if (has_out && pygpu_tensor_arg(a[1], name, "out") < 0) {
        return NULL;
    }
    return pygpu_ag_unary(op, (TensorObject *)a[0],
                              has_out ? (TensorObject *)a[1] : NULL, 0);
}

#define UNARY_FN(OP, name, doc)                                              \
    static PyObject *name##_fn(PyObject *self, PyObject *const *args,        \
                               Py_ssize_t nargs, PyObject *kwnames)          \
    {                                                                        \
        return unary_fn(PYGPU_##OP, #name, args, nargs, kwnames);            \
    }
UNARY_FN(NEG, neg, "")
UNARY_FN(GELU_TANH, _gelu_tanh, "")
/* pygpu.<name>(input, *, out=None) for each row of op_list.h. */
PYGPU_PY_UNARY_OPS(UNARY_FN)

#define UNARY_FN_ENTRY(OP, name, doc)                                        \
    {#name, FASTKW(name##_fn),                                               \
     #name "($module, input, *, out=None)\n--\n\n" doc},

/* ------------------------------------------------------- cross-entropy */

/* _cross_entropy(input, target, weight=None, ignore_index=-100,
 *                reduction='mean', label_smoothing=0.0) */
static PyObject *
cross_entropy_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    static const char *const names[] = {"input", "target", "weight",
                                        "ignore_index", "reduction",
                                        "label_smoothing"};
    static const char *const reductions[] = {"none", "mean", "sum"};
    PyObject *a[6];
    long long ignore = -100;
    double smoothing = 0.0;
    int reduction = PYGPU_XENT_MEAN;
    if (pygpu_parse_args("cross_entropy", args, nargs, kwnames, names, 6, 6,
                         2, a) < 0 ||
        pygpu_tensor_arg(a[0], "cross_entropy", "input") < 0 ||
        pygpu_tensor_arg(a[1], "cross_entropy", "target") < 0 ||
        (a[2] != NULL && a[2] != Py_None &&
         pygpu_tensor_arg(a[2], "cross_entropy", "weight") < 0)) {
        return NULL;
    }
    if (a[3] != NULL) {
        if (!PyLong_Check(a[3])) {
            PyErr_Format(PyExc_TypeError, "cross_entropy(): argument "
                         "'ignore_index' must be int, not %s",
                         Py_TYPE(a[3])->tp_name);
            return NULL;
        }
        ignore = PyLong_AsLongLong(a[3]);
        if (ignore == -1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    if (a[4] != NULL) {
        reduction = -1;
        for (int r = 0; r < 3 && PyUnicode_Check(a[4]); r++) {
            if (PyUnicode_CompareWithASCIIString(a[4], reductions[r]) == 0) {
                reduction = r;
            }
        }
        if (reduction < 0) {
            PyErr_Format(PyExc_ValueError, "%S is not a valid value for "
                         "reduction", a[4]);
            return NULL;
        }
    }
    if (a[5] != NULL) {
        smoothing = PyFloat_AsDouble(a[5]);
        if (smoothing == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    TensorObject *x = (TensorObject *)a[0], *t = (TensorObject *)a[1];
    TensorObject *w = a[2] == NULL || a[2] == Py_None ? NULL
                                                      : (TensorObject *)a[2];
    if (pygpu_xent_check_args(x, t, w, smoothing, a[5]) < 0) {
        return NULL;
    }
    return pygpu_ag_cross_entropy(x, t, w, (int64_t)ignore, reduction,
                                  smoothing);
}

PyMethodDef pygpu_ops_functions[] = {
    {"add", FASTKW(add_fn),
     "add($module, input, other, *, alpha=1, out=None)\n--\n\n"
     "input + alpha * other, broadcast; into out when given."},
    {"sub", FASTKW(sub_fn),
     "sub($module, input, other, *, alpha=1, out=None)\n--\n\n"
     "input - alpha * other, broadcast; into out when given."},
    {"mul", FASTKW(mul_fn), 
     "mul($module, input, other, *, out=None)\n--\n\n"
     "input * other, broadcast; into out when given."},
    {"div", FASTKW(div_fn),
     "div($module, input, other, *, out=None)\n--\n\n"
     "input / other, broadcast (true division: int64 gives float32); into\n"
     "out when given."},
    {"relu", FASTKW(relu_fn),
     "relu($module, input, inplace=False)\n--\n\n"
     "max(input, 0); NaN stays NaN."},
    {"relu_", relu__fn, METH_O, 
     "relu_($module, input, /)\n--\n\n"
     "In-place relu; returns input."},
    UNARY_FN_ENTRY(NEG, neg, "-input as a new tensor.")
    UNARY_FN_ENTRY(GELU_TANH, _gelu_tanh,
                   "gelu's tanh approximation, elementwise:\n"
                   "input/2 * (1 + tanh(sqrt(2/pi) * (input + 0.044715 "
                   "input^3))).")
    PYGPU_PY_UNARY_OPS(UNARY_FN_ENTRY)
    {NULL},
};

PyMethodDef pygpu_xent_functions[] = {
    {"_cross_entropy", FASTKW(cross_entropy_fn),
     "_cross_entropy($module, input, target, weight=None, ignore_index=-100,"
     " reduction='mean', label_smoothing=0.0)\n--\n\n"
     "Cross-entropy of logits (classes in dim 1, or dim 0 of a 1-d input)\n"
     "and class indices as one op: log-softmax and the pick fused, forward\n"
     "and backward (nn.functional.cross_entropy with integer targets)."},
    {NULL},
};
