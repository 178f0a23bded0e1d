/* Fixed worker pool over one mutex-protected FIFO (see shard_pool.h).
 *
 * Invariants, under `lock`:
 *  - head..tail is the queue of jobs not yet started, linked by next;
 *    head == NULL exactly when tail == NULL.
 *  - pending = queued + running jobs; `done` is broadcast when it reaches 0.
 *  - stop is set only by pool_stop_join, when pending == 0, so a worker
 *    that sees stop with an empty queue can exit: no job is ever dropped.
 * A worker never touches a job after its run returns: the submitter may
 * free it as soon as pending drops to 0. */
#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "shard_pool.h"
#include "shard_thread.h"
#include "shard_util.h"

#ifdef PSI_ABORT_ON_MISUSE
#define POOL_CHECK_ARG(cond)                                                  \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: misuse: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                          \
        }                                                                     \
    } while (0)
#else
#define POOL_CHECK_ARG(cond)                                                  \
    do {                                                                      \
        if (!(cond))                                                          \
            return PSI_E_INVALID_ARG;                                         \
    } while (0)
#endif

struct psi_pool {
    /* Writer: psi_pool_create.  Readers: everyone.  0 = inline executor,
     * which initialises no lock and starts no thread. */
    size_t n_threads;
    /* Writer: pool_init_locks.  Reader: pool_destroy.  How many of
     * `lock`, `work`, `done` (in that order) are initialised. */
    int n_locks;
    /* Writer: psi_pool_create.  Reader: pool_destroy.  Threads started
     * (a prefix of `threads`). */
    size_t n_started;
    /* Writer: psi_pool_create.  Reader: pool_destroy (join). */
    psi_thread *threads;
    /* Guards every field below. */
    psi_mutex lock;
    /* Signalled by psi_pool_submit (a job queued), broadcast by
     * pool_stop_join (stop set).  Waited on by workers. */
    psi_cond work;
    /* Broadcast by workers when pending reaches 0.  Waited on by
     * psi_pool_wait. */
    psi_cond done;
    /* Writers: psi_pool_submit (push at tail), workers (pop at head).
     * Readers: workers. */
    psi_pool_job *head, *tail;
    /* Writers: psi_pool_submit (+1), workers (-1 after run).  Readers:
     * workers, psi_pool_wait. */
    size_t pending;
    /* Writer: pool_stop_join.  Readers: workers. */
    bool stop;
};

static atomic_uint pool_fail_thread;
static atomic_uint pool_fail_lock;

/* One step of a fault countdown: true when this call is the one to fail. */
static bool pool_fault_due(atomic_uint *countdown)
{
    unsigned c = atomic_load(countdown);
    while (c != 0 && !atomic_compare_exchange_weak(countdown, &c, c - 1))
        ;
    return c == 1;
}

unsigned psi_pool_fail_thread_after(unsigned countdown)
{
    return atomic_exchange(&pool_fail_thread, countdown);
}

unsigned psi_pool_fail_lock_after(unsigned countdown)
{
    return atomic_exchange(&pool_fail_lock, countdown);
}

static void *pool_worker(void *arg)
{
    psi_pool *p = arg;
    psi_mutex_lock(&p->lock);
    for (;;) {
        while (p->head == NULL && !p->stop)
            psi_cond_wait(&p->work, &p->lock);
        if (p->head == NULL) // stop, and nothing left to run
            break;
        psi_pool_job *job = p->head;
        p->head = job->next;
        if (p->head == NULL)
            p->tail = NULL;
        psi_mutex_unlock(&p->lock);
        job->run(job);
        psi_mutex_lock(&p->lock);
        if (--p->pending == 0)
            psi_cond_broadcast(&p->done);
    }
    psi_mutex_unlock(&p->lock);
    return NULL;
}

/* Lets the workers run every queued job, then stops and joins them.
 * Expects the lock not held and no concurrent submit.  With no worker
 * started nothing can be pending, and the locks may not exist. */
