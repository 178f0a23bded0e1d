/* What the parts of test_key_hygiene share: the scanner of freed blocks
 * (key_hygiene_scan.c), its hits, the keys it looks for, and the test
 * cases of the parts that main runs. */
#ifndef PSI_TEST_KEY_HYGIENE_SCAN_H
#define PSI_TEST_KEY_HYGIENE_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* A freed block that held a pattern. */
typedef struct hit {
    char origin[64]; /* the allocator, and OpenSSL's file:line */
    char pattern[48];
    size_t block_size, offset, window_off;
    int full; /* the whole pattern, not only a window of it */
} hit;

#define MAX_HITS 16

/* Set once in main: OpenSSL allocates through the hooks below
 * (PSI_KEY_HYGIENE_OPENSSL=raw), and known upstream blocks count as hits. */
extern int openssl_raw;
extern int strict;
/* The hits of the armed scan, the first MAX_HITS of n_hits. */
extern hit hits[MAX_HITS];
extern size_t n_hits;

/* Lower- or upper-case hex of in, not NUL-terminated. */
void to_hex(char *out, const uint8_t *in, size_t len, int upper);

/* OpenSSL's (CRYPTO_set_mem_functions) and the library's
 * (psi_alloc_set_hooks) allocators, named in the reports. */
void *ossl_malloc(size_t n, const char *file, int line);
void *ossl_realloc(void *p, size_t n, const char *file, int line);
void ossl_free(void *p, const char *file, int line);
void *lib_alloc(size_t n);
void lib_free(void *p);

typedef struct secret {
    const char *name;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *kinv; /* NULL: none */
    int reversed;        /* also look for the reversed bytes */
} secret;

void arm(const secret *s, size_t n);
void quarantine_begin(void);
void quarantine_end(const secret *s, size_t n);
size_t disarm(const char *scenario);
void expect_clean(const char *scenario);
/* The cmocka setup of every case. */
int scan_reset(void **state);

/* n, the order of the P-256 group. */
extern const uint8_t order_n[PSI_KEY_BYTES];
/* A key and its inverse, computed with OpenSSL while the scan is
 * suspended: the test's own BIGNUMs are not the library's. */
typedef struct keypair {
    uint8_t k[PSI_KEY_BYTES], kinv[PSI_KEY_BYTES];
} keypair;

void compute_inverse(keypair *kp);
void keypair_random(keypair *kp);
void keypair_wipe(keypair *kp);
psi_engine *engine_from(const keypair *kp, psi_role role, int reveal);
void keypair_of(keypair *kp, const psi_engine *e);

/* The test cases of the parts: the scanner's self-test
 * (key_hygiene_scan.c) and the key file (key_hygiene_keyfile.c). */
void test_key_hygiene_scanner_catches_a_copy(void **state);
void test_key_hygiene_keyfile(void **state);

#endif
