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

static PyObject *
set_cpu_capability(PyObject *m, PyObject *arg)
{
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    int want = name != NULL ? pygpu_cpu_isa_parse(name) : -1;
    if (want < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError,
                             "the CPU capability must be default, avx2 or "
                             "avx512");
        }
        return NULL;
    }
    pygpu_cpu_isa_set(want);
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
    {"_set_cpu_capability", set_cpu_capability, METH_O,
     "_set_cpu_capability($module, name, /)\n--\n\n"
     "For tests: makes the CPU loops use `name` (default, avx2, avx512),\n"
     "or the CPU's best when that is less; returns what they use now.\n"
     "Only between ops: a call running on other threads may see either."},
    {NULL},
};
