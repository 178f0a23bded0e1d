/* The psi_shards object shared by the executor (shard_exec.c) and the
 * sharded message calls (shard_ops.c).  Not installed. */
#ifndef PSI_SHARD_EXEC_H
#define PSI_SHARD_EXEC_H

#include "shard_pool.h"
#include "shard_thread.h"
#include "shard_util.h"

/* One shard: its engine and its part of the current call. */
typedef struct shard_unit {
    psi_pool_job job;        /* first member: the pool hands back &job */
    /* Set by psi_shards_create, read by the worker. */
    psi_shards *group;
    psi_engine *engine;      /* this shard's own clone of the key */
    /* Written by the submitter before submit, read by the worker. */
    psi_plan *plan;
    size_t slice;            /* the plan's slice this unit runs */
    /* Values this shard last reported; under group->progress_lock. */
    uint64_t reported;
} shard_unit;

struct psi_shards {
    psi_pool *pool;
    shard_unit *units;
    size_t n_units;
    psi_role role;           /* of the engine the shards were cloned from */
    int reveal;
    psi_suite suite;
    psi_progress_fn progress;
    void *progress_arg;
    int has_lock;            /* progress_lock initialised */
    psi_mutex progress_lock; /* guards the three fields below and the
                                user's callback */
    uint64_t progress_done;  /* sum of the units' `reported` */
    uint64_t progress_total; /* inputs of the current call */
};

/* The executor: runs slice k of `p` on shard k (the plan has as many
 * slices as there are shards) on the pool, each slice keeping its outcome
 * in the plan, and returns after every job has finished. */
int psi_shards_run(psi_shards *g, psi_plan *p);

/* The tick of a plan's serial merge after psi_shards_run:
 * calls the caller's progress callback, if any, with done = total.  arg is
 * the psi_shards. */
void psi_shards_tick(void *arg);

#endif /* PSI_SHARD_EXEC_H */
