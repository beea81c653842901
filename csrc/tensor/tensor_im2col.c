/* tensor_im2col.c - _C._im2col and _C._col2im, the entries of
 * pygpu.nn.functional's unfold and fold (pygpu/nn/_functional/conv.py,
 * which turns torch's int-or-pair arguments into the eight ints), and
 * _C._conv2d_direct, conv2d's path when nothing is recorded: they call
 * autograd's wrappers (autograd_im2col.c), which call the ops of
 * ops/ops_im2col.c. */
#include "tensor/tensor.h"

/* _im2col(input, kh, kw, dh, dw, ph, pw, sh, sw) */
static PyObject *
im2col_py(PyObject *m, PyObject *args)
{
    PyObject *t;
    long long p[8];
    if (!PyArg_ParseTuple(args, "OLLLLLLLL:_im2col", &t, &p[0], &p[1], &p[2],
                          &p[3], &p[4], &p[5], &p[6], &p[7])) {
        return NULL;
    }
    if (!Tensor_Check(t)) {
        PyErr_Format(PyExc_TypeError,
                     "_im2col(): input must be a Tensor, not %s",
                     Py_TYPE(t)->tp_name);
        return NULL;
    }
    int64_t q[8];
    for (int i = 0; i < 8; i++) {
        q[i] = p[i];
    }
    return pygpu_ag_im2col((TensorObject *)t, q);
}

/* _col2im(input, oh, ow, kh, kw, dh, dw, ph, pw, sh, sw) */
static PyObject *
col2im_py(PyObject *m, PyObject *args)
{
    PyObject *t;
    long long hw[2], p[8];
    if (!PyArg_ParseTuple(args, "OLLLLLLLLLL:_col2im", &t, &hw[0], &hw[1],
                          &p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6],
                          &p[7])) {
        return NULL;
    }
    if (!Tensor_Check(t)) {
        PyErr_Format(PyExc_TypeError,
                     "_col2im(): input must be a Tensor, not %s",
                     Py_TYPE(t)->tp_name);
        return NULL;
    }
    int64_t q[8], out_hw[2] = {hw[0], hw[1]};
    for (int i = 0; i < 8; i++) {
        q[i] = p[i];
    }
    return pygpu_ag_col2im((TensorObject *)t, out_hw, q);
}

/* _conv2d_direct(input, weight, bias, dh, dw, ph, pw, sh, sw, groups) */
static PyObject *
conv2d_direct_py(PyObject *m, PyObject *args)
{
    PyObject *x, *w, *b;
    long long p[6], groups;
    if (!PyArg_ParseTuple(args, "OOOLLLLLLL:_conv2d_direct", &x, &w, &b,
                          &p[0], &p[1], &p[2], &p[3], &p[4], &p[5],
                          &groups)) {
        return NULL;
    }
    if (!Tensor_Check(x) || !Tensor_Check(w) ||
        (b != Py_None && !Tensor_Check(b))) {
        PyErr_SetString(PyExc_TypeError,
                        "_conv2d_direct(): input and weight must be Tensors "
                        "and bias a Tensor or None");
        return NULL;
    }
    int64_t q[8] = {0, 0, p[0], p[1], p[2], p[3], p[4], p[5]};
    return pygpu_ag_conv2d_direct(
        (TensorObject *)x, (TensorObject *)w,
        b == Py_None ? NULL : (TensorObject *)b, q, groups);
}

PyMethodDef pygpu_im2col_functions[] = {
    {"_im2col", im2col_py, METH_VARARGS,
     "_im2col($module, input, kh, kw, dh, dw, ph, pw, sh, sw, /)\n--\n\n"
     "The sliding blocks of a (N, C, H, W) or (C, H, W) tensor as columns\n"
     "(N, C * kh * kw, L): torch.nn.functional.unfold."},
    {"_col2im", col2im_py, METH_VARARGS,
     "_col2im($module, input, oh, ow, kh, kw, dh, dw, ph, pw, sh, sw, /)\n"
     "--\n\n"
     "Columns (N, C * kh * kw, L) summed into a (N, C, oh, ow) image:\n"
     "torch.nn.functional.fold."},
    {"_conv2d_direct", conv2d_direct_py, METH_VARARGS,
     "_conv2d_direct($module, input, weight, bias, dh, dw, ph, pw, sh, sw,\n"
     "               groups, /)\n--\n\n"
     "conv2d of a (N, C, H, W) input without columns, where nothing is\n"
     "recorded (float32 and float64 on the CPU)."},
    {NULL},
};
