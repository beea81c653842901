/* nccl_comm.c - the NcclComm type: creating a communicator (nonblocking,
 * with a deadline, where the header and the library allow it), its state
 * and errors, group calls, abort and destroy; and the registration of the
 * NCCL layer with the module.  The collectives are in nccl_ops.c. */
#include "dist/nccl_api.h"
#include "cuda/cuda_runtime.h"
#include "dist/nccl_docs.h"

#include <math.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Poll comm until it is no longer ncclInProgress or `timeout` seconds
 * (<= 0: none) have passed; short sleeps growing to a millisecond. */
static ncclResult_t
poll_comm(const pygpu_nccl_api *api, ncclComm_t comm, double timeout)
{
    double deadline = timeout > 0 ? now_s() + timeout : INFINITY;
    long pause_ns = 1000;
    ncclResult_t state = ncclInProgress;

    for (;;) {
        ncclResult_t rc = api->ncclCommGetAsyncError(comm, &state);
        if (rc != ncclSuccess) {
            return rc;
        }
        if (state != ncclInProgress || now_s() > deadline) {
            return state;
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        pause_ns = pause_ns < 1000000 ? pause_ns * 2 : 1000000;
    }
}

ncclResult_t
pygpu_nccl_settle(const NcclCommObject *self, ncclResult_t rc)
{
    if (rc != ncclInProgress) {
        return rc;
    }
    return poll_comm(self->api, self->comm, self->timeout);
}

int
pygpu_nccl_check_open(NcclCommObject *self, const char *fname)
{
    if (self->comm == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): the NCCL communicator has been destroyed or "
                     "aborted", fname);
        return -1;
    }
    if (self->busy) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): the NCCL communicator is in use by another "
                     "thread", fname);
        return -1;
    }
    return 0;
}

int
pygpu_nccl_check(NcclCommObject *self, ncclResult_t rc, const char *call)
{
    if (rc == ncclSuccess) {
        return 0;
    }
    /* Only a refused argument leaves the communicator as it was; after
     * any other failure, or a call still queued at the deadline, a peer
     * may be gone and finalizing would wait for it. */
    if (rc != ncclInvalidArgument && rc != ncclInvalidUsage) {
        self->failed = 1;
    }
    if (rc == ncclInProgress) {
        PyErr_Format(PyExc_RuntimeError,
                     "NCCL timeout: %s did not complete within %g s on rank "
                     "%d of %d", call, self->timeout, self->rank,
                     self->world_size);
        return -1;
    }
    return pygpu_nccl_raise(self->api, self->comm, rc, call);
}

/* ------------------------------------------------------------- creation */

/* ncclCommInitRank(Config) on the current device, without the GIL. */
static ncclResult_t
init_comm(const pygpu_nccl_api *api, ncclComm_t *comm, int world_size,
          ncclUniqueId id, int rank, double timeout, const char **call)
{
#if PYGPU_NCCL_HAS_CONFIG
    if (timeout > 0 && api->ncclCommInitRankConfig != NULL &&
        api->version >= NCCL_VERSION(2, 14, 0)) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        ncclResult_t rc;
        config.blocking = 0;
        *call = "ncclCommInitRankConfig";
        rc = api->ncclCommInitRankConfig(comm, world_size, id, rank,
                                         &config);
        if (rc == ncclInProgress && *comm != NULL) {
            rc = poll_comm(api, *comm, timeout);
        }
        return rc;
    }
#endif
    *call = "ncclCommInitRank";
    return api->ncclCommInitRank(comm, world_size, id, rank);
}

