/* The sharding layer's executor: a fixed set of worker threads taking jobs
 * from one FIFO queue, or an inline executor that runs each job at once on
 * the caller's thread.  Not installed.
 *
 * Rules of this header:
 *  - Pointer arguments must be non-NULL unless stated.
 *  - Jobs are intrusive: the pool never allocates per job and keeps only
 *    the caller's pointer, which must stay valid until psi_pool_wait (or
 *    psi_pool_free) returns.
 *  - Thread-safety: psi_pool_submit may be called from any thread,
 *    including from a running job; psi_pool_wait from any thread but a job
 *    of the same pool (it would wait for itself); psi_pool_free needs
 *    exclusive access: no concurrent submit or wait, not from a job.
 */
#ifndef PSI_SHARD_POOL_H
#define PSI_SHARD_POOL_H

#include <stddef.h>

#include "psi.h"
#include "psi_shard.h" /* PSI_SHARD_MAX_THREADS, the cap on threads */

typedef struct psi_pool psi_pool;

/** One unit of work, usually embedded in a larger per-shard struct that
 *  `run` recovers with offsetof. */
typedef struct psi_pool_job {
    /* Writer: the submitter, before psi_pool_submit.  Reader: the pool,
     * which calls it exactly once, on a worker (or, inline, the caller). */
    void (*run)(struct psi_pool_job *job);
    /* The queue link.  Writer: psi_pool_submit (on this job and on the
     * previous tail), under the pool's lock.  Reader: the worker popping
     * the job, under the lock.  The submitter leaves it alone. */
    struct psi_pool_job *next;
} psi_pool_job;

/** Creates a pool.  threads == 0 gives an inline executor with no thread:
 *  psi_pool_submit runs the job before it returns, so jobs run in
 *  submission order.  threads >= 1 starts that many workers now.
 *  Returns: PSI_OK; PSI_E_INVALID_ARG (out NULL, threads >
 *  PSI_SHARD_MAX_THREADS); PSI_E_NOMEM; PSI_E_THREAD (a thread, mutex or
 *  condition variable could not be created: every thread already started
 *  is stopped and joined and everything freed).
 *  Out: *out, set to NULL on every error.  In: threads.
 *  Ownership: the caller frees *out with psi_pool_free. */
int psi_pool_create(psi_pool **out, size_t threads);

/** Returns: the number of worker threads (0 for the inline executor).
 *  Thread-safety: any thread. */
size_t psi_pool_threads(const psi_pool *p);

/** Queues `job` behind every job already queued; jobs start in submission
 *  order (with several workers they may finish in any order).  Never
 *  fails, never allocates.
 *  In-Out: job (job->run set; job->next is overwritten).
 *  Ownership: job stays the caller's and must stay valid until
 *  psi_pool_wait returns. */
void psi_pool_submit(psi_pool *p, psi_pool_job *job);

/** Blocks until every job submitted so far has returned from run.  The
 *  jobs' memory effects are visible to the caller afterwards.  Returns at
 *  once when nothing is pending; may be called any number of times.
 *  Thread-safety: not from a job of `p`. */
void psi_pool_wait(psi_pool *p);

/** Shuts down: runs every job still queued (nothing is dropped), then stops
 *  and joins every worker and frees the pool.  p may be NULL (no-op).
 *  Thread-safety: exclusive access; never from a job. */
void psi_pool_free(psi_pool *p);

/** Returns: the number of online CPUs (sysconf(_SC_NPROCESSORS_ONLN)), at
 *  least 1.  Not capped at PSI_SHARD_MAX_THREADS.  Thread-safety: any. */
size_t psi_online_cpus(void);

/** Test hooks (fault injection).  The countdown-th thread creation from now
 *  fails as if pthread_create returned EAGAIN (1 = the next one); 0
 *  disables; a hook disarms itself when it fires.  psi_pool_fail_lock_after
 *  does the same for the mutex and condition variable initialisations of
 *  psi_pool_create (three per threaded pool, none for the inline one).
 *  Returns: the previous countdown (0 once fired).
 *  Thread-safety: any thread (C11 atomics). */
unsigned psi_pool_fail_thread_after(unsigned countdown);
unsigned psi_pool_fail_lock_after(unsigned countdown);

#endif /* PSI_SHARD_POOL_H */
