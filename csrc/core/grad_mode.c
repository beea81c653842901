/* grad_mode.c - grad mode and inference mode, per thread, as torch keeps
 * them: a new thread records (grad mode on, inference mode off).  The
 * context managers of pygpu.autograd set them through the functions below
 * and put the old values back on exit; every op reads them once. */
#include "core/pygpu.h"

static _Thread_local unsigned char grad_off = 0;   /* grad mode off */
static _Thread_local unsigned char inference = 0;  /* inference mode on */

int
pygpu_grad_enabled(void)
{
    return !grad_off && !inference;
}

int
pygpu_set_grad_enabled(int on)
{
    int was = !grad_off;
    grad_off = !on;
    return was;
}

static PyObject *
set_grad_enabled_py(PyObject *self, PyObject *arg)
{
    if (!PyBool_Check(arg)) {
        PyErr_Format(PyExc_TypeError,
                     "enabled must be a bool (got %.100s)",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    pygpu_set_grad_enabled(arg == Py_True);
    Py_RETURN_NONE;
}

static PyObject *
is_grad_enabled_py(PyObject *self, PyObject *noargs)
{
    return PyBool_FromLong(!grad_off);
}

static PyObject *
set_inference_py(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    inference = (unsigned char)on;
    Py_RETURN_NONE;
}

static PyObject *
is_inference_py(PyObject *self, PyObject *noargs)
{
    return PyBool_FromLong(inference);
}

PyMethodDef pygpu_grad_mode_functions[] = {
    {"_set_grad_enabled", set_grad_enabled_py, METH_O,
     "_set_grad_enabled($module, enabled, /)\n--\n\n"
     "Turn this thread's grad mode on or off."},
    {"_is_grad_enabled", is_grad_enabled_py, METH_NOARGS,
     "_is_grad_enabled($module, /)\n--\n\n"
     "Whether grad mode is on in this thread."},
    {"_set_inference_mode", set_inference_py, METH_O,
     "_set_inference_mode($module, enabled, /)\n--\n\n"
     "Turn this thread's inference mode on or off."},
    {"_is_inference_mode_enabled", is_inference_py, METH_NOARGS,
     "_is_inference_mode_enabled($module, /)\n--\n\n"
     "Whether inference mode is on in this thread."},
    {NULL, NULL, 0, NULL},
};
