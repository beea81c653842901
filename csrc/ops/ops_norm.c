/* ops_norm.c - layer norm and RMS norm over the last dims, and batch
 * norm's training step over the channels, as one op each: the front end
 * of the NORM kind (kernels/norm.h).  x is read as rows of n contiguous
 * elements (or as [outer, C, inner]); the parameters are converted to the
 * compute type (float32, or float64 for float64), so a float16 input with
 * float32 parameters (torch's mixed form) and one with float16 parameters
 * take the same loop.  The forward keeps each row's (channel's) mean and
 * 1/std for the backward rule (autograd_norm.c), which calls
 * pygpu_op_row_norm_backward. */
#include "ops/norm.h"
#include "ops/reduce.h"
#include "kernels/norm.h"

int
pygpu_row_norm_acc_dtype(int dtype)
{
    return dtype == PYGPU_FLOAT64 ? PYGPU_FLOAT64 : PYGPU_FLOAT32;
}

/* The rows split into parts of about PYGPU_NORM_PART_WORK elements. */
static void
set_parts(pygpu_norm_args *a)
{
    a->rows_per_part = PYGPU_NORM_PART_WORK / a->n;
    if (a->rows_per_part < 1) {
        a->rows_per_part = 1;
    }
    a->parts = (a->rows + a->rows_per_part - 1) / a->rows_per_part;
}

/* p in the compute type and contiguous, on x's device; NULL for NULL
 * (*ok stays 1) or with an exception (*ok = 0). */
static TensorObject *
param_as(TensorObject *x, TensorObject *p, int acc, int *ok)
{
    if (p == NULL) {
        return NULL;
    }
    TensorObject *c = NULL;
    if (pygpu_check_same_device(x, p) == 0) {
        c = pygpu_as_dtype(p, acc);
        Py_XSETREF(c, c ? pygpu_tensor_contiguous(c) : NULL);
    }
    *ok = c != NULL;
    return c;
}

PyObject *
pygpu_op_row_norm(TensorObject *x, TensorObject *w, TensorObject *b, int64_t n,
              double eps, int rms, pygpu_row_norm_saved *saved)
{
    TensorObject *xc = NULL, *wc = NULL, *bc = NULL, *y = NULL;
    TensorObject *mean = NULL, *rstd = NULL;
    PyObject *res = NULL;
    int acc = pygpu_row_norm_acc_dtype(x->dtype), ok = 1;
    int64_t rows = pygpu_numel(x->ndim, x->shape) / n;
    xc = pygpu_tensor_contiguous(x);
    if (xc == NULL) {
        goto fail;
    }
    wc = param_as(x, w, acc, &ok);
    bc = ok && !rms ? param_as(x, b, acc, &ok) : NULL;
    if (!ok) {
        goto fail;
    }
    y = pygpu_tensor_empty(x->ndim, x->shape, x->dtype, x->device);
    mean = rms ? NULL : pygpu_tensor_empty(1, &rows, acc, x->device);
    rstd = pygpu_tensor_empty(1, &rows, acc, x->device);
    if (y == NULL || (!rms && mean == NULL) || rstd == NULL) {
        goto fail;
    }
    pygpu_norm_args a = {
        .rows = rows, .n = n, .rms = rms, .eps = eps, .x = xc->data,
        .w = wc ? wc->data : NULL, .b = bc ? bc->data : NULL, .y = y->data,
        .mean = mean ? mean->data : NULL, .rstd = rstd->data};
    set_parts(&a);
    pygpu_kargs k = {.op = PYGPU_NORM_FORWARD, .norm = &a,
                     .numel = rows * n};
    if (pygpu_dispatch(PYGPU_K_NORM, x->device, x->dtype, &k,
                       rms ? "rms_norm" : "layer_norm") < 0) {
        goto fail;
    }
    if (saved != NULL) {
        saved->x = xc;
        saved->w = wc;
        saved->mean = mean;
        saved->rstd = rstd;
        xc = wc = mean = rstd = NULL;
    }
    res = (PyObject *)y;
    y = NULL;
fail:
    Py_XDECREF(xc);
    Py_XDECREF(wc);
    Py_XDECREF(bc);
    Py_XDECREF(y);
    Py_XDECREF(mean);
    Py_XDECREF(rstd);
    return res;
}