static PyObject *
NcclComm_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"unique_id", "world_size", "rank",
                             "device_index", "timeout", NULL};
    const char *id_bytes = NULL, *call = NULL;
    Py_ssize_t id_len = 0;
    int world_size, rank, device_index, prev;
    PyObject *timeout_obj = Py_None;
    double timeout = 0.0;
    NcclCommObject *self = NULL;
    ncclComm_t comm = NULL;
    ncclUniqueId id;
    ncclResult_t rc;
    pygpu_device dev;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y#iii|O:NcclComm", kwlist,
                                     &id_bytes, &id_len, &world_size, &rank,
                                     &device_index, &timeout_obj)) {
        goto fail;
    }
    if (id_len != (Py_ssize_t)sizeof(id.internal)) {
        PyErr_Format(PyExc_ValueError,
                     "NcclComm(): unique_id must be %d bytes (from "
                     "_nccl_unique_id()), got %zd", (int)sizeof(id.internal),
                     id_len);
        goto fail;
    }
    if (world_size < 1) {
        PyErr_Format(PyExc_ValueError,
                     "NcclComm(): world_size must be positive, got %d",
                     world_size);
        goto fail;
    }
    if (rank < 0 || rank >= world_size) {
        PyErr_Format(PyExc_ValueError,
                     "NcclComm(): rank %d is out of range for world_size %d",
                     rank, world_size);
        goto fail;
    }
    if (device_index < 0) {
        PyErr_Format(PyExc_ValueError,
                     "NcclComm(): device_index must be >= 0, got %d",
                     device_index);
        goto fail;
    }
    if (timeout_obj != Py_None) {
        timeout = PyFloat_AsDouble(timeout_obj);
        if (timeout == -1.0 && PyErr_Occurred()) {
            goto fail;
        }
        if (!(timeout >= 0.0)) {
            PyErr_Format(PyExc_ValueError,
                         "NcclComm(): timeout must be None or >= 0 seconds, "
                         "got %R", timeout_obj);
            goto fail;
        }
    }
    const pygpu_nccl_api *api = pygpu_nccl_api_get();
    if (api == NULL) {
        goto fail;
    }
    dev.type = PYGPU_CUDA;
    dev.index = device_index;
    if (pygpu_device_resolve(&dev) < 0) {
        goto fail;
    }
    memcpy(id.internal, id_bytes, sizeof(id.internal));
    self = (NcclCommObject *)tp->tp_alloc(tp, 0);
    if (self == NULL) {
        goto fail;
    }
    self->api = api;
    self->pid = (long)getpid();
    self->world_size = world_size;
    self->rank = rank;
    self->device = device_index;
    self->timeout = timeout;
    prev = pygpu_cuda_device_guard(device_index);
    if (prev < 0) {
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = init_comm(api, &comm, world_size, id, rank, timeout, &call);
    if (rc == ncclInProgress && comm != NULL) {
        /* Gave up waiting: nothing of it may be used. */
        api->ncclCommAbort(comm);
        comm = NULL;
    }
    Py_END_ALLOW_THREADS
    pygpu_cuda_device_restore(device_index, prev);
    if (rc == ncclInProgress) {
        PyErr_Format(PyExc_RuntimeError,
                     "NCCL timeout: the communicator of rank %d of %d on "
                     "cuda:%d was not set up within %g s (did every rank "
                     "join with the same unique id?)", rank, world_size,
                     device_index, timeout);
        goto fail;
    }
    if (rc != ncclSuccess) {
        pygpu_nccl_raise(api, comm, rc, call);
        if (comm != NULL) {
            api->ncclCommAbort(comm);
        }
        goto fail;
    }
    self->comm = comm;
    return (PyObject *)self;
fail:
    Py_XDECREF(self);
    return NULL;
}

/* Release self's communicator: abort it when asked, when a call on it
 * failed (self->failed) or when it reports an error, since finalizing
 * waits for every peer's share of the work and a peer may be gone; else
 * finalize and destroy it.  Without the GIL; calls no Python API. */
static ncclResult_t
close_comm(NcclCommObject *self, int abort, const char **call)
{
    const pygpu_nccl_api *api = self->api;
    ncclComm_t comm = self->comm;
    ncclResult_t state = ncclSuccess, rc;

    self->comm = NULL;
    if (self->failed) {
        abort = 1;
    }
    if (!abort && api->ncclCommGetAsyncError(comm, &state) == ncclSuccess &&
        state != ncclSuccess && state != ncclInProgress) {
        abort = 1;
    }
#if PYGPU_NCCL_HAS_CONFIG
    if (!abort && api->ncclCommFinalize != NULL) {
        *call = "ncclCommFinalize";
        rc = api->ncclCommFinalize(comm);
        if (rc == ncclInProgress) {
            rc = poll_comm(api, comm, self->timeout);
        }
        if (rc != ncclSuccess) {
            api->ncclCommAbort(comm);
            return rc;
        }
    }
#endif
    *call = abort ? "ncclCommAbort" : "ncclCommDestroy";
    rc = abort ? api->ncclCommAbort(comm) : api->ncclCommDestroy(comm);
    return rc == ncclInProgress ? ncclSuccess : rc;
}

/* In a child forked after the communicator was made, it is a copy of the
 * parent's: NCCL's threads, sockets and device memory are the parent's,
 * and finalizing or aborting would join threads the child does not have
 * (which never returns) and free what the parent still uses.  The child
 * only forgets it. */
static int
forked_copy(const NcclCommObject *self)
{
    return self->pid != (long)getpid();
}

