/* ops_im2col.c - im2col and col2im, torch's unfold and fold, and the
 * direct convolution: the ops of the IM2COL kind.  They check their
 * arguments in torch's words, make the inputs contiguous, allocate the
 * result and dispatch once; they never record (autograd/autograd_im2col.c
 * wraps them; their Python entries are in tensor/tensor_im2col.c).
 *
 * p[8] is (kh, kw, dh, dw, ph, pw, sh, sw): kernel size, dilation,
 * padding and stride along height and width.
 */
#include "memory/memory.h"
#include "ops/ops.h"

/* The checks torch makes of the four pairs, in its order and words. */
static int
check_params(const int64_t p[8])
{
    if (p[0] <= 0 || p[1] <= 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "kernel size should be greater than zero, but got "
                     "kernel_height: %lld kernel_width: %lld",
                     (long long)p[0], (long long)p[1]);
        return -1;
    }
    if (p[2] <= 0 || p[3] <= 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "dilation should be greater than zero, but got "
                     "dilation_height: %lld dilation_width: %lld",
                     (long long)p[2], (long long)p[3]);
        return -1;
    }
    if (p[4] < 0 || p[5] < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "padding should be non-negative, but got pad_height: "
                     "%lld pad_width: %lld",
                     (long long)p[4], (long long)p[5]);
        return -1;
    }
    if (p[6] <= 0 || p[7] <= 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "stride should be greater than zero, but got "
                     "stride_height: %lld stride_width: %lld",
                     (long long)p[6], (long long)p[7]);
        return -1;
    }
    return 0;
}

/* Floating dtypes only, as torch's CPU kernels ("im2col_out_cpu"). */
static int
check_dtype(const TensorObject *t, const char *what)
{
    if (!pygpu_dtype_table[t->dtype].is_floating_point) {
        PyErr_Format(PyExc_NotImplementedError,
                     "\"%s\" not implemented for '%s'", what,
                     pygpu_dtype_table[t->dtype].scalar_name);
        return -1;
    }
    return 0;
}

/* Blocks along a dim of `size` elements. */
static int64_t
blocks(int64_t size, int64_t k, int64_t d, int64_t pad, int64_t s)
{
    return (size + 2 * pad - (d * (k - 1) + 1)) / s + 1;
}

/* The columns (or image) of `t` into a new tensor of out_ndim dims and
 * shape `shape` (flag 0 im2col, 1 col2im).  New reference or NULL. */
static PyObject *
run(TensorObject *t, int flag, int out_ndim, const int64_t *shape,
    pygpu_im2col_args *a)
{
    TensorObject *in = pygpu_tensor_contiguous(t);
    TensorObject *out = in ? pygpu_tensor_empty(out_ndim, shape, t->dtype,
                                                t->device)
                           : NULL;
    if (out != NULL && a->batch > 0) {
        int64_t n = 1;
        for (int d = 0; d < out_ndim; d++) {
            n *= shape[d];
        }
        pygpu_kargs k = {.out = out->data, .in = {in->data}, .flag = flag,
                         .numel = n, .im2col = a};
        if (pygpu_dispatch(PYGPU_K_IM2COL, t->device, t->dtype, &k,
                           flag ? "col2im" : "im2col") < 0) {
            Py_CLEAR(out);
        }
    }
    Py_XDECREF(in);
    return (PyObject *)out;
}

PyObject *
pygpu_op_im2col(TensorObject *t, const int64_t p[8])
{
    char s[200];
    if (check_params(p) < 0) {
        return NULL;
    }
    int batched = t->ndim == 4;
    int ok = (t->ndim == 3 || t->ndim == 4) && t->shape[t->ndim - 1] != 0 &&
             t->shape[t->ndim - 2] != 0 && t->shape[t->ndim - 3] != 0;
    if (!ok) {
        pygpu_format_shape(s, sizeof(s), t->ndim, t->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "Expected 3D or 4D (batch mode) tensor with possibly 0 "
                     "batch size and other non-zero dimensions for input, "
                     "but got: [%s]", s);
        return NULL;
    }
    pygpu_im2col_args a = {
        .batch = batched ? t->shape[0] : 1,
        .channels = t->shape[t->ndim - 3],
        .height = t->shape[t->ndim - 2], .width = t->shape[t->ndim - 1],
        .kh = p[0], .kw = p[1], .dh = p[2], .dw = p[3],
        .ph = p[4], .pw = p[5], .sh = p[6], .sw = p[7]};
    a.out_h = blocks(a.height, a.kh, a.dh, a.ph, a.sh);
    a.out_w = blocks(a.width, a.kw, a.dw, a.pw, a.sw);
    if (a.out_h < 1 || a.out_w < 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "Given input with spatial size (%lld, %lld), "
                     "kernel_size=(%lld, %lld), dilation=(%lld, %lld), "
                     "padding=(%lld, %lld), calculated shape of the array "
                     "of sliding blocks as (%lld, %lld), but its components "
                     "must be at least one.",
                     (long long)a.height, (long long)a.width,
                     (long long)a.kh, (long long)a.kw, (long long)a.dh,
                     (long long)a.dw, (long long)a.ph, (long long)a.pw,
                     (long long)a.out_h, (long long)a.out_w);
        return NULL;
    }
    if (check_dtype(t, "im2col") < 0) {
        return NULL;
    }
    int64_t shape[3] = {a.batch, a.channels * a.kh * a.kw,
                        a.out_h * a.out_w};
    return run(t, 0, batched ? 3 : 2, batched ? shape : shape + 1, &a);
}

