/* ops_threads.c - set_num_threads / get_num_threads: the threads the CPU
 * loops use (cpu/cpu_parallel.c), with torch's names and messages. */
#include <limits.h>

#include "ops/ops.h"
#include "cpu/cpu_parallel.h"
#include "cpu/simd.h"

static PyObject *
set_num_threads(PyObject *m, PyObject *arg)
{
    if (!PyLong_Check(arg) || PyBool_Check(arg)) {
        return PyErr_Format(PyExc_RuntimeError,
                            "set_num_threads expects an int, but got %s",
                            Py_TYPE(arg)->tp_name);
    }
    int overflow;
    long n = PyLong_AsLongAndOverflow(arg, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow < 0 || (overflow == 0 && n <= 0)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "set_num_threads expects a positive integer");
        return NULL;
    }
    if (overflow > 0 || n > INT_MAX) {
        n = INT_MAX;
    }
    Py_BEGIN_ALLOW_THREADS
    pygpu_set_num_threads((int)n);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *
get_num_threads(PyObject *m, PyObject *noargs)
{
    return PyLong_FromLong(pygpu_get_num_threads());
}

static PyObject *
cpu_capability(PyObject *m, PyObject *noargs)
{
    return PyUnicode_FromString(pygpu_cpu_isa_name(pygpu_cpu_isa));
}

PyMethodDef pygpu_thread_functions[] = {
    {"set_num_threads", set_num_threads, METH_O,
     "set_num_threads($module, num, /)\n--\n\n"
     "Sets the number of threads the CPU loops use (large elementwise ops,\n"
     "copies, fills, reductions and random numbers)."},
    {"get_num_threads", get_num_threads, METH_NOARGS,
     "get_num_threads($module, /)\n--\n\n"
     "Number of threads the CPU loops use; by default the CPUs this\n"
     "process may run on."},
    {"_cpu_capability", cpu_capability, METH_NOARGS,
     "_cpu_capability($module, /)\n--\n\n"
     "The vector instructions the CPU loops use: DEFAULT, AVX2 or AVX512."},
    {NULL},
};
