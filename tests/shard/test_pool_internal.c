/* Unit tests of the shard worker pool (shard/shard_pool.h): inline
 * executor, FIFO start order, every job run exactly once, join on free,
 * shutdown with jobs still queued, injected thread and lock failures.
 * Jobs never call cmocka asserts (they would longjmp off a worker); they
 * record what happened and the main thread checks it.  Job counters are
 * plain ints on purpose: only psi_pool_wait/psi_pool_free may publish them,
 * and ThreadSanitizer or helgrind runs of this file check that they do. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shard_pool.h"

#define MANY_JOBS 1000

/* State shared by the jobs of one test. */
typedef struct job_ctx {
    atomic_size_t next_order; // start positions handed out so far
    atomic_bool gate_open;    // job 0 of a gated run waits for it
    bool gated;
    long sleep_us;            // each job sleeps this long
} job_ctx;

/* A job embedded in a larger struct, as the shard layer uses it. */
typedef struct test_job {
    psi_pool_job job;
    job_ctx *ctx;
    size_t index;
    size_t order; // position at which this job started
    int runs;
} test_job;

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void test_job_run(psi_pool_job *job)
{
    test_job *t = (test_job *)((char *)job - offsetof(test_job, job));
    t->order = atomic_fetch_add(&t->ctx->next_order, 1);
    if (t->ctx->gated && t->index == 0)
        while (!atomic_load(&t->ctx->gate_open))
            sleep_us(100);
    if (t->ctx->sleep_us > 0)
        sleep_us(t->ctx->sleep_us);
    t->runs++;
}

static test_job *jobs_new(job_ctx *ctx, size_t n)
{
    test_job *jobs = calloc(n, sizeof *jobs);
    assert_non_null(jobs);
    for (size_t i = 0; i < n; i++)
        jobs[i] = (test_job){{test_job_run, NULL}, ctx, i, 0, 0};
    return jobs;
}