static void
NcclComm_dealloc(NcclCommObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    const char *call = NULL;

    if (self->comm != NULL && !forked_copy(self)) {
        Py_BEGIN_ALLOW_THREADS
        (void)close_comm(self, 0, &call);
        Py_END_ALLOW_THREADS
    }
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *
close_py(NcclCommObject *self, int abort)
{
    const char *fname = abort ? "abort" : "destroy";
    const char *call = NULL;
    ncclResult_t rc;
    int prev;

    if (self->comm == NULL) {
        Py_RETURN_NONE;  /* already closed: nothing to do, as in torch */
    }
    if (pygpu_nccl_check_open(self, fname) < 0) {
        return NULL;
    }
    /* In a forked child this refuses in torch's words (see forked_copy). */
    prev = pygpu_cuda_device_guard(self->device);
    if (prev < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = close_comm(self, abort, &call);
    Py_END_ALLOW_THREADS
    pygpu_cuda_device_restore(self->device, prev);
    if (rc != ncclSuccess) {
        pygpu_nccl_raise(self->api, NULL, rc, call);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
NcclComm_abort(NcclCommObject *self, PyObject *noargs)
{
    return close_py(self, 1);
}

static PyObject *
NcclComm_destroy(NcclCommObject *self, PyObject *noargs)
{
    return close_py(self, 0);
}

static PyObject *
NcclComm_async_error(NcclCommObject *self, PyObject *noargs)
{
    ncclResult_t state = ncclSuccess, rc;
    const char *last = NULL;

    if (pygpu_nccl_check_open(self, "async_error") < 0) {
        return NULL;
    }
    rc = self->api->ncclCommGetAsyncError(self->comm, &state);
    if (rc != ncclSuccess) {
        pygpu_nccl_raise(self->api, self->comm, rc, "ncclCommGetAsyncError");
        return NULL;
    }
    if (state == ncclSuccess || state == ncclInProgress) {
        Py_RETURN_NONE;
    }
    self->failed = 1;
#if PYGPU_NCCL_HAS_LAST_ERROR
    if (self->api->ncclGetLastError != NULL) {
        last = self->api->ncclGetLastError(self->comm);
    }
#endif
    return PyUnicode_FromFormat(
        "NCCL asynchronous error on rank %d of %d: %s (%d)%s%s", self->rank,
        self->world_size, self->api->ncclGetErrorString(state), (int)state,
        last != NULL && last[0] != '\0' ? "; last error: " : "",
        last != NULL ? last : "");
}

static PyObject *
NcclComm_group_start(NcclCommObject *self, PyObject *noargs)
{
    ncclResult_t rc;

    if (pygpu_nccl_check_open(self, "group_start") < 0) {
        return NULL;
    }
    rc = self->api->ncclGroupStart();
    if (pygpu_nccl_check(self, rc, "ncclGroupStart") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
NcclComm_group_end(NcclCommObject *self, PyObject *noargs)
{
    ncclResult_t rc;
    int prev;

    if (pygpu_nccl_check_open(self, "group_end") < 0) {
        return NULL;
    }
    prev = pygpu_cuda_device_guard(self->device);
    if (prev < 0) {
        return NULL;
    }
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = pygpu_nccl_settle(self, self->api->ncclGroupEnd());
    Py_END_ALLOW_THREADS
    self->busy = 0;
    pygpu_cuda_device_restore(self->device, prev);
    if (pygpu_nccl_check(self, rc, "ncclGroupEnd") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
NcclComm_get_rank(NcclCommObject *self, void *closure)
{
    return PyLong_FromLong(self->rank);
}

static PyObject *
NcclComm_get_world_size(NcclCommObject *self, void *closure)
{
    return PyLong_FromLong(self->world_size);
}

static PyObject *
NcclComm_get_device(NcclCommObject *self, void *closure)
{
    return PyLong_FromLong(self->device);
}

static PyObject *
NcclComm_get_closed(NcclCommObject *self, void *closure)
{
    return PyBool_FromLong(self->comm == NULL);
}

static PyObject *
NcclComm_repr(NcclCommObject *self)
{
    return PyUnicode_FromFormat("<pygpu._C.NcclComm rank=%d world_size=%d "
                                "device=cuda:%d%s>", self->rank,
                                self->world_size, self->device,
                                self->comm == NULL ? " closed" : "");
}

/* ----------------------------------------------------------- the type */
#define FUNC_NOARGS(name) (PyCFunction)NcclComm_##name, METH_NOARGS
#define FUNC_FASTKW(name) FASTKW(pygpu_nccl_##name)
#define METHOD_ROW(name, KIND, doc) {#name, FUNC_##KIND(name), doc},
static PyMethodDef NcclComm_methods[] = {
    PYGPU_NCCL_COMM_METHODS(METHOD_ROW)
    {NULL},
};
#undef METHOD_ROW

#define GETTER_ROW(name, doc) \
    {#name, (getter)NcclComm_get_##name, NULL, doc, NULL},
static PyGetSetDef NcclComm_getset[] = {
    PYGPU_NCCL_COMM_GETTERS(GETTER_ROW)
    {NULL},
};
#undef GETTER_ROW

static PyType_Slot NcclComm_slots[] = {
    {Py_tp_new, (void *)NcclComm_new},
    {Py_tp_dealloc, (void *)NcclComm_dealloc},
    {Py_tp_repr, (void *)NcclComm_repr},
    {Py_tp_methods, NcclComm_methods},
    {Py_tp_getset, NcclComm_getset},
    {Py_tp_doc, (void *)PYGPU_DOC_NCCL_COMM},
    {0, NULL},
};

PyType_Spec pygpu_nccl_comm_spec = {"pygpu._C.NcclComm",
                                    sizeof(NcclCommObject), 0,
                                    Py_TPFLAGS_DEFAULT, NcclComm_slots};
