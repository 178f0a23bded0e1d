/* The allocator of shard/ and its fault-injection hook.  The hook's
 * counters are atomic because shard jobs allocate on worker threads. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard_util.h"

/* Test-only state; the library never sets it. */
static _Atomic uint64_t fail_countdown;
static _Atomic uint64_t alloc_count;

uint64_t psi_shard_alloc_fail_after(uint64_t countdown)
{
    atomic_store(&fail_countdown, countdown);
    return atomic_exchange(&alloc_count, 0);
}

/* Decrements the countdown if armed; true when this call must fail. */
static int injected_failure(void)
{
    uint64_t c = atomic_load(&fail_countdown);
    while (c != 0) {
        if (atomic_compare_exchange_weak(&fail_countdown, &c, c - 1))
            return c == 1;
    }
    return 0;
}

void *psi_shard_alloc(size_t n)
{
    atomic_fetch_add(&alloc_count, 1);
    if (injected_failure())
        return NULL;
    return malloc(n == 0 ? 1 : n);
}

void *psi_shard_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = psi_shard_alloc(n * size);
    if (p != NULL && n * size != 0)
        memset(p, 0, n * size);
    return p;
}

void psi_shard_free(void *p)
{
    free(p);
}

void psi_shard_misuse(const char *file, int line, const char *cond)
{
#ifdef PSI_ABORT_ON_MISUSE
    fprintf(stderr, "shardpsi: misuse at %s:%d: %s\n", file, line, cond);
    abort();
#else
    (void)file;
    (void)line;
    (void)cond;
#endif
}
