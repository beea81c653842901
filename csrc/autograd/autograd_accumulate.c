/* autograd_accumulate.c - adding a gradient into a leaf's .grad, one pass
 * at a time for a leaf.
 *
 * Backward passes run concurrently (autograd_engine.c), and two of them
 * may reach the same leaf.  Adding into .grad reads and writes it, and a
 * large CPU loop runs without the GIL, so two adds into one leaf at once
 * could lose one of them (as could two passes that both find .grad unset).
 * A pass therefore claims the leaf first: an entry (leaf, thread) in
 * `claims`, made when no other thread holds one for that leaf, and waited
 * for, without the GIL, when one does; the entry goes after the add.  A
 * thread may claim again a leaf it holds (the add may call into Python, a
 * finalizer, which may run a backward of its own).  Like torch's
 * AccumulateGrad mutex, a claim covers the add only: the
 * post-accumulate-grad hooks run after it is given back, so a hook may
 * wait on anything.
 *
 * The claims are the engine's only state shared between passes.  A
 * fork's child has only the thread that forked: the fork handlers hold
 * the claims' mutex across fork() (so the list is whole), and the child
 * keeps only that thread's claims (it may fork from a hook in the middle
 * of a pass), so that nothing in the child waits for a thread it lacks.
 */
#include "autograd/autograd.h"

#include <pthread.h>

typedef struct {
    TensorObject *leaf;   /* borrowed: held by its AccumulateGrad node */
    pthread_t owner;
    int depth;            /* the owner's claims of it, nested */
} claim;

static struct {
    pthread_mutex_t lock; /* never held while waiting for the GIL */
    pthread_cond_t freed; /* a claim was given back */
    claim *items;         /* PyMem_Raw memory: used without the GIL */
    size_t n, cap;
} claims = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .freed = PTHREAD_COND_INITIALIZER,
};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc;

/* ------------------------------------------------------------ claims */

/* The claim of leaf, or NULL; under claims.lock. */
static claim *
find_locked(const TensorObject *leaf)
{
    for (size_t i = 0; i < claims.n; i++) {
        if (claims.items[i].leaf == leaf) {
            return &claims.items[i];
        }
    }
    return NULL;
}

/* A new claim of leaf by this thread; under claims.lock.  0, or -1 when
 * out of memory (no exception: the GIL may not be held). */
static int
add_locked(TensorObject *leaf)
{
    if (claims.n == claims.cap) {
        size_t cap = claims.cap ? 2 * claims.cap : 16;
        claim *items = PyMem_RawRealloc(claims.items, cap * sizeof(*items));
        if (items == NULL) {
            return -1;
        }
        claims.items = items;
        claims.cap = cap;
    }
    claims.items[claims.n++] = (claim){leaf, pthread_self(), 1};
    return 0;
}

/* Claims leaf for this thread, waiting without the GIL while another
 * thread holds it.  0 or -1 with an exception. */
static int
claim_leaf(TensorObject *leaf)
{
    int rc = 0, waited = 0;
    pthread_mutex_lock(&claims.lock);
    claim *c = find_locked(leaf);
    if (c != NULL && pthread_equal(c->owner, pthread_self())) {
        c->depth++;
    }
    else if (c == NULL) {
        rc = add_locked(leaf);
    }
    else {
        waited = 1;
    }
    pthread_mutex_unlock(&claims.lock);
    if (waited) {
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&claims.lock);
        while (find_locked(leaf) != NULL) {
            pthread_cond_wait(&claims.freed, &claims.lock);
        }
        rc = add_locked(leaf);
        pthread_mutex_unlock(&claims.lock);
        Py_END_ALLOW_THREADS
    }
    if (rc < 0) {
        pygpu_raise_no_memory("a claim on a leaf's .grad", 0);
    }
    return rc;
}

static void
release_leaf(TensorObject *leaf)
{
    pthread_mutex_lock(&claims.lock);
    claim *c = find_locked(leaf);
    if (c != NULL && --c->depth == 0) {
        *c = claims.items[--claims.n];
        pthread_cond_broadcast(&claims.freed);
    }
    pthread_mutex_unlock(&claims.lock);
}

/* ------------------------------------------------------------- fork */

static void
before_fork(void)
{
    pthread_mutex_lock(&claims.lock);
}

static void
after_fork_parent(void)
{
    pthread_mutex_unlock(&claims.lock);
}

/* The other threads' claims go: their threads are not in the child. */
static void
after_fork_child(void)
{
    pthread_cond_init(&claims.freed, NULL); /* its waiters are gone */
    size_t kept = 0;
    for (size_t i = 0; i < claims.n; i++) {
        if (pthread_equal(claims.items[i].owner, pthread_self())) {
            claims.items[kept++] = claims.items[i];
        }
    }
    claims.n = kept;
    pthread_mutex_unlock(&claims.lock); /* this thread's, since before_fork */
}

static void
register_atfork(void)
{
    atfork_rc = pthread_atfork(before_fork, after_fork_parent,
                               after_fork_child);
}

int
pygpu_autograd_engine_init(void)
{
    pthread_once(&atfork_once, register_atfork);
    if (atfork_rc != 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "autograd: pthread_atfork failed (error %d)",
                     atfork_rc);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the add */

TensorObject *
pygpu_ag_own_copy(TensorObject *g)
{
    if (Py_REFCNT(g) == 1 && g->shared == NULL && pygpu_is_contiguous(g)) {
        return (TensorObject *)Py_NewRef(g);
    }
    TensorObject *c = pygpu_tensor_empty(g->ndim, g->shape, g->dtype,
                                         g->device);
    if (c != NULL && pygpu_tensor_copy_into(c, g) < 0) {
        Py_CLEAR(c);
    }
    return c;
}

/* leaf.grad += g (torch adds in place once there is a .grad). */
static int
add_to_grad(TensorObject *leaf, TensorObject *g)
{
    if (leaf->grad == NULL) {
        TensorObject *c = pygpu_ag_own_copy(g);
        if (c == NULL) {
            return -1;
        }
        Py_XSETREF(leaf->grad, (PyObject *)c);
        return 0;
    }
    PyObject *grad = Py_NewRef(leaf->grad); /* the add may call out */
    PyObject *r = pygpu_op_binary(PYGPU_ADD, grad, (PyObject *)g,
                                  (TensorObject *)grad);
    Py_DECREF(grad);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

int
pygpu_ag_accumulate(TensorObject *leaf, TensorObject *g)
{
    if (claim_leaf(leaf) < 0) {
        return -1;
    }
    int rc = add_to_grad(leaf, g);
    release_leaf(leaf);
    if (rc < 0) {
        return -1;
    }
    return pygpu_ag_run_post_hooks(leaf);
}
