/* tensor_type.c - Tensor.type() and type_as(): torch's legacy tensor type
 * names ('pygpu.FloatTensor', 'pygpu.cuda.LongTensor'; 'torch.' is
 * accepted in place of 'pygpu.') and conversion to a dtype or type. */
#include "tensor/tensor.h"

#include <string.h>

/* The legacy name of each dtype, by its name, so that dtypes added to the
 * table need only a row here. */
static const struct {
    const char *dtype;
    const char *legacy;
} legacy_names[] = {
    {"float32", "FloatTensor"},   {"float16", "HalfTensor"},
    {"float64", "DoubleTensor"},  {"int64", "LongTensor"},
    {"int32", "IntTensor"},       {"int16", "ShortTensor"},
    {"int8", "CharTensor"},       {"uint8", "ByteTensor"},
    {"bool", "BoolTensor"},       {"bfloat16", "BFloat16Tensor"},
};

#define N_LEGACY ((int)(sizeof(legacy_names) / sizeof(legacy_names[0])))

static const char *
legacy_name(int dtype)
{
    for (int i = 0; i < N_LEGACY; i++) {
        if (strcmp(legacy_names[i].dtype, pygpu_dtype_table[dtype].name) ==
            0) {
            return legacy_names[i].legacy;
        }
    }
    return "Tensor";
}

/* The type string of a dtype on a device type. */
static PyObject *
type_string(int dtype, int device_type)
{
    return PyUnicode_FromFormat("pygpu.%s%s",
                                device_type == PYGPU_CUDA ? "cuda." : "",
                                legacy_name(dtype));
}

/* 'pygpu.cuda.FloatTensor' -> dtype and device type; ValueError "invalid
 * type: '...'" for anything else. */
static int
parse_type_string(PyObject *s, int *dtype, int *device_type)
{
    const char *name = PyUnicode_AsUTF8(s);
    if (name == NULL) {
        return -1;
    }
    const char *rest = NULL;
    if (strncmp(name, "pygpu.", 6) == 0) {
        rest = name + 6;
    }
    else if (strncmp(name, "torch.", 6) == 0) {
        rest = name + 6;
    }
    *device_type = PYGPU_CPU;
    if (rest != NULL && strncmp(rest, "cuda.", 5) == 0) {
        rest += 5;
        *device_type = PYGPU_CUDA;
    }
    for (int d = 0; rest != NULL && d < PYGPU_NDTYPES; d++) {
        if (strcmp(rest, legacy_name(d)) == 0) {
            *dtype = d;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError, "invalid type: '%s'", name);
    return -1;
}

/* self with dtype on a device of device_type (self's device when it is of
 * that type, else the CPU or the current CUDA device): self itself when
 * nothing changes. */
static PyObject *
convert(TensorObject *self, int dtype, int device_type)
{
    pygpu_device dev = self->device;
    if (device_type != self->device.type) {
        dev.type = device_type;
        dev.index = -1;
        if (pygpu_device_resolve(&dev) < 0) {
            return NULL;
        }
    }
    if (dtype == self->dtype && pygpu_device_equal(&dev, &self->device)) {
        return Py_NewRef((PyObject *)self);
    }
    return (PyObject *)pygpu_ag_to(self, dev, dtype, 0);
}

PyObject *
pygpu_t_type(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    static const char *const names[] = {"dtype", "non_blocking"};
    TensorObject *self = (TensorObject *)op;
    PyObject *a[2];
    int dtype, device_type;
    if (pygpu_parse_args("type", args, nargs, kwnames, names, 2, 2, 0, a) <
        0) {
        return NULL;
    }
    if (a[0] == NULL || a[0] == Py_None) {
        return type_string(self->dtype, self->device.type);
    }
    if (DType_Check(a[0])) {
        return convert(self, ((DTypeObject *)a[0])->code, self->device.type);
    }
    if (!PyUnicode_Check(a[0])) {
        PyErr_Format(PyExc_TypeError,
                     "type(): argument 'dtype' must be a pygpu.dtype or a "
                     "type name, not %.100s", Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    if (parse_type_string(a[0], &dtype, &device_type) < 0) {
        return NULL;
    }
    return convert(self, dtype, device_type);
}

PyObject *
pygpu_t_type_as(PyObject *op, PyObject *other)
{
    if (pygpu_tensor_arg(other, "type_as", "other") < 0) {
        return NULL;
    }
    TensorObject *o = (TensorObject *)other;
    return convert((TensorObject *)op, o->dtype, o->device.type);
}
