/* The native executor: N engines cloned from one key, a thread pool that
 * runs one job per shard, and the choice of the error to report
 * (PROTOCOL.md §14.4). */
#include <string.h>

#include "shard_exec.h"

void psi_shard_settings_default(psi_shard_settings *s)
{
    if (s != NULL)
        memset(s, 0, sizeof *s);
}

/* Worker side of progress: adds this shard's increment and reports the
 * whole call's count.  The lock serialises the user's callback, so `done`
 * never decreases between two calls of it. */
static void unit_progress(void *arg, uint64_t done, uint64_t total)
{
    shard_unit *u = arg;
    psi_shards *g = u->group;
    (void)total;
    psi_mutex_lock(&g->progress_lock);
    g->progress_done += done - u->reported;
    u->reported = done;
    g->progress(g->progress_arg, g->progress_done, g->progress_total);
    psi_mutex_unlock(&g->progress_lock);
}

void psi_shards_tick(void *arg)
{
    psi_shards *g = arg;
    if (g->progress == NULL)
        return;
    psi_mutex_lock(&g->progress_lock);
    g->progress_done = g->progress_total;
    g->progress(g->progress_arg, g->progress_done, g->progress_total);
    psi_mutex_unlock(&g->progress_lock);
}

static void unit_run(psi_pool_job *job)
{
    shard_unit *u = (shard_unit *)job;
    /* The outcome, detail included, is kept in the plan as data. */
    psi_plan_run(u->plan, u->engine, u->slice);
}

static int settings_valid(const psi_shard_settings *s)
{
    for (size_t i = 0; i < sizeof s->reserved; i++)
        if (s->reserved[i] != 0)
            return 0;
    return s->threads <= PSI_SHARD_MAX_THREADS && s->max_threads <= PSI_SHARD_MAX_THREADS &&
           s->shards <= PSI_SHARD_MAX_SHARDS;
}

/* Threads: given or online CPUs, capped; shards: given, or else
 * PSI_SHARD_DEFAULT_PER_THREAD a thread (one when there is one thread:
 * inline, more shards only cost); no more threads than shards.  One
 * thread means the inline executor.  Several shards a thread let the
 * queue even out threads that the machine runs at unequal speed
 * (bench_shard: 8 shards on 2 threads beat 2 on 2 for the request). */
static void resolve_counts(size_t *threads, size_t *shards, const psi_shard_settings *s)
{
    size_t t = s->threads != 0 ? s->threads : psi_online_cpus();
    size_t cap = s->max_threads != 0 ? s->max_threads : PSI_SHARD_MAX_THREADS;
    if (t > cap)
        t = cap;
    if (s->shards != 0)
        *shards = s->shards;
    else if (t > 1)
        *shards = t * PSI_SHARD_DEFAULT_PER_THREAD;
    else
        *shards = 1;
    if (t > *shards)
        t = *shards;
    *threads = t > 1 ? t : 0;
}

/* Clones the engines; each unit's engine reports to unit_progress when
 * the caller asked for progress. */
static int units_create(psi_shards *g, const psi_engine *e)
{
    psi_settings es;
    psi_settings_default(&es);
    es.role = g->role;
    es.reveal_intersection = g->reveal;
    es.suite = g->suite;
    for (size_t k = 0; k < g->n_units; k++) {
        shard_unit *u = &g->units[k];
        u->group = g;
        u->job.run = unit_run;
        if (g->progress != NULL) {
            es.progress = unit_progress;
            es.progress_arg = u;
        }
        int rc = psi_engine_clone(&u->engine, e, &es);
        if (rc != PSI_OK)
            return rc;
    }
    return PSI_OK;
}

int psi_shards_create(psi_shards **out, const psi_engine *e, const psi_shard_settings *s)
{
    SHARD_CHECK_ARG(out != NULL);
    *out = NULL;
    SHARD_CHECK_ARG(e != NULL && s != NULL && settings_valid(s));
    size_t threads, shards;
    resolve_counts(&threads, &shards, s);
    psi_shards *g = psi_shard_calloc(1, sizeof *g);
    if (g == NULL)
        return PSI_E_NOMEM;
    int rc;
    g->role = psi_engine_role(e);
    g->reveal = psi_engine_reveal(e);
    g->suite = psi_engine_suite(e);
    g->progress = s->progress;
    g->progress_arg = s->progress_arg;
    g->units = psi_shard_calloc(shards, sizeof *g->units);
    if (g->units == NULL)
        SHARD_TRY(PSI_E_NOMEM);
    g->n_units = shards;
    if (g->progress != NULL) {
        if (psi_mutex_init(&g->progress_lock) != 0)
            SHARD_TRY(PSI_E_THREAD);
        g->has_lock = 1;
    }
    SHARD_TRY(units_create(g, e));
    SHARD_TRY(psi_pool_create(&g->pool, threads));
    *out = g;
done:
    if (rc != PSI_OK)
        psi_shards_free(g);
    return rc;
}

void psi_shards_free(psi_shards *g)
{
    if (g == NULL)
        return;
    psi_pool_free(g->pool); /* joins every thread first */
    for (size_t k = 0; g->units != NULL && k < g->n_units; k++)
        psi_engine_free(g->units[k].engine); /* wipes the key */
    psi_shard_free(g->units);
    if (g->has_lock)
        psi_mutex_destroy(&g->progress_lock);
    psi_shard_free(g);
}

size_t psi_shards_count(const psi_shards *g)
{
    return g == NULL ? 0 : g->n_units;
}

size_t psi_shards_threads(const psi_shards *g)
{
    return g == NULL ? 0 : psi_pool_threads(g->pool);
}

int psi_shards_run(psi_shards *g, psi_plan *p)
{
    SHARD_CHECK_ARG(psi_plan_slices(p) == g->n_units);
    uint64_t total = 0;
    psi_step s;
    for (size_t k = 0; k < g->n_units; k++) {
        psi_plan_step(p, &s, k);
        total += s.count;
    }
    g->progress_done = 0;
    g->progress_total = total;
    for (size_t k = 0; k < g->n_units; k++) {
        shard_unit *u = &g->units[k];
        psi_plan_step(p, &s, k);
        u->plan = p;
        u->slice = k;
        u->reported = 0;
        if (s.count > 0) /* an empty slice has nothing to do (N > n) */
            psi_pool_submit(g->pool, &u->job);
        else
            psi_plan_put(p, k, PSI_OK, -1, NULL, NULL);
    }
    psi_pool_wait(g->pool);
    return PSI_OK;
}
