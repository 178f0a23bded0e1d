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
 * fails (1 = the next one); 0 disables.  Returns the number of
 * allocations counted since the last call (psi_alloc's and
 * psi_alloc_should_fail's). */
uint64_t psi_alloc_fail_after(uint64_t countdown);
/* Test hook (internal tests only): counts one allocation made outside
 * psi_alloc and consumes one step of the same countdown; true when it must
 * fail.  A fault test calls it from the allocator it gives OpenSSL
 * (CRYPTO_set_mem_functions), so OpenSSL's allocations fail in turn too. */
int psi_alloc_should_fail(void);
/* Test hook (internal tests only): psi_alloc and the psi_free functions
 * call alloc_fn and free_fn instead of malloc and free (the key-hygiene
 * test scans each freed block).  NULL restores malloc or free.  Set it
 * while no other thread allocates, and free blocks with the free_fn that
 * matches the alloc_fn that made them. */
void psi_alloc_set_hooks(void *(*alloc_fn)(size_t), void (*free_fn)(void *));
/* The hooked allocator itself, without fault injection: for blocks that
 * are not the library's own (ossl_wipe.c's blocks for OpenSSL). */
void *psi_raw_alloc(size_t n);
void psi_raw_free(void *p);

/* Clears OpenSSL's error queue after a failure, so stale errors never leak
 * into a later call. Returns PSI_E_CRYPTO. */
int psi_crypto_error(void);

/* Error details (psi_error_detail, errors.c).  Public calls that record
 * details start with psi_detail_clear(); the place that finds bad input
 * returns psi_fail_at(code, field, index, offset), which records the detail
 * and returns code.  field is a static string; index and offset -1 when
 * unknown. */
void psi_detail_clear(void);
int psi_fail_at(int code, const char *field, int64_t index, int64_t offset);
/* If this thread's detail describes `code`, renames its field (a nested
 * call's name for its input becomes the caller's name for it).  Returns
 * code. */
int psi_detail_rename(int code, const char *field);

#endif /* PSI_COMMON_H */
