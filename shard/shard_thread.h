/* The one wrapper around pthreads for shard/: mutex, condition variable,
 * thread create/join and the online CPU count.  No other shard/ file
 * includes <pthread.h>, so a port (or an inline-only build) changes only
 * this header.  Not installed.
 *
 * Creation functions return 0 or an errno value, as pthreads does.  Lock,
 * unlock, wait, signal and join cannot fail on correctly used objects
 * (default attributes, owned lock, joinable thread), so they return nothing
 * and only assert. */
#ifndef PSI_SHARD_THREAD_H
#define PSI_SHARD_THREAD_H

#include <assert.h>

#ifdef PSI_SHARD_NO_THREADS
/* A build without threads (meson -Dthreads=disabled, e.g. for wasm): locks
 * do nothing, there is one CPU, and starting a thread fails with ENOSYS,
 * so only the inline executor can be created and any request for worker
 * threads fails with PSI_E_THREAD instead of silently running inline. */
#include <errno.h>

typedef struct psi_mutex { char unused; } psi_mutex;
typedef struct psi_cond { char unused; } psi_cond;
typedef struct psi_thread { char unused; } psi_thread;

static inline int psi_mutex_init(psi_mutex *m) { (void)m; return 0; }
static inline void psi_mutex_destroy(psi_mutex *m) { (void)m; }
static inline void psi_mutex_lock(psi_mutex *m) { (void)m; }
static inline void psi_mutex_unlock(psi_mutex *m) { (void)m; }
static inline int psi_cond_init(psi_cond *c) { (void)c; return 0; }
static inline void psi_cond_destroy(psi_cond *c) { (void)c; }
static inline void psi_cond_wait(psi_cond *c, psi_mutex *m) { (void)c; (void)m; }
static inline void psi_cond_signal(psi_cond *c) { (void)c; }
static inline void psi_cond_broadcast(psi_cond *c) { (void)c; }
static inline int psi_thread_create(psi_thread *t, void *(*fn)(void *), void *arg)
{
    (void)t, (void)fn, (void)arg;
    return ENOSYS;
}
static inline void psi_thread_join(psi_thread t) { (void)t; }
static inline long psi_thread_online_cpus(void) { return 1; }

#else /* threads */

#include <pthread.h>
#include <unistd.h>

typedef pthread_mutex_t psi_mutex;
typedef pthread_cond_t psi_cond;
typedef pthread_t psi_thread;

static inline int psi_mutex_init(psi_mutex *m)
{
    return pthread_mutex_init(m, NULL);
}

static inline void psi_mutex_destroy(psi_mutex *m)
{
    int rc = pthread_mutex_destroy(m);
    assert(rc == 0);
    (void)rc;
}

static inline void psi_mutex_lock(psi_mutex *m)
{
    int rc = pthread_mutex_lock(m);
    assert(rc == 0);
    (void)rc;
}

static inline void psi_mutex_unlock(psi_mutex *m)
{
    int rc = pthread_mutex_unlock(m);
    assert(rc == 0);
    (void)rc;
}

static inline int psi_cond_init(psi_cond *c)
{
    return pthread_cond_init(c, NULL);
}

static inline void psi_cond_destroy(psi_cond *c)
{
    int rc = pthread_cond_destroy(c);
    assert(rc == 0);
    (void)rc;
}

/* Expects `m` held; may wake spuriously, so callers loop on their predicate. */
static inline void psi_cond_wait(psi_cond *c, psi_mutex *m)
{
    int rc = pthread_cond_wait(c, m);
    assert(rc == 0);
    (void)rc;
}

static inline void psi_cond_signal(psi_cond *c)
{
    int rc = pthread_cond_signal(c);
    assert(rc == 0);
    (void)rc;
}

static inline void psi_cond_broadcast(psi_cond *c)
{
    int rc = pthread_cond_broadcast(c);
    assert(rc == 0);
    (void)rc;
}

/* Starts a joinable thread running fn(arg). */
static inline int psi_thread_create(psi_thread *t, void *(*fn)(void *), void *arg)
{
    return pthread_create(t, NULL, fn, arg);
}

/* Waits for the thread to end; its return value is dropped. */
static inline void psi_thread_join(psi_thread t)
{
    int rc = pthread_join(t, NULL);
    assert(rc == 0);
    (void)rc;
}

/* sysconf's count of online CPUs; <= 0 when unknown. */
static inline long psi_thread_online_cpus(void)
{
    return sysconf(_SC_NPROCESSORS_ONLN);
}

#endif /* PSI_SHARD_NO_THREADS */
#endif /* PSI_SHARD_THREAD_H */