static void pool_stop_join(psi_pool *p)
{
    if (p->n_started == 0)
        return;
    psi_mutex_lock(&p->lock);
    while (p->pending != 0)
        psi_cond_wait(&p->done, &p->lock);
    p->stop = true;
    psi_cond_broadcast(&p->work);
    psi_mutex_unlock(&p->lock);
    for (size_t i = 0; i < p->n_started; i++)
        psi_thread_join(p->threads[i]);
    p->n_started = 0;
}

/* Frees a pool in any state psi_pool_create can leave it in. */
static void pool_destroy(psi_pool *p)
{
    pool_stop_join(p);
    if (p->n_locks >= 3)
        psi_cond_destroy(&p->done);
    if (p->n_locks >= 2)
        psi_cond_destroy(&p->work);
    if (p->n_locks >= 1)
        psi_mutex_destroy(&p->lock);
    psi_shard_free(p->threads);
    psi_shard_free(p);
}

/* Initialises lock, work, done in order, counting them in n_locks. */
static int pool_init_locks(psi_pool *p)
{
    if (pool_fault_due(&pool_fail_lock) || psi_mutex_init(&p->lock) != 0)
        return PSI_E_THREAD;
    p->n_locks = 1;
    if (pool_fault_due(&pool_fail_lock) || psi_cond_init(&p->work) != 0)
        return PSI_E_THREAD;
    p->n_locks = 2;
    if (pool_fault_due(&pool_fail_lock) || psi_cond_init(&p->done) != 0)
        return PSI_E_THREAD;
    p->n_locks = 3;
    return PSI_OK;
}

int psi_pool_create(psi_pool **out, size_t threads)
{
    POOL_CHECK_ARG(out != NULL);
    *out = NULL;
    POOL_CHECK_ARG(threads <= PSI_SHARD_MAX_THREADS);
    int rc = PSI_OK;
    psi_pool *p = psi_shard_calloc(1, sizeof *p);
    if (p == NULL)
        return PSI_E_NOMEM;
    p->n_threads = threads;
    if (threads == 0)
        goto done;
    p->threads = psi_shard_calloc(threads, sizeof *p->threads);
    if (p->threads == NULL) {
        rc = PSI_E_NOMEM;
        goto done;
    }
    rc = pool_init_locks(p);
    for (size_t i = 0; rc == PSI_OK && i < threads; i++) {
        if (pool_fault_due(&pool_fail_thread) ||
            psi_thread_create(&p->threads[i], pool_worker, p) != 0)
            rc = PSI_E_THREAD;
        else
            p->n_started++;
    }
done:
    if (rc != PSI_OK)
        pool_destroy(p);
    else
        *out = p;
    return rc;
}

size_t psi_pool_threads(const psi_pool *p)
{
    assert(p != NULL);
    return p->n_threads;
}

void psi_pool_submit(psi_pool *p, psi_pool_job *job)
{
    assert(p != NULL && job != NULL && job->run != NULL);
    if (p->n_threads == 0) {
        job->run(job);
        return;
    }
    job->next = NULL;
    psi_mutex_lock(&p->lock);
    if (p->tail != NULL)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    p->pending++;
    psi_cond_signal(&p->work);
    psi_mutex_unlock(&p->lock);
}

void psi_pool_wait(psi_pool *p)
{
    assert(p != NULL);
    if (p->n_threads == 0)
        return;
    psi_mutex_lock(&p->lock);
    while (p->pending != 0)
        psi_cond_wait(&p->done, &p->lock);
    psi_mutex_unlock(&p->lock);
}

void psi_pool_free(psi_pool *p)
{
    if (p != NULL)
        pool_destroy(p);
}

size_t psi_online_cpus(void)
{
    long n = psi_thread_online_cpus();
    return n < 1 ? 1 : (size_t)n;
}
