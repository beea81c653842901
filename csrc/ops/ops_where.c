/* ops_where.c - where and masked_fill(_), over the masked-copy kind of
 * the dispatch table: the result is filled with one operand (converted,
 * broadcast), then out[i] = cond[i] ? a[i] : out[i] with the other. */
#include "autograd/autograd.h"
#include "ops/logical_methods.h"

int
pygpu_op_masked_copy(TensorObject *out, TensorObject *cond, TensorObject *a,
                     const char *what)
{
    pygpu_geom g;
    int64_t numel = pygpu_numel(out->ndim, out->shape);
    if (numel == 0) {
        return 0;
    }
    pygpu_make_geom(&g, out->ndim, out->shape, out, cond, a);
    pygpu_kargs k;
    k.out = out->data;
    k.in[0] = cond->data;
    k.in[1] = a->data;
    k.in_dtypes[0] = PYGPU_BOOL;
    k.in_dtypes[1] = a->dtype;
    k.g = &g;
    k.numel = numel;
    return pygpu_dispatch(PYGPU_K_MASKED_COPY, out->device, out->dtype, &k,
                          what);
}

/* ------------------------------------------------------------- where */

/* An operand of where / masked_fill: a tensor, or a Python number as a
 * 0-d tensor of dtype on dev (new reference; NULL with TypeError naming
 * arg otherwise). */
static TensorObject *
operand_tensor(PyObject *x, int dtype, pygpu_device dev, const char *fname,
               const char *arg)
{
    pygpu_scalar_value v;
    int cat, r;
    if (Tensor_Check(x)) {
        return (TensorObject *)Py_NewRef(x);
    }
    r = pygpu_scalar_operand(x, &v, &cat);
    if (r == 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%s' must be Tensor or Number, not "
                     "%.100s", fname, arg, Py_TYPE(x)->tp_name);
    }
    if (r <= 0) {
        return NULL;
    }
    return pygpu_scalar_tensor(v, dtype, dev);
}

/* The result dtype of where's two values (tensors or numbers). */
static int
where_dtype(PyObject *x, PyObject *y, int *dtype)
{
    pygpu_scalar_value v;
    int cx = -1, cy = -1;
    if (Tensor_Check(x) && Tensor_Check(y)) {
        *dtype = pygpu_result_type_tt((TensorObject *)x, (TensorObject *)y);
        return 0;
    }
    if ((!Tensor_Check(x) && pygpu_scalar_operand(x, &v, &cx) < 0) ||
        (!Tensor_Check(y) && pygpu_scalar_operand(y, &v, &cy) < 0)) {
        return -1;
    }
    if (Tensor_Check(x) || Tensor_Check(y)) {
        TensorObject *t = (TensorObject *)(Tensor_Check(x) ? x : y);
        *dtype = pygpu_result_type_ts(t->dtype, cx < 0 ? cy : cx);
        return 0;
    }
    int cat = cx > cy ? cx : cy; /* two numbers */
    *dtype = cat == PYGPU_CAT_FLOAT ? pygpu_default_dtype()
             : cat == PYGPU_CAT_INT ? PYGPU_INT64
                                    : PYGPU_BOOL;
    return 0;
}

static int
check_bool_mask(const TensorObject *mask, const char *fmt)
{
    if (mask->dtype == PYGPU_BOOL) {
        return 0;
    }
    PyErr_Format(PyExc_RuntimeError, fmt,
                 pygpu_dtype_table[mask->dtype].scalar_name);
    return -1;
}

static PyObject *where(PyObject *cond, PyObject *x, PyObject *y);

/* where with x or y recorded by autograd: computed with grad mode off. */
static PyObject *
where_recorded(PyObject *cond, PyObject *x, PyObject *y)
{
    int was = pygpu_set_grad_enabled(0);
    PyObject *r = where(cond, x, y);
    pygpu_set_grad_enabled(was);
    return pygpu_ag_where((TensorObject *)cond, x, y, r, 0);
}

static PyObject *
where(PyObject *cond, PyObject *x, PyObject *y)
{
    TensorObject *ag[2] = {Tensor_Check(x) ? (TensorObject *)x : NULL,
                           Tensor_Check(y) ? (TensorObject *)y : NULL};
    if (Tensor_Check(cond) && pygpu_ag_wanted(2, ag)) {
        return where_recorded(cond, x, y);
    }
    TensorObject *c = (TensorObject *)cond, *tx = NULL, *ty = NULL;
    TensorObject *out = NULL;
    PyObject *result = NULL;
    int dtype, ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    if (pygpu_tensor_arg(cond, "where", "condition") < 0 ||
        check_bool_mask(c, "where expected condition to be a boolean "
                           "tensor, but got a tensor with dtype %s") < 0 ||
        where_dtype(x, y, &dtype) < 0) {
        return NULL;
    }
    tx = operand_tensor(x, dtype, c->device, "where", "input");
    ty = tx ? operand_tensor(y, dtype, c->device, "where", "other") : NULL;
    if (ty == NULL || pygpu_check_same_device(c, tx) < 0 ||
        pygpu_check_same_device(c, ty) < 0 ||
        pygpu_broadcast_shapes(c->ndim, c->shape, tx->ndim, tx->shape, &ndim,
                               shape) < 0 ||
        pygpu_broadcast_shapes(ndim, shape, ty->ndim, ty->shape, &ndim,
                               shape) < 0) {
        goto fail;
    }
    out = pygpu_tensor_empty(ndim, shape, dtype, c->device);
    if (out == NULL || pygpu_tensor_assign(out, ty) < 0 ||
        pygpu_op_masked_copy(out, c, tx, "where") < 0) {
        goto fail;
    }
    result = (PyObject *)out;
    out = NULL;
fail:
    Py_XDECREF(tx);
    Py_XDECREF(ty);
    Py_XDECREF(out);
    return result;
}

