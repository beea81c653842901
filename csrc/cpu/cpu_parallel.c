/* cpu_parallel.c - the worker threads of the CPU loops (see cpu_parallel.h).
 *
 * A pool of its own rather than OpenMP: GNU OpenMP's pool hangs in a forked
 * child once the parent has used it, and fork is common in Python
 * (multiprocessing, DataLoader-like workers).  Here fork handlers make the
 * fork wait for a running job, and the child forgets the parent's workers
 * (they were not copied) and starts new ones on its first job.
 *
 * One job at a time: a second thread that asks while a job runs does its
 * tasks alone.  A job is published under `lock` with a new generation
 * number; each worker that sees it open joins (active++), claims tasks
 * until none are left, and leaves (active--).  The caller claims tasks
 * too, then closes the job and waits for the workers that joined: a
 * worker that wakes after the close skips the job, so a slow wake-up
 * never delays the caller past its own work.
 *
 * The tasks are cut into one range per thread (the caller is thread 0,
 * worker i thread i + 1), each with an atomic counter: a thread claims
 * the tasks of its own range first, in order, then those left in the
 * others'.  So the same thread takes the same part of a loop from one
 * call to the next, and may find it in its own cache, where one shared
 * counter handed each task to whichever thread came first.  relu_ of
 * 2^19 float32 on the 2-core test machine, medians of five runs of each
 * in turn: 14-17 us against 17-19 (one run of the five the other way).
 *
 * After a job a worker polls for the next one for WORKER_SPIN_NS (10 ms)
 * before it sleeps on `wake`: loops that come one after another then
 * start on every thread at once instead of waiting for a wake-up each
 * (hundreds of microseconds on a virtual machine).  The poll reads
 * `generation` only, without the lock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#include "cpu/cpu_parallel.h"

/* How long the caller polls the workers' exit before it sleeps: a job's
 * tasks end together, so the wait is usually short. */
#define CALLER_SPIN_NS 50000
/* Workers started at most, whatever the thread count asked for. */
#define MAX_WORKERS 1023
/* How long an idle worker polls for the next job before it sleeps (as
 * OpenMP runtimes do by default, for a few milliseconds).  Waking a
 * sleeping thread is slow on virtual machines: on the 2-core test
 * machine, 16 back-to-back relu_ of 2^20 floats after 5 ms idle took 42 us
 * each on two threads with a 6 ms poll, 105-160 us with a 0.2 or 2 ms one
 * (the workers had gone to sleep), 65 us on one thread. */
#define WORKER_SPIN_NS 10000000
#define WORKER_HOT_NS 100000

/* Tasks next .. end - 1 of one thread's range (next may pass end); a
 * cache line each, so that threads claiming in their own ranges do not
 * share one. */
typedef struct {
    _Alignas(64) atomic_llong next;
    int64_t end;
} task_range;

static struct {
    pthread_mutex_t lock;  /* guards every field but next and active */
    pthread_cond_t wake;   /* workers: a job was published, or stop */
    pthread_cond_t done;   /* the caller: active dropped to 0 */
    int nthreads;          /* threads per job, caller included; 0: unset */
    int nworkers;          /* workers started (nthreads - 1 once started) */
    pthread_t *workers;
    atomic_int stop;       /* workers exit */
    /* The job. */
    atomic_ullong generation; /* written under lock, polled without */
    int open;
    pygpu_task_fn fn;
    void *ctx;
    task_range *ranges;    /* room for nworkers + 1, made with the workers */
    int nranges;           /* the job's: nworkers + 1 when published */
    atomic_int active;
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

/* Held for the whole of a job, of set_num_threads and of a fork. */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Runs the tasks of range `self` of the job's nranges ranges, then
 * those left in the others. */
static void
claim_tasks(pygpu_task_fn fn, void *ctx, task_range *ranges, int nranges,
            int self)
{
    for (int k = 0; k < nranges; k++) {
        task_range *r = &ranges[(self + k) % nranges];
        for (;;) {
            int64_t t = atomic_fetch_add(&r->next, 1);
            if (t >= r->end) {
                break;
            }
            fn(ctx, t);
        }
    }
}

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Polls, without the lock, until a job newer than generation `last` is
 * published or the pool stops, for WORKER_SPIN_NS at most; past the first
 * WORKER_HOT_NS it yields the CPU between rounds, so that other threads
 * that want it (NumPy's BLAS threads, other processes) get it. */
static void
spin_for_job(uint64_t last)
{
    int64_t start = now_ns(), t = start;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(&pool.generation, memory_order_relaxed) !=
                    last ||
                atomic_load_explicit(&pool.stop, memory_order_relaxed)) {
                return;
            }
            CPU_RELAX();
        }
        t = now_ns();
        if (t - start > WORKER_SPIN_NS) {
            return;
        }
        if (t - start > WORKER_HOT_NS) {
            sched_yield();
        }
    }
}

