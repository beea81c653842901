/* ops_generator.c - the random generators' states and the Generator type.
 *
 * A generator is a Philox4x32-10 stream (kernels/philox.h): a seed (the
 * key) and an offset (the next counter).  Each device has a default one
 * (slot 0: the CPU, 1 + i: cuda:i), seeded by manual_seed; a Generator
 * object is either one of those (pygpu.default_generator, the
 * cuda.default_generators) or a stream of its own.  A draw of n numbers
 * takes ceil(n / 4) counters, so the same seed gives the same numbers on
 * the CPU and on CUDA.  Every read and write of a state, the defaults' and
 * the objects', happens under one lock (a draw holds it for a few
 * instructions). */
#include "ops/ops.h"

#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#define MAX_GENERATORS (1 + PYGPU_MAX_DEVICES) /* 0: the CPU; 1 + i: cuda:i */
#define DEFAULT_SEED 67280421310721ULL /* the default torch uses too */
#define STATE_BYTES 16                 /* seed, offset: little-endian */

static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER;
static pygpu_philox_state defaults[MAX_GENERATORS];
static int defaults_ready = 0;
/* Set once by the module's init, under the GIL, before any op runs. */
static PyTypeObject *generator_type = NULL;

typedef struct {
    PyObject_HEAD
    pygpu_device device;
    int slot;               /* a default generator's slot, or -1 */
    pygpu_philox_state own; /* the stream when slot is -1 */
} GeneratorObject;

/* The state of g (NULL: slot's default); gen_lock held. */
static pygpu_philox_state *
state_locked(GeneratorObject *g, int slot)
{
    if (!defaults_ready) {
        for (int i = 0; i < MAX_GENERATORS; i++) {
            defaults[i].seed = DEFAULT_SEED;
            defaults[i].offset = 0;
        }
        defaults_ready = 1;
    }
    if (g != NULL) {
        slot = g->slot;
    }
    return slot >= 0 ? &defaults[slot] : &g->own;
}

static int
slot_of(pygpu_device dev)
{
    int slot = dev.type == PYGPU_CPU ? 0 : 1 + (dev.index < 0 ? 0 : dev.index);
    if (slot >= MAX_GENERATORS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu supports at most %d CUDA devices",
                     MAX_GENERATORS - 1);
        return -1;
    }
    return slot;
}

static const char *
type_name(int type)
{
    return type == PYGPU_CPU ? "cpu" : "cuda";
}

int
pygpu_generator_take(PyObject *generator, pygpu_device dev,
                     uint64_t counters, pygpu_philox_state *out)
{
    GeneratorObject *g = NULL;
    int slot = -1;
    if (generator != NULL && generator != Py_None) {
        if (!PyObject_TypeCheck(generator, generator_type)) {
            PyErr_Format(PyExc_TypeError,
                         "generator must be a pygpu.Generator, not %.100s",
                         Py_TYPE(generator)->tp_name);
            return -1;
        }
        g = (GeneratorObject *)generator;
        if (g->device.type != dev.type) {
            PyErr_Format(PyExc_RuntimeError,
                         "Expected a '%s' device type for generator but "
                         "found '%s'", type_name(dev.type),
                         type_name(g->device.type));
            return -1;
        }
    }
    else if ((slot = slot_of(dev)) < 0) {
        return -1;
    }
    pthread_mutex_lock(&gen_lock);
    pygpu_philox_state *st = state_locked(g, slot);
    *out = *st;
    st->offset += counters;
    pthread_mutex_unlock(&gen_lock);
    return 0;
}

/* The low 64 bits of a Python int (negatives wrap, as torch's). */
static int
parse_seed(PyObject *arg, uint64_t *seed)
{
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "seed must be an int, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLongMask(arg);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    *seed = v;
    return 0;
}

/* Seed (and restart) g, or default slots [first, last) when g is NULL. */
static void
seed_states(GeneratorObject *g, int first, int last, uint64_t seed)
{
    pthread_mutex_lock(&gen_lock);
    if (g != NULL) {
        pygpu_philox_state *st = state_locked(g, -1);
        st->seed = seed;
        st->offset = 0;
    }
    else {
        for (int i = first; i < last; i++) {
            pygpu_philox_state *st = state_locked(NULL, i);
            st->seed = seed;
            st->offset = 0;
        }
    }
    pthread_mutex_unlock(&gen_lock);
}

