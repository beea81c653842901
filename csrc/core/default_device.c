/* default_device.c - torch's default device: where factories given no
 * device= put their tensors.  Per thread, as torch keeps it (a new thread
 * starts on the CPU).  set_default_device sets it; `with device(...)`
 * sets it for the block and puts the previous one back on exit, so
 * blocks nest.  The saved devices of the open blocks are a list in the
 * thread's state dict, freed with the thread. */
#include "core/pygpu.h"

static _Thread_local pygpu_device current = {PYGPU_CPU, -1};
static _Thread_local unsigned char is_set = 0;  /* set, even to 'cpu' */

pygpu_device
pygpu_default_device(void)
{
    return current;
}

int
pygpu_default_device_is_set(void)
{
    return is_set;
}

/* Make obj (a device, a device string or int, or None for "unset") this
 * thread's default.  0 or -1. */
static int
set_default(PyObject *obj)
{
    pygpu_device dev = {PYGPU_CPU, -1};
    if (obj != Py_None && pygpu_parse_device(obj, &dev) < 0) {
        return -1;
    }
    current = dev;
    is_set = obj != Py_None;
    return 0;
}

/* The default as an object: a device, or None while unset. */
static PyObject *
get_default(void)
{
    if (!is_set) {
        Py_RETURN_NONE;
    }
    return pygpu_device_new(current);
}

static PyObject *
set_default_device_py(PyObject *self, PyObject *arg)
{
    if (set_default(arg) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
get_default_device_py(PyObject *self, PyObject *noargs)
{
    return get_default();
}

/* This thread's stack of the defaults that open `with device` blocks
 * replaced (borrowed), made on first use. */
static PyObject *
saved_stack(void)
{
    PyObject *tdict = PyThreadState_GetDict();
    if (tdict == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "device.__enter__: no thread state dict");
        return NULL;
    }
    PyObject *stack = PyDict_GetItemString(tdict, "pygpu.device_stack");
    if (stack != NULL) {
        return stack;
    }
    stack = PyList_New(0);
    if (stack == NULL) {
        return NULL;
    }
    int rc = PyDict_SetItemString(tdict, "pygpu.device_stack", stack);
    Py_DECREF(stack);  /* the dict keeps it */
    return rc < 0 ? NULL : stack;
}

PyObject *
pygpu_device_enter(PyObject *self, PyObject *noargs)
{
    PyObject *stack = saved_stack(), *prev = NULL;
    if (stack == NULL || (prev = get_default()) == NULL) {
        return NULL;
    }
    int rc = PyList_Append(stack, prev);
    Py_DECREF(prev);
    if (rc < 0) {
        return NULL;
    }
    current = ((DeviceObject *)self)->dev;
    is_set = 1;
    return Py_NewRef(self);
}

PyObject *
pygpu_device_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *stack = saved_stack();
    if (stack == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(stack);
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "device.__exit__ without a matching __enter__ in "
                        "this thread");
        return NULL;
    }
    PyObject *prev = Py_NewRef(PyList_GET_ITEM(stack, n - 1));
    int rc = PyList_SetSlice(stack, n - 1, n, NULL);
    if (rc == 0) {
        rc = set_default(prev);
    }
    Py_DECREF(prev);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_FALSE;
}

PyMethodDef pygpu_default_device_functions[] = {
    {"_set_default_device", set_default_device_py, METH_O,
     "_set_default_device($module, device, /)\n--\n\n"
     "Make device this thread's default for factories; None unsets it\n"
     "(the CPU)."},
    {"_get_default_device", get_default_device_py, METH_NOARGS,
     "_get_default_device($module, /)\n--\n\n"
     "This thread's default device as set, or None while unset."},
    {NULL},
};