static void *
worker_main(void *arg)
{
    int self = (int)(intptr_t)arg; /* the worker's range */
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        if (!pool.stop && !(pool.open && pool.generation != seen)) {
            /* Polls for a job newer than the last one published, joined
             * or not (one closed before this worker came is no reason to
             * sleep). */
            uint64_t last = pool.generation;
            pthread_mutex_unlock(&pool.lock);
            spin_for_job(last);
            pthread_mutex_lock(&pool.lock);
        }
        while (!pool.stop && !(pool.open && pool.generation != seen)) {
            pthread_cond_wait(&pool.wake, &pool.lock);
        }
        if (pool.stop) {
            break;
        }
        seen = pool.generation;
        pygpu_task_fn fn = pool.fn;
        void *ctx = pool.ctx;
        task_range *ranges = pool.ranges;
        int nranges = pool.nranges;
        atomic_fetch_add(&pool.active, 1);
        pthread_mutex_unlock(&pool.lock);
        claim_tasks(fn, ctx, ranges, nranges, self);
        pthread_mutex_lock(&pool.lock);
        if (atomic_fetch_sub(&pool.active, 1) == 1) {
            pthread_cond_signal(&pool.done);
        }
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

static int
default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
        return CPU_COUNT(&set);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Under pool.lock. */
static int
threads_locked(void)
{
    if (pool.nthreads == 0) {
        pool.nthreads = default_threads();
    }
    return pool.nthreads;
}

/* Starts the workers if they are not running; under pool.lock.  Workers
 * block every signal: Python handles signals on its main thread.  If a
 * thread cannot be made, the pool runs with those it has. */
static void
start_workers_locked(void)
{
    int want = threads_locked() - 1;
    if (want > MAX_WORKERS) {
        want = MAX_WORKERS;
    }
    if (pool.nworkers > 0 || want <= 0) {
        return;
    }
    pool.workers = malloc((size_t)want * sizeof(pthread_t));
    pool.ranges = aligned_alloc(_Alignof(task_range),
                                (size_t)(want + 1) * sizeof(task_range));
    if (pool.workers == NULL || pool.ranges == NULL) {
        free(pool.workers);
        free(pool.ranges);
        pool.workers = NULL;
        pool.ranges = NULL;
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (pool.nworkers < want &&
           pthread_create(&pool.workers[pool.nworkers], NULL, worker_main,
                          (void *)(intptr_t)(pool.nworkers + 1)) == 0) {
        pool.nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Frees what start_workers_locked made, after the workers have ended (or
 * in a forked child, which has none). */
static void
forget_workers(void)
{
    free(pool.workers);
    free(pool.ranges);
    pool.workers = NULL;
    pool.ranges = NULL;
    pool.nworkers = 0;
    pool.stop = 0;
}

/* Ends the workers and forgets them; the job lock held, not pool.lock. */
static void
stop_workers(void)
{
    pthread_mutex_lock(&pool.lock);
    pool.stop = 1;
    pthread_cond_broadcast(&pool.wake);
    int n = pool.nworkers;
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < n; i++) {
        pthread_join(pool.workers[i], NULL);
    }
    pthread_mutex_lock(&pool.lock);
    forget_workers();
    pthread_mutex_unlock(&pool.lock);
}

/* fork: wait for the running job and hold everything across the fork. */
static void
before_fork(void)
{
    pthread_mutex_lock(&job_lock);
    pthread_mutex_lock(&pool.lock);
}

static void
after_fork_parent(void)
{
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&job_lock);
}

/* The child has only the forking thread: no workers, no job; the thread
 * count stays as the parent set it. */
static void
after_fork_child(void)
{
    pthread_mutex_init(&job_lock, NULL);
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    forget_workers();
    pool.open = 0;
    atomic_store(&pool.active, 0);
}

static void
register_atfork(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* Waits until no worker is inside the job: a poll of CALLER_SPIN_NS at
 * most, then sleep. */
static void
wait_workers(void)
{
    int64_t until = now_ns() + CALLER_SPIN_NS;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load(&pool.active) == 0) {
                return;
            }
            CPU_RELAX();
        }
        if (now_ns() > until) {
            break;
        }
    }
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.active) != 0) {
        pthread_cond_wait(&pool.done, &pool.lock);
    }
    pthread_mutex_unlock(&pool.lock);
}

void
pygpu_parallel_run(int64_t ntasks, pygpu_task_fn fn, void *ctx)
{
    if (ntasks <= 0) {
        return;
    }
    if (ntasks == 1 || pthread_mutex_trylock(&job_lock) != 0) {
        for (int64_t t = 0; t < ntasks; t++) {
            fn(ctx, t);
        }
        return;
    }
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&pool.lock);
    start_workers_locked();
    int parallel = pool.nworkers > 0;
    if (parallel) {
        pool.fn = fn;
        pool.ctx = ctx;
        pool.nranges = pool.nworkers + 1;
        for (int i = 0; i < pool.nranges; i++) {
            atomic_store(&pool.ranges[i].next, ntasks * i / pool.nranges);
            pool.ranges[i].end = ntasks * (i + 1) / pool.nranges;
        }
        pool.generation++;
        pool.open = 1;
        pthread_cond_broadcast(&pool.wake);
    }
    pthread_mutex_unlock(&pool.lock);
    if (parallel) {
        claim_tasks(fn, ctx, pool.ranges, pool.nranges, 0);
        pthread_mutex_lock(&pool.lock);
        pool.open = 0;
        pthread_mutex_unlock(&pool.lock);
        wait_workers();
    }
    else {
        for (int64_t t = 0; t < ntasks; t++) {
            fn(ctx, t);
        }
    }
    pthread_mutex_unlock(&job_lock);
}

int
pygpu_get_num_threads(void)
{
    pthread_mutex_lock(&pool.lock);
    int n = threads_locked();
    pthread_mutex_unlock(&pool.lock);
    return n;
}

void
pygpu_set_num_threads(int n)
{
    pthread_mutex_lock(&job_lock);
    stop_workers();
    pthread_mutex_lock(&pool.lock);
    pool.nthreads = n < 1 ? 1 : n;
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&job_lock);
}