static int
fresh_seed(uint64_t *seed)
{
    if (getrandom(seed, sizeof *seed, 0) != (ssize_t)sizeof *seed) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static PyObject *
generator_new_for(pygpu_device dev, int slot)
{
    GeneratorObject *g = PyObject_New(GeneratorObject, generator_type);
    if (g == NULL) {
        return NULL;
    }
    g->device = dev;
    g->slot = slot;
    g->own.seed = DEFAULT_SEED;
    g->own.offset = 0;
    return (PyObject *)g;
}

/* ------------------------------------------------------ Generator type */

static PyObject *
generator_tp_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"device", NULL};
    PyObject *devobj = NULL;
    pygpu_device dev = {PYGPU_CPU, -1};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:Generator", names,
                                     &devobj) ||
        (devobj != NULL && devobj != Py_None &&
         pygpu_parse_device(devobj, &dev) < 0)) {
        return NULL;
    }
    if (dev.type != PYGPU_CPU && dev.type != PYGPU_CUDA) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Generator: only cpu and cuda devices are supported");
        return NULL;
    }
    GeneratorObject *g = (GeneratorObject *)tp->tp_alloc(tp, 0);
    if (g == NULL) {
        return NULL;
    }
    g->device = dev;
    g->slot = -1;
    g->own.seed = DEFAULT_SEED;
    g->own.offset = 0;
    return (PyObject *)g;
}

static void
generator_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
generator_manual_seed(PyObject *self, PyObject *arg)
{
    GeneratorObject *g = (GeneratorObject *)self;
    uint64_t seed;
    if (parse_seed(arg, &seed) < 0) {
        return NULL;
    }
    if (g->slot >= 0) {
        seed_states(NULL, g->slot, g->slot + 1, seed);
    }
    else {
        seed_states(g, 0, 0, seed);
    }
    return Py_NewRef(self);
}

static PyObject *
generator_seed(PyObject *self, PyObject *noargs)
{
    GeneratorObject *g = (GeneratorObject *)self;
    uint64_t seed;
    if (fresh_seed(&seed) < 0) {
        return NULL;
    }
    if (g->slot >= 0) {
        seed_states(NULL, g->slot, g->slot + 1, seed);
    }
    else {
        seed_states(g, 0, 0, seed);
    }
    return PyLong_FromUnsignedLongLong(seed);
}

static PyObject *
generator_initial_seed(PyObject *self, PyObject *noargs)
{
    GeneratorObject *g = (GeneratorObject *)self;
    pthread_mutex_lock(&gen_lock);
    uint64_t seed = state_locked(g, -1)->seed;
    pthread_mutex_unlock(&gen_lock);
    return PyLong_FromUnsignedLongLong(seed);
}

static PyObject *
generator_get_state(PyObject *self, PyObject *noargs)
{
    GeneratorObject *g = (GeneratorObject *)self;
    int64_t n = STATE_BYTES;
    pygpu_device cpu = {PYGPU_CPU, -1};
    TensorObject *t = pygpu_tensor_empty(1, &n, PYGPU_UINT8, cpu);
    if (t == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&gen_lock);
    pygpu_philox_state st = *state_locked(g, -1);
    pthread_mutex_unlock(&gen_lock);
    uint8_t *b = (uint8_t *)t->data;
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(st.seed >> (8 * i));
        b[8 + i] = (uint8_t)(st.offset >> (8 * i));
    }
    return (PyObject *)t;
}

static PyObject *
generator_set_state(PyObject *self, PyObject *arg)
{
    GeneratorObject *g = (GeneratorObject *)self;
    if (!Tensor_Check(arg) || ((TensorObject *)arg)->dtype != PYGPU_UINT8) {
        PyErr_Format(PyExc_TypeError,
                     "expected a torch.ByteTensor, but got %.100s",
                     Tensor_Check(arg)
                         ? pygpu_dtype_table[((TensorObject *)arg)->dtype]
                               .name
                         : Py_TYPE(arg)->tp_name);
        return NULL;
    }
    TensorObject *t = (TensorObject *)arg;
    if (pygpu_numel(t->ndim, t->shape) != STATE_BYTES) {
        PyErr_SetString(PyExc_RuntimeError, "RNG state is wrong size");
        return NULL;
    }
    pygpu_device cpu = {PYGPU_CPU, -1};
    TensorObject *c = pygpu_tensor_to(t, cpu, PYGPU_UINT8);
    if (c == NULL) {
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)c->data;
    pygpu_philox_state st = {0, 0};
    for (int i = 0; i < 8; i++) {
        st.seed |= (uint64_t)b[i] << (8 * i);
        st.offset |= (uint64_t)b[8 + i] << (8 * i);
    }
    Py_DECREF(c);
    pthread_mutex_lock(&gen_lock);
    *state_locked(g, -1) = st;
    pthread_mutex_unlock(&gen_lock);
    return Py_NewRef(self);
}

static PyObject *
generator_device(PyObject *self, void *closure)
{
    return pygpu_device_new(((GeneratorObject *)self)->device);
}

static PyObject *
generator_repr(PyObject *self)
{
    char buf[32];
    pygpu_device_str(&((GeneratorObject *)self)->device, buf, sizeof buf);
    return PyUnicode_FromFormat("<pygpu.Generator device='%s'>", buf);
}

