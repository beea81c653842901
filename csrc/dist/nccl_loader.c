/* nccl_loader.c - NCCL found and loaded at run time (dlopen), its
 * functions resolved once into a table, why it could not be loaded kept
 * for is_nccl_available(), and NCCL's errors turned into exceptions.
 *
 * Where it is looked for, in order: PYGPU_NCCL_LIBRARY alone when set;
 * otherwise where every CUDA library is (cuda/cuda_libs.h: pip's
 * nvidia/nccl/lib next to pygpu, the dynamic loader's search, CUDA_HOME),
 * then the paths Python hands to _nccl_load (pip's NCCL wheels elsewhere
 * on sys.path). */
#include "dist/nccl_api.h"
#include "dist/nccl_docs.h"
#include "cuda/cuda_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NCCL_SONAME "libnccl.so.2"
#define MAX_CANDIDATES 16

/* Written under `lock`; once `loaded` is set the table is read-only. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pygpu_nccl_api the_api;
static int loaded = 0;
static int attempted = 0;
static char load_error[2048];

void
pygpu_nccl_version_split(int code, int *major, int *minor, int *patch)
{
    /* NCCL_VERSION: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z
     * after. */
    if (code < 10000) {
        *major = code / 1000;
        *minor = (code % 1000) / 100;
    }
    else {
        *major = code / 10000;
        *minor = (code % 10000) / 100;
    }
    *patch = code % 100;
}

int
pygpu_nccl_at_least(const pygpu_nccl_api *api, int major, int minor)
{
    int have_major, have_minor, patch;

    pygpu_nccl_version_split(api->version, &have_major, &have_minor, &patch);
    return have_major > major || (have_major == major && have_minor >= minor);
}

static void
append_error(const char *fmt, const char *a, const char *b)
{
    size_t used = strlen(load_error);
    if (used + 1 < sizeof(load_error)) {
        snprintf(load_error + used, sizeof(load_error) - used, fmt, a, b);
    }
}

/* Load `path` into the_api: 1 on success, 0 with the reason appended. */
static int
try_load(const char *path)
{
    pygpu_nccl_api api;
    const char *missing = NULL;
    void *h;

    memset(&api, 0, sizeof(api));
    (void)dlerror();
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        /* glibc names the file in its reason. */
        append_error("; %s%s", why != NULL ? "" : path,
                     why != NULL ? why : ": dlopen failed");
        return 0;
    }
#define RESOLVE(name)                                                        \
    api.name = (__typeof__(api.name))dlsym(h, #name);                        \
    if (api.name == NULL && missing == NULL) {                               \
        missing = #name;                                                     \
    }
    PYGPU_NCCL_REQUIRED(RESOLVE)
#undef RESOLVE
#define RESOLVE_OPTIONAL(name)                                               \
    api.name = (__typeof__(api.name))dlsym(h, #name);
    PYGPU_NCCL_OPTIONAL(RESOLVE_OPTIONAL)
#undef RESOLVE_OPTIONAL
    if (missing != NULL) {
        append_error("; %s: has no %s (NCCL 2.7 or later is needed)", path,
                     missing);
        dlclose(h);
        return 0;
    }
    if (api.ncclGetVersion(&api.version) != ncclSuccess) {
        append_error("; %s: %s failed", path, "ncclGetVersion");
        dlclose(h);
        return 0;
    }
    snprintf(api.path, sizeof(api.path), "%s", path);
    the_api = api;  /* the handle stays open for the process's life */
    loaded = 1;
    load_error[0] = '\0';
    return 1;
}

/* One attempt over the candidates, under `lock`. */
static void
load_locked(const char *const *extra, int n_extra)
{
    static const char *const pip_dirs[] = {"nccl"};
    pygpu_lib_candidates c;
    const char *env = getenv("PYGPU_NCCL_LIBRARY");

    attempted = 1;
    if (loaded) {
        return;
    }
    load_error[0] = '\0';
    if (env != NULL && env[0] != '\0') {
        c.n = 0;
        if (strlen(env) < PYGPU_LIB_PATH_MAX) {
            snprintf(c.path[c.n++], PYGPU_LIB_PATH_MAX, "%s", env);
        }
    }
    else {
        pygpu_cuda_lib_candidates(NCCL_SONAME, pip_dirs, 1, &c);
        for (int i = 0; i < n_extra && c.n < PYGPU_LIB_MAX_CANDIDATES; i++) {
            if (strlen(extra[i]) < PYGPU_LIB_PATH_MAX) {
                snprintf(c.path[c.n++], PYGPU_LIB_PATH_MAX, "%s", extra[i]);
            }
        }
    }
    for (int i = 0; i < c.n; i++) {
        if (try_load(c.path[i])) {
            return;
        }
    }
    /* Drop the leading "; " of the first reason. */
    if (load_error[0] != '\0') {
        memmove(load_error, load_error + 2, strlen(load_error + 2) + 1);
    }
    else {
        snprintf(load_error, sizeof(load_error), "%s was not found",
                 NCCL_SONAME);
    }
}

const pygpu_nccl_api *
pygpu_nccl_api_get(void)
{
    const pygpu_nccl_api *api = NULL;
    char why[sizeof(load_error)];

    pthread_mutex_lock(&lock);
    if (!attempted) {
        load_locked(NULL, 0);
    }
    if (loaded) {
        api = &the_api;
    }
    else {
        memcpy(why, load_error, sizeof(why));
    }
    pthread_mutex_unlock(&lock);
    if (api == NULL) {
        PyErr_Format(PyExc_RuntimeError, "NCCL is not available: %s", why);
    }
    return api;
}

int
pygpu_nccl_raise(const pygpu_nccl_api *api, ncclComm_t comm,
                 ncclResult_t rc, const char *call)
{
    int major, minor, patch;
    const char *last = NULL;

    pygpu_nccl_version_split(api->version, &major, &minor, &patch);
#if PYGPU_NCCL_HAS_LAST_ERROR
    if (api->ncclGetLastError != NULL) {
        last = api->ncclGetLastError(comm);
    }
#endif
    PyErr_Format(PyExc_RuntimeError,
                 "NCCL error in %s: %s (%d), NCCL version %d.%d.%d%s%s", call,
                 api->ncclGetErrorString(rc), (int)rc, major, minor, patch,
                 last != NULL && last[0] != '\0' ? "; last error: " : "",
                 last != NULL ? last : "");
    return -1;
}

/* ------------------------------------------------------ module functions */

/* None when loaded, else the reason as a str. */
static PyObject *
state_py(void)
{
    char why[sizeof(load_error)];
    int ok;

    pthread_mutex_lock(&lock);
    ok = loaded;
    memcpy(why, load_error, sizeof(why));
    pthread_mutex_unlock(&lock);
    if (ok) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(why);
}

static PyObject *
nccl_load_py(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    const char *paths[MAX_CANDIDATES];
    PyObject *seq = NULL, *result = NULL;
    Py_ssize_t n = 0;

    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError,
                     "_nccl_load() takes at most 1 argument (%zd given)",
                     nargs);
        goto fail;
    }
    if (nargs == 1) {
        if (PyUnicode_Check(args[0]) || PyBytes_Check(args[0])) {
            PyErr_SetString(PyExc_TypeError,
                            "_nccl_load(): paths must be a sequence of str, "
                            "not a single str");
            goto fail;
        }
        seq = PySequence_Fast(args[0], "_nccl_load(): paths must be a "
                                       "sequence of str");
        if (seq == NULL) {
            goto fail;
        }
        n = PySequence_Fast_GET_SIZE(seq);
        if (n > MAX_CANDIDATES - 2) {
            n = MAX_CANDIDATES - 2;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyUnicode_Check(item)) {
                PyErr_Format(PyExc_TypeError,
                             "_nccl_load(): paths must be a sequence of "
                             "str, found %.100s", Py_TYPE(item)->tp_name);
                goto fail;
            }
            paths[i] = PyUnicode_AsUTF8(item);
            if (paths[i] == NULL) {
                goto fail;
            }
        }
    }
    pthread_mutex_lock(&lock);
    load_locked(paths, (int)n);
    pthread_mutex_unlock(&lock);
    result = state_py();
