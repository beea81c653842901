/* ops_where.c - where and masked_fill(_), over the masked-copy kind of
 * the dispatch table: the result is filled with one operand (converted,
 * broadcast), then out[i] = cond[i] ? a[i] : out[i] with the other.
 * Nothing here is recorded: autograd_where.c records, and the Python
 * faces are in tensor/tensor_where.c. */
#include "ops/ops.h"

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


/* where(cond, x, y): x where cond, else y, promoted and broadcast. */
PyObject *
pygpu_op_where(PyObject *cond, PyObject *x, PyObject *y)
{
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

/* ------------------------------------------------------- masked_fill */

/* self[mask] = value in place: mask bool and broadcastable to self's
 * shape, value a number or a 0-d tensor. */
PyObject *
pygpu_op_masked_fill_(TensorObject *self, PyObject *maskobj,
                      PyObject *value)
{
    TensorObject *mask = (TensorObject *)maskobj, *v = NULL;
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    if (pygpu_tensor_arg(maskobj, "masked_fill_", "mask") < 0 ||
        check_bool_mask(mask, "masked_fill_ only supports boolean masks, "
                              "but got mask with dtype %s") < 0) {
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

/* A copy of self (broadcast with the mask) filled where the mask is. */
PyObject *
pygpu_op_masked_fill(TensorObject *self, TensorObject *mask,
                     PyObject *value)
{
    TensorObject *out = NULL;
    PyObject *r = NULL;
    int ndim;
    int64_t shape[PYGPU_MAX_DIMS];
    if (pygpu_broadcast_shapes(mask->ndim, mask->shape, self->ndim,
                               self->shape, &ndim, shape) < 0) {
        return NULL;
    }
    out = pygpu_tensor_empty(ndim, shape, self->dtype, self->device);
    if (out != NULL && pygpu_tensor_assign(out, self) == 0) {
        r = pygpu_op_masked_fill_(out, (PyObject *)mask, value);
    }
    Py_XDECREF(out);
    return r;
}