static PyMethodDef generator_methods[] = {
    {"manual_seed", generator_manual_seed, METH_O,
     "manual_seed($self, seed, /)\n--\n\n"
     "Seed this generator (restarting its stream); returns it."},
    {"seed", generator_seed, METH_NOARGS,
     "seed($self, /)\n--\n\n"
     "Seed this generator from the operating system; returns the seed."},
    {"initial_seed", generator_initial_seed, METH_NOARGS,
     "initial_seed($self, /)\n--\n\nThe seed this generator was given."},
    {"get_state", generator_get_state, METH_NOARGS,
     "get_state($self, /)\n--\n\n"
     "The state as a uint8 tensor of 16 bytes (seed, offset)."},
    {"set_state", generator_set_state, METH_O,
     "set_state($self, new_state, /)\n--\n\n"
     "Restore a state from get_state; returns this generator."},
    {NULL},
};

static PyGetSetDef generator_getset[] = {
    {"device", generator_device, NULL, "The device it draws for.", NULL},
    {NULL},
};

static PyType_Slot generator_slots[] = {
    {Py_tp_new, generator_tp_new},
    {Py_tp_dealloc, generator_dealloc},
    {Py_tp_repr, generator_repr},
    {Py_tp_methods, generator_methods},
    {Py_tp_getset, generator_getset},
    {Py_tp_doc, "Generator(device='cpu')\n--\n\n"
                "A stream of random numbers (Philox4x32-10) for the ops\n"
                "of one device type, passed as generator=."},
    {0, NULL},
};

static PyType_Spec generator_spec = {
    .name = "pygpu.Generator",
    .basicsize = sizeof(GeneratorObject),
    .itemsize = 0,
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = generator_slots,
};

int
pygpu_generator_register(PyObject *m)
{
    PyObject *type = pygpu_add_type(m, &generator_spec, NULL, "Generator");
    if (type == NULL) {
        return -1;
    }
    generator_type = (PyTypeObject *)type;
    return 0;
}

/* ------------------------------------------------- module functions */

static PyObject *
manual_seed(PyObject *m, PyObject *arg)
{
    uint64_t seed;
    if (parse_seed(arg, &seed) < 0) {
        return NULL;
    }
    seed_states(NULL, 0, MAX_GENERATORS, seed);
    pygpu_device cpu = {PYGPU_CPU, -1};
    return generator_new_for(cpu, 0);
}

static PyObject *
seed_all(PyObject *m, PyObject *noargs)
{
    uint64_t seed;
    if (fresh_seed(&seed) < 0) {
        return NULL;
    }
    seed_states(NULL, 0, MAX_GENERATORS, seed);
    return PyLong_FromUnsignedLongLong(seed);
}

static PyObject *
cuda_manual_seed(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    /* _cuda_manual_seed(seed, device_or_-1) */
    uint64_t seed;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "_cuda_manual_seed(seed, device) takes 2 arguments");
        return NULL;
    }
    long dev = PyLong_AsLong(args[1]);
    if ((dev == -1 && PyErr_Occurred()) || parse_seed(args[0], &seed) < 0) {
        return NULL;
    }
    if (dev >= MAX_GENERATORS - 1) {
        PyErr_SetString(PyExc_RuntimeError, "device index out of range");
        return NULL;
    }
    if (dev < 0) {
        seed_states(NULL, 1, MAX_GENERATORS, seed);
    }
    else {
        seed_states(NULL, 1 + (int)dev, 2 + (int)dev, seed);
    }
    Py_RETURN_NONE;
}

static PyObject *
initial_seed(PyObject *m, PyObject *noargs)
{
    pthread_mutex_lock(&gen_lock);
    uint64_t seed = state_locked(NULL, 0)->seed;
    pthread_mutex_unlock(&gen_lock);
    return PyLong_FromUnsignedLongLong(seed);
}

static PyObject *
default_generator(PyObject *m, PyObject *arg)
{
    pygpu_device dev;
    if (pygpu_parse_device(arg, &dev) < 0 || pygpu_device_resolve(&dev) < 0) {
        return NULL;
    }
    int slot = slot_of(dev);
    if (slot < 0) {
        return NULL;
    }
    return generator_new_for(dev, slot);
}

PyMethodDef pygpu_random_functions[] = {
    {"manual_seed", manual_seed, METH_O,
     "manual_seed($module, seed, /)\n--\n\n"
     "Seed the generators of the CPU and of every CUDA device; returns\n"
     "the CPU's default generator."},
    {"seed", seed_all, METH_NOARGS,
     "seed($module, /)\n--\n\n"
     "Seed every device's generator from the operating system; returns\n"
     "the seed."},
    {"_cuda_manual_seed", FAST(cuda_manual_seed),
     "_cuda_manual_seed($module, seed, device, /)\n--\n\n"
     "Seed one CUDA device's generator (device -1: all of them)."},
    {"initial_seed", initial_seed, METH_NOARGS,
     "initial_seed($module, /)\n--\n\nThe seed of the CPU generator."},
    {"_default_generator", default_generator, METH_O,
     "_default_generator($module, device, /)\n--\n\n"
     "A Generator sharing the default stream of a device."},
    {NULL},
};
