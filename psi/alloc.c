/* The library's allocator.  Every allocation passes through psi_alloc so
 * that the fault-injection tests can fail each one in turn (OpenSSL's too,
 * through psi_alloc_should_fail) and the key-hygiene test can scan each
 * freed block (psi_alloc_set_hooks). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <sodium.h>

#include "common.h"

/* Test-only state; the library itself never sets it.  Atomic, because
 * the sharding layer calls the engine from several threads while a fault
 * test counts down. */
static _Atomic uint64_t fail_countdown;
static _Atomic uint64_t alloc_count;
/* Set by psi_alloc_set_hooks only, while no other thread allocates. */
static void *(*alloc_hook)(size_t) = malloc;
static void (*free_hook)(void *) = free;

void psi_alloc_set_hooks(void *(*alloc_fn)(size_t), void (*free_fn)(void *))
{
    alloc_hook = alloc_fn != NULL ? alloc_fn : malloc;
    free_hook = free_fn != NULL ? free_fn : free;
}

uint64_t psi_alloc_fail_after(uint64_t countdown)
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

int psi_alloc_should_fail(void)
{
    atomic_fetch_add(&alloc_count, 1);
    return injected_failure();
}

void *psi_raw_alloc(size_t n)
{
    return alloc_hook(n == 0 ? 1 : n);
}

void psi_raw_free(void *p)
{
    free_hook(p);
}

void *psi_alloc(size_t n)
{
    if (psi_alloc_should_fail())
        return NULL;
    return alloc_hook(n == 0 ? 1 : n);
}

void *psi_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    void *p = psi_alloc(n * size);
    if (p != NULL && n * size != 0)
        memset(p, 0, n * size);
    return p;
}

void psi_free(void *p)
{
    free_hook(p);
}

void psi_free_wipe(void *p, size_t n)
{
    if (p == NULL)
        return;
    sodium_memzero(p, n);
    free_hook(p);
}

void psi_misuse(const char *file, int line, const char *cond)
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

int psi_crypto_error(void)
{
    ERR_clear_error();
    return PSI_E_CRYPTO;
}