PyObject *
pygpu_op_col2im(TensorObject *t, const int64_t out_hw[2], const int64_t p[8])
{
    char s[400];
    if (check_params(p) < 0) {
        return NULL;
    }
    int batched = t->ndim == 3;
    int ok = (t->ndim == 2 || t->ndim == 3) && t->shape[t->ndim - 1] != 0 &&
             t->shape[t->ndim - 2] != 0;
    if (!ok) {
        pygpu_format_shape(s, sizeof(s), t->ndim, t->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "Expected 2D or 3D (batch mode) tensor for input with "
                     "possibly 0 batch size and non-zero dimensions for "
                     "input, but got: [%s]", s);
        return NULL;
    }
    int64_t rows = t->shape[t->ndim - 2], L = t->shape[t->ndim - 1];
    if (rows % (p[0] * p[1]) != 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "Expected size of input's dimension 1 to be divisible "
                     "by the product of kernel_size, but got "
                     "input.size(1)=%lld and kernel_size=(%lld, %lld).",
                     (long long)rows, (long long)p[0], (long long)p[1]);
        return NULL;
    }
    pygpu_im2col_args a = {
        .batch = batched ? t->shape[0] : 1,
        .channels = rows / (p[0] * p[1]),
        .height = out_hw[0], .width = out_hw[1],
        .kh = p[0], .kw = p[1], .dh = p[2], .dw = p[3],
        .ph = p[4], .pw = p[5], .sh = p[6], .sw = p[7]};
    a.out_h = blocks(a.height, a.kh, a.dh, a.ph, a.sh);
    a.out_w = blocks(a.width, a.kw, a.dw, a.pw, a.sw);
    const char *head = "Given output_size=(%lld, %lld), kernel_size=(%lld, "
                       "%lld), dilation=(%lld, %lld), padding=(%lld, %lld), "
                       "stride=(%lld, %lld), ";
    snprintf(s, sizeof(s), head, (long long)a.height, (long long)a.width,
             (long long)a.kh, (long long)a.kw, (long long)a.dh,
             (long long)a.dw, (long long)a.ph, (long long)a.pw,
             (long long)a.sh, (long long)a.sw);
    if (a.out_h * a.out_w != L) {
        PyErr_Format(PyExc_RuntimeError,
                     "%sexpected size of input's dimension 2 to match the "
                     "calculated number of sliding blocks %lld * %lld = "
                     "%lld, but got input.size(2)=%lld.",
                     s, (long long)a.out_h, (long long)a.out_w,
                     (long long)(a.out_h * a.out_w), (long long)L);
        return NULL;
    }
    if (a.out_h < 1 || a.out_w < 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "%scalculated shape of the array of sliding blocks as "
                     "(%lld, %lld), which is too small (non-positive)",
                     s, (long long)a.out_h, (long long)a.out_w);
        return NULL;
    }
    if (check_dtype(t, "col2im") < 0) {
        return NULL;
    }
    int64_t shape[4] = {a.batch, a.channels, a.height, a.width};
    return run(t, 1, batched ? 4 : 3, batched ? shape : shape + 1, &a);
}

/* The direct convolution's tensors: x (N, C, H, W), weight (Cout,
 * C / groups, kh, kw), bias (Cout) or NULL, one device, one float dtype
 * (float32 or float64 on the CPU). */
