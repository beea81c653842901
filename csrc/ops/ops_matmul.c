/* ops_matmul.c - matmul (torch's semantics for 1-D, 2-D and batched
 * operands), mm and bmm: shape/device/dtype checks in torch's
 * words, then the BLAS's gemm (cpu/cpu_gemm.c; NumPy's matmul for other
 * dtypes) on the CPU or cuBLAS on CUDA.  linear is in ops_linear.c. */
#include "ops/ops.h"
#include "ops/autocast.h"
#include "cuda/blas.h"

#include <stdatomic.h>
#include <string.h>

static atomic_int allow_tf32 = 0;

void
pygpu_set_allow_tf32(int allow)
{
    atomic_store(&allow_tf32, allow ? 1 : 0);
}

int
pygpu_get_allow_tf32(void)
{
    return atomic_load(&allow_tf32);
}

/* torch's C++ names of the scalar types, for its dtype messages. */
static const char *
cname(int dtype)
{
    static const char *const names[PYGPU_NDTYPES] = {
        "float", "c10::Half", "double", "long int", "bool", "unsigned char",
        "int", "c10::BFloat16"};
    return names[dtype];
}

int
pygpu_check_matmul_pair(const TensorObject *a, const TensorObject *b)
{
    if (pygpu_check_same_device(a, b) < 0) {
        return -1;
    }
    if (a->dtype != b->dtype) {
        PyErr_Format(PyExc_RuntimeError,
                     "expected m1 and m2 to have the same dtype, but got: %s "
                     "!= %s", cname(a->dtype), cname(b->dtype));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- matmul */

static PyObject *
shape_error_2d(const TensorObject *a, const TensorObject *b)
{
    int64_t am = a->ndim == 2 ? a->shape[0] : 1;
    int64_t bn = b->ndim == 2 ? b->shape[1] : 1;
    PyErr_Format(PyExc_RuntimeError,
                 "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and "
                 "%lldx%lld)", (long long)am,
                 (long long)a->shape[a->ndim - 1], (long long)b->shape[0],
                 (long long)bn);
    return NULL;
}

/* out= of a product: exactly the result's dtype, as torch. */
static int
check_out_dtype(const TensorObject *out, int dtype)
{
    if (out->dtype != dtype) {
        PyErr_Format(PyExc_RuntimeError,
                     "Expected out tensor to have dtype %s, but got %s "
                     "instead", cname(dtype), cname(out->dtype));
        return -1;
    }
    return 0;
}

PyObject *
pygpu_op_matmul(PyObject *ao, PyObject *bo)
{
    return pygpu_op_matmul_out(ao, bo, NULL);
}

PyObject *
pygpu_op_matmul_out(PyObject *ao, PyObject *bo, TensorObject *out_arg)
{
    TensorObject *a = (TensorObject *)ao, *b = (TensorObject *)bo;
    TensorObject *a2 = NULL, *b2 = NULL, *out = NULL, *in[2] = {a, b}, *c[2];
    PyObject *result = NULL;
    int cast = pygpu_autocast_inputs(2, in, c);
    if (cast != 0) {
        result = cast < 0 ? NULL
                          : pygpu_op_matmul_out((PyObject *)c[0],
                                                (PyObject *)c[1], out_arg);
        pygpu_autocast_release(cast < 0 ? 0 : 2, c);
        return result;
    }
    if (pygpu_check_matmul_pair(a, b) < 0) {
        return NULL;
    }
    if (a->ndim == 0 || b->ndim == 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "both arguments to matmul need to be at least 1D, but "
                     "they are %dD and %dD", a->ndim, b->ndim);
        return NULL;
    }
    if (a->ndim == 1 && b->ndim == 1 && a->shape[0] != b->shape[0]) {
        PyErr_Format(PyExc_RuntimeError,
                     "inconsistent tensor size, expected tensor [%lld] and "
                     "src [%lld] to have the same number of elements, but "
                     "got %lld and %lld elements respectively",
                     (long long)a->shape[0], (long long)b->shape[0],
                     (long long)a->shape[0], (long long)b->shape[0]);
        return NULL;
    }
    int64_t k = a->shape[a->ndim - 1];
    int64_t kb = b->shape[b->ndim == 1 ? 0 : b->ndim - 2];
    if (k != kb) {
        if (a->ndim <= 2 && b->ndim <= 2) {
            return shape_error_2d(a, b);
        }
        PyErr_Format(PyExc_RuntimeError,
                     "Expected size for first two dimensions of batch2 "
                     "tensor to be: [*, %lld] but got: [*, %lld].",
                     (long long)k, (long long)kb);
        return NULL;
    }
    /* Promote 1-D operands to matrices: a as a row, b as a column. */
    int64_t s1[2], st1[2];
    if (a->ndim == 1) {
        s1[0] = 1;
        s1[1] = a->shape[0];
        st1[0] = a->shape[0] * a->strides[0];
        st1[1] = a->strides[0];
        a2 = pygpu_tensor_view(a, 2, s1, st1, 0);
    }
    else {
        a2 = (TensorObject *)Py_NewRef(a);
    }
    if (b->ndim == 1) {
        s1[0] = b->shape[0];
        s1[1] = 1;
        st1[0] = b->strides[0];
        st1[1] = 1;
        b2 = pygpu_tensor_view(b, 2, s1, st1, 0);
    }
    else {
        b2 = (TensorObject *)Py_NewRef(b);
    }
    if (a2 == NULL || b2 == NULL) {
        goto fail;
    }
    /* Batch shape: broadcast of the leading dims. */
    int nb;
    int64_t bshape[PYGPU_MAX_DIMS], oshape[PYGPU_MAX_DIMS];
    if (pygpu_broadcast_shapes(a2->ndim - 2, a2->shape, b2->ndim - 2,
                               b2->shape, &nb, bshape) < 0) {
        goto fail;
    }
    if (nb + 2 > PYGPU_MAX_DIMS) {
        PyErr_SetString(PyExc_RuntimeError, "too many dimensions");
        goto fail;
    }
    int64_t m = a2->shape[a2->ndim - 2], n = b2->shape[b2->ndim - 1];
    int64_t batch = pygpu_numel(nb, bshape);
    /* The result's shape drops the dims that 1-D operands added. */
    int on = 0;
    for (int d = 0; d < nb; d++) {
        oshape[on++] = bshape[d];
    }
    if (a->ndim > 1) {
        oshape[on++] = m;
    }
    if (b->ndim > 1) {
        oshape[on++] = n;
    }
    if (out_arg == NULL) {
        out = pygpu_tensor_empty(on, oshape, a->dtype, a->device);
    }
    else if (check_out_dtype(out_arg, a->dtype) == 0) {
        /* The products write a contiguous result that is no input: a
         * strided out, or one sharing memory with an input (even element
         * for element), gets a copy of one (pygpu_out_finish). */
        out = pygpu_out_prepare(out_arg, on, oshape, a->dtype, a->device, 0,
                                NULL, NULL);
        if (out != NULL && (!pygpu_is_contiguous(out) ||
                            pygpu_get_overlap(out, a) != PYGPU_ALIAS_NONE ||
                            pygpu_get_overlap(out, b) != PYGPU_ALIAS_NONE)) {
            Py_SETREF(out, pygpu_tensor_empty(on, oshape, a->dtype,
                                              a->device));
        }
    }
    if (out == NULL) {
        goto fail;
    }
    if (pygpu_numel(on, oshape) > 0) {
        /* The originals and their batched matrices: the CPU row runs
         * gemm on the batched matrices, or NumPy's matmul, of torch's
         * semantics, on the originals. */
        pygpu_kargs k = {.t = {out, a, b, a2, b2},
                         .mm = {nb, bshape, batch},
                         .allow_tf32 = pygpu_get_allow_tf32()};
        if (pygpu_dispatch(PYGPU_K_MATMUL, a->device, a->dtype, &k,
                           "matmul") < 0) {
            goto fail;
        }
    }
    result = out_arg ? pygpu_out_finish(out_arg, out) : (PyObject *)out;
    out = NULL;
fail:
    Py_XDECREF(a2);
    Py_XDECREF(b2);
    Py_XDECREF(out);
    return result;
}

/* ------------------------------------------------------ module functions */

int
pygpu_tensor_arg(PyObject *x, const char *fname, const char *arg)
{
    if (!Tensor_Check(x)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%s' must be Tensor, not %.100s", fname,
                     arg, Py_TYPE(x)->tp_name);
        return -1;
    }
    return 0;
}

/* An optional out= argument: NULL for None or absent, else a Tensor. */
int
pygpu_matmul_register(PyObject *m)
{
    PyObject *np = PyImport_ImportModule("numpy");
    if (np == NULL) {
        return -1;
    }
    pygpu_state->np_matmul = PyObject_GetAttrString(np, "matmul");
    Py_DECREF(np);
    pygpu_state->out_kwnames = Py_BuildValue("(s)", "out");
    if (pygpu_state->np_matmul == NULL || pygpu_state->out_kwnames == NULL) {
        return -1;
    }
    return 0;
}
