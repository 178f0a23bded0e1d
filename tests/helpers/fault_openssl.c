/* See fault_openssl.h. */
#include <stdatomic.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "common.h"
#include "fault_openssl.h"

static atomic_uint_fast64_t ossl_count; /* allocations since the last take */
static atomic_int ossl_injected;        /* the injected failure was OpenSSL's */

/* True when this OpenSSL allocation is the one to fail. */
static int ossl_should_fail(void)
{
    atomic_fetch_add(&ossl_count, 1);
    if (!psi_alloc_should_fail())
        return 0;
    atomic_store(&ossl_injected, 1);
    return 1;
}

static void *ossl_malloc(size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return ossl_should_fail() ? NULL : malloc(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file, (void)line;
    if (p != NULL && n == 0) {
        free(p);
        return NULL;
    }
    return ossl_should_fail() ? NULL : realloc(p, n);
}

static void ossl_free(void *p, const char *file, int line)
{
    (void)file, (void)line;
    free(p);
}

int fault_openssl_install(void)
{
    return CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free);
}

uint64_t fault_openssl_take_count(void)
{
    return atomic_exchange(&ossl_count, 0);
}

int fault_openssl_injected(void)
{
    return atomic_load(&ossl_injected);
}

void fault_openssl_clear_injected(void)
{
    atomic_store(&ossl_injected, 0);
}