static int
check_conv(const TensorObject *x, const TensorObject *w,
           const TensorObject *bias, int64_t groups)
{
    char s[200];
    if (x->ndim != 4 || w->ndim != 4) {
        pygpu_format_shape(s, sizeof(s), x->ndim, x->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "_conv2d_direct: expected a 4-D input and a 4-D weight, "
                     "but got input of size [%s] and a %d-D weight", s,
                     w->ndim);
        return -1;
    }
    if (pygpu_check_same_device(x, w) < 0 ||
        (bias != NULL && pygpu_check_same_device(x, bias) < 0)) {
        return -1;
    }
    if (w->dtype != x->dtype || (bias != NULL && bias->dtype != x->dtype)) {
        PyErr_Format(PyExc_RuntimeError, "expected scalar type %s but found "
                     "%s", pygpu_dtype_table[x->dtype].scalar_name,
                     pygpu_dtype_table[w->dtype != x->dtype ? w->dtype
                                                            : bias->dtype]
                         .scalar_name);
        return -1;
    }
    if (check_dtype(x, "conv2d_direct") < 0) {
        return -1;
    }
    if (x->device.type == PYGPU_CPU && x->dtype != PYGPU_FLOAT32 &&
        x->dtype != PYGPU_FLOAT64) {
        PyErr_Format(PyExc_NotImplementedError,
                     "\"conv2d_direct\" not implemented for '%s' on the CPU",
                     pygpu_dtype_table[x->dtype].scalar_name);
        return -1;
    }
    int64_t cout = w->shape[0];
    if (groups < 1 || cout < 1 || cout % groups != 0 ||
        x->shape[1] != w->shape[1] * groups) {
        pygpu_format_shape(s, sizeof(s), w->ndim, w->shape);
        PyErr_Format(PyExc_RuntimeError,
                     "_conv2d_direct: weight of size [%s] and groups=%lld do "
                     "not fit an input of %lld channels", s,
                     (long long)groups, (long long)x->shape[1]);
        return -1;
    }
    if (bias != NULL && (bias->ndim != 1 || bias->shape[0] != cout)) {
        PyErr_Format(PyExc_RuntimeError,
                     "_conv2d_direct: expected bias to be 1-dimensional with "
                     "%lld elements", (long long)cout);
        return -1;
    }
    return 0;
}

PyObject *
pygpu_op_conv2d_direct(TensorObject *x, TensorObject *w, TensorObject *bias,
                       const int64_t p[8], int64_t groups)
{
    if (check_conv(x, w, bias, groups) < 0) {
        return NULL;
    }
    int64_t q[8] = {w->shape[2], w->shape[3], p[2], p[3],
                    p[4], p[5], p[6], p[7]};
    if (check_params(q) < 0) {
        return NULL;
    }
    pygpu_im2col_args a = {
        .batch = x->shape[0], .channels = x->shape[1],
        .height = x->shape[2], .width = x->shape[3],
        .kh = q[0], .kw = q[1], .dh = q[2], .dw = q[3],
        .ph = q[4], .pw = q[5], .sh = q[6], .sw = q[7],
        .out_channels = w->shape[0], .groups = groups};
    a.out_h = blocks(a.height, a.kh, a.dh, a.ph, a.sh);
    a.out_w = blocks(a.width, a.kw, a.dw, a.pw, a.sw);
    if (a.out_h < 1 || a.out_w < 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "_conv2d_direct: an input of spatial size (%lld, %lld) "
                     "gives an output of size (%lld, %lld)",
                     (long long)a.height, (long long)a.width,
                     (long long)a.out_h, (long long)a.out_w);
        return NULL;
    }
    int64_t shape[4] = {a.batch, a.out_channels, a.out_h, a.out_w};
    TensorObject *xc = pygpu_tensor_contiguous(x);
    TensorObject *wc = xc ? pygpu_tensor_contiguous(w) : NULL;
    TensorObject *bc = wc && bias ? pygpu_tensor_contiguous(bias) : NULL;
    TensorObject *out = NULL, *work = NULL;
    if (wc == NULL || (bias != NULL && bc == NULL)) {
        goto fail;
    }
    if (x->device.type == PYGPU_CPU) { /* the weight in the loop's order */
        int64_t nwork = pygpu_cpu_conv2d_work(&a);
        work = pygpu_tensor_empty(1, &nwork, x->dtype, x->device);
        if (work == NULL) {
            goto fail;
        }
        a.work = work->data;
    }
    out = pygpu_tensor_empty(4, shape, x->dtype, x->device);
    if (out != NULL && a.batch > 0) {
        a.bias = bc != NULL ? bc->data : NULL;
        pygpu_kargs k = {.out = out->data, .in = {xc->data, wc->data},
                         .flag = 2,
                         .numel = a.batch * a.out_channels * a.out_h *
                                  a.out_w * (a.channels / groups) * a.kh *
                                  a.kw,
                         .im2col = &a};
        if (pygpu_dispatch(PYGPU_K_IM2COL, x->device, x->dtype, &k,
                           "conv2d_direct") < 0) {
            Py_CLEAR(out);
        }
    }
fail:
    Py_XDECREF(xc);
    Py_XDECREF(wc);
    Py_XDECREF(bc);
    Py_XDECREF(work);
    return (PyObject *)out;
}
