/* autocast.c - autocast's state, per thread and per device type, as torch
 * keeps it: whether it is on and which dtype it casts float32 inputs of
 * matrix products to.  Python's pygpu.autocast sets it on entry and
 * restores it on exit; matmul/mm/bmm/@ and linear read it once per call
 * through pygpu_autocast_inputs.  float64 and int64 are never cast. */
#include "ops/autocast.h"

#include <string.h>

#define NTYPES 3 /* enum pygpu_device_type */

typedef struct {
    unsigned char enabled[NTYPES];
    signed char dtype[NTYPES]; /* torch's defaults: bfloat16 on the CPU,
                                  float16 on CUDA */
} autocast_state;

static _Thread_local autocast_state state = {
    {0, 0, 0}, {PYGPU_BFLOAT16, PYGPU_FLOAT16, -1}};

int
pygpu_autocast_inputs(int n, TensorObject *const *in, TensorObject **out)
{
    int type = in[0]->device.type, target = state.dtype[type], cast = 0;
    if (!state.enabled[type]) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        cast |= in[i] != NULL && in[i]->dtype == PYGPU_FLOAT32;
    }
    if (!cast || target < 0 || target == PYGPU_FLOAT32) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        out[i] = NULL;
    }
    for (int i = 0; i < n; i++) {
        if (in[i] == NULL) {
            continue;
        }
        out[i] = in[i]->dtype == PYGPU_FLOAT32
                     ? pygpu_tensor_to(in[i], in[i]->device, target)
                     : (TensorObject *)Py_NewRef(in[i]);
        if (out[i] == NULL) {
            pygpu_autocast_release(n, out);
            return -1;
        }
    }
    return 1;
}

void
pygpu_autocast_release(int n, TensorObject **out)
{
    for (int i = 0; i < n; i++) {
        Py_CLEAR(out[i]);
    }
}

static int
parse_type(PyObject *obj)
{
    const char *s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (s != NULL && strcmp(s, "cpu") == 0) {
        return PYGPU_CPU;
    }
    if (s != NULL && strcmp(s, "cuda") == 0) {
        return PYGPU_CUDA;
    }
    if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_RuntimeError,
                     "autocast: device_type must be 'cuda' or 'cpu', got %R",
                     obj);
    }
    return -1;
}

static PyObject *
set_state(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int type, on, dtype = -1;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "_set_autocast_state(device_type, enabled, dtype)");
        return NULL;
    }
    if ((type = parse_type(args[0])) < 0 ||
        (on = PyObject_IsTrue(args[1])) < 0 ||
        pygpu_parse_dtype_opt(args[2], -1, &dtype) < 0) {
        return NULL;
    }
    state.enabled[type] = (unsigned char)on;
    state.dtype[type] = (signed char)dtype;
    Py_RETURN_NONE;
}

static PyObject *
get_state(PyObject *m, PyObject *arg)
{
    int type = parse_type(arg);
    if (type < 0) {
        return NULL;
    }
    int dt = state.dtype[type];
    return Py_BuildValue("(OO)", state.enabled[type] ? Py_True : Py_False,
                         dt < 0 ? Py_None : pygpu_state->dtypes[dt]);
}

PyMethodDef pygpu_autocast_functions[] = {
    {"_set_autocast_state", FAST(set_state),
     "_set_autocast_state($module, device_type, enabled, dtype, /)\n--\n\n"
     "Set this thread's autocast state for 'cpu' or 'cuda' (dtype None:\n"
     "unset)."},
    {"_get_autocast_state", get_state, METH_O,
     "_get_autocast_state($module, device_type, /)\n--\n\n"
     "This thread's (enabled, dtype or None) for 'cpu' or 'cuda'."},
    {NULL},
};
