/* ops_reduce.c - sum, mean and max over all elements or over dims, with
 * keepdim; max over a dim also gives the indices, as torch.max does. */
#include "ops/ops.h"

#include <string.h>

static const char *const redop_names[] = {"sum", "mean", "max"};

/* The dtype a reduction runs in: the table's reductions cover float32,
 * float16, float64 and int64. */
static int
reduce_dtype(int dtype)
{
    if (dtype == PYGPU_BFLOAT16) {
        return PYGPU_FLOAT32;
    }
    return pygpu_dtype_category(dtype) == PYGPU_CAT_FLOAT ? dtype
                                                          : PYGPU_INT64;
}

/* Reduce contiguous `in` seen as [outer, n, inner] into out (and
 * indices). */
static int
run_reduce(int op, TensorObject *out, TensorObject *indices, TensorObject *in,
           int64_t outer, int64_t n, int64_t inner)
{
    pygpu_kargs k = {.op = op, .out = out->data, .in = {in->data},
                     .indices = indices ? (int64_t *)indices->data : NULL,
                     .outer = outer, .n = n, .inner = inner,
                     .numel = outer * n * inner};
    return pygpu_dispatch(PYGPU_K_REDUCE, in->device, in->dtype, &k,
                          redop_names[op]);
}

/* op over one dim (dim < 0: all elements, as a 0-d result). */
static PyObject *
reduce_dim(int op, TensorObject *t, int dim, int keepdim, int want_indices)
{
    TensorObject *in = NULL, *out = NULL, *indices = NULL;
    PyObject *result = NULL;
    int64_t shape[PYGPU_MAX_DIMS];
    int ndim = 0;
    int64_t outer = 1, n = 1, inner = 1;
    if (dim < 0) {
        n = pygpu_numel(t->ndim, t->shape);
        if (keepdim) {
            ndim = t->ndim;
            for (int d = 0; d < ndim; d++) {
                shape[d] = 1;
            }
        }
    }
    else if (t->ndim == 0) {
        ndim = 0; /* dim 0 / -1 of a 0-d tensor: the element itself */
    }
    else {
        for (int d = 0; d < t->ndim; d++) {
            if (d < dim) {
                outer *= t->shape[d];
            }
            else if (d > dim) {
                inner *= t->shape[d];
            }
            if (d != dim) {
                shape[ndim++] = t->shape[d];
            }
            else if (keepdim) {
                shape[ndim++] = 1;
            }
        }
        n = t->shape[dim];
    }
    if (op == PYGPU_MAX && n == 0) {
        if (dim < 0) {
            PyErr_SetString(PyExc_RuntimeError,
                            "max(): Expected reduction dim to be specified "
                            "for input.numel() == 0. Specify the reduction "
                            "dim with the 'dim' argument.");
        }
        else {
            PyErr_Format(PyExc_IndexError,
                         "max(): Expected reduction dim %d to have non-zero "
                         "size.", dim);
        }
        return NULL;
    }
    /* bool, uint8 and int32 reduce in int64 (sum gives int64, as in
     * torch), bfloat16 in float32; max converts back. */
    int wide = reduce_dtype(t->dtype);
    int final = op == PYGPU_SUM ? (wide == PYGPU_INT64 ? wide : t->dtype)
                                : t->dtype;
    in = wide == t->dtype ? pygpu_tensor_contiguous(t)
                          : pygpu_tensor_to(t, t->device, wide);
    if (in == NULL) {
        goto fail;
    }
    out = pygpu_tensor_empty(ndim, shape, wide, t->device);
    if (out == NULL) {
        goto fail;
    }
    if (want_indices) {
        indices = pygpu_tensor_empty(ndim, shape, PYGPU_INT64, t->device);
        if (indices == NULL) {
            goto fail;
        }
    }
    if (outer * inner > 0 &&
        run_reduce(op, out, indices, in, outer, n, inner) < 0) {
        goto fail;
    }
    if (final != wide) {
        Py_SETREF(out, pygpu_tensor_to(out, out->device, final));
        if (out == NULL) {
            goto fail;
        }
    }
    if (want_indices) {
        result = PyStructSequence_New(pygpu_state->MaxResult_Type);
        if (result == NULL) {
            goto fail;
        }
        PyStructSequence_SET_ITEM(result, 0, (PyObject *)out);
        PyStructSequence_SET_ITEM(result, 1, (PyObject *)indices);
        out = indices = NULL;
    }
    else {
        result = (PyObject *)out;
        out = NULL;
    }
fail:
    Py_XDECREF(in);
    Py_XDECREF(out);
    Py_XDECREF(indices);
    return result;
}

