/* ops_random.c - the random generators: one Philox4x32-10 stream per
 * device (the CPU and each CUDA device), seeded by manual_seed.  A draw of
 * n numbers takes ceil(n / 4) counters from its device's stream, so the
 * same seed gives the same numbers on the same device; the CPU and CUDA
 * generators make the same uniform numbers for the same (seed, offset). */
#include "ops/ops.h"

#include <pthread.h>

#define MAX_GENERATORS (1 + PYGPU_MAX_DEVICES) /* 0: the CPU; 1 + i: cuda:i */
#define DEFAULT_SEED 67280421310721ULL /* the default torch uses too */

static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER;
static pygpu_philox_state generators[MAX_GENERATORS];
static int generators_ready = 0;

static void
ensure_ready_locked(void)
{
    if (!generators_ready) {
        for (int i = 0; i < MAX_GENERATORS; i++) {
            generators[i].seed = DEFAULT_SEED;
            generators[i].offset = 0;
        }
        generators_ready = 1;
    }
}

static int
slot_of(pygpu_device dev)
{
    return dev.type == PYGPU_CPU ? 0 : 1 + dev.index;
}

/* The state for a draw of n numbers on dev; advances the stream. */
static int
take(pygpu_device dev, int64_t n, pygpu_philox_state *out)
{
    int slot = slot_of(dev);
    if (slot < 0 || slot >= MAX_GENERATORS) {
        PyErr_Format(PyExc_RuntimeError,
                     "pygpu supports at most %d CUDA devices",
                     MAX_GENERATORS - 1);
        return -1;
    }
    pthread_mutex_lock(&gen_lock);
    ensure_ready_locked();
    *out = generators[slot];
    generators[slot].offset += (uint64_t)((n + 3) / 4);
    pthread_mutex_unlock(&gen_lock);
    return 0;
}

int
pygpu_op_random(TensorObject *t, int normal)
{
    int64_t n = pygpu_numel(t->ndim, t->shape);
    pygpu_philox_state st;
    if (n == 0) {
        return 0;
    }
    if (take(t->device, n, &st) < 0) {
        return -1;
    }
    pygpu_kargs k = {.out = t->data, .flag = normal, .numel = n,
                     .philox = st};
    return pygpu_dispatch(PYGPU_K_RANDOM, t->device, t->dtype, &k,
                          normal ? "randn" : "rand");
}

/* Seed slots [first, last) and restart their streams. */
static PyObject *
seed_slots(PyObject *arg, int first, int last)
{
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "seed must be an int, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    /* Any Python int: take its low 64 bits, as torch does for negatives. */
    unsigned long long seed = PyLong_AsUnsignedLongLongMask(arg);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    pthread_mutex_lock(&gen_lock);
    ensure_ready_locked();
    for (int i = first; i < last; i++) {
        generators[i].seed = seed;
        generators[i].offset = 0;
    }
    pthread_mutex_unlock(&gen_lock);
    Py_RETURN_NONE;
}

static PyObject *
manual_seed(PyObject *m, PyObject *arg)
{
    return seed_slots(arg, 0, MAX_GENERATORS);
}

static PyObject *
cuda_manual_seed(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    /* _cuda_manual_seed(seed, device_or_-1) */
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "_cuda_manual_seed(seed, device) takes 2 arguments");
        return NULL;
    }
    long dev = PyLong_AsLong(args[1]);
    if (dev == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (dev < 0) {
        return seed_slots(args[0], 1, MAX_GENERATORS);
    }
    if (dev >= MAX_GENERATORS - 1) {
        PyErr_SetString(PyExc_RuntimeError, "device index out of range");
        return NULL;
    }
    return seed_slots(args[0], 1 + (int)dev, 2 + (int)dev);
}

static PyObject *
initial_seed(PyObject *m, PyObject *noargs)
{
    pthread_mutex_lock(&gen_lock);
    ensure_ready_locked();
    unsigned long long seed = generators[0].seed;
    pthread_mutex_unlock(&gen_lock);
    return PyLong_FromUnsignedLongLong(seed);
}

PyMethodDef pygpu_random_functions[] = {
    {"manual_seed", manual_seed, METH_O,
     "manual_seed($module, seed, /)\n--\n\n"
     "Seed the generators of the CPU and of every CUDA device."},
    {"_cuda_manual_seed", FAST(cuda_manual_seed),
     "_cuda_manual_seed($module, seed, device, /)\n--\n\n"
     "Seed one CUDA device's generator (device -1: all of them)."},
    {"initial_seed", initial_seed, METH_NOARGS,
     "initial_seed($module, /)\n--\n\nThe seed of the CPU generator."},
    {NULL},
};
