/* cpu_blas.c - finds the BLAS that NumPy loaded and calls its gemm.
 *
 * NumPy's wheels (2.x) carry OpenBLAS as numpy.libs/libscipy_openblas64_-*.so
 * with a 64-bit integer interface and prefixed names
 * (scipy_cblas_sgemm64_, scipy_openblas_set_num_threads64_); other builds
 * link a plain OpenBLAS (cblas_sgemm, openblas_set_num_threads, 32-bit
 * integers) or an openblas64_ one (cblas_sgemm64_).  On first use the
 * objects loaded in the process (dl_iterate_phdr) whose file name holds
 * "blas" are opened again with RTLD_NOLOAD (nothing new is loaded) and
 * searched for those names, in that order.  Using the library NumPy
 * already holds adds no dependency and no second copy of OpenBLAS's
 * buffers and threads in the process.
 *
 * Threads: pygpu's products run each BLAS call on one thread and split
 * large products over pygpu's own pool (cpu_gemm.c), so
 * pygpu.set_num_threads governs them and the pool and the BLAS's threads
 * never run at once.  OpenBLAS's thread count is process-wide (its
 * openblas_set_num_threads_local, where exported, sets the same global in
 * a pthreads build), so it is set to 1 while pygpu's products run and the
 * program's own count is put back after the last one ends: NumPy's
 * products elsewhere keep their threads, except ones that run in another
 * Python thread at that very time, which run on one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_blas.h"
#include "cpu/cpu_parallel.h"

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float,
                           const float *, int64_t, const float *, int64_t,
                           float, float *, int64_t);
typedef void (*dgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, double,
                           const double *, int64_t, const double *, int64_t,
                           double, double *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float,
                           const float *, int, const float *, int, float,
                           float *, int);
typedef void (*dgemm32_fn)(int, int, int, int, int, int, double,
                           const double *, int, const double *, int, double,
                           double *, int);

/* The names of one interface: prefix + name + suffix. */
static const struct {
    const char *prefix, *suffix;
    int int_bits;
} interfaces[] = {
    {"scipy_", "64_", 64}, /* NumPy's and SciPy's wheels */
    {"", "64_", 64},       /* openblas64_ */
    {"scipy_", "", 32},    /* scipy-openblas32 */
    {"", "", 32},          /* a plain OpenBLAS */
};

/* Written once, under pthread_once, before anyone reads them. */
static struct {
    void *handle;
    char path[PATH_MAX];
    char sgemm_name[64];
    int int_bits;
    void *sgemm, *dgemm;
    char core[32]; /* openblas_get_corename's answer, or "" */
    void (*set_threads)(int);
    int (*get_threads)(void);
} lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
/* 1: direct calls; PYGPU_CPU_BLAS=numpy or _blas_enable(False): 0. */
static atomic_int enabled = 1;

/* The thread-count bracket (pygpu_cpu_blas_enter / leave): products
 * running, the program's count while they run; in a child forked while
 * they ran, the count to put back at the next product (0: none). */
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static int guard_depth, guard_saved, guard_child;
/* Threads whose products warm_up has run (0 after load or a fork). */
static int guard_warm;
/* The program's own OpenBLAS thread count at that warm-up. */
static int guard_warm_lib;

static void *
sym(void *h, const char *prefix, const char *name, const char *suffix,
    char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", prefix, name, suffix);
    return dlsym(h, buf);
}

/* Takes the library at path if it exports one interface's gemm (with the
 * thread setter and getter: without them its threads could not be kept
 * off while pygpu's pool runs).  1 when taken. */
static int
try_library(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    char name[64];
    if (h == NULL) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(interfaces) / sizeof(interfaces[0]);
         i++) {
        const char *p = interfaces[i].prefix, *s = interfaces[i].suffix;
        void *sg = sym(h, p, "cblas_sgemm", s, name, sizeof(name));
        void *dg = sym(h, p, "cblas_dgemm", s, name, sizeof(name));
        void *set = sym(h, p, "openblas_set_num_threads", s, name,
                        sizeof(name));
        void *get = sym(h, p, "openblas_get_num_threads", s, name,
                        sizeof(name));
        if (sg && dg && set && get) {
            lib.handle = h; /* kept open: the library stays */
            lib.sgemm = sg;
            lib.dgemm = dg;
            *(void **)&lib.set_threads = set;
            *(void **)&lib.get_threads = get;
            lib.int_bits = interfaces[i].int_bits;
            snprintf(lib.sgemm_name, sizeof(lib.sgemm_name),
                     "%scblas_sgemm%s", p, s);
            const char *(*core)(void) = NULL;
            *(void **)&core =
                sym(h, p, "openblas_get_corename", s, name, sizeof(name));
            snprintf(lib.core, sizeof(lib.core), "%s",
                     core != NULL && core() != NULL ? core() : "");
            if (realpath(path, lib.path) == NULL) {
                snprintf(lib.path, sizeof(lib.path), "%s", path);
            }
            return 1;
        }
    }
    dlclose(h);
    return 0;
}