PyObject *
pygpu_t_where(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    static const char *const names[] = {"condition", "other"};
    PyObject *a[2];
    if (pygpu_parse_args("where", args, nargs, kwnames, names, 2, 2, 2, a) <
        0) {
        return NULL;
    }
    return where(a[0], op, a[1]);
}

/* ------------------------------------------------------- masked_fill */

/* self[mask] = value in place: mask bool and broadcastable to self's
 * shape, value a number or a 0-d tensor. */
static PyObject *
masked_fill_(TensorObject *self, PyObject *maskobj, PyObject *value)
{
    TensorObject *mask = (TensorObject *)maskobj, *v = NULL;
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    if (pygpu_tensor_arg(maskobj, "masked_fill_", "mask") < 0 ||
        check_bool_mask(mask, "masked_fill_ only supports boolean masks, "
                              "but got mask with dtype %s") < 0) {
        return NULL;
    }
    TensorObject *vt = Tensor_Check(value) ? (TensorObject *)value : NULL;
    if (pygpu_ag_refuse("masked_fill_ with a value that requires grad (use "
                        "the out-of-place masked_fill)", 1, &vt) < 0) {
        return NULL;
    }
    if (Tensor_Check(value) && ((TensorObject *)value)->ndim != 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "masked_fill_ only supports a 0-dimensional value "
                     "tensor, but got tensor with %d dimension(s).",
                     ((TensorObject *)value)->ndim);
        return NULL;
    }
    if (pygpu_check_same_device(self, mask) < 0 ||
        pygpu_check_write(self, mask, NULL) < 0 ||
        pygpu_broadcast_shapes(mask->ndim, mask->shape, self->ndim,
                               self->shape, &ndim, shape) < 0) {
        return NULL;
    }
    if (ndim != self->ndim) {
        PyErr_SetString(PyExc_RuntimeError,
                        "masked_fill_: the mask's shape must broadcast to "
                        "the tensor's shape");
        return NULL;
    }
    v = operand_tensor(value, self->dtype, self->device, "masked_fill_",
                       "value");
    if (v == NULL) {
        return NULL;
    }
    if (!pygpu_device_equal(&v->device, &self->device)) {
        Py_SETREF(v, pygpu_tensor_to(v, self->device, v->dtype));
    }
    int rc = v ? pygpu_op_masked_copy(self, mask, v, "masked_fill_") : -1;
    Py_XDECREF(v);
    return rc < 0 ? NULL : Py_NewRef((PyObject *)self);
}

static int
masked_fill_args(const char *name, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames, PyObject **a)
{
    static const char *const names[] = {"mask", "value"};
    return pygpu_parse_args(name, args, nargs, kwnames, names, 2, 2, 2, a);
}

PyObject *
pygpu_t_masked_fill_(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames)
{
    PyObject *a[2];
    if (masked_fill_args("masked_fill_", args, nargs, kwnames, a) < 0) {
        return NULL;
    }
    return masked_fill_((TensorObject *)op, a[0], a[1]);
}

/* A copy of self (broadcast with the mask) filled where the mask is. */
PyObject *
pygpu_t_masked_fill(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    TensorObject *self = (TensorObject *)op, *mask, *out = NULL;
    PyObject *a[2], *r = NULL;
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    if (masked_fill_args("masked_fill", args, nargs, kwnames, a) < 0 ||
        pygpu_tensor_arg(a[0], "masked_fill", "mask") < 0) {
        return NULL;
    }
    mask = (TensorObject *)a[0];
    TensorObject *in[2] = {self, Tensor_Check(a[1]) ? (TensorObject *)a[1]
                                                    : NULL};
    if (pygpu_ag_wanted(2, in)) {
        int was = pygpu_set_grad_enabled(0);
        r = pygpu_t_masked_fill(op, args, nargs, kwnames);
        pygpu_set_grad_enabled(was);
        return pygpu_ag_where(mask, op, a[1], r, 1);
    }
    if (pygpu_broadcast_shapes(mask->ndim, mask->shape, self->ndim,
                               self->shape, &ndim, shape) < 0) {
        return NULL;
    }
    out = pygpu_tensor_empty(ndim, shape, self->dtype, self->device);
    if (out != NULL && pygpu_tensor_assign(out, self) == 0) {
        r = masked_fill_(out, a[0], a[1]);
    }
    Py_XDECREF(out);
    return r;
}

static PyObject *
where_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
         PyObject *kwnames)
{
    static const char *const names[] = {"condition", "input", "other"};
    PyObject *a[3];
    if (pygpu_parse_args("where", args, nargs, kwnames, names, 3, 3, 3, a) <
        0) {
        return NULL;
    }
    return where(a[0], a[1], a[2]);
}

static PyObject *
masked_fill_fn(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    static const char *const names[] = {"input", "mask", "value"};
    PyObject *a[3];
    if (pygpu_parse_args("masked_fill", args, nargs, kwnames, names, 3, 3, 3,
                         a) < 0 ||
        pygpu_tensor_arg(a[0], "masked_fill", "input") < 0) {
        return NULL;
    }
    return pygpu_t_masked_fill(a[0], a + 1, 2, NULL);
}

PyMethodDef pygpu_where_functions[] = {
    {"where", FASTKW(where_fn),
     "where($module, condition, input, other)\n--\n\n"
     "input where the bool condition is true, else other (tensors or\n"
     "numbers; broadcast, promoted)."},
    {"masked_fill", FASTKW(masked_fill_fn),
     "masked_fill($module, input, mask, value)\n--\n\n"
     "A copy of input with value where the bool mask (broadcast) is true."},
    {NULL},
};
