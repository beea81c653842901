/* device.c - the Device type: "cpu" | "cuda" | "cuda:N" | ("cuda", N).
 *
 * Parsing follows torch.device, messages included.  "mps" parses (so torch's
 * device-selection code runs) but nothing can be put there.
 */
#include "core/pygpu.h"

#include <string.h>

static const char *const type_names[] = {"cpu", "cuda", "mps"};
#define NTYPES 3

int
pygpu_device_equal(const pygpu_device *a, const pygpu_device *b)
{
    return a->type == b->type && a->index == b->index;
}

void
pygpu_device_str(const pygpu_device *dev, char *buf, size_t n)
{
    if (dev->index < 0) {
        PyOS_snprintf(buf, n, "%s", type_names[dev->type]);
    }
    else {
        PyOS_snprintf(buf, n, "%s:%d", type_names[dev->type], dev->index);
    }
}

/* Parse a device string into *out; -1 with RuntimeError, torch's words. */
static int
parse_device_string(PyObject *str, pygpu_device *out)
{
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(str, &len);
    if (s == NULL) {
        return -1;
    }
    if (len == 0) {
        PyErr_SetString(PyExc_RuntimeError, "Device string must not be empty");
        return -1;
    }
    const char *colon = memchr(s, ':', (size_t)len);
    size_t tlen = colon ? (size_t)(colon - s) : (size_t)len;
    int type = -1;
    for (int t = 0; t < NTYPES; t++) {
        if (strlen(type_names[t]) == tlen &&
            memcmp(s, type_names[t], tlen) == 0) {
            type = t;
        }
    }
    if (type < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "Expected one of cpu, cuda, mps device type at start of "
                     "device string: %s", s);
        return -1;
    }
    out->type = type;
    out->index = -1;
    if (colon == NULL) {
        return 0;
    }
    /* The index: one or more decimal digits and nothing else. */
    const char *p = colon + 1;
    long index = 0;
    if (*p == '\0') {
        goto invalid;
    }
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || index > 1000000) {
            goto invalid;
        }
        index = index * 10 + (*p - '0');
    }
    if ((size_t)(p - s) != (size_t)len || (colon[1] == '0' && colon[2])) {
        goto invalid;
    }
    out->index = (int)index;
    return 0;
invalid:
    PyErr_Format(PyExc_RuntimeError, "Invalid device string: '%s'", s);
    return -1;
}

static int
parse_index(PyObject *obj, int *index)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "device index must be an int, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow || v > 1000000) {
        PyErr_SetString(PyExc_RuntimeError,
                        overflow ? "Overflow when unpacking long"
                                 : "Device index is out of range");
        return -1;
    }
    if (v < 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "Device index must not be negative, got %ld", v);
        return -1;
    }
    *index = (int)v;
    return 0;
}

int
pygpu_parse_device(PyObject *obj, pygpu_device *out)
{
    if (Device_Check(obj)) {
        *out = ((DeviceObject *)obj)->dev;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        return parse_device_string(obj, out);
    }
    if (PyLong_Check(obj) && !PyBool_Check(obj)) {
        /* torch.device(0) is cuda:0 */
        out->type = PYGPU_CUDA;
        return parse_index(obj, &out->index);
    }
    if (PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 2 &&
        PyUnicode_Check(PyTuple_GET_ITEM(obj, 0))) {
        int index;
        if (parse_device_string(PyTuple_GET_ITEM(obj, 0), out) < 0) {
            return -1;
        }
        if (out->index >= 0) {
            PyErr_Format(PyExc_RuntimeError,
                         "type (string) must not include an index because "
                         "index was passed explicitly: %R",
                         PyTuple_GET_ITEM(obj, 0));
            return -1;
        }
        if (parse_index(PyTuple_GET_ITEM(obj, 1), &index) < 0) {
            return -1;
        }
        out->index = index;
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "expected a device ('cpu', 'cuda', 'cuda:N', ('cuda', N) or "
                 "a pygpu.device), got %.200R", obj);
    return -1;
}

int
pygpu_parse_device_opt(PyObject *obj, const pygpu_device *def,
                       pygpu_device *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = *def;
        return 0;
    }
    return pygpu_parse_device(obj, out);
}

int
pygpu_device_resolve(pygpu_device *dev)
{
    if (dev->type == PYGPU_CPU) {
        dev->index = -1; /* tensors on the CPU report plain 'cpu' */
        return 0;
    }
    if (dev->type == PYGPU_MPS) {
        PyErr_SetString(PyExc_RuntimeError,
                        "pygpu has no 'mps' backend: use 'cpu' or 'cuda' "
                        "(pygpu.backends.mps.is_available() is False)");
        return -1;
    }
    int count = pygpu_cuda_device_count();
    if (pygpu_cuda_require() < 0) {
        return -1;
    }
    if (dev->index < 0) {
        return pygpu_cuda_current_device(&dev->index);
    }
    if (dev->index >= count) {
        PyErr_Format(PyExc_RuntimeError,
                     "CUDA error: invalid device ordinal (device cuda:%d "
                     "requested, %d device%s available)",
                     dev->index, count, count == 1 ? "" : "s");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the type */

PyObject *
pygpu_device_new(pygpu_device dev)
{
    if (dev.type == PYGPU_CPU && dev.index < 0 &&
        pygpu_state->cpu_device != NULL) {
        return Py_NewRef(pygpu_state->cpu_device);
    }
    DeviceObject *self = PyObject_New(DeviceObject, pygpu_state->Device_Type);
    if (self == NULL) {
        return NULL;
    }
    self->dev = dev;
    return (PyObject *)self;
}

static PyObject *
device_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"type", "index", NULL};
    PyObject *spec, *index = Py_None;
    pygpu_device dev;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:device", kwlist,
                                     &spec, &index)) {
        return NULL;
    }
    if (index != Py_None) {
        if (!PyUnicode_Check(spec)) {
            PyErr_SetString(PyExc_TypeError,
                            "device(type, index): type must be a string");
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, spec, index);
        if (pair == NULL) {
            return NULL;
        }
        int rc = pygpu_parse_device(pair, &dev);
        Py_DECREF(pair);
        if (rc < 0) {
            return NULL;
        }
    }
    else if (pygpu_parse_device(spec, &dev) < 0) {
        return NULL;
    }
    if (Device_Check(spec) && type == pygpu_state->Device_Type) {
        return Py_NewRef(spec);
    }
    return pygpu_device_new(dev);
}