/* The loaded objects whose file name holds "blas", collected by visit
 * (opening them again inside dl_iterate_phdr would take the loader's lock
 * in its own callback). */
#define MAX_CANDIDATES 8
typedef struct {
    int n;
    char path[MAX_CANDIDATES][PATH_MAX];
} candidates;

static int
visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    candidates *c = data;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    if (strstr(base, "blas") != NULL && c->n < MAX_CANDIDATES) {
        snprintf(c->path[c->n++], PATH_MAX, "%s", info->dlpi_name);
    }
    return 0;
}

/* Those whose name holds "openblas" first (NumPy's), then the others. */
static void
find_library(void)
{
    candidates *c = calloc(1, sizeof(candidates));
    if (c == NULL) {
        return;
    }
    dl_iterate_phdr(visit, c);
    for (int pass = 0; pass < 2 && lib.sgemm == NULL; pass++) {
        for (int i = 0; i < c->n && lib.sgemm == NULL; i++) {
            const char *base = strrchr(c->path[i], '/');
            int named = strstr(base ? base : c->path[i], "openblas") != NULL;
            if (named == (pass == 0)) {
                try_library(c->path[i]);
            }
        }
    }
    free(c);
}

/* A fork waits for the bracket's lock; the child's products (the
 * parent's were not copied) put the parent's count back. */
static void
before_fork(void)
{
    pthread_mutex_lock(&guard_lock);
}

static void
after_fork_parent(void)
{
    guard_warm = 0; /* OpenBLAS takes new buffers in the parent too */
    pthread_mutex_unlock(&guard_lock);
}

static void
after_fork_child(void)
{
    pthread_mutex_init(&guard_lock, NULL);
    guard_warm = 0;
    if (guard_depth > 0) {
        guard_child = guard_saved;
        guard_depth = 0;
    }
}

/* One float32 product of 512 x 32 by 32 x 512 zeros on each of pygpu's
 * threads at once, the first time pygpu's products need the BLAS, again
 * when pygpu's thread count has grown or the program's OpenBLAS thread
 * count has changed (OpenBLAS frees and takes its threads' buffers from
 * the same table as its calls' when that count changes, so pygpu's calls
 * may be handed other buffers), and after a fork (parent and child).
 *
 * OpenBLAS's single-threaded sgemm (Haswell kernels, NumPy's wheel) ran
 * 3-4x slower with each new buffer it took (a new process, both sides of
 * a fork, a second thread's product running at the same time, which takes
 * a buffer of its own) until a product with many columns of the result
 * (col-major rows: 330 or more) had used that buffer.  On the 2-core test
 * machine: a 256^3 product took 3.3-3.5 ms before and 0.8-0.9 ms after,
 * in the same process; a 32 x 784 x 256 linear layer 580 us against 400;
 * two 128 x 256 x 256 products at once on two threads 1.7 ms each
 * against 0.5; pygpu's 256^3 matmul on two threads 1.75 ms, twice its
 * time on one.  Products of 300^3 or 400 x 8 x 400 did not end that
 * state.  The cause was not found: the time is spent inside the kernel,
 * and neither page faults nor huge pages differed.  OpenBLAS's own
 * threads' buffers did not show it.  Each thread waits up to 50 ms for
 * the others before its product, so that the products overlap and each
 * takes a buffer of its own.  The cost: 1-2 ms, once. */
typedef struct {
    atomic_int arrived;
    int n;
} warm_job;

static void
warm_task(void *ctx, int64_t task)
{
    (void)task;
    warm_job *w = ctx;
    enum { W_ROWS = 512, W_K = 32 };
    struct timespec t0, t;
    atomic_fetch_add(&w->arrived, 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&w->arrived) < w->n) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) >
            50000000L) {
            break;
        }
        sched_yield();
    }
    float *buf = calloc(2 * W_ROWS * W_K + W_ROWS * W_ROWS, sizeof(float));
    if (buf == NULL) {
        return;
    }
    pygpu_cpu_blas_gemm(PYGPU_FLOAT32, 0, 0, W_ROWS, W_ROWS, W_K, buf, W_K,
                        buf + W_ROWS * W_K, W_ROWS, 0,
                        buf + 2 * W_ROWS * W_K, W_ROWS);
    free(buf);
}

/* Under guard_lock, with the BLAS on one thread. */
static void
warm_up(int nthreads)
{
    warm_job w = {.n = nthreads};
    atomic_init(&w.arrived, 0);
    pygpu_parallel_run(nthreads, warm_task, &w);
}

static void
load(void)
{
    const char *env = getenv("PYGPU_CPU_BLAS");
    if (env != NULL && strcmp(env, "numpy") == 0) {
        atomic_store(&enabled, 0);
    }
    find_library();
    if (lib.sgemm != NULL) {
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    }
}

