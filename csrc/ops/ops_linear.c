/* ops_linear.c - linear(x, w, bias) = x @ w.T + bias over any number of
 * leading dims, and its form with relu in one call: one cuBLASLt call with
 * the BIAS epilogue then the relu kernel on CUDA (which keeps NaN, as
 * torch's relu does), on the CPU one gemm over the bias row then relu per
 * block (cpu/cpu_gemm.c; NumPy's matmul then a bias+relu pass for dtypes
 * the BLAS lacks). */
#include "ops/ops.h"
#include "ops/autocast.h"
#include "cuda/blas.h"

#include <string.h>

PyObject *
pygpu_op_linear(TensorObject *x, TensorObject *w, TensorObject *bias,
                int relu)
{
    TensorObject *x2 = NULL, *out = NULL, *bc = NULL, *in[3] = {x, w, bias},
                 *c[3];
    PyObject *result = NULL;
    int cast = pygpu_autocast_inputs(3, in, c);
    if (cast != 0) {
        result = cast < 0 ? NULL : pygpu_op_linear(c[0], c[1], c[2], relu);
        pygpu_autocast_release(cast < 0 ? 0 : 3, c);
        return result;
    }
    if (pygpu_check_matmul_pair(x, w) < 0 || (bias && pygpu_check_matmul_pair(x, bias) < 0)) {
        return NULL;
    }
    if (w->ndim != 2 || x->ndim < 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "linear: expected a 2-D weight and an input of at least "
                     "1 dim, got %dD and %dD", w->ndim, x->ndim);
        return NULL;
    }
    int64_t in_f = x->shape[x->ndim - 1], out_f = w->shape[0];
    int64_t rows = pygpu_numel(x->ndim - 1, x->shape);
    if (in_f != w->shape[1]) {
        PyErr_Format(PyExc_RuntimeError,
                     "mat1 and mat2 shapes cannot be multiplied (%lldx%lld "
                     "and %lldx%lld)", (long long)rows, (long long)in_f,
                     (long long)w->shape[1], (long long)out_f);
        return NULL;
    }
    /* A bias of shape [out_f], or a single value ([] or [1]), goes into
     * the product's epilogue; any other shape is added afterwards with
     * broadcasting (and its errors), as torch's addmm would. */
    int64_t bias_n = bias ? pygpu_numel(bias->ndim, bias->shape) : 0;
    if (bias && (bias->ndim > 1 || (bias_n != out_f && bias_n != 1))) {
        PyObject *y = pygpu_op_linear(x, w, NULL, 0), *r;
        if (y == NULL) {
            return NULL;
        }
        r = pygpu_op_binary(PYGPU_ADD, y, (PyObject *)bias, NULL);
        Py_DECREF(y);
        if (r != NULL && relu) {
            Py_SETREF(r, pygpu_op_unary(PYGPU_RELU, (TensorObject *)r, 1));
        }
        return r;
    }
    /* x as a rows x in_f matrix: itself when 2-D (products take strided
     * matrices), else a view of a contiguous x. */
    if (x->ndim == 2) {
        x2 = (TensorObject *)Py_NewRef(x);
    }
    else {
        int64_t shape2[2] = {rows, in_f}, strides2[2] = {in_f, 1};
        x2 = pygpu_tensor_contiguous(x);
        if (x2 == NULL) {
            return NULL;
        }
        Py_SETREF(x2, pygpu_tensor_view(x2, 2, shape2, strides2, 0));
        if (x2 == NULL) {
            return NULL;
        }
    }
    int64_t oshape[PYGPU_MAX_DIMS];
    memcpy(oshape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    oshape[x->ndim - 1] = out_f;
    out = pygpu_tensor_empty(x->ndim, oshape, x->dtype, x->device);
    if (out == NULL) {
        goto fail;
    }
    if (rows * out_f == 0) {
        result = (PyObject *)out;
        out = NULL;
        goto fail;
    }
    if (bias) {
        /* a dense out_f vector: a single value is spread first */
        int64_t one_shape[1] = {out_f}, one_stride[1] = {0};
        TensorObject *bv = bias_n == out_f && bias->ndim == 1
                               ? (TensorObject *)Py_NewRef(bias)
                               : pygpu_tensor_view(bias, 1, one_shape,
                                                   one_stride, 0);
        bc = bv ? pygpu_tensor_contiguous(bv) : NULL;
        Py_XDECREF(bv);
        if (bc == NULL) {
            goto fail;
        }
    }
    pygpu_kargs k = {.t = {out, x2, w, bc}, .flag = relu,
                     .allow_tf32 = pygpu_get_allow_tf32()};
    if (pygpu_dispatch(PYGPU_K_LINEAR, x->device, x->dtype, &k, "linear") <
        0) {
        goto fail;
    }
    result = (PyObject *)out;
    out = NULL;
fail:
    Py_XDECREF(x2);
    Py_XDECREF(out);
    Py_XDECREF(bc);
    return result;
}
