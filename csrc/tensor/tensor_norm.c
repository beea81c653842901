/* tensor_norm.c - the Python entries of layer norm and RMS norm (_norm)
 * and of batch norm's training step (_batch_norm_train) as one op each
 * (pygpu.nn.functional's layer_norm, rms_norm, group_norm and batch_norm
 * call them after torch's checks): they check what the op relies on and
 * call autograd's wrappers (autograd_norm.c), which call ops/ops_norm.c. */
#include "tensor/tensor.h"
#include "autograd/autograd.h"
#include "ops/norm.h"

/* p (weight or bias) fits x: n elements, x's dtype or, for a float16 /
 * bfloat16 x, float32. */
static int
check_param(TensorObject *x, TensorObject *p, int64_t n, const char *what)
{
    int half = x->dtype == PYGPU_FLOAT16 || x->dtype == PYGPU_BFLOAT16;
    if (pygpu_numel(p->ndim, p->shape) != n) {
        PyErr_Format(PyExc_RuntimeError,
                     "_norm: %s should contain %lld elements not %lld", what,
                     (long long)n,
                     (long long)pygpu_numel(p->ndim, p->shape));
        return -1;
    }
    if (p->dtype != x->dtype && !(half && p->dtype == PYGPU_FLOAT32)) {
        PyErr_Format(PyExc_RuntimeError,
                     "_norm: %s of dtype %s for an input of dtype %s", what,
                     pygpu_dtype_table[p->dtype].name,
                     pygpu_dtype_table[x->dtype].name);
        return -1;
    }
    return pygpu_check_same_device(x, p);
}

/* _norm(input, weight, bias, n, eps, rms) */
static PyObject *
norm_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    static const char *const names[] = {"input", "weight", "bias", "n", "eps",
                                        "rms"};
    PyObject *a[6];
    TensorObject *p[2] = {NULL, NULL};
    if (pygpu_parse_args("_norm", args, nargs, kwnames, names, 6, 6, 6, a) <
            0 ||
        pygpu_tensor_arg(a[0], "_norm", "input") < 0) {
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        if (a[1 + i] != Py_None) {
            if (pygpu_tensor_arg(a[1 + i], "_norm", names[1 + i]) < 0) {
                return NULL;
            }
            p[i] = (TensorObject *)a[1 + i];
        }
    }
    TensorObject *x = (TensorObject *)a[0];
    long long n = PyLong_AsLongLong(a[3]);
    double eps = PyFloat_AsDouble(a[4]);
    int rms = PyObject_IsTrue(a[5]);
    if ((n == -1 || eps == -1.0 || rms < 0) && PyErr_Occurred()) {
        return NULL;
    }
    if (!pygpu_dtype_table[x->dtype].is_floating_point) {
        PyErr_Format(PyExc_NotImplementedError,
                     "\"%s\" not implemented for '%s'",
                     rms ? "rms_norm" : "LayerNormKernelImpl",
                     pygpu_dtype_table[x->dtype].scalar_name);
        return NULL;
    }
    int64_t numel = pygpu_numel(x->ndim, x->shape);
    if (n < 1 || numel % n != 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "_norm: rows of %lld elements in an input of %lld", n,
                     (long long)numel);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        if (p[i] != NULL &&
            check_param(x, p[i], n, i == 0 ? "weight" : "bias") < 0) {
            return NULL;
        }
    }
    return pygpu_ag_row_norm(x, p[0], p[1], n, eps, rms);
}

/* _batch_norm_train(input, weight, bias, eps) -> (out, mean, var) */
static PyObject *
batch_norm_train_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    static const char *const names[] = {"input", "weight", "bias", "eps"};
    PyObject *a[4];
    TensorObject *p[2] = {NULL, NULL}, *mean = NULL, *var = NULL;
    if (pygpu_parse_args("_batch_norm_train", args, nargs, kwnames, names, 4,
                         4, 4, a) < 0 ||
        pygpu_tensor_arg(a[0], "_batch_norm_train", "input") < 0) {
        return NULL;
    }
    TensorObject *x = (TensorObject *)a[0];
    double eps = PyFloat_AsDouble(a[3]);
    if (eps == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!pygpu_dtype_table[x->dtype].is_floating_point) {
        PyErr_Format(PyExc_NotImplementedError,
                     "\"batch_norm\" not implemented for '%s'",
                     pygpu_dtype_table[x->dtype].scalar_name);
        return NULL;
    }
    if (x->ndim < 2 || pygpu_numel(x->ndim, x->shape) == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_batch_norm_train: an input of at least 2 dims "
                        "and one element");
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        if (a[1 + i] == Py_None) {
            continue;
        }
        if (pygpu_tensor_arg(a[1 + i], "_batch_norm_train", names[1 + i]) <
            0) {
            return NULL;
        }
        p[i] = (TensorObject *)a[1 + i];
        if (check_param(x, p[i], x->shape[1], names[1 + i]) < 0) {
            return NULL;
        }
    }
    PyObject *y = pygpu_ag_channel_norm(x, p[0], p[1], eps, &mean, &var);
    if (y == NULL) {
        return NULL;
    }
    return Py_BuildValue("(NNN)", y, (PyObject *)mean, (PyObject *)var);
}

PyMethodDef pygpu_row_norm_functions[] = {
    {"_norm", (PyCFunction)(void (*)(void))norm_fn,
     METH_FASTCALL | METH_KEYWORDS,
     "_norm($module, input, weight, bias, n, eps, rms)\n--\n\n"
     "Layer norm (rms=False) or RMS norm over rows of the last n elements\n"
     "of input, as one op, forward and backward (nn.functional.layer_norm\n"
     "and rms_norm after their checks); weight and bias may be None."},
    {"_batch_norm_train", (PyCFunction)(void (*)(void))batch_norm_train_fn,
     METH_FASTCALL | METH_KEYWORDS,
     "_batch_norm_train($module, input, weight, bias, eps)\n--\n\n"
     "Batch norm's training step as one op, forward and backward: the\n"
     "result (input normalised per channel, dim 1, with the batch's\n"
     "statistics) and the channels' mean and biased variance."},
    {NULL},
};