int
pygpu_op_row_norm_backward(TensorObject *dy, const pygpu_row_norm_saved *s,
                       int64_t n, int rms, const int want[3],
                       TensorObject *grads[3])
{
    TensorObject *x = s->x, *g = NULL, *dx = NULL, *dw = NULL, *db = NULL;
    TensorObject *parts = NULL;
    int acc = pygpu_row_norm_acc_dtype(x->dtype), rc = -1;
    int chan = rms == PYGPU_ROW_NORM_CHANNELS;
    int64_t numel = pygpu_numel(x->ndim, x->shape);
    int64_t rows = chan ? x->shape[1] : numel / n;
    int64_t plen = chan ? rows : n; /* elements of a parameter */
    grads[0] = grads[1] = grads[2] = NULL;
    g = pygpu_as_dtype(dy, x->dtype);
    Py_XSETREF(g, g ? pygpu_tensor_contiguous(g) : NULL);
    if (g == NULL) {
        goto fail;
    }
    pygpu_norm_args a = {
        .rows = rows, .n = chan ? numel / rows : n,
        .rms = rms == PYGPU_ROW_NORM_RMS, .x = x->data,
        .w = s->w ? s->w->data : NULL, .mean = s->mean ? s->mean->data : NULL,
        .rstd = s->rstd->data, .dy = g->data,
        .inner = chan ? pygpu_numel(x->ndim - 2, x->shape + 2) : 1};
    if (!chan) {
        set_parts(&a);
    }
    if (want[0] && (dx = pygpu_tensor_empty(x->ndim, x->shape, x->dtype,
                                            x->device)) == NULL) {
        goto fail;
    }
    if (want[1] &&
        (dw = pygpu_tensor_empty(1, &plen, acc, x->device)) == NULL) {
        goto fail;
    }
    if (want[2] &&
        (db = pygpu_tensor_empty(1, &plen, acc, x->device)) == NULL) {
        goto fail;
    }
    if (!chan && (dw != NULL || db != NULL)) {
        int64_t shape[2] = {a.parts, 2 * n};
        if ((parts = pygpu_tensor_empty(2, shape, acc, x->device)) == NULL) {
            goto fail;
        }
        a.part_sums = parts->data;
    }
    a.dx = dx ? dx->data : NULL;
    a.dw = dw ? dw->data : NULL;
    a.db = db ? db->data : NULL;
    pygpu_kargs k = {
        .op = chan ? PYGPU_NORM_CHANNELS_BACKWARD : PYGPU_NORM_BACKWARD,
        .norm = &a, .numel = numel};
    if (pygpu_dispatch(PYGPU_K_NORM, x->device, x->dtype, &k,
                       chan  ? "batch_norm_backward"
                       : rms ? "rms_norm_backward"
                             : "layer_norm_backward") < 0) {
        goto fail;
    }
    grads[0] = dx;
    grads[1] = dw;
    grads[2] = db;
    dx = dw = db = NULL;
    rc = 0;
fail:
    Py_XDECREF(g);
    Py_XDECREF(dx);
    Py_XDECREF(dw);
    Py_XDECREF(db);
    Py_XDECREF(parts);
    return rc;
}

PyObject *
pygpu_op_channel_norm(TensorObject *x, TensorObject *w, TensorObject *b,
                      double eps, TensorObject **mean_out,
                      TensorObject **var_out, pygpu_row_norm_saved *saved)
{
    TensorObject *xc = NULL, *wc = NULL, *bc = NULL, *y = NULL;
    TensorObject *mean = NULL, *rstd = NULL, *var = NULL;
    PyObject *res = NULL;
    int acc = pygpu_row_norm_acc_dtype(x->dtype), ok = 1;
    int64_t c = x->shape[1], numel = pygpu_numel(x->ndim, x->shape);
    *mean_out = *var_out = NULL;
    xc = pygpu_tensor_contiguous(x);
    if (xc == NULL) {
        goto fail;
    }
    wc = param_as(x, w, acc, &ok);
    bc = ok ? param_as(x, b, acc, &ok) : NULL;
    if (!ok) {
        goto fail;
    }
    y = pygpu_tensor_empty(x->ndim, x->shape, x->dtype, x->device);
    mean = pygpu_tensor_empty(1, &c, acc, x->device);
    rstd = pygpu_tensor_empty(1, &c, acc, x->device);
    var = pygpu_tensor_empty(1, &c, acc, x->device);
    if (y == NULL || mean == NULL || rstd == NULL || var == NULL) {
        goto fail;
    }
    pygpu_norm_args a = {
        .rows = c, .n = c ? numel / c : 0, .eps = eps, .x = xc->data,
        .w = wc ? wc->data : NULL, .b = bc ? bc->data : NULL, .y = y->data,
        .mean = mean->data, .rstd = rstd->data, .var = var->data,
        .inner = pygpu_numel(x->ndim - 2, x->shape + 2)};
    pygpu_kargs k = {.op = PYGPU_NORM_CHANNELS_FORWARD, .norm = &a,
                     .numel = numel};
    if (pygpu_dispatch(PYGPU_K_NORM, x->device, x->dtype, &k,
                       "batch_norm") < 0) {
        goto fail;
    }
    if (saved != NULL) {
        saved->x = xc;
        saved->w = wc;
        saved->mean = mean;
        saved->rstd = rstd;
        Py_INCREF(mean);
        xc = wc = rstd = NULL;
    }
    *mean_out = mean;
    *var_out = var;
    mean = var = NULL;
    res = (PyObject *)y;
    y = NULL;
fail:
    Py_XDECREF(xc);
    Py_XDECREF(wc);
    Py_XDECREF(bc);
    Py_XDECREF(y);
    Py_XDECREF(mean);
    Py_XDECREF(rstd);
    Py_XDECREF(var);
    return res;
}