int
pygpu_cpu_blas_ready(void)
{
    pthread_once(&load_once, load);
    return lib.sgemm != NULL && atomic_load_explicit(&enabled,
                                                     memory_order_relaxed);
}

int
pygpu_cpu_blas_haswell(void)
{
    return strcmp(lib.core, "Haswell") == 0 || strcmp(lib.core, "Zen") == 0;
}

int
pygpu_cpu_blas_fits(int64_t v)
{
    return lib.int_bits == 64 || v <= INT_MAX;
}

void
pygpu_cpu_blas_enter(void)
{
    pthread_mutex_lock(&guard_lock);
    if (guard_depth++ == 0) {
        guard_saved = guard_child > 0 ? guard_child : lib.get_threads();
        guard_child = 0;
        if (guard_saved != 1) {
            lib.set_threads(1);
        }
        int nthreads = pygpu_get_num_threads();
        if (guard_warm < nthreads || guard_warm_lib != guard_saved) {
            guard_warm = nthreads;
            guard_warm_lib = guard_saved;
            warm_up(nthreads);
        }
    }
    pthread_mutex_unlock(&guard_lock);
}

void
pygpu_cpu_blas_leave(void)
{
    pthread_mutex_lock(&guard_lock);
    if (--guard_depth == 0 && guard_saved != 1) {
        lib.set_threads(guard_saved);
    }
    pthread_mutex_unlock(&guard_lock);
}

void
pygpu_cpu_blas_gemm(int dtype, int ta, int tb, int64_t m, int64_t n,
                    int64_t k, const void *a, int64_t lda, const void *b,
                    int64_t ldb, int beta_one, void *c, int64_t ldc)
{
    int oa = ta ? TRANS : NO_TRANS, ob = tb ? TRANS : NO_TRANS;
    if (dtype == PYGPU_FLOAT32 && lib.int_bits == 64) {
        ((sgemm64_fn)lib.sgemm)(ROW_MAJOR, oa, ob, m, n, k, 1.0f, a, lda, b,
                                ldb, beta_one ? 1.0f : 0.0f, c, ldc);
    }
    else if (dtype == PYGPU_FLOAT32) {
        ((sgemm32_fn)lib.sgemm)(ROW_MAJOR, oa, ob, (int)m, (int)n, (int)k,
                                1.0f, a, (int)lda, b, (int)ldb,
                                beta_one ? 1.0f : 0.0f, c, (int)ldc);
    }
    else if (lib.int_bits == 64) {
        ((dgemm64_fn)lib.dgemm)(ROW_MAJOR, oa, ob, m, n, k, 1.0, a, lda, b,
                                ldb, beta_one ? 1.0 : 0.0, c, ldc);
    }
    else {
        ((dgemm32_fn)lib.dgemm)(ROW_MAJOR, oa, ob, (int)m, (int)n, (int)k,
                                1.0, a, (int)lda, b, (int)ldb,
                                beta_one ? 1.0 : 0.0, c, (int)ldc);
    }
}

/* ------------------------------------------------------ module functions */

static PyObject *
blas_info(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    int on = pygpu_cpu_blas_ready();
    int found = lib.sgemm != NULL, lib_threads = 0;
    if (found) {
        /* the program's count, not the 1 of a product running now */
        pthread_mutex_lock(&guard_lock);
        lib_threads = guard_depth > 0  ? guard_saved
                      : guard_child > 0 ? guard_child
                                        : lib.get_threads();
        pthread_mutex_unlock(&guard_lock);
    }
    return Py_BuildValue(
        "{s:O,s:s,s:s,s:s,s:i,s:i,s:i,s:i}", "enabled",
        on ? Py_True : Py_False, "library",
        found ? lib.path : "", "sgemm", found ? lib.sgemm_name : "",
        "core", found ? lib.core : "",
        "int_bits", found ? lib.int_bits : 0, "threads",
        pygpu_get_num_threads(), "threads_per_call", 1, "library_threads",
        lib_threads);
}

static PyObject *
blas_enable(PyObject *m, PyObject *arg)
{
    (void)m;
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    pthread_once(&load_once, load);
    return PyBool_FromLong(atomic_exchange(&enabled, on));
}

PyMethodDef pygpu_cpu_blas_functions[] = {
    {"_blas_info", blas_info, METH_NOARGS,
     "_blas_info($module, /)\n--\n\n"
     "The CPU products' BLAS: enabled (direct calls in use), library (its\n"
     "file, '' when none was found), sgemm (the symbol called), int_bits\n"
     "(32 or 64), threads (pygpu's, which the products split over),\n"
     "threads_per_call (the BLAS's own, in pygpu's calls) and\n"
     "library_threads (the BLAS's count for the rest of the program)."},
    {"_blas_enable", blas_enable, METH_O,
     "_blas_enable($module, flag, /)\n--\n\n"
     "Test aid: with False the CPU products go through NumPy's matmul\n"
     "(as with PYGPU_CPU_BLAS=numpy); returns the previous setting."},
    {NULL, NULL, 0, NULL},
};
