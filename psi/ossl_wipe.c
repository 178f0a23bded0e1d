/* An allocator for OpenSSL that wipes every block it frees
 * (psi_openssl_wipe_on_free, psi.h).  OpenSSL 3.0's P-256 code for x86-64
 * and arm64 (ecp_nistz256_windowed_mul) copies the scalar into a heap block
 * and frees it unwiped, so every EC_POINT_mul would leave the key or its
 * inverse in freed memory (tests/psi/test_key_hygiene_internal.c finds them).
 * Blocks carry their size in a 16-byte header, which keeps malloc's
 * alignment, and go through the library's allocator hooks (alloc.c), so
 * the key hygiene test sees what reaches free(). */
#include <string.h>

#include <openssl/crypto.h>
#include <sodium.h>

#include "common.h"

#define HEADER 16

static void *wipe_malloc(size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    if (n > SIZE_MAX - HEADER)
        return NULL;
    unsigned char *b = psi_raw_alloc(n + HEADER);
    if (b == NULL)
        return NULL;
    memcpy(b, &n, sizeof n);
    return b + HEADER;
}

static void wipe_free(void *p, const char *file, int line)
{
    (void)file;
    (void)line;
    if (p == NULL)
        return;
    unsigned char *b = (unsigned char *)p - HEADER;
    size_t n;
    memcpy(&n, b, sizeof n);
    sodium_memzero(b, n + HEADER);
    psi_raw_free(b);
}

/* A copy, never in place: realloc would free the old block unwiped. */
static void *wipe_realloc(void *p, size_t n, const char *file, int line)
{
    if (p == NULL)
        return wipe_malloc(n, file, line);
    if (n == 0) {
        wipe_free(p, file, line);
        return NULL;
    }
    void *q = wipe_malloc(n, file, line);
    if (q == NULL)
        return NULL;
    size_t old;
    memcpy(&old, (unsigned char *)p - HEADER, sizeof old);
    memcpy(q, p, old < n ? old : n);
    wipe_free(p, file, line);
    return q;
}

int psi_openssl_wipe_on_free(void)
{
    return CRYPTO_set_mem_functions(wipe_malloc, wipe_realloc, wipe_free) ? PSI_OK
                                                                         : PSI_E_CRYPTO;
}
