/* Helpers shared by the shard/ files: argument checks and the allocator
 * with its fault-injection hook.  shard/ sees only the public psi.h, so it
 * keeps its own copies of these.  Not installed. */
#ifndef PSI_SHARD_UTIL_H
#define PSI_SHARD_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"
#include "psi_shard.h"

/* Reports a caller bug: aborts when built with PSI_ABORT_ON_MISUSE, else
 * the caller returns PSI_E_INVALID_ARG (psi.h's rule). */
void psi_shard_misuse(const char *file, int line, const char *cond);

#define SHARD_CHECK_ARG(cond)                                                 \
    do {                                                                      \
        if (!(cond)) {                                                        \
            psi_shard_misuse(__FILE__, __LINE__, #cond);                      \
            return PSI_E_INVALID_ARG;                                         \
        }                                                                     \
    } while (0)

/* Forwards an error to the function's `done:` label; needs `int rc`. */
#define SHARD_TRY(expr)                                                       \
    do {                                                                      \
        rc = (expr);                                                          \
        if (rc != PSI_OK)                                                     \
            goto done;                                                        \
    } while (0)

/* Every allocation of shard/ goes through these.  psi_shard_alloc(0) gives
 * a valid unique pointer; psi_shard_calloc checks n * size for overflow. */
void *psi_shard_alloc(size_t n);
void *psi_shard_calloc(size_t n, size_t size);
void psi_shard_free(void *p);

/* Test hook, thread-safe: the countdown-th shard/ allocation from now
 * fails (1 = the next one); 0 disables.  Returns the number of
 * allocations counted since the previous call. */
uint64_t psi_shard_alloc_fail_after(uint64_t countdown);

#endif /* PSI_SHARD_UTIL_H */