fail:
    Py_XDECREF(seq);
    return result;
}

static PyObject *
nccl_load_error_py(PyObject *m, PyObject *noargs)
{
    const pygpu_nccl_api *api = pygpu_nccl_api_get();
    if (api == NULL) {
        PyErr_Clear();
    }
    return state_py();
}

static PyObject *
nccl_version_py(PyObject *m, PyObject *noargs)
{
    const pygpu_nccl_api *api = pygpu_nccl_api_get();
    int major, minor, patch;

    if (api == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    pygpu_nccl_version_split(api->version, &major, &minor, &patch);
    return Py_BuildValue("(iii)", major, minor, patch);
}

static PyObject *
nccl_unique_id_py(PyObject *m, PyObject *noargs)
{
    const pygpu_nccl_api *api = pygpu_nccl_api_get();
    ncclUniqueId id;
    ncclResult_t rc;

    if (api == NULL) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = api->ncclGetUniqueId(&id);
    Py_END_ALLOW_THREADS
    if (rc != ncclSuccess) {
        pygpu_nccl_raise(api, NULL, rc, "ncclGetUniqueId");
        return NULL;
    }
    return PyBytes_FromStringAndSize(id.internal, sizeof(id.internal));
}

static PyObject *
nccl_capabilities_py(PyObject *m, PyObject *noargs)
{
    const pygpu_nccl_api *api = pygpu_nccl_api_get();

    return api != NULL ? pygpu_nccl_capabilities(api) : NULL;
}

static PyObject *
nccl_is_built_py(PyObject *m, PyObject *noargs)
{
    Py_RETURN_TRUE;
}

PyMethodDef pygpu_nccl_module_functions[] = {
    {"_nccl_is_built", nccl_is_built_py, METH_NOARGS,
     PYGPU_DOC_NCCL_IS_BUILT},
    {"_nccl_version", nccl_version_py, METH_NOARGS, PYGPU_DOC_NCCL_VERSION},
    {"_nccl_capabilities", nccl_capabilities_py, METH_NOARGS,
     PYGPU_DOC_NCCL_CAPABILITIES},
    {"_nccl_load_error", nccl_load_error_py, METH_NOARGS,
     PYGPU_DOC_NCCL_LOAD_ERROR},
    {"_nccl_load", FAST(nccl_load_py), PYGPU_DOC_NCCL_LOAD},
    {"_nccl_unique_id", nccl_unique_id_py, METH_NOARGS,
     PYGPU_DOC_NCCL_UNIQUE_ID},
    {NULL},
};