PyObject *
pygpu_op_reduce(int op, TensorObject *t, PyObject *dimobj, int keepdim)
{
    if (op == PYGPU_MEAN && !pygpu_dtype_table[t->dtype].is_floating_point) {
        PyErr_Format(PyExc_RuntimeError,
                     "mean(): could not infer output dtype. Input dtype must "
                     "be either a floating point or complex dtype. Got: %s",
                     pygpu_dtype_table[t->dtype].scalar_name);
        return NULL;
    }
    if (dimobj == NULL || dimobj == Py_None) {
        return reduce_dim(op, t, -1, keepdim, 0);
    }
    if (PyIndex_Check(dimobj) && !PyFloat_Check(dimobj)) {
        int dim; /* any integer (a bool is refused there) */
        if (pygpu_parse_dim(dimobj, t->ndim, &dim) < 0) {
            return NULL;
        }
        return reduce_dim(op, t, dim, keepdim, op == PYGPU_MAX);
    }
    if ((PyTuple_Check(dimobj) || PyList_Check(dimobj)) && op != PYGPU_MAX) {
        /* Several dims: reduce one at a time from the last, keeping dims
         * so the remaining indices stay valid, then drop them. */
        int mark[PYGPU_MAX_DIMS] = {0}, nd = 0;
        Py_ssize_t n = PySequence_Size(dimobj);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_GetItem(dimobj, i);
            int d, rc = item ? pygpu_parse_dim(item, t->ndim, &d) : -1;
            Py_XDECREF(item);
            if (rc < 0) {
                return NULL;
            }
            if (t->ndim > 0 && mark[d]++) {
                PyErr_Format(PyExc_RuntimeError,
                             "dim %d appears multiple times in the list of "
                             "dims", d);
                return NULL;
            }
            nd++;
        }
        if (nd == 0) {
            return reduce_dim(op, t, -1, keepdim, 0);
        }
        PyObject *cur = Py_NewRef((PyObject *)t);
        for (int d = t->ndim - 1; d >= 0 && cur != NULL; d--) {
            if (mark[d]) {
                Py_SETREF(cur, reduce_dim(op, (TensorObject *)cur, d, 1, 0));
            }
        }
        if (cur != NULL && !keepdim && t->ndim > 0) {
            TensorObject *c = (TensorObject *)cur;
            int64_t shape[PYGPU_MAX_DIMS], strides[PYGPU_MAX_DIMS];
            int k = 0;
            for (int d = 0; d < c->ndim; d++) {
                if (!mark[d]) {
                    shape[k] = c->shape[d];
                    strides[k++] = c->strides[d];
                }
            }
            Py_SETREF(cur, (PyObject *)pygpu_tensor_view(c, k, shape,
                                                         strides, 0));
        }
        return cur;
    }
    PyErr_Format(PyExc_TypeError, "%s(): dim must be an int%s, not %.100s",
                 redop_names[op], op == PYGPU_MAX ? "" : " or a tuple of ints",
                 Py_TYPE(dimobj)->tp_name);
    return NULL;
}

/* method form: t.sum(dim=None, keepdim=False) */
static PyObject *
reduce_method(int op, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    static const char *const names[] = {"dim", "keepdim", "dtype"};
    PyObject *a[3];
    int keepdim;
    TensorObject *t = (TensorObject *)self;
    if (pygpu_parse_args(redop_names[op], args, nargs, kwnames, names, 3, 2, 0,
                         a) < 0 ||
        pygpu_parse_bool(a[1], 0, &keepdim) < 0) {
        return NULL;
    }
    if (a[2] != NULL && a[2] != Py_None) {
        int dtype;
        if (pygpu_parse_dtype_opt(a[2], t->dtype, &dtype) < 0) {
            return NULL;
        }
        TensorObject *c = pygpu_tensor_to(t, t->device, dtype);
        if (c == NULL) {
            return NULL;
        }
        PyObject *r = pygpu_op_reduce(op, c, a[0], keepdim);
        Py_DECREF(c);
        return r;
    }
    return pygpu_op_reduce(op, t, a[0], keepdim);
}

PyObject *
pygpu_t_sum(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    return reduce_method(PYGPU_SUM, self, args, nargs, kwnames);
}

PyObject *
pygpu_t_mean(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    return reduce_method(PYGPU_MEAN, self, args, nargs, kwnames);
}

PyObject *
pygpu_t_max(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    return reduce_method(PYGPU_MAX, self, args, nargs, kwnames);
}

/* function form: pygpu.sum(input, dim=None, keepdim=False) */
static PyObject *
reduce_fn(int op, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs < 1 || !Tensor_Check(args[0])) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument 'input' must be Tensor, not %.100s",
                     redop_names[op],
                     nargs < 1 ? "nothing" : Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    return reduce_method(op, args[0], args + 1, nargs - 1, kwnames);
}

static PyObject *
sum_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return reduce_fn(PYGPU_SUM, args, nargs, kw);
}

static PyObject *
mean_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return reduce_fn(PYGPU_MEAN, args, nargs, kw);
}

static PyObject *
max_fn(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)
{
    return reduce_fn(PYGPU_MAX, args, nargs, kw);
}


PyMethodDef pygpu_reduce_functions[] = {
    {"sum", FASTKW(sum_fn),
     "sum($module, input, /, dim=None, keepdim=False, *, dtype=None)\n--\n\n"
     "Sum of all elements, or over dim (an int or a tuple); with dtype the\n"
     "input is converted first."},
    {"mean", FASTKW(mean_fn),
     "mean($module, input, /, dim=None, keepdim=False, *, dtype=None)\n--\n\n"
     "Mean of all elements, or over dim (floating dtypes); with dtype the\n"
     "input is converted first."},
    {"max", FASTKW(max_fn),
     "max($module, input, /, dim=None, keepdim=False)\n--\n\n"
     "The maximum of all elements, or a (values, indices) pair over dim."},
    {NULL},
};

static PyStructSequence_Field max_fields[] = {
    {"values", "the maxima"},
    {"indices", "where they are (int64)"},
    {NULL, NULL},
};

static PyStructSequence_Desc max_desc = {
    "pygpu.return_types.max",
    "max(input, dim) result: (values, indices).",
    max_fields,
    2,
};

int
pygpu_reduce_register(PyObject *m)
{
    pygpu_state->MaxResult_Type = PyStructSequence_NewType(&max_desc);
    return pygpu_state->MaxResult_Type ? 0 : -1;
}
