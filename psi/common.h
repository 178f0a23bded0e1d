/* Internal helpers shared by every file of psi/: argument checks, error
 * forwarding and the one allocator.  Not installed. */
#ifndef PSI_COMMON_H
#define PSI_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "psi.h"

/* Reports a caller bug.  Aborts when built with PSI_ABORT_ON_MISUSE;
 * otherwise the caller returns PSI_E_INVALID_ARG. */
void psi_misuse(const char *file, int line, const char *cond);

#define PSI_CHECK_ARG(cond)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            psi_misuse(__FILE__, __LINE__, #cond);                            \
            return PSI_E_INVALID_ARG;                                         \
        }                                                                     \
    } while (0)

/* Forwards an error to the function's single `done:` label; needs `int rc`. */
#define PSI_TRY(expr)                                                         \
    do {                                                                      \
        rc = (expr);                                                          \
        if (rc != PSI_OK)                                                     \
            goto done;                                                        \
    } while (0)

/* All library allocations go through these, so tests can inject failures.
 * psi_alloc(0) returns a valid, unique pointer. */
void *psi_alloc(size_t n);
/* n * size bytes, zeroed; NULL on overflow or failure. */
void *psi_calloc(size_t n, size_t size);
/* NULL is a no-op. */
void psi_free(void *p);
/* Wipes n bytes, then frees.  NULL is a no-op. */
void psi_free_wipe(void *p, size_t n);

/* Test hook (internal tests only): the `countdown`-th allocation from now
 * fails (1 = the next one); 0 disables.  Also applied to OpenSSL when
 * installed with psi_alloc_hook_openssl().  Returns the number of
 * allocations counted since the last call. */
uint64_t psi_alloc_fail_after(uint64_t countdown);

/* Clears OpenSSL's error queue after a failure, so stale errors never leak
 * into a later call. Returns PSI_E_CRYPTO. */
int psi_crypto_error(void);

#endif /* PSI_COMMON_H */