/* Threads of this process, from /proc/self/task; -1 where unavailable. */
static int live_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -1;
    int n = 0;
    for (const struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Threads of the process when no pool exists (set by group_setup). */
static int base_threads;

/* True once the process is back to base_threads (within 2 s).  A joined
 * thread can stay listed for a moment after pthread_join, hence the
 * polling; a thread never joined (still waiting for work) keeps the count
 * up for good. */
static bool threads_settle(void)
{
    for (int i = 0; i < 2000; i++) {
        if (live_threads() <= base_threads)
            return true;
        sleep_us(1000);
    }
    return false;
}

static void *idle_thread(void *arg)
{
    return arg;
}

/* Counts the threads the process keeps without any pool.  A first thread
 * is started and joined beforehand, because ThreadSanitizer starts its
 * helper thread on the first pthread_create. */
static int group_setup(void **state)
{
    (void)state;
    pthread_t t;
    if (pthread_create(&t, NULL, idle_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
        return -1;
    sleep_us(100000);
    base_threads = live_threads();
    return 0;
}

static void test_pool_inline_runs_at_once_in_order(void **state)
{
    (void)state;
    job_ctx ctx = {0};
    test_job *jobs = jobs_new(&ctx, 10);
    psi_pool *p = NULL;
    assert_int_equal(psi_pool_create(&p, 0), PSI_OK);
    assert_int_equal(psi_pool_threads(p), 0);
    assert_true(threads_settle()); // no thread started
    for (size_t i = 0; i < 10; i++) {
        psi_pool_submit(p, &jobs[i].job);
        assert_int_equal(jobs[i].runs, 1); // ran before submit returned
        assert_int_equal(jobs[i].order, i);
    }
    psi_pool_wait(p);
    psi_pool_free(p);
    psi_pool_free(NULL);
    free(jobs);
}

/* One worker: job 0 holds it until every job is queued, so the remaining
 * jobs all start from a full queue, which must hand them out in order. */
static void test_pool_one_worker_is_fifo(void **state)
{
    (void)state;
    job_ctx ctx = {.gated = true};
    test_job *jobs = jobs_new(&ctx, 200);
    psi_pool *p = NULL;
    assert_int_equal(psi_pool_create(&p, 1), PSI_OK);
    assert_int_equal(psi_pool_threads(p), 1);
    for (size_t i = 0; i < 200; i++)
        psi_pool_submit(p, &jobs[i].job);
    atomic_store(&ctx.gate_open, true);
    psi_pool_wait(p);
    for (size_t i = 0; i < 200; i++) {
        assert_int_equal(jobs[i].runs, 1);
        assert_int_equal(jobs[i].order, i);
    }
    psi_pool_free(p);
    free(jobs);
}

static void run_many(size_t threads)
{
    job_ctx ctx = {0};
    test_job *jobs = jobs_new(&ctx, MANY_JOBS);
    psi_pool *p = NULL;
    assert_int_equal(psi_pool_create(&p, threads), PSI_OK);
    assert_int_equal(psi_pool_threads(p), threads);
    psi_pool_wait(p); // nothing queued yet
    for (int round = 1; round <= 2; round++) {
        for (size_t i = 0; i < MANY_JOBS; i++)
            psi_pool_submit(p, &jobs[i].job);
        psi_pool_wait(p);
        for (size_t i = 0; i < MANY_JOBS; i++)
            assert_int_equal(jobs[i].runs, round);
        assert_int_equal(atomic_load(&ctx.next_order), (size_t)round * MANY_JOBS);
        psi_pool_wait(p); // again, with nothing pending
    }
    psi_pool_free(p);
    free(jobs);
}

static void test_pool_two_workers_run_each_job_once(void **state)
{
    (void)state;
    run_many(2);
}

static void test_pool_four_workers_run_each_job_once(void **state)
{
    (void)state;
    run_many(4);
}

/* The join test: JOIN_THREADS jobs meet at a spinning barrier, so each sits
 * on its own worker; each marks its thread with a key whose destructor runs
 * at thread exit, slowly.  Only joining makes free wait for all of them. */
#define JOIN_THREADS 4

typedef struct barrier_job {
    psi_pool_job job;
    atomic_int *arrived;
    bool met; // all JOIN_THREADS arrived within 10 s
    pthread_t self;
} barrier_job;

static pthread_key_t exit_key;
static atomic_int exited_workers;

static void worker_exit(void *value)
{
    (void)value;
    sleep_us(20000);
    atomic_fetch_add(&exited_workers, 1);
}

static void barrier_job_run(psi_pool_job *job)
{
    barrier_job *b = (barrier_job *)((char *)job - offsetof(barrier_job, job));
    b->self = pthread_self();
    atomic_fetch_add(b->arrived, 1);
    for (int i = 0; i < 100000 && atomic_load(b->arrived) < JOIN_THREADS; i++)
        sleep_us(100);
    b->met = atomic_load(b->arrived) >= JOIN_THREADS;
    pthread_setspecific(exit_key, b);
}

static void test_pool_free_joins_workers(void **state)
{
    (void)state;
    assert_int_equal(pthread_key_create(&exit_key, worker_exit), 0);
    atomic_store(&exited_workers, 0);
    atomic_int arrived = 0;
    barrier_job b[JOIN_THREADS];
    psi_pool *p = NULL;
    assert_int_equal(psi_pool_create(&p, JOIN_THREADS), PSI_OK);
    for (int i = 0; i < JOIN_THREADS; i++) {
        b[i] = (barrier_job){{barrier_job_run, NULL}, &arrived, false, pthread_self()};
        psi_pool_submit(p, &b[i].job);
    }
    psi_pool_wait(p);
    for (int i = 0; i < JOIN_THREADS; i++) {
        assert_true(b[i].met);
        assert_false(pthread_equal(b[i].self, pthread_self()));
        for (int j = 0; j < i; j++)
            assert_false(pthread_equal(b[i].self, b[j].self));
    }
    assert_int_equal(atomic_load(&exited_workers), 0); // workers still alive
    psi_pool_free(p);
    assert_int_equal(atomic_load(&exited_workers), JOIN_THREADS);
    assert_true(threads_settle());
    assert_int_equal(pthread_key_delete(exit_key), 0);
}

/* Free right after submitting slow jobs: the queue is still long, and
 * every job must still run, once. */
static void test_pool_free_runs_queued_jobs(void **state)
{
    (void)state;
    job_ctx ctx = {.sleep_us = 1000};
    test_job *jobs = jobs_new(&ctx, 200);
    psi_pool *p = NULL;
    assert_int_equal(psi_pool_create(&p, 2), PSI_OK);
    for (size_t i = 0; i < 200; i++)
        psi_pool_submit(p, &jobs[i].job);
    psi_pool_free(p);
    for (size_t i = 0; i < 200; i++)
        assert_int_equal(jobs[i].runs, 1);
    assert_int_equal(atomic_load(&ctx.next_order), 200);
    free(jobs);
}

/* A pool that must work after the fault tests. */
static void check_pool_works(size_t threads)
{
    job_ctx ctx = {0};
    test_job *jobs = jobs_new(&ctx, 16);
    psi_pool *p = NULL;
    assert_int_equal(psi_pool_create(&p, threads), PSI_OK);
    for (size_t i = 0; i < 16; i++)
        psi_pool_submit(p, &jobs[i].job);
    psi_pool_wait(p);
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(jobs[i].runs, 1);
    psi_pool_free(p);
    free(jobs);
}

static void test_pool_thread_failure_cleans_up(void **state)
{
    (void)state;
    psi_pool *inline_pool = NULL; // a valid non-NULL value for *out
    assert_int_equal(psi_pool_create(&inline_pool, 0), PSI_OK);
    for (unsigned k = 1; k <= 4; k++) {
        psi_pool *p = inline_pool;
        assert_int_equal(psi_pool_fail_thread_after(k), 0);
        assert_int_equal(psi_pool_create(&p, 4), PSI_E_THREAD);
        assert_null(p);
        assert_int_equal(psi_pool_fail_thread_after(0), 0); // fired
        assert_true(threads_settle());                  // k - 1 joined
    }
    // A countdown past the last creation fires nothing.
    psi_pool_fail_thread_after(5);
    check_pool_works(4);
    assert_int_equal(psi_pool_fail_thread_after(0), 1);
    psi_pool_free(inline_pool);
    assert_true(threads_settle());
}

static void test_pool_lock_failure_cleans_up(void **state)
{
    (void)state;
    psi_pool *inline_pool = NULL;
    assert_int_equal(psi_pool_create(&inline_pool, 0), PSI_OK);
    for (unsigned k = 1; k <= 3; k++) {
        psi_pool *p = inline_pool;
        assert_int_equal(psi_pool_fail_lock_after(k), 0);
        assert_int_equal(psi_pool_create(&p, 4), PSI_E_THREAD);
        assert_null(p);
        assert_int_equal(psi_pool_fail_lock_after(0), 0);
        assert_true(threads_settle()); // locks come before threads
    }
    psi_pool_fail_lock_after(4);
    check_pool_works(4);
    assert_int_equal(psi_pool_fail_lock_after(0), 1);
    // The inline executor initialises no lock.
    psi_pool_fail_lock_after(1);
    check_pool_works(0);
    assert_int_equal(psi_pool_fail_lock_after(0), 1);
    psi_pool_free(inline_pool);
}

static void test_pool_rejects_invalid_args(void **state)
{
    (void)state;
    psi_pool *inline_pool = NULL;
    assert_int_equal(psi_pool_create(&inline_pool, 0), PSI_OK);
    assert_int_equal(psi_pool_create(NULL, 0), PSI_E_INVALID_ARG);
    assert_int_equal(psi_pool_create(NULL, 1), PSI_E_INVALID_ARG);
    psi_pool *p = inline_pool;
    assert_int_equal(psi_pool_create(&p, PSI_SHARD_MAX_THREADS + 1), PSI_E_INVALID_ARG);
    assert_null(p);
    p = inline_pool;
    assert_int_equal(psi_pool_create(&p, SIZE_MAX), PSI_E_INVALID_ARG);
    assert_null(p);
    psi_pool_free(inline_pool);
    check_pool_works(PSI_SHARD_MAX_THREADS); // the cap itself is allowed
}

static void test_pool_online_cpus_is_positive(void **state)
{
    (void)state;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(psi_online_cpus() >= 1);
    if (n >= 1)
        assert_int_equal(psi_online_cpus(), (size_t)n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_inline_runs_at_once_in_order),
        cmocka_unit_test(test_pool_one_worker_is_fifo),
        cmocka_unit_test(test_pool_two_workers_run_each_job_once),
        cmocka_unit_test(test_pool_four_workers_run_each_job_once),
        cmocka_unit_test(test_pool_free_joins_workers),
        cmocka_unit_test(test_pool_free_runs_queued_jobs),
        cmocka_unit_test(test_pool_thread_failure_cleans_up),
        cmocka_unit_test(test_pool_lock_failure_cleans_up),
        cmocka_unit_test(test_pool_rejects_invalid_args),
        cmocka_unit_test(test_pool_online_cpus_is_positive),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