static void
device_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
device_repr(PyObject *self)
{
    pygpu_device *d = &((DeviceObject *)self)->dev;
    if (d->index < 0) {
        return PyUnicode_FromFormat("device(type='%s')", type_names[d->type]);
    }
    return PyUnicode_FromFormat("device(type='%s', index=%d)",
                                type_names[d->type], d->index);
}

static PyObject *
device_str(PyObject *self)
{
    char buf[32];
    pygpu_device_str(&((DeviceObject *)self)->dev, buf, sizeof(buf));
    return PyUnicode_FromString(buf);
}

static PyObject *
device_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!Device_Check(a) || !Device_Check(b) || (op != Py_EQ && op != Py_NE)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int eq = pygpu_device_equal(&((DeviceObject *)a)->dev,
                                &((DeviceObject *)b)->dev);
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t
device_hash(PyObject *self)
{
    pygpu_device *d = &((DeviceObject *)self)->dev;
    Py_hash_t h = (Py_hash_t)(d->type * 1000003 + d->index + 7);
    return h == -1 ? -2 : h;
}

static PyObject *
device_get_type(PyObject *self, void *closure)
{
    return PyUnicode_FromString(type_names[((DeviceObject *)self)->dev.type]);
}

static PyObject *
device_get_index(PyObject *self, void *closure)
{
    int index = ((DeviceObject *)self)->dev.index;
    if (index < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(index);
}

static PyObject *
device_reduce(PyObject *self, PyObject *noargs)
{
    pygpu_device *d = &((DeviceObject *)self)->dev;
    if (d->index < 0) {
        return Py_BuildValue("O(s)", (PyObject *)Py_TYPE(self),
                             type_names[d->type]);
    }
    return Py_BuildValue("O(si)", (PyObject *)Py_TYPE(self),
                         type_names[d->type], d->index);
}

static PyGetSetDef device_getset[] = {
    {"type", device_get_type, NULL, "'cpu', 'cuda' or 'mps'.", NULL},
    {"index", device_get_index, NULL, "The device ordinal, or None.", NULL},
    {NULL},
};

static PyMethodDef device_methods[] = {
    {"__reduce__", device_reduce, METH_NOARGS, NULL},
    {"__enter__", pygpu_device_enter, METH_NOARGS,
     "__enter__($self, /)\n--\n\n"
     "Make this device the thread's default for factories until __exit__."},
    {"__exit__", FAST(pygpu_device_exit),
     "__exit__($self, *exc_info)\n--\n\n"
     "Put back the default device that __enter__ replaced."},
    {NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_new, device_tp_new},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_repr, device_repr},
    {Py_tp_str, device_str},
    {Py_tp_richcompare, device_richcompare},
    {Py_tp_hash, device_hash},
    {Py_tp_getset, device_getset},
    {Py_tp_methods, device_methods},
    {Py_tp_doc,
     "device(type, index=None)\n--\n\n"
     "Where a tensor lives: 'cpu', 'cuda', 'cuda:N', ('cuda', N).\n"
     "Equal devices compare and hash equal."},
    {0, NULL},
};

static PyType_Spec device_spec = {
    .name = "pygpu.device",
    .basicsize = sizeof(DeviceObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = device_slots,
};

/* _cuda_device_index(device=None) -> int: the CUDA ordinal a device
 * argument names (None: the current device), checked. */
static PyObject *
cuda_device_index(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    pygpu_device dev = {PYGPU_CUDA, -1};
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError,
                        "_cuda_device_index() takes at most 1 argument");
        return NULL;
    }
    if (nargs == 1 && pygpu_parse_device_opt(args[0], &dev, &dev) < 0) {
        return NULL;
    }
    if (dev.type != PYGPU_CUDA) {
        char buf[32];
        pygpu_device_str(&dev, buf, sizeof(buf));
        PyErr_Format(PyExc_ValueError, "Expected a cuda device, but got: %s",
                     buf);
        return NULL;
    }
    if (pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    return PyLong_FromLong(dev.index);
}

static PyMethodDef device_functions[] = {
    {"_cuda_device_index", FAST(cuda_device_index),
     "_cuda_device_index($module, device=None, /)\n--\n\n"
     "The CUDA ordinal a device argument names; None is the current one."},
    {NULL},
};

int
pygpu_device_register(PyObject *m)
{
    PyObject *type = pygpu_add_type(m, &device_spec, NULL, "device");
    if (type == NULL) {
        return -1;
    }
    pygpu_state->Device_Type = (PyTypeObject *)type;
    pygpu_device cpu = {PYGPU_CPU, -1};
    pygpu_state->cpu_device = pygpu_device_new(cpu);
    if (pygpu_state->cpu_device == NULL) {
        return -1;
    }
    return PyModule_AddFunctions(m, device_functions);
}
